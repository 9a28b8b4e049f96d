#!/usr/bin/env bash
# bench/invoke.sh: POST /skills/echo/invoke through `rein serve` against nginx answering a
# fixed 200 (the machine's ceiling), interleaved in short blocks (issue 25, goal 5: rein >=
# 0.85x nginx in every run).
#
# bench/server.sh runs each server for DURATION seconds and keeps its best round, so the
# ratio mixes moments that other users of the machine loaded differently. Here every round is
# PAIRS pairs of BLOCK-second wrk runs (-t2 -c64), rein and nginx back to back (which goes
# first alternates), and each pair gives one ratio: load that changes slower than a pair
# cancels out. Each round prints the median and the range of its pair ratios, the load average,
# and the CPU each server and wrk spent per request (read from /proc and getrusage): on two
# cores the three share the CPU, so a server that needs more CPU per request leaves less to the
# client that drives it.
#
# INSTR=1 also counts rein's own instructions per invoke (valgrind --tool=callgrind, counting
# switched on only while wrk runs: load-independent). PIN=1 runs wrk on CPU 0 and every server
# on CPU 1 (taskset), so each server gets the same one core whatever the others do: the ratio
# is then each server's own cost per request, and the spread left is what other users of
# CPU 1 take.
#
#   bench/invoke.sh
#   ROUNDS=3 PAIRS=5 BLOCK=2 bench/invoke.sh
#   BEFORE=DIR bench/invoke.sh     DIR's rein (release build in DIR/build-bench) in the same
#                                  pairs, as a third server
#   BEFORE_BIN=PATH bench/invoke.sh   the same with a rein binary already built (not rebuilt)
#   INSTR=1 bench/invoke.sh
#   PIN=1 bench/invoke.sh
# Needs: wrk and nginx (scripts/install-deps.sh --bench); valgrind for INSTR=1.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build-bench}
out=bench/out
rounds=${ROUNDS:-3}
pairs=${PAIRS:-5}
block=${BLOCK:-2}
mkdir -p "$out"

for tool in wrk nginx; do
  command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] ||
    { echo "invoke.sh: $tool is missing; run scripts/install-deps.sh --bench" >&2; exit 1; }
done
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
[ -f "$build/CMakeCache.txt" ] ||
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DREIN_TESTS=ON >/dev/null
cmake --build "$build" -j 2 --target rein >/dev/null
before_rein=""
if [ -n "${BEFORE_BIN:-}" ]; then
  before_rein=$BEFORE_BIN
elif [ -n "${BEFORE:-}" ]; then
  [ -f "$BEFORE/build-bench/CMakeCache.txt" ] ||
    cmake -S "$BEFORE" -B "$BEFORE/build-bench" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BEFORE/build-bench" -j 2 --target rein >/dev/null
  before_rein=$BEFORE/build-bench/rein
fi

pin_wrk=()
pin_srv=()
if [ "${PIN:-0}" = 1 ]; then
  pin_wrk=(taskset -c 0)
  pin_srv=(taskset -c 1)
fi

bench_name=invoke.sh
# shellcheck source=bench/serve_lib.sh
. bench/serve_lib.sh
hz=$(getconf CLK_TCK)
cpu_ms() { # the CPU ms of every process whose id is given
  local sum=0 p
  for p in "$@"; do
    sum=$((sum + $(awk '{print $14 + $15}' "/proc/$p/stat")))
  done
  echo $((sum * 1000 / hz))
}

declare -A url srv_pids
start_rein() { # name binary
  local port
  port=$(free_port)
  "${pin_srv[@]+"${pin_srv[@]}"}" "$2" serve --port "$port" --store "sqlite:$tmp/$1.db" \
    >"$tmp/$1.out" 2>"$tmp/$1.err" &
  pids+=($!)
  srv_pids[$1]=$!
  url[$1]="http://127.0.0.1:$port/skills/echo/invoke"
}
names=(rein nginx)
start_rein rein "$build/rein"
if [ -n "$before_rein" ]; then
  start_rein before "$before_rein"
  names+=(before)
