"""fleetplan.sweep: the CLI's sweep.json, on native threads, the same for any jobs."""

import json

import pytest

import fleetplan
from conftest import canonical

SPEC = """version: 1
base: {builtin: atlas}
overrides: {workload.duration: 15s}
axes:
  deployment.replicas: [2, 4]
  router.policy: [round-robin, cache-aware]
seeds: [1, 2]
"""


def test_sweep_is_the_cli_s_json_for_any_jobs(cli, tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC)
    p = cli("sweep", path, "--jobs", "1", "--json", "--quiet", "--out", tmp_path / "cli")
    assert p.returncode == 0, p.stderr
    one = fleetplan.sweep(path, jobs=1)
    two = fleetplan.sweep(path, jobs=2, out=tmp_path / "py")
    assert canonical(one) == canonical(json.loads(p.stdout))
    assert canonical(two) == canonical(one)
    assert (tmp_path / "py" / "sweep.json").read_text() == (tmp_path / "cli" / "sweep.json").read_text()
    assert len(one["points"]) == 8
    assert [pt["values"] for pt in one["points"]][::2] == [pt["values"] for pt in one["points"]][1::2]


def test_sweep_from_text_and_dict():
    from_text = fleetplan.sweep(SPEC, jobs=2)
    spec = {"version": 1, "base": {"builtin": "atlas"}, "overrides": {"workload.duration": "15s"},
            "axes": {"deployment.replicas": [2, 4], "router.policy": ["round-robin", "cache-aware"]}, "seeds": [1, 2]}
    from_dict = fleetplan.sweep(spec, jobs=2)
    assert [p["values"] for p in from_text["points"]] == [p["values"] for p in from_dict["points"]]
    assert [p["status"] for p in from_dict["points"]] == ["ok"] * 8


def test_sweep_errors_are_located():
    with pytest.raises(fleetplan.InputError) as e:
        fleetplan.sweep(SPEC.replace("deployment.replicas", "deployment.replica"))
    assert e.value.file == "<string>" and e.value.line == 5
    assert "did you mean 'deployment.replicas'?" in e.value.detail
    with pytest.raises(fleetplan.InputError) as e:
        fleetplan.sweep(SPEC, jobs=0)
    assert e.value.field == "jobs"
