#!/usr/bin/env bash
# bench/conversations.sh: GET /agent/conversations (a page of the list) and
# GET /agent/conversations/{id} (one conversation with its messages) through `rein serve` on a
# SQLite store holding STORED (default 100,000) conversations of four messages each (issue 25,
# goal 6: >= 20k requests/s each).
#
# The store is made once: rein serve creates the schema, then the rows are written directly
# with Python's sqlite3 (a million HTTP requests would take longer than the measurement).
# wrk -t2 -c64 for DURATION (default 5) seconds per measurement; ROUNDS (default 3) rounds
# alternate the two requests (and, with BEFORE=DIR, DIR's rein on a copy of the same file,
# release build in DIR/build-bench); the table gives the range over rounds and the load
# average before and after, and the CPU each rein serve spent per request (read from /proc:
# less sensitive to other users of the machine than requests/s, which wrk shares the cores
# for). INSTR=1 also counts each rein's own instructions per request (valgrind
# --tool=callgrind, counting only while wrk runs: load-independent).
# Needs: wrk, python3, the libraries of scripts/install-deps.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build-bench}
out=bench/out
rounds=${ROUNDS:-3}
stored=${STORED:-100000}
duration=${DURATION:-5}
mkdir -p "$out"

command -v wrk >/dev/null || { echo "conversations.sh: wrk is missing" >&2; exit 1; }
[ -f "$build/CMakeCache.txt" ] ||
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DREIN_TESTS=ON >/dev/null
cmake --build "$build" -j 2 --target rein >/dev/null
declare -A bin=([this]="$build/rein")
names=(this)
if [ -n "${BEFORE:-}" ]; then
  [ -f "$BEFORE/build-bench/CMakeCache.txt" ] ||
    cmake -S "$BEFORE" -B "$BEFORE/build-bench" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BEFORE/build-bench" -j 2 --target rein >/dev/null
  bin[before]=$BEFORE/build-bench/rein
  names=(before this)
fi

bench_name=conversations.sh
# shellcheck source=bench/serve_lib.sh
. bench/serve_lib.sh

# The schema, from rein itself (the BEFORE checkout's when given: an older rein cannot open a
# newer schema, and this tree migrates its copy at start as it would a user's file); then the
# rows.
port=$(free_port)
"${bin[before]:-$build/rein}" serve --port "$port" --store "sqlite:$tmp/seed.db" >/dev/null 2>&1 &
seed_pid=$!
wait_http "http://127.0.0.1:$port/healthz"
kill -TERM "$seed_pid"
wait "$seed_pid" || true
/usr/bin/python3 - "$tmp/seed.db" "$stored" <<'EOF'
import sqlite3, sys
db, n = sqlite3.connect(sys.argv[1]), int(sys.argv[2])
now = 1764000000000
with db:
    db.executemany(
        "INSERT INTO conversations (id, title, state, created_ms, updated_ms, message_count) "
        "VALUES (?, ?, 'idle', ?, ?, 4)",
        (("c%07d" % i, "Conversation %d" % i, now + i, now + i) for i in range(n)))
    msgs = ('{"role":"user","content":"echo hello"}',
            '{"role":"assistant","content":"","tool_calls":[{"id":"call_1","name":"echo",'
            '"arguments":"{\\"text\\":\\"hello\\"}"}]}',
            '{"role":"tool","tool_call_id":"call_1","name":"echo","content":"hello"}',
            '{"role":"assistant","content":"It said hello."}')
    db.executemany(
        "INSERT INTO messages (conversation_id, position, created_ms, body) VALUES (?, ?, ?, ?)",
        (("c%07d" % i, p, now + i, msgs[p]) for i in range(n) for p in range(4)))
db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
db.close()
EOF

declare -A url srv_pid
for n in "${names[@]}"; do
  cp "$tmp/seed.db" "$tmp/$n.db"
  p=$(free_port)
  "${bin[$n]}" serve --port "$p" --store "sqlite:$tmp/$n.db" >"$tmp/$n.out" 2>"$tmp/$n.err" &
  pids+=($!)
  srv_pid[$n]=$!
  url[$n]="http://127.0.0.1:$p"
  wait_http "${url[$n]}/healthz"
done
mid=$(printf 'c%07d' $((stored / 2)))
for n in "${names[@]}"; do
  got=$(curl -s "${url[$n]}/agent/conversations/$mid")
  case "$got" in
    *'"It said hello."'*) ;;
    *) echo "conversations.sh: $n answered: $got" >&2; exit 1 ;;
  esac
