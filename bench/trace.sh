#!/usr/bin/env bash
# bench/trace.sh: what tracing adds to rein's own CPU per agent step (issue 23; goal: under
# 5 µs per step). bench/scale_bench.c (see bench/scale.sh) runs two-step turns (a call to echo,
# then the answer) against the scripted model server on an empty history, and reports the
# bench process's CPU per step minus a bare libcurl client's: that includes the exporter
# thread, which encodes and sends the spans. Three settings, interleaved in each of ROUNDS
# rounds (default 3):
#   off   no OTEL_* variables: spans are not recorded (ids and propagation only)
#   fast  OTEL_EXPORTER_OTLP_ENDPOINT at a receiver that answers 200 at once (a python
#         process; its own CPU is not counted), default protocol (http/protobuf)
#   down  the endpoint is a closed port: every batch fails, spans are dropped and counted
# Prints the range over rounds of each setting and of on-minus-off, with the load average.
# Needs: cmake, cc, pkg-config, python3, the libraries of scripts/install-deps.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build-bench}
out=bench/out
rounds=${ROUNDS:-3}
turns=${TURNS:-400}
mkdir -p "$out"

[ -f "$build/CMakeCache.txt" ] ||
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DREIN_TESTS=ON >/dev/null
cmake --build "$build" -j 2 --target rein_static rein-model-server >/dev/null
# shellcheck source=bench/common.sh
. bench/common.sh
bench_cc bench/scale_bench.c . "$build" "$out/scale_bench"

echo '{"name":"empty","replies":[]}' >"$out/trace_scenario.json"
"$build/tests/bin/rein-model-server" --port 0 --scenario "$out/trace_scenario.json" \
  --log-limit 2 >"$out/trace_url" &
server=$!
python3 bench/otlp_sink.py >"$out/trace_recv_url" &
recv=$!
trap 'kill -TERM $server $recv 2>/dev/null; wait $server $recv 2>/dev/null || true' EXIT
url=""
rurl=""
for _ in $(seq 1 100); do
  url=$(head -n 1 "$out/trace_url")
  rurl=$(head -n 1 "$out/trace_recv_url")
  [ -n "$url" ] && [ -n "$rurl" ] && break
  sleep 0.1
done
[ -n "$url" ] && [ -n "$rurl" ] || { echo "trace.sh: a server did not start" >&2; exit 1; }
dead="http://127.0.0.1:$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"

run() { # SETTING -> own µs per step
  case "$1" in
    off) env -u OTEL_EXPORTER_OTLP_ENDPOINT "$out/scale_bench" "$url" unique 0 "$turns" ;;
    fast) OTEL_EXPORTER_OTLP_ENDPOINT=$rurl OTEL_BSP_SCHEDULE_DELAY=200 \
      "$out/scale_bench" "$url" unique 0 "$turns" ;;
    down) OTEL_EXPORTER_OTLP_ENDPOINT=$dead OTEL_BSP_SCHEDULE_DELAY=200 REIN_LOG=error \
      "$out/scale_bench" "$url" unique 0 "$turns" ;;
  esac | cut -d' ' -f1
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
declare -A own
for r in $(seq "$rounds"); do
  for s in off fast down; do
    own[$s,$r]=$(run "$s")
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

range() { # values... -> "min-max"
  printf '%s\n' "$@" | sort -g | sed -n '1p;$p' | paste -sd'-' | sed 's/-$//'
}
echo "tracing cost per agent step (own CPU, µs; $rounds rounds of $turns two-step turns)"
echo "load average before: $load_before, after: $load_after"
for s in off fast down; do
  vals=()
  for r in $(seq "$rounds"); do vals+=("${own[$s,$r]}"); done
  printf '  %-5s %s\n' "$s" "$(range "${vals[@]}")"
done
for s in fast down; do
  d=()
  for r in $(seq "$rounds"); do
    d+=("$(python3 -c "print('%.2f' % (${own[$s,$r]} - ${own[off,$r]}))")")
  done
  printf '  %s - off (same round): %s\n' "$s" "$(range "${d[@]}")"
done
