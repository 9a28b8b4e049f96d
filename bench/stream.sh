#!/usr/bin/env bash
# bench/stream.sh: how fast a model's stream is decoded, rein next to Node in one run.
#
# A recorded stream from the shared fixtures (or tests/data) is stretched to about 50 MB (its middle events
# repeated, so it stays one well-formed reply) and decoded by
#   rein: the provider decoder the adapters use (SSE framing, jsmn per chunk, the assembler
#         and its events), fed from memory in 16 KiB pieces  (bench/stream_bench.c)
#   node: eventsource-parser + JSON.parse per event, fed the same pieces (bench/stream_bench.mjs)
# and the MB/s, events/s and the ratio are printed: the best of ROUNDS rounds (default 3) that
# alternate between the two, each round the best of RUNS runs (default 3), so a change in the
# machine's load during the benchmark hits both sides alike.
# Needs: a release build (make), node with bench/node_modules (npm install here).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
shared=${REIN_SHARED_DIR:-../shared}
out=bench/out
target=${STREAM_BYTES:-50000000}
runs=${RUNS:-3}
rounds=${ROUNDS:-3}
mkdir -p "$out"

make --no-print-directory BUILD="$build" build >/dev/null
if [ ! -d bench/node_modules/eventsource-parser ]; then
  (cd bench && npm install --no-audit --no-fund --silent >/dev/null)
fi
# shellcheck source=bench/common.sh
. bench/common.sh
bench_cc bench/stream_bench.c . "$build" "$out/stream_bench"

printf '%-44s %10s %12s %10s %12s %7s\n' "stream (~$((target / 1000000)) MB)" "rein MB/s" "rein ev/s" \
  "node MB/s" "node ev/s" "ratio"
# format  fixture  first-events-kept  last-events-kept
while read -r fmt fixture head tail; do
  file="$out/$(basename "$fixture").long"
  src="$shared/fixtures/$fixture"
  case "$fixture" in tests/*) src="$fixture" ;; esac # a recording of this tree (tests/data)
  if [[ "$src" == *.stream.jsonl ]]; then
    # One payload per line: framed as the SSE events the service sent.
    awk 'NF { printf "data: %s\r\n\r\n", $0 }' "$src" >"$file.sse"
    src="$file.sse"
  fi
  python3 bench/make_stream.py "$src" "$file" "$target" "$head" "$tail"
  rm -f "$file.sse"
  rmb=0 nmb=0
  for _ in $(seq "$rounds"); do
    read -r mb ev n < <("$out/stream_bench" "$file" "$fmt" "$runs")
    if python3 -c "import sys; sys.exit(0 if $mb > $rmb else 1)"; then rmb=$mb rev=$ev rn=$n; fi
    read -r mb ev n < <(node bench/stream_bench.mjs "$file" "$runs")
    if python3 -c "import sys; sys.exit(0 if $mb > $nmb else 1)"; then nmb=$mb nev=$ev nn=$n; fi
  done
  ratio=$(python3 -c "print(f'{$rmb / $nmb:.2f}x')")
  printf '%-44s %10s %12s %10s %12s %7s\n' "$(basename "$fixture")" "$rmb" "$rev" "$nmb" "$nev" \
    "$ratio"
  [ "$rn" = "$nn" ] || echo "  note: rein counted $rn events, node $nn"
  rm -f "$file"
done <<'CASES'
openai-sse openai/openai-python-gpt4o-single-strict-tool.sse 1 3
anthropic-sse anthropic/pydantic-sonnet4-thinking-stream.sse 3 2
gemini-sse tests/data/providers/gemini/vercel-google-text.stream.jsonl 1 1
openai-responses-sse tests/data/responses/openai-web-search-tool.1.chunks.txt 2 1
CASES
