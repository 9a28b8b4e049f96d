#!/usr/bin/env bash
# bench/turns.sh: conversation turns per second through `rein serve`, the SQLite store next to
# the Redis store, in one run (issue 25, goal 4: >= 1,000 turns/s on SQLite, p99 under 1 s at
# 1,000 concurrent conversations, durability unchanged).
#
# One scripted model server (release build; each turn: the model calls echo, the verifier
# approves it (rein self-verifies echo), the model answers: three model calls and one tool)
# and two `rein serve` processes: one on a SQLite file (WAL,
# synchronous=FULL: every acknowledged write is on disk), one on a redis-server started here
# with appendonly yes and appendfsync always (every write on disk before Redis answers: the
# same durability), and one on a redis-server without persistence (what the tests and the
# issue's first figures used; a restart loses everything). bench/server_chat.c opens CONVERSATIONS (default 1000) conversations at
# once against one server, then sends a second message to each (history loaded from the
# store); every turn must succeed. ROUNDS rounds (default 3) alternate the two stores; the
# table gives the range over rounds with the load average before and after, and the CPU time
# each process spent per turn (rein serve, the scripted model server, the client, and
# redis-server for the Redis stores), read from /proc: all of them share the two cores, so
# their sum per turn bounds turns/s as much as rein's own part does; then rein serve's context
# switches per turn (perf's software counter when perf runs, else /proc) and the disk syncs
# per turn of rein serve and redis-server (perf's system call tracepoints).
#
#   bench/turns.sh
#   CONVERSATIONS=200 ROUNDS=3 bench/turns.sh
#   THREADS=64 bench/turns.sh     rein serve --threads 64 for every rein (default: each rein's own
#                                 default, 32 since decision 0057, 8 before: a
#                                 running turn holds one, so at most that many run at once)
#   BEFORE=DIR bench/turns.sh     also DIR's rein (another checkout, release build in
#                                 DIR/build-bench) on SQLite and on Redis (appendfsync always,
#                                 its own redis-server), interleaved with this tree's
#   INSTR=1 bench/turns.sh        also rein's own instructions per turn on SQLite (valgrind
#                                 --tool=callgrind, counting only while INSTR_CONVERSATIONS
#                                 (default 50) conversations run two turns each, one at a time
#                                 per conversation: load-independent), for BEFORE's rein too
# Needs: redis-server, the libraries of scripts/install-deps.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build-bench}
out=bench/out
rounds=${ROUNDS:-3}
convs=${CONVERSATIONS:-1000}
threads=()
[ -n "${THREADS:-}" ] && threads=(--threads "$THREADS")
mkdir -p "$out"

redis_bin=$(command -v redis-server || echo /usr/bin/redis-server)
[ -x "$redis_bin" ] || { echo "turns.sh: redis-server is missing" >&2; exit 1; }
[ -f "$build/CMakeCache.txt" ] ||
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DREIN_TESTS=ON >/dev/null
cmake --build "$build" -j 2 --target rein rein-model-server >/dev/null
before_rein=""
if [ -n "${BEFORE:-}" ]; then
  [ -f "$BEFORE/build-bench/CMakeCache.txt" ] ||
    cmake -S "$BEFORE" -B "$BEFORE/build-bench" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BEFORE/build-bench" -j 2 --target rein >/dev/null
  before_rein=$BEFORE/build-bench/rein
fi
# shellcheck disable=SC2046
cc -O2 bench/server_chat.c $(pkg-config --libs libcurl) -o "$out/server_chat"

