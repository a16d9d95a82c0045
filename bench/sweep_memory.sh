#!/usr/bin/env bash
# Sweep memory against the number of points (docs/PERFORMANCE.md "Sweeps", "Memory"): Atlas,
# one simulated second, 16 or 128 configurations x 4 to 128 seeds (64 to 16,384 points), and
# 4,096 configurations x 1 seed; prints wall time and peak RSS of each run with --jobs 2.
# Peak RSS should stay flat as the points grow: rows stream through an on-disk spool.
# Usage: bench/sweep_memory.sh [path/to/fleetplan]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${1:-$here/../build/release/fleetplan}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

seeds() { python3 -c "import sys; print(list(range(1, int(sys.argv[1]) + 1)))" "$1"; }
spec() {  # name, replicas axis, seeds list, extra axis line
  cat > "$out/$1.yaml" <<YAML
version: 1
base: {builtin: atlas}
overrides:
  workload.duration: 1s
  hardware.nodes: 8
axes:
$4
  deployment.replicas: $2
  router.policy: [round-robin, cache-aware]
  engine.scheduler.policy: [decode-first, bounded-chunk]
  model.kv_dtype: [bf16, fp8]
seeds: $3
price: {gpu_hour: 2.50}
YAML
}
spec points-64 "[2, 4]" "$(seeds 4)" ""
spec points-1024 "{from: 1, to: 16, step: 1}" "$(seeds 8)" ""
spec points-4096 "{from: 1, to: 16, step: 1}" "$(seeds 32)" ""
spec points-16384 "{from: 1, to: 16, step: 1}" "$(seeds 128)" ""
spec configs-4096 "{from: 1, to: 16, step: 1}" "[1]" "  workload.arrival.rate: {from: 1/s, to: 32/s, step: 1/s}"

for name in points-64 points-1024 points-4096 points-16384 configs-4096; do
  /usr/bin/time -f "$name: %e s wall, %M KB peak RSS" "$bin" sweep "$out/$name.yaml" --jobs 2 --quiet \
    --out "$out/$name" > /dev/null 2> "$out/$name.time" || { cat "$out/$name.time" >&2; exit 1; }
  echo "$(tail -1 "$out/$name.time"), sweep.json $(stat -c %s "$out/$name/sweep.json") bytes"
  rm -rf "$out/$name"
done
