#!/usr/bin/env bash
# The README's examples as a new user runs them: `rein serve` started the way `make run`
# starts it (no provider configured, so the rules provider answers), then every curl command
# of the README's serving sections, read from README.md itself, against it; then every
# `rein chat "…"` example that needs no model. Each must succeed, and the chat answers must be
# answers, not the "configure a model" text.
set -u
rein="${REIN_BIN:?REIN_BIN is not set}"
src="${REIN_SOURCE_DIR:?REIN_SOURCE_DIR is not set}"
command -v python3 >/dev/null || { echo "python3 is missing"; exit 77; }
command -v curl >/dev/null || { echo "curl is missing"; exit 77; }
. "$(dirname "$0")/lib.sh"

clean_env
work="$tmp/work"
mkdir -p "$work/docs"
echo "the calculator skill adds numbers" >"$work/docs/calculator.md"
printf '%s\n' "2026-11-25T10:00:01Z INFO service started" \
  "2026-11-25T10:00:02Z ERROR disk full" "2026-11-25T10:00:03Z WARN cache miss" >"$work/app.log"

# ---- make run: `rein serve` with its defaults (the port is free-chosen here) ----
(cd "$work" && exec "$rein" serve --port 0 --store "sqlite:$tmp/rein.db") >"$tmp/serve.out" \
  2>"$tmp/serve.err" &
pid=$!
port=""
for _ in $(seq 1 100); do
  port=$(sed -n 's/.*listening on http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$tmp/serve.out")
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || fail "rein serve printed no port: $(cat "$tmp/serve.out" "$tmp/serve.err")"
grep -q "provider rules" "$tmp/serve.out" || fail "not the rules provider: $(cat "$tmp/serve.out")"

# ---- the README's curl commands (continuation lines joined), pointed at this server ----
python3 - "$src/README.md" "$port" >"$tmp/curls" <<'EOF'
import re, shlex, sys
text = open(sys.argv[1]).read()
cmds, cur = [], ""
for block in re.findall(r"```sh\n(.*?)```", text, re.S):
    for line in block.splitlines():
        line = re.sub(r"\s+#.*$", "", line) if not cur else line
        if cur:
            cur += " " + line.strip()
        elif line.startswith("curl "):
            cur = line.strip()
        if cur and cur.endswith("\\"):
            cur = cur[:-1].strip()
            continue
        if cur:
            cur = re.sub(r"\s+#.*$", "", cur)
            cmds.append(cur.replace("localhost:8080", "127.0.0.1:" + sys.argv[2]))
            cur = ""
for c in cmds:
    print(c)
EOF
[ "$(wc -l <"$tmp/curls")" -ge 7 ] || fail "found only $(wc -l <"$tmp/curls") curl examples"
n=0
while IFS= read -r cmd; do
  n=$((n + 1))
  eval "$cmd --silent --show-error --fail --max-time 30" >"$tmp/curl$n" 2>"$tmp/curl$n.err" ||
    fail "README example failed: $cmd: $(cat "$tmp/curl$n.err" "$tmp/curl$n")"
  case "$cmd" in
  *healthz*) grep -q "ok" "$tmp/curl$n" || fail "healthz: $(cat "$tmp/curl$n")" ;;
  *skills/echo/invoke*) grep -q '"ok":true' "$tmp/curl$n" || fail "invoke: $(cat "$tmp/curl$n")" ;;
  *event-stream*) grep -q "hello" "$tmp/curl$n" || fail "SSE chat: $(cat "$tmp/curl$n")" ;;
  *agent/chat*)
    python3 - "$tmp/curl$n" <<'EOF' || fail "chat: $(cat "$tmp/curl$n")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["success"] and d["response"] == "hello", d
assert [c["tool"] for c in d["tool_calls"]] == ["echo"], d
EOF
    ;;
  esac
done <"$tmp/curls"

# ---- the README's `rein chat "…"` examples that need no model ----
python3 - "$src/README.md" >"$tmp/chats" <<'EOF'
import json, re, sys
for m in re.finditer(r'^rein chat "([^"]+)"(.*)$', open(sys.argv[1]).read(), re.M):
    if "--provider" not in m.group(2) and not m.group(1).startswith("…"):
        print(json.dumps(m.group(1), ensure_ascii=False))
EOF
[ "$(wc -l <"$tmp/chats")" -ge 3 ] || fail "found only $(wc -l <"$tmp/chats") chat examples"
while IFS= read -r quoted; do
  msg=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1]))' "$quoted")
  (cd "$work" && "$rein" chat "$msg" --json) >"$tmp/out" 2>"$tmp/err" ||
    fail "rein chat \"$msg\" exited $?: $(cat "$tmp/out" "$tmp/err")"
  check 'd["success"] and d["tool_calls"] and all(c["status"] == "success" for c in d["tool_calls"])'
  check '"REIN_PROVIDER" not in d["response"] and not d["response"].lstrip().startswith("{")'
done <"$tmp/chats"
echo "README examples: $n curl commands and $(wc -l <"$tmp/chats") chat requests passed"
