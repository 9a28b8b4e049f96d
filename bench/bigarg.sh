#!/usr/bin/env bash
# bench/bigarg.sh: one model reply whose tool call carries one large `arguments` value (issue
# 25, goal 3: decoding and validating a 10 MB argument at least as fast as Node's JSON.parse
# path), rein next to Node in one run.
#
# bench/bigarg_make.py writes an OpenAI chat-completion stream whose only tool call sends the
# arguments in one delta (BYTES, default 10,000,000), for two kinds of argument: "text" (one
# long string with escapes and non-ASCII text, as a file written through a tool) and
# "records" (many small objects). Then, fed from memory in 16 KiB pieces:
#   rein: the provider decoder (SSE framing, the chunk's fields, the assembler, the arguments
#         parsed into a document by rein_json_parse) and the arguments validated against the
#         tool's parameter schema (bench/bigarg_bench.c);
#   node: eventsource-parser, JSON.parse on every event, the argument deltas joined and
#         JSON.parse'd (bench/bigarg_bench.mjs; not validated).
# ROUNDS rounds (default 3) alternate the two, each the best of RUNS runs (default 3); the
# table gives the range over rounds of MB/s of the reply and of the ratio rein/node, with the
# load average before and after (the machine is shared: say so with the figures).
# BEFORE=DIR also runs DIR's library (release build in DIR/build-bench), interleaved.
# Needs: a C compiler, python3, node with bench/node_modules (npm install here).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build-bench}
out=bench/out
bytes=${BYTES:-10000000}
rounds=${ROUNDS:-3}
runs=${RUNS:-3}
mkdir -p "$out"

[ -f "$build/CMakeCache.txt" ] ||
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DREIN_TESTS=ON >/dev/null
cmake --build "$build" -j 2 --target rein_static >/dev/null
if [ ! -d bench/node_modules/eventsource-parser ]; then
  (cd bench && npm install --no-audit --no-fund --silent >/dev/null)
fi
# shellcheck source=bench/common.sh
. bench/common.sh
bench_cc bench/bigarg_bench.c . "$build" "$out/bigarg_bench"
names=(this)
if [ -n "${BEFORE:-}" ]; then
  [ -f "$BEFORE/build-bench/CMakeCache.txt" ] ||
    cmake -S "$BEFORE" -B "$BEFORE/build-bench" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BEFORE/build-bench" -j 2 --target rein_static >/dev/null
  bench_cc bench/bigarg_bench.c "$BEFORE" "$BEFORE/build-bench" "$out/bigarg_bench_before"
  names=(before this)
fi

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
rows=()
for kind in text records; do
  python3 bench/bigarg_make.py "$kind" "$bytes" "$out/bigarg_$kind.sse" "$out/bigarg_$kind.schema.json"
  for _ in $(seq "$rounds"); do
    read -r nmb _ < <(node bench/bigarg_bench.mjs "$out/bigarg_$kind.sse" "$runs")
    for n in "${names[@]}"; do
      exe="$out/bigarg_bench"
      [ "$n" = before ] && exe="$out/bigarg_bench_before"
      read -r rmb _ < <("$exe" "$out/bigarg_$kind.sse" "$out/bigarg_$kind.schema.json" "$runs")
      rows+=("$kind,$n,$rmb,$nmb")
    done
  done
  rm -f "$out/bigarg_$kind.sse"
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$load_before" "$load_after" "$rounds" "$bytes" "${rows[@]}" <<'PY'
import sys
before, after, rounds, size = sys.argv[1:5]
cells = {}
for row in sys.argv[5:]:
    kind, who, rmb, nmb = row.split(",")
    cells.setdefault((kind, who), []).append((float(rmb), float(nmb)))
print(f"one tool call with a ~{int(size) / 1e6:.0f} MB argument in one delta, {rounds} rounds, "
      f"best of runs each (load average {before} before, {after} after)")
print(f"{'argument':10} {'rein':8} {'rein MB/s':>14} {'node MB/s':>14} {'rein/node':>12}")
for (kind, who), v in cells.items():
    r = [a for a, _ in v]
    n = [b for _, b in v]
    q = [a / b for a, b in v]
    print(f"{kind:10} {who:8} {min(r):6.1f}-{max(r):<6.1f} {min(n):6.1f}-{max(n):<6.1f} "
          f"{min(q):5.2f}-{max(q):.2f}x")
print("rein decodes and validates; node decodes (JSON.parse). Goal: rein/node >= 1.")
PY