fi

nginx_port=$(free_port)
# shellcheck source=bench/common.sh
. bench/common.sh
nginx_echo_conf "$tmp/nginx" "$nginx_port"
"${pin_srv[@]+"${pin_srv[@]}"}" "$nginx_bin" -c "$tmp/nginx/nginx.conf" -p "$tmp/nginx" \
  -e "$tmp/nginx/error.log" &
pids+=($!)
url[nginx]="http://127.0.0.1:$nginx_port/skills/echo/invoke"

check_echo_invoke "$out/invoke_post.lua"
# nginx's workers are the master's children: their CPU is what serves.
srv_pids[nginx]=$(pgrep -P "${pids[-1]}" | tr '\n' ' ')


# The machine's idle and busy jiffies so far (all cores; iowait counts as idle).
idle_busy() {
  awk '/^cpu / {print $5 + $6, $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat
}

# One block against $1: prints "requests server_cpu_ms wrk_cpu_ms idle_jiffies busy_jiffies".
# The machine's idle share during the block says whether the two cores were kept busy: if a
# server leaves them idle while wrk waits for its answers, it loses throughput that its CPU per
# request does not show.
block_run() {
  local c0 c1 text reqs i0 b0 i1 b1
  # shellcheck disable=SC2086
  c0=$(cpu_ms ${srv_pids[$1]})
  read -r i0 b0 < <(idle_busy)
  text=$(/usr/bin/time -f 'WRKCPU %U %S' "${pin_wrk[@]+"${pin_wrk[@]}"}" wrk -t2 -c64 -d"${block}s" --timeout 10s -s "$out/invoke_post.lua" \
    "${url[$1]}" 2>&1)
  read -r i1 b1 < <(idle_busy)
  # shellcheck disable=SC2086
  c1=$(cpu_ms ${srv_pids[$1]})
  if grep -q 'Non-2xx\|Socket errors' <<<"$text"; then
    echo "invoke.sh: $1: errors during the block: $text" >&2
    exit 1
  fi
  reqs=$(awk '/requests in/ {print $1}' <<<"$text")
  echo "$reqs $((c1 - c0)) $(awk '/^WRKCPU/ {printf "%.0f", ($2 + $3) * 1000}' <<<"$text")" \
    "$((i1 - i0)) $((b1 - b0))"
}

