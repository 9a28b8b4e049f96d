#!/usr/bin/env bash
# JSON Schema validation throughput: rein against ajv (npm, v8, compiled schemas) and Python
# jsonschema (Debian python3-jsonschema), in one run on the same cases.
#
# Cases: the tool schemas of the BFCL fixtures (shared/fixtures/bfcl, JSON Lines; dict->object,
# float->number, tuple->array, any->no type) with one valid argument object per schema built
# from possible_answer/ and one perturbed, invalid copy (a missing required argument or an
# argument of the wrong type). Every schema is compiled once; each validator then validates
# every object in a loop. Two modes: "all errors" (every error with its message: what the call
# pipeline does) and "first error" (stop at the first). The valid/invalid counts printed by
# each validator must agree, which checks that they are doing the same work.
#
# Usage: bash bench/schema.sh [SECONDS per measurement, default 3] (about 18 x SECONDS in all)
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
if [ ! -d bench/node_modules/ajv ]; then
  (cd bench && npm install --no-audit --no-fund --silent)
fi

make --no-print-directory build >/dev/null
cc -O2 -Iinclude -Ibuild/include bench/schema_bench.c build/librein.a \
  $(pkg-config --libs jansson libpcre2-8 libcurl libmicrohttpd sqlite3 yaml-0.1) \
  $(pkg-config --libs hiredis 2>/dev/null || true) -lm -lpthread -o "$out/schema_bench"

REIN_SHARED_DIR="$shared" "$py" bench/schema_cases.py >"$out/schema_cases.json"
"$py" - "$out/schema_cases.json" <<'PY'
import json, sys
cases = json.load(open(sys.argv[1]))
print("cases: %d tool schemas, %d argument objects" % (len(cases), sum(len(c["instances"]) for c in cases)))
PY
echo "ajv $(node -p 'require("./bench/node_modules/ajv/package.json").version'), python-jsonschema $("$py" -c 'from importlib.metadata import version; print(version("jsonschema"))'), $secs s per measurement (best of 5 stretches)"

# The machine may be shared: the three take turns, three rounds, and each keeps its best.
: >"$out/schema_rein.txt"; : >"$out/schema_ajv.txt"; : >"$out/schema_py.txt"
for round in 1 2 3; do
  "$out/schema_bench" "$out/schema_cases.json" "$secs" | tee -a "$out/schema_rein.txt"
  node bench/schema_ajv.js "$out/schema_cases.json" "$secs" | tee -a "$out/schema_ajv.txt"
  "$py" bench/schema_jsonschema.py "$out/schema_cases.json" "$secs" | tee -a "$out/schema_py.txt"
done

"$py" - "$out" <<'PY'
import re, sys
out = sys.argv[1]
def rates(name):
    r = {}
    for line in open("%s/schema_%s.txt" % (out, name)):
        m = re.match(r"\S+ (all errors|first error) *: (\d+) validations/s", line)
        if m:
            r[m.group(1)] = max(r.get(m.group(1), 0), float(m.group(2)))
    return r
rein, ajv, py = rates("rein"), rates("ajv"), rates("py")
print("best of 3 rounds:")
for mode in ("all errors", "first error"):
    print("%-11s rein %9.0f/s  ajv %9.0f/s  python %8.0f/s   rein/ajv %.2fx   rein/python %.1fx"
          % (mode, rein[mode], ajv[mode], py[mode], rein[mode] / ajv[mode], rein[mode] / py[mode]))
PY
