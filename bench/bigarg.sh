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
#         parsed into rein's compact document, rein/doc.h) and the arguments validated against
#         the tool's parameter schema (bench/bigarg_bench.c), in three rows: "check" hands the
#         call to the call pipeline as the gateway's check does (rein_call_run, check-only,
#         with the argument text: a document of its own, no jansson tree for a valid
#         argument), "doc" validates the decoder's document (a library caller), "tree" asks
#         for the jansson tree first and validates it (what a caller that needs it pays);
#   node: eventsource-parser, JSON.parse on every event, the argument deltas joined and
#         JSON.parse'd (bench/bigarg_bench.mjs; not validated).
# ROUNDS rounds (default 3) alternate the two, each the best of RUNS runs (default 3); the
# table gives the range over rounds of MB/s of the reply, of the ratio rein/node and of the
# page faults of rein's best run, with the load average before and after (the machine is
# shared: say so with the figures).
# BEFORE=DIR also runs DIR's library (release build in DIR/build-bench) with DIR's own
# bench/bigarg_bench.c, interleaved.
# CALLGRIND=1 counts instructions instead, a figure the machine's load does not move: one run
# of each build under valgrind's callgrind, counting only the timed calls (the decoder's feed
# and finish, the validation), in millions of instructions per MB of the argument. Page faults
# and cache misses are not in it: with a cold heap they are a large part of the time.
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
names=(check doc tree)
if [ -n "${BEFORE:-}" ]; then
  [ -f "$BEFORE/build-bench/CMakeCache.txt" ] ||
    cmake -S "$BEFORE" -B "$BEFORE/build-bench" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BEFORE/build-bench" -j 2 --target rein_static >/dev/null
  bench_cc "$BEFORE/bench/bigarg_bench.c" "$BEFORE" "$BEFORE/build-bench" \
    "$out/bigarg_bench_before"
  names=(before check doc tree)
fi

if [ "${CALLGRIND:-0}" = 1 ]; then
  echo "rein's instructions per MB of the argument (callgrind; decode and validation only;" \
    "load average $(cut -d' ' -f1-3 /proc/loadavg))"
  printf '%-10s %-8s %16s %12s\n' argument rein "instructions" "per MB"
  for kind in text records; do
    python3 bench/bigarg_make.py "$kind" "$bytes" "$out/bigarg_$kind.sse" "$out/bigarg_$kind.schema.json"
    for n in "${names[@]}"; do
      exe="$out/bigarg_bench" mode=$n
      [ "$n" = before ] && exe="$out/bigarg_bench_before" mode=
      # Only the outermost timed calls toggle (a toggle inside another would switch it off).
      case $n in
        check) timed=(rein_call_run) ;;
        doc) timed=(rein_schema_validate_doc) ;;
        *) timed=(rein_model_call_arguments rein_schema_validate) ;;
      esac
      valgrind --tool=callgrind --collect-atstart=no \
        --toggle-collect=rein_provider_decoder_feed --toggle-collect=rein_provider_decoder_finish \
        "${timed[@]/#/--toggle-collect=}" --callgrind-out-file="$out/bigarg.callgrind" \
        "$exe" "$out/bigarg_$kind.sse" "$out/bigarg_$kind.schema.json" 1 $mode >/dev/null 2>&1
      ir=$(callgrind_annotate "$out/bigarg.callgrind" 2>/dev/null |
        awk '/PROGRAM TOTALS/{gsub(",","",$1); print $1}')
      python3 - "$out/bigarg_$kind.sse" "$ir" "$kind" "$n" <<'PY'
import json, sys
reply, ir, kind, who = sys.argv[1:]
with open(reply, encoding="utf-8") as f:
    first = json.loads(f.read().split("\n\n")[0][len("data: "):])
args = first["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
mb = len(args.encode()) / 1e6
print(f"{kind:10} {who:8} {int(ir) / 1e6:14.0f} M {int(ir) / 1e6 / mb:10.1f} M")
PY
    done
    rm -f "$out/bigarg_$kind.sse"
  done
  exit 0
fi

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
rows=()
for kind in text records; do
  python3 bench/bigarg_make.py "$kind" "$bytes" "$out/bigarg_$kind.sse" "$out/bigarg_$kind.schema.json"
  for _ in $(seq "$rounds"); do
    read -r nmb _ < <(node bench/bigarg_bench.mjs "$out/bigarg_$kind.sse" "$runs")
    for n in "${names[@]}"; do
      exe="$out/bigarg_bench" mode=$n
      [ "$n" = before ] && exe="$out/bigarg_bench_before" mode=
      read -r rmb _ faults < <("$exe" "$out/bigarg_$kind.sse" "$out/bigarg_$kind.schema.json" \
        "$runs" $mode)
      rows+=("$kind,$n,$rmb,$nmb,$faults")
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
    kind, who, rmb, nmb, faults = row.split(",")
    cells.setdefault((kind, who), []).append((float(rmb), float(nmb), int(faults)))
print(f"one tool call with a ~{int(size) / 1e6:.0f} MB argument in one delta, {rounds} rounds, "
      f"best of runs each (load average {before} before, {after} after)")
print(f"{'argument':10} {'rein':8} {'rein MB/s':>14} {'node MB/s':>14} {'rein/node':>12} "
      f"{'rein faults':>12}")
for (kind, who), v in cells.items():
    r = [a for a, _, _ in v]
    n = [b for _, b, _ in v]
    q = [a / b for a, b, _ in v]
    f = [c for _, _, c in v]
    print(f"{kind:10} {who:8} {min(r):6.1f}-{max(r):<6.1f} {min(n):6.1f}-{max(n):<6.1f} "
          f"{min(q):5.2f}-{max(q):.2f}x {min(f):>7}-{max(f)}")
print("rein decodes and validates; node decodes (JSON.parse). Goal: rein/node >= 1.")
print("rein faults: page faults in rein's best run (pages touched first, mostly the document).")
print("check: the gateway's check (rein_call_run, check-only); doc: the decoder's document "
      "validated; tree: a jansson tree made and validated.")
PY
