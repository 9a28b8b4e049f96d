#!/usr/bin/env bash
# `rein loop` end to end, with rein-model-server (the scripted model server as a process)
# playing the agent and a small C project in a temporary git repository: the agent fixes a
# failing test on its second iteration (exit 0, verdict SUCCESS, and the second iteration's
# request carries the failing test's output tail); the same failure three times (exit 1, the
# reason, what was tried and a suggestion printed); the judge asking for a person (exit 3,
# NEEDS REVIEW printed); --events as JSON lines; --conversation (the loop's conversation and
# its turns in a SQLite store); and the configurations that cannot work
# (exit 2): no protocol file, an --until name the file does not declare, no model, bad
# numbers, no goal.
set -u
rein="${REIN_BIN:?REIN_BIN is not set}"
bin_dir="${REIN_TEST_BIN_DIR:?REIN_TEST_BIN_DIR is not set}"
server="$bin_dir/rein-model-server"
command -v python3 >/dev/null || { echo "python3 is missing"; exit 77; }
command -v git >/dev/null || { echo "git is missing"; exit 77; }
command -v make >/dev/null && command -v cc >/dev/null || { echo "make or cc is missing"; exit 77; }
. "$(dirname "$0")/lib.sh"

clean_env
run_dir="$tmp/work"

# ---- the project ----
mkdir -p "$tmp/work" "$tmp/skills/write_file" "$tmp/empty"
cd "$tmp/work" || exit 1
printf 'test: test_calc\n\t./test_calc\ntest_calc: test_calc.c calc.c\n\tcc -o test_calc test_calc.c calc.c\n' >Makefile
cat >test_calc.c <<'EOF'
#include <stdio.h>
int f1(void); int f2(void);
int main(void)
{
    printf("1..2\n");
    printf("%s 1 - alpha\n", f1() == 1 ? "ok" : "not ok");
    printf("%s 2 - beta\n", f2() == 2 ? "ok" : "not ok");
    return f1() == 1 && f2() == 2 ? 0 : 1;
}
EOF
printf 'int f1(void) { return 0; }\nint f2(void) { return 0; }\n' >calc.c
printf 'protocols:\n  TEST:\n    priority: P1\n    steps: [{command: make -s test, format: tap}]\n' >rein-verify.yaml
printf 'test_calc\n' >.gitignore
git init -q . && git add -A && git -c user.name=t -c user.email=t@example.com commit -qm init \
  || fail "git init"
cd - >/dev/null || exit 1
reset_project() {
  (cd "$tmp/work" && git checkout -q -- . && git clean -fdxq) || fail "reset"
}
cat >"$tmp/skills/write_file/manifest.json" <<EOF
{"id": "write_file", "description": "Write a file of the project",
 "parameters": {"type": "object", "properties": {"path": {"type": "string"},
                "content": {"type": "string"}}, "required": ["path", "content"]},
 "runner": {"kind": "process", "command": ["$bin_dir/fs_skill", "$tmp/work"]}}
EOF

