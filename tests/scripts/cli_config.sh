#!/usr/bin/env bash
# rein's configuration file is loaded or refused (issue 16 item 1): a file named by --config
# or REIN_CONFIG that is missing, a directory, unreadable, not UTF-8, not JSON, not an object,
# or has an unknown key or a bad value stops EVERY command with one line naming the file (and
# for what is inside it, the line and column), exit 2, before anything runs. The rules provider
# answers only when nothing names a provider; every command that uses a model says which one
# (--json meta, and a line on stderr with REIN_LOG=info).
set -u
rein="${REIN_BIN:?REIN_BIN is not set}"
bin_dir="${REIN_TEST_BIN_DIR:?REIN_TEST_BIN_DIR is not set}"
server="$bin_dir/rein-model-server"
command -v python3 >/dev/null || { echo "python3 is missing"; exit 77; }
. "$(dirname "$0")/lib.sh"

clean_env
unset REIN_MCP_CONFIG REIN_LOG
run_dir="$tmp/work"
mkdir -p "$run_dir"
cd "$run_dir" || exit 1
echo '{"type": "object"}' >schema.json
echo '{}' >instance.json
echo '{"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}]}' >reply.json
printf 'protocols:\n  TRUE: {steps: [{command: "true"}]}\n' >rein-verify.yaml

# Every command, with arguments that would work: only the configuration can stop it.
commands=(
  "chat|echo hi"
  "loop|a goal"
  "plan|a request"
  "serve|--port|0"
  "skills|list"
  "skills|invoke|echo|{\"text\": \"x\"}"
  "schema|check|schema.json|instance.json"
  "provider|chat|hi"
  "provider|list"
  "provider|caps|gpt-4o"
  "provider|parse|--format|openai-json|reply.json"
  "mcp|list"
  "mcp|call|fs__x"
  "verify"
)

# refused NAME WANT CONFIG_ARGS...: every command exits 2 with one line on stderr holding WANT.
refused() {
  local name=$1 want=$2
  shift 2
  for c in "${commands[@]}"; do
    IFS='|' read -r -a cmd <<<"$c"
    run 2 "$@" "$rein" "${cmd[@]}"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$name: rein ${cmd[*]}: not one line: $(cat "$tmp/err")"
    grep -qF -- "$want" "$tmp/err" || fail "$name: rein ${cmd[*]}: '$(cat "$tmp/err")' lacks '$want'"
    grep -q '^rein: config: ' "$tmp/err" || fail "$name: rein ${cmd[*]}: no 'rein: config:' prefix"
    [ -s "$tmp/out" ] && fail "$name: rein ${cmd[*]} printed on stdout: $(cat "$tmp/out")"
  done
  return 0
}

# The forms, each through the flag (env: nothing but the file) and the environment.
printf '{"provider": {"provider": "openai",\n  "model": "gpt-4o",\n' >truncated.json
printf '{"provider": "openai",\n  "modle": "gpt-4o"}\n' >misspelt.json
printf '{"provider": "openai", "max_retries": "many"}\n' >badvalue.json
printf '{"provider": "nope"}\n' >badprovider.json
printf '{"model": "caf\xe9"}\n' >latin1.json
printf '[1, 2]\n' >array.json
printf '{"mcpServers": {"fs": {"command": "npx", "args": [1]}}}\n' >badmcp.json
mkdir -p folder.json

refused missing "$run_dir/missing.json: No such file or directory" env "REIN_CONFIG=$run_dir/missing.json"
grep -q "(from REIN_CONFIG)" "$tmp/err" || fail "REIN_CONFIG is not named as the origin"
for c in "${commands[@]}"; do
  IFS='|' read -r -a cmd <<<"$c"
  # The flag goes after the command's words, like any option.
  run 2 "$rein" "${cmd[@]}" --config "$run_dir/missing.json"
  grep -qF "$run_dir/missing.json: No such file or directory" "$tmp/err" ||
    fail "--config missing: rein ${cmd[*]}: $(cat "$tmp/err")"
  run 2 "$rein" "${cmd[@]}" "--config=$run_dir/truncated.json"
  grep -qE "truncated.json:3:[0-9]+: " "$tmp/err" || fail "--config=truncated: rein ${cmd[*]}: $(cat "$tmp/err")"
