#!/usr/bin/env bash
# The official MCP conformance suite (npm @modelcontextprotocol/conformance, pinned in
# tests/mcp/package.json) against rein:
#   - every server scenario (--suite all: the 30 active ones and the 2 pending ones) against
#     `rein serve` at /mcp twice: stock (rein's own tools, resources and prompts, nothing
#     else) and with the suite's fixtures (tests/data/mcp-skills: the test tools as ordinary
#     process skills, the test prompts and resources as prompt templates and declared
#     resources), since many scenarios call a tool, prompt or resource by a fixed name;
#   - the scenarios the stateless revision 2026-07-28 requires (`--requirements 2026-07-28` of
#     the suite's next version, 0.2.0-alpha.12, installed as conformance-next), stock and with
#     the fixtures, the same way;
#   - the client scenarios against rein's MCP client (`rein mcp list` / `rein mcp call`,
#     tests/mcp/conformance_client.sh).
# It prints the pass counts, and fails when a scenario that must pass does not, or when the
# scenarios that do not pass differ from the lists (with reasons) in
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
# Every client scenario of 0.1.16 (auth/* through rein's OAuth client and a curl "browser").
client_scenarios="initialize tools_call elicitation-sep1034-client-defaults sse-retry
  auth/metadata-default auth/metadata-var1 auth/metadata-var2 auth/metadata-var3 auth/basic-cimd
  auth/scope-from-www-authenticate auth/scope-from-scopes-supported
  auth/scope-omitted-when-undefined auth/scope-step-up auth/scope-retry-limit
  auth/token-endpoint-auth-basic auth/token-endpoint-auth-post auth/token-endpoint-auth-none
  auth/pre-registration auth/2025-03-26-oauth-metadata-backcompat
  auth/2025-03-26-oauth-endpoint-fallback auth/resource-mismatch auth/offline-access-scope
  auth/offline-access-not-supported auth/client-credentials-jwt auth/client-credentials-basic
  auth/cross-app-access-complete-flow"

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
suite_next="$mcp_dir/node_modules/conformance-next/dist/index.js"

