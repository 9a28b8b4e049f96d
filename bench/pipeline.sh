#!/usr/bin/env bash
# Calls per second and the median time of one call through the whole call pipeline (name
# repair + argument parsing + preflight against the compiled schema + the ledger + executing
# echo + the result), rein next to the same work in Python with pydantic (bench/pipeline_peer.py:
# a model per tool, validate, dispatch through a dict, a ledger entry and a result dict), in
# one run. The two alternate, twice, and each reports its best round, so load from other
# programs on the machine hurts neither side more than the other.
#   bench/pipeline.sh            (make bench runs it after building build/)
#   CALLS=200000 bench/pipeline.sh
set -euo pipefail
cd "$(dirname "$0")/.."
calls=${CALLS:-200000}
py_calls=${PY_CALLS:-50000}
out=bench/out
mkdir -p "$out"

make --no-print-directory build >/dev/null
if ! /usr/bin/python3 -c 'import pydantic' 2>/dev/null; then
  echo "pipeline.sh: python3-pydantic is missing; run scripts/install-deps.sh --bench" >&2
  exit 1
fi
# shellcheck source=bench/common.sh
. bench/common.sh
bench_cc bench/pipeline_bench.c . build "$out/pipeline_bench"

get() { sed -n "s/^$2=//p" "$1" | sort -g | { [ "$3" = max ] && tail -n1 || head -n1; }; }
: >"$out/rein.txt"
: >"$out/python.txt"
for round in 1 2; do
  "$out/pipeline_bench" "$calls" 3 >>"$out/rein.txt"
  /usr/bin/python3 bench/pipeline_peer.py "$py_calls" 3 >>"$out/python.txt"
done

r_rate=$(get "$out/rein.txt" calls_per_sec max)
r_median=$(get "$out/rein.txt" median_ns min)
r_enc_rate=$(get "$out/rein.txt" encoded_calls_per_sec max)
r_enc_median=$(get "$out/rein.txt" encoded_median_ns min)
p_rate=$(get "$out/python.txt" calls_per_sec max)
p_median=$(get "$out/python.txt" median_ns min)
pyd=$(/usr/bin/python3 -c 'import pydantic; print(pydantic.VERSION)')

echo "call pipeline: repair + parse + preflight + ledger + execute echo + result"
printf '%-40s %14s %16s\n' "" "calls/s (CPU)" "median per call"
printf '%-40s %14s %13s ns\n' "rein" "$r_rate" "$r_median"
printf '%-40s %14s %13s ns\n' "Python $(/usr/bin/python3 -V | cut -d' ' -f2) + pydantic $pyd" "$p_rate" "$p_median"
awk -v a="$r_rate" -v b="$p_rate" -v c="$p_median" -v d="$r_median" \
  'BEGIN { printf "%-40s %13.1fx %15.1fx\n", "ratio (rein / Python)", a / b, c / d }'
printf '%-40s %14s %13s ns\n' "rein, tool message also encoded as JSON" "$r_enc_rate" "$r_enc_median"
awk -v a="$r_enc_rate" -v b="$p_rate" -v c="$p_median" -v d="$r_enc_median" \
  'BEGIN { printf "%-40s %13.1fx %15.1fx\n", "ratio (encoded / Python)", a / b, c / d }'
