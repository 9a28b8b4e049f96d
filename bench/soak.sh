#!/usr/bin/env bash
# bench/soak.sh: a soak test of `rein serve` (release build), not run in CI.
#
# DURATION seconds (default 600) of mixed load against one server (bench/soak.py): invoke,
# chat with tool calls (the scripted model server calls echo, then answers), SSE chat, MCP
# tools/call, slowloris clients, malformed requests and regex bombs, all at once. Every
# INTERVAL seconds (default 30) a row: requests/errors per kind, p99 latency of invoke and
# chat, the worst invoke latency in the interval, the server's RSS (MB) and open descriptors.
# What to look for: RSS and fds flat after warm-up, zero errors, and the worst invoke latency
# below the configured deadlines (no worker starved: regex bombs end at PCRE2's limit, slow
# clients are cut by the header timeout, given here as --header-timeout-ms 2000).
#
#   bench/soak.sh                     DURATION=60 INTERVAL=10 bench/soak.sh
# Needs: cmake, cc, python3, curl. Traffic stays on 127.0.0.1 and stops by itself.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build-bench}
duration=${DURATION:-600}
interval=${INTERVAL:-30}

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

cat >"$tmp/scenario.json" <<'JSON'
{ "name": "echo-then-answer",
  "replies": [
    { "times": 0, "match": {"body_contains": "You review one tool call"}, "text": "YES" },
    { "times": 0, "match": {"last_role": "user"},
      "tool_calls": [{"name": "echo", "arguments": "{\"text\":\"hello\"}"}] },
    { "times": 0, "match": {"last_role": "tool"}, "text": "It said hello." } ] }
JSON
"$build/tests/bin/rein-model-server" --port 0 --scenario "$tmp/scenario.json" --log-limit 10 \
  >"$tmp/ms_url" &
pids+=($!)
ms_url=""
for _ in $(seq 1 100); do
  ms_url=$(head -n 1 "$tmp/ms_url")
  [ -n "$ms_url" ] && break
  sleep 0.1
done
[ -n "$ms_url" ] || { echo "soak.sh: the model server did not start" >&2; exit 1; }

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$tmp/root"
REIN_LOG=error "$build/rein" serve --port "$port" --store "sqlite:$tmp/rein.db" \
  --provider openai-compatible --base-url "$ms_url/v1" --model soak-model --root "$tmp/root" \
  --header-timeout-ms 2000 >"$tmp/rein.out" 2>"$tmp/rein.err" &
rein_pid=$!
pids+=("$rein_pid")
for _ in $(seq 1 200); do
  curl -s -o /dev/null "http://127.0.0.1:$port/healthz" && break
  sleep 0.05
done
echo "soak: rein serve pid $rein_pid on port $port, ${duration}s, load average $(cut -d' ' -f1-3 /proc/loadavg)"
python3 bench/soak.py "http://127.0.0.1:$port" "$rein_pid" "$duration" "$interval"
echo "soak: load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
kill -0 "$rein_pid" || { echo "soak: rein serve died" >&2; tail -20 "$tmp/rein.err" >&2; exit 1; }
