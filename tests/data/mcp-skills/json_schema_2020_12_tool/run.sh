#!/bin/sh
# json_schema_2020_12_tool: a skill for the MCP conformance suite (see ../README.md).
cat >/dev/null
printf '%s\n' '{"content": [{"type": "text", "text": "JSON Schema 2020-12 tool called"}]}'
