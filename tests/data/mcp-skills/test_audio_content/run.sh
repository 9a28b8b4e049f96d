#!/bin/sh
# test_audio_content: a skill for the MCP conformance suite (see ../README.md).
cat >/dev/null
printf '%s\n' '{"content": [{"type": "audio", "data": "UklGRjQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YRAAAAAAAAAAAAAAAAAAAAAAAAAA", "mimeType": "audio/wav"}]}'
