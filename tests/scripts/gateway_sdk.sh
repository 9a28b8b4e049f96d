#!/usr/bin/env bash
# rein's gateway with the official SDKs as clients (tests/node/gateway.test.mjs): `openai`,
# `@anthropic-ai/sdk`, the Vercel AI SDK (`ai`, `@ai-sdk/openai-compatible`, `@ai-sdk/google`)
# and Google's `@google/genai` (versions pinned in tests/node/package.json) talk to `rein serve`
# processes whose upstream is the scripted model server: through its OpenAI wire, its
# Anthropic wire, its Responses wire, its Gemini wire and its Bedrock wire.
#
# The clients are installed into tests/node/node_modules (git-ignored) by scripts/node-deps.sh
# (run by scripts/install-deps.sh too). Exit 77 (skip) when node or npm is missing or npm
# cannot install from its registry.
set -uo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
. "$here/scripts/lib.sh"
node_dir="$here/node"
bin_dir="${REIN_TEST_BIN_DIR:-${REIN_BUILD_DIR:-$here/../build-test}/tests/bin}"
server="$bin_dir/rein-model-server"
rein="${REIN_BIN:-${REIN_BUILD_DIR:-$here/../build-test}/rein}"
clean_env

[ -x "$server" ] || fail "$server is not built"
[ -x "$rein" ] || fail "$rein is not built"
"$here/../scripts/node-deps.sh" || { echo "gateway_sdk: skipping"; exit 77; }
node22="$node_dir/node_modules/node/bin/node" # the SDKs' own engine (scripts/node-deps.sh)

start_model_server
ms_pid=$pid
pid=""
pids=()
stop_all() {
  for p in "${pids[@]}" "$ms_pid"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${pids[@]}" "$ms_pid"; do wait "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap stop_all EXIT

# start_rein NAME ARGS...: a rein serve on a free port; sets $rein_url.
start_rein() {
  local name=$1
  shift
  REIN_API_KEYS=rein-test-key,rein-test-key-2 REIN_LOG=warn "$rein" serve --port 0 --threads 8 \
    --store "sqlite:$tmp/$name.db" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
  pids+=($!)
  rein_url=""
  for _ in $(seq 1 200); do
    rein_url="$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$tmp/$name.out")"
    [ -n "$rein_url" ] && break
    kill -0 "${pids[-1]}" 2>/dev/null || { cat "$tmp/$name.err" >&2; fail "rein serve ($name) exited"; }
    sleep 0.05
  done
  [ -n "$rein_url" ] || fail "rein serve ($name) did not start"
}

start_rein openai --provider openai-compatible --base-url "$url/v1" --model gpt-test
oa_url=$rein_url
start_rein anthropic --provider anthropic --base-url "$url" --model claude-test
an_url=$rein_url
start_rein responses --provider openai-responses --base-url "$url/v1" --model gpt-test
rs_url=$rein_url
start_rein gemini --provider gemini --base-url "$url/v1beta" --model gemini-test
gm_url=$rein_url
# A Bedrock upstream that signs with SigV4 (the model server recomputes the signature when a
# scenario's api_key is "AKIDTEST:sdk-secret"); the credentials only for this process.
export AWS_ACCESS_KEY_ID=AKIDTEST AWS_SECRET_ACCESS_KEY=sdk-secret AWS_REGION=us-east-1 \
  AWS_EC2_METADATA_DISABLED=true
unset AWS_SESSION_TOKEN AWS_PROFILE AWS_BEARER_TOKEN_BEDROCK
start_rein bedrock --provider bedrock --base-url "$url" --model anthropic.claude-test-v1:0
bd_url=$rein_url
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_REGION AWS_EC2_METADATA_DISABLED

"$node22" "$node_dir/gateway.test.mjs" "$url" "$oa_url" "$an_url" "$rs_url" "$gm_url" "$bd_url"
status=$?

# The recorded provider replies of ../shared/fixtures as the upstream's (read in place).
fx="${REIN_SHARED_DIR:-}/fixtures"
if [ -f "$fx/SOURCES.md" ]; then
  start_rein ollama --provider ollama --base-url "$url" --model llama-test
  ol_url=$rein_url
  start_rein dashscope --provider dashscope-native --base-url "$url/api/v1" --model qwen-test
  ds_url=$rein_url
  "$node22" "$node_dir/gateway_recordings.test.mjs" "$url" "$oa_url" "$an_url" "$fx" "$ol_url" \
    "$ds_url" || status=1
else
  echo "gateway_sdk: no shared fixtures at $fx; the recordings were not replayed"
fi

# The servers must stop cleanly too (under ASan a leak makes rein exit non-zero).
for i in "${!pids[@]}"; do
  kill -TERM "${pids[$i]}"
  if ! wait "${pids[$i]}"; then
    echo "gateway_sdk: rein serve $i did not exit cleanly:" >&2
    cat "$tmp"/*.err >&2
    status=1
  fi
done
pids=()
exit $status
