#!/usr/bin/env bash
# Success means success (issue 16 item 2): a turn is success: false, exit 1, with the reason in
# meta.detail, when it made tool calls and none succeeded, when every call was denied, or when
# the rules provider could not route the request; `rein chat` and `POST /agent/chat` agree
# (the rule is in the agent's result), and `rein chat --help` documents it.
set -u
rein="${REIN_BIN:?REIN_BIN is not set}"
bin_dir="${REIN_TEST_BIN_DIR:?REIN_TEST_BIN_DIR is not set}"
server="$bin_dir/rein-model-server"
command -v python3 >/dev/null || { echo "python3 is missing"; exit 77; }
. "$(dirname "$0")/lib.sh"

clean_env
run_dir="$tmp/work"
mkdir -p "$run_dir"

# ---- offline: the rules provider ----
run 0 "$rein" chat "echo hi" --json
check 'd["success"] and "detail" not in d["meta"]'
run 1 "$rein" chat "calculate 1/0" --json
check 'not d["success"] and d["meta"]["stop_reason"] == "final_answer"'
check 'd["meta"]["detail"].startswith("none of the 1 tool call succeeded; the last: calculator: execution_failed: division by zero")'
run 1 "$rein" chat "calculate 1/0"
grep -q "division by zero" "$tmp/out" || fail "the answer is gone: $(cat "$tmp/out")"
grep -q "^rein: the turn did not succeed (final_answer): none of the 1 tool call succeeded" "$tmp/err" ||
  fail "no reason on stderr: $(cat "$tmp/err")"
run 1 "$rein" chat "what's the weather?" --json
check 'not d["success"] and "could not route" in d["meta"]["detail"] and d["tool_calls"] == []'
# Offline self-verification denies every call: the rules cannot say YES.
run 1 "$rein" chat "echo hi" --verification force --json
check 'not d["success"] and d["meta"]["detail"].startswith("every tool call was denied (1 of 1)")'
check 'd["tool_calls"][0]["result"]["error"]["code"] == "denied"'
# One failure among successes is still a success (the model saw the error and went on).
run 0 "$rein" chat "echo one, then calculate 2+2" --json
check 'd["success"]'

# ---- a model ----
start_model_server
# Self-verification off: the scripts answer the turn's calls, not a verifier's questions.
model=(--provider openai-compatible --base-url "$url/v1" --model test-model --verification off)
model_script '[{"tool_calls":[{"id":"c1","name":"calculator","arguments":"{\"expression\":\"1/0\"}"}]},
         {"tool_calls":[{"id":"c2","name":"nosuchtool","arguments":"{}"}]},
         {"text":"Done, all good."}]'
run 1 "$rein" chat "${model[@]}" "divide" --json
check 'not d["success"] and d["response"] == "Done, all good."'
check 'd["meta"]["detail"].startswith("none of the 2 tool calls succeeded; the last: nosuchtool: unknown_tool")'
model_script '[{"tool_calls":[{"id":"c1","name":"calculator","arguments":"{\"expression\":\"1/0\"}"}]},
         {"tool_calls":[{"id":"c2","name":"calculator","arguments":"{\"expression\":\"1/4\"}"}]},
         {"text":"It is 0.25."}]'
run 0 "$rein" chat "${model[@]}" "divide" --json
check 'd["success"] and [c["status"] for c in d["tool_calls"]] == ["error", "success"]'
# No tool calls at all: the model's answer is the success.
model_script '[{"text":"Hello."}]'
run 0 "$rein" chat "${model[@]}" "hello" --json
check 'd["success"] and d["meta"]["provider"] == "openai-compatible" and d["meta"]["model"] == "test-model"'
# Propose mode: an invalid call, then a checked one waiting to run, is a success.
model_script '[{"tool_calls":[{"id":"p1","name":"echo","arguments":"{}"}]},
         {"tool_calls":[{"id":"p2","name":"echo","arguments":"{\"text\":\"x\"}"}]}]'
run 0 "$rein" chat "${model[@]}" "echo x" --mode propose --json
check 'd["success"] and d["meta"]["stop_reason"] == "proposed"'

# ---- POST /agent/chat reads the same rule ----
start_serve --store "sqlite:$tmp/serve.db"
post() { python3 -c 'import sys, urllib.request
req = urllib.request.Request(sys.argv[1] + "/agent/chat", data=sys.argv[2].encode(),
                             headers={"Content-Type": "application/json", "Accept": sys.argv[3]})
print(urllib.request.urlopen(req).read().decode())' "$surl" "$1" "${2:-application/json}" >"$tmp/out"; }
post '{"message": "calculate 1/0"}'
check 'not d["success"] and "none of the 1 tool call succeeded" in d["meta"]["detail"]'
post '{"message": "echo hi"}'
check 'd["success"] and d["meta"]["provider"] == "rules"'
post '{"message": "what is the weather?"}' text/event-stream
python3 - "$tmp/out" <<'EOF' || fail "SSE"
import json, sys
events = [json.loads(l[6:]) for l in open(sys.argv[1]) if l.startswith("data: ")]
final = [e for e in events if e.get("type") == "final"][0]
result = events[-1]
assert final["success"] is False, final
assert result["success"] is False and "could not route" in result["meta"]["detail"], result
EOF
stop_serve

# ---- documented next to the exit status ----
run 0 "$rein" chat --help
grep -q "none succeeded; every call was" "$tmp/out" || fail "chat --help does not state the rule"
exit 0
