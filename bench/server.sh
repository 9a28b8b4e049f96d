#!/usr/bin/env bash
# bench/server.sh: the HTTP server, rein next to its peers, in one run.
#
# 1. POST /skills/echo/invoke {"arguments": {"text": "hello"}}: requests per second and p99
#    latency with wrk (-t2 -c64, DURATION seconds, ROUNDS rounds alternating the servers, each
#    keeping its best round) for
#      rein serve       (release build, SQLite store),
#      FastAPI+uvicorn  the seed's skill host doing the same work (bench/server_peer.py: a
#                       pydantic model per skill, the normalized result, trace ids), one worker
#                       (PEER_WORKERS to change), uvloop and httptools when installed,
#      nginx            returning a fixed 200 with a JSON body: the ceiling of this machine.
#    Every server is checked to answer the request correctly before it is measured. wrk runs
#    on the same cores as the servers, so all figures include its cost alike.
# 2. CONVERSATIONS (default 1000) conversations at once through POST /agent/chat against the
#    scripted model server (rein-model-server, release build; each turn: the model calls echo,
#    then answers): every turn must succeed (zero errors), twice (a second message to each
#    conversation, its history loaded from the store); then the same number of new ones. The
#    server's resident memory before and after tells what an idle conversation costs (they
#    live in the store, not in the process).
#
#   bench/server.sh                    (make bench runs it after building build/)
#   DURATION=5 ROUNDS=1 CONVERSATIONS=200 bench/server.sh
# Needs: scripts/install-deps.sh --bench (wrk, nginx-light, python3-fastapi, python3-uvicorn).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build-bench}
out=bench/out
duration=${DURATION:-10}
rounds=${ROUNDS:-2}
convs=${CONVERSATIONS:-1000}
peer_workers=${PEER_WORKERS:-1}
mkdir -p "$out"

for tool in wrk nginx curl; do
  command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] ||
    { echo "server.sh: $tool is missing; run scripts/install-deps.sh --bench" >&2; exit 1; }
done
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
if ! /usr/bin/python3 -c 'import fastapi, uvicorn' 2>/dev/null; then
  echo "server.sh: python3-fastapi/python3-uvicorn are missing; run scripts/install-deps.sh --bench" >&2
  exit 1