done

hz=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
measure() { # NAME URL: "requests/s cpu_us_per_request" (fails on any error answer)
  local c0 c1 text
  c0=$(cpu_ticks "${srv_pid[$1]}")
  text=$(wrk -t2 -c64 -d"${duration}s" "$2")
  c1=$(cpu_ticks "${srv_pid[$1]}")
  /usr/bin/python3 -c '
import re, sys
text, ticks, hz = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if re.search(r"Non-2xx or 3xx responses|Socket errors", text):
    sys.exit("conversations.sh: errors: " + text)
n = int(re.search(r"(\d+) requests in", text).group(1))
print(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1), f"{ticks * 1e6 / hz / n:.1f}")' \
    "$text" "$((c1 - c0))" "$hz"
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
rows=()
for _ in $(seq "$rounds"); do
  for n in "${names[@]}"; do
    read -r rps cpu < <(measure "$n" "${url[$n]}/agent/conversations")
    rows+=("$n,list,$rps,$cpu")
    read -r rps cpu < <(measure "$n" "${url[$n]}/agent/conversations/$mid")
    rows+=("$n,get,$rps,$cpu")
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

/usr/bin/python3 - "$load_before" "$load_after" "$rounds" "$stored" "$duration" "${rows[@]}" <<'EOF'
import sys
before, after, rounds, stored, duration = sys.argv[1:6]
cells, cpus = {}, {}
for row in sys.argv[6:]:
    n, what, rps, cpu = row.split(",")
    cells.setdefault((n, what), []).append(float(rps))
    cpus.setdefault((n, what), []).append(float(cpu))
print(f"rein serve, SQLite with {int(stored):,} conversations, wrk -t2 -c64 -d{duration}s, "
      f"{rounds} rounds (load average {before} before, {after} after; 2 cores shared with wrk "
      f"and other users)")
label = {"list": "GET /agent/conversations", "get": "GET /agent/conversations/{id}"}
for (n, what), v in cells.items():
    who = "BEFORE checkout" if n == "before" else "this tree"
    c = cpus[(n, what)]
    print(f"{label[what] + ' (' + who + ')':52} {min(v):9.0f}-{max(v):.0f} requests/s, "
          f"rein CPU {min(c):.1f}-{max(c):.1f} us per request")
print("goal: >= 20,000 requests/s each")
EOF

# ---- instructions per request (load-independent) ---------------------------------------------
if [ "${INSTR:-0}" = 1 ]; then
  command -v valgrind >/dev/null || { echo "conversations.sh: INSTR=1 needs valgrind" >&2; exit 1; }
  echo
  echo "rein's own instructions per request (callgrind, counted while wrk -t1 -c4 ran 4 s)"
  for n in "${names[@]}"; do
    bin_n=${bin[$n]}
    cp "$tmp/seed.db" "$tmp/cg-$n.db"
    port=$(free_port)
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$tmp/cg-$n.out" \
      "$bin_n" serve --port "$port" --store "sqlite:$tmp/cg-$n.db" >"$tmp/cg-$n.log" 2>&1 &
    cg_pid=$!
    pids+=("$cg_pid")
    for _ in $(seq 1 600); do
      curl -s -o /dev/null "http://127.0.0.1:$port/healthz" && break
      sleep 0.1
    done
    line="$n:"
    for what in list get; do
      path=/agent/conversations
      [ "$what" = get ] && path=/agent/conversations/$mid
      curl -s -o /dev/null "http://127.0.0.1:$port$path"
      rm -f "$tmp/cg-$n.out".*
      callgrind_control -z "$cg_pid" >/dev/null 2>&1
      callgrind_control -i on "$cg_pid" >/dev/null 2>&1
      text=$(wrk -t1 -c4 -d4s "http://127.0.0.1:$port$path")
      callgrind_control -i off "$cg_pid" >/dev/null 2>&1
      callgrind_control -d "$cg_pid" >/dev/null 2>&1
      reqs=$(awk '/requests in/ {print $1}' <<<"$text")
      total=$(cat "$tmp/cg-$n.out".* | awk '/^summary:/ {s += $2} /^totals:/ {t += $2} END {print (s ? s : t)}')
      line="$line $what $((total / reqs))"
    done
    kill -TERM "$cg_pid" 2>/dev/null || true
    wait "$cg_pid" 2>/dev/null || true
    echo "$line"
  done
fi
