#!/usr/bin/env bash
# bench/gateway.sh: what the gateway adds. The same OpenAI chat completions request is sent
# directly to the scripted upstream (rein-model-server, release build) and through `rein
# serve`'s gateway in front of it, in one run, interleaved (direct, rein, direct, rein, ...):
#   json    a non-streamed reply with text and one tool call, which rein checks against the
#           request's tool (name and arguments through the pipeline)
#   stream  the same reply streamed (text and arguments in 16-byte deltas; rein passes the
#           text on at once and holds the call until it is checked)
#   long    a streamed answer of 32 KiB of text in 16-byte deltas (2,048 events) and one call:
#           streaming throughput, where the cost per request matters least
#   paced   a streamed answer paced as a model writes it: the first byte after 200 ms, then
#           one 16-byte delta every 10 ms (48 of them, then the call), about 0.7 s a stream:
#           streams per second when the upstream, not the CPU, sets the pace (the client
#           asks for usage, as rein always asks its upstream: the scripted upstream paces
#           that last chunk too, so without it direct would end 10 ms sooner). Every stream
#           holds a thread of rein's for all of it, so this is what counts how many it
#           serves at once (decision 0082)
# each with 1 connection (wrk -t1 -c1) and 64 (wrk -t2 -c64), DURATION seconds per
# measurement, ROUNDS rounds. Every answer is checked once before measuring. Printed per case:
# the direct and the gateway p50/p99 latency (to the end of the answer) and requests per
# second as ranges over the rounds, the added p50/p99 (gateway - direct, per round) and the
# throughput ratio (gateway / direct, per round), and the load average before and after.
# The same rounds also go through nginx as a plain reverse proxy in front of the same upstream
# (keep-alive upstream connections, no buffering; skipped when nginx is missing or PROXY=0):
# what one more HTTP hop costs on this machine with nothing checked, the floor for any
# gateway; printed as proxy/direct and rein/proxy. rein's and nginx's CPU time per request
# (user + system, from /proc) are printed too: they depend less on what else the machine runs
# than requests per second do. So are each proxy's context switches and system calls per
# request (from /proc, and perf when it can count them), and the CPU time per request of wrk
# and the upstream in every measurement: with the cores as the limit (64 connections), direct's
# CPU per request over a proxied run's (wrk + upstream + proxy) is the most of direct's
# throughput that proxy can reach on this machine (printed as "bound").
# Goals (issue 22): added p50 <= 0.3 ms for a non-streamed reply; streaming throughput >= 90%
# of direct. On a busy machine the figures say more about the machine than about rein.
#
# CPU placement. By default (PIN=0) every process may run on every CPU: through a proxy, the
# proxy is a third busy process and takes CPU time from the client and the upstream that the
# direct run never pays, so on 2 cores the ratio mostly says how the proxy's CPU per request
# compares with the upstream's and the client's. PIN=1 (2 or more cores) runs wrk and the
# upstream on CPU 0 in every measurement and rein, nginx and the baseline on the others: the
# client and the upstream get the same share of the machine either way, as when the gateway
# has a machine of its own. Pinned, though, the direct run's client and upstream hand each
# request over on one CPU (no wake-up of another CPU), which favours direct at 1 connection,
# and a proxy gets only its own CPU's share of whatever else the machine runs.
#
# rein's instructions per request (INSTR=1, the default when valgrind is installed): rein
# serve runs once more under callgrind behind the same upstream, and each case at 1
# connection is counted for INSTR_SECONDS (default 4) after a warm-up: user-space
# instructions of all of rein's threads (libraries included, the kernel not), divided by the
# requests wrk completed. This count does not depend on the machine's load. callgrind counts
# each byte of a `rep stos`/`rep movs` string instruction (glibc's large memset/memcpy) as an
# instruction of its own, so those weigh more here than on the CPU.
#
#   bench/gateway.sh                       (make bench runs it after building build/)
#   DURATION=5 ROUNDS=3 BUILD=build bench/gateway.sh
#   BASELINE=/tmp/rein-old bench/gateway.sh   also measures an older rein binary in the same
#                                             rounds (direct, baseline, rein, ...) and prints
#                                             rein against it: a before/after in one run (and
#                                             its instructions per request next to rein's)
#   PIN=1 INSTR=0 bench/gateway.sh           the client and upstream on CPU 0, the proxies on
#                                             the others; no instruction count
#   KINDS="json stream" bench/gateway.sh      only those cases (a shorter run; default all)
#   SYSCALL_KINDS=1 bench/gateway.sh          also counts each proxy's system calls by kind
#                                             (perf, one counter per kind and thread) and
#                                             prints the most frequent per request; perf
#                                             then switches hundreds of counters with every
#                                             thread switch, so the proxies' CPU figures of
#                                             such a run are several times too high
# Needs: scripts/install-deps.sh --bench (wrk; nginx-light for the proxy line; valgrind for
# the instruction count).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build-bench}
out=bench/out
duration=${DURATION:-5}
rounds=${ROUNDS:-3}
# KINDS="json stream" measures only those cases (default all three).
kinds=${KINDS:-json stream long paced}
mkdir -p "$out"
# CPU placement: the client and the upstream on CPU 0, the proxies on the others.
ncpu=$(nproc)
pin_client=() pin_proxy=()
if [ "${PIN:-0}" != 0 ] && [ "$ncpu" -ge 2 ] && command -v taskset >/dev/null; then
  pin_client=(taskset -c 0)
  pin_proxy=(taskset -c "1-$((ncpu - 1))")
