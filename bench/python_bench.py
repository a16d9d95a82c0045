#!/usr/bin/env python3
"""Python module benchmarks (docs/PERFORMANCE.md, "Python module").

1. fleetplan.simulate on the built-in Atlas scenario against `fleetplan simulate` (the
   CLI, a fresh process each run): wall time per run, interleaved, ROUNDS rounds. The CLI
   is timed twice: with the scenario's outputs (report.json, requests.jsonl, timeline.json,
   report.html) and with --no-requests --no-timeline --no-html (report.json only); the
   module writes nothing and keeps every record in memory.
2. Converting the records of one run to numpy (SimulationResult.records): a run of
   bench/scenarios/fleet-16replica.yaml stopped after --records requests (1,000,000 by
   default), then the conversion timed REPEAT times on fresh results of that run.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/python_bench.py \
        --fleetplan build/release/fleetplan [--rounds 5] [--records 1000000]
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import fleetplan
from fleetplan._records import RecordColumns


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def cpu_of_module(fn):
    """(wall, CPU seconds of this process) of fn()."""
    cpu = time.process_time()
    wall, _ = timed(fn)
    return wall, time.process_time() - cpu


def cpu_of_cli(argv):
    """(wall, user + system CPU seconds of the child) of one CLI run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, _ = timed(lambda: subprocess.run(argv, check=True, stdout=subprocess.DEVNULL))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def bench_simulate(binary, rounds):
    atlas = fleetplan.Scenario.atlas()
    runs = {"module": [], "cli (all outputs)": [], "cli (report only)": []}
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out")
        cli_all = [binary, "simulate", "--quiet", "--out", out]
        cli_report = cli_all + ["--no-requests", "--no-timeline", "--no-html"]
        for _ in range(rounds):
            runs["module"].append(cpu_of_module(lambda: fleetplan.simulate(atlas)))
            runs["cli (all outputs)"].append(cpu_of_cli(cli_all))
            runs["cli (report only)"].append(cpu_of_cli(cli_report))
    requests = fleetplan.simulate(atlas).report["simulation"]["requests"]
    print("Atlas (%d requests), %d rounds interleaved, seconds per run:" % (requests, rounds))
    for name, r in runs.items():
        wall, cpu = [w for w, _ in r], [c for _, c in r]
        print("  %-18s wall median %.3f min %.3f | CPU median %.3f min %.3f"
              % (name, statistics.median(wall), min(wall), statistics.median(cpu), min(cpu)))
    m, c = runs["module"], runs["cli (report only)"]
    print("  module / cli (report only): wall %.3f (median) %.3f (min); CPU %.3f (median) %.3f (min)" % (
        statistics.median([w for w, _ in m]) / statistics.median([w for w, _ in c]),
        min(w for w, _ in m) / min(w for w, _ in c),
        statistics.median([x for _, x in m]) / statistics.median([x for _, x in c]),
        min(x for _, x in m) / min(x for _, x in c)))


def bench_records(records, repeat):
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scenarios", "fleet-16replica.yaml")
    t, r = timed(lambda: fleetplan.simulate(path, requests=records))
    n = len(r._columns)
    print("records: %d from %s in %.1f s (simulation, not counted)" % (n, os.path.basename(path), t))
    conversions = []
    for _ in range(repeat):
        fresh = RecordColumns(r._columns._columns, r._columns.classes, r._columns.tenants)
        conversions.append(timed(fresh.to_numpy)[0])
    print("  to numpy: median %.3f s  min %.3f s  max %.3f s  (%d runs; %.0f ns per record)"
          % (statistics.median(conversions), min(conversions), max(conversions), repeat,
             1e9 * statistics.median(conversions) / n))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--fleetplan", required=True, help="the fleetplan binary of the same build")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--records", type=int, default=1_000_000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--skip-simulate", action="store_true")
    args = p.parse_args()
    if not args.skip_simulate:
        bench_simulate(args.fleetplan, args.rounds)
    bench_records(args.records, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
