#!/usr/bin/env bash
# Fetches what the chat page takes from the npm registry (web/vendor/package.json, pinned with
# its integrity by web/vendor/package-lock.json) and leaves the files to embed in OUT:
#   hljs.js               highlight.js's browser build as an ES module (common languages)
#   hljs-license.txt      its licence, served beside it
# Run by the build (cmake/ReinVendor.cmake) when the lock file changes; `npm ci` checks every
# tarball against the lock's integrity and keeps them in npm's cache for the next build.
# usage: scripts/web-vendor.sh WEB_VENDOR_DIR OUT_DIR
set -euo pipefail
src="$1"
out="$2"
if ! command -v npm >/dev/null; then
  echo "web-vendor: npm is not installed; scripts/install-deps.sh installs it (or configure" \
    "with -DREIN_WEB_VENDOR=OFF for a page without syntax highlighting)" >&2
  exit 1
fi
work="$out/npm"
mkdir -p "$work"
cp "$src/package.json" "$src/package-lock.json" "$work/"
log="$work/npm-ci.log"
if ! (cd "$work" && timeout 300 npm ci --ignore-scripts --no-audit --no-fund >"$log" 2>&1); then
  echo "web-vendor: npm ci failed (is the npm registry reachable?):" >&2
  tail -5 "$log" >&2
  exit 1
fi
pkg="$work/node_modules/@highlightjs/cdn-assets"
cp "$pkg/es/highlight.min.js" "$out/hljs.js.tmp"
cp "$pkg/LICENSE" "$out/hljs-license.txt"
mv "$out/hljs.js.tmp" "$out/hljs.js"
