// A real MCP client (the TypeScript SDK) that declares the elicitation capability and answers
// rein's approval requests: node elicit_client.mjs stdio|http TARGET TOOL ANSWER, where TARGET
// is the rein binary to start as `rein mcp serve` (stdio; REIN_SKILLS_PATH names the skills)
// or the /mcp URL (http), and ANSWER is accept, reject (accept with approve false), decline or
// cancel. Prints one JSON line: {asked: [the elicitation params rein sent], result}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [mode, target, tool, answer] = process.argv.slice(2);
const client = new Client({ name: "rein-elicit-test", version: "1.0.0" },
  { capabilities: { elicitation: {} } });
const asked = [];
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  asked.push(req.params);
  if (answer === "accept") return { action: "accept", content: { approve: true } };
  if (answer === "reject") return { action: "accept", content: { approve: false } };
  return { action: answer };
});
const transport = mode === "stdio"
  ? new StdioClientTransport({ command: target, args: ["mcp", "serve"], env: process.env,
    stderr: "inherit" })
  : new StreamableHTTPClientTransport(new URL(target));
await client.connect(transport);
const result = await client.callTool({ name: tool, arguments: {} });
console.log(JSON.stringify({ asked, result }));
await client.close();
