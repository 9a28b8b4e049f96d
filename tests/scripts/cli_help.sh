#!/usr/bin/env bash
# Options like other Unix tools (issue 16 item 6): --help at every level prints that level's
# usage, options and exit status on stdout (exit 0), and `rein help CMD [SUB]` the same;
# --opt=value; -- ends the options; - reads a text or file from stdin; unknown commands,
# subcommands and options get the nearest name; durations take units; old spellings work with
# a warning; --json wherever a command prints data; `rein schema check --draft D` for a schema
# without $schema and `--ref-dir DIR` for remote $refs.
set -u
rein="${REIN_BIN:?REIN_BIN is not set}"
command -v python3 >/dev/null || { echo "python3 is missing"; exit 77; }
. "$(dirname "$0")/lib.sh"

clean_env
run_dir="$tmp/work"
mkdir -p "$run_dir"

# ---- help at every level ----
levels=(
  "" chat loop plan serve verify "schema" "schema check" "skills" "skills list" "skills show"
  "skills invoke" "provider" "provider parse" "provider chat" "provider list" "provider caps"
  "mcp" "mcp serve" "mcp list" "mcp call"
)
for level in "${levels[@]}"; do
  read -r -a words <<<"$level"
  for form in --help -h help; do
    if [ "$form" = help ]; then
      run 0 "$rein" help "${words[@]}"
    else
      run 0 "$rein" "${words[@]}" "$form"
    fi
    head -n 1 "$tmp/out" | grep -q "^usage: rein${level:+ $level}" ||
      fail "'rein $level $form' does not start with its usage: $(head -n 2 "$tmp/out")"
    grep -qi "exit status" "$tmp/out" || fail "'rein $level $form' does not give the exit status"
    [ -s "$tmp/err" ] && fail "'rein $level $form' wrote on stderr: $(cat "$tmp/err")"
  done
done
# Help wins wherever it stands, and never runs anything: caps does not look up "--help".
run 0 "$rein" provider caps --help
grep -q '"model"' "$tmp/out" && fail "provider caps --help printed capabilities"
run 0 "$rein" chat "echo hi" --help
grep -q "^usage: rein chat" "$tmp/out" || fail "chat MESSAGE --help"
# rein help chat is chat's help, not the top level's.
run 0 "$rein" help chat
grep -q "^usage: rein chat" "$tmp/out" || fail "rein help chat"
# Without what a command needs: its usage on stderr, exit 2.
for c in chat loop "schema check" "skills show" "provider caps" "mcp call" skills provider mcp schema; do
  read -r -a words <<<"$c"
  run 2 "$rein" "${words[@]}"
  grep -q "usage: rein $c" "$tmp/err" || fail "'rein $c' alone: $(cat "$tmp/err")"
done
run 2 "$rein"
grep -q "^usage: rein" "$tmp/err" || fail "rein alone prints no usage"

# ---- suggestions ----
run 2 "$rein" chta
grep -q "'chta' is not a rein command (did you mean 'chat'?)" "$tmp/err" || fail "rein chta: $(cat "$tmp/err")"
run 2 "$rein" help chta
grep -q "did you mean 'chat'" "$tmp/err" || fail "rein help chta: $(cat "$tmp/err")"
run 2 "$rein" skills lsit
grep -q "did you mean 'list'" "$tmp/err" || fail "rein skills lsit: $(cat "$tmp/err")"
run 2 "$rein" chat --jsno "echo hi"
grep -q "unknown option '--jsno' (did you mean --json?)" "$tmp/err" || fail "--jsno: $(cat "$tmp/err")"
run 2 "$rein" serve --prot 9
grep -q "did you mean --port" "$tmp/err" || fail "--prot: $(cat "$tmp/err")"
run 2 "$rein" schema check --draft=2033 a b
grep -q "2020-12, 2019-09 or 7" "$tmp/err" || fail "--draft 2033: $(cat "$tmp/err")"
run 2 "$rein" chat --json=yes "echo hi"
grep -q -- "--json takes no value" "$tmp/err" || fail "--json=yes: $(cat "$tmp/err")"
run 2 "$rein" chat --mode
grep -q -- "--mode needs a value" "$tmp/err" || fail "--mode alone: $(cat "$tmp/err")"

# ---- --opt=value, --, - ----
run 0 "$rein" chat --mode=single "echo hi" --json
check 'd["meta"]["mode"] == "single" and d["response"] == "hi"'
run 0 "$rein" chat -- "-5 plus 3"
grep -q -- "-2" "$tmp/out" || fail "the message after -- did not reach the turn: $(cat "$tmp/out")"
run 2 "$rein" chat "-5 plus 3"
grep -q "put -- before it" "$tmp/err" || fail "a message starting with - gets no hint: $(cat "$tmp/err")"
printf 'echo from stdin\n' | "$rein" chat - >"$tmp/out" 2>"$tmp/err" || fail "chat -: $(cat "$tmp/err")"
[ "$(cat "$tmp/out")" = "from stdin" ] || fail "chat - read: $(cat "$tmp/out")"
printf '' | "$rein" chat - >"$tmp/out" 2>"$tmp/err" && fail "an empty stdin message was sent"
grep -q "the message is empty" "$tmp/err" || fail "empty stdin: $(cat "$tmp/err")"
echo '{"text": "piped"}' | "$rein" skills invoke echo - >"$tmp/out" 2>"$tmp/err" ||
  fail "skills invoke echo -: $(cat "$tmp/err")"
