"""fleetplan.fit and fleetplan.layout: the verbs' JSON, their errors."""

import json

import pytest

import fleetplan
from conftest import canonical


def test_fit_is_the_cli_s_json(cli):
    flags = dict(model="atlas-70b", gpu="h100-sxm-80g", tp=4, context=8192, concurrency=32)
    ours = fleetplan.fit(**flags)
    p = cli("fit", "--model", "atlas-70b", "--gpu", "h100-sxm-80g", "--tp", "4", "--context", "8192",
            "--concurrency", "32", "--json")
    assert canonical(ours) == canonical(json.loads(p.stdout))
    assert ours["fits"] is True


def test_fit_of_a_scenario_file(cli, root):
    path = root / "tests/scenarios/router-round-robin.yaml"
    p = cli("fit", "--scenario", path, "--json")
    assert canonical(fleetplan.fit(scenario=path)) == canonical(json.loads(p.stdout))
    assert canonical(fleetplan.fit(scenario=fleetplan.Scenario.load(path))) == canonical(json.loads(p.stdout))
    edited = fleetplan.Scenario.load(path)
    edited["deployment.tp"] = 2
    with pytest.raises(TypeError, match="save this Scenario"):
        fleetplan.fit(scenario=edited)


def test_not_fitting_is_an_answer(cli):
    ours = fleetplan.fit(model="atlas-70b", gpu="h100-sxm-80g", tp=1)
    p = cli("fit", "--model", "atlas-70b", "--gpu", "h100-sxm-80g", "--tp", "1", "--json")
    assert p.returncode == 1
    assert ours["fits"] is False
    assert canonical(ours) == canonical(json.loads(p.stdout))


def test_fit_errors_name_the_flag():
    # A bad argument value is a usage error (code 2), as a bad flag value is on the CLI.
    with pytest.raises(fleetplan.UsageError) as e:
        fleetplan.fit(model="atlas-70b", gpu="h100-sxm-80g", tp="four")
    assert e.value.field == "--tp"
    assert "expected an integer, got 'four'" in e.value.detail
    with pytest.raises(fleetplan.UsageError) as e:
        fleetplan.fit(model="atlas-7b", gpu="h100-sxm-80g")
    assert e.value.code == 2 and "atlas-70b" in str(e.value)
    with pytest.raises(TypeError, match="unexpected keyword argument 'tensor_parallel'"):
        fleetplan.fit(model="atlas-70b", tensor_parallel=4)


def test_layout_is_the_cli_s_json(cli):
    ours = fleetplan.layout(model="atlas-70b", cluster="2x8xh100-sxm-80g", without=["gpu:n0/1"])
    p = cli("layout", "--model", "atlas-70b", "--cluster", "2x8xh100-sxm-80g", "--without", "gpu:n0/1", "--json")
    assert p.returncode == 0, p.stderr
    assert canonical(ours) == canonical(json.loads(p.stdout))
    assert ours["cluster"]["healthy_gpus"] == 15


def test_layout_usage_and_input_errors():
    with pytest.raises(fleetplan.UsageError) as e:
        fleetplan.layout(model="atlas-70b")  # --cluster is required
    assert e.value.code == 2 and "--cluster" in str(e.value)
    with pytest.raises(fleetplan.UsageError) as e:
        fleetplan.layout(model="atlas-70b", cluster="2x8xh100-sxm-80g", batch="many")
    assert e.value.field == "--batch"
