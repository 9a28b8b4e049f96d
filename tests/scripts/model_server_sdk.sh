#!/usr/bin/env bash
# Fidelity check of the scripted model server: the official `openai` and `@anthropic-ai/sdk`
# npm clients (versions pinned in tests/node/package.json) talk to rein-model-server and must
# read its bodies and streams as they read the real services (tests/node/check_model_server.mjs).
#
# The clients are installed once into tests/node/node_modules (git-ignored) and reused.
# Exit 77 (skip) when node or npm is missing or npm cannot install from its registry.
set -uo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
node_dir="$here/node"
bin_dir="${REIN_TEST_BIN_DIR:-${REIN_BUILD_DIR:-$here/../build-test}/tests/bin}"
server="$bin_dir/rein-model-server"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "model_server_sdk: node/npm not installed; skipping"
  exit 77
fi
if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 20 ]; then
  echo "model_server_sdk: node $(node --version) is older than 20; skipping"
  exit 77
fi
if [ ! -x "$server" ]; then
  echo "model_server_sdk: $server is not built" >&2
  exit 1
fi

installed() {
  [ -f "$node_dir/node_modules/openai/package.json" ] &&
    [ -f "$node_dir/node_modules/@anthropic-ai/sdk/package.json" ] &&
    [ "$node_dir/node_modules/.package-lock.json" -nt "$node_dir/package-lock.json" ]
}
if ! installed; then
  log="$(mktemp)"
  if ! (cd "$node_dir" && timeout 300 npm ci --no-audit --no-fund >"$log" 2>&1); then
    echo "model_server_sdk: npm ci failed (registry unreachable?); skipping"
    tail -5 "$log"
    rm -f "$log"
    exit 77
  fi
  rm -f "$log"
fi

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

node "$node_dir/check_model_server.mjs" "$url"
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