check 'd["output"] == "piped"'
echo '{"type": "integer"}' >"$tmp/int.json"
echo '7' | "$rein" schema check "$tmp/int.json" - >"$tmp/out" 2>"$tmp/err" || fail "schema check -"
[ "$(cat "$tmp/out")" = "valid" ] || fail "schema check - said $(cat "$tmp/out")"
run 2 "$rein" schema check - -
grep -q "only one of the files can be -" "$tmp/err" || fail "schema check - -"
# The command's own options take their value inline or as the next word, anywhere.
run 0 "$rein" skills invoke "--timeout=5s" calculator '{"expression": "1+1"}'
run 0 "$rein" skills invoke calculator '{"expression": "1+1"}' --timeout 1500ms
run 2 "$rein" skills invoke calculator '{}' --timeout soon
grep -q "30s" "$tmp/err" || fail "a bad duration does not say what a duration is: $(cat "$tmp/err")"

# ---- one meaning per option name; old spellings ----
run 0 "$rein" chat --approval-timeout 5 "echo hi"
grep -q "deprecated; use --approval-timeout-ms" "$tmp/err" || fail "no deprecation warning"
mkdir -p "$tmp/proj"
printf 'protocols:\n  OK: {steps: [{command: "true"}]}\n' >"$tmp/proj/checks.yaml"
run_dir="$tmp/proj"
run 0 "$rein" verify --protocols checks.yaml --json
check 'd["verdict"] == "SUCCESS"'
run 0 "$rein" verify --config checks.yaml
grep -q "deprecated; use --protocols FILE" "$tmp/err" || fail "verify --config FILE.yaml: $(cat "$tmp/err")"
run 0 "$rein" verify -c checks.yaml --mode minimal --only OK
grep -q -- "--mode is deprecated; use --verify-mode" "$tmp/err" || fail "verify --mode: $(cat "$tmp/err")"
run_dir="$tmp/work"

# ---- --json wherever a command prints data ----
run 0 "$rein" provider list --json
check '"openai" in d and "rules" in d'
run 0 "$rein" provider caps gpt-4o --json
check 'd["model"] == "gpt-4o" and d["tools"] and d["reasoning"] is False'
run 0 "$rein" provider caps us.anthropic.claude-sonnet-4-5-v1:0 --json
check 'd["reasoning"] is True and d["confidence"]'
run 0 "$rein" skills show echo --json
check 'd["id"] == "echo"'
run 0 "$rein" skills list --json
check 'any(s["id"] == "calculator" for s in d["skills"])'
# ---- rein schema check: --draft for a schema without $schema, --ref-dir for remote $refs ----
mkdir -p "$tmp/sc/refs"
echo '{"items": [{"type": "integer"}, {"type": "string"}]}' >"$tmp/sc/tuple.json"
echo '[1, "a"]' >"$tmp/sc/pair.json"
echo '[1, 2]' >"$tmp/sc/two.json"
# Array-form items is draft-07's tuple; 2020-12 (the default) calls it unusable and says why.
run 2 "$rein" schema check "$tmp/sc/tuple.json" "$tmp/sc/pair.json"
grep -q "prefixItems" "$tmp/err" || fail "tuple items under 2020-12: $(cat "$tmp/err")"
run 0 "$rein" schema check --draft 7 "$tmp/sc/tuple.json" "$tmp/sc/pair.json"
[ "$(cat "$tmp/out")" = "valid" ] || fail "--draft 7: $(cat "$tmp/out")"
run 1 "$rein" schema check --draft=7 "$tmp/sc/tuple.json" "$tmp/sc/two.json"
grep -q "^/1: must be string" "$tmp/out" || fail "--draft 7, a bad tuple: $(cat "$tmp/out")"
# The schema's own $schema wins over --draft.
echo '{"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "integer"}, {"type": "string"}]}' >"$tmp/sc/tuple7.json"
run 1 "$rein" schema check --draft 2020-12 "$tmp/sc/tuple7.json" "$tmp/sc/two.json"
grep -q "^/1: must be string" "$tmp/out" || fail "\$schema draft-07: $(cat "$tmp/out")"
echo '{"$ref": "https://example.com/s/count.json"}' >"$tmp/sc/ref.json"
echo '{"$id": "https://example.com/s/count.json", "type": "integer", "minimum": 0}' >"$tmp/sc/refs/count.json"
echo 5 >"$tmp/sc/five.json"
echo -1 >"$tmp/sc/minus.json"
run 2 "$rein" schema check "$tmp/sc/ref.json" "$tmp/sc/five.json"
grep -q -- "--ref-dir" "$tmp/err" || fail "a remote \$ref without --ref-dir: $(cat "$tmp/err")"
run 0 "$rein" schema check --ref-dir "$tmp/sc/refs" "$tmp/sc/ref.json" "$tmp/sc/five.json"
run 1 "$rein" schema check --ref-dir "$tmp/sc/refs" --json "$tmp/sc/ref.json" "$tmp/sc/minus.json"
check 'not d["valid"] and d["errors"][0]["keyword"] == "minimum"'
run 2 "$rein" schema check --ref-dir "$tmp/sc/nowhere" "$tmp/sc/ref.json" "$tmp/sc/five.json"
grep -q "nowhere" "$tmp/err" || fail "a missing --ref-dir: $(cat "$tmp/err")"
exit 0
