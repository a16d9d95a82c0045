#!/usr/bin/env bash
# The engine step under overload, two builds compared (docs/PERFORMANCE.md "The step
# alone"): runs BM_OverloadEngine at 0.98x, 2x and 10x from each overload_bench in turn,
# ROUNDS times (each run its own process, the builds interleaved so that a busy spell of
# the machine hits both alike), and prints per build and load the minimum and median of
# full_step_ns (steps of at least 240 sequences: the same batch at every load) and step_ns,
# each with its ratio to the same build's 0.98x. The target: 2x and 10x full_step_ns
# within 1.5x of 0.98x.
# Usage: bench/overload_compare.sh BEFORE/overload_bench AFTER/overload_bench [ROUNDS=10]
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 BEFORE/overload_bench AFTER/overload_bench [ROUNDS]" >&2; exit 2; }
before="$1"; after="$2"; rounds="${3:-10}"
runs="$(mktemp)"
trap 'rm -f "$runs"' EXIT
for ((r = 1; r <= rounds; ++r)); do
  for build in before after; do
    bin="$before"; [ "$build" = after ] && bin="$after"
    for load in 0_98x 2x 10x; do
      "$bin" --benchmark_filter="OverloadEngine_${load}/" --benchmark_format=csv 2>/dev/null |
        awk -v b="$build" -v l="$load" '/^name,/ {print "header", "-", $0} /OverloadEngine/ {print b, l, $0}' >> "$runs"
    done
  done
  echo "round $r of $rounds done" >&2
done
python3 - "$runs" <<'PY'
import csv, statistics, sys
rows = {}
header = []
for line in open(sys.argv[1]):
    build, load, rest = line.split(" ", 2)
    fields = next(csv.reader([rest]))
    if build == "header":
        header = fields
    else:
        rows.setdefault((build, load), []).append(fields)
def col(fields, name): return float(fields[header.index(name)])
print("| build | load | runs | full_step_ns min (vs 0.98x) | median (vs 0.98x) | step_ns min (vs 0.98x) | median (vs 0.98x) |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for build in ("before", "after"):
    ref = None
    for load in ("0_98x", "2x", "10x"):
        runs = rows.get((build, load), [])
        if not runs: continue
        full = [col(f, "full_step_ns") for f in runs]
        step = [col(f, "step_ns") for f in runs]
        figs = (min(full), statistics.median(full), min(step), statistics.median(step))
        ref = ref or figs
        cells = " | ".join(f"{v:,.0f} ({v / r:.2f})" for v, r in zip(figs, ref))
        print(f"| {build} | {load.replace('_', '.')} | {len(runs)} | {cells} |")
PY
