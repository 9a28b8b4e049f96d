#!/usr/bin/env bash
# bench/mcp.sh: rein as an MCP server, next to its peers, in one run, the targets taking turns
# within every round (never one target's rounds back to back):
#
# 1. Throughput under concurrent clients (wrk, DURATION seconds per measurement): tools/call
#    echo over Streamable HTTP POST /mcp (one session, every connection posting the same
#    request) at 1, 8 and 64 connections, next to rein's own POST /skills/echo/invoke (the same
#    call through the same pipeline, without MCP) and the reference server
#    (@modelcontextprotocol/server-everything, its echo tool over its /mcp). The goal of issue
#    20 is /mcp at least a third of the invoke route's rate.
# 2. One MCP client for both servers (the official TypeScript SDK, bench/mcp/driver.mjs, CALLS
#    calls): `rein mcp serve` vs `server-everything stdio` sequentially, and `rein serve` /mcp vs
#    `server-everything streamableHttp` sequentially and with 8 calls in flight.
#
# Each figure is printed as the range (lowest-highest) over ROUNDS rounds (default 3), ratios
# too (computed per round), with the load average before and after: the machine is shared, so
# a busy one shows there.
#   bench/mcp.sh                 DURATION=3 ROUNDS=3 CALLS=2000 bench/mcp.sh
# Needs: a release build (make), wrk (scripts/install-deps.sh --bench), node with
# bench/mcp/node_modules (npm install there; done here on the first run).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
calls=${CALLS:-2000}
rounds=${ROUNDS:-3}
duration=${DURATION:-5}
make --no-print-directory BUILD="$build" build >/dev/null
command -v wrk >/dev/null || { echo "mcp.sh: wrk is missing; run scripts/install-deps.sh --bench" >&2; exit 1; }
if [ ! -d bench/mcp/node_modules/@modelcontextprotocol/sdk ]; then
  (cd bench/mcp && npm install --no-audit --no-fund --silent >/dev/null)
fi
driver=bench/mcp/driver.mjs
everything=bench/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js
port_rein=$((20000 + RANDOM % 10000))
port_peer=$((port_rein + 1))
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]+"${pids[@]}"}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

REIN_LOG=error "$build/rein" serve --port "$port_rein" --store "sqlite:$tmp/rein.db" >/dev/null 2>&1 &
pids+=($!)
PORT=$port_peer node "$everything" streamableHttp >/dev/null 2>&1 &
pids+=($!)
accept='Accept: application/json, text/event-stream'
ready=""
for _ in $(seq 100); do
  if curl -s -o /dev/null "http://127.0.0.1:$port_rein/healthz" &&
    curl -s -o /dev/null -X POST "http://127.0.0.1:$port_peer/mcp"; then
    ready=1
    break
  fi
  sleep 0.1
done
[ -n "$ready" ] || { echo "mcp.sh: the servers did not start" >&2; exit 1; }

# session URL: initializes an MCP session and prints its Mcp-Session-Id.
session() {
  curl -s -D - -o /dev/null -X POST "$1" -H 'Content-Type: application/json' -H "$accept" \
    -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}' |
    tr -d '\r' | sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: //p'
}
# wrk_script FILE BODY [SESSION]: a wrk script that posts BODY (JSON).
wrk_script() {
  {
    echo 'wrk.method = "POST"'
    echo "wrk.body = '$2'"
    echo 'wrk.headers["Content-Type"] = "application/json"'
    echo 'wrk.headers["Accept"] = "application/json, text/event-stream"'
    if [ -n "${3:-}" ]; then
      echo "wrk.headers[\"Mcp-Session-Id\"] = \"$3\""
      echo 'wrk.headers["MCP-Protocol-Version"] = "2025-11-25"'
    fi
  } >"$1"
}
sid_rein=$(session "http://127.0.0.1:$port_rein/mcp")
sid_peer=$(session "http://127.0.0.1:$port_peer/mcp")
[ -n "$sid_rein" ] && [ -n "$sid_peer" ] || { echo "mcp.sh: no MCP session" >&2; exit 1; }
wrk_script "$tmp/invoke.lua" '{"arguments":{"text":"hello"}}'
wrk_script "$tmp/rein.lua" \
  '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}' \
  "$sid_rein"
wrk_script "$tmp/peer.lua" \
  '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello"}}}' \
  "$sid_peer"
# Every target is checked to answer the call before it is measured.
curl -s -X POST "http://127.0.0.1:$port_rein/skills/echo/invoke" -H 'Content-Type: application/json' \
  -d '{"arguments":{"text":"hello"}}' | grep -q '"ok":true' || { echo "mcp.sh: invoke fails" >&2; exit 1; }
for t in rein:$port_rein:"$sid_rein":text peer:$port_peer:"$sid_peer":message; do
  IFS=: read -r name port sid arg <<<"$t"
  curl -s -X POST "http://127.0.0.1:$port/mcp" -H 'Content-Type: application/json' -H "$accept" \
    -H "Mcp-Session-Id: $sid" -H 'MCP-Protocol-Version: 2025-11-25' \
    -d "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"$arg\":\"hello\"}}}" |
    grep -q 'hello' || { echo "mcp.sh: $name's /mcp echo fails" >&2; exit 1; }
