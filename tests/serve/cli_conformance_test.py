#!/usr/bin/env python3
"""The `fleetplan serve` binary from the outside, over loopback.

  cli_conformance_test.py FLEETPLAN curl     streamed and not agree through curl; [DONE]; error shape
  cli_conformance_test.py FLEETPLAN h2load   2,000 concurrent streaming clients (h2load), then baseline

Each mode starts the server on ephemeral ports with --exit-after, so it always stops by itself.
Exit 77 (skipped) when curl / h2load is missing.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = "llama-3.1-8b"


def start(fleetplan, work, *extra):
    ports = os.path.join(work, "ports")
    log = open(os.path.join(work, "serve.log"), "w")
    proc = subprocess.Popen([fleetplan, "serve", os.path.join(HERE, "serve-test.yaml"), "--port", "0",
                             "--exit-after", "90s", "--ports-file", ports, *extra], stderr=log)
    for _ in range(200):
        if os.path.exists(ports) and os.path.getsize(ports) > 0:
            return proc, int(open(ports).read().split()[0])
        if proc.poll() is not None:
            sys.exit(f"server exited early: {open(os.path.join(work, 'serve.log')).read()}")
        time.sleep(0.05)
    proc.kill()
    sys.exit("server did not start")


def curl(port, path, body=None, extra=()):
    cmd = ["curl", "-sS", "-N", "-o", "-", "-w", "\n%{http_code} %{content_type}", f"http://127.0.0.1:{port}{path}", *extra]
    if body is not None:
        cmd += ["-H", "Content-Type: application/json", "-d", json.dumps(body)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=30).stdout
    text, _, status = out.rpartition("\n")
    code, _, ctype = status.partition(" ")
    return int(code), ctype, text


def events(body):
    assert body.endswith("data: [DONE]\n\n"), body[-200:]
    parts = body.split("\n\n")
    assert parts[-1] == "" and parts[-2] == "data: [DONE]"
    out = []
    for p in parts[:-2]:
        assert p.startswith("data: "), p
        out.append(json.loads(p[len("data: "):]))
    return out


def check(cond, what):
    if not cond:
        sys.exit(f"FAIL: {what}")


def mode_curl(fleetplan, work):
    if shutil.which("curl") is None:
        print("SKIP: curl is not installed")
        return 77
    proc, port = start(fleetplan, work, "--speed", "50")
    try:
        req = {"model": MODEL, "prompt": "Hello from curl", "max_tokens": 16, "seed": 1, "ignore_eos": True}
        code, ctype, text = curl(port, "/v1/completions", req)
        check(code == 200 and ctype.startswith("application/json"), f"non-streamed: {code} {ctype} {text}")
        whole = json.loads(text)
        code, ctype, text = curl(port, "/v1/completions", dict(req, stream=True, stream_options={"include_usage": True}))
        check(code == 200 and ctype == "text/event-stream", f"streamed: {code} {ctype}")
        ev = events(text)
        check("".join(e["choices"][0]["text"] for e in ev if e["choices"]) == whole["choices"][0]["text"], "same text")
        check(ev[-1]["usage"] == whole["usage"], "same usage")
        check(ev[-2]["choices"][0]["finish_reason"] == whole["choices"][0]["finish_reason"] == "length", "finish")
        check(len(ev) == 16 + 1, "one event per token plus usage")
        code, _, text = curl(port, "/v1/completions", dict(req, n=2))
        err = json.loads(text)["error"]
        check(code == 400 and err["param"] == "n" and set(err) == {"message", "type", "param", "code"}, f"error shape {text}")
        code, _, text = curl(port, "/health")
        check(code == 200, "health")
        code, ctype, text = curl(port, "/metrics")
        check(code == 200 and "vllm:num_requests_running{" in text, "metrics")
    finally:
        proc.terminate()
        check(proc.wait(timeout=10) == 0, "server exits 0 on SIGTERM")
    print("curl conformance: ok")
    return 0


def metrics(port):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    vals = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            vals[name] = float(value)
    return vals


def value(vals, prefix):
    return next(v for k, v in vals.items() if k.startswith(prefix))


def mode_h2load(fleetplan, work):
    if shutil.which("h2load") is None:
        print("SKIP: h2load is not installed (Debian nghttp2-client)")
        return 77
    proc, port = start(fleetplan, work, "--speed", "10")
    try:
        body = os.path.join(work, "body.json")
        with open(body, "w") as f:
            json.dump({"model": MODEL, "prompt": "load " * 50, "max_tokens": 50, "ignore_eos": True, "stream": True}, f)
        out = subprocess.run(["h2load", "--h1", "-c", "2000", "-n", "2000", "-m", "1", "-d", body, "-H",
                              "Content-Type: application/json", f"http://127.0.0.1:{port}/v1/completions"],
                             capture_output=True, text=True, timeout=120).stdout
        print(out)
        check("2000 succeeded, 0 failed, 0 errored" in out, "every h2load request succeeded")
        check("status codes: 2000 2xx" in out, "every answer 200")
        for _ in range(200):
            vals = metrics(port)
            if value(vals, "fleetplan:live_requests{") == 0:
                break
            time.sleep(0.05)
        check(value(vals, "vllm:num_requests_running{") == 0 and value(vals, "vllm:num_requests_waiting{") == 0, "idle")
        check(value(vals, "fleetplan:kv_blocks_referenced{") == 0, "no KV references left")
        check(value(vals, 'vllm:request_success_total{engine="0",model_name="llama-3.1-8b",finished_reason="length"}') == 2000,
              "2000 completed")
        check(value(vals, "vllm:generation_tokens_total{") == 2000 * 50, "every token generated")
        p99_ok = value(vals, 'fleetplan:token_lateness_seconds_bucket{engine="0",model_name="llama-3.1-8b",le="0.005"}')
        total = value(vals, "fleetplan:token_lateness_seconds_count{")
        print(f"token lateness <= 5 ms: {p99_ok / total:.4f} of {int(total)} tokens; max "
              f"{value(vals, 'fleetplan:token_lateness_max_seconds{') * 1000:.2f} ms")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    print("h2load load: ok")
    return 0


def main():
    fleetplan, mode = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as work:
        return {"curl": mode_curl, "h2load": mode_h2load}[mode](fleetplan, work)


if __name__ == "__main__":
    sys.exit(main())
