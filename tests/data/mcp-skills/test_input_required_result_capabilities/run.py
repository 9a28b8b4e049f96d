#!/usr/bin/env python3
# test_input_required_result_capabilities: a skill for the MCP conformance suite (see ../README.md).
import json  # noqa: F401
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from ask_client import ask, ask_batch, fail, read_call, reply_text  # noqa: E402,F401

read_call()

# Asks both; a client without one of the capabilities gets that question answered -32601 by
# rein, never sent.
answers = ask_batch([
    ("user_name", "elicitation/create",
     {"message": "What is your name?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}),
    ("greeting", "sampling/createMessage",
     {"messages": [{"role": "user", "content": {"type": "text", "text": "Generate a greeting"}}],
      "maxTokens": 50})])
parts = []
for key in ("user_name", "greeting"):
    a = answers[key]
    parts.append("%s: %s" % (key, "not asked (%s)" % a["error"]["message"] if "error" in a
                              else "answered"))
reply_text("; ".join(parts))
