#!/usr/bin/env bash
# The sweep benchmark (docs/PERFORMANCE.md "Sweeps"): bench/sweep/atlas-64.yaml — 64 Atlas
# configurations, each with a max-rate search at 2% over 5 simulated minutes — run with
# --jobs 1, --jobs 2 and (when Open MPI is built in) mpirun -n 2; prints wall time, CPU time
# and peak RSS of each, and checks that the three sweep.json files are byte-identical.
# Usage: bench/sweep_bench.sh [path/to/fleetplan] [spec.yaml]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${1:-$here/../build/release/fleetplan}"
spec="${2:-$here/sweep/atlas-64.yaml}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

run() {  # name, command...
  local name="$1"; shift
  /usr/bin/time -f "$name: %e s wall, %U s user, %M KB peak RSS" "$@" > "$out/$name.stdout" 2> "$out/$name.time" || {
    cat "$out/$name.time" >&2; exit 1; }
  tail -1 "$out/$name.time"
}

run jobs1 "$bin" sweep "$spec" --jobs 1 --quiet --out "$out/jobs1"
run jobs2 "$bin" sweep "$spec" --jobs 2 --quiet --out "$out/jobs2"
cmp "$out/jobs1/sweep.json" "$out/jobs2/sweep.json" && echo "jobs1 and jobs2: byte-identical sweep.json"
if command -v mpirun > /dev/null && "$bin" sweep "$spec" --mpi --shard 0/1000000 --quiet --out "$out/probe" > /dev/null 2>&1; then
  run mpi2 mpirun --oversubscribe --allow-run-as-root -n 2 "$bin" sweep "$spec" --mpi --quiet --out "$out/mpi2"
  cmp "$out/jobs1/sweep.json" "$out/mpi2/sweep.json" && echo "jobs1 and mpirun -n 2: byte-identical sweep.json"
else
  echo "mpirun -n 2: skipped (no mpirun, or fleetplan built without Open MPI)"
fi
python3 - "$out/jobs1/sweep.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
probes = sum(len(p.get("max_rate", {}).get("probes", [])) for p in d["points"])
steps = sum(p.get("steps", 0) for p in d["points"]) + sum(
    q["steps"] for p in d["points"] for q in p.get("max_rate", {}).get("probes", []))
early = sum(1 for p in d["points"] for q in p.get("max_rate", {}).get("probes", []) if not q["complete"])
print(f"points {len(d['points'])}, probes {probes} ({early} stopped early), engine steps simulated {steps:,}")
print(f"a step-level simulator at 150 us per batch would spend {steps * 150e-6:,.0f} s on those steps")
PY
