// A Streamable HTTP MCP server (the TypeScript SDK's) whose standalone GET stream opens late (its
// answer waits GET_DELAY_MS, default 800) and whose tool "ask" asks the client with
// elicitation/create outside the call's stream (Server.elicitInput without a related request,
// as the conformance suite's test server does). The SDK drops such a request when the client's
// standalone stream is not open yet, so a client that calls before its stream is open waits for
// an answer to a question it never got. Prints "listening PORT" once it listens.
import { createServer } from "node:http";
import { randomUUID } from "node:crypto";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";

const delay = Number(process.env.GET_DELAY_MS || 800);
const sessions = {};

function mcpServer() {
  const server = new McpServer({ name: "late-stream", version: "1.0.0" });
  server.registerTool("ask", { description: "Asks the client for a name" }, async () => {
    const answer = await server.server.elicitInput({
      message: "Your name?",
      requestedSchema: { type: "object", properties: { name: { type: "string", default: "Ada" } } },
    });
    return { content: [{ type: "text", text: `${answer.action} ${JSON.stringify(answer.content ?? {})}` }] };
  });
  return server;
}

const http = createServer(async (req, res) => {
  let body;
  if (req.method === "POST") {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    body = JSON.parse(Buffer.concat(chunks).toString());
  }
  const sid = req.headers["mcp-session-id"];
  let transport = sid ? sessions[sid] : undefined;
  if (!transport) {
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => { sessions[id] = transport; },
    });
    await mcpServer().connect(transport);
  }
  if (req.method === "GET") await new Promise((resolve) => setTimeout(resolve, delay));
  await transport.handleRequest(req, res, body);
});
http.listen(0, "127.0.0.1", () => console.log(`listening ${http.address().port}`));
