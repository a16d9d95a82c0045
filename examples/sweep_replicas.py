#!/usr/bin/env python3
"""Sweep the Atlas scenario's replica count and plot goodput per GPU.

For each replica count the built-in Atlas scenario is copied, its deployment.replicas
changed, and simulated; goodput per GPU is the fleet's goodput (requests per second that
met every SLO, report.json fleet.goodput_rps) over the GPUs deployed (deployment.gpus).
Replicas are not free: past the count the traffic needs, goodput stays flat while GPUs
grow, so goodput per GPU falls.

    PYTHONPATH=build/relassert/python /usr/bin/python3 examples/sweep_replicas.py
    MPLBACKEND=Agg ... examples/sweep_replicas.py --replicas 2,4,6 --duration 1m --out plot.png

Prints one line per point (replicas, GPUs, goodput, goodput per GPU, interactive TTFT p99)
and writes the plot (PNG, or any format matplotlib knows from the suffix).
"""

import argparse
import sys

import fleetplan


def sweep(replicas, duration, seed):
    base = fleetplan.Scenario.atlas()
    gpus_per_replica = base["deployment.tp"] * base.get("deployment.pp", 1)
    points = []
    for n in replicas:
        s = base.copy()
        # Enough nodes for the replicas (Atlas's 2 nodes of 8 GPUs hold 4 of TP 4): the two
        # fields are only valid together, so they change at once.
        nodes = max(1, -(-n * gpus_per_replica // base["hardware.gpus_per_node"]))
        s.update({"hardware.nodes": nodes, "deployment.replicas": n})
        report = fleetplan.simulate(s, duration=duration, seed=seed).report
        gpus = report["deployment"]["gpus"]
        goodput = report["fleet"]["goodput_rps"]
        ttft = report["classes"]["interactive"]["ttft_ms"]["p99"]
        points.append((n, gpus, goodput, goodput / gpus, ttft))
    return points


def plot(points, path):
    import matplotlib.pyplot as plt  # headless: MPLBACKEND=Agg (matplotlib also falls back to it)

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot([p[0] for p in points], [p[3] for p in points], marker="o")
    ax.set_xlabel("replicas (atlas-70b, TP 4 on H100-SXM)")
    ax.set_ylabel("goodput per GPU (requests/s meeting every SLO)")
    ax.set_title("Atlas: goodput per GPU against replicas")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", default="1,2,3,4,6,8", help="comma-separated replica counts")
    parser.add_argument("--duration", default=None, help="stop arrivals at this simulated time (default: the scenario's)")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--out", default="atlas_goodput_per_gpu.png", help="plot file")
    args = parser.parse_args(argv)
    replicas = [int(x) for x in args.replicas.split(",")]
    points = sweep(replicas, args.duration, args.seed)
    print("replicas  gpus  goodput_rps  goodput_per_gpu  interactive_ttft_p99_ms")
    for n, gpus, goodput, per_gpu, ttft in points:
        print("%8d  %4d  %11.3f  %15.4f  %23.1f" % (n, gpus, goodput, per_gpu, ttft))
    plot(points, args.out)
    print("wrote", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