fi

command -v wrk >/dev/null || { echo "gateway.sh: wrk is missing; run scripts/install-deps.sh --bench" >&2; exit 1; }
if [ ! -x "$build/rein" ] || [ ! -x "$build/tests/bin/rein-model-server" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DREIN_TESTS=ON >/dev/null
fi
cmake --build "$build" -j 2 --target rein rein-model-server >/dev/null

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]+"${pids[@]}"}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]+"${pids[@]}"}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

# The upstream: every request gets the same reply (times 0); "long answer" gets the long one,
# "paced answer" the paced one.
long_text=$(/usr/bin/python3 -c 'print(("The weather in Paris stays mild. " * 1024)[:32768])')
cat >"$tmp/scenario.json" <<JSON
{"name": "gateway-bench", "replies": [
 {"times": 0, "delta_bytes": 16, "match": {"last_contains": "paced answer"},
  "delay_first_byte_ms": 200, "delay_chunk_ms": 10, "text": "${long_text:0:768}",
  "tool_calls": [{"id": "call_1", "name": "get_weather",
                  "arguments": "{\\"city\\":\\"Paris\\"}"}]},
 {"times": 0, "delta_bytes": 16, "match": {"last_contains": "long answer"},
  "text": "$long_text",
  "tool_calls": [{"id": "call_1", "name": "get_weather",
                  "arguments": "{\\"city\\":\\"Paris\\"}"}]},
 {"times": 0, "delta_bytes": 16,
  "text": "Let me look that up for you: the weather service knows Paris best at this hour.",
  "tool_calls": [{"id": "call_1", "name": "get_weather",
                  "arguments": "{\\"city\\":\\"Paris\\",\\"unit\\":\\"celsius\\",\\"days\\":3}"}],
  "usage": {"input_tokens": 60, "output_tokens": 40}}]}
JSON
"${pin_client[@]}" "$build/tests/bin/rein-model-server" --port 0 --log-limit 16 --scenario "$tmp/scenario.json" \
  >"$tmp/ms.url" 2>"$tmp/ms.err" &
pids+=($!)
upstream_pid=$!
for _ in $(seq 1 100); do [ -s "$tmp/ms.url" ] && break; sleep 0.05; done
upstream=$(head -n 1 "$tmp/ms.url")
[ -n "$upstream" ] || { cat "$tmp/ms.err" >&2; echo "gateway.sh: no upstream" >&2; exit 1; }

REIN_LOG=error "${pin_proxy[@]}" "$build/rein" serve --port 0 --store "sqlite:$tmp/rein.db" \
  --provider openai-compatible --base-url "$upstream/v1" --model gpt-test \
  >"$tmp/rein.out" 2>"$tmp/rein.err" &
pids+=($!)
# The address `rein serve` printed into $1 (waiting up to $2 tenths of a second, default 50).
listening() {
  local at=""
  for _ in $(seq 1 "${2:-50}"); do
    at=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$1" 2>/dev/null)
    [ -n "$at" ] && break
    sleep 0.1
  done
  echo "$at"
}
rein=$(listening "$tmp/rein.out")
[ -n "$rein" ] || { cat "$tmp/rein.err" >&2; echo "gateway.sh: rein serve did not start" >&2; exit 1; }

