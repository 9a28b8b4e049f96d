#!/bin/sh
# test_embedded_resource: a skill for the MCP conformance suite (see ../README.md).
cat >/dev/null
printf '%s\n' '{"content": [{"type": "resource", "resource": {"uri": "test://embedded-resource", "mimeType": "text/plain", "text": "This is an embedded resource content."}}]}'
