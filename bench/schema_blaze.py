#!/usr/bin/env python3
"""The Blaze side of bench/schema.sh: the C++ validator of "Blaze: Compiling JSON Schema for 10x
Faster Validation", through its CLI (npm @sourcemeta/jsonschema, a native binary).

    schema_blaze.py CASES.json BINARY LOOP

For every case the schema goes to a file and its argument objects to a JSON Lines file, and
`BINARY validate SCHEMA INSTANCES.jsonl --benchmark --loop LOOP` runs once in Blaze's
exhaustive mode and once with --fast. The CLI parses and compiles once, then times LOOP
validations of each instance (verdict only: no error output is built), subtracts the cost of
reading the clock and prints the mean per instance. The figure here is the number of
instances over the sum of those means: validations per second of a loop that repeats one
instance, parsing and compiling excluded. The PASS/FAIL counts must agree with rein's.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

LINE = re.compile(r"\[(\d+)\]: (PASS|FAIL) ([\d.]+) \+- [\d.]+ us \(([\d.]+)\)")


def run(binary, cases, loop, fast, tmp):
    total_us, valid, invalid = 0.0, 0, 0
    for i, case in enumerate(cases):
        schema = os.path.join(tmp, "s%d.json" % i)
        with open(schema, "w") as f:
            json.dump(case["schema"], f)
        # The CLI stops at the first instance of a JSON Lines file that fails: go on from the
        # next one.
        start = 0
        while start < len(case["instances"]):
            insts = os.path.join(tmp, "i%d_%d.jsonl" % (i, start))
            with open(insts, "w") as f:
                for inst in case["instances"][start:]:
                    f.write(json.dumps(inst) + "\n")
            args = [binary, "validate", schema, insts, "--benchmark", "--loop", str(loop)]
            if fast:
                args.append("--fast")
            out = subprocess.run(args, capture_output=True, text=True).stdout
            seen = 0
            for m in LINE.finditer(out):
                seen += 1
                total_us += float(m.group(3))
                if m.group(2) == "PASS":
                    valid += 1
                else:
                    invalid += 1
            if seen == 0:
                sys.exit("schema_blaze.py: %s: no instance reported:\n%s" % (case["name"], out))
            start += seen
    return (valid + invalid) / (total_us / 1e6), valid, invalid


def main():
    cases_path, binary, loop = sys.argv[1], sys.argv[2], int(sys.argv[3])
    cases = json.load(open(cases_path))
    with tempfile.TemporaryDirectory() as tmp:
        for label, fast in (("all errors ", False), ("first error", True)):
            rate, valid, invalid = run(binary, cases, loop, fast, tmp)
            mode = "fast" if fast else "exhaustive"
            print("blaze %s: %.3f validations/s (valid %d, invalid %d, %s, verdict only)"
                  % (label, rate, valid, invalid, mode), flush=True)


if __name__ == "__main__":
    main()
