#!/usr/bin/env bash
# Fidelity check of the scripted model server: the official `openai` and `@anthropic-ai/sdk`
# npm clients (versions pinned in tests/node/package.json) talk to rein-model-server and must
# read its bodies and streams as they read the real services (tests/node/check_model_server.mjs).
#
# The clients are installed into tests/node/node_modules (git-ignored) by scripts/node-deps.sh
# (run by scripts/install-deps.sh too). Exit 77 (skip) when node or npm is missing or npm
# cannot install from its registry.
set -uo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
node_dir="$here/node"
bin_dir="${REIN_TEST_BIN_DIR:-${REIN_BUILD_DIR:-$here/../build-test}/tests/bin}"
server="$bin_dir/rein-model-server"

if [ ! -x "$server" ]; then
  echo "model_server_sdk: $server is not built" >&2
  exit 1
fi
"$here/../scripts/node-deps.sh" || { echo "model_server_sdk: skipping"; exit 77; }
node22="$node_dir/node_modules/node/bin/node" # the SDKs' own engine (scripts/node-deps.sh)

url_file="$(mktemp)"
"$server" --port 0 >"$url_file" &
pid=$!
cleanup() {
  kill -TERM "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  rm -f "$url_file"
}
trap cleanup EXIT

url=""
for _ in $(seq 1 100); do
  url="$(head -n 1 "$url_file")"
  [ -n "$url" ] && break
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "model_server_sdk: rein-model-server exited before listening" >&2
    exit 1
  fi
  sleep 0.1
done
if [ -z "$url" ]; then
  echo "model_server_sdk: rein-model-server printed no URL" >&2
  exit 1
fi

"$node22" "$node_dir/check_model_server.mjs" "$url"
status=$?

# The server must also stop cleanly (under ASan a leak makes this exit non-zero).
trap - EXIT
kill -TERM "$pid"
wait "$pid"
server_status=$?
rm -f "$url_file"
if [ $server_status -ne 0 ]; then
  echo "model_server_sdk: rein-model-server exited with $server_status" >&2
  exit 1
fi
exit $status
