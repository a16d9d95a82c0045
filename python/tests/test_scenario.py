"""fleetplan.Scenario: copies, field-by-field changes checked by the readers, YAML."""

import copy

import pytest

import fleetplan
from conftest import canonical


def test_copy_and_change_one_field():
    s = fleetplan.Scenario.atlas()
    s2 = s.copy()
    s2["hardware.nodes"] = 4  # Atlas's 3 nodes of 8 GPUs hold 6 replicas of TP 4
    s2["deployment.replicas"] = 8
    s3 = s.copy()
    with pytest.raises(fleetplan.InputError):
        s3["deployment.replicas"] = 8  # 32 GPUs of 24
    s3.update({"deployment.replicas": 8, "hardware.nodes": 4})  # valid together
    assert s3.to_dict() == s2.to_dict()
    assert s["deployment.replicas"] == 6 and s["hardware.nodes"] == 3
    assert s2["deployment.replicas"] == 8
    assert s2.source == "<built-in atlas> (edited)"
    assert s2.digest != s.digest
    r = fleetplan.simulate(s2, duration="20s").report
    assert r["deployment"]["replicas"] == 8
    assert r["deployment"]["gpus"] == 32
    assert r["scenario"]["source"] == "<built-in atlas> (edited)"
    assert len(r["replicas"]) == 8
    assert fleetplan.simulate(s, duration="20s").report["deployment"]["replicas"] == 6


def test_copy_module_and_constructor_copy_too():
    s = fleetplan.Scenario.atlas()
    for c in (copy.copy(s), copy.deepcopy(s), fleetplan.Scenario(s)):
        c["router.policy"] = "round-robin"
        assert s["router.policy"] == "cache-aware"


def test_a_bad_change_is_located_and_not_kept():
    s = fleetplan.Scenario.atlas()
    s["deployment.replicas"] = 3
    with pytest.raises(fleetplan.InputError) as e:
        s["engine.scheduler.policy"] = "decode_frist"
    err = e.value
    assert err.field == "engine.scheduler.policy"
    assert err.file == "<built-in atlas> (edited)"
    assert "did you mean 'decode-first'?" in err.detail
    shown = s.yaml.splitlines()  # the YAML the location points into is the unchanged one's
    assert s["engine.scheduler.policy"] != "decode_frist"
    assert s["deployment.replicas"] == 3
    assert err.line >= 1 and err.column >= 1 and len(shown) > err.line
    with pytest.raises(fleetplan.InputError) as e:
        s["deployment.replicas"] = 0
    assert e.value.field == "deployment.replicas"
    assert "expected an integer >= 1" in e.value.detail
    with pytest.raises(fleetplan.InputError) as e:
        s["deployment.replicaz"] = 2
    assert "did you mean 'replicas'?" in e.value.detail
    with pytest.raises(fleetplan.InputError) as e:
        s["deployment.replicas"] = 7  # 28 GPUs of 24: checked across sections, too
    assert e.value.field == "deployment.replicas" and "at most 6 replicas fit" in e.value.detail
    assert s["deployment.replicas"] == 3


def test_the_location_points_into_the_yaml_shown():
    s = fleetplan.Scenario.atlas()
    s["deployment.replicas"] = 3
    values = s.to_dict()
    values["deployment"]["tp"] = "four"
    with pytest.raises(fleetplan.InputError) as e:
        fleetplan.Scenario.from_dict(values)
    text = fleetplan.Scenario.from_dict(s.to_dict()).yaml  # same layout, valid value
    err = e.value
    assert err.field == "deployment.tp"
    line = text.splitlines()[err.line - 1]
    assert line.strip().startswith("tp:")


def test_get_contains_delete():
    s = fleetplan.Scenario.atlas()
    assert "deployment.replicas" in s
    assert "deployment.nothing" not in s
    assert s.get("deployment.nothing", 7) == 7
    with pytest.raises(KeyError):
        s["deployment.nothing"]
    with pytest.raises(KeyError):
        s["deployment..replicas"]
    classes = s["workload.classes"]
    first = next(iter(classes))
    assert isinstance(s["workload.classes.%s.share" % first], (int, float))
    s2 = s.copy()
    del s2["router.policy"]  # the reader's default applies
    assert "router.policy" not in s2
    assert "router.policy" in s
    values = s["workload.classes"]
    values[first]["share"] = 123  # a copy: the scenario is unchanged
    assert s["workload.classes.%s.share" % first] != 123


