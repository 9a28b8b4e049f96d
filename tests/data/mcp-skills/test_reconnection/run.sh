#!/bin/sh
# test_reconnection: a skill for the MCP conformance suite (see ../README.md).
cat >/dev/null
sleep ${TEST_RECONNECTION_SLEEP:-0.6}
printf '%s\n' '{"content": [{"type": "text", "text": "Reconnection test completed"}]}'
