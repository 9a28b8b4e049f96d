# Helpers the shell tests source (`. "$(dirname "$0")/lib.sh"`); not a test itself
# (tests/CMakeLists.txt leaves it out of the script tests). Sourcing it makes the temporary
# folder $tmp, removed on exit together with the server whose process id the script puts in
# $pid. With $run_dir set, run() runs commands there with stdin from /dev/null.

tmp=$(mktemp -d)
pid=""
spid=""
cleanup() {
  [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  [ -n "$spid" ] && kill -TERM "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

# No provider, store or skills from the environment of whoever runs the tests.
clean_env() {
  unset REIN_PROVIDER REIN_MODEL REIN_BASE_URL REIN_REPLAY REIN_CONFIG REIN_STORE REIN_SKILLS_PATH
  unset OPENAI_API_KEY ANTHROPIC_API_KEY DASHSCOPE_API_KEY REIN_API_KEY
}

fail() { echo "FAIL: $*" >&2; exit 1; }

# run STATUS CMD...: runs CMD, stdout to $tmp/out, stderr to $tmp/err, checks the status.
run() {
  local want=$1 got
  shift
  if [ -n "${run_dir:-}" ]; then
    (cd "$run_dir" && "$@") </dev/null >"$tmp/out" 2>"$tmp/err"
  else
    "$@" >"$tmp/out" 2>"$tmp/err"
  fi
  got=$?
  if [ "$got" -ne "$want" ]; then
    cat "$tmp/out" "$tmp/err" >&2
    fail "'$*' exited $got, want $want"
  fi
}

# check PYTHON-EXPRESSION: evaluated with d = the JSON in $tmp/out.
check() {
  python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
if not eval(sys.argv[2]):
    sys.exit("not true: " + sys.argv[2] + "\n" + json.dumps(d, ensure_ascii=False, indent=1)[:6000])' \
    "$tmp/out" "$1" || fail "check: $1"
}

# start_serve ARGS...: starts `$rein serve --port 0 ARGS...` in the background; sets $spid
# (stopped on exit; stop_serve stops it and checks that it exited 0) and $surl (its base URL).
start_serve() {
  "$rein" serve --port 0 "$@" >"$tmp/serve.out" 2>"$tmp/serve.err" &
  spid=$!
  surl=""
  for _ in $(seq 1 300); do
    surl=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$tmp/serve.out")
    [ -n "$surl" ] && return 0
    sleep 0.1
  done
  fail "rein serve did not start: $(cat "$tmp/serve.err")"
}
stop_serve() {
  kill -TERM "$spid"
  wait "$spid" || fail "rein serve did not stop cleanly: $(cat "$tmp/serve.err")"
  spid=""
}

# start_model_server: starts $server (rein-model-server) on a free port in the background;
# sets $pid (killed on exit) and $url (where it listens).
start_model_server() {
  "$server" --port 0 >"$tmp/url" &
  pid=$!
  url=""
  for _ in $(seq 1 100); do
    url="$(head -n 1 "$tmp/url")"
    [ -n "$url" ] && break
    sleep 0.1
  done
  [ -n "$url" ] || fail "rein-model-server printed no URL"
}

# model_script JSON: the replies the running rein-model-server ($url) gives next (its
# /__script body, as the README section "Testing against a scripted model server" describes).
model_script() {
  python3 -c 'import sys, urllib.request
urllib.request.urlopen(urllib.request.Request(sys.argv[1] + "/__script", data=sys.argv[2].encode(), method="POST")).read()' "$url" "$1"
}
