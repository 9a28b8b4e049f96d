#!/bin/sh
# test_simple_text: a skill for the MCP conformance suite (see ../README.md).
cat >/dev/null
printf '%s\n' '{"content": [{"type": "text", "text": "This is a simple text response for testing."}]}'
