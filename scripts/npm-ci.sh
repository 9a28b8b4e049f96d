#!/usr/bin/env bash
# Installs what a folder's package.json names, pinned with its integrity by its
# package-lock.json, into WORK_DIR/node_modules with `npm ci` (every tarball checked against
# the lock, kept in npm's cache for the next build). Shared by the build's npm fetches:
# scripts/web-vendor.sh (the chat page's highlighter) and scripts/otlp-proto.sh (the
# OpenTelemetry protocol definitions). LABEL prefixes the messages; HINT says what to do
# without npm.
# usage: scripts/npm-ci.sh SRC_DIR WORK_DIR LABEL HINT
set -euo pipefail
src="$1"
work="$2"
label="$3"
hint="$4"
if ! command -v npm >/dev/null; then
  echo "$label: npm is not installed; scripts/install-deps.sh installs it ($hint)" >&2
  exit 1
fi
mkdir -p "$work"
cp "$src/package.json" "$src/package-lock.json" "$work/"
log="$work/npm-ci.log"
if ! (cd "$work" && timeout 300 npm ci --ignore-scripts --no-audit --no-fund >"$log" 2>&1); then
  echo "$label: npm ci failed (is the npm registry reachable?):" >&2
  tail -5 "$log" >&2
  exit 1
fi
