#!/usr/bin/env python3
# A process skill: reads the call from stdin, prints one JSON result on stdout.
import json
import sys

call = json.load(sys.stdin)
text = call["arguments"]["text"]
print(json.dumps({"words": len(text.split()), "lines": len(text.splitlines()),
                  "characters": len(text)}))
