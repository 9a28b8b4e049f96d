#!/usr/bin/env python3
# test_elicitation: a skill for the MCP conformance suite (see ../README.md).
import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from ask_client import ask, fail, read_call, reply_text  # noqa: E402

call = read_call()
answer = ask("elicitation/create", {
    "message": call["arguments"]["message"],
    "requestedSchema": {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"}},
        "required": ["username", "email"]}})
if "error" in answer:
    fail(answer)
else:
    result = answer["result"]
    reply_text("User response: action=%s, content=%s"
               % (result.get("action"), json.dumps(result.get("content", {}))))
