#!/usr/bin/env python3
# test_elicitation_sep1034_defaults: a skill for the MCP conformance suite (see ../README.md).
import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from ask_client import ask, fail, read_call, reply_text  # noqa: E402

read_call()
answer = ask("elicitation/create", {
    "message": "Please review and update the form fields with defaults",
    "requestedSchema": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {"type": "string", "description": "User status",
                       "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "description": "Verification status",
                         "default": True}}}})
if "error" in answer:
    fail(answer)
else:
    result = answer["result"]
    reply_text("Elicitation completed: action=%s, content=%s"
               % (result.get("action"), json.dumps(result.get("content", {}))))
