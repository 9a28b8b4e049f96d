// bench/mcp/driver.mjs: one MCP client (the official TypeScript SDK) timing tools/call
// against one server, so rein and the reference server are measured by the same client.
//   node driver.mjs http URL TOOL ARGS_JSON CALLS PARALLEL
//   node driver.mjs stdio "CMD ARG..." TOOL ARGS_JSON CALLS PARALLEL
// Prints: calls/s, median latency ms, p99 latency ms.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [kind, target, tool, argsJson, callsText, parallelText] = process.argv.slice(2);
const args = JSON.parse(argsJson);
const calls = Number(callsText), parallel = Number(parallelText);
const transport = kind === "http"
  ? new StreamableHTTPClientTransport(new URL(target))
  : new StdioClientTransport({ command: target.split(" ")[0], args: target.split(" ").slice(1),
                               stderr: "ignore" });
const client = new Client({ name: "rein-bench", version: "1.0.0" });
await client.connect(transport);
for (let i = 0; i < 50; i++) await client.callTool({ name: tool, arguments: args }); // warm up
const lat = [];
let next = 0;
const t0 = performance.now();
async function worker() {
  while (next < calls) {
    next++;
    const s = performance.now();
    const r = await client.callTool({ name: tool, arguments: args });
    if (r.isError) throw new Error(JSON.stringify(r));
    lat.push(performance.now() - s);
  }
}
await Promise.all(Array.from({ length: parallel }, worker));
const secs = (performance.now() - t0) / 1000;
lat.sort((a, b) => a - b);
console.log((calls / secs).toFixed(0), lat[lat.length >> 1].toFixed(2),
            lat[Math.floor(lat.length * 0.99)].toFixed(2));
await client.close();
process.exit(0);
