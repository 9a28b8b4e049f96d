#!/bin/sh
# test_tool_with_progress: a skill for the MCP conformance suite (see ../README.md).
cat >/dev/null
progress() { printf '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":%s,"total":100}}\n' "$1" >&2; }
progress 0
sleep 0.05
progress 50
sleep 0.05
progress 100
printf '%s\n' '{"content": [{"type": "text", "text": "Tool with progress executed successfully"}]}'
