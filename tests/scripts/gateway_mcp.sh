#!/usr/bin/env bash
# The gateway's server-side tools from MCP servers (issue 22): `rein serve` with three servers
# in mcpServers (rein's own `rein mcp serve` over stdio, plain and with the conformance skills
# of tests/data/mcp-skills, and the test server mcp_fake_server) and the scripted model server
# upstream. A client names MCP tools in x-rein-tools; the model calls them, rein checks each
# call against the tool's inputSchema, runs it over the MCP connection and asks the model
# again with the result, and the client sees only the answer.
#   - self__echo: the result reaches the model, JSON and streamed; the call is in the
#     conversation's ledger (x-rein-conversation)
#   - conf__json_schema_2020_12_tool with arguments its inputSchema refuses: never run, the
#     model is asked again with the invalid payload, the corrected call runs
#   - conf__test_error_handling (the MCP server answers isError): the error is the model's
#     result, not the client's
#   - a tool without readOnlyHint (destructive by MCP's default) and a tool of no connected
#     server are refused with 400
set -u
rein="${REIN_BIN:?REIN_BIN is not set}"
bin="${REIN_TEST_BIN_DIR:?REIN_TEST_BIN_DIR is not set}"
src="${REIN_SOURCE_DIR:?REIN_SOURCE_DIR is not set}"
server="$bin/rein-model-server"
command -v python3 >/dev/null || { echo "python3 is missing"; exit 77; }
command -v curl >/dev/null || { echo "curl is missing"; exit 77; }
. "$(dirname "$0")/lib.sh"
clean_env

start_model_server
cat >"$tmp/rein.json" <<JSON
{"mcpServers": {
  "self": {"command": "$rein", "args": ["mcp", "serve"], "env": {"REIN_LOG": "error"}},
  "conf": {"command": "$rein", "args": ["mcp", "serve", "--skills", "$src/tests/data/mcp-skills"],
           "env": {"REIN_LOG": "error"}},
  "fake": {"command": "$bin/mcp_fake_server", "args": ["ok", "lookup"]}}}
JSON
export REIN_API_KEYS=gw-key REIN_LOG=warn
start_serve --config "$tmp/rein.json" \
  --store "sqlite:$tmp/rein.db" --provider openai-compatible --base-url "$url/v1" \
  --model gpt-test

# The servers connect in the background: wait until all three are ready.
for _ in $(seq 1 300); do
  curl -s "$surl/healthz" >"$tmp/out"
  python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if len(d.get("mcp", [])) == 3 and all(s["state"] == "ready" for s in d["mcp"]) else 1)' \
    "$tmp/out" && break
  sleep 0.1
done
check 'all(s["state"] == "ready" for s in d["mcp"])'

# chat BODY HEADER...: POST /v1/chat/completions; the answer in $tmp/out.
chat() {
  local body=$1 args=()
  shift
  for h in "$@"; do args+=(-H "$h"); done
  curl -s --max-time 60 -o "$tmp/out" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
    -H 'Authorization: Bearer gw-key' "${args[@]}" -d "$body" "$surl/v1/chat/completions" \
    >"$tmp/status"
}
# upstream N: the model server's request log (N requests expected) in $tmp/out.
upstream() {
  curl -s "$url/__requests" >"$tmp/out"
  check "len(d) == $1"
}
reset() {
  curl -s -X POST "$url/__reset" >/dev/null
  model_script "$1"
}
status_is() { [ "$(cat "$tmp/status")" = "$1" ] || fail "status $(cat "$tmp/status"), want $1: $(cat "$tmp/out")"; }

user='"messages":[{"role":"user","content":"Say hello through the echo tool."}]'

# 1. rein's own MCP server: the call runs there and its result goes back to the model.
reset '[{"tool_calls": [{"id": "call_e", "name": "self__echo", "arguments": "{\"text\":\"hello over MCP\"}"}]},
        {"match": {"tool_result_contains": "hello over MCP"}, "text": "The echo said hello."}]'
