#!/usr/bin/env bash
# The official MCP conformance suite (npm @modelcontextprotocol/conformance, pinned in
# tests/mcp/package.json) against rein:
#   - every server scenario (--suite all: the 30 active ones and the 2 pending ones) against
#     `rein serve` at /mcp, serving tests/data/mcp-skills (the suite's test tools as ordinary
#     process skills);
#   - the client scenarios initialize, tools_call and sse-retry against rein's MCP client
#     (`rein mcp list` / `rein mcp call --url`).
# It prints the pass counts, and fails when a scenario that must pass does not, or when the
# scenarios that do not pass differ from the list (with reasons) in
# tests/scripts/mcp_conformance.NOT_PASSED.md.
#
# The suite's CLI needs Node 22: npm installs the node@22 package into tests/mcp/node_modules
# (git-ignored) on the first run, with the suite and the reference servers; later runs reuse
# it. Exit 77 (skip) when node/npm are missing or npm cannot install from its registry.
set -uo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
mcp_dir="$here/mcp"
build="${REIN_BUILD_DIR:-$here/../build-test}"
rein="${REIN_BIN:-$build/rein}"
not_passed_file="$here/scripts/mcp_conformance.NOT_PASSED.md"

if [ ! -x "$rein" ]; then
  echo "mcp_conformance: $rein is not built" >&2
  exit 1
fi

bash "$mcp_dir/install.sh"
case $? in
  0) ;;
  77) echo "mcp_conformance: the npm packages cannot be installed; skipping"; exit 77 ;;
  *) exit 1 ;;
esac
node22="$mcp_dir/node_modules/node/bin/node"
suite="$mcp_dir/node_modules/@modelcontextprotocol/conformance/dist/index.js"

work="$(mktemp -d)"
serve_pid=""
cleanup() {
  [ -n "$serve_pid" ] && kill -TERM "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# ---- server scenarios against rein serve ----
# test_reconnection sleeps 0.6 s; streams are closed after 0.3 s, so the client must resume.
REIN_SKILLS_PATH="$here/data/mcp-skills" REIN_MCP_SSE_CLOSE_MS=300 REIN_MCP_SSE_RETRY_MS=200 \
  "$rein" serve --port 0 --store "sqlite:$work/rein.db" >"$work/serve.out" 2>"$work/serve.err" &
serve_pid=$!
url=""
for _ in $(seq 1 100); do
  url="$(sed -n 's/^rein .* listening on \(http:[^ ]*\).*/\1/p' "$work/serve.out")"
  [ -n "$url" ] && break
  if ! kill -0 "$serve_pid" 2>/dev/null; then
    echo "mcp_conformance: rein serve exited before listening" >&2
    cat "$work/serve.err" >&2
    exit 1
  fi
  sleep 0.1
done
if [ -z "$url" ]; then
  echo "mcp_conformance: rein serve printed no address" >&2
  exit 1
fi
# The suite checks DNS rebinding protection with a localhost URL.
url="${url/127.0.0.1/localhost}/mcp"

(cd "$work" && timeout 300 "$node22" "$suite" server --url "$url" --suite all \
  -o "$work/server-results") >"$work/server.log" 2>&1
sed -n '/=== SUMMARY ===/,$p' "$work/server.log" | sed 's/\x1b\[[0-9;]*m//g' >"$work/server.summary"
if ! grep -q '^Total:' "$work/server.summary"; then
  echo "mcp_conformance: the server suite did not finish" >&2
  tail -40 "$work/server.log" >&2
  exit 1
fi

# rein serve must stop cleanly (under ASan a leak makes it exit non-zero).
kill -TERM "$serve_pid"
wait "$serve_pid"
serve_status=$?
serve_pid=""
if [ $serve_status -ne 0 ]; then
  echo "mcp_conformance: rein serve exited with $serve_status" >&2
  tail -40 "$work/serve.err" >&2
  exit 1
fi

# ---- client scenarios against rein's MCP client ----
client_cmd="bash $here/mcp/conformance_client.sh"
: >"$work/client.summary"
for scenario in initialize tools_call sse-retry; do
  (cd "$work" && REIN_BIN="$rein" timeout 120 "$node22" "$suite" client --command "$client_cmd" \
    --scenario "$scenario" --timeout 30000 -o "$work/client-results") >"$work/client-$scenario.log" 2>&1
  passed="$(sed 's/\x1b\[[0-9;]*m//g' "$work/client-$scenario.log" | sed -n 's/^Passed: \([0-9]*\)\/\([0-9]*\), \([0-9]*\) failed, \([0-9]*\) warnings.*/\1 \2 \3 \4/p' | tail -1)"
  read -r ok total failed warnings <<<"${passed:-0 0 1 0}"
  if [ "$failed" = 0 ] && [ "$warnings" = 0 ] && [ "$total" != 0 ]; then
    echo "✓ $scenario: $ok passed, 0 failed" >>"$work/client.summary"
  else
    echo "✗ $scenario: $ok passed, $failed failed, $warnings warnings" >>"$work/client.summary"
  fi
done

# ---- report ----
echo "MCP conformance, server scenarios (rein serve, --suite all):"
grep -E '^[✓✗] ' "$work/server.summary"
server_passed=$(grep -c '^✓ ' "$work/server.summary")
server_total=$(grep -cE '^[✓✗] ' "$work/server.summary")
echo "MCP conformance, client scenarios (rein's client):"
cat "$work/client.summary"
client_passed=$(grep -c '^✓ ' "$work/client.summary")
client_total=$(grep -cE '^[✓✗] ' "$work/client.summary")
echo "server scenarios passed: $server_passed of $server_total; client scenarios passed: $client_passed of $client_total"

# Every scenario that does not pass must be listed, with its reason, in NOT_PASSED.md, and
# nothing listed there may pass (the list stays true).
failing="$( (sed -n 's/^✗ \([^:]*\):.*/\1/p' "$work/server.summary" "$work/client.summary") | sort)"
listed="$(sed -n 's/^- `\([^`]*\)`.*/\1/p' "$not_passed_file" | sort)"
status=0
unexpected="$(comm -23 <(echo "$failing") <(echo "$listed") | sed '/^$/d')"
stale="$(comm -13 <(echo "$failing") <(echo "$listed") | sed '/^$/d')"
if [ -n "$unexpected" ]; then
  echo "mcp_conformance: these scenarios fail but must pass:" >&2
  echo "$unexpected" >&2
  for s in $unexpected; do
    grep -l "\"$s\"\|$s" "$work"/client-*.log 2>/dev/null | head -1 | xargs -r tail -30 >&2
  done
  grep -B2 -A30 "Running client scenario '\(${unexpected//$'\n'/\\|}\)'" "$work/server.log" | head -120 >&2
  status=1
fi
if [ -n "$stale" ]; then
  echo "mcp_conformance: these scenarios pass now; remove them from $not_passed_file:" >&2
  echo "$stale" >&2
  status=1
fi
exit $status
