#!/usr/bin/env bash
# bench/mcp.sh: tools/call throughput of rein as an MCP server next to the reference server
# (@modelcontextprotocol/server-everything), both driven by the same client (the official
# TypeScript SDK, bench/mcp/driver.mjs), in one run:
#   stdio  `rein mcp serve` vs `node server-everything stdio`, the echo tool, sequential calls
#   http   `rein serve` /mcp vs `server-everything streamableHttp`, echo, sequential and 8 in
#          flight
# rein's echo goes through the whole call pipeline (name check, repair, preflight, ledger-free
# execution, normalization); the reference server's echo is a zod-validated handler. Prints
# calls/s, median and p99 latency for each and rein's calls/s over the peer's. Best of ROUNDS
# rounds (default 3) that alternate between the two.
# Needs: a release build (make), node with bench/mcp/node_modules (npm install there).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
calls=${CALLS:-2000}
rounds=${ROUNDS:-3}
make --no-print-directory BUILD="$build" build >/dev/null
if [ ! -d bench/mcp/node_modules/@modelcontextprotocol/sdk ]; then
  (cd bench/mcp && npm install --no-audit --no-fund --silent >/dev/null)
fi
driver=bench/mcp/driver.mjs
everything=bench/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js
port_rein=$((20000 + RANDOM % 10000))
port_peer=$((port_rein + 1))
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT

REIN_LOG=error "$build/rein" serve --port "$port_rein" --store "sqlite:$tmp/rein.db" >/dev/null 2>&1 &
pids+=($!)
PORT=$port_peer node "$everything" streamableHttp >/dev/null 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  curl -s -o /dev/null "http://127.0.0.1:$port_rein/healthz" &&
    curl -s -o /dev/null -X POST "http://127.0.0.1:$port_peer/mcp" && break
  sleep 0.1
done

best() { # best calls/s of ROUNDS runs of: driver ARGS...  → "calls/s median p99"
  local top="0 0 0" line
  for _ in $(seq "$rounds"); do
    line=$(node "$driver" "$@")
    if [ "${line%% *}" -gt "${top%% *}" ]; then top=$line; fi
  done
  echo "$top"
}

printf '%-34s %10s %8s %8s %10s %8s %8s %7s\n' "tools/call echo ($calls calls)" "rein /s" "p50 ms" \
  "p99 ms" "peer /s" "p50 ms" "p99 ms" "ratio"
row() { # name rein-line peer-line
  read -r rc rm r9 <<<"$2"
  read -r pc pm p9 <<<"$3"
  printf '%-34s %10s %8s %8s %10s %8s %8s %7s\n' "$1" "$rc" "$rm" "$r9" "$pc" "$pm" "$p9" \
    "$(awk "BEGIN { printf \"%.2fx\", $rc / $pc }")"
}
row "stdio, sequential" \
  "$(best stdio "$build/rein mcp serve" echo '{"text":"hello"}' "$calls" 1)" \
  "$(best stdio "node $everything stdio" echo '{"message":"hello"}' "$calls" 1)"
row "Streamable HTTP, sequential" \
  "$(best http "http://127.0.0.1:$port_rein/mcp" echo '{"text":"hello"}' "$calls" 1)" \
  "$(best http "http://127.0.0.1:$port_peer/mcp" echo '{"message":"hello"}' "$calls" 1)"
row "Streamable HTTP, 8 in flight" \
  "$(best http "http://127.0.0.1:$port_rein/mcp" echo '{"text":"hello"}' "$calls" 8)" \
  "$(best http "http://127.0.0.1:$port_peer/mcp" echo '{"message":"hello"}' "$calls" 8)"
