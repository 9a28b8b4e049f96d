#!/bin/sh
# test_error_handling: a skill for the MCP conformance suite (see ../README.md).
cat >/dev/null
printf '%s\n' '{"ok": false, "error": {"code": "execution_failed", "message": "This tool intentionally returns an error for testing"}}'
