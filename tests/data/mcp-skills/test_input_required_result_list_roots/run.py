#!/usr/bin/env python3
# test_input_required_result_list_roots: a skill for the MCP conformance suite (see ../README.md).
import json  # noqa: F401
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from ask_client import ask, ask_batch, fail, read_call, reply_text  # noqa: E402,F401

read_call()

answer = ask("roots/list", {}, "client_roots")
if "error" in answer:
    fail(answer)
else:
    roots = answer["result"].get("roots", [])
    reply_text("Roots: " + ", ".join(r.get("uri", "") for r in roots))
