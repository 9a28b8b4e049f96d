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
work="$out/npm"
"$(dirname "$0")/npm-ci.sh" "$src" "$work" web-vendor \
  "or configure with -DREIN_WEB_VENDOR=OFF for a page without syntax highlighting"
pkg="$work/node_modules/@highlightjs/cdn-assets"
cp "$pkg/es/highlight.min.js" "$out/hljs.js.tmp"
cp "$pkg/LICENSE" "$out/hljs-license.txt"
mv "$out/hljs.js.tmp" "$out/hljs.js"
