#!/usr/bin/env bash
# bench/scale.sh: rein's own CPU per agent step against the length of the history (issue 25,
# goal 2: within 2x from 0 to 10,000 prior messages, with unique and with repeated call ids).
#
# For each history length (PRIORS, default "0 100 1000 10000") and each id mode (unique: the
# scripted server makes a fresh id per call; repeated: every reply calls "call_0", so rein
# renames), bench/scale_bench.c runs two-step turns (a call to echo, then the answer) on a
# history of that many earlier messages, truncated back after each turn, against the scripted
# model server (release build). Own time per step = the bench process's CPU time minus a bare
# libcurl client's CPU time for sending the same request bodies (the server is another
# process, so its time is in neither). ROUNDS rounds (default 3) run every cell in turn; the
# table gives the range over rounds, the load average is printed next to it.
# WIRES (default "openai") names the wires to run it on: openai (chat completions), anthropic,
# gemini, bedrock (SigV4-signed); each gets its own tables.
# CALLGRIND=1 counts instructions instead, a figure the machine's load does not move: for each
# wire, id mode and history length (CG_PRIORS, default "0 20 100 1000 10000": 20 and 100 are short
# conversations, frozen after their first turn and kept encoded once they come back, decision
# 0074), one run of 7 turns
# under valgrind's callgrind, counting only the measured turns' thread (block_turns) and the
# bare client's (block_bare); own instructions per step = (turns - bare) / steps. The tool
# calls run on the agent's pool threads and are not counted (they do not depend on the
# history). Needs valgrind.
# Before/after: BEFORE=DIR (another checkout, e.g. of main) builds the same bench against
# that checkout's library too (release build in DIR/build-bench) and runs its cells
# interleaved with this tree's, cell by cell, in every round; the tables then come in pairs.
#
# The other two growth curves of issue 25 follow the history's: a large argument's size and the
# number of stored conversations. CURVES (default "history args stored") chooses which run.
#   args    bench/bigarg.sh once per size in ARG_SIZES (bytes, default "1000000 10000000
#           30000000"; ARG_ROUNDS rounds each, default 2): rein's MB/s decoding and validating
#           the one argument, next to Node's JSON.parse, per row and kind of argument.
#   stored  bench/conversations.sh once per count in STORED_COUNTS (default "1000 10000
#           100000"; STORED_ROUNDS rounds of STORED_SECONDS seconds each, defaults 2 and 3): list
#           and get requests per second and rein's CPU per request.
# Each point is that bench's own run (its range over rounds); the tables gather them with the
# load average before and after each curve. CALLGRIND=1 counts the history curve only.
#   bench/scale.sh                          all three curves
#   CURVES=args ARG_SIZES="1000000 30000000" bench/scale.sh
# Needs: cmake, cc, pkg-config, the libraries of scripts/install-deps.sh; node and wrk for the
# args and stored curves (scripts/install-deps.sh --bench).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build-bench}
out=bench/out
rounds=${ROUNDS:-3}
priors=${PRIORS:-"0 100 1000 10000"}
wires=${WIRES:-openai}
curves=${CURVES:-history args stored}
mkdir -p "$out"
# True when CURVES names $1.
wants() { case " $curves " in *" $1 "*) return 0 ;; esac; return 1; }

[ -f "$build/CMakeCache.txt" ] ||
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DREIN_TESTS=ON >/dev/null
cmake --build "$build" -j 2 --target rein_static rein-model-server >/dev/null
# shellcheck source=bench/common.sh
. bench/common.sh
bench_cc bench/scale_bench.c . "$build" "$out/scale_bench"
labels=(this)
if [ -n "${BEFORE:-}" ]; then
  [ -f "$BEFORE/build-bench/CMakeCache.txt" ] ||
    cmake -S "$BEFORE" -B "$BEFORE/build-bench" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BEFORE/build-bench" -j 2 --target rein_static >/dev/null
  bench_cc bench/scale_bench.c "$BEFORE" "$BEFORE/build-bench" "$out/scale_bench_before"
  labels=(before this)
fi

echo '{"name":"empty","replies":[]}' >"$out/scale_scenario.json"
"$build/tests/bin/rein-model-server" --port 0 --scenario "$out/scale_scenario.json" \
  --log-limit 2 >"$out/scale_url" &
server=$!
trap 'kill -TERM $server 2>/dev/null; wait $server 2>/dev/null' EXIT
url=""
for _ in $(seq 1 100); do
  url=$(head -n 1 "$out/scale_url")
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { echo "scale.sh: the model server did not start" >&2; exit 1; }

if [ "${CALLGRIND:-0}" = 1 ]; then
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  echo "rein's own instructions per agent step (callgrind, 7 turns of 2 steps; load average $load)"
  printf '%-10s %-9s %8s %14s %14s %14s %9s\n' wire ids prior "rein/step" "bare/step" "own/step" "vs 0"
  for wire in $wires; do
    for mode in unique repeated; do
      base=""
      for prior in ${CG_PRIORS:-0 20 100 1000 10000}; do
        valgrind --tool=callgrind --collect-atstart=no --toggle-collect=block_turns \
          --toggle-collect=block_bare --callgrind-out-file="$out/scale.callgrind" \
          "$out/scale_bench" "$url" "$mode" "$prior" 7 "$wire" >/dev/null 2>>"$out/scale_stderr.log"
        read -r t b < <(callgrind_annotate --inclusive=yes "$out/scale.callgrind" 2>/dev/null |
          awk '/block_turns/{gsub(",","",$1);t=$1} /block_bare/{gsub(",","",$1);b=$1} END{print t, b}')
        own=$(((t - b) / 14))
        [ -n "$base" ] || base=$own
        printf '%-10s %-9s %8s %14d %14d %14d %8s\n' "$wire" "$mode" "$prior" $((t / 14)) \
          $((b / 14)) "$own" "$(python3 -c "print(f'{$own / $base:.2f}x')")"
      done
    done
  done
  exit 0