declare -A url=([direct]="$upstream/v1/chat/completions" [rein]="$rein/v1/chat/completions")
targets="direct rein"
rein_pid=${pids[1]}
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
if [ "${PROXY:-1}" != 0 ] && [ -x "$nginx_bin" ]; then
  proxy_port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  # shellcheck source=bench/common.sh
  . bench/common.sh
  nginx_conf "$tmp/nginx" "$(cat <<EOF
  upstream model { server ${upstream#http://}; keepalive 256; }
  server {
    listen 127.0.0.1:$proxy_port;
    location / {
      proxy_pass http://model;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }
  }
EOF
)"
  "${pin_proxy[@]}" "$nginx_bin" -c "$tmp/nginx/nginx.conf" -p "$tmp/nginx" -e "$tmp/nginx/error.log" &
  pids+=($!)
  proxy_pid=$!
  url[proxy]="http://127.0.0.1:$proxy_port/v1/chat/completions"
  for _ in $(seq 1 100); do curl -s -o /dev/null "${url[proxy]}" && break; sleep 0.05; done
  targets="direct proxy rein"
fi
if [ -n "${BASELINE:-}" ]; then
  REIN_LOG=error "${pin_proxy[@]}" "$BASELINE" serve --port 0 --store "sqlite:$tmp/base.db" \
    --provider openai-compatible --base-url "$upstream/v1" --model gpt-test \
    >"$tmp/base.out" 2>"$tmp/base.err" &
  pids+=($!)
  base_pid=$!
  base=$(listening "$tmp/base.out")
  [ -n "$base" ] || { cat "$tmp/base.err" >&2; echo "gateway.sh: $BASELINE did not start" >&2; exit 1; }
  url[base]="$base/v1/chat/completions"
  targets="$targets base"
fi
tools='[{"type":"function","function":{"name":"get_weather","description":"Weather by city","parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]},"days":{"type":"integer","minimum":1,"maximum":7}},"required":["city"],"additionalProperties":false}}}]'
msgs='[{"role":"system","content":"You answer questions about the weather."},{"role":"user","content":"What is the weather in Paris for the next three days?"}]'
long_msgs='[{"role":"user","content":"Give me the long answer about the weather in Paris."}]'
paced_msgs='[{"role":"user","content":"Give me the paced answer about the weather in Paris."}]'
declare -A body=(
  [json]="{\"model\":\"gpt-test\",\"messages\":$msgs,\"tools\":$tools}"
  [stream]="{\"model\":\"gpt-test\",\"messages\":$msgs,\"tools\":$tools,\"stream\":true,\"stream_options\":{\"include_usage\":true}}"
  [long]="{\"model\":\"gpt-test\",\"messages\":$long_msgs,\"tools\":$tools,\"stream\":true}"
  [paced]="{\"model\":\"gpt-test\",\"messages\":$paced_msgs,\"tools\":$tools,\"stream\":true,\"stream_options\":{\"include_usage\":true}}"
)

# Each path answers correctly before it is measured.
for kind in json stream long paced; do
  for n in $targets; do
    got=$(curl -s -X POST -H 'Content-Type: application/json' -H 'Authorization: Bearer sk-bench' \
      -d "${body[$kind]}" "${url[$n]}")
    case "$got" in
      *get_weather*Paris*) ;;
      *) echo "gateway.sh: $n ($kind) answered: $got" >&2; exit 1 ;;
    esac
  done
  cat >"$out/gateway_$kind.lua" <<LUA
wrk.method = "POST"
wrk.body = '${body[$kind]}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer sk-bench"
LUA
done

# CPU time (clock ticks, user + system) process $1 and its children (nginx's workers) have
# used so far.
ticks() {
  local p t=0
  for p in "$1" $(pgrep -P "$1" || true); do
    t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
  done
  echo "$t"
}

# TCP segments the machine has sent so far (all connections, loopback included: each segment
# of one of these connections is sent once and received once).
tcp_out_segs() {
  awk '/^Tcp:/ { if (!h) { for (i = 2; i <= NF; i++) if ($i == "OutSegs") c = i; h = 1 } else print $c }' \
    /proc/net/snmp
}