work="$(mktemp -d)"
serve_pid=""
cleanup() {
  [ -n "$serve_pid" ] && kill -TERM "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# server_suite NAME SKILLS_PATH SUITE ARGS...: the server scenarios of SUITE (with ARGS) against
# a fresh `rein serve` (with SKILLS_PATH as REIN_SKILLS_PATH, or none); writes
# $work/NAME.summary with the scored scenarios (a suite may list others it does not score).
server_suite() {
  local name=$1 skills=$2 js=$3 url="" status
  shift 3
  # test_reconnection sleeps 0.6 s; streams are closed after 0.3 s, so the client must resume.
  (
    unset REIN_SKILLS_PATH REIN_CONFIG REIN_MCP_CONFIG
    [ -n "$skills" ] && export REIN_SKILLS_PATH="$skills"
    cd "$work" && exec env REIN_MCP_SSE_CLOSE_MS=300 REIN_MCP_SSE_RETRY_MS=200 REIN_STATE_DIR="$work" \
      "$rein" serve --port 0 --store "sqlite:$work/$name.db"
  ) >"$work/$name.serve.out" 2>"$work/$name.serve.err" &
  serve_pid=$!
  for _ in $(seq 1 100); do
    url="$(sed -n 's/^rein .* listening on \(http:[^ ]*\).*/\1/p' "$work/$name.serve.out")"
    [ -n "$url" ] && break
    if ! kill -0 "$serve_pid" 2>/dev/null; then
      echo "mcp_conformance: rein serve ($name) exited before listening" >&2
      cat "$work/$name.serve.err" >&2
      exit 1
    fi
    sleep 0.1
  done
  if [ -z "$url" ]; then
    echo "mcp_conformance: rein serve ($name) printed no address" >&2
    exit 1
  fi
  # The suite checks DNS rebinding protection with a localhost URL.
  url="${url/127.0.0.1/localhost}/mcp"
  (cd "$work" && timeout 300 "$node22" "$js" server --url "$url" "$@" \
    -o "$work/$name-results") >"$work/$name.log" 2>&1
  sed 's/\x1b\[[0-9;]*m//g' "$work/$name.log" | sed -n '/=== SUMMARY ===/,/^Total:/p' \
    >"$work/$name.summary"
  # Scenarios the suite runs but does not score for the revision (extensions, pending ones).
  sed 's/\x1b\[[0-9;]*m//g' "$work/$name.log" | sed -n '/^Not scored/,$p' |
    sed -n 's/^ *[✓✗] \([^ ]*\) .*/\1/p' >"$work/$name.unscored"
  grep -v -F -f <(sed 's/.*/ &:/' "$work/$name.unscored") "$work/$name.summary" \
    >"$work/$name.scored" || true
  mv "$work/$name.scored" "$work/$name.summary"
  if ! grep -q '^Total:' "$work/$name.summary"; then
    echo "mcp_conformance: the server suite ($name) did not finish" >&2
    tail -40 "$work/$name.log" >&2
    exit 1
  fi
  # rein serve must stop cleanly (under ASan a leak makes it exit non-zero).
  kill -TERM "$serve_pid"
  wait "$serve_pid"
  status=$?
  serve_pid=""
  if [ $status -ne 0 ]; then
    echo "mcp_conformance: rein serve ($name) exited with $status" >&2
    tail -60 "$work/$name.serve.err" >&2
    exit 1
  fi
}

server_suite stock "" "$suite" --suite all
server_suite fixtures "$here/data/mcp-skills" "$suite" --suite all
server_suite stateless-stock "" "$suite_next" --requirements 2026-07-28
server_suite stateless-fixtures "$here/data/mcp-skills" "$suite_next" --requirements 2026-07-28

# ---- client scenarios against rein's MCP client ----
client_cmd="bash $here/mcp/conformance_client.sh"
: >"$work/client.summary"
for scenario in $client_scenarios; do
  (cd "$work" && REIN_BIN="$rein" timeout 120 "$node22" "$suite" client --command "$client_cmd" \
    --scenario "$scenario" --timeout 30000 -o "$work/client-results") >"$work/client-${scenario//\//_}.log" 2>&1
  passed="$(sed 's/\x1b\[[0-9;]*m//g' "$work/client-${scenario//\//_}.log" | sed -n 's/^Passed: \([0-9]*\)\/\([0-9]*\), \([0-9]*\) failed, \([0-9]*\) warnings.*/\1 \2 \3 \4/p' | tail -1)"
  read -r ok total failed warnings <<<"${passed:-0 0 1 0}"
  if [ "$failed" = 0 ] && [ "$warnings" = 0 ] && [ "$total" != 0 ]; then
    echo "✓ $scenario: $ok passed, 0 failed" >>"$work/client.summary"
  else
    echo "✗ $scenario: $ok passed, $failed failed, $warnings warnings" >>"$work/client.summary"
  fi
done

# ---- report ----
count() { grep -c "^$1 " "$2"; }
for name in stock fixtures stateless-stock stateless-fixtures; do
  echo "MCP conformance, server scenarios (rein serve, $name):"
  grep -E '^[✓✗] ' "$work/$name.summary"
done
echo "MCP conformance, client scenarios (rein's client):"
cat "$work/client.summary"
echo "server scenarios passed: $(count ✓ "$work/stock.summary") of" \
  "$(grep -cE '^[✓✗] ' "$work/stock.summary") stock, $(count ✓ "$work/fixtures.summary") of" \
  "$(grep -cE '^[✓✗] ' "$work/fixtures.summary") with the suite's fixtures;" \
  "2026-07-28: $(count ✓ "$work/stateless-stock.summary") of" \
  "$(grep -cE '^[✓✗] ' "$work/stateless-stock.summary") stock," \
  "$(count ✓ "$work/stateless-fixtures.summary") of" \
  "$(grep -cE '^[✓✗] ' "$work/stateless-fixtures.summary") with the fixtures;" \
  "client scenarios passed: $(count ✓ "$work/client.summary") of" \
  "$(grep -cE '^[✓✗] ' "$work/client.summary")"

# Every scenario that does not pass must be listed, with its reason, under its heading in
# NOT_PASSED.md, and nothing listed there may pass (the lists stay true).
listed() { # the names listed under the heading that starts with $1
  awk -v h="$1" '/^## / { on = index($0, h) == 1 } on' "$not_passed_file" |
    sed -n 's/^- `\([^`]*\)`.*/\1/p' | sort
}
status=0
check_list() { # SUMMARY HEADING
  local failing unexpected stale
  failing="$(sed -n 's/^✗ \([^:]*\):.*/\1/p' "$1" | sort)"
  unexpected="$(comm -23 <(echo "$failing") <(listed "$2") | sed '/^$/d')"
  stale="$(comm -13 <(echo "$failing") <(listed "$2") | sed '/^$/d')"
  if [ -n "$unexpected" ]; then
    echo "mcp_conformance: these scenarios fail ($2) but must pass:" >&2
    echo "$unexpected" >&2
    for s in $unexpected; do
      grep -l "$s" "$work"/client-*.log 2>/dev/null | head -1 | xargs -r tail -30 >&2
      grep -B2 -A30 "Running client scenario '$s'" "$work"/*.log 2>/dev/null | head -60 >&2
    done
    status=1
  fi
  if [ -n "$stale" ]; then
    echo "mcp_conformance: these scenarios pass now ($2); remove them from $not_passed_file:" >&2
    echo "$stale" >&2
    status=1
  fi
}
check_list "$work/stock.summary" "## Server scenarios, stock"
check_list "$work/fixtures.summary" "## Server scenarios, with the suite's fixtures"
check_list "$work/stateless-stock.summary" "## 2026-07-28 server scenarios, stock"
check_list "$work/stateless-fixtures.summary" "## 2026-07-28 server scenarios, with the fixtures"
check_list "$work/client.summary" "## Client scenarios"
exit $status
