#!/usr/bin/env bash
# JSON Schema validation throughput: rein against ajv (npm, v8, compiled schemas), Python
# jsonschema (Debian python3-jsonschema) and Blaze (npm @sourcemeta/jsonschema, pinned in
# bench/package.json: the C++ validator of "Blaze: Compiling JSON Schema for 10x Faster
# Validation", through its CLI's --benchmark), in one run on the same cases.
#
# Cases: the tool schemas of the BFCL fixtures (shared/fixtures/bfcl, JSON Lines; dict->object,
# float->number, tuple->array, any->no type) with one valid argument object per schema built
# from possible_answer/ and one perturbed, invalid copy (a missing required argument or an
# argument of the wrong type). Every schema is compiled once; each validator then validates
# every object in a loop, timed in CPU time of its own process (so that, on a shared machine,
# time spent waiting for a core does not count). Two modes: "all errors" (every error with its
# message: what the call pipeline does) and "first error" (stop at the first). The
# valid/invalid counts printed by each validator must agree, which checks that they are doing
# the same work.
#
# Blaze is measured the way its CLI measures: parsing and compiling excluded, each instance
# validated LOOP (1000) times in a row, verdict only, the mean per instance summed; exhaustive
# mode against rein's all-errors mode, --fast against rein's first-error mode. rein runs the
# same looped measurement ("rein-loop"), in wall-clock time as Blaze does (Blaze also takes
# off the cost of reading the clock around each validation): first error verdict only and
# with messages; all errors counted (every error found, none written: what Blaze's exhaustive
# mode does when benchmarking) and with messages. A core taken away by another process counts
# against both. The rounds interleave all four validators; the tables give the range of the
# per-round figures and ratios with the load average.
#
# Then uniqueItems against Blaze on one array of 1,000, 10,000 and 100,000 distinct integers.
#
# Usage: bash bench/schema.sh [SECONDS per measurement, default 3] (about 18 x SECONDS, plus
# about a minute per round for Blaze's CLI and another for the uniqueItems arrays)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-3}
shared=${REIN_SHARED_DIR:-$(pwd)/../shared}
out=bench/out
mkdir -p "$out"
py=/usr/bin/python3 # the Debian interpreter, which has python3-jsonschema

if [ ! -d "$shared/fixtures/bfcl" ]; then
  echo "bench/schema.sh: $shared/fixtures/bfcl is missing" >&2
  exit 1
fi
if ! "$py" -c 'import jsonschema' 2>/dev/null || ! command -v node >/dev/null; then
  scripts/install-deps.sh --bench
fi
case "$(uname -m)" in
  x86_64) blaze_arch=linux-x86_64 ;;
  aarch64) blaze_arch=linux-arm64 ;;
  *) blaze_arch=unknown ;;
esac
blaze=bench/node_modules/@sourcemeta/jsonschema/build/github-releases/jsonschema-$blaze_arch
if [ ! -d bench/node_modules/ajv ] || [ ! -x "$blaze" ]; then
  (cd bench && npm install --no-audit --no-fund --silent)
fi
[ -x "$blaze" ] || { echo "bench/schema.sh: no Blaze binary for $(uname -m) at $blaze" >&2; exit 1; }
loop=${LOOP:-1000}

make --no-print-directory build >/dev/null
cc -O2 -Iinclude -Ibuild/include bench/schema_bench.c build/librein.a \
  $(pkg-config --libs jansson libpcre2-8 libcurl libmicrohttpd sqlite3 yaml-0.1) \
  $(pkg-config --libs hiredis 2>/dev/null || true) \
  $(pkg-config --libs libprotobuf-c 2>/dev/null || true) -lm -lpthread -o "$out/schema_bench"

REIN_SHARED_DIR="$shared" "$py" bench/schema_cases.py >"$out/schema_cases.json"
"$py" - "$out/schema_cases.json" <<'PY'
import json, sys
cases = json.load(open(sys.argv[1]))
print("cases: %d tool schemas, %d argument objects" % (len(cases), sum(len(c["instances"]) for c in cases)))
PY
echo "ajv $(node -p 'require("./bench/node_modules/ajv/package.json").version'), Blaze (@sourcemeta/jsonschema) $(node -p 'require("./bench/node_modules/@sourcemeta/jsonschema/package.json").version'), python-jsonschema $("$py" -c 'from importlib.metadata import version; print(version("jsonschema"))'), $secs s per measurement (best of 5 stretches)"

