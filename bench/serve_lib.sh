# bench/serve_lib.sh: what the benchmarks of `rein serve` share (sourced by server.sh,
# invoke.sh, turns.sh and conversations.sh; not run on its own).
#
# After sourcing: $tmp is a fresh folder removed on exit, and every process whose id is added
# to pids is stopped on exit. $bench_name names the sourcing script in messages.

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]+"${pids[@]}"}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]+"${pids[@]}"}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_http() { # URL: until it answers at all
  for _ in $(seq 1 200); do
    curl -s -o /dev/null "$1" && return 0
    sleep 0.05
  done
  echo "$bench_name: nothing answers at $1" >&2
  exit 1
}

# Starts the scripted model server (release build in $1) on the echo scenario: the model calls
# echo, the verifier approves the call (rein self-verifies echo), the model answers. Sets
# ms_url.
start_echo_model() {
  cat >"$tmp/scenario.json" <<'EOF'
{ "name": "echo-then-answer",
  "replies": [
    { "times": 0, "match": {"body_contains": "You review one tool call"}, "text": "YES" },
    { "times": 0, "match": {"last_role": "user"},
      "tool_calls": [{"name": "echo", "arguments": "{\"text\":\"hello\"}"}] },
    { "times": 0, "match": {"last_role": "tool"}, "text": "It said hello." } ] }
EOF
  : >"$tmp/ms_url" # before the server starts: the loop below reads it at once
  "$1/tests/bin/rein-model-server" --port 0 --scenario "$tmp/scenario.json" --log-limit 10 \
    >"$tmp/ms_url" &
  pids+=($!)
  ms_url=""
  for _ in $(seq 1 100); do
    ms_url=$(head -n 1 "$tmp/ms_url")
    [ -n "$ms_url" ] && return 0
    sleep 0.1
  done
  echo "$bench_name: the model server did not start" >&2
  exit 1
}

# Every server in names must answer POST /skills/echo/invoke at url[NAME] as rein does (exits
# naming the one that does not); then writes $1, a wrk script that POSTs that request. Sets
# body (the request's body).
check_echo_invoke() {
  local n got
  body='{"arguments":{"text":"hello"}}'
  for n in "${names[@]}"; do
    wait_http "${url[$n]}"
    got=$(curl -s -X POST -H 'Content-Type: application/json' -d "$body" "${url[$n]}")
    case "$got" in
      *'"ok":true'*'"output":"hello"'*) ;;
      *) echo "$bench_name: $n answered: $got" >&2; exit 1 ;;
    esac
  done
  cat >"$1" <<EOF
wrk.method = "POST"
wrk.body = '$body'
wrk.headers["Content-Type"] = "application/json"
EOF
}