# Context switches (voluntary + involuntary) of every thread of process $1 and its children.
switches() {
  local p t=0
  for p in "$1" $(pgrep -P "$1" || true); do
    t=$((t + $(cat /proc/"$p"/task/*/status 2>/dev/null |
      awk '/^(non)?voluntary_ctxt_switches/ {s += $2} END {print s + 0}')))
  done
  echo "$t"
}
# System calls are counted with perf when it can trace them here (root or a low
# perf_event_paranoid); else they print as -1.
perf_ok=0
if command -v perf >/dev/null && perf stat -e raw_syscalls:sys_enter -o /dev/null true 2>/dev/null; then
  perf_ok=1
fi
# SYSCALL_KINDS=1: one counter per system call kind as well (the total stays raw_syscalls').
perf_events=(-e raw_syscalls:sys_enter)
kinds_out="$tmp/kinds"
: >"$kinds_out"
if [ "${SYSCALL_KINDS:-0}" != 0 ] && [ "$perf_ok" = 1 ] &&
  perf stat -e 'syscalls:sys_enter_*' -o /dev/null true 2>/dev/null; then
  perf_events+=(-e 'syscalls:sys_enter_*')
else
  SYSCALL_KINDS=0
fi

# wrk's requests/s, its 50% and 99% lines in ms, its request count and its own CPU time in
# clock ticks (user + system); fails on errors.
measure() {
  local kind=$1 conns=$2 target=$3 threads=1
  [ "$conns" -gt 1 ] && threads=2
  (
    TIMEFORMAT='%U %S'
    { time "${pin_client[@]}" wrk -t"$threads" -c"$conns" -d"${duration}s" --timeout 10s --latency \
      -s "$out/gateway_$kind.lua" "$target" >"$tmp/wrk.out"; } 2>"$tmp/wrk.time"
  )
  /usr/bin/python3 -c '
import re, sys
text = sys.stdin.read()
def ms(q):
    m = re.search(q + r"%\s+([\d.]+)(us|ms|s)\b", text)
    return float(m.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[m.group(2)]
bad = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
errs = re.search(r"Socket errors: (.*)", text)
if bad or errs:
    sys.exit(sys.argv[1] + ": wrk: " + (bad.group(0) if bad else "") + " " + (errs.group(0) if errs else ""))
u, s = open(sys.argv[2]).read().split()
print(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1), ms("50"), ms("99"),
      re.search(r"(\d+) requests in", text).group(1), round((float(u) + float(s)) * 100))' \
      "$kind c$conns $target" "$tmp/wrk.time" <"$tmp/wrk.out"
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
results="$tmp/results"
: >"$results"
for r in $(seq "$rounds"); do
  for kind in $kinds; do
    for conns in 1 64; do
      for n in $targets; do
        pid=0
        [ "$n" = rein ] && pid=$rein_pid
        [ "$n" = base ] && pid=$base_pid
        [ "$n" = proxy ] && pid=$proxy_pid
        up0=$(ticks "$upstream_pid") seg0=$(tcp_out_segs)
        if [ "$pid" != 0 ]; then
          t0=$(ticks "$pid") s0=$(switches "$pid")
          if [ "$perf_ok" = 1 ]; then
            perf stat "${perf_events[@]}" -x, -o "$tmp/perf.out" \
              -p "$pid$(pgrep -P "$pid" | sed 's/^/,/' | tr -d '\n')" &
            perf_pid=$!
            # a counter per kind and thread takes perf a moment to open
            [ "$SYSCALL_KINDS" = 0 ] || sleep 0.5
          fi
        fi
        read -r rps p50 p99 nreq wrk_ticks < <(measure "$kind" "$conns" "${url[$n]}")
        # CPU microseconds per request of the proxy, of the upstream and of wrk, the proxy's
        # context switches and system calls per request, all in this measurement
        hz=$(getconf CLK_TCK)
        cpu=0 cs=0 sc=-1
        if [ "$pid" != 0 ]; then
          cpu=$((($(ticks "$pid") - t0) * 1000000 / hz / nreq))
          cs=$(echo "$(switches "$pid") $s0 $nreq" | awk '{printf "%.2f", ($1 - $2) / $3}')
          if [ "$perf_ok" = 1 ]; then
            kill -INT "$perf_pid" 2>/dev/null || true
            wait "$perf_pid" 2>/dev/null || true
            sc=$(awk -F, -v n="$nreq" '/raw_syscalls/ {printf "%.1f", $1 / n}' "$tmp/perf.out" \
              2>/dev/null || true)
            [ "$SYSCALL_KINDS" = 0 ] || awk -F, -v n="$nreq" -v key="$r $kind $conns $n" \
              '$3 ~ /^syscalls:sys_enter_/ && $1 + 0 > 0 {
                 sub(/^syscalls:sys_enter_/, "", $3); printf "%s %s %.2f\n", key, $3, $1 / n }' \
              "$tmp/perf.out" >>"$kinds_out" 2>/dev/null || true
          fi
        fi
        up_cpu=$((($(ticks "$upstream_pid") - up0) * 1000000 / hz / nreq))
        segs=$(echo "$(tcp_out_segs) $seg0 $nreq" | awk '{printf "%.1f", ($1 - $2) / $3}')
        wrk_cpu=$((wrk_ticks * 1000000 / 100 / nreq))
        echo "$r $kind $conns $n $rps $p50 $p99 $cpu $cs ${sc:--1} $up_cpu $wrk_cpu $segs" >>"$results"
      done
    done
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# rein's instructions per request under callgrind (see the head of this file).
instr="$tmp/instr"
: >"$instr"
count_instructions() {
  local name=$1 bin=$2 at vpid kind secs nreq before f ir
  REIN_LOG=error valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.$name.%p" "$bin" serve \
    --port 0 --store "sqlite:$tmp/cg-$name.db" --provider openai-compatible \
    --base-url "$upstream/v1" --model gpt-test >"$tmp/cg-$name.out" 2>"$tmp/cg-$name.err" &
  vpid=$!
  pids+=("$vpid")
  at=$(listening "$tmp/cg-$name.out" 600)
  [ -n "$at" ] || { cat "$tmp/cg-$name.err" >&2; echo "gateway.sh: $bin under callgrind did not start" >&2; exit 1; }
  for kind in $kinds; do
    [ "$kind" = paced ] && continue # its cost is the upstream's pace, not rein's instructions
    secs=${INSTR_SECONDS:-4}
    [ "$kind" = long ] && secs=$((secs * 2))
    wrk -t1 -c1 -d1s --timeout 30s -s "$out/gateway_$kind.lua" "$at/v1/chat/completions" >/dev/null
    callgrind_control -z "$vpid" >/dev/null 2>&1
    nreq=$(wrk -t1 -c1 -d"${secs}s" --timeout 30s -s "$out/gateway_$kind.lua" "$at/v1/chat/completions" |
      sed -n 's/^ *\([0-9]*\) requests in.*/\1/p')
    sleep 1 # the request wrk left unfinished ends before the count is taken
    before=$(ls "$tmp"/cg."$name".* 2>/dev/null | wc -l)
    callgrind_control -d "$vpid" >/dev/null 2>&1
    for _ in $(seq 1 100); do
      [ "$(ls "$tmp"/cg."$name".* 2>/dev/null | wc -l)" -gt "$before" ] && break
      sleep 0.1
    done
    f=$(ls -t "$tmp"/cg."$name".* | head -n 1)
    ir=$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$f" | head -n 1)
    [ -n "$ir" ] && [ "${nreq:-0}" -gt 0 ] || { echo "gateway.sh: no instruction count for $name $kind" >&2; exit 1; }
    echo "$name $kind $nreq $((ir / nreq))" >>"$instr"
  done
  kill -TERM "$vpid" 2>/dev/null || true
  wait "$vpid" 2>/dev/null || true
}
if [ "${INSTR:-1}" != 0 ] && command -v valgrind >/dev/null && command -v callgrind_control >/dev/null; then
  count_instructions rein "$build/rein"
  [ -z "${BASELINE:-}" ] || count_instructions base "$BASELINE"
fi

echo "POST /v1/chat/completions, direct to rein-model-server vs through rein serve's gateway;"
echo "wrk ${duration}s per measurement, $rounds rounds interleaved, $ncpu cores;"
if [ ${#pin_client[@]} -gt 0 ]; then
  echo "wrk and the upstream pinned to CPU 0, rein, nginx and the baseline to CPUs 1-$((ncpu - 1));"
else
  echo "every process on every CPU (wrk, the upstream and the proxy compete for them);"
fi
echo "load average before: $load_before, after: $load_after;" \
  "TCP congestion control: $(cat /proc/sys/net/ipv4/tcp_congestion_control 2>/dev/null || echo unknown)"
if [ -s "$instr" ]; then
  echo "rein's instructions per request (callgrind, user space, 1 connection):"
  while read -r name kind nreq per; do
    printf '  %-5s %-7s %9d instructions/request (%d requests)\n' "$name" "$kind" "$per" "$nreq"
  done <"$instr"
fi
/usr/bin/python3 - "$results" "$kinds_out" <<'PY'
import os, sys, collections
rows = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    r, kind, conns, n, rps, p50, p99, cpu, cs, sc, up, wrk, segs = line.split()
    rows[(kind, int(conns), r)][n] = (float(rps), float(p50), float(p99), int(cpu), float(cs),
                                      float(sc), int(up), int(wrk), float(segs))
# the cases measured (KINDS), in the order of the table
KINDS = [k for k in ("json", "stream", "long", "paced") if any(key[0] == k for key in rows)]
def rng(xs, fmt):
    return (fmt % min(xs)) + ".." + (fmt % max(xs))
print(f"{'case':12} {'direct p50 ms':>15} {'rein p50 ms':>15} {'added p50 ms':>15} "
      f"{'added p99 ms':>15} {'direct req/s':>15} {'rein req/s':>15} {'rein/direct':>12}")
for kind in KINDS:
    for conns in (1, 64):
        rs = [v for (k, c, _), v in sorted(rows.items()) if k == kind and c == conns]
        d50 = [x["direct"][1] for x in rs]; g50 = [x["rein"][1] for x in rs]
        add50 = [x["rein"][1] - x["direct"][1] for x in rs]
        add99 = [x["rein"][2] - x["direct"][2] for x in rs]
        drps = [x["direct"][0] for x in rs]; grps = [x["rein"][0] for x in rs]
        ratio = [x["rein"][0] / x["direct"][0] for x in rs]
        print(f"{kind + ' c' + str(conns):12} {rng(d50, '%.3f'):>15} {rng(g50, '%.3f'):>15} "
              f"{rng(add50, '%.3f'):>15} {rng(add99, '%.3f'):>15} {rng(drps, '%.0f'):>15} "
              f"{rng(grps, '%.0f'):>15} {rng(ratio, '%.2f'):>12}")
if any("proxy" in v for v in rows.values()):
    print()
    print("the same rounds through nginx as a plain reverse proxy (nothing checked), and the")
    print("CPU time per request of rein and of nginx (user + system, all threads and workers):")
    print(f"{'case':12} {'proxy added p50':>15} {'proxy/direct':>13} {'rein/proxy':>12} "
          f"{'rein CPU us/req':>16} {'nginx CPU us/req':>17}")
    for kind in KINDS:
        for conns in (1, 64):
            rs = [v for (k, c, _), v in sorted(rows.items()) if k == kind and c == conns]
            p50 = [x["proxy"][1] - x["direct"][1] for x in rs]
            pratio = [x["proxy"][0] / x["direct"][0] for x in rs]
            gp = [x["rein"][0] / x["proxy"][0] for x in rs]
            cpu = [x["rein"][3] for x in rs]
            pcpu = [x["proxy"][3] for x in rs]
            print(f"{kind + ' c' + str(conns):12} {rng(p50, '%.3f'):>15} {rng(pratio, '%.2f'):>13} "
                  f"{rng(gp, '%.2f'):>12} {rng(cpu, '%d'):>16} {rng(pcpu, '%d'):>17}")
print()
print("context switches and system calls per request of each proxy (all threads; system calls")
print("-1 without perf), and the CPU time per request of wrk + the upstream (+ the proxy): when")
print("the machine's cores are the limit (64 connections), a proxy reaches at most")
print("direct's CPU per request / its run's CPU per request of direct's throughput (bound):")
names = [n for n in ("rein", "proxy", "base") if any(n in v for v in rows.values())]
print(f"{'case':12} {'proxy':6} {'cs/req':>11} {'syscalls/req':>13} {'direct CPU us':>14} "
      f"{'run CPU us':>12} {'bound':>11} {'measured':>11}")
for kind in KINDS:
    for conns in (1, 64):
        rs = [v for (k, c, _), v in sorted(rows.items()) if k == kind and c == conns]
        for n in names:
            cs = [x[n][4] for x in rs]
            sc = [x[n][5] for x in rs]
            dcpu = [x["direct"][6] + x["direct"][7] for x in rs]
            pcpu = [x[n][3] + x[n][6] + x[n][7] for x in rs]
            bound = [(x["direct"][6] + x["direct"][7]) / max(1, x[n][3] + x[n][6] + x[n][7])
                     for x in rs]
            meas = [x[n][0] / x["direct"][0] for x in rs]
            print(f"{kind + ' c' + str(conns):12} {'nginx' if n == 'proxy' else n:6} "
                  f"{rng(cs, '%.2f'):>11} {rng(sc, '%.1f'):>13} {rng(dcpu, '%d'):>14} "
                  f"{rng(pcpu, '%d'):>12} {rng(bound, '%.2f'):>11} {rng(meas, '%.2f'):>11}")
print()
print("what the upstream pays, by who asks it: its CPU time per request, and the TCP segments")
print("the machine sent per request (all connections: the upstream's, the proxy's, wrk's). The")
print("upstream writes one event per write; how many writes share a segment depends on how")
print("its reader reads and acknowledges them, and on the host's congestion control")
print("(decision 0083):")
print(f"{'case':12} " + " ".join(f"{('nginx' if n == 'proxy' else n) + ' up us':>12} {'segs':>8}"
                                  for n in ["direct"] + names))
for kind in KINDS:
    for conns in (1, 64):
        rs = [v for (k, c, _), v in sorted(rows.items()) if k == kind and c == conns]
        cells = [f"{rng([x[n][6] for x in rs], '%d'):>12} {rng([x[n][8] for x in rs], '%.0f'):>8}"
                 for n in ["direct"] + names]
        print(f"{kind + ' c' + str(conns):12} " + " ".join(cells))
if os.path.getsize(sys.argv[2]):
    # system calls by kind: per case and proxy, the kinds above 0.05 per request in some round
    # (most frequent first), as ranges over the rounds (a round without a kind counts 0)
    kinds = collections.defaultdict(lambda: collections.defaultdict(dict))
    for line in open(sys.argv[2]):
        r, kind, conns, n, name, per = line.split()
        kinds[(kind, int(conns), n)][name][r] = float(per)
    rounds = sorted({k[2] for k in rows})
    print()
    print("system calls per request by kind (SYSCALL_KINDS=1), ranges over the rounds:")
    for kind in KINDS:
        for conns in (1, 64):
            for n in names:
                got = kinds.get((kind, conns, n))
                if not got:
                    continue
                top = sorted(got, key=lambda k: -max(got[k].values()))
                parts = [f"{k} {rng([got[k].get(r, 0.0) for r in rounds], '%.2f')}"
                         for k in top if max(got[k].values()) >= 0.05]
                print(f"{kind + ' c' + str(conns):12} {'nginx' if n == 'proxy' else n:6} "
                      + ", ".join(parts))
if not any("base" in v for v in rows.values()):
    sys.exit(0)
print()
print("the same rounds, the baseline binary (BASELINE) through the same upstream:")
print(f"{'case':12} {'base added p50':>15} {'rein added p50':>15} {'base/direct':>12} "
      f"{'rein/direct':>12} {'rein/base':>12} {'base CPU us/req':>16}")
for kind in KINDS:
    for conns in (1, 64):
        rs = [v for (k, c, _), v in sorted(rows.items()) if k == kind and c == conns]
        b50 = [x["base"][1] - x["direct"][1] for x in rs]
        g50 = [x["rein"][1] - x["direct"][1] for x in rs]
        bratio = [x["base"][0] / x["direct"][0] for x in rs]
        gratio = [x["rein"][0] / x["direct"][0] for x in rs]
        gb = [x["rein"][0] / x["base"][0] for x in rs]
        bcpu = [x["base"][3] for x in rs]
        print(f"{kind + ' c' + str(conns):12} {rng(b50, '%.3f'):>15} {rng(g50, '%.3f'):>15} "
              f"{rng(bratio, '%.2f'):>12} {rng(gratio, '%.2f'):>12} {rng(gb, '%.2f'):>12} "
              f"{rng(bcpu, '%d'):>16}")
PY