done

# rate LUA URL CONNECTIONS: wrk's requests/s (0 when any answer was not 2xx).
rate() {
  local threads=2 out
  [ "$3" -lt 2 ] && threads=1
  out=$(wrk -t"$threads" -c"$3" -d"${duration}s" -s "$1" "$2")
  if grep -q 'Non-2xx' <<<"$out"; then echo 0; return; fi
  awk '/^Requests\/sec:/ { printf "%d\n", $2 }' <<<"$out"
}
# range V...: "lo-hi" of the values.
range() { printf '%s\n' "$@" | sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%s-%s", lo, hi }'; }
# ratios A... / B... pairwise: "lo-hi" with two decimals.
ratios() {
  local n=$(($# / 2)) i out=()
  local -a all=("$@")
  for ((i = 0; i < n; i++)); do
    out+=("$(awk "BEGIN { printf \"%.2f\", ${all[i]} / (${all[n + i]} > 0 ? ${all[n + i]} : 1) }")")
  done
  range "${out[@]}"
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== 1. tools/call echo throughput (wrk, ${duration} s each, $rounds rounds; requests/s as lowest-highest)"
printf '%-12s %16s %16s %16s %14s %14s\n' connections "rein invoke" "rein /mcp" "everything /mcp" \
  "/mcp:invoke" "rein:everything"
declare -A inv mcp peer
for r in $(seq "$rounds"); do
  for c in 1 8 64; do
    # The order turns each round, so no target always runs first.
    case $(((r + c) % 3)) in
      0) order="inv mcp peer" ;;
      1) order="mcp peer inv" ;;
      *) order="peer inv mcp" ;;
    esac
    for t in $order; do
      case $t in
        inv) inv[$c]+=" $(rate "$tmp/invoke.lua" "http://127.0.0.1:$port_rein/skills/echo/invoke" "$c")" ;;
        mcp) mcp[$c]+=" $(rate "$tmp/rein.lua" "http://127.0.0.1:$port_rein/mcp" "$c")" ;;
        peer) peer[$c]+=" $(rate "$tmp/peer.lua" "http://127.0.0.1:$port_peer/mcp" "$c")" ;;
      esac
    done
  done
done
for c in 1 8 64; do
  # shellcheck disable=SC2086
  printf '%-12s %16s %16s %16s %14s %14s\n' "$c" "$(range ${inv[$c]})" "$(range ${mcp[$c]})" \
    "$(range ${peer[$c]})" "$(ratios ${mcp[$c]} ${inv[$c]})" "$(ratios ${mcp[$c]} ${peer[$c]})"
done

echo "== 2. one client for both (the TypeScript SDK, $calls calls; calls/s as lowest-highest, p50/p99 ms of the best round)"
printf '%-30s %14s %12s %14s %12s %12s\n' "" "rein /s" "p50/p99" "everything /s" "p50/p99" "ratio"
# row NAME REIN-ARGS... -- PEER-ARGS...: ROUNDS rounds, rein then the peer in each.
row() {
  local name=$1 r line
  shift
  local -a a b
  while [ "$1" != "--" ]; do a+=("$1"); shift; done
  shift
  b=("$@")
  local rr=() pr=() rbest="0 0 0" pbest="0 0 0"
  for r in $(seq "$rounds"); do
    line=$(node "$driver" "${a[@]}")
    rr+=("${line%% *}")
    [ "${line%% *}" -gt "${rbest%% *}" ] && rbest=$line
    line=$(node "$driver" "${b[@]}")
    pr+=("${line%% *}")
    [ "${line%% *}" -gt "${pbest%% *}" ] && pbest=$line
  done
  read -r _ r50 r99 <<<"$rbest"
  read -r _ p50 p99 <<<"$pbest"
  printf '%-30s %14s %12s %14s %12s %12s\n' "$name" "$(range "${rr[@]}")" "$r50/$r99" \
    "$(range "${pr[@]}")" "$p50/$p99" "$(ratios "${rr[@]}" "${pr[@]}")"
}
row "stdio, sequential" stdio "$build/rein mcp serve" echo '{"text":"hello"}' "$calls" 1 -- \
  stdio "node $everything stdio" echo '{"message":"hello"}' "$calls" 1
row "Streamable HTTP, sequential" http "http://127.0.0.1:$port_rein/mcp" echo '{"text":"hello"}' \
  "$calls" 1 -- http "http://127.0.0.1:$port_peer/mcp" echo '{"message":"hello"}' "$calls" 1
row "Streamable HTTP, 8 in flight" http "http://127.0.0.1:$port_rein/mcp" echo '{"text":"hello"}' \
  "$calls" 8 -- http "http://127.0.0.1:$port_peer/mcp" echo '{"message":"hello"}' "$calls" 8
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