bench_name=turns.sh
# shellcheck source=bench/serve_lib.sh
. bench/serve_lib.sh
start_echo_model "$build"
ms_pid=${pids[-1]}
hz=$(getconf CLK_TCK)
cpu_ms() { awk -v hz="$hz" '{printf "%.0f", ($14 + $15) * 1000 / hz}' "/proc/$1/stat"; }
# Context switches of a process (all its threads, voluntary and not) while a command runs:
# perf's software counter, which also counts threads that ended; without perf, the sum over
# /proc/PID/task/*/status, which misses threads that ended in between (say so: "~"). With perf,
# also the disk syncs (fsync and fdatasync calls: a commit of SQLite's WAL with synchronous=FULL,
# Redis's appendfsync always) of the process and of the store's process: commits per turn.
cs_has_perf=0
perf stat -e context-switches -x, true >/dev/null 2>&1 && cs_has_perf=1
sync_events=""
[ "$cs_has_perf" = 1 ] &&
  perf stat -e syscalls:sys_enter_fdatasync,syscalls:sys_enter_fsync -x, true >/dev/null 2>&1 &&
  sync_events=syscalls:sys_enter_fdatasync,syscalls:sys_enter_fsync
cs_tasks() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/ctxt_switches/ {n += $2} END {print n + 0}'; }
cs_start() { # pid [store pid]: starts counting
  if [ "$cs_has_perf" = 1 ]; then
    perf stat -e "context-switches${sync_events:+,$sync_events}" -x, -o "$tmp/cs.out" \
      -p "$1" >/dev/null 2>&1 &
    cs_perf=$!
    cs_store_perf=""
    if [ -n "${2:-}" ] && [ -n "$sync_events" ]; then
      perf stat -e "$sync_events" -x, -o "$tmp/cs-store.out" -p "$2" >/dev/null 2>&1 &
      cs_store_perf=$!
    fi
    sleep 0.2 # perf attaches to every thread before the round starts
  else
    cs0=$(cs_tasks "$1")
  fi
}
syncs_in() { awk -F, '/sys_enter_f(data)?sync/ {n += $1} END {print n + 0}' "$1"; }
cs_stop() { # pid: sets cs (and syncs: -1 when not counted) to the counts since cs_start (not
  # in a subshell: it waits for perf)
  syncs=-1
  if [ "$cs_has_perf" = 1 ]; then
    kill -INT "$cs_perf" ${cs_store_perf:+"$cs_store_perf"} 2>/dev/null || true
    wait "$cs_perf" ${cs_store_perf:+"$cs_store_perf"} 2>/dev/null || true
    cs=$(awk -F, '/context-switches/ {print $1 + 0}' "$tmp/cs.out")
    if [ -n "$sync_events" ]; then
      syncs=$(syncs_in "$tmp/cs.out")
      if [ -n "$cs_store_perf" ]; then
        syncs=$((syncs + $(syncs_in "$tmp/cs-store.out")))
      fi
    fi
  else
    cs=$(($(cs_tasks "$1") - cs0))
  fi
}

# name, then redis-server's persistence arguments
declare -A redis_port redis_pid
start_redis() {
  local name=$1
  shift
  redis_port[$name]=$(free_port)
  mkdir -p "$tmp/$name"
  "$redis_bin" --port "${redis_port[$name]}" --bind 127.0.0.1 --save "" "$@" \
    --dir "$tmp/$name" --logfile "$tmp/$name/log" &
  pids+=($!)
  redis_pid[$name]=$!
  for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/${redis_port[$name]}") 2>/dev/null && return 0
    sleep 0.05
  done
  echo "turns.sh: redis-server ($name) did not start" >&2
  exit 1
}
start_redis redis --appendonly yes --appendfsync always
start_redis redis-volatile --appendonly no
[ -n "$before_rein" ] && start_redis redis-before --appendonly yes --appendfsync always

