#!/usr/bin/env bash
# Claim extraction against text size (issue 14): the time per byte must not grow with the
# text. Builds texts of 64 KiB to 4 MiB from the labelled corpus in three shapes (ordinary
# sentences, one run with no sentence end, Chinese only) and prints the extraction rate of
# each, three rounds (best of 3 runs each, CPU time of the process), with the load average.
# There is no peer to run side by side: no other tool extracts these claims.
#
# Usage: bash bench/claims.sh [ROUNDS per size, default 3]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
out=bench/out
mkdir -p "$out"
make --no-print-directory build >/dev/null
cc -O2 -Iinclude -Ibuild/include bench/claims_bench.c build/librein.a \
  $(pkg-config --libs jansson libpcre2-8 libcurl libmicrohttpd sqlite3 yaml-0.1) \
  $(pkg-config --libs hiredis 2>/dev/null || true) \
  $(pkg-config --libs libprotobuf-c 2>/dev/null || true) -lm -lpthread -o "$out/claims_bench"
for round in 1 2 3; do
  echo "round $round (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
  "$out/claims_bench" tests/data/claims/corpus.tsv "$rounds"
done
