#!/usr/bin/env bash
# rein's MCP client under the conformance suite: `conformance client --command` runs this with
# the test server's URL as the last argument and the scenario in MCP_CONFORMANCE_SCENARIO.
# Each scenario is an ordinary rein command (REIN_BIN: the rein to test).
set -u
url="${!#}"
rein="${REIN_BIN:-rein}"
here="$(cd "$(dirname "$0")" && pwd)"

# auth/*: the server asks for OAuth. rein logs in through the browser flow, with
# oauth_browser.sh as the browser, keeping its token in a state folder of its own. What the
# scenario hands a pre-registered client (MCP_CONFORMANCE_CONTEXT: client_id, client_secret)
# goes into the server's "oauth" entry, as a user would configure it.
# One string of the scenario's context (MCP_CONFORMANCE_CONTEXT), read as JSON.
context_field() {
  "$here/node_modules/node/bin/node" -e \
    'process.stdout.write(String(JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || "{}")[process.argv[1]] ?? ""))' \
    "$1"
}

auth_call() {
  local state cfg id secret extra="" status
  state="$(mktemp -d)"
  cfg="$state/rein.json"
  id="$(printf '%s' "${MCP_CONFORMANCE_CONTEXT:-}" | sed -n 's/.*"client_id": *"\([^"]*\)".*/\1/p')"
  secret="$(printf '%s' "${MCP_CONFORMANCE_CONTEXT:-}" |
    sed -n 's/.*"client_secret": *"\([^"]*\)".*/\1/p')"
  [ -n "$id" ] && extra="$extra, \"client_id\": \"$id\""
  [ -n "$secret" ] && extra="$extra, \"client_secret\": \"$secret\""
  case "$MCP_CONFORMANCE_SCENARIO" in
    auth/client-credentials-jwt)
      # private_key_jwt (RFC 7523): the scenario's key goes into a file of its own, mode 0600.
      context_field private_key_pem >"$state/client-key.pem"
      chmod 600 "$state/client-key.pem"
      extra="$extra, \"grant\": \"client_credentials\""
      extra="$extra, \"token_endpoint_auth_method\": \"private_key_jwt\""
      extra="$extra, \"private_key_file\": \"$state/client-key.pem\""
      extra="$extra, \"signing_algorithm\": \"$(context_field signing_algorithm)\""
      ;;
    auth/client-credentials-*) extra="$extra, \"grant\": \"client_credentials\"" ;;
    auth/cross-app-access-*)
      # SEP-990: the user's ID token (from the enterprise IdP) in a file, as a sign-in helper
      # would keep it; rein exchanges it there for an ID-JAG.
      context_field idp_id_token >"$state/id-token"
      extra="$extra, \"grant\": \"id_jag\", \"id_token_file\": \"$state/id-token\""
      extra="$extra, \"idp_client_id\": \"$(context_field idp_client_id)\""
      extra="$extra, \"idp_token_endpoint\": \"$(context_field idp_token_endpoint)\""
      ;;
  esac
  cat >"$cfg" <<JSON
{"mcpServers": {"remote": {"url": "$url", "oauth": {
  "client_metadata_url": "https://conformance-test.local/client-metadata.json"$extra}}}}
JSON
  REIN_LOG=debug REIN_STATE_DIR="$state" REIN_MCP_OAUTH_OPEN="$here/oauth_browser.sh" \
    "$rein" mcp call --config "$cfg" --timeout 20s remote__test-tool '{}' 2>"$state/stderr"
  status=$?
  cat "$state/stderr" >&2
  # What rein must never do whatever the scenario: write a token anywhere but the token file
  # (the suite's tokens start test-token or cc-token), or leave that file readable by others.
  if grep -qE 'test-token|cc-token' "$state/stderr"; then
    echo "conformance_client: rein's log shows an access token" >&2
    status=3
  fi
  if [ -f "$state/mcp-oauth.json" ] && [ "$(stat -c %a "$state/mcp-oauth.json")" != 600 ]; then
    echo "conformance_client: the token file is not mode 0600" >&2
    status=3
  fi
  rm -rf "$state"
  return $status
}

case "${MCP_CONFORMANCE_SCENARIO:-}" in
  initialize) exec "$rein" mcp list --url "$url" ;;
  tools_call) exec "$rein" mcp call --url "$url" add_numbers '{"a": 2, "b": 3}' ;;
  sse-retry) exec "$rein" mcp call --url "$url" test_reconnection '{}' ;;
  # The server asks for input with a form whose fields all have defaults (SEP-1034).
  elicitation-sep1034-client-defaults)
    exec "$rein" mcp call --url "$url" --elicit defaults test_client_elicitation_defaults '{}' ;;
  auth/*) auth_call ;;
  *)
    echo "conformance_client: no rein command for scenario '${MCP_CONFORMANCE_SCENARIO:-}'" >&2
    exit 2
    ;;
esac
