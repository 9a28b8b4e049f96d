#!/usr/bin/env python3
# test_input_required_result_multiple_inputs: a skill for the MCP conformance suite (see ../README.md).
import json  # noqa: F401
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from ask_client import ask, ask_batch, fail, read_call, reply_text  # noqa: E402,F401

read_call()

answers = ask_batch([
    ("user_name", "elicitation/create",
     {"message": "What is your name?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}),
    ("greeting", "sampling/createMessage",
     {"messages": [{"role": "user", "content": {"type": "text", "text": "Generate a greeting"}}],
      "maxTokens": 50}),
    ("client_roots", "roots/list", {})])
failed = [a for a in answers.values() if "error" in a]
if failed:
    fail(failed[0])
else:
    reply_text("%s, %s (%d roots)" % (
        answers["greeting"]["result"].get("content", {}).get("text"),
        answers["user_name"]["result"].get("content", {}).get("name"),
        len(answers["client_roots"]["result"].get("roots", []))))
