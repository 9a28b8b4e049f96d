#!/usr/bin/env bash
# Terminal manners (issue 16 item 8): escape codes go only to a terminal, never with NO_COLOR
# or TERM=dumb; a waiting turn shows progress on stderr when it is a terminal, and a heartbeat
# line every 10 s with REIN_LOG=info when it is not. `rein provider chat --record` works
# offline (the rules' exchanges are recorded and replay checks them) and never leaves an empty
# file.
set -u
rein="${REIN_BIN:?REIN_BIN is not set}"
bin_dir="${REIN_TEST_BIN_DIR:?REIN_TEST_BIN_DIR is not set}"
server="$bin_dir/rein-model-server"
command -v python3 >/dev/null || { echo "python3 is missing"; exit 77; }
. "$(dirname "$0")/lib.sh"

clean_env
unset NO_COLOR REIN_LOG
run_dir="$tmp/work"
mkdir -p "$run_dir"
start_model_server
# Self-verification off: the scripts answer the turn's calls, not a verifier's questions.
model=(--provider openai-compatible --base-url "$url/v1" --model test-model --verification off)

# on_tty ENV... -- CMD...: runs CMD with stdin, stdout and stderr on a pseudo-terminal; what
# it wrote goes to $tmp/tty.
on_tty() {
  python3 - "$tmp/tty" "$@" <<'EOF'
import os, pty, sys
out, args = sys.argv[1], sys.argv[2:]
cut = args.index("--")
env = dict(os.environ)
for kv in args[:cut]:
    k, _, v = kv.partition("=")
    if v == "<unset>":
        env.pop(k, None)
    else:
        env[k] = v
pid, fd = pty.fork()
if pid == 0:
    os.execvpe(args[cut + 1], args[cut + 1:], env)
data = b""
while True:
    try:
        chunk = os.read(fd, 65536)
    except OSError:
        break
    if not chunk:
        break
    data += chunk
os.waitpid(pid, 0)
open(out, "wb").write(data)
EOF
}
has_esc() { python3 -c 'import sys; sys.exit(0 if b"\x1b" in open(sys.argv[1], "rb").read() else 1)' "$tmp/tty"; }

# A turn that waits a moment, so the status line is drawn more than once.
slow='[{"delay_headers_ms": 600, "tool_calls":[{"id":"c1","name":"echo","arguments":"{\"text\":\"hi\"}"}]},
       {"delay_headers_ms": 300, "text":"said hi"}]'
model_script "$slow"
on_tty TERM=xterm -- "$rein" chat "${model[@]}" "say hi"
has_esc || fail "no status line on a terminal"
grep -q "thinking" "$tmp/tty" || fail "the status line does not say what the turn does"
for env in NO_COLOR=1 TERM=dumb TERM=\<unset\>; do
  model_script "$slow"
  on_tty TERM=xterm "$env" -- "$rein" chat "${model[@]}" "say hi"
  has_esc && fail "escape codes with $env: $(od -c "$tmp/tty" | head -5)"
  grep -q "thinking" "$tmp/tty" || fail "no progress at all with $env"
  grep -q "said hi" "$tmp/tty" || fail "no answer with $env"
done
# NO_COLOR set but empty does not count (no-color.org).
model_script "$slow"
on_tty TERM=xterm NO_COLOR= -- "$rein" chat "${model[@]}" "say hi"
has_esc || fail "an empty NO_COLOR turned the status line off"
# The plan's live view follows the same rule.
model_script '[{"match":{"tools_include":"create_plan"},"tool_calls":[{"name":"create_plan",
          "arguments":"{\"title\":\"Hi\",\"steps\":[\"Say hi\"],\"dependencies\":{}}"}]},
         {"match":{"body_contains":"Write the answer"},"text":"said hi"},
         {"match":{"body_contains":"Your step"},"times":0,"text":"said it"}]'
on_tty TERM=dumb -- "$rein" plan "${model[@]}" "say hi"
has_esc && fail "plan: escape codes with TERM=dumb"
grep -q "Say hi" "$tmp/tty" || fail "plan: no step shown with TERM=dumb: $(cat "$tmp/tty")"

# Not a terminal: nothing but the answer, and with REIN_LOG=info a heartbeat every 10 s.
model_script "$slow"
run 0 "$rein" chat "${model[@]}" "say hi"
[ -s "$tmp/err" ] && fail "stderr got progress while it is no terminal: $(cat "$tmp/err")"
python3 -c 'import sys; sys.exit(1 if b"\x1b" in open(sys.argv[1], "rb").read() else 0)' "$tmp/out" ||
  fail "escape codes in a pipe"
# The answer comes 3 s after the first heartbeat is due: 0.6 s was too little on a loaded
# machine (the heartbeat came after the answer).
model_script '[{"delay_headers_ms": 13000, "text":"late"}]'
run 0 env REIN_LOG=info "$rein" chat "${model[@]}" "wait"
grep -q "rein info chat: still thinking after 10 s" "$tmp/err" || fail "no heartbeat: $(cat "$tmp/err")"

# ---- provider chat --record, offline ----
run 0 "$rein" provider chat --record "$run_dir/s.jsonl" "echo hi"
check 'd["meta"]["provider"] == "rules"'
[ -s "$run_dir/s.jsonl" ] || fail "the recording is empty"
python3 - "$run_dir/s.jsonl" <<'EOF' || fail "the recording"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert len(lines) == 1 and lines[0]["wire"] == "rules" and lines[0]["provider"] == "rules", lines
assert lines[0]["request"]["messages"][-1]["content"] == "echo hi", lines[0]["request"]
EOF
run 0 env REIN_PROVIDER=replay "REIN_REPLAY=$run_dir/s.jsonl" "$rein" provider chat "echo hi"
run 1 env REIN_PROVIDER=replay "REIN_REPLAY=$run_dir/s.jsonl" "$rein" provider chat "echo ho"
grep -q "differs from $run_dir/s.jsonl" "$tmp/err" || fail "a changed request replayed: $(cat "$tmp/err")"
# A recording that cannot be written is refused at once, and nothing is left behind.
run 2 "$rein" provider chat --record "$run_dir/no/such/dir/s.jsonl" "echo hi"
grep -q "cannot write the recording" "$tmp/err" || fail "bad recording path: $(cat "$tmp/err")"
# A run that sends nothing leaves no file.
run 2 "$rein" provider chat --record "$run_dir/never.jsonl" --provider nope "echo hi"
[ -e "$run_dir/never.jsonl" ] && fail "an empty recording was left"
exit 0
