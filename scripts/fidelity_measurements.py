#!/usr/bin/env python3
"""Replays the published H100 / H200 vLLM measurements (shared data, measurements/03 and 04)
with fleetplan and prints measured vs predicted, for docs/FIDELITY.md.

  scripts/fidelity_measurements.py --fleetplan build/relassert/fleetplan --data ../shared/data
      [--step-model default|roofline|'{kind: ...}'] [--json]

Every scenario and trace is written to a temporary folder from the measurement files (nothing
of them is kept in the repository). ShareGPT request lengths come from the 200 per-request
lengths of measurements/06 (vLLM's benchmark_serving.py, ShareGPT, seed 0, a Llama-3
tokenizer: the same sampling the vLLM CI serving test uses); arrivals are Poisson at the
stated rate, drawn here with a fixed seed. No figure of a predicted run is used to set any
parameter of the simulation.
"""
import argparse
import csv
import json
import os
import random
import subprocess
import sys
import tempfile

LATENCY_BATCH = 8
LATENCY_INPUT = 32
LATENCY_OUTPUT = 128
V0_GRAPH_BUCKETS = [1, 2, 4] + list(range(8, 257, 8))
SET03_VERSION = "0.6.3"  # vLLM main between 0.6.3 and 0.6.4 (the set's setup.yaml)
SET04_VERSION = "0.6.0"
SET04_SCHEDULER_STEPS = 10  # the set's server flag --num-scheduler-steps 10
LATENCY_STEPS = LATENCY_OUTPUT  # one prefill step, then one decode step per further token

SCENARIO = """version: 1
name: {name}
seed: 7
model: {{name: {model}, weight_dtype: bf16, kv_dtype: bf16, max_context: {max_context}}}
hardware: {{gpu: {gpu}, nodes: 1, gpus_per_node: 8, intra_node_link: nvlink4}}
deployment: {{replicas: 1, tp: {tp}, pp: 1, gpu_memory_utilization: 0.9}}
engine:
  scheduler: {{policy: prefill-first, max_batched_tokens: {budget}, max_running: 256{multi_step}}}
  kv: {{block_tokens: 16}}
  cuda_graphs: {{buckets: {buckets}, eager_fallback: true}}
  version: "{version}"
{step_model}{host}router: {{policy: round-robin}}
workload:
{workload}
"""


def closed_batch_workload():
    return (f"  requests: {LATENCY_BATCH}\n"
            f"  arrival: {{process: closed-loop, users: {LATENCY_BATCH}, think_time: 100000s}}\n"
            f"  classes:\n    c:\n      share: 1\n"
            f"      prompt: [{{segment: unique, tokens: {LATENCY_INPUT}}}]\n"
            f"      output_tokens: {LATENCY_OUTPUT}\n")


def trace_workload(path):
    return f"  trace: {{file: {path}, format: csv, class: c}}\n"


def sharegpt_lengths(data):
    f = os.path.join(data, "measurements/06_surajssd_a100_llama33_70b_tp8_vs_tp4pp2/per_request/tp8_pp1/"
                     "serving_meta-llama-Llama-3.3-70B-Instruct_tp8_pp1_sharegpt_qps_01.json")
    j = json.load(open(f))
    return list(zip(j["input_lens"], j["output_lens"]))


def write_trace(path, lengths, rate, count, seed):
    rng = random.Random(seed)
    t = 0.0
    with open(path, "w") as out:
        out.write("arrival_s,prompt_tokens,output_tokens\n")
        for i in range(count):
            p, o = lengths[i] if count == len(lengths) else rng.choice(lengths)
            out.write(f"{t:.6f},{p},{max(1, o)}\n")
            t += rng.expovariate(rate)