# The machine may be shared: the three take turns, three rounds, and each keeps its best.
: >"$out/schema_rein.txt"; : >"$out/schema_ajv.txt"; : >"$out/schema_py.txt"
: >"$out/schema_blaze.txt"; : >"$out/schema_load.txt"
for round in 1 2 3; do
  cut -d' ' -f1 /proc/loadavg >>"$out/schema_load.txt"
  "$out/schema_bench" "$out/schema_cases.json" "$secs" "$loop" | tee -a "$out/schema_rein.txt"
  "$py" bench/schema_blaze.py "$out/schema_cases.json" "$blaze" "$loop" |
    tee -a "$out/schema_blaze.txt"
  node bench/schema_ajv.js "$out/schema_cases.json" "$secs" | tee -a "$out/schema_ajv.txt"
  "$py" bench/schema_jsonschema.py "$out/schema_cases.json" "$secs" | tee -a "$out/schema_py.txt"
done

"$py" - "$out" <<'PY'
import re, sys
out = sys.argv[1]
def per_round(name, prefix, suffix=""):
    """{mode: [rate of round 1, round 2, ...]} of the lines of one validator."""
    r = {}
    for line in open("%s/schema_%s.txt" % (out, name)):
        m = re.match(r"%s (all errors|first error) *: ([\d.]+) validations/s.*%s" % (prefix, suffix),
                     line)
        if m:
            r.setdefault(m.group(1), []).append(float(m.group(2)))
    return r
rein, ajv, py = per_round("rein", "rein"), per_round("ajv", "ajv"), per_round("py", r"\S+")
loads = [line.strip() for line in open("%s/schema_load.txt" % out)]
ratio = lambda xs, ys: "%.2f-%.2fx" % (min(x / y for x, y in zip(xs, ys)),
                                       max(x / y for x, y in zip(xs, ys)))
print("validations/s, ranges over the rounds (load average at the start of each round: %s):"
      % ", ".join(loads))
for mode in ("all errors", "first error"):
    r, a, p = rein[mode], ajv[mode], py[mode]
    print("%-11s rein %.0f-%.0f/s  ajv %.0f-%.0f/s  python %.0f-%.0f/s   rein/ajv %s   "
          "rein/python %s" % (mode, min(r), max(r), min(a), max(a), min(p), max(p), ratio(r, a),
                              ratio(r, p)))
print("rein cycling through every schema, per round (ns per validation): " + "; ".join(
    "%s %s" % (mode, ", ".join("%.0f" % (1e9 / x) for x in rein[mode]))
    for mode in ("all errors", "first error")))
counts = {}
for name, prefix in (("rein", "rein"), ("blaze", "blaze")):
    for line in open("%s/schema_%s.txt" % (out, name)):
        m = re.match(r"%s (all errors|first error) *: [\d.]+ validations/s \(valid (\d+), invalid (\d+)"
                     % prefix, line)
        if m:
            counts.setdefault((name, m.group(2), m.group(3)), 0)
if len({(v, i) for _, v, i in counts}) != 1:
    sys.exit("schema.sh: rein and Blaze disagree on which instances are valid: %s" % sorted(counts))
blaze = per_round("blaze", "blaze")
looped = {what: per_round("rein", "rein-loop", what)
          for what in ("verdict only", "counted", "with messages")}
ns = lambda xs: "%.0f-%.0f" % (1e9 / max(xs), 1e9 / min(xs))
print("\nagainst Blaze, each instance looped, parsing excluded (ns per validation, ranges over "
      "rounds; ratio > 1: rein faster):")
for mode, bmode, quiet in (("first error", "--fast", "verdict only"),
                          ("all errors", "exhaustive", "counted")):
    b = blaze[mode]
    q, m = looped[quiet][mode], looped["with messages"][mode]
    print("%-11s Blaze %-10s %9s   rein %-12s %9s (%s)   rein with messages %9s (%s)"
          % (mode, bmode, ns(b), quiet, ns(q), ratio(q, b), ns(m), ratio(m, b)))
PY

# uniqueItems: rein hashes and sorts long arrays (linear up to the sort), Blaze compares every
# pair. One array of N distinct integers, validated LOOP=1 times by each, first-error mode.
echo
echo "uniqueItems, one array of N distinct integers (ms per validation, load $(cut -d' ' -f1 /proc/loadavg)):"
for n in 1000 10000 100000; do
  "$py" -c 'import json, sys
n = int(sys.argv[1])
json.dump([{"name": "unique", "schema": {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "array", "uniqueItems": True}, "instances": [list(range(n))]}], sys.stdout)' \
    "$n" >"$out/schema_unique.json"
  r=$("$out/schema_bench" "$out/schema_unique.json" 0 1 | sed -n 's/^rein-loop first error: \([0-9.]*\) .*verdict only.*/\1/p')
  b=$("$py" bench/schema_blaze.py "$out/schema_unique.json" "$blaze" 1 | sed -n 's/^blaze first error: \([0-9.]*\) .*/\1/p')
  "$py" -c 'import sys; n, r, b = sys.argv[1:]; print("%7s items: rein %9.2f ms   Blaze %9.2f ms" % (n, 1e3 / float(r), 1e3 / float(b)))' "$n" "$r" "$b"
done
