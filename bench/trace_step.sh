#!/usr/bin/env bash
# bench/trace_step.sh: what tracing adds to rein per agent step (issue 23; goal: under 5 µs).
#
# bench/trace_step.c runs two-step turns against the scripted model server (the model calls
# echo, rein runs it, the model answers), as the stock build does them: every turn records
# invoke_agent, two chat spans and an execute_tool span with the attributes rein sets; with
# "repair" the model names the tool "Echo" and the call also carries the rein.repair event.
# Three settings:
#   off   no OTEL_* variables: spans are not recorded (ids and propagation only)
#   fast  OTEL_EXPORTER_OTLP_ENDPOINT at a receiver that answers 200 at once (bench/otlp_sink.py,
#         keep-alive; its own CPU is not counted), default protocol (http/protobuf), default
#         batching (OTEL_BSP_* unset)
#   down  the endpoint is a closed port: batches fail and are retried, spans are dropped
#
# 1. Instructions (load-independent): callgrind counts every instruction of the process, all
#    threads (the turn's, libcurl's, the exporter's encoding and sending), over TURNS_A and
#    TURNS_B turns (down: DOWN_A and DOWN_B, past the queue's 2048 spans, so spans are dropped
#    as they are when a collector is gone); the difference divided by the steps between them
#    is the instructions per step without start-up and shutdown. Tracing's cost is a setting's
#    figure minus off's, per round (CG_ROUNDS, default 2).
# 2. Instructions per µs of this machine: the same program run natively (NATIVE_TURNS turns)
#    for its user CPU time (getrusage, all threads; callgrind counts user-space instructions
#    only), against callgrind's instructions per turn of the same setting: a range over
#    ROUNDS rounds of off and fast. Tracing's instructions divided by it give µs per step.
# 3. CPU time, as a user would measure it: process CPU (user and system) per step of each
#    setting, interleaved in each of ROUNDS rounds (default 3), and the same-round differences,
#    with the load average. On a busy shared machine these differences are mostly noise.
# Needs: cmake, cc, pkg-config, python3, valgrind, the libraries of scripts/install-deps.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build-bench}
out=bench/out
rounds=${ROUNDS:-3}
cg_rounds=${CG_ROUNDS:-2}
ta=${TURNS_A:-100}
tb=${TURNS_B:-400}
da=${DOWN_A:-600}
db=${DOWN_B:-1200}
native=${NATIVE_TURNS:-3000}
mkdir -p "$out"

[ -f "$build/CMakeCache.txt" ] ||
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DREIN_TESTS=ON >/dev/null
cmake --build "$build" -j 2 --target rein_static rein-model-server >/dev/null
# shellcheck source=bench/common.sh
. bench/common.sh
bench_cc bench/trace_step.c . "$build" "$out/trace_step"

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
[ -n "$url" ] && [ -n "$rurl" ] || { echo "trace_step.sh: a server did not start" >&2; exit 1; }
dead="http://127.0.0.1:$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"

# step SETTING TURNS [repair] [valgrind...]: trace_step's line ($rep unquoted: "" is no argument)
# shellcheck disable=SC2086
step() {
  local s=$1 n=$2 rep=$3
  shift 3
  case "$s" in
    off) env -u OTEL_EXPORTER_OTLP_ENDPOINT "$@" "$out/trace_step" "$url" "$n" $rep ;;
    fast) OTEL_EXPORTER_OTLP_ENDPOINT=$rurl "$@" "$out/trace_step" "$url" "$n" $rep ;;
    down) OTEL_EXPORTER_OTLP_ENDPOINT=$dead REIN_LOG=error TRACE_STEP_SHUTDOWN_MS=1000 \
      "$@" "$out/trace_step" "$url" "$n" $rep ;;
  esac
}
# count SETTING TURNS [repair]: instructions of the whole run (callgrind), after checking that
# every span recorded was exported (fast) or none was lost otherwise than counted
count() {
  local f="$out/trace_step.cg" line
  line=$(step "$1" "$2" "${3:-}" valgrind --tool=callgrind --callgrind-out-file="$f" 2>/dev/null)
  case "$1" in
    fast) python3 -c 'import sys; w = sys.argv[1].split(); v = dict(zip(w[::2], w[1::2]))
