#!/usr/bin/env python3
# test_input_required_result_request_state (and _tampered_state, whose manifest runs this):
# skills for the MCP conformance suite (see ../README.md).
import json  # noqa: F401
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from ask_client import ask, ask_batch, fail, read_call, reply_text  # noqa: E402,F401

read_call()

answer = ask("elicitation/create", {
    "message": "Please confirm",
    "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}},
                        "required": ["ok"]}}, "confirm")
if "error" in answer:
    fail(answer)
else:
    # rein checked the requestState's signature before this round ran.
    reply_text("state-ok: confirmed=%s" % answer["result"].get("content", {}).get("ok"))
