#!/usr/bin/env bash
# Installs tests/mcp/package.json (the MCP conformance suite, the node@22 it needs, and the
# reference server and client) into tests/mcp/node_modules, once; later runs find it there.
# Several tests call this at the same time, so the install runs under a lock.
# Exit 0: installed; 77: node/npm missing or the npm registry unreachable (callers skip).
set -uo pipefail
dir="$(cd "$(dirname "$0")" && pwd)"

installed() {
  [ -x "$dir/node_modules/node/bin/node" ] &&
    [ -f "$dir/node_modules/@modelcontextprotocol/conformance/package.json" ] &&
    [ -f "$dir/node_modules/conformance-next/package.json" ] &&
    [ -f "$dir/node_modules/@modelcontextprotocol/sdk/package.json" ] &&
    [ -f "$dir/node_modules/@modelcontextprotocol/server-everything/package.json" ] &&
    [ -f "$dir/node_modules/@modelcontextprotocol/server-filesystem/package.json" ] &&
    [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ]
}
installed && exit 0
if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
  echo "tests/mcp: node/npm not installed" >&2
  exit 77
fi
exec 9>"$dir/.install.lock"
flock 9
installed && exit 0
log="$(mktemp)"
if ! (cd "$dir" && timeout 500 npm ci --no-audit --no-fund >"$log" 2>&1); then
  echo "tests/mcp: npm ci failed (registry unreachable?)" >&2
  tail -5 "$log" >&2
  rm -f "$log"
  exit 77
fi
rm -f "$log"
installed || { echo "tests/mcp: npm ci left the packages incomplete" >&2; exit 77; }
