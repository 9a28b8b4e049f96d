#!/usr/bin/env python3
# test_elicitation_sep1330_enums: a skill for the MCP conformance suite (see ../README.md).
import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from ask_client import ask, fail, read_call, reply_text  # noqa: E402

read_call()
options = ["option1", "option2", "option3"]
answer = ask("elicitation/create", {
    "message": "Please select options from the enum fields",
    "requestedSchema": {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "description": "Select one option",
                               "enum": options},
            "titledSingle": {"type": "string", "description": "Select one option with titles",
                             "oneOf": [{"const": "value1", "title": "First Option"},
                                       {"const": "value2", "title": "Second Option"},
                                       {"const": "value3", "title": "Third Option"}]},
            "legacyEnum": {"type": "string", "description": "Select one option (legacy)",
                           "enum": ["opt1", "opt2", "opt3"],
                           "enumNames": ["Option One", "Option Two", "Option Three"]},
            "untitledMulti": {"type": "array", "description": "Select multiple options",
                              "minItems": 1, "maxItems": 3,
                              "items": {"type": "string", "enum": options}},
            "titledMulti": {"type": "array", "description": "Select multiple options with titles",
                            "minItems": 1, "maxItems": 3,
                            "items": {"anyOf": [{"const": "value1", "title": "First Choice"},
                                                {"const": "value2", "title": "Second Choice"},
                                                {"const": "value3", "title": "Third Choice"}]}}},
        "required": []}})
if "error" in answer:
    fail(answer)
else:
    result = answer["result"]
    reply_text("Elicitation completed: action=%s, content=%s"
               % (result.get("action"), json.dumps(result.get("content", {}))))