# name store-url binary
declare -A port rein_pid store_pid
start_rein() {
  port[$1]=$(free_port)
  "$3" serve --port "${port[$1]}" --store "$2" \
    --provider openai-compatible --base-url "$ms_url/v1" --model bench-model \
    --max-client-connections $((convs + 256)) "${threads[@]+"${threads[@]}"}" \
    >"$tmp/$1.out" 2>"$tmp/$1.err" &
  pids+=($!)
  rein_pid[$1]=$!
  store_pid[$1]=${redis_pid[$1]:-}
  wait_http "http://127.0.0.1:${port[$1]}/healthz"
}
names=(sqlite redis redis-volatile)
start_rein sqlite "sqlite:$tmp/rein.db" "$build/rein"
start_rein redis "redis://127.0.0.1:${redis_port[redis]}/0" "$build/rein"
start_rein redis-volatile "redis://127.0.0.1:${redis_port[redis-volatile]}/0" "$build/rein"
if [ -n "$before_rein" ]; then
  start_rein sqlite-before "sqlite:$tmp/before.db" "$before_rein"
  start_rein redis-before "redis://127.0.0.1:${redis_port[redis-before]}/0" "$before_rein"
  names=(sqlite-before "${names[@]::2}" redis-before "${names[@]:2}")
fi
for n in "${names[@]}"; do
  "$out/server_chat" "http://127.0.0.1:${port[$n]}" 20 warm 1 >/dev/null
done

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
rows=()
for r in $(seq "$rounds"); do
  for n in "${names[@]}"; do
    for turn in 1 2; do
      r0=$(cpu_ms "${rein_pid[$n]}")
      m0=$(cpu_ms "$ms_pid")
      d0=0
      [ -n "${store_pid[$n]}" ] && d0=$(cpu_ms "${store_pid[$n]}")
      cs_start "${rein_pid[$n]}" "${store_pid[$n]}"
      read -r t e s p50 p99 ccpu < <("$out/server_chat" "http://127.0.0.1:${port[$n]}" \
        "$convs" "r$r" "$turn")
      cs_stop "${rein_pid[$n]}"
      [ "$e" -eq 0 ] || { echo "turns.sh: $n: $e of $t turns failed" >&2; exit 1; }
      d1=0
      [ -n "${store_pid[$n]}" ] && d1=$(cpu_ms "${store_pid[$n]}")
      rows+=("$n,$turn,$t,$s,$p50,$p99,$(($(cpu_ms "${rein_pid[$n]}") - r0)),$(($(cpu_ms \
        "$ms_pid") - m0)),${ccpu%.*},$((d1 - d0)),$cs,$syncs")
    done
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

/usr/bin/python3 - "$load_before" "$load_after" "$rounds" "$convs" "${THREADS:-default}" \
  "$cs_has_perf" "${rows[@]}" <<'EOF'
import sys
before, after, rounds, convs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
threads, cs_perf = sys.argv[5], sys.argv[6] == "1"
cells, names = {}, []
cpu, csw, dsync = {}, {}, {}
for row in sys.argv[7:]:
    n, turn, t, s, p50, p99, rein, model, client, store, cs, syncs = row.split(",")
    csw.setdefault(n, []).append(int(cs) / int(t))
    if int(syncs) >= 0:
        dsync.setdefault(n, []).append(int(syncs) / int(t))
    if n not in names:
        names.append(n)
    cells.setdefault((n, turn), []).append((int(t) / float(s), float(p50), float(p99)))
    cpu.setdefault(n, []).append(tuple(float(x) / int(t) for x in (rein, model, client, store)))
print(f"{convs} conversations at once through rein serve, POST /agent/chat (the model calls "
      f"echo, the verifier approves, the model answers), --threads {threads}, {rounds} rounds "
      f"alternating the stores")
print(f"load average {before} before, {after} after (2 cores shared with other users)")
print(f"{'':44} {'turns/s':>10} {'p50 ms':>12} {'p99 ms':>12}")
label = {"sqlite": "SQLite (FULL, WAL)", "redis": "Redis (appendfsync always)",
         "redis-volatile": "Redis (no persistence)", "sqlite-before": "SQLite, BEFORE checkout",
         "redis-before": "Redis (always), BEFORE checkout"}
rng = lambda xs, f: f"{min(xs):{f}}-{max(xs):{f}}"
for n in names:
    for turn, what in (("1", "new"), ("2", "second message")):
        v = cells[(n, turn)]
        print(f"{label[n] + ', ' + what:44} {rng([x[0] for x in v], '.0f'):>10} "
              f"{rng([x[1] for x in v], '.0f'):>12} {rng([x[2] for x in v], '.0f'):>12}")
