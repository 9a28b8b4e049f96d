// A real MCP client (the TypeScript SDK) that declares the elicitation capability (and, given
// a REVIEW answer, sampling) and answers rein's requests:
//   node elicit_client.mjs stdio|http TARGET TOOL ANSWER [REVIEW]
// TARGET is the rein binary to start as `rein mcp serve` (stdio; REIN_SKILLS_PATH names the
// skills) or the /mcp URL (http); ANSWER is accept, reject (accept with approve false),
// decline or cancel; REVIEW is the text the client's "model" answers a sampling request with.
// TOOL_ARGS (JSON, default {}) are the tool's arguments.
// Prints one JSON line: {asked: [elicitation params], sampled: [sampling params], result}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateMessageRequestSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [mode, target, tool, answer, review] = process.argv.slice(2);
const capabilities = review ? { elicitation: {}, sampling: {} } : { elicitation: {} };
const client = new Client({ name: "rein-elicit-test", version: "1.0.0" }, { capabilities });
const asked = [];
const sampled = [];
if (review) {
  client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
    sampled.push(req.params);
    return { role: "assistant", content: { type: "text", text: review }, model: "test-model" };
  });
}
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
const result = await client.callTool({ name: tool, arguments: JSON.parse(process.env.TOOL_ARGS || "{}") });
console.log(JSON.stringify({ asked, sampled, result }));
await client.close();