def test_values_round_trip_to_the_same_scenario(root):
    for s in (fleetplan.Scenario.atlas(), fleetplan.Scenario.load(root / "tests/scenarios/router-round-robin.yaml")):
        again = fleetplan.Scenario.from_dict(s.to_dict())
        assert again.to_dict() == s.to_dict()
        a = fleetplan.simulate(s, duration="15s").report
        b = fleetplan.simulate(again, duration="15s").report
        for r in (a, b):
            r.pop("inputs_digest")
            r["scenario"].pop("digest")
            r["scenario"].pop("source")
        assert canonical(a) == canonical(b)


def test_plain_and_quoted_scalars_keep_their_types():
    s = fleetplan.Scenario.from_yaml(fleetplan.Scenario.atlas().yaml)
    assert s["deployment.replicas"] == 6 and isinstance(s["deployment.replicas"], int)
    assert isinstance(s["router.policy"], str)
    assert s["deployment.gpu_memory_utilization"] == 0.9
    assert s["model.kv_window"] is None
    assert s["engine.prefix_cache.enabled"] is True
    assert s["engine.cuda_graphs.buckets"] == [1, 4, 8, 16, 32]
    with pytest.raises(fleetplan.InputError) as e:
        fleetplan.Scenario.from_yaml(s.yaml.replace("replicas: 6", 'replicas: "6"', 1), name="q.yaml")
    assert e.value.field == "deployment.replicas" and e.value.file == "q.yaml"
    # A quoted value that a text reader takes reads the same as the plain one.
    t = fleetplan.Scenario.from_yaml(s.yaml.replace("duration: 10m", 'duration: "10m"', 1))
    assert t["workload.duration"] == "10m"
    assert t.to_dict() == s.to_dict()


def test_saved_scenario_runs_the_same_in_the_cli(cli, tmp_path):
    s = fleetplan.Scenario.atlas()
    s["deployment.replicas"] = 2
    s["router.policy"] = "least-outstanding"
    path = tmp_path / "edited.yaml"
    s.save(path)
    p = cli("simulate", path, "--duration", "20s", "--json", "--quiet", "--out", tmp_path / "out")
    assert p.returncode == 0, p.stderr
    assert fleetplan.simulate(fleetplan.Scenario.load(path), duration="20s").report_json == p.stdout
    ours = fleetplan.simulate(s, duration="20s").report
    import json
    theirs = json.loads(p.stdout)
    assert ours["scenario"]["digest"] == theirs["scenario"]["digest"]  # the same YAML bytes
    assert ours["scenario"]["source"] != theirs["scenario"]["source"]
    ours["scenario"].pop("source"), theirs["scenario"].pop("source")
    assert canonical(ours) == canonical(theirs)


def test_scenario_identity():
    s = fleetplan.Scenario.atlas()
    assert s.name
    assert s.digest.startswith("sha256:") and len(s.digest) == 71
    assert isinstance(s.seed, int)
    assert isinstance(s.derived, list) and s.derived
    assert "Scenario(" in repr(s)


def test_a_dict_that_contains_itself_is_refused_not_a_crash():
    # K5: the conversion recursed for ever (11.9 s, 1.7 GB, then a segmentation fault).
    x = {}
    x["a"] = x
    for make in (fleetplan.Scenario.from_dict, fleetplan.Scenario):
        with pytest.raises(ValueError, match="nested more than 64 levels deep"):
            make(x)
    with pytest.raises(ValueError, match="does a dict or list contain itself"):
        fleetplan.simulate(x)
    deep = node = {}
    for _ in range(100):
        node["b"] = {}
        node = node["b"]
    with pytest.raises(ValueError, match=r"^b\.b\.b"):
        fleetplan.Scenario.from_dict(deep)
