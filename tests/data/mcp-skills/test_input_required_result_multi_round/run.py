#!/usr/bin/env python3
# test_input_required_result_multi_round: a skill for the MCP conformance suite (see ../README.md).
import json  # noqa: F401
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from ask_client import ask, ask_batch, fail, read_call, reply_text  # noqa: E402,F401

read_call()

first = ask("elicitation/create", {
    "message": "Step 1: What is your name?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}, "step1")
if "error" in first:
    fail(first)
    sys.exit(0)
second = ask("elicitation/create", {
    "message": "Step 2: What is your favorite color?",
    "requestedSchema": {"type": "object", "properties": {"color": {"type": "string"}},
                        "required": ["color"]}}, "step2")
if "error" in second:
    fail(second)
else:
    reply_text("%s likes %s" % (first["result"].get("content", {}).get("name"),
                               second["result"].get("content", {}).get("color")))
