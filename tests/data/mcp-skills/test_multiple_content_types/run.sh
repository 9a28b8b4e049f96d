#!/bin/sh
# test_multiple_content_types: a skill for the MCP conformance suite (see ../README.md).
cat >/dev/null
printf '%s\n' '{"content": [{"type": "text", "text": "Multiple content types test:"}, {"type": "image", "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC", "mimeType": "image/png"}, {"type": "resource", "resource": {"uri": "test://mixed-content-resource", "mimeType": "application/json", "text": "{\"test\":\"data\",\"value\":123}"}}]}'
