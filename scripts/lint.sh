#!/usr/bin/env bash
# make lint: clang-format (check only), the banned-function check, clang-tidy and cppcheck.
# Usage: scripts/lint.sh BUILD_DIR   (a configured CMake build with compile_commands.json)
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
status=0

mapfile -t sources < <(git ls-files --cached --others --exclude-standard '*.c' '*.h')
mapfile -t lib_sources < <(git ls-files --cached --others --exclude-standard 'src/*.c')

echo "lint: clang-format"
clang-format --dry-run --Werror "${sources[@]}" || status=1

echo "lint: banned functions (STYLE.md §5)"
if grep -nE '\b(strcpy|strcat|sprintf|vsprintf|gets|strtok|atoi|atol)\s*\(' "${sources[@]}"; then
  echo "lint: use the bounded or checked forms instead" >&2
  status=1
fi

echo "lint: one JSON number writer (jansson's json_dump* print doubles with 17 digits)"
if grep -nE '\bjson_dump(s|f|b|fd|_file|_callback)?\s*\(' "${lib_sources[@]}"; then
  echo "lint: write JSON with rein_json_dump / rein_json_dump_indent / rein_jw_* instead" >&2
  status=1
fi

echo "lint: clang-tidy"
# Reconfigure so compile_commands.json lists every source file in the tree right now.
cmake -S . -B "$build" >/dev/null
printf '%s\n' "${lib_sources[@]}" | xargs -P "$(nproc)" -n 4 clang-tidy -p "$build" --quiet \
  2> >(grep -v -E '^[0-9]+ warnings? generated|^Suppressed|^Use -header-filter|^$' >&2) || status=1

echo "lint: cppcheck"
cppcheck --quiet --error-exitcode=1 --enable=warning,performance,portability \
  --inline-suppr --suppress=missingIncludeSystem --std=c11 \
  -I include -I "$build/include" -I src -D__GNUC__ -D_GNU_SOURCE \
  "${lib_sources[@]}" || status=1

[ $status -eq 0 ] && echo "lint: clean"
exit $status
