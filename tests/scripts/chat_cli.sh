#!/usr/bin/env bash
# `rein chat` end to end: the rules provider when no provider is configured (English and
# Chinese, a sequence, an unroutable request), --json and --events, and a model on
# rein-model-server (the scripted model server as a process): tool calls through the pipeline,
# --mode single and propose, a provider error's exit status, a destructive tool denied without
# a terminal (and allowed with --yes), and --conversation continued across two runs in a
# SQLite store, with the second request carrying the first turn's messages.
set -u
rein="${REIN_BIN:?REIN_BIN is not set}"
bin_dir="${REIN_TEST_BIN_DIR:?REIN_TEST_BIN_DIR is not set}"
server="$bin_dir/rein-model-server"
command -v python3 >/dev/null || { echo "python3 is missing"; exit 77; }
. "$(dirname "$0")/lib.sh"

clean_env
run_dir="$tmp/work"

mkdir -p "$tmp/work/notes"
echo "the calculator skill adds numbers" >"$tmp/work/notes/calc.md"

# ---- the rules provider ----
run 0 "$rein" chat "echo hello"
[ "$(cat "$tmp/out")" = "hello" ] || fail "echo: $(cat "$tmp/out")"
run 0 "$rein" chat "搜索包含 'calculator' 的文件，然后计算 [1,2,3,4,5] 的平均值" --json
check 'd["success"] and [c["tool"] for c in d["tool_calls"]] == ["file_search", "calculator"]'
check '"notes/calc.md:1" in d["response"] and "1, 2, 3, 4, 5 的平均值是 3。" in d["response"]'
check 'd["meta"]["stop_reason"] == "final_answer" and d["conversation_id"] is None'
# An unroutable request is answered (how to configure a model) but is not a success.
run 1 "$rein" chat "what's the weather?"
grep -q "REIN_PROVIDER" "$tmp/out" || fail "unroutable request does not say how to configure"
run 0 "$rein" chat "echo hi" --events
python3 - "$tmp/out" <<'EOF' || fail "--events"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert [e["seq"] for e in lines] == list(range(1, len(lines) + 1)), lines
types = [e["type"] for e in lines]
assert types[0] == "status" and types[-1] == "final", types
assert "tool_call" in types and "tool_result" in types, types
assert lines[-1]["text"] == "hi" and lines[-1]["stop_reason"] == "final_answer"
EOF
run 2 "$rein" chat
# --help exits 0 in every command built on the shared argument loop, and the usage is on stdout.
for cmd in chat loop plan serve; do
  run 0 "$rein" "$cmd" --help
  grep -q "^usage: rein $cmd" "$tmp/out" || fail "rein $cmd --help printed no usage"
done
run 2 "$rein" chat "x" --mode sometimes

# ---- a model on the scripted model server ----
start_model_server
# test-model states no confidence, so auto self-verifies every call (001): each scenario
# gets a verifier that approves them all.
script() { python3 -c 'import sys, urllib.request
post = lambda q, d: urllib.request.urlopen(urllib.request.Request(sys.argv[1] + "/__script" + q, data=d.encode(), method="POST")).read()
post("", sys.argv[2])
post("?append=1", "{\"match\": {\"body_contains\": \"Answer YES or NO\"}, \"times\": 0, \"text\": \"YES\"}")' "$url" "$1"; }
requests() { python3 -c 'import sys, urllib.request
print(urllib.request.urlopen(sys.argv[1] + "/__requests").read().decode())' "$url" >"$tmp/out"; }
model=(--provider openai-compatible --base-url "$url/v1" --model test-model)

script '[{"tool_calls":[{"id":"c1","name":"echo","arguments":"{}"}]},
         {"match":{"tool_result_contains":"missing required"},
          "tool_calls":[{"id":"c2","name":"echo","arguments":"{\"text\":\"hi\"}"}]},
         {"text":"It said hi."}]'
run 0 "$rein" chat "${model[@]}" "echo hi" --json
check 'd["response"] == "It said hi." and [c["status"] for c in d["tool_calls"]] == ["invalid", "success"]'
check 'd["meta"]["model_calls"] == 3 and d["meta"]["total_tokens"] > 0'

script '[{"tool_calls":[{"id":"c1","name":"echo","arguments":"{\"text\":\"hi\"}"}]},
         {"text":"summary"}]'
run 0 "$rein" chat "${model[@]}" "echo hi" --mode single --json
check 'd["meta"]["stop_reason"] == "success_cap" and d["response"] == "summary"'

script '[{"tool_calls":[{"id":"c1","name":"calculator","arguments":"{\"expression\":\"1+1\"}"}]}]'
run 0 "$rein" chat "${model[@]}" "add" --mode propose --json
check 'd["meta"]["stop_reason"] == "proposed" and d["tool_calls"][0]["status"] == "proposed"'

script '[{"status":400,"error":{"message":"bad request, really"}}]'
run 1 "$rein" chat "${model[@]}" "hello"
grep -q "bad request, really" "$tmp/out" || fail "provider error not in the answer"
grep -q "provider_error" "$tmp/err" || fail "stop reason not on stderr"

# A destructive tool: denied without a terminal to ask on, allowed with --yes.
mkdir -p "$tmp/skills/wipe"
cat >"$tmp/skills/wipe/manifest.json" <<'EOF'
{"id": "wipe", "description": "Wipe a file", "destructive": true,
 "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                "required": ["path"]},
 "runner": {"kind": "process", "command": ["cat"]}}
EOF
wipe='[{"match":{"body_contains":"Answer YES or NO"},"times":0,"text":"YES, as asked."},
       {"tool_calls":[{"id":"w1","name":"wipe","arguments":"{\"path\":\"x\"}"}]},
       {"text":"done"}]'
script "$wipe"
run 1 "$rein" chat "${model[@]}" --skills "$tmp/skills" "wipe x" --json
check 'd["tool_calls"][0]["status"] == "invalid" and "no terminal" in d["tool_calls"][0]["result"]["error"]["message"]'
check 'not d["success"] and "every tool call was denied" in d["meta"]["detail"]'
script "$wipe"
run 0 "$rein" chat "${model[@]}" --skills "$tmp/skills" "wipe x" --json --yes
check 'd["tool_calls"][0]["status"] == "success" and d["tool_calls"][0]["verification"]["passed"]'

# A stored conversation, continued.
store="sqlite:$tmp/chat.db"
script '[{"text":"first answer"},{"text":"second answer"}]'
run 0 "$rein" chat "${model[@]}" --conversation conv-1 --store "$store" "first question"
run 0 "$rein" chat "${model[@]}" --conversation conv-1 --store "$store" "second question" --json
check 'd["conversation_id"] == "conv-1" and d["response"] == "second answer"'
requests
check '[m["role"] for m in d[-1]["json"]["messages"]] == ["system", "user", "assistant", "user"]'
check 'd[-1]["json"]["messages"][2]["content"] == "first answer"'
exit 0
