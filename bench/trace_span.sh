#!/usr/bin/env bash
# bench/trace_span.sh: instructions tracing adds per exported span (docs/decisions/0039),
# counted by callgrind, so the figure does not depend on how busy the machine is. Runs
# bench/trace_span.c for 1,000 and 4,000 turns (4 spans each) with export off and on (a
# receiver that answers 200 at once, http/protobuf), and prints the slope: the instructions
# per span beyond the fixed start-up (libcurl, the exporter thread), on minus off.
# Needs valgrind, python3, and the build of bench/trace_step.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build-bench}
out=bench/out
mkdir -p "$out"
[ -f "$build/CMakeCache.txt" ] ||
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DREIN_TESTS=ON >/dev/null
cmake --build "$build" -j 2 --target rein_static >/dev/null
# shellcheck source=bench/common.sh
. bench/common.sh
bench_cc bench/trace_span.c . "$build" "$out/trace_span"
python3 bench/otlp_sink.py >"$out/trace_span_url" &
recv=$!
trap 'kill -TERM $recv 2>/dev/null; wait $recv 2>/dev/null || true' EXIT
url=""
for _ in $(seq 1 100); do
  url=$(head -n 1 "$out/trace_span_url")
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { echo "trace_span.sh: the receiver did not start" >&2; exit 1; }
count() { # SETTING TURNS -> instructions
  local f="$out/trace_span.cg"
  if [ "$1" = on ]; then
    OTEL_EXPORTER_OTLP_ENDPOINT=$url OTEL_BSP_MAX_QUEUE_SIZE=100000 OTEL_BSP_SCHEDULE_DELAY=200 \
      valgrind --tool=callgrind --callgrind-out-file="$f" "$out/trace_span" "$2" >/dev/null 2>&1
  else
    env -u OTEL_EXPORTER_OTLP_ENDPOINT valgrind --tool=callgrind --callgrind-out-file="$f" \
      "$out/trace_span" "$2" >/dev/null 2>&1
  fi
  sed -n 's/^summary: //p' "$f"
}
declare -A ir
for s in off on; do
  for n in 1000 4000; do ir[$s,$n]=$(count "$s" "$n"); done
done
per() { # SETTING -> instructions per span between the two runs
  python3 -c 'import sys; print(round((int(sys.argv[2]) - int(sys.argv[1])) / (3000 * 4)))' \
    "${ir[$1,1000]}" "${ir[$1,4000]}"
}
off=$(per off)
on=$(per on)
echo "instructions per span: off $off, on $on, added $((on - off))"