turns = lambda n: [x[0] for k in ((n, "1"), (n, "2")) for x in cells[k]]
s = turns("sqlite")
for n in ("redis", "redis-volatile", "sqlite-before"):
    if n in names:
        r = turns(n)
        print(f"SQLite / {label[n]}, turns/s: {min(s) / max(r):.2f}-{max(s) / min(r):.2f}")
if "redis-before" in names:
    r, rb = turns("redis"), turns("redis-before")
    print(f"Redis / {label['redis-before']}, turns/s: {min(r) / max(rb):.2f}-{max(r) / min(rb):.2f}")
print(f"\nCPU ms per turn (both messages, range over rounds; 1,000 turns/s on 2 cores leaves "
      f"2 ms for all of them)")
print(f"{'':32} {'rein serve':>12} {'model server':>13} {'client':>10} {'redis-server':>13} "
      f"{'sum':>10} {'rein share':>11}")
for n in names:
    v = cpu[n]
    sums = [sum(x) for x in v]
    share = [x[0] / sum(x) for x in v if sum(x) > 0]
    col = lambda i: rng([x[i] for x in v], '.2f')
    print(f"{label[n]:32} {col(0):>12} {col(1):>13} {col(2):>10} "
          f"{(col(3) if n.startswith('redis') else '-'):>13} {rng(sums, '.2f'):>10} "
          f"{rng([100 * x for x in share], '.0f') + ' %':>11}")
print(f"\nrein serve's context switches per turn (range over rounds; "
      f"{'perf, every thread' if cs_perf else '~ /proc task sums: threads that ended are missed'})")
for n in names:
    print(f"{label[n]:32} {rng(csw[n], '.1f'):>12}")
if dsync:
    print("\ndisk syncs per turn (fsync and fdatasync of rein serve and redis-server, perf: each is "
          "one commit; group commit shares one among the turns waiting)")
    for n in names:
        if n in dsync:
            print(f"{label[n]:32} {rng(dsync[n], '.2f'):>12}")
print("goal: >= 1,000 turns/s on SQLite, p99 < 1 s at 1,000 concurrent conversations")
EOF

# ---- instructions per turn (load-independent) ----------------------------------------------
# name binary: prints "name instructions_per_turn"
instr_per_turn() {
  local port pid text total n=${INSTR_CONVERSATIONS:-50}
  port=$(free_port)
  valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$tmp/cg-$1.out" \
    "$2" serve --port "$port" --store "sqlite:$tmp/cg-$1.db" \
    --provider openai-compatible --base-url "$ms_url/v1" --model bench-model \
    >"$tmp/cg-$1.log" 2>&1 &
  pid=$!
  pids+=("$pid")
  for _ in $(seq 1 600); do
    curl -s -o /dev/null "http://127.0.0.1:$port/healthz" && break
    sleep 0.1
  done
  "$out/server_chat" "http://127.0.0.1:$port" 5 cgwarm 1 >/dev/null
  callgrind_control -i on "$pid" >/dev/null
  for turn in 1 2; do
    "$out/server_chat" "http://127.0.0.1:$port" "$n" cg "$turn" >/dev/null
  done
  callgrind_control -i off "$pid" >/dev/null
  callgrind_control -d "$pid" >/dev/null
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  total=$(cat "$tmp/cg-$1.out"* | awk '/^summary:/ {s += $2} /^totals:/ {t += $2} END {print (s ? s : t)}')
  echo "$1 $((total / (2 * n)))"
}
if [ "${INSTR:-0}" = 1 ]; then
  command -v valgrind >/dev/null || { echo "turns.sh: INSTR=1 needs valgrind" >&2; exit 1; }
  echo
  echo "rein serve's own instructions per turn on SQLite (callgrind, ${INSTR_CONVERSATIONS:-50} conversations x 2 turns)"
  [ -n "$before_rein" ] && instr_per_turn before "$before_rein"
  instr_per_turn this "$build/rein"
fi