rows=()
for r in $(seq "$rounds"); do
  load=$(cut -d' ' -f1 /proc/loadavg)
  for p in $(seq "$pairs"); do
    order=("${names[@]}")
    if [ $((p % 2)) -eq 0 ]; then
      order=()
      for ((i = ${#names[@]} - 1; i >= 0; i--)); do order+=("${names[$i]}"); done
    fi
    for n in "${order[@]}"; do
      read -r reqs scpu wcpu idle busy < <(block_run "$n")
      rows+=("$r,$p,$n,$reqs,$scpu,$wcpu,$load,$idle,$busy")
    done
  done
done

/usr/bin/python3 - "$block" "$pairs" "${PIN:-0}" "${rows[@]}" <<'EOF'
import statistics, sys
block, pairs, pin = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
data = {}
loads = {}
for row in sys.argv[4:]:
    r, p, n, reqs, scpu, wcpu, load, idle, busy = row.split(",")
    data[(int(r), int(p), n)] = (int(reqs), float(scpu), float(wcpu), int(idle), int(busy))
    loads[int(r)] = load
rounds = sorted(loads)
names = sorted({k[2] for k in data}, key=lambda n: {"rein": 0, "nginx": 1}.get(n, 2))
print(f"POST /skills/echo/invoke, wrk -t2 -c64, {pairs} pairs of {block:.0f} s blocks per round "
      f"(rein and nginx back to back), "
      + ("wrk on CPU 0, the servers on CPU 1" if pin else "2 cores shared with wrk and other users"))
print(f"{'round':>5} {'load':>6} {'rein/nginx median':>18} {'pairs min-max':>15} "
      + " ".join(f"{n + ' req/s':>13}" for n in names)
      + "".join(f" {n + ' us cpu/req':>17}" for n in names) + f" {'wrk us/req':>11}"
      + "".join(f" {n + ' idle %':>12}" for n in names)
      + "".join(f" {'wrk us/' + n + ' req':>16}" for n in names))
medians = []
for r in rounds:
    ratios = [data[(r, p, "rein")][0] / data[(r, p, "nginx")][0] for p in range(1, pairs + 1)]
    med = statistics.median(ratios)
    medians.append(med)
    rps = {n: statistics.median(data[(r, p, n)][0] / block for p in range(1, pairs + 1))
           for n in names}
    cpu = {n: 1000 * sum(data[(r, p, n)][1] for p in range(1, pairs + 1))
              / sum(data[(r, p, n)][0] for p in range(1, pairs + 1)) for n in names}
    wrk = 1000 * sum(data[k][2] for k in data if k[0] == r) / sum(data[k][0] for k in data
                                                                   if k[0] == r)
    line = f"{r:>5} {loads[r]:>6} {med:>18.2f} {min(ratios):>7.2f}-{max(ratios):<7.2f} "
    line += " ".join(f"{rps[n]:>13.0f}" for n in names)
    line += "".join(f" {cpu[n]:>17.1f}" for n in names) + f" {wrk:>11.1f}"
    # The share of both cores' time nobody used while that server's blocks ran.
    for n in names:
        idle = sum(data[(r, p, n)][3] for p in range(1, pairs + 1))
        busy = sum(data[(r, p, n)][4] for p in range(1, pairs + 1))
        line += f" {100 * idle / max(1, idle + busy):>12.1f}"
    # wrk's own CPU per request against each server (more headers or packets cost it more).
    for n in names:
        w = sum(data[(r, p, n)][2] for p in range(1, pairs + 1))
        line += f" {1000 * w / sum(data[(r, p, n)][0] for p in range(1, pairs + 1)):>16.1f}"
    print(line)
    if "before" in names:
        br = [data[(r, p, "before")][0] / data[(r, p, "nginx")][0] for p in range(1, pairs + 1)]
        print(f"{'':>5} {'':>6} {'before/nginx':>12} {statistics.median(br):>5.2f} "
              f"{min(br):>7.2f}-{max(br):<7.2f}")
print(f"rein / nginx, median of each round: {min(medians):.2f}-{max(medians):.2f} "
      f"(goal: >= 0.85 in every run)")
EOF

# ---- instructions per invoke (load-independent) --------------------------------------------
if [ "${INSTR:-0}" = 1 ]; then
  command -v valgrind >/dev/null || { echo "invoke.sh: INSTR=1 needs valgrind" >&2; exit 1; }
  port=$(free_port)
  valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$tmp/cg.out" \
    "$build/rein" serve --port "$port" --store "sqlite:$tmp/cg.db" >"$tmp/cg.log" 2>&1 &
  cg_pid=$!
  pids+=("$cg_pid")
  wait_http "http://127.0.0.1:$port/healthz"
  curl -s -X POST -H 'Content-Type: application/json' -d "$body" \
    "http://127.0.0.1:$port/skills/echo/invoke" >/dev/null
  callgrind_control -i on "$cg_pid" >/dev/null
  text=$(wrk -t1 -c4 -d10s -s "$out/invoke_post.lua" "http://127.0.0.1:$port/skills/echo/invoke")
  callgrind_control -i off "$cg_pid" >/dev/null
  callgrind_control -d "$cg_pid" >/dev/null
  reqs=$(awk '/requests in/ {print $1}' <<<"$text")
  kill -TERM "$cg_pid" 2>/dev/null || true
  wait "$cg_pid" 2>/dev/null || true
  total=$(cat "$tmp"/cg.out* | awk '/^summary:/ {s += $2} /^totals:/ {t += $2} END {print (s ? s : t)}')
  echo
  echo "rein's own instructions per invoke (callgrind, counted while wrk ran): $((total / reqs))" \
    "($total instructions, $reqs requests)"
fi