fi

if wants history; then
# Fewer turns where a request body is large: the server's time per request grows with it.
turns_for() {
  if [ "$1" -ge 10000 ]; then echo 35; elif [ "$1" -ge 1000 ]; then echo 105; else echo 700; fi
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
rows=()
for r in $(seq "$rounds"); do
  for wire in $wires; do
    for prior in $priors; do
      for mode in unique repeated; do
        for label in "${labels[@]}"; do
          prog=$out/scale_bench
          [ "$label" = before ] && prog=$out/scale_bench_before
          read -r own total bare bytes < <("$prog" "$url" "$mode" "$prior" \
            "$(turns_for "$prior")" "$wire" 2>>"$out/scale_stderr.log")
          rows+=("$label,$wire,$mode,$prior,$own,$total,$bare,$bytes")
        done
      done
    done
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$load_before" "$load_after" "$rounds" "${rows[@]}" <<'PY'
import sys
before, after, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
cells = {}
labels = []
wires = []
for row in sys.argv[4:]:
    label, wire, mode, prior, own, total, bare, size = row.split(",")
    if label not in labels:
        labels.append(label)
    if wire not in wires:
        wires.append(wire)
    cells.setdefault((label, wire, mode, int(prior)), []).append(
        (float(own), float(total), float(bare), int(size)))
print(f"rein's own CPU per agent step against history length, {rounds} rounds "
      f"(load average {before} before, {after} after; 2 cores shared with other users)")
for wire, label, mode in ((w, l, m) for w in wires for m in ("unique", "repeated") for l in labels):
    if not any(k[:3] == (label, wire, mode) for k in cells):
        continue
    title = "" if labels == ["this"] else f" ({'BEFORE checkout' if label == 'before' else 'this tree'})"
    print(f"\n{wire}, {mode} call ids{title}")
    print(f"{'prior messages':>15} {'own µs/step':>16} {'rein CPU µs':>16} {'bare client µs':>16}"
          f" {'body bytes':>11} {'own vs 0':>12}")
    base = None
    for prior in sorted(p for l, w, m, p in cells if m == mode and l == label and w == wire):
        v = cells[(label, wire, mode, prior)]
        own = sorted(x[0] for x in v)
        rng = lambda xs: f"{min(xs):.1f}-{max(xs):.1f}"
        if base is None:
            base = own
        ratio = f"{min(own) / max(base):.1f}-{max(own) / min(base):.1f}x" if min(base) > 0 else "n/a"
        print(f"{prior:>15} {rng(own):>16} {rng([x[1] for x in v]):>16} "
              f"{rng([x[2] for x in v]):>16} {v[0][3]:>11} {ratio:>12}")
print("\ngoal: own time at 10,000 prior messages within 2x of the time at 0, both modes")
PY
fi

# The large-argument curve: one bench/bigarg.sh run per size, its rows gathered.
if wants args; then
  load_before=$(cut -d' ' -f1-3 /proc/loadavg)
  points=()
  for n in ${ARG_SIZES:-1000000 10000000 30000000}; do
    BYTES=$n ROUNDS=${ARG_ROUNDS:-2} bash bench/bigarg.sh >"$out/scale_bigarg_$n.txt"
    while read -r kind row rein node ratio _; do
      points+=("$n,$kind,$row,$rein,$node,$ratio")
    done < <(awk '$1 == "text" || $1 == "records"' "$out/scale_bigarg_$n.txt")
  done
  echo
  echo "one argument of growing size, decoded and validated (bench/bigarg.sh per size; load" \
    "average $load_before before, $(cut -d' ' -f1-3 /proc/loadavg) after)"
  printf '%12s %-8s %-6s %14s %14s %12s\n' bytes argument rein "rein MB/s" "node MB/s" rein/node
  for p in "${points[@]}"; do
    IFS=, read -r n kind row rein node ratio <<<"$p"
    printf '%12s %-8s %-6s %14s %14s %12s\n' "$n" "$kind" "$row" "$rein" "$node" "$ratio"
  done
  echo "goal (issue 25, goal 3): rein/node >= 1 at 10 MB; check and doc decode and validate, tree" \
    "also builds a jansson tree"
fi

# The stored-conversations curve: one bench/conversations.sh run per count.
if wants stored; then
  load_before=$(cut -d' ' -f1-3 /proc/loadavg)
  points=()
  for n in ${STORED_COUNTS:-1000 10000 100000}; do
    STORED=$n ROUNDS=${STORED_ROUNDS:-2} DURATION=${STORED_SECONDS:-3} \
      bash bench/conversations.sh >"$out/scale_stored_$n.txt"
    while read -r route rate cpu; do
      points+=("$n,$route,$rate,$cpu")
    done < <(sed -nE 's#^GET (/agent/conversations[^ ]*) \(this tree\) +([0-9-]+) requests/s, rein CPU ([0-9.-]+) us.*#\1 \2 \3#p' \
      "$out/scale_stored_$n.txt")
  done
  echo
  echo "conversations list and get against the number stored (bench/conversations.sh per count;" \
    "load average $load_before before, $(cut -d' ' -f1-3 /proc/loadavg) after)"
  printf '%10s %-30s %16s %18s\n' stored request "requests/s" "rein CPU us/req"
  for p in "${points[@]}"; do
    IFS=, read -r n route rate cpu <<<"$p"
    printf '%10s GET %-26s %16s %18s\n' "$n" "$route" "$rate" "$cpu"
  done
  echo "goal (issue 25, goal 6): >= 20,000 requests/s each with 100,000 stored"
fi
