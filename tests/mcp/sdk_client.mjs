// The reference client for the conformance suite's client scenarios: the official TypeScript
// SDK's Client, its Streamable HTTP transport and its OAuth module (auth.js, auth-extensions.js),
// as pinned in package.json. `conformance client --command` runs this with the test server's
// URL as the last argument, the scenario in MCP_CONFORMANCE_SCENARIO and its context (JSON) in
// MCP_CONFORMANCE_CONTEXT. The suite's own example client is not published on npm; this is the
// least glue that lets the SDK do each scenario, so a scenario the SDK has no API for (the
// SEP-990 ID-JAG grant) fails here rather than being written by us.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import {
  ClientCredentialsProvider,
  PrivateKeyJwtProvider,
} from "@modelcontextprotocol/sdk/client/auth-extensions.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const url = new URL(process.argv[process.argv.length - 1]);
const scenario = process.env.MCP_CONFORMANCE_SCENARIO || "";
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || "{}");
const redirect = "http://localhost:3000/callback";

// An authorization-code client without a person: the "browser" asks the authorization endpoint
// and keeps the code from the redirect, as rein's oauth_browser.sh does for rein.
class HeadlessProvider {
  constructor(preRegistered) {
    this.info = preRegistered;
    this.code = undefined;
  }
  get redirectUrl() { return redirect; }
  get clientMetadataUrl() {
    return this.info ? undefined : "https://conformance-test.local/client-metadata.json";
  }
  get clientMetadata() {
    return { client_name: "sdk-reference-client", redirect_uris: [redirect] };
  }
  clientInformation() { return this.info; }
  saveClientInformation(info) { this.info = info; }
  tokens() { return this.saved; }
  saveTokens(tokens) { this.saved = tokens; }
  saveCodeVerifier(verifier) { this.verifier = verifier; }
  codeVerifier() { return this.verifier; }
  async redirectToAuthorization(authorizationUrl) {
    const answer = await fetch(authorizationUrl, { redirect: "manual" });
    const location = answer.headers.get("location");
    this.code = location ? new URL(location).searchParams.get("code") : undefined;
    if (!this.code) throw new Error(`no authorization code from ${authorizationUrl}`);
  }
}

function provider() {
  if (!scenario.startsWith("auth/")) return undefined;
  if (scenario.startsWith("auth/cross-app-access")) {
    throw new Error("the TypeScript SDK has no ID-JAG (SEP-990) grant");
  }
  if (scenario === "auth/client-credentials-jwt") {
    return new PrivateKeyJwtProvider({ clientId: context.client_id,
      privateKey: context.private_key_pem, algorithm: context.signing_algorithm });
  }
  if (scenario.startsWith("auth/client-credentials-")) {
    return new ClientCredentialsProvider({ clientId: context.client_id,
      clientSecret: context.client_secret });
  }
  const pre = context.client_id
    ? { client_id: context.client_id, client_secret: context.client_secret } : undefined;
  return new HeadlessProvider(pre);
}

// What the scenario asks of the client once connected.
async function work(client) {
  switch (scenario) {
    case "initialize":
      await client.listTools();
      return;
    case "tools_call":
      await client.callTool({ name: "add_numbers", arguments: { a: 2, b: 3 } });
      return;
    case "sse-retry":
      await client.callTool({ name: "test_reconnection", arguments: {} });
      return;
    case "elicitation-sep1034-client-defaults":
      await client.callTool({ name: "test_client_elicitation_defaults", arguments: {} });
      return;
    default:
      await client.listTools();
      await client.callTool({ name: "test-tool", arguments: {} });
  }
}

// A form answered with the schema's defaults (SEP-1034).
function defaults(request) {
  const content = {};
  const properties = request.params.requestedSchema?.properties || {};
  for (const [name, field] of Object.entries(properties)) {
    if (field.default !== undefined) content[name] = field.default;
  }
  return { action: "accept", content };
}

const auth = provider();
// The SDK's transport runs the OAuth flow on a 401/403; an authorization-code flow ends in a
// redirect (UnauthorizedError), after which finishAuth trades the code and the client connects
// again, as the SDK documents.
for (let attempt = 0; ; attempt++) {
  const transport = new StreamableHTTPClientTransport(url, auth ? { authProvider: auth } : {});
  const client = new Client({ name: "sdk-reference-client", version: "1.0.0" },
    { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, async (request) => defaults(request));
  try {
    await client.connect(transport);
    await work(client);
    await client.close();
    break;
  } catch (error) {
    if (error instanceof UnauthorizedError && auth?.code && attempt < 2) {
      const code = auth.code;
      auth.code = undefined;
      await transport.finishAuth(code);
      continue;
    }
    console.error(`sdk_client (${scenario}): ${error?.stack || error}`);
    process.exit(1);
  }
}