def run(fp, tmp, name, text):
    path = os.path.join(tmp, name + ".yaml")
    with open(path, "w") as f:
        f.write(text)
    r = subprocess.run([fp, "simulate", path, "--json"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{name}: fleetplan exited {r.returncode}: {r.stderr.strip()}")
    c = json.loads(r.stdout)["classes"]["c"]
    return {m: c[m] for m in ("ttft_ms", "tpot_ms", "e2e_ms")}


def table03(data):
    rows = list(csv.DictReader(open(os.path.join(data, "measurements/03_vllm_ci_perf_benchmark_h100_h200_2024/data.csv"))))
    def value(label, test, metric):
        vals = [float(r["value"]) for r in rows
                if r["gpu_label_in_table"] == label and r["test_name"] == test and r["metric"] == metric]
        return sum(vals) / len(vals) if vals else None
    return value


def fit_ab(rows):
    """Least squares of gap_per_step = a + b (tp - 1) over (tp, gap) rows."""
    xs = [tp - 1 for tp, _ in rows]
    ys = [g for _, g in rows]
    n = len(rows)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx > 0 else 0.0
    return my - b * mx, b


def fit_host(out):
    rows = [o for o in out if o["metric"].startswith("batch latency")]
    for o in rows:
        o["gap_per_step_ms"] = (o["measured_ms"] - o["predicted_ms"]) / LATENCY_STEPS
    a, b = fit_ab([(o["tp"], o["gap_per_step_ms"]) for o in rows])
    print(f"fit on all {len(rows)} rows: per step {a:.3f} ms + {b:.3f} ms x (tp - 1)")
    print("| case | GPU | measured ms | no host ms | gap per step ms | held out: a, b fitted on the others | predicted ms | error |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for i, o in enumerate(rows):
        others = [(r["tp"], r["gap_per_step_ms"]) for j, r in enumerate(rows) if j != i]
        la, lb = fit_ab(others)
        pred = o["predicted_ms"] + LATENCY_STEPS * (la + lb * (o["tp"] - 1))
        err = (pred - o["measured_ms"]) / o["measured_ms"] * 100
        print(f"| {o['case']} | {o['gpu']} | {o['measured_ms']:.1f} | {o['predicted_ms']:.1f} | {o['gap_per_step_ms']:.3f} | "
              f"{la:.3f} + {lb:.3f} (tp - 1) | {pred:.1f} | {err:+.1f} % |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fleetplan", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--step-model", default="default",
                    help="default (the scenario default), roofline, or a step_model map in YAML flow form")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--no-host-overhead", action="store_true",
                    help="host_overhead: 0 in every scenario (instead of the engine version's default)")
    ap.add_argument("--fit-host", action="store_true",
                    help="with --no-host-overhead: fit the v0 host overhead per step, a + b (tp - 1), on the batch-latency "
                         "rows, and predict each row from the other three (leave-one-out)")
    a = ap.parse_args()
    if a.step_model == "default":
        step_model = ""
    elif a.step_model == "roofline":
        step_model = "  step_model: {kind: roofline}\n"
    else:
        step_model = f"  step_model: {a.step_model}\n"
    host = "  host_overhead: 0ms\n" if a.no_host_overhead else ""
    value = table03(a.data)
    lengths = sharegpt_lengths(a.data)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        gpus = [("h100-sxm-80g", "8xH100"), ("h200-141g", "H200")]
        for gpu, label in gpus:
            for model, tp, test in [("llama-3.1-70b", 4, "latency_llama70B_tp4"), ("llama-3.1-8b", 1, "latency_llama8B_tp1")]:
                measured = value(label, test, "mean_latency")
                text = SCENARIO.format(multi_step="", name=f"{test}-{gpu}", model=model, max_context=8192, gpu=gpu, tp=tp, budget=8192,
                                       buckets=V0_GRAPH_BUCKETS, version=SET03_VERSION, step_model=step_model, host=host,
                                       workload=closed_batch_workload())
                sim = run(a.fleetplan, tmp, f"{test}-{gpu}", text)
                out.append({"set": "03", "case": f"{test} batch {LATENCY_BATCH} {LATENCY_INPUT}/{LATENCY_OUTPUT}", "gpu": gpu,
                            "tp": tp, "metric": "batch latency (mean E2E)", "measured_ms": measured,
                            "predicted_ms": sim["e2e_ms"]["mean"]})
            trace = os.path.join(tmp, f"qps1-{gpu}.csv")
            write_trace(trace, lengths, 1.0, len(lengths), seed=1)
            text = SCENARIO.format(multi_step="", name=f"serving-qps1-{gpu}", model="llama-3.1-70b", max_context=8192, gpu=gpu, tp=4,
                                   budget=8192, buckets=V0_GRAPH_BUCKETS, version=SET03_VERSION, step_model=step_model,
                                   host=host,
                                   workload=trace_workload(trace))
            sim = run(a.fleetplan, tmp, f"serving-qps1-{gpu}", text)
            for metric, key, stat in [("mean TTFT", "ttft_ms", "mean"), ("median TTFT", "ttft_ms", "p50")]:
                m = value(label, "serving_llama70B_tp4_sharegpt_qps_1", metric.replace(" TTFT", "_ttft").replace("median", "median"))
                if m is not None:
                    out.append({"set": "03", "case": "serving 70B TP4 ShareGPT 1 req/s", "gpu": gpu, "metric": metric,
                                "measured_ms": m, "predicted_ms": sim[key][stat]})
            m = value(label, "serving_llama70B_tp4_sharegpt_qps_1", "mean_itl")
            if m is not None:
                out.append({"set": "03", "case": "serving 70B TP4 ShareGPT 1 req/s", "gpu": gpu, "metric": "mean ITL (vs TPOT)",
                            "measured_ms": m, "predicted_ms": sim["tpot_ms"]["mean"]})
        rows04 = list(csv.DictReader(open(os.path.join(
            a.data, "measurements/04_sglang_repo_vllm060_vs_sglang030_h100_70b_tp4/data.csv"))))
        for r in rows04:
            if r["gpu"] != "H100-80GB" or r["engine"] != "vLLM v0.6.0" or r["mode"] != "online":
                continue
            rate, count = float(r["rps"]), int(r["num_prompts"])
            trace = os.path.join(tmp, f"set04-{int(rate)}.csv")
            write_trace(trace, lengths, rate, count, seed=int(rate))
            text = SCENARIO.format(multi_step=f", num_scheduler_steps: {SET04_SCHEDULER_STEPS}", name=f"set04-{int(rate)}", model="llama-3.1-70b", max_context=4096, gpu="h100-sxm-80g",
                                   tp=4, budget=4096, buckets=V0_GRAPH_BUCKETS, version=SET04_VERSION,
                                   step_model=step_model, host=host,
                                   workload=trace_workload(trace))
            sim = run(a.fleetplan, tmp, f"set04-{int(rate)}", text)
            for metric, col, key in [("median TTFT", "median_ttft_ms", "ttft_ms"), ("median TPOT", "median_tpot_ms", "tpot_ms"),
                                     ("median E2E", "median_e2e_latency_ms", "e2e_ms")]:
                out.append({"set": "04", "case": f"70B TP4 ShareGPT {int(rate)} req/s (vLLM 0.6.0, multi-step 10)",
                            "gpu": "h100-sxm-80g", "metric": metric, "measured_ms": float(r[col]),
                            "predicted_ms": sim[key]["p50"]})
    for o in out:
        o["error_pct"] = round((o["predicted_ms"] - o["measured_ms"]) / o["measured_ms"] * 100, 1)
    if a.fit_host:
        fit_host(out)
        return
    if a.json:
        json.dump(out, sys.stdout, indent=1)
        print()
        return
    print("| set | case | GPU | metric | measured ms | predicted ms | error |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for o in out:
        print(f"| {o['set']} | {o['case']} | {o['gpu']} | {o['metric']} | {o['measured_ms']:.1f} | "
              f"{o['predicted_ms']:.1f} | {o['error_pct']:+.1f} % |")


if __name__ == "__main__":
    main()
