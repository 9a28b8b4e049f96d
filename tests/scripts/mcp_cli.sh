#!/usr/bin/env bash
# `rein mcp` end to end: list (text and JSON: states, tools under rein's names, a server that
# cannot start), call through the pipeline with the exit statuses of the other subcommands
# (0 ok, 1 the call failed or a server is not ready, 2 usage), and serve over stdio.
set -u
rein="${REIN_BIN:?REIN_BIN is not set}"
bin="${REIN_TEST_BIN_DIR:?REIN_TEST_BIN_DIR is not set}"
src="${REIN_SOURCE_DIR:?REIN_SOURCE_DIR is not set}"
command -v python3 >/dev/null || { echo "python3 is missing"; exit 77; }
. "$(dirname "$0")/lib.sh"


cat >"$tmp/ok.json" <<JSON
{"provider": "openai", "mcpServers": {
  "fake": {"command": "$bin/mcp_fake_server", "args": ["ok", "plain", "fail", "dotted.name"]},
  "self": {"command": "$rein", "args": ["mcp", "serve", "--skills", "$src/tests/data/mcp-skills"],
           "env": {"REIN_LOG": "error"}}}}
JSON
cat >"$tmp/broken.json" <<JSON
{"mcpServers": {
  "fake": {"command": "$bin/mcp_fake_server", "args": ["ok", "plain"]},
  "gone": {"command": "$bin/mcp_fake_server", "args": ["exit"]}}}
JSON

run 0 "$rein" mcp list --config "$tmp/ok.json"
grep -q '^fake  ready  stdio' "$tmp/out" || fail "list: fake is not ready"
grep -q 'fake__dotted_name *dotted.name' "$tmp/out" || fail "list lacks fake__dotted_name"
grep -q 'self__test_simple_text' "$tmp/out" || fail "list lacks self's tools"
run 0 "$rein" mcp list --config "$tmp/ok.json" --json
check 'len(d) == 2 and all(s["state"] == "ready" for s in d)'
check '{"id": "fake__plain", "name": "plain"} in d[0]["tools"]'
check 'd[1]["serverInfo"]["name"] == "rein" and d[1]["protocolVersion"] == "2025-11-25"'
REIN_MCP_CONFIG="$tmp/broken.json" run 1 "$rein" mcp list
grep -q '^gone  failed' "$tmp/out" || fail "list: gone is not failed"
grep -q 'error: MCP server gone exited (status 4): fatal: cannot start' "$tmp/out" ||
  fail "list: no reason for gone"

run 0 "$rein" mcp call --config "$tmp/ok.json" fake__plain '{"x": "1"}'
check 'd["ok"] and d["output"]["structuredContent"]["arguments"] == {"x": "1"}'
run 1 "$rein" mcp call --config "$tmp/ok.json" fake__fail
check 'd["error"]["code"] == "execution_failed" and d["error"]["message"] == "the fake failed"'
run 1 "$rein" mcp call --config "$tmp/ok.json" fake__plain '{"x": 5}'
check 'd["error"]["code"] == "invalid_arguments"'
run 1 "$rein" mcp call --config "$tmp/ok.json" self__test_error_handling
check 'd["error"]["message"] == "This tool intentionally returns an error for testing"'
run 2 "$rein" mcp call --config "$tmp/ok.json"

# A server's form answered by a person (--elicit ask; the default at a terminal): each field in
# turn on stderr, read from stdin as its type, asked again when it does not fit.
printf 'a\nAda\n\nnope\n88.5\n3\nno\n' >"$tmp/answers"
run 0 "$rein" mcp call --config "$tmp/ok.json" --elicit ask self__test_elicitation_sep1034_defaults \
  <"$tmp/answers"
check 'd["output"]["content"][0]["text"] == "Elicitation completed: action=accept, content=" + json.dumps({"name": "Ada", "age": 30, "score": 88.5, "status": "pending", "verified": False})'
grep -q 'The server asks: Please review and update the form fields with defaults' "$tmp/err" ||
  fail "ask: the question is not shown"
grep -q 'not a number; try again' "$tmp/err" || fail "ask: a bad number is not asked again"
printf 'd\n' >"$tmp/answers"
run 0 "$rein" mcp call --config "$tmp/ok.json" --elicit ask self__test_elicitation_sep1034_defaults \
  <"$tmp/answers"
check 'd["output"]["content"][0]["text"].startswith("Elicitation completed: action=decline")'
# At a terminal nothing needs saying: rein asks there (a pseudo-terminal answered prompt by
# prompt, as a person would).
python3 - "$tmp/tty" "$rein" mcp call --config "$tmp/ok.json" \
  self__test_elicitation_sep1034_defaults <<'EOF' || fail "at a terminal: $(cat "$tmp/tty")"
import os, pty, select, sys, time
out, cmd = sys.argv[1], sys.argv[2:]
answers = ["a", "Grace", "41", "", "inactive", "yes"]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(cmd[0], cmd)
data, sent, deadline = b"", 0, time.time() + 60
while time.time() < deadline:
    if select.select([fd], [], [], 1)[0]:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
        # One answer per prompt shown: the action, then each field's "> ".
        while sent < len(answers) and data.count(b"[c]ancel: ") + data.count(b"> ") > sent:
            os.write(fd, (answers[sent] + "\n").encode())
            sent += 1