# ---- the model ----
start_model_server
# script REPLY-SPEC...: each spec is "write:F1:F2[:NOTES]", "text:TEXT" or "verdict:VERDICT".
script() {
  python3 - "$url" "$@" <<'EOF' || fail "script"
import json, sys, urllib.request
url, specs, replies = sys.argv[1], sys.argv[2:], []
for n, spec in enumerate(specs):
    kind, _, rest = spec.partition(":")
    if kind == "write":
        parts = rest.split(":")
        src = "int f1(void) { return %s; }\nint f2(void) { return %s; }\n" % (parts[0], parts[1])
        calls = [{"id": "w%d" % n, "name": "write_file",
                  "arguments": json.dumps({"path": "calc.c", "content": src})}]
        if len(parts) > 2:
            calls.append({"id": "n%d" % n, "name": "write_file",
                          "arguments": json.dumps({"path": "notes.txt", "content": parts[2]})})
        replies.append({"tool_calls": calls})
    elif kind == "text":
        replies.append({"text": rest})
    elif kind == "verdict":
        args = {"functionality_score": 7, "quality_score": 6, "risks": ["changes the API"],
                "verdict": rest, "reasoning": "the new return value needs a person's look"}
        replies.append({"tool_calls": [{"id": "v%d" % n, "name": "verdict",
                                        "arguments": json.dumps(args)}]})
# test-model states no confidence, so auto self-verifies the agent's calls (001): approve.
replies.append({"match": {"body_contains": "Answer YES or NO"}, "times": 0, "text": "YES"})
urllib.request.urlopen(urllib.request.Request(url + "/__reset", data=b"", method="POST")).read()
urllib.request.urlopen(urllib.request.Request(url + "/__script",
                                              data=json.dumps(replies).encode(),
                                              method="POST")).read()
EOF
}
all_requests() { python3 -c 'import sys, urllib.request
print(urllib.request.urlopen(sys.argv[1] + "/__requests").read().decode())' "$url" >"$tmp/out"; }
# The agent's and the judge's requests, without the self-verification ones (001's auto asks
# about every call of test-model, which states no confidence).
requests() { python3 -c 'import json, sys, urllib.request
d = json.loads(urllib.request.urlopen(sys.argv[1] + "/__requests").read().decode())
print(json.dumps([r for r in d if "Answer YES or NO" not in r["body"]]))' "$url" >"$tmp/out"; }
model=(--provider openai-compatible --base-url "$url/v1" --model test-model --skills "$tmp/skills")

# ---- fixed on the second iteration: exit 0 ----
script write:1:0 "text:I changed calc.c." write:1:2 "text:Fixed f2. All tests pass."
run 0 "$rein" loop "Make the tests pass" --until TEST "${model[@]}" --json
check 'd["success"] and d["verdict"] == "SUCCESS" and d["reason"] == "success"'
check 'd["iterations"] == 2 and d["stop_reason"] == "final_answer"'
check 'd["history"][0]["failing"][0]["check"] == "TEST" and d["history"][1]["failing"] == []'
check 'd["report"]["claims"][0]["status"] == "confirmed"'
all_requests
# One self-verification per write_file call (001's auto), all served.
check 'len([r for r in d if "Answer YES or NO" in r["body"]]) == 2'
check 'all(r["status"] == 200 for r in d)'
requests
check 'len(d) == 4'
check '"not ok 2 - beta" in d[2]["json"]["messages"][-1]["content"]'
check '"Iteration 1 of 10: the checks say FAILED." in d[2]["json"]["messages"][-1]["content"]'
check '"TEST (P1): `make -s test`" in d[0]["json"]["messages"][-1]["content"]'
grep -q 'int f2(void) { return 2; }' "$tmp/work/calc.c" || fail "calc.c was not written"

# Human output of the same run: the verdict on stdout, progress on stderr.
reset_project
script write:1:0 "text:I changed calc.c." write:1:2 "text:Fixed f2."
run 0 "$rein" loop "Make the tests pass" --until TEST "${model[@]}"
grep -q "^SUCCESS after 2 iterations" "$tmp/out" || fail "no SUCCESS line: $(cat "$tmp/out")"
grep -q "iteration 1: FAILED TEST:failed" "$tmp/err" || fail "no progress line: $(cat "$tmp/err")"

# ---- the same failure three times: exit 1 with the reason, what was tried, a suggestion ----
reset_project
script write:1:0:a "text:Tried a." write:1:0:b "text:Tried b." write:1:0:c "text:Tried c."
run 1 "$rein" loop "Make the tests pass" --until TEST "${model[@]}"
grep -q "^Stopped after 3 iterations: the same failure kept coming back (verdict FAILED)." "$tmp/out" \
  || fail "no stop line: $(cat "$tmp/out")"
grep -q "Tried: (1) write_file calc.c, write_file notes.txt" "$tmp/out" || fail "no tried list"
grep -q "^What to do: " "$tmp/out" || fail "no suggestion"
grep -q "iteration 3: stopping: the same failure kept coming back" "$tmp/err" \
  || fail "no stop progress line: $(cat "$tmp/err")"
if grep -q "same_error\|claim:" "$tmp/out" "$tmp/err"; then fail "a machine key in the words"; fi

# ---- the iteration limit: --max-iterations ----
reset_project
script write:1:0:a "text:Tried a." write:1:0:b "text:Tried b."
run 1 "$rein" loop "Make the tests pass" --until TEST --max-iterations 2 "${model[@]}" --json
check 'd["reason"] == "max_iterations" and d["stop_reason"] == "max_iterations"'
check 'd["iterations"] == 2 and d["max_iterations"] == 2 and not d["extended"]'

# ---- the judge asks for a person: exit 3 ----
reset_project
script write:1:2 "text:Done." verdict:NEEDS_REVIEW
run 3 "$rein" loop "Make the tests pass" --until TEST --judge "${model[@]}"
grep -q "^NEEDS REVIEW after 1 iteration" "$tmp/out" || fail "no review line: $(cat "$tmp/out")"
grep -q "^Judge: NEEDS_REVIEW (functionality 7/10, quality 6/10)" "$tmp/out" \
  || fail "no judge line: $(cat "$tmp/out")"
grep -q "risk: changes the API" "$tmp/out" || fail "no risk line"
requests
check '"+int f2(void) { return 2; }" in d[2]["body"] or "return 2" in d[2]["body"]'
check 'd[2]["json"]["tool_choice"]["function"]["name"] == "verdict"'

# ---- --events: the agent's and the loop's events as JSON lines ----
reset_project
script write:1:2 "text:Done."
run 0 "$rein" loop "Make the tests pass" --until TEST "${model[@]}" --events
python3 - "$tmp/out" <<'EOF' || fail "--events"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
types = [e["type"] for e in lines]
for t in ("iteration", "tool_call", "tool_result", "final", "agent", "report", "decision"):
    assert t in types, (t, types)
assert lines[-1]["type"] == "decision" and lines[-1]["action"] == "stop", lines[-1]
assert lines[-1]["reason"] == "success", lines[-1]
EOF

# ---- --conversation: the loop's conversation kept in the store, its turns recorded ----
reset_project
script write:1:2 "text:Done."
run 0 "$rein" loop "Make the tests pass" --until TEST "${model[@]}" --events \
  --conversation loop-1 --store "sqlite:$tmp/loop.db"
grep -q '"type":"tool_call"' "$tmp/out" || fail "--conversation --events: no agent events"
python3 - "$tmp/loop.db" <<'EOF' || fail "--conversation: the store"
import sqlite3, sys, json
db = sqlite3.connect(sys.argv[1])
title, state = db.execute("select title, state from conversations where id = 'loop-1'").fetchone()
assert title == "Make the tests pass" and state == "idle", (title, state)
roles = [json.loads(b)["role"] for (b,) in
         db.execute("select body from messages where conversation_id = 'loop-1' order by position")]
assert roles[:2] == ["system", "user"] and roles[-1] == "assistant", roles
calls = db.execute("select tool, status from ledger where conversation_id = 'loop-1'").fetchall()
assert calls == [("write_file", "success")], calls
types = [t for (t,) in db.execute("select type from events where conversation_id = 'loop-1' order by seq")]
assert types[0] == "start" and types[-1] == "result", types
EOF
run 2 "$rein" loop "goal" --conversation "a/b" "${model[@]}"

# ---- configurations that cannot work: exit 2 ----
run 2 "$rein" loop
run 2 "$rein" loop "goal" --until TEST,NOPE "${model[@]}"
grep -q '"NOPE" is not a protocol' "$tmp/err" || fail "unknown --until: $(cat "$tmp/err")"
run 2 "$rein" loop "goal" --max-iterations 0 "${model[@]}"
run 2 "$rein" loop "goal" --mode sometimes "${model[@]}"
run 2 "$rein" loop "goal" --until TEST
grep -q "needs a model" "$tmp/err" || fail "no model: $(cat "$tmp/err")"
run 2 "$rein" loop "goal" --config "$tmp/missing.yaml" "${model[@]}"
(cd "$tmp/empty" && "$rein" loop "goal" "${model[@]}") >"$tmp/out" 2>"$tmp/err" </dev/null
[ $? -eq 2 ] || fail "no protocol file: want exit 2"
grep -q "no rein-verify.yaml" "$tmp/err" || fail "no protocol file: $(cat "$tmp/err")"
printf 'protocols:\n  TEST: {priority: P9, steps: []}\n' >"$tmp/bad.yaml"
run 2 "$rein" loop "goal" --config "$tmp/bad.yaml" "${model[@]}"
grep -q "bad.yaml:2" "$tmp/err" || fail "bad protocol file: $(cat "$tmp/err")"
exit 0
