// A real MCP client (the TypeScript SDK) that declares the elicitation capability (and, given
// a REVIEW answer, sampling) and answers rein's requests:
//   node elicit_client.mjs stdio|http TARGET TOOL ANSWER [REVIEW]
// TARGET is the rein binary to start as `rein mcp serve` (stdio; REIN_SKILLS_PATH names the
// skills) or the /mcp URL (http); ANSWER is accept, reject (accept with approve false),
// decline or cancel; REVIEW is the text the client's "model" answers a sampling request with.
// TOOL_ARGS (JSON, default {}) are the tool's arguments. With PROMPT set, the client gets that
// prompt (PROMPT_ARGS, JSON, its arguments) instead of calling TOOL, and an accepted form's
// content is ANSWER_CONTENT (JSON).
// Prints one JSON line: {asked: [elicitation params], sampled: [sampling params], result}; a
// prompt the server refused gives result {error: its message}.
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
  if (answer === "accept") {
    return { action: "accept", content: JSON.parse(process.env.ANSWER_CONTENT || '{"approve":true}') };
  }
  if (answer === "reject") return { action: "accept", content: { approve: false } };
  return { action: answer };
});
const transport = mode === "stdio"
  ? new StdioClientTransport({ command: target, args: ["mcp", "serve"], env: process.env,
    stderr: "inherit" })
  : new StreamableHTTPClientTransport(new URL(target));
await client.connect(transport);
let result;
if (process.env.PROMPT) {
  result = await client.getPrompt({ name: process.env.PROMPT,
    arguments: JSON.parse(process.env.PROMPT_ARGS || "{}") }).catch((e) => ({ error: e.message }));
} else {
  result = await client.callTool({ name: tool, arguments: JSON.parse(process.env.TOOL_ARGS || "{}") });
}
console.log(JSON.stringify({ asked, sampled, result }));
await client.close();