_, status = os.waitpid(pid, 0)
open(out, "wb").write(data)
sys.exit(0 if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 else 1)
EOF
grep -qF 'action=accept, content={\"name\": \"Grace\", \"age\": 41, \"score\": 95.5, \"status\": \"inactive\", \"verified\": true}' "$tmp/tty" ||
  fail "at a terminal: not answered as typed: $(cat "$tmp/tty")"
run 2 "$rein" mcp list --config "$tmp/missing.json"
run 2 "$rein" mcp bogus
run 0 "$rein" mcp --help

# serve over stdio: a whole session from a file.
printf '%s\n' \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}' \
  '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
  '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"from a pipe"}}}' \
  >"$tmp/session"
run 0 "$rein" mcp serve <"$tmp/session"
grep -q '"id":2,"result":{"content":\[{"type":"text","text":"from a pipe"}\],"structuredContent":{"ok":true,"tool":"echo",' "$tmp/out" ||
  fail "serve: no echo answer: $(cat "$tmp/out")"
# A server that never answers delays nothing (issue 20: initialize and listening waited for
# its 30 s connect timeout). Everything below must happen well within that.
cat >"$tmp/hung.json" <<JSON
{"mcpServers": {
  "hung": {"command": "$bin/mcp_fake_server", "args": ["mute"]},
  "fake": {"command": "$bin/mcp_fake_server", "args": ["ok", "plain"]}}}
JSON
printf '%s\n' \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}' \
  >"$tmp/init"
REIN_MCP_CONFIG="$tmp/hung.json" run 0 timeout 20 "$rein" mcp serve <"$tmp/init"
grep -q '"id":1,"result":{"protocolVersion":"2025-11-25"' "$tmp/out" ||
  fail "mcp serve: no initialize answer: $(cat "$tmp/out" "$tmp/err")"

REIN_MCP_CONFIG="$tmp/hung.json" "$rein" serve --port 0 --store "sqlite:$tmp/serve.db" \
  >"$tmp/serve.out" 2>"$tmp/serve.err" &
pid=$!
base=""
for _ in $(seq 1 100); do
  base="$(sed -n 's/^rein .* listening on \(http:[^ ]*\).*/\1/p' "$tmp/serve.out")"
  [ -n "$base" ] && break
  sleep 0.1
done
[ -n "$base" ] || fail "rein serve did not start listening: $(cat "$tmp/serve.err")"
# /healthz answers at once and says how each MCP server is doing; fake becomes ready while
# hung still is not, and is never ready before its tool can be called (it said ready with 0
# tools while the supervisor was still registering them).
for _ in $(seq 1 100); do
  curl -s "$base/healthz" >"$tmp/out"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); f=[s for s in d["mcp"] if s["name"]=="fake" and s["state"]=="ready"]; sys.exit(3 if f and f[0]["tools"] != 1 else 0 if f else 1)' "$tmp/out" && break
  [ $? -ne 3 ] || fail "healthz: fake ready without its tool: $(cat "$tmp/out")"
  sleep 0.1
done
check 'd["status"] == "ok" and len(d["mcp"]) == 2'
check '[s for s in d["mcp"] if s["name"] == "fake"][0] == {"name": "fake", "state": "ready", "tools": 1}'
check '[s for s in d["mcp"] if s["name"] == "hung"][0]["state"] != "ready"'
# The ready server's tool is callable while the other one is still connecting.
curl -s -X POST "$base/skills/fake__plain/invoke" -H 'Content-Type: application/json' \
  -d '{"arguments": {"x": "y"}}' >"$tmp/out"
check 'd["ok"] and d["output"]["structuredContent"]["arguments"] == {"x": "y"}'
kill -TERM "$pid"
wait "$pid" || fail "rein serve did not stop cleanly: $(tail -5 "$tmp/serve.err")"
pid=""

# Every command that runs tools loads the MCP servers (issue 20: chat, loop, plan and skills
# ignored them): rein skills lists and invokes their tools, a server that cannot start is named
# on stderr, and rein chat's model calls them through the pipeline.
REIN_MCP_CONFIG="$tmp/broken.json" run 0 "$rein" skills list
grep -q '^fake__plain  *mcp ' "$tmp/out" || fail "skills list lacks fake__plain"
grep -q 'MCP server gone exited (status 4): fatal: cannot start' "$tmp/err" ||
  fail "skills list does not say gone failed: $(cat "$tmp/err")"
REIN_MCP_CONFIG="$tmp/broken.json" run 0 "$rein" skills invoke fake__plain '{"x": "2"}'
check 'd["ok"] and d["output"]["structuredContent"]["arguments"] == {"x": "2"}'
REIN_MCP_CONFIG="$tmp/missing.json" run 2 "$rein" skills list
server="$bin/rein-model-server"
start_model_server
curl -sf -X POST "$url/__script" -d '[{"tool_calls":[{"id":"c1","name":"fake__plain",
  "arguments":"{\"x\":\"3\"}"}]}, {"text":"the fake answered"}]' >/dev/null ||
  fail "could not script the model"
curl -sf -X POST "$url/__script?append=1" \
  -d '{"match": {"body_contains": "Answer YES or NO"}, "times": 0, "text": "YES"}' >/dev/null
REIN_MCP_CONFIG="$tmp/broken.json" run 0 "$rein" chat --provider openai-compatible \
  --base-url "$url/v1" --model test-model "ask the fake" --json --yes
check 'd["response"] == "the fake answered" and d["tool_calls"][0]["tool"] == "fake__plain"'
check 'd["tool_calls"][0]["status"] == "success"'
echo "mcp_cli: ok"