assert v["ended"] == v["exported"] and v["dropped"] == "0", sys.argv[1]' "$line" ;;
  esac
  sed -n 's/^summary: //p' "$f"
}
py() { python3 -c "$@"; }
range() { # values... -> "min–max"
  printf '%s\n' "$@" | sort -g | sed -n '1p;$p' | paste -sd' ' | awk '{print ($2 == "" ? $1 : $1 "–" $2)}'
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
declare -A per # instructions per step: setting,variant,round
for r in $(seq "$cg_rounds"); do
  for v in plain repair; do
    for s in off fast down; do
      [ "$v" = repair ] && [ "$s" = down ] && continue
      a=$ta b=$tb
      [ "$s" = down ] && a=$da b=$db
      rep=""
      [ "$v" = repair ] && rep=repair
      ia=$(count "$s" "$a" "$rep")
      ib=$(count "$s" "$b" "$rep")
      per[$s,$v,$r]=$(py "print(round(($ib - $ia) / (2 * ($b - $a))))")
    done
  done
done

declare -A user cpu # native: µs per turn (user) and per step (user + system)
for r in $(seq "$rounds"); do
  for s in off fast down; do
    line=$(step "$s" "$native" "")
    user[$s,$r]=$(py "import sys; w = sys.argv[1].split(); print(float(w[w.index('user_us') + 1]) / $native)" "$line")
    cpu[$s,$r]=$(py "import sys; w = sys.argv[1].split(); print(float(w[w.index('cpu_us') + 1]) / (2 * $native))" "$line")
  done
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)

echo "tracing's cost per agent step (two-step turns: invoke_agent, 2 chat, execute_tool)"
echo "load average before: $load0, after: $load1 ($(nproc) cores)"
echo "1. instructions per step (callgrind, all threads; $cg_rounds rounds; slope $ta..$tb turns, down $da..$db)"
for v in plain repair; do
  for s in off fast down; do
    [ "$v" = repair ] && [ "$s" = down ] && continue
    vals=()
    for r in $(seq "$cg_rounds"); do vals+=("${per[$s,$v,$r]}"); done
    printf '   %-6s %-5s %s\n' "$v" "$s" "$(range "${vals[@]}")"
  done
  for s in fast down; do
    [ "$v" = repair ] && [ "$s" = down ] && continue
    d=()
    for r in $(seq "$cg_rounds"); do d+=("$((per[$s,$v,$r] - per[off,$v,$r]))"); done
    printf '   %-6s %-5s - off: %s instructions\n' "$v" "$s" "$(range "${d[@]}")"
  done
done
# Instructions per µs: callgrind's instructions per turn (the mean over rounds, plain) over
# the native user µs per turn of the same setting, each native round.
ipus=()
for s in off fast; do
  mean=0
  for r in $(seq "$cg_rounds"); do mean=$(py "print($mean + 2 * ${per[$s,plain,$r]} / $cg_rounds)"); done
  for r in $(seq "$rounds"); do ipus+=("$(py "print(round($mean / ${user[$s,$r]}))")"); done
done
lo=$(printf '%s\n' "${ipus[@]}" | sort -g | head -1)
hi=$(printf '%s\n' "${ipus[@]}" | sort -g | tail -1)
echo "2. instructions per µs of user CPU ($native turns natively, $rounds rounds of off and fast): $lo–$hi"
for v in plain repair; do
  for s in fast down; do
    [ "$v" = repair ] && [ "$s" = down ] && continue
    d=()
    for r in $(seq "$cg_rounds"); do d+=("$((per[$s,$v,$r] - per[off,$v,$r]))"); done
    dmin=$(printf '%s\n' "${d[@]}" | sort -g | head -1)
    dmax=$(printf '%s\n' "${d[@]}" | sort -g | tail -1)
    printf '   %-6s %-5s - off: %s–%s µs per step\n' "$v" "$s" "$(py "print('%.2f' % ($dmin / $hi))")" \
      "$(py "print('%.2f' % ($dmax / $lo))")"
  done
done
echo "3. CPU time per step (user + system, µs; $rounds rounds of $native turns, interleaved)"
for s in off fast down; do
  vals=()
  for r in $(seq "$rounds"); do vals+=("$(py "print('%.1f' % ${cpu[$s,$r]})")"); done
  printf '   %-5s %s\n' "$s" "$(range "${vals[@]}")"
done
for s in fast down; do
  d=()
  for r in $(seq "$rounds"); do d+=("$(py "print('%.1f' % (${cpu[$s,$r]} - ${cpu[off,$r]}))")"); done
  printf '   %s - off (same round): %s\n' "$s" "$(range "${d[@]}")"
done