done
refused directory "folder.json: is a directory" env "REIN_CONFIG=$run_dir/folder.json"
refused truncated "truncated.json:3:" env "REIN_CONFIG=$run_dir/truncated.json"
refused misspelt "misspelt.json:2:3: unknown key \"modle\" (did you mean \"model\"?)" env "REIN_CONFIG=$run_dir/misspelt.json"
refused badvalue "badvalue.json:1:24: provider setting max_retries: 'many' is not a whole number" env "REIN_CONFIG=$run_dir/badvalue.json"
refused badprovider "badprovider.json:1:2: unknown provider 'nope'" env "REIN_CONFIG=$run_dir/badprovider.json"
refused latin1 "latin1.json:1:15: not valid UTF-8 at byte 15" env "REIN_CONFIG=$run_dir/latin1.json"
refused array "array.json:1:1: the configuration must be a JSON object, got array" env "REIN_CONFIG=$run_dir/array.json"
refused badmcp "badmcp.json:1:42: mcpServers.fs.args[0]: must be a string" env "REIN_CONFIG=$run_dir/badmcp.json"
if [ "$(id -u)" != 0 ]; then
  cp misspelt.json unreadable.json && chmod 000 unreadable.json
  refused unreadable "unreadable.json: Permission denied" env "REIN_CONFIG=$run_dir/unreadable.json"
fi
# The flag wins over the environment, and an empty REIN_CONFIG is no file.
printf '{"mcpServers": {}}\n' >mcp-only.json
run 0 env "REIN_CONFIG=$run_dir/missing.json" "$rein" provider list --config mcp-only.json
run 0 env REIN_CONFIG= "$rein" chat "echo hi"

# ---- which provider answers ----
# Nothing names a provider (a file with MCP servers only): the rules answer, and say so.
run 0 env REIN_LOG=info "$rein" chat --config mcp-only.json "echo hi" --json
check 'd["response"] == "hi" and d["meta"]["provider"] == "rules"'
grep -q "provider rules, model rules (config mcp-only.json)" "$tmp/err" ||
  fail "REIN_LOG=info does not name the provider: $(cat "$tmp/err")"

# A file that names one: that provider answers, never the rules.
start_model_server
printf '{"provider": {"provider": "openai-compatible", "base_url": "%s/v1",\n "model": "test-model"}}\n' "$url" >model.json
python3 -c 'import sys, urllib.request
urllib.request.urlopen(urllib.request.Request(sys.argv[1] + "/__script", data=b"[{\"text\":\"from the model\"}]", method="POST")).read()' "$url"
run 0 env "REIN_CONFIG=$run_dir/model.json" REIN_LOG=info "$rein" chat "echo hi" --json
check 'd["response"] == "from the model" and d["meta"]["provider"] == "openai-compatible" and d["meta"]["model"] == "test-model"'
grep -q "provider openai-compatible, model test-model" "$tmp/err" || fail "no provider line: $(cat "$tmp/err")"
# A model without a provider is a configured provider (the openai preset), not the rules.
printf '{"model": "gpt-4o"}\n' >model-only.json
run 2 env OPENAI_API_KEY= "$rein" chat --config model-only.json "echo hi"
grep -q "OPENAI_API_KEY" "$tmp/err" || fail "a model-only config fell back to the rules: $(cat "$tmp/err")"
# rein serve names what it uses on its first line.
start_serve --store "sqlite:$tmp/s.db" --config mcp-only.json
stop_serve
grep -q "provider rules, model rules" "$tmp/serve.out" || fail "serve: $(cat "$tmp/serve.out")"
exit 0
