#!/usr/bin/env bash
# bench/page.sh: the chat page's long tasks while one 100 KB answer streams in (issue 21: no
# long task over 50 ms), two pages side by side: web/ of this tree ("new") and web/ at a
# commit ("old", OLD, default main). Each answer is one block: a paragraph of one line, a list,
# a table (SHAPES; "mixed" is the browser test's answer of every kind). The pages take turns in
# every run (bench/page.mjs), first with the whole answer at once (the page draws the burst over
# several frames), then paced (a pause between the model's deltas: every frame draws a little
# more of a block that is already big). The load average is printed before and after each
# series: the long tasks are wall-clock and the machine is shared, so read the CPU column
# (the busiest task's thread time, from a Chromium trace) next to them.
#
#   bench/page.sh
#   OLD=08f76d7 RUNS=5 bench/page.sh      against the page at a commit, five runs
#   SHAPES=table DELAYS=0 DETAIL=1 bench/page.sh
#                                         only the table, only at once, and where each task
#                                         over 50 ms went (script, style, layout, paint)
#   BUILD=build-test bench/page.sh        an existing build's rein and rein-model-server
# Needs: Debian's chromium, node and npm (tests/browser/install.sh installs playwright-core).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build-bench}
old=${OLD:-main}
runs=${RUNS:-3}
shapes=${SHAPES:-paragraph,list,table}
delays=${DELAYS:-0 10}
chromium=${REIN_CHROMIUM:-/usr/bin/chromium}
[ -x "$chromium" ] || { echo "page.sh: $chromium is missing (the chromium package)" >&2; exit 1; }
bash tests/browser/install.sh

[ -f "$build/CMakeCache.txt" ] ||
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DREIN_TESTS=ON >/dev/null
cmake --build "$build" -j 2 --target rein rein-model-server >/dev/null

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git archive "$old" web | tar -x -C "$tmp"
echo "old: web/ at $old ($(git rev-parse --short "$old")); new: web/ of this tree" \
  "($(git rev-parse --short HEAD)$(git diff --quiet HEAD -- web || echo ' and changes'))"
for delay in $delays; do
  echo
  echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)"
  REIN_BIN="$PWD/$build/rein" REIN_TEST_BIN_DIR="$PWD/$build/tests/bin" REIN_BUILD_DIR="$PWD/$build" \
    node bench/page.mjs --page "old=$tmp/web" --page new=web --runs "$runs" --shapes "$shapes" \
    --delay-ms "$delay" ${DETAIL:+--detail}
  echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
done
