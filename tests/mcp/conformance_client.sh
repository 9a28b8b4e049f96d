#!/usr/bin/env bash
# rein's MCP client under the conformance suite: `conformance client --command` runs this with
# the test server's URL as the last argument and the scenario in MCP_CONFORMANCE_SCENARIO.
# Each scenario is an ordinary rein command (REIN_BIN: the rein to test).
set -u
url="${!#}"
rein="${REIN_BIN:-rein}"
case "${MCP_CONFORMANCE_SCENARIO:-}" in
  initialize) exec "$rein" mcp list --url "$url" ;;
  tools_call) exec "$rein" mcp call --url "$url" add_numbers '{"a": 2, "b": 3}' ;;
  sse-retry) exec "$rein" mcp call --url "$url" test_reconnection '{}' ;;
  *)
    echo "conformance_client: no rein command for scenario '${MCP_CONFORMANCE_SCENARIO:-}'" >&2
    exit 2
    ;;
esac
