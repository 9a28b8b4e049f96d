#!/usr/bin/env bash
# Input edges (issue 16 item 5): text that is not UTF-8 gets "...: not valid UTF-8 at byte N",
# exit 2, on every command that takes text (never "out of memory" or a silent exit); no error
# record is printed uninitialised; \u0000 is accepted where JSON allows it and refused with a
# clear message only where a C string must carry it; a long echo is answered whole.
set -u
rein="${REIN_BIN:?REIN_BIN is not set}"
command -v python3 >/dev/null || { echo "python3 is missing"; exit 77; }
. "$(dirname "$0")/lib.sh"

clean_env
run_dir="$tmp/work"
mkdir -p "$run_dir"
latin1=$'echo caf\xe9'

# not_utf8 BYTE CMD...: exit 2, one line naming the byte, nothing on stdout.
not_utf8() {
  local byte=$1
  shift
  run 2 "$@"
  grep -q "not valid UTF-8 at byte $byte\$" "$tmp/err" || fail "'$*': $(cat "$tmp/err")"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "'$*' said more than one line: $(cat "$tmp/err")"
  [ -s "$tmp/out" ] && fail "'$*' printed: $(cat "$tmp/out")"
  return 0
}
not_utf8 9 "$rein" chat "$latin1"
grep -q "^rein: chat: message: " "$tmp/err" || fail "chat does not name the message"
not_utf8 9 "$rein" loop "$latin1"
not_utf8 9 "$rein" plan "$latin1"
not_utf8 1 "$rein" provider chat $'\xff'
not_utf8 14 "$rein" skills invoke echo $'{"text": "caf\xe9"}'
not_utf8 14 "$rein" mcp call x__y $'{"text": "caf\xe9"}'
not_utf8 5 "$rein" provider caps $'gpt-\xff'
not_utf8 3 "$rein" skills show $'ec\xc3'
printf '%s\n' "$latin1" >"$tmp/msg.txt"
not_utf8 9 sh -c "\"$rein\" chat - <\"$tmp/msg.txt\""
printf '{"type": "string"}' >"$tmp/schema.json"
printf '"caf\xe9"' >"$tmp/latin1.json"
not_utf8 5 "$rein" schema check "$tmp/schema.json" "$tmp/latin1.json"
grep -q "instance file $tmp/latin1.json" "$tmp/err" || fail "schema check does not name the file"
printf 'I created caf\xe9.txt\n' >"$tmp/claims.txt"
run_dir="$tmp/work"
not_utf8 14 "$rein" verify --claims "$tmp/claims.txt"
# An option value that is no address is a usage error too, named by its module.
run 2 "$rein" serve --port 0 --store "sqlite:$tmp/x.db" --host $'127.0.0.\xff'
LC_ALL=C grep -q "^rein: server: host .* is not an IP address" "$tmp/err" || fail "bad host: $(cat "$tmp/err")"

# ---- no uninitialised error record ----
run 2 "$rein" plan --show /nope/plan.json
[ "$(cat "$tmp/err")" = "rein: /nope/plan.json: No such file or directory" ] ||
  fail "plan --show: $(od -c "$tmp/err" | head)"
python3 - "$tmp/err" <<'EOF' || fail "unprintable bytes in an error"
import sys
data = open(sys.argv[1], "rb").read()
assert all(b in b"\n\t" or 32 <= b < 127 for b in data), data
EOF

# ---- \u0000 ----
printf '{"type": "object", "properties": {"a": {"const": "x\\u0000y"}}}' >"$tmp/nul-schema.json"
printf '{"a": "x\\u0000y"}' >"$tmp/nul.json"
run 0 "$rein" schema check "$tmp/nul-schema.json" "$tmp/nul.json"
[ "$(cat "$tmp/out")" = "valid" ] || fail "\\u0000 in a string is valid JSON: $(cat "$tmp/out") $(cat "$tmp/err")"
grep -qi "JSON_ALLOW_NUL" "$tmp/err" && fail "a jansson flag in a message"
# A skill that reads JSON gets it as sent.
mkdir -p "$tmp/skills/back"
cat >"$tmp/skills/back/manifest.json" <<'EOF'
{"id": "back", "description": "Returns its call", "runner": {"kind": "process", "command": ["cat"]},
 "parameters": {"type": "object", "properties": {"text": {"type": "string"}}}}
EOF
run 0 "$rein" skills invoke back '{"text": "a\u0000b"}' --skills "$tmp/skills"
check 'd["output"]["arguments"]["text"] == "a\u0000b"'
# A skill that takes C strings refuses it, saying so (the JSON itself was fine).
run 1 "$rein" skills invoke echo '{"text": "a\u0000b"}'
check 'd["error"]["code"] == "invalid_arguments" and "NUL" in d["error"]["message"]'
check 'd["invalid_payload"]["receivedArgs"]["text"] == "a\u0000b"'
run 1 "$rein" skills invoke calculator '{"expression": "1+\u00002"}'
check '"NUL" in d["error"]["message"] or "unexpected byte 0x00" in d["error"]["message"]'
printf '{"model": "a\\u0000b"}' >"$tmp/nul-config.json"
run 2 "$rein" chat --config "$tmp/nul-config.json" "echo hi"
grep -q 'model: must not contain \\u0000' "$tmp/err" || fail "NUL in a config value: $(cat "$tmp/err")"

# ---- a long echo is answered whole ----
long=$(python3 -c 'print("a" * 7000)')
run 0 "$rein" chat "echo $long" --json
check 'd["success"] and d["response"] == "a" * 7000'
long=$(python3 -c 'print("b" * 70000)')
run 0 "$rein" chat "echo $long"
[ "$(wc -c <"$tmp/out")" -eq 70001 ] || fail "a 70,000-character echo came back as $(wc -c <"$tmp/out") bytes"
exit 0
