#!/usr/bin/env bash
# Store URLs (issue 16 item 7) are sqlite:PATH or redis://...; anything else is refused with
# the forms named, and no file is made for it. Error prefixes name the module that failed: a
# port conflict is the server's ("server: cannot listen"), never the provider's.
set -u
rein="${REIN_BIN:?REIN_BIN is not set}"
command -v python3 >/dev/null || { echo "python3 is missing"; exit 77; }
. "$(dirname "$0")/lib.sh"

clean_env
run_dir="$tmp/work"
mkdir -p "$run_dir"

for url in bogus:x rein.db ./rein.db mysql://h/db "sqlite" "file:rein.db"; do
  run 2 "$rein" serve --port 0 --store "$url"
  grep -q "^rein: store: store URL \"$url\" is not one rein knows; use sqlite:PATH (e.g. sqlite:./rein.db) or redis://HOST:PORT\[/DB\]\$" "$tmp/err" ||
    fail "serve --store $url: $(cat "$tmp/err")"
  run 2 "$rein" chat --conversation c1 --store "$url" "echo hi"
  grep -q "is not one rein knows" "$tmp/err" || fail "chat --store $url: $(cat "$tmp/err")"
  run 2 env "REIN_STORE=$url" "$rein" chat --conversation c1 "echo hi"
  grep -q "is not one rein knows" "$tmp/err" || fail "REIN_STORE=$url: $(cat "$tmp/err")"
done
[ -z "$(ls -A "$run_dir")" ] || fail "a refused store URL left files: $(ls -A "$run_dir")"
run 2 "$rein" serve --port 0 --store "sqlite:"
[ -z "$(ls -A "$run_dir")" ] || fail "sqlite: left files: $(ls -A "$run_dir")"
# The forms that are known work.
run 0 "$rein" chat --conversation c1 --store "sqlite:$run_dir/chat.db" "echo hi"
[ -f "$run_dir/chat.db" ] || fail "sqlite:PATH made no database"

# ---- a port conflict is the server's ----
python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0)); s.listen(1)
print(s.getsockname()[1], flush=True)
time.sleep(60)' >"$tmp/port" &
pid=$!
for _ in $(seq 1 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
port=$(cat "$tmp/port")
run 1 "$rein" serve --port "$port" --store "sqlite:$tmp/s.db"
grep -q "^rein: server: cannot listen on 127.0.0.1:$port" "$tmp/err" || fail "port conflict: $(cat "$tmp/err")"
grep -q "providers" "$tmp/err" && fail "the port conflict blames the provider: $(cat "$tmp/err")"
exit 0
