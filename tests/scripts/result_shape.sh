#!/usr/bin/env bash
# One result shape (issue 16, item 3): the same good and bad calls through the four paths a
# person or a program reads a call's result from, `rein skills invoke`, POST
# /skills/{id}/invoke, MCP tools/call's structuredContent (`rein mcp serve`) and the agent's
# tool_calls[].result (`rein chat --json` with a model on rein-model-server; self-verification
# off, it is not what this checks), give the same
# normalized result: {ok, tool, call_id, trace_id, output | error {code, message, details},
# meta {latency_ms}}, with the invalid payload the model reads under "invalid_payload" when the
# call could not run. Only the volatile members (call_id, trace_id, latency_ms) may differ.
set -u
rein="${REIN_BIN:?REIN_BIN is not set}"
bin_dir="${REIN_TEST_BIN_DIR:?REIN_TEST_BIN_DIR is not set}"
server="$bin_dir/rein-model-server"
command -v python3 >/dev/null || { echo "python3 is missing"; exit 77; }
. "$(dirname "$0")/lib.sh"

clean_env
# The calls: a good one, arguments that fail the schema (invalid_arguments), and a tool that
# runs and fails (execution_failed: division by zero).
names=(echo echo calculator)
args=('{"text":"hi"}' '{"text":5}' '{"expression":"1/0"}')
n=${#names[@]}

# ---- rein skills invoke ----
for i in $(seq 0 $((n - 1))); do
  "$rein" skills invoke "${names[$i]}" "${args[$i]}" >"$tmp/cli.$i" 2>/dev/null
done

# ---- POST /skills/{id}/invoke ----
"$rein" serve --port 0 --store "sqlite:$tmp/serve.db" >"$tmp/serve.out" 2>"$tmp/serve.err" &
pid=$!
base=""
for _ in $(seq 1 100); do
  base=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$tmp/serve.out")
  [ -n "$base" ] && break
  sleep 0.1
done
[ -n "$base" ] || fail "rein serve did not start: $(cat "$tmp/serve.err")"
for i in $(seq 0 $((n - 1))); do
  python3 - "$base" "${names[$i]}" "${args[$i]}" >"$tmp/http.$i" <<'EOF' || fail "POST $i"
import json, sys, urllib.request
base, name, args = sys.argv[1:]
req = urllib.request.Request(base + "/skills/" + name + "/invoke",
                             data=json.dumps({"arguments": json.loads(args)}).encode(),
                             headers={"Content-Type": "application/json"}, method="POST")
print(urllib.request.urlopen(req).read().decode())
EOF
done
kill -TERM "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
pid=""

# ---- MCP tools/call over stdio ----
{
  echo '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}'
  echo '{"jsonrpc":"2.0","method":"notifications/initialized"}'
  for i in $(seq 0 $((n - 1))); do
    echo "{\"jsonrpc\":\"2.0\",\"id\":$((i + 10)),\"method\":\"tools/call\",\"params\":{\"name\":\"${names[$i]}\",\"arguments\":${args[$i]}}}"
  done
} >"$tmp/session"
"$rein" mcp serve <"$tmp/session" >"$tmp/mcp.out" 2>"$tmp/mcp.err" || fail "mcp serve: $(cat "$tmp/mcp.err")"

# ---- the agent's tool_calls[].result ----
start_model_server
calls=$(python3 -c 'import json, sys
names, args = sys.argv[1].split(","), sys.argv[2:]
print(json.dumps([{"id": "c%d" % i, "name": n, "arguments": a} for i, (n, a) in enumerate(zip(names, args))]))' \
  "$(IFS=,; echo "${names[*]}")" "${args[@]}")
python3 -c 'import sys, urllib.request
urllib.request.urlopen(urllib.request.Request(sys.argv[1] + "/__script", data=sys.argv[2].encode(), method="POST")).read()' \
  "$url" "[{\"tool_calls\":$calls},{\"text\":\"done\"}]"
"$rein" chat --provider openai-compatible --base-url "$url/v1" --model test-model --json \
  --verification off \
  "run the three calls" >"$tmp/chat.out" 2>"$tmp/chat.err"

# ---- the four must agree ----
python3 - "$tmp" "$n" <<'EOF' || fail "the four paths disagree"
import json, sys
tmp, n = sys.argv[1], int(sys.argv[2])

def load(path):
    with open(path) as f:
        return json.load(f)

def strip(r):
    """The result without its volatile members."""
    r = json.loads(json.dumps(r))
    for k in ("call_id", "trace_id"):
        assert isinstance(r.pop(k), str), (k, r)
    # A real duration: these calls take milliseconds (an unset field once printed 4.7e12).
    ms = r["meta"].pop("latency_ms")
    assert isinstance(ms, int) and 0 <= ms < 60000, r
    return r

mcp = {}
for line in open(tmp + "/mcp.out"):
    m = json.loads(line)
    if isinstance(m.get("id"), int) and m["id"] >= 10:
        mcp[m["id"] - 10] = m["result"]["structuredContent"]
chat = load(tmp + "/chat.out")["tool_calls"]
assert len(chat) == n, chat
for i in range(n):
    paths = {"rein skills invoke": load("%s/cli.%d" % (tmp, i)),
             "POST /skills/{id}/invoke": load("%s/http.%d" % (tmp, i)),
             "MCP structuredContent": mcp[i],
             "tool_calls[].result": chat[i]["result"]}
    shapes = {k: strip(v) for k, v in paths.items()}
    first = shapes["rein skills invoke"]
    for k, v in shapes.items():
        if v != first:
            sys.exit("call %d: %s differs from rein skills invoke:\n%s\n%s" %
                     (i, k, json.dumps(v, indent=1), json.dumps(first, indent=1)))
    want_ok, want_code = [(True, None), (False, "invalid_arguments"),
                          (False, "execution_failed")][i]
    assert first["ok"] is want_ok, first
    if want_ok:
        assert first["output"] == "hi" and "error" not in first, first
    else:
        assert first["error"]["code"] == want_code and first["error"]["message"], first
        assert isinstance(first["error"]["details"], list), first
    # The model-facing payload is there exactly when the call could not run.
    assert ("invalid_payload" in first) == (want_code == "invalid_arguments"), first
    if "invalid_payload" in first:
        p = first["invalid_payload"]
        assert p["tool"] == "echo" and p["receivedArgs"] == {"text": 5}, p
        assert p["errors"][0]["path"] == "/text" and p["hint"], p
print("result_shape: the four paths agree on", n, "calls")
EOF
exit 0
