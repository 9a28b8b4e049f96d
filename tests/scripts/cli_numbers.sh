#!/usr/bin/env bash
# One number writer (issue 16 item 4): a table of doubles goes through a tool and comes out of
# every path rein writes JSON on (the CLI, HTTP, SSE, MCP's structuredContent and its text,
# the store, a plan file) as the same text: the shortest that reads back to the same double,
# as Python's repr writes it (2.8, 1e-07, 1e+21, -0.0, 5e-324, 0.30000000000000004), never
# jansson's 17 digits. Numbers are compared as the literal text each path printed.
set -u
rein="${REIN_BIN:?REIN_BIN is not set}"
bin_dir="${REIN_TEST_BIN_DIR:?REIN_TEST_BIN_DIR is not set}"
server="$bin_dir/rein-model-server"
command -v python3 >/dev/null || { echo "python3 is missing"; exit 77; }
. "$(dirname "$0")/lib.sh"

clean_env
run_dir="$tmp/work"
mkdir -p "$run_dir"

# The table, as a model might write it (17 digits included), and what must come out.
values='[0.30000000000000004, 2.8, 2.7999999999999998, 1e-7, 9.9999999999999995e-8, 1e21, -0.0, 5e-324, 0.6000000000000001, 0.1, 1E+2, 123456789012345678, 4.35, 1.7976931348623157e308]'
want=$(python3 -c 'import json, sys
vals = json.loads(sys.argv[1])
print(json.dumps([repr(v) if isinstance(v, float) else str(v) for v in vals]))' "$values")

# A skill that hands its arguments back (cat echoes the call), so the numbers travel in and out.
mkdir -p "$tmp/skills/numbers"
cat >"$tmp/skills/numbers/manifest.json" <<'EOF'
{"id": "numbers", "description": "Returns the numbers it is given",
 "parameters": {"type": "object", "properties": {"values": {"type": "array", "items": {"type": "number"}}},
                "required": ["values"]},
 "runner": {"kind": "process", "command": ["cat"]}}
EOF

# numbers_in FILE [PYTHON-PATH]: the literal texts of the numbers under "values" anywhere in the
# JSON of FILE (or of the JSON text found at PATH), compared with $want.
numbers_in() {
  python3 - "$1" "$want" "${2:-}" <<'EOF' || fail "numbers in $1 ${2:-}"
import json, sys
lit = lambda s: ("NUM", s)
def load(text):
    return json.loads(text, parse_float=lit, parse_int=lit, parse_constant=lit)
doc = load(open(sys.argv[1]).read())
if sys.argv[3]:
    doc = eval(sys.argv[3], {"d": doc, "load": load})
found = []
def walk(v):
    if isinstance(v, dict):
        for k, x in v.items():
            if k == "values" and isinstance(x, list) and x and all(isinstance(i, tuple) for i in x):
                found.append([i[1] for i in x])
            else:
                walk(x)
    elif isinstance(v, list):
        for x in v:
            walk(x)
walk(doc)
want = json.loads(sys.argv[2])
if not found:
    sys.exit("no values in " + json.dumps(doc, default=str)[:800])
for f in found:
    if f != want:
        sys.exit("got  %s\nwant %s" % (f, want))
EOF
}
args="{\"values\": $values}"

# ---- the CLI ----
run 0 "$rein" skills invoke numbers "$args" --skills "$tmp/skills"
numbers_in "$tmp/out"
grep -q '2.7999999999999998\|9.9999999999999995e-08' "$tmp/out" && fail "17 digits in the CLI"
# The calculator's own results, and the rules' answer in words.
run 0 "$rein" skills invoke calculator '{"expression": "2*(3+4)/5"}'
check 'd["output"]["result"] == 2.8'
grep -q '"result": 2.8$' "$tmp/out" || fail "calculator: $(cat "$tmp/out")"
run 0 "$rein" skills invoke calculator '{"expression": "1e-7"}'
grep -q '"result": 1e-07$' "$tmp/out" || fail "calculator 1e-7: $(cat "$tmp/out")"
run 0 "$rein" chat "calculate 2*(3+4)/5"
[ "$(cat "$tmp/out")" = "2*(3+4)/5 = 2.8" ] || fail "rules answer: $(cat "$tmp/out")"
run 0 "$rein" skills invoke calculator '{"expression": "0.1+0.2"}'
grep -q '"result": 0.30000000000000004$' "$tmp/out" || fail "0.1+0.2: $(cat "$tmp/out")"

# ---- MCP over stdio: structuredContent and the text beside it agree ----
printf '%s\n' \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}' \
  '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
  "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"numbers\",\"arguments\":$args}}" \
  >"$tmp/session"
"$rein" mcp serve --skills "$tmp/skills" <"$tmp/session" >"$tmp/out" 2>"$tmp/err" ||
  fail "mcp serve: $(cat "$tmp/err")"
grep '"id":2' "$tmp/out" >"$tmp/call.json"
numbers_in "$tmp/call.json" 'd["result"]["structuredContent"]'
numbers_in "$tmp/call.json" 'load(d["result"]["content"][0]["text"])'

# ---- HTTP, SSE and the store ----
start_model_server
python3 -c 'import sys, urllib.request
body = sys.argv[2].replace("ARGS", sys.argv[3])
urllib.request.urlopen(urllib.request.Request(sys.argv[1] + "/__script", data=body.encode(), method="POST")).read()' \
  "$url" '[{"tool_calls":[{"id":"n1","name":"numbers","arguments":ARGS}]},{"text":"done"}]' \
  "$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$args")"
start_serve --store "sqlite:$tmp/n.db" --skills "$tmp/skills" --provider openai-compatible \
  --base-url "$url/v1" --model test-model
http() { python3 -c 'import sys, urllib.request
data = sys.argv[3].encode() if len(sys.argv) > 3 else None
req = urllib.request.Request(sys.argv[1] + sys.argv[2], data=data,
                             headers={"Content-Type": "application/json", "Accept": "text/event-stream"})
print(urllib.request.urlopen(req).read().decode())' "$surl" "$@" >"$tmp/out"; }
http /skills/numbers/invoke "{\"arguments\": $args}"
numbers_in "$tmp/out"
http /agent/chat '{"message": "numbers please", "conversation_id": "n1", "verification": "off"}'
grep '"type":"tool_result"' "$tmp/out" | sed 's/^data: //' >"$tmp/event.json"
numbers_in "$tmp/event.json"
sed -n 's/^data: //p' "$tmp/out" | tail -n 1 >"$tmp/result.json"
numbers_in "$tmp/result.json" 'd["tool_calls"][0]["result"]'
http /agent/conversations/n1
numbers_in "$tmp/out" 'd["ledger"]'
# The tool message the model read (stored as sent) carries the numbers as JSON text too.
numbers_in "$tmp/out" 'load([m["message"] for m in d["messages"] if m["message"].get("role") == "tool"][0]["content"])'
stop_serve

# ---- a plan file, as rein writes and shows it ----
cat >"$tmp/plan.json" <<EOF
{"title": "numbers", "query": "q", "steps": ["one"], "dependencies": {"0": []},
 "step_statuses": {"0": "completed"},
 "step_tool_history": {"0": [{"call_id": "c1", "tool": "numbers", "args": $args,
                              "status": "success", "result": $args}]}}
EOF
run 0 "$rein" plan --show "$tmp/plan.json" --json
numbers_in "$tmp/out"
exit 0
