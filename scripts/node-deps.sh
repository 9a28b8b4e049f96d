#!/usr/bin/env bash
# Installs the npm packages the node tests use (versions pinned by tests/node/package-lock.json)
# into tests/node/node_modules with `npm ci`, unless they are already there and newer than the
# lock file. scripts/install-deps.sh runs it once before the tests; the SDK test scripts run it
# again (a no-op then) so that `ctest` alone works too. A lock keeps two of them from writing
# node_modules at once (ctest runs the scripts in parallel).
# The SDKs' current majors need Node.js 22, newer than Debian's or this machine's: the lock
# file installs it too (the node package, tests/node/node_modules/node/bin/node), and the SDK
# tests run on that one. The machine's own node only runs npm.
# Exit 0: installed. Exit 77: node or npm is missing, or npm could not install (the reason on
# stderr); the SDK tests then skip.
set -uo pipefail
node_dir="$(cd "$(dirname "$0")/../tests/node" && pwd)"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "node-deps: node/npm not installed" >&2
  exit 77
fi
installed() {
  local p
  for p in openai @anthropic-ai/sdk ai @ai-sdk/openai-compatible @ai-sdk/openai @ai-sdk/anthropic \
    @openai/agents @langchain/openai @langchain/anthropic @google/genai @ai-sdk/google; do
    [ -f "$node_dir/node_modules/$p/package.json" ] || return 1
  done
  [ -x "$node_dir/node_modules/node/bin/node" ] || return 1
  [ "$node_dir/node_modules/.package-lock.json" -nt "$node_dir/package-lock.json" ]
}

exec 9>"$node_dir/.npm-install.lock"
flock 9
installed && exit 0
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if ! (cd "$node_dir" && timeout 300 npm ci --no-audit --no-fund >"$log" 2>&1); then
  echo "node-deps: npm ci in $node_dir failed (registry unreachable?):" >&2
  tail -5 "$log" >&2
  exit 77
fi
installed || { echo "node-deps: npm ci left $node_dir/node_modules incomplete" >&2; exit 77; }
exit 0
