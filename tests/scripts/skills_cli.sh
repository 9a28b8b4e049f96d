#!/usr/bin/env bash
# `rein skills` end to end: list (text and JSON, with external skills and a refused manifest),
# show, and invoke through the pipeline with the exit status the brief names (0 ok, 1 the call
# failed or could not run, 2 usage), including name repair, invalid payloads, a process skill
# from a folder and from REIN_SKILLS_PATH, a denied path and a timeout.
set -u
rein="${REIN_BIN:?REIN_BIN is not set}"
src="${REIN_SOURCE_DIR:?REIN_SOURCE_DIR is not set}"
command -v python3 >/dev/null || { echo "python3 is missing"; exit 77; }
. "$(dirname "$0")/lib.sh"
skills="$src/tests/data/skills"


# list
run 0 "$rein" skills list
grep -q '^echo ' "$tmp/out" || fail "list lacks echo"
grep -q '^file_search ' "$tmp/out" || fail "list lacks file_search"
run 0 "$rein" skills list --json --skills "$skills"
check '"word_count" in [s["id"] for s in d["skills"]]'
check 'len(d["problems"]) == 1 and d["problems"][0]["pointer"] == "/timeout_ms"'
check 'd["problems"][0]["file"].endswith("broken/manifest.json")'
run 0 "$rein" skills list --skills "$skills"
grep -q 'skipped .*broken/manifest.json: /timeout_ms' "$tmp/err" || fail "problem not reported"

# show
run 0 "$rein" skills show calculator
check 'd["id"] == "calculator" and d["runner"]["kind"] == "builtin"'
run 1 "$rein" skills show no_such_tool

# invoke: ok, repaired, and the ways a call cannot run
run 0 "$rein" skills invoke echo '{"text": "hello"}'
check 'd["ok"] is True and d["output"] == "hello" and d["tool"] == "echo"'
check 'set(d) == {"ok", "tool", "call_id", "trace_id", "output", "meta"}'
run 0 "$rein" skills invoke Echo '{"text": "hi"}'
check 'd["tool"] == "echo" and d["output"] == "hi"'
# A call that could not run: the normalized result with error.code, and what the model would
# read under invalid_payload (the shape POST /skills/{id}/invoke and MCP give too).
run 1 "$rein" skills invoke echo '{}'
check 'd["ok"] is False and d["error"]["code"] == "invalid_arguments"'
check 'd["error"]["message"] == "missing required field(s): text"'
check 'd["invalid_payload"]["error"] == "Invalid arguments: missing required field(s): text"'
check 'd["invalid_payload"]["hint"] == "Fix the arguments and call echo again."'
check 'd["invalid_payload"]["receivedArgs"] == {}'
run 1 "$rein" skills invoke echo
check 'd["invalid_payload"]["errors"] == [{"path": "/text", "message": "required property is missing"}]'
check 'd["error"]["details"] == d["invalid_payload"]["errors"]'
run 1 "$rein" skills invoke '⚙' '{}'
check 'd["error"]["code"] == "invalid_name" and "has no letters or digits" in d["error"]["message"]'
check '"echo" in d["invalid_payload"]["available_tools"]'
run 1 "$rein" skills invoke web_search '{"q": "x"}'
check 'd["error"]["code"] == "unknown_tool"'
check 'd["invalid_payload"]["error"].startswith("Unknown tool:")'
check '"calculator" in d["invalid_payload"]["available_tools"]'
run 1 "$rein" skills invoke echo '{"text": "unterminated'
check 'd["error"]["code"] == "invalid_arguments" and "not valid JSON" in d["error"]["message"]'
check 'd["invalid_payload"]["receivedArgs"] == "{\"text\": \"unterminated"'
run 1 "$rein" skills invoke calculator '{"expression": "1/0"}'
check 'd["ok"] is False and d["error"]["code"] == "execution_failed"'
check '"division by zero" in d["error"]["message"]'
run 0 "$rein" skills invoke calculator '{"op": "mean", "values": [1, 2, 3, 4, 5]}'
check 'd["output"]["result"] == 3'

# external skills: a folder, REIN_SKILLS_PATH
run 0 "$rein" skills invoke word_count '{"text": "one two three"}' --skills "$skills"
check 'd["output"]["words"] == 3'
run 0 env REIN_SKILLS_PATH="/nonexistent:$skills" "$rein" skills invoke wordCount '{"text": "a b"}'
check 'd["tool"] == "word_count" and d["output"]["words"] == 2'

# the file skills stay inside --root
mkdir -p "$tmp/root/sub" "$tmp/elsewhere"
echo "find me here" > "$tmp/root/sub/a.txt"
echo "find me too" > "$tmp/elsewhere/b.txt"
run 0 "$rein" skills invoke file_search '{"query": "find me"}' --root "$tmp/root"
check 'd["output"]["count"] == 1 and d["output"]["matches"][0]["file"] == "sub/a.txt"'
run 1 "$rein" skills invoke file_search '{"query": "find", "root_dir": "../elsewhere"}' --root "$tmp/root"
check 'd["error"]["code"] == "denied" and d["invalid_payload"]["error"].startswith("Denied: root_dir")'

# a process skill that hangs is stopped by the timeout
mkdir -p "$tmp/slow/sleeper"
cat > "$tmp/slow/sleeper/manifest.json" <<'JSON'
{"id": "sleeper", "description": "sleeps", "parameters": {"type": "object"},
 "runner": {"kind": "process", "command": ["sleep", "30"]}}
JSON
start=$(date +%s)
run 1 "$rein" skills invoke sleeper '{}' --skills "$tmp/slow" --timeout 300
check 'd["error"]["code"] == "timeout"'
[ $(( $(date +%s) - start )) -lt 10 ] || fail "the timeout did not stop the skill"

# usage errors
run 2 "$rein" skills
run 2 "$rein" skills invoke
run 2 "$rein" skills list --bogus
run 2 "$rein" skills list --skills "$tmp/does-not-exist"
run 2 "$rein" skills frobnicate
run 0 "$rein" skills --help
echo "skills_cli: ok"
