#!/usr/bin/env bash
# JSON Schema validation throughput: rein against ajv (npm, v8, compiled schemas), Python
# jsonschema (Debian python3-jsonschema) and Blaze (npm @sourcemeta/jsonschema, pinned in
# bench/package.json: the C++ validator of "Blaze: Compiling JSON Schema for 10x Faster
# Validation", through its CLI's --benchmark), interleaved on the same cases.
#
# Cases: the tool schemas of the BFCL fixtures (shared/fixtures/bfcl, JSON Lines; dict->object,
# float->number, tuple->array, any->no type) with one valid argument object per schema built
# from possible_answer/ and one perturbed, invalid copy (a missing required argument or an
# argument of the wrong type). Every schema is compiled once. bench/schema_rounds.py drives the
# rounds (how each figure is taken is described there): per round, rein, ajv and Python take
# turns cycling through every argument object (every error's message read; CPU time of each
# process), rein on pre-parsed jansson trees and on its own document form, and, parsing
# included, rein and ajv from each argument's JSON text (rein: text -> document -> validate,
# what the call pipeline does; ajv: JSON.parse -> validate); then, case by case, rein (trees
# and documents) runs between Blaze's --fast and exhaustive runs on the same instances in
# Blaze's loop shape (a clock read around every validation; Blaze's CLI times evaluation
# only, so no parsing row against it). Every round prints its load average; the summary gives
# ranges and medians over the rounds.
#
# Then uniqueItems against Blaze on one array of 1,000, 10,000 and 100,000 distinct integers.
#
# Usage: bash bench/schema.sh [SECONDS per stretch, default 0.5] [ROUNDS, default 3]
# (LOOP=1000 validations of each instance against Blaze; a round takes one to two minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-0.5}
rounds=${2:-3}
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
. bench/common.sh
bench_cc bench/schema_bench.c . build "$out/schema_bench"

REIN_SHARED_DIR="$shared" "$py" bench/schema_cases.py >"$out/schema_cases.json"
"$py" - "$out/schema_cases.json" <<'PY'
import json, sys
cases = json.load(open(sys.argv[1]))
print("cases: %d tool schemas, %d argument objects" % (len(cases), sum(len(c["instances"]) for c in cases)))
PY
echo "ajv $(node -p 'require("./bench/node_modules/ajv/package.json").version'), Blaze (@sourcemeta/jsonschema) $(node -p 'require("./bench/node_modules/@sourcemeta/jsonschema/package.json").version'), python-jsonschema $("$py" -c 'from importlib.metadata import version; print(version("jsonschema"))'), $rounds rounds, stretches of $secs s, LOOP $loop"
"$py" bench/schema_rounds.py "$out/schema_cases.json" "$out/schema_bench" "$blaze" "$rounds" \
  "$secs" "$loop" | tee "$out/schema_rounds.txt"

# uniqueItems: rein hashes and sorts long arrays (linear up to the sort), Blaze compares every
# pair. One array of N distinct integers, validated once by each (first-error mode for Blaze; rein's verdict,
# on a jansson tree and on a document).
echo
echo "uniqueItems, one array of N distinct integers (ms per validation, load $(cut -d' ' -f1 /proc/loadavg)):"
for n in 1000 10000 100000; do
  "$py" -c 'import json, sys
n = int(sys.argv[1])
json.dump([{"name": "unique", "schema": {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "array", "uniqueItems": True}, "instances": [list(range(n))],
            "texts": [json.dumps(list(range(n)))]}], sys.stdout)' \
    "$n" >"$out/schema_unique.json"
  "$py" -c 'import json, sys; json.dump(json.load(open(sys.argv[1]))[0]["schema"], sys.stdout)' \
    "$out/schema_unique.json" >"$out/schema_unique_s.json"
  "$py" -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))[0]["instances"][0]))' \
    "$out/schema_unique.json" >"$out/schema_unique_i.jsonl"
  r=$(echo "loop 0 1" | "$out/schema_bench" "$out/schema_unique.json" | sed -n 2p)
  b=$("$blaze" validate "$out/schema_unique_s.json" "$out/schema_unique_i.jsonl" --benchmark --loop 1 --fast |
    sed -n 's/.*: PASS \([0-9.]*\) +-.*/\1/p')
  "$py" -c 'import sys; n, r, b = sys.argv[1:]; r = r.split(); print("%7s items: rein %9.2f ms (as a document %9.2f ms)   Blaze %9.2f ms" % (n, float(r[0]) / 1e6, float(r[4]) / 1e6, float(b) / 1e3))' "$n" "$r" "$b"
done
