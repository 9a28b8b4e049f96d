#!/usr/bin/env python3
# test_input_required_result_elicitation: a skill for the MCP conformance suite (see ../README.md).
import json  # noqa: F401
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from ask_client import ask, ask_batch, fail, read_call, reply_text  # noqa: E402,F401

read_call()

answer = ask("elicitation/create", {"message": "What is your name?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}},
             "user_name")
if "error" in answer:
    fail(answer)
else:
    reply_text("Hello, %s!" % answer["result"].get("content", {}).get("name", "stranger"))
