#!/usr/bin/env bash
# Installs the npm packages the node tests use (versions pinned by tests/node/package-lock.json)
# into tests/node/node_modules with `npm ci`, unless they are already there and newer than the
# lock file. scripts/install-deps.sh runs it once before the tests; the SDK test scripts run it
# again (a no-op then) so that `ctest` alone works too. A lock keeps two of them from writing
# node_modules at once (ctest runs the scripts in parallel).
# Exit 0: installed. Exit 77: node 18+ or npm is missing, or npm could not install (the reason
# on stderr); the SDK tests then skip.
set -uo pipefail
node_dir="$(cd "$(dirname "$0")/../tests/node" && pwd)"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "node-deps: node/npm not installed" >&2
  exit 77
fi
if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 18 ]; then
  echo "node-deps: node $(node --version) is older than 18" >&2
  exit 77
fi

installed() {
  local p
  for p in openai @anthropic-ai/sdk ai @ai-sdk/openai-compatible @ai-sdk/openai @ai-sdk/anthropic \
    @openai/agents @langchain/openai @langchain/anthropic @google/genai @ai-sdk/google; do
    [ -f "$node_dir/node_modules/$p/package.json" ] || return 1
  done
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
exit 0
