#!/usr/bin/env python3
# test_sampling: a skill for the MCP conformance suite (see ../README.md).
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from ask_client import ask, fail, read_call, reply_text  # noqa: E402

call = read_call()
answer = ask("sampling/createMessage", {
    "messages": [{"role": "user",
                  "content": {"type": "text", "text": call["arguments"]["prompt"]}}],
    "maxTokens": 100})
if "error" in answer:
    fail(answer)
else:
    reply_text("LLM response: " + answer["result"].get("content", {}).get("text", ""))
