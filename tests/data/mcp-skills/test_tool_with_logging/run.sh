#!/bin/sh
# test_tool_with_logging: a skill for the MCP conformance suite (see ../README.md).
cat >/dev/null
log() { printf '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"test_tool_with_logging","data":"%s"}}\n' "$1" >&2; }
log 'Tool execution started'
sleep 0.05
log 'Tool processing data'
sleep 0.05
log 'Tool execution completed'
printf '%s\n' '{"content": [{"type": "text", "text": "Tool with logging executed successfully"}]}'
