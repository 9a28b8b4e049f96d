#!/usr/bin/python3
"""The Python jsonschema side of bench/schema.sh: compiles every tool schema of the case file
once (Draft202012Validator, format as annotation) and validates every argument object in a
loop, once collecting every error and once stopping at the first, printing validations per
second. Usage: /usr/bin/python3 schema_jsonschema.py CASES.json SECONDS"""
import json
import sys
import time

import jsonschema


def run(cases, seconds, all_errors, label):
    compiled = [(jsonschema.Draft202012Validator(c["schema"]), c["instances"]) for c in cases]
    # The machine is shared: the best of five stretches is the least disturbed figure.
    best = 0
    for _ in range(5):
        rate, valid, invalid, errors = stretch(compiled, seconds / 5, all_errors)
        best = max(best, rate)
    print("python-jsonschema %s: %.0f validations/s (valid %d, invalid %d, %d errors reported)"
          % (label, best, valid, invalid, errors))


def stretch(compiled, seconds, all_errors):
    start = time.perf_counter()
    count = valid = invalid = errors = rounds = 0
    while time.perf_counter() - start < seconds or rounds == 0:
        for validator, instances in compiled:
            for inst in instances:
                if all_errors:
                    found = list(validator.iter_errors(inst))
                    ok = not found
                else:
                    ok = validator.is_valid(inst)
                    found = [] if ok else [1]
                count += 1
                if rounds == 0:
                    valid += ok
                    invalid += not ok
                    errors += len(found)
        rounds += 1
    secs = time.perf_counter() - start
    return count / secs, valid, invalid, errors


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        cases = json.load(f)
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
    run(cases, seconds, True, "all errors ")
    run(cases, seconds, False, "first error")


if __name__ == "__main__":
    main()