chat "{\"model\":\"gpt-test\",$user}" 'x-rein-tools: self__echo' 'x-rein-conversation: gw-mcp-1'
status_is 200
check 'd["choices"][0]["message"]["content"] == "The echo said hello."'
check 'd["choices"][0]["message"].get("tool_calls") is None'
check 'd["choices"][0]["finish_reason"] == "stop"'
upstream 2
# The model was offered the MCP tool with its inputSchema, and got its result.
check '[t["function"]["name"] for t in d[0]["json"]["tools"]] == ["self__echo"]'
check 'd[0]["json"]["tools"][0]["function"]["parameters"]["properties"]["text"]["type"] == "string"'
check 'd[1]["json"]["messages"][-1]["role"] == "tool" and d[1]["json"]["messages"][-1]["tool_call_id"] == "call_e"'
check '"hello over MCP" in d[1]["json"]["messages"][-1]["content"]'
# ... and the call is in the conversation's ledger.
curl -s -H 'Authorization: Bearer gw-key' "$surl/agent/conversations/gw-mcp-1" >"$tmp/out"
check '[(e["call_id"], e["tool"], e["status"]) for e in d["ledger"]] == [("call_e", "self__echo", "success")]'
check 'd["ledger"][0]["result"]["content"][0]["text"] == "hello over MCP"'

# 2. The same, streamed: the client gets the answer's text and one [DONE].
reset '[{"tool_calls": [{"id": "call_s", "name": "self__echo", "arguments": "{\"text\":\"streamed over MCP\"}"}]},
        {"match": {"tool_result_contains": "streamed over MCP"}, "text": ["The echo ", "said it."]}]'
chat "{\"model\":\"gpt-test\",\"stream\":true,$user}" 'x-rein-tools: self__echo'
status_is 200
python3 - "$tmp/out" <<'PY' || fail "stream: $(cat "$tmp/out")"
import json, sys
events = [l[6:] for l in open(sys.argv[1]).read().split("\n") if l.startswith("data: ")]
assert events[-1] == "[DONE]" and events.count("[DONE]") == 1, events
chunks = [json.loads(e) for e in events[:-1]]
text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
assert text == "The echo said it.", text
assert not any("tool_calls" in c["choices"][0]["delta"] for c in chunks if c["choices"]), chunks
assert chunks[-1]["choices"][0]["finish_reason"] == "stop", chunks[-1]
PY
upstream 2

# 3. Arguments the MCP tool's inputSchema refuses are not run: the model is asked again with
#    the invalid payload, and the corrected call runs on the MCP server.
tool=conf__json_schema_2020_12_tool
reset '[{"tool_calls": [{"id": "call_1", "name": "'$tool'", "arguments": "{\"name\":5}"}]},
        {"match": {"tool_result_contains": "Invalid arguments"},
         "tool_calls": [{"id": "call_2", "name": "'$tool'", "arguments": "{\"name\":\"Ada\",\"address\":{\"city\":\"Paris\"}}"}]},
        {"match": {"tool_result_contains": "JSON Schema 2020-12 tool called"}, "text": "Ada is filed."}]'
chat "{\"model\":\"gpt-test\",$user}" "x-rein-tools: $tool"
status_is 200
check 'd["choices"][0]["message"]["content"] == "Ada is filed."'
check 'd["rein"]["reasks"] == 1'
upstream 3
check '"Invalid arguments" in d[1]["json"]["messages"][-1]["content"] and "name" in d[1]["json"]["messages"][-1]["content"]'
check '"JSON Schema 2020-12 tool called" in d[2]["json"]["messages"][-1]["content"]'

# 4. A tool the MCP server fails (isError): its error is the model's result, not the client's.
reset '[{"tool_calls": [{"id": "call_f", "name": "conf__test_error_handling", "arguments": "{}"}]},
        {"match": {"tool_result_contains": "intentionally returns an error"}, "text": "The tool failed."}]'
chat "{\"model\":\"gpt-test\",$user}" 'x-rein-tools: conf__test_error_handling, self__echo'
status_is 200
check 'd["choices"][0]["message"]["content"] == "The tool failed."'
upstream 2
check 'sorted(t["function"]["name"] for t in d[0]["json"]["tools"]) == ["conf__test_error_handling", "self__echo"]'
check '"intentionally returns an error" in d[1]["json"]["messages"][-1]["content"]'

# 5. Refused before anything is asked: a tool that does not say it is read-only (MCP's default
#    is destructive: nobody is there to approve it), and a tool no connected server offers.
curl -s -X POST "$url/__reset" >/dev/null
chat "{\"model\":\"gpt-test\",$user}" 'x-rein-tools: fake__lookup'
status_is 400
check '"\"fake__lookup\" is destructive" in d["error"]["message"]'
chat "{\"model\":\"gpt-test\",$user}" 'x-rein-tools: gone__lookup'
status_is 400
check '"rein has no tool \"gone__lookup\"" in d["error"]["message"]'
upstream 0

stop_serve
echo "gateway_mcp: ok"
