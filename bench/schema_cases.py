#!/usr/bin/python3
"""Builds the benchmark's tool schemas and argument objects from the BFCL fixtures.

Each BFCL function's "parameters" becomes a JSON Schema (dict->object, float->number,
tuple->array, any->no type, as fixtures/SOURCES.md says). The possible_answer files give one
acceptable value per parameter: that makes a valid argument object. Perturbed copies (a
required argument dropped, an argument of the wrong type, an enum value replaced) make the
invalid ones. Output: a JSON array of {"name", "schema", "instances": [...], "texts": [...]}
(each instance's JSON text) on stdout.
"""
import copy
import json
import os
import sys

FILES = ["BFCL_v4_simple_python.json", "BFCL_v4_multiple.json", "BFCL_v4_parallel.json",
         "BFCL_v4_parallel_multiple.json", "BFCL_v4_live_simple.json",
         "BFCL_v4_live_parallel.json"]
TYPES = {"dict": "object", "float": "number", "tuple": "array"}


def fix(schema):
    if isinstance(schema, list):
        return [fix(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str):
            if value == "any":
                continue
            out[key] = TYPES.get(value, value)
        elif key in ("properties",) and isinstance(value, dict):
            out[key] = {k: fix(v) for k, v in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, (dict, list)):
            out[key] = fix(value)
        else:
            out[key] = value
    return out


def load(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def wrong(value):
    if isinstance(value, bool):
        return "yes"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return 42
    if isinstance(value, list):
        return {"items": value}
    return [value]


def main():
    base = os.path.join(os.environ.get("REIN_SHARED_DIR", "../shared"), "fixtures", "bfcl")
    cases = {}
    for name in FILES:
        answers = {}
        answer_path = os.path.join(base, "possible_answer", name)
        if os.path.exists(answer_path):
            answers = {row["id"]: row["ground_truth"] for row in load(answer_path)}
        for row in load(os.path.join(base, name)):
            functions = {f["name"]: f for f in row["function"]}
            for call in answers.get(row["id"], []):
                for fname, params in call.items():
                    if fname not in functions:
                        continue
                    schema = fix(functions[fname]["parameters"])
                    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
                    args = {}
                    for pname, options in params.items():
                        chosen = [o for o in options if o != ""]
                        if chosen:
                            args[pname] = chosen[0]
                    key = row["id"] + "/" + fname
                    instances = [args]
                    # One perturbed copy per schema, alternating between a missing required
                    # argument and an argument of the wrong type: about half are invalid.
                    required = [r for r in schema.get("required", []) if r in args]
                    if len(cases) % 2 and required:
                        bad = dict(args)
                        del bad[required[0]]
                        instances.append(bad)
                    elif args:
                        bad = copy.deepcopy(args)
                        pname = list(args)[len(cases) % len(args)]
                        bad[pname] = wrong(bad[pname])
                        instances.append(bad)
                    # Each argument object also as the text a model sends (OpenAI's spacing,
                    # characters unescaped), for the rows that time parsing too.
                    texts = [json.dumps(i, ensure_ascii=False) for i in instances]
                    cases[key] = {"name": key, "schema": schema, "instances": instances,
                                  "texts": texts}
    json.dump(list(cases.values()), sys.stdout)


if __name__ == "__main__":
    main()
