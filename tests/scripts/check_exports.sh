#!/usr/bin/env bash
# The shared library exports only rein_* symbols (STYLE.md §6, jansson's check-exports):
# anything else is an internal that leaked through -fvisibility=hidden.
set -euo pipefail
lib="${REIN_BUILD_DIR:?}/librein.so"
[ -f "$lib" ] || { echo "no $lib"; exit 1; }
bad=$(nm -D --defined-only "$lib" | awk '$2 ~ /[TDBRW]/ {print $3}' | grep -v '^rein_' || true)
count=$(nm -D --defined-only "$lib" | awk '$2 ~ /[TDBRW]/' | grep -c ' rein_' || true)
if [ -n "$bad" ]; then
  echo "librein.so exports symbols without the rein_ prefix:"
  echo "$bad"
  exit 1
fi
echo "librein.so exports $count symbols, all rein_*"