fi
if [ ! -x "$build/rein" ] || [ ! -x "$build/tests/bin/rein-model-server" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DREIN_TESTS=ON >/dev/null
fi
cmake --build "$build" -j 2 --target rein rein-model-server >/dev/null
# shellcheck disable=SC2046
cc -O2 bench/server_chat.c $(pkg-config --libs libcurl) -o "$out/server_chat"

bench_name=server.sh
# shellcheck source=bench/serve_lib.sh
. bench/serve_lib.sh
# shellcheck source=bench/common.sh
. bench/common.sh
start_echo_model "$build"

# ---- the three servers ---------------------------------------------------------------------
rein_port=$(free_port)
# All the load comes from one address: let it hold every conversation's connection.
"$build/rein" serve --port "$rein_port" --store "sqlite:$tmp/rein.db" \
  --provider openai-compatible --base-url "$ms_url/v1" --model bench-model \
  --max-client-connections $((convs + 256)) \
  >"$tmp/rein.out" 2>"$tmp/rein.err" &
rein_pid=$!
pids+=("$rein_pid")

peer_port=$(free_port)
/usr/bin/python3 bench/server_peer.py "$peer_port" "$peer_workers" >"$tmp/peer.log" 2>&1 &
pids+=($!)

nginx_port=$(free_port)
nginx_echo_conf "$tmp/nginx" "$nginx_port"
"$nginx_bin" -c "$tmp/nginx/nginx.conf" -p "$tmp/nginx" -e "$tmp/nginx/error.log" &
pids+=($!)

names=(rein fastapi nginx)
declare -A url=(
  [rein]="http://127.0.0.1:$rein_port/skills/echo/invoke"
  [fastapi]="http://127.0.0.1:$peer_port/skills/echo/invoke"
  [nginx]="http://127.0.0.1:$nginx_port/skills/echo/invoke"
)
check_echo_invoke "$out/server_post.lua"


# wrk's "Requests/sec" and its 99% line in ms.
measure() {
  wrk -t2 -c64 -d"${duration}s" --latency -s "$out/server_post.lua" "$1" |
    /usr/bin/python3 -c '
import re, sys
text = sys.stdin.read()
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
m = re.search(r"99%\s+([\d.]+)(us|ms|s)\b", text)
p99 = float(m.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[m.group(2)]
bad = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
errs = re.search(r"Socket errors: (.*)", text)
print(rps, p99, int(bad.group(1)) if bad else 0, 1 if errs else 0)'
}
declare -A best_rps best_p99
for n in "${names[@]}"; do best_rps[$n]=0; best_p99[$n]=0; done
for _ in $(seq "$rounds"); do
  for n in "${names[@]}"; do
    read -r rps p99 bad errs < <(measure "${url[$n]}")
    if [ "$bad" != 0 ] || [ "$errs" != 0 ]; then
      echo "server.sh: $n: $bad non-2xx answers, socket errors: $errs" >&2
      exit 1
    fi
    if /usr/bin/python3 -c "import sys; sys.exit(0 if $rps > ${best_rps[$n]} else 1)"; then
      best_rps[$n]=$rps
      best_p99[$n]=$p99
    fi
  done
done

fastapi_v=$(/usr/bin/python3 -c 'import fastapi, uvicorn; print(fastapi.__version__, uvicorn.__version__)')
nginx_v=$("$nginx_bin" -v 2>&1 | sed 's/.*nginx\///')
echo "POST /skills/echo/invoke, wrk -t2 -c64 -d${duration}s, best of $rounds, $(nproc) cores shared with wrk"
printf '%-44s %12s %10s %14s\n' "" "requests/s" "p99 ms" "rein is"
/usr/bin/python3 - "${best_rps[rein]}" "${best_p99[rein]}" "${best_rps[fastapi]}" \
  "${best_p99[fastapi]}" "${best_rps[nginx]}" "${best_p99[nginx]}" "$fastapi_v" "$nginx_v" \
  "$peer_workers" <<'EOF'
import sys
r, rp, f, fp, n, np_ = (float(x) for x in sys.argv[1:7])
fv, uv = sys.argv[7].split()
nv, workers = sys.argv[8], sys.argv[9]
print(f"{'rein serve':44} {r:12.0f} {rp:10.2f} {'':>14}")
print(f"{'FastAPI ' + fv + ' + uvicorn ' + uv + ' (' + workers + ' worker)':44} {f:12.0f} {fp:10.2f} "
      f"{r / f:13.1f}x")
print(f"{'nginx ' + nv + ' fixed 200 (ceiling)':44} {n:12.0f} {np_:10.2f} {r / n:13.2f}x")
EOF

# ---- many conversations at once ------------------------------------------------------------
# Resident memory once the server has been quiet for a moment: it hands the heap a burst
# freed back to the system a second after the last request ended.
rss() {
  sleep 2
  awk '/VmRSS/ {print $2}' "/proc/$rein_pid/status"
}
"$out/server_chat" "http://127.0.0.1:$rein_port" 20 warm 1 >/dev/null
rss0=$(rss)
read -r t1 e1 s1 p50_1 p99_1 _ < <("$out/server_chat" "http://127.0.0.1:$rein_port" "$convs" conv 1)
rss1=$(rss)
read -r t2 e2 s2 p50_2 p99_2 _ < <("$out/server_chat" "http://127.0.0.1:$rein_port" "$convs" conv 2)
rss2=$(rss)
read -r t3 e3 s3 p50_3 p99_3 _ < <("$out/server_chat" "http://127.0.0.1:$rein_port" "$convs" more 1)
rss3=$(rss)
echo
echo "$convs conversations at once, POST /agent/chat (the model calls echo, then answers)"
printf '%-40s %8s %8s %10s %10s %10s\n' "" "turns" "errors" "turns/s" "p50 ms" "p99 ms"
/usr/bin/python3 - "$t1" "$e1" "$s1" "$p50_1" "$p99_1" "$t2" "$e2" "$s2" "$p50_2" "$p99_2" \
  "$t3" "$e3" "$s3" "$p50_3" "$p99_3" "$rss0" "$rss1" "$rss2" "$rss3" "$convs" <<'EOF'
import sys
a = sys.argv[1:]
labels = ["new conversations", "second message to each", "as many new ones again"]
for i, label in enumerate(labels):
    t, e, s, p50, p99 = a[5 * i:5 * i + 5]
    print(f"{label:40} {int(t):8} {int(e):8} {int(t) / float(s):10.0f} {float(p50):10.1f} "
          f"{float(p99):10.1f}")
rss0, rss1, rss2, rss3, n = (int(x) for x in a[15:20])
print(f"resident memory of rein serve: {rss0 / 1024:.1f} MiB before, {rss1 / 1024:.1f} after "
      f"{n} conversations, {rss2 / 1024:.1f} after their second turn, {rss3 / 1024:.1f} "
      f"with {2 * n} idle")
print(f"after the first {n}: {rss1 / rss0:.2f}x the resident memory before them (goal: <= 2x)")
print(f"memory per idle conversation: {(rss1 - rss0) * 1024 / n:.0f} bytes over the first {n} "
      f"(SQLite's page cache and malloc arenas warming up), {(rss3 - rss2) * 1024 / n:.0f} "
      f"bytes for the next {n}")
EOF
total_errors=$((e1 + e2 + e3))
[ "$total_errors" -eq 0 ] || { echo "server.sh: $total_errors turns failed" >&2; exit 1; }
