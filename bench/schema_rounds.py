#!/usr/bin/python3
"""The driver of bench/schema.sh: rein against ajv, Python jsonschema and Blaze, interleaved in
short turns so that every ratio compares figures taken under the same load.

    schema_rounds.py CASES.json REIN_BENCH BLAZE_BINARY ROUNDS SECONDS LOOP

rein (bench/schema_bench.c) and ajv (bench/schema_ajv.js) run as child processes that answer
commands on a pipe; python-jsonschema runs in this process (which is idle while it waits for a
child, and is timed in its own CPU time).

Cycling (what the call pipeline does: one validation of each argument object in turn, every
error's message and instance location read): per round and mode, TURNS stretches of SECONDS
of CPU time each, every validator and form taking turns; a validator's round figure is the
median of its stretches. Rates are validations per second of CPU time. The forms:
  tree   rein and ajv on values parsed beforehand (a jansson tree; ajv's JavaScript objects),
         Python likewise;
  doc    rein on its own document form (rein/doc.h) parsed beforehand, the form the call
         pipeline parses a model's arguments into; set against ajv's tree row, as ajv has one
         form;
  text   parsing included: rein parses each argument's JSON text into a document, validates
         and frees it (the pipeline's path); ajv runs JSON.parse and validates.

Against Blaze (the C++ validator of "Blaze: Compiling JSON Schema for 10x Faster Validation",
npm @sourcemeta/jsonschema): per case, the CLI runs `validate SCHEMA INSTANCES.jsonl
--benchmark --loop LOOP` once with --fast and once in its exhaustive mode, and rein validates
the same instances in the same loop shape (a clock read around every validation, the mean cost
of an empty clock-read pair subtracted, negatives counted as zero: schema_bench.c), right
between the two Blaze runs, one command per form and mode (each as long as a Blaze run, the
order turned around on every other case: a mode timed at the tail of one long command was
preempted more often on a busy machine, which showed as a systematic gap between forms); each side first runs the same loops once unmeasured, to warm up
(Blaze's file holds the instances twice, and the first copy does not count), the order turned around on every other case. Parsing and compiling
are excluded on both sides. A round's figure is the sum of the per-instance means over the
instances; Blaze only decides the verdict (its benchmark builds no output), so --fast is set
against rein's first-error verdict and the exhaustive mode against rein's all-errors count;
rein with its messages is shown against both, for trees and for documents. Blaze's CLI times
evaluation only, so there is no parsing row against it. The valid/invalid counts must agree.

The load average is printed with every round; the summary gives each ratio's range and median
over the rounds.
"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import jsonschema

TURNS = 3
BLAZE_LINE = re.compile(r"\[(\d+)\]: (PASS|FAIL) ([\d.]+) \+- [\d.]+ us \(([\d.]+)\)")


def load():
    return open("/proc/loadavg").read().split()[0]


class Child:
    """A validator answering one line per command line."""

    def __init__(self, args):
        self.p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        ready = self.p.stdout.readline()
        if not ready.startswith("ready"):
            sys.exit("schema_rounds.py: %s did not start" % args[0])

    def ask(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        answer = self.p.stdout.readline()
        if not answer:
            sys.exit("schema_rounds.py: a validator exited on %r" % line)
        return answer.split()

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def py_stretch(compiled, seconds, all_errors):
    start = time.process_time()
    count = valid = invalid = errors = rounds = sink = 0
    while time.process_time() - start < seconds or rounds == 0:
        for validator, instances in compiled:
            for inst in instances:
                if all_errors:
                    found = list(validator.iter_errors(inst))
                else:
                    first = next(validator.iter_errors(inst), None)
                    found = [first] if first is not None else []
                for e in found:
                    sink += len(e.message) + len(e.json_path)
                count += 1
                if rounds == 0:
                    valid += not found
                    invalid += bool(found)
                    errors += len(found)
        rounds += 1
    return [count / (time.process_time() - start), valid, invalid, errors]


def blaze_case(binary, schema, instances, n, loop, fast, tmp):
    """Sum of Blaze's per-instance means (ns), valid, invalid. The file holds the instances
    twice and only the second copy counts: each run is a new process, whose first loops would
    otherwise pay for its cold caches (rein's process is warm and warms up likewise)."""
    total, valid, invalid, start = 0.0, 0, 0, 0
    # An older CLI stops at the first failing instance of a JSON Lines file: go on after it.
    while start < 2 * n:
        path = instances
        if start:
            path = os.path.join(tmp, "rest.jsonl")
            with open(instances) as f, open(path, "w") as out:
                out.writelines(f.readlines()[start:])
        args = [binary, "validate", schema, path, "--benchmark", "--loop", str(loop)]
        if fast:
            args.append("--fast")
        out = subprocess.run(args, capture_output=True, text=True).stdout
        seen = 0
        for m in BLAZE_LINE.finditer(out):
            seen += 1
            if start + seen <= n:
                continue  # the warm-up copy
            total += float(m.group(3)) * 1000
            valid += m.group(2) == "PASS"
            invalid += m.group(2) == "FAIL"
        if not seen:
            sys.exit("schema_rounds.py: %s: Blaze reported no instance:\n%s" % (schema, out))
        start += seen
    return total, valid, invalid


def blaze_round(cases, rein, binary, loop, tmp):
    """{figure: ns per validation} of one round, and the verdict counts of each side."""
    rkeys = ("verdict", "counted", "first msg", "all msg")
    rkeys = rkeys + tuple("doc " + k for k in rkeys)
    sums = dict.fromkeys(("fast", "exhaustive") + rkeys, 0.0)
    counts = {"blaze fast": [0, 0], "blaze exhaustive": [0, 0], "rein": [0, 0]}
    count = 0
    for i, case in enumerate(cases):
        schema = os.path.join(tmp, "s%d.json" % i)
        insts = os.path.join(tmp, "i%d.jsonl" % i)
        n = len(case["instances"])
        order = (True, None, False) if i % 2 == 0 else (False, None, True)
        turns = [(pre, key) for pre in ("", "doc ") for key in ("verdict", "counted", "first msg",
                                                                 "all msg")]
        for fast in order:
            if fast is None:
                for pre, key in turns if i % 2 == 0 else reversed(turns):
                    got = rein.ask("loop %d %d %s %s" % (i, loop, "doc" if pre else "tree",
                                                        key.split()[0]))
                    sums[pre + key] += float(got[0])
                ok, bad = got[1:3]
                counts["rein"][0] += int(ok)
                counts["rein"][1] += int(bad)
            else:
                total, ok, bad = blaze_case(binary, schema, insts, n, loop, fast, tmp)
                key = "fast" if fast else "exhaustive"
                sums[key] += total
                counts["blaze " + key][0] += ok
                counts["blaze " + key][1] += bad
        count += n
    if len({tuple(v) for v in counts.values()}) != 1:
        sys.exit("schema_rounds.py: rein and Blaze disagree on which instances are valid: %s"
                 % counts)
    return {k: v / count for k, v in sums.items()}, counts["rein"]


CYCLERS = (("rein", "tree"), ("ajv", "tree"), ("rein", "doc"), ("python", "tree"),
           ("rein", "text"), ("ajv", "text"))


def cycling_round(rein, ajv, compiled_py, seconds):
    """{(validator, form, mode): median rate} of one round, and the counts of each."""
    rates, counts = {}, {}
    for mode in ("all", "first"):
        for _ in range(TURNS):
            for name, form in CYCLERS:
                if name == "python":
                    got = py_stretch(compiled_py, seconds, mode == "all")
                else:
                    got = (rein if name == "rein" else ajv).ask(
                        "cycle %s %g %s" % (mode, seconds, form))
                rates.setdefault((name, form, mode), []).append(float(got[0]))
                counts[(name, form, mode)] = tuple(int(x) for x in got[1:3])
    for mode in ("all", "first"):
        if len({counts[(name, form, mode)] for name, form in CYCLERS}) != 1:
            sys.exit("schema_rounds.py: the validators disagree on which instances are valid: %s"
                     % counts)
    return {k: statistics.median(v) for k, v in rates.items()}


def span(xs, fmt="%.2f"):
    return (fmt + "-" + fmt + " (median " + fmt + ")") % (min(xs), max(xs), statistics.median(xs))


def main():
    cases_path, rein_bin, blaze_bin = sys.argv[1:4]
    rounds, seconds, loop = int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
    with open(cases_path, encoding="utf-8") as f:
        cases = json.load(f)
    compiled_py = [(jsonschema.Draft202012Validator(c["schema"]), c["instances"]) for c in cases]
    rein = Child([rein_bin, cases_path])
    ajv = Child(["node", os.path.join(os.path.dirname(__file__), "schema_ajv.js"), cases_path])
    cyc, blz, loads = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i, case in enumerate(cases):
            with open(os.path.join(tmp, "s%d.json" % i), "w") as f:
                json.dump(case["schema"], f)
            with open(os.path.join(tmp, "i%d.jsonl" % i), "w") as f:
                f.writelines(json.dumps(inst) + "\n" for inst in case["instances"] * 2)
        for r in range(rounds):
            loads.append(load())
            c = cycling_round(rein, ajv, compiled_py, seconds)
            b, (ok, bad) = blaze_round(cases, rein, blaze_bin, loop, tmp)
            cyc.append(c)
            blz.append(b)
            print("round %d (load %s at its start, %s at its end): valid %d, invalid %d"
                  % (r + 1, loads[-1], load(), ok, bad))
            for mode in ("all", "first"):
                print("  cycling, %s, validations/s: rein tree %.0f, document %.0f, text %.0f; "
                      "ajv %.0f, text %.0f; python %.0f" % (
                          "all errors" if mode == "all" else "first error",
                          c[("rein", "tree", mode)], c[("rein", "doc", mode)],
                          c[("rein", "text", mode)], c[("ajv", "tree", mode)],
                          c[("ajv", "text", mode)], c[("python", "tree", mode)]))
            for pre, label in (("", "tree"), ("doc ", "document")):
                print("  looped, ns per validation: Blaze --fast %.1f, exhaustive %.1f; rein (%s) "
                      "first error verdict %.1f, all errors counted %.1f, with messages first "
                      "%.1f, all %.1f" % (b["fast"], b["exhaustive"], label, b[pre + "verdict"],
                                          b[pre + "counted"], b[pre + "first msg"],
                                          b[pre + "all msg"]), flush=True)
    rein.close()
    ajv.close()

    print("\nload average at the start of each round: %s" % ", ".join(loads))
    print("cycling through every schema, each error's message read (ratio > 1: rein faster):")
    for mode in ("all", "first"):
        label = "all errors, with messages" if mode == "all" else "first error, with message"
        print("  %s:" % label)
        for what, rf, af in (("rein tree / ajv", "tree", "tree"),
                             ("rein document / ajv", "doc", "tree"),
                             ("parsing included, rein text / ajv text", "text", "text")):
            print("    %-40s %s" % (what, span([c[("rein", rf, mode)] / c[("ajv", af, mode)]
                                              for c in cyc])))
        print("    %-40s %s" % ("rein tree / python", span(
            [c[("rein", "tree", mode)] / c[("python", "tree", mode)] for c in cyc], "%.1f")))
    print("against Blaze, each instance looped in Blaze's loop shape, parsing excluded "
          "(ns per validation; ratio = Blaze ns / rein ns, > 1: rein faster):")
    for pre, form in (("", "tree"), ("doc ", "document")):
        for label, bkey, rkey in (("first error, verdict only", "fast", "verdict"),
                                  ("first error, with messages", "fast", "first msg"),
                                  ("all errors, counted", "exhaustive", "counted"),
                                  ("all errors, with messages", "exhaustive", "all msg")):
            print("  %-8s %-27s Blaze %-10s %s ns   rein %s ns   ratio %s" % (
                form, label, "--fast" if bkey == "fast" else "exhaustive",
                span([b[bkey] for b in blz], "%.1f"), span([b[pre + rkey] for b in blz], "%.1f"),
                span([b[bkey] / b[pre + rkey] for b in blz])))


if __name__ == "__main__":
    main()
