#!/usr/bin/env bash
# Installs tests/browser/package.json (playwright-core, pinned by package-lock.json) into
# tests/browser/node_modules once; later runs find it there. No browser is downloaded: the
# tests drive Debian's /usr/bin/chromium.
# Exit 0: installed; 77: node/npm missing or the npm registry unreachable (the caller skips).
set -uo pipefail
dir="$(cd "$(dirname "$0")" && pwd)"

installed() {
  [ -f "$dir/node_modules/playwright-core/package.json" ] &&
    [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ]
}
installed && exit 0
if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
  echo "tests/browser: node/npm not installed" >&2
  exit 77
fi
exec 9>"$dir/.install.lock"
flock 9
installed && exit 0
log="$(mktemp)"
if ! (cd "$dir" && timeout 300 npm ci --no-audit --no-fund >"$log" 2>&1); then
  echo "tests/browser: npm ci failed (registry unreachable?)" >&2
  tail -5 "$log" >&2
  rm -f "$log"
  exit 77
fi
rm -f "$log"
installed || { echo "tests/browser: npm ci left playwright-core missing" >&2; exit 77; }
