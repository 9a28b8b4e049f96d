#!/bin/sh
# test_image_content: a skill for the MCP conformance suite (see ../README.md).
cat >/dev/null
printf '%s\n' '{"content": [{"type": "image", "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC", "mimeType": "image/png"}]}'
