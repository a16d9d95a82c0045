"""Records as a numpy structured array, and as dicts without numpy."""

import json
import math
import os
import subprocess
import sys

import numpy as np

import fleetplan

SCENARIO = "tests/scenarios/router-round-robin.yaml"


def test_numpy_records_hold_the_jsonl_fields(root):
    r = fleetplan.simulate(str(root / SCENARIO), requests=250)
    rec = r.records
    rows = r.records_as_dicts()
    assert isinstance(rec, np.ndarray) and len(rec) == len(rows) == 250
    assert rec.dtype.names == (
        "id", "class", "tenant", "arrival_s", "first_token_s", "finish_s", "status", "input_tokens",
        "output_tokens", "itl_max_ms", "valid", "replica", "matched_prefix_tokens", "queue_age_at_assignment_ms")
    for a, d in zip(rec, rows):
        assert a["id"] == d["id"] and a["class"] == d["class"] and a["status"] == d["status"]
        assert a["tenant"] == d.get("tenant", "")
        assert a["arrival_s"] == d["arrival_s"]
        for key in ("first_token_s", "finish_s"):
            assert (math.isnan(a[key]) and d[key] is None) or a[key] == d[key]
        for key in ("itl_max_ms", "queue_age_at_assignment_ms"):
            assert (math.isnan(a[key]) and key not in d) or a[key] == d[key]
        for key in ("replica", "matched_prefix_tokens"):
            assert (a[key] == -1 and key not in d) or a[key] == d[key]
        assert a["valid"] == d.get("valid", True)
        assert a["input_tokens"] == d["input_tokens"] and a["output_tokens"] == d["output_tokens"]
    # Round-robin over 4 replicas: every replica served exactly a quarter.
    assert sorted(np.unique(rec["replica"], return_counts=True)[1].tolist()) == [62, 62, 63, 63]
    assert (rec["tenant"] != "").all()


def test_records_agree_with_the_report():
    r = fleetplan.simulate(fleetplan.Scenario.atlas(), duration="30s")
    rec = r.records
    classes = r.report["classes"]
    for name, figures in classes.items():
        mine = rec[rec["class"] == name]
        assert len(mine) == figures["requests"]
        ttft = (mine["first_token_s"] - mine["arrival_s"]) * 1e3
        ttft = ttft[~np.isnan(ttft)]
        if len(ttft):
            assert abs(ttft.max() - figures["ttft_ms"]["max"]) < 1e-3
    assert (rec["status"] == "ok").sum() == r.report["fleet"]["status"]["ok"]


def test_without_numpy_records_are_dicts(root):
    code = (
        "import sys; sys.modules['numpy'] = None\n"
        "import json, fleetplan\n"
        "r = fleetplan.simulate(%r, requests=40)\n"
        "assert isinstance(r.records, list)\n"
        "print(json.dumps(r.records))\n" % str(root / SCENARIO))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ.copy())
    assert p.returncode == 0, p.stderr
    with_numpy = fleetplan.simulate(str(root / SCENARIO), requests=40).records_as_dicts()
    assert json.loads(p.stdout) == with_numpy
