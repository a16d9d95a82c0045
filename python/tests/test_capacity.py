"""fleetplan.capacity and fleetplan.rollout_compare: the verbs' JSON, through the module."""

import json

import fleetplan
from conftest import canonical

SPEC = """version: 1
scenario: {builtin: atlas}
demand: {east: 10/s, west: 4/s}
domains:
  a: {region: east, gpus: 64}
  b: {region: east, gpus: 64}
  w: {region: west, gpus: 32}
survive: largest-domain
replica_capacity: {rate: 2/s}
layouts: [{tp: 4}, {tp: 8}]
price: {on_demand: 4/gpu-h}
"""


def test_capacity_is_the_cli_s_json(cli, tmp_path):
    spec = tmp_path / "cap.yaml"
    spec.write_text(SPEC)
    ours = fleetplan.capacity(spec, verify=False)
    p = cli("capacity", spec, "--json", "--quiet", "--no-verify", "--out", tmp_path / "o")
    assert canonical(ours) == canonical(json.loads(p.stdout))
    assert ours["set_by"] == ["domain:a", "domain:b"]
    assert ours["fleet"]["per_domain"]["a"]["replicas"] == 5  # each east domain carries all of east's 10/s


def test_capacity_over_budget_is_an_answer(tmp_path):
    spec = tmp_path / "cap.yaml"
    spec.write_text(SPEC + "budget: 100/month\n")
    result = fleetplan.capacity(spec, verify=False, out=tmp_path / "o")
    assert result["within_budget"] is False
    assert (tmp_path / "o" / "capacity.json").exists()


def test_rollout_compare_of_two_runs(cli, tmp_path, root):
    base = fleetplan.Scenario.load(root / "tests/scenarios/router-round-robin.yaml")
    runs = {}
    for name, per_seq in (("base", None), ("slow", "3ms")):
        s = base.copy()
        if per_seq:
            s["engine.step_model.decode.per_seq"] = per_seq
        s["output.requests"] = True
        s.save(tmp_path / (name + ".yaml"))
        cli("simulate", tmp_path / (name + ".yaml"), "--quiet", "--out", tmp_path / name)
        runs[name] = tmp_path / name / "requests.jsonl"
    same = fleetplan.rollout_compare(runs["base"], runs["base"], min_samples=20)
    assert same["verdict"] == "pass"
    slow = fleetplan.rollout_compare(runs["slow"], runs["base"], metrics=["e2e_ms"], min_samples=20)
    assert slow["verdict"] == "fail"
