"""fleetplan.simulate: the CLI's report byte for byte, records, arguments, the GIL."""

import json
import os
import signal
import threading
import time

import pytest

import fleetplan
from conftest import canonical

SCENARIO = "tests/scenarios/router-round-robin.yaml"


def cli_report(cli, tmp_path, *args):
    p = cli("simulate", *args, "--json", "--quiet", "--out", tmp_path / "out")
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_atlas_report_is_the_cli_s_bytes(cli, tmp_path):
    r = fleetplan.simulate(fleetplan.Scenario.atlas(), duration="45s", seed=3)
    expected = cli_report(cli, tmp_path, "--duration", "45s", "--seed", "3")
    assert r.report_json == expected
    assert canonical(r.report) == canonical(json.loads(expected))
    assert r.report["scenario"]["source"] == "<built-in atlas>"


def test_a_path_gives_the_cli_s_report(cli, tmp_path, root):
    path = str(root / SCENARIO)
    r = fleetplan.simulate(path, requests=300)
    assert r.report_json == cli_report(cli, tmp_path, path, "--requests", "300")
    assert fleetplan.simulate(fleetplan.Scenario.load(path), requests=300).report_json == r.report_json


def test_records_are_requests_jsonl(cli, tmp_path, root):
    s = fleetplan.Scenario.load(root / SCENARIO)
    s["output.requests"] = True  # the file does not ask for requests.jsonl
    path = tmp_path / "scenario.yaml"
    s.save(path)
    r = fleetplan.simulate(s, requests=300)
    p = cli("simulate", path, "--requests", "300", "--quiet", "--out", tmp_path / "out")
    assert p.returncode == 0, p.stderr
    lines = (tmp_path / "out" / "requests.jsonl").read_text().splitlines()
    assert len(lines) == 300
    assert r.records_as_dicts() == [json.loads(line) for line in lines]


def test_same_inputs_same_report_another_seed_another(root):
    a = fleetplan.simulate(fleetplan.Scenario.atlas(), duration="30s", seed=1)
    b = fleetplan.simulate(fleetplan.Scenario.atlas(), duration="30s", seed=1)
    c = fleetplan.simulate(fleetplan.Scenario.atlas(), duration="30s", seed=2)
    assert a.report_json == b.report_json
    assert a.report["fleet"] != c.report["fleet"]
    assert c.report["scenario"]["seed"] == 2


def test_yaml_text_and_dict_read_like_the_file(root):
    path = root / SCENARIO
    text = path.read_text()
    from_file = fleetplan.simulate(str(path), requests=200).report
    from_text = fleetplan.simulate(text, requests=200).report
    values = fleetplan.Scenario.load(path).to_dict()
    from_dict = fleetplan.simulate(values, requests=200).report
    assert from_text["scenario"]["source"] == "<string>"
    assert from_dict["scenario"]["source"] == "<dict>"

    def without_identity(report):
        report = dict(report)
        report["scenario"] = {k: v for k, v in report["scenario"].items() if k not in ("source", "digest")}
        report.pop("inputs_digest")
        return report

    assert from_text == {**from_file, "scenario": {**from_file["scenario"], "source": "<string>"}}
    assert canonical(without_identity(from_dict)) == canonical(without_identity(from_file))


def test_duration_takes_units_or_seconds():
    a = fleetplan.simulate(fleetplan.Scenario.atlas(), duration="20s")
    b = fleetplan.simulate(fleetplan.Scenario.atlas(), duration=20)
    c = fleetplan.simulate(fleetplan.Scenario.atlas(), duration=20.0)
    assert a.report_json == b.report_json == c.report_json
    assert max(a.records["arrival_s"]) < 20


def test_bad_arguments_are_located_input_errors():
    atlas = fleetplan.Scenario.atlas()
    with pytest.raises(fleetplan.InputError) as e:
        fleetplan.simulate(atlas, duration="20 parsecs")
    assert e.value.field == "duration" and e.value.code == 3 and e.value.file is None
    assert str(e.value).startswith("duration: ")
    with pytest.raises(fleetplan.InputError) as e:
        fleetplan.simulate(atlas, duration=-1)
    assert e.value.field == "duration"
    with pytest.raises(fleetplan.InputError) as e:
        fleetplan.simulate(atlas, seed=-1)
    assert e.value.field == "seed"
    with pytest.raises(fleetplan.InputError) as e:
        fleetplan.simulate(atlas, requests=0)
    assert e.value.field == "requests"
    assert isinstance(e.value, ValueError)


def test_out_of_range_integers_and_a_zero_duration_say_so():
    # Regression: pybind11's signature dump for integers the native call cannot take, and
    # "no records to report on" for a run of no time.
    atlas = fleetplan.Scenario.atlas()
    with pytest.raises(fleetplan.InputError) as e:
        fleetplan.simulate(atlas, seed=2**64)
    assert str(e.value) == "seed: expected an integer from 0 to 18446744073709551615, got 18446744073709551616"
    with pytest.raises(fleetplan.InputError) as e:
        fleetplan.simulate(atlas, requests=10**30)
    assert e.value.field == "requests" and "from 1 to 9223372036854775807" in str(e.value)
    for zero in (0, "0s"):
        with pytest.raises(fleetplan.InputError) as e:
            fleetplan.simulate(atlas, duration=zero)
        assert e.value.field == "duration", str(e.value)


def test_a_bad_yaml_string_is_located():
    text = fleetplan.Scenario.atlas().yaml.replace("policy: cache-aware", "policy: cache-awar", 1)
    assert text != fleetplan.Scenario.atlas().yaml
    with pytest.raises(fleetplan.InputError) as e:
        fleetplan.simulate(text)
    err = e.value
    line = text.splitlines()[err.line - 1]
    assert err.file == "<string>"
    assert err.field == "router.policy"
    assert line[err.column - 1:].startswith("cache-awar")
    assert "did you mean 'cache-aware'" in err.detail
    assert str(err).startswith("<string>:%d:%d: router.policy: " % (err.line, err.column))


def test_a_dict_is_checked_by_the_same_readers():
    values = fleetplan.Scenario.atlas().to_dict()
    values["deployment"]["replicaz"] = 2
    with pytest.raises(fleetplan.InputError) as e:
        fleetplan.simulate(values)
    assert e.value.file == "<dict>"
    assert e.value.field == "deployment"
    assert "unknown field 'replicaz'; did you mean 'replicas'?" in e.value.detail
    values = fleetplan.Scenario.atlas().to_dict()
    values["deployment"]["replicas"] = "4"  # a str is a string, as "4" in YAML
    with pytest.raises(fleetplan.InputError) as e:
        fleetplan.simulate(values)
    assert e.value.field == "deployment.replicas"
    values["deployment"]["replicas"] = object()
    with pytest.raises(TypeError, match="deployment.replicas: no scenario value is a object"):
        fleetplan.simulate(values)


def test_missing_file_and_wrong_type():
    with pytest.raises(fleetplan.InputError, match="cannot read 'no-such-scenario.yaml'"):
        fleetplan.simulate("no-such-scenario.yaml")
    with pytest.raises(TypeError):
        fleetplan.simulate(42)


def test_a_layout_that_leaves_no_kv_memory_is_check_failed():
    s = fleetplan.Scenario.atlas()
    s["deployment.gpu_memory_utilization"] = 0.3
    with pytest.raises(fleetplan.CheckFailed) as e:
        fleetplan.simulate(s, duration="10s")
    assert e.value.code == 1


def test_simulate_releases_the_gil():
    s = fleetplan.Scenario.atlas()
    done = {}

    def run():
        start = time.perf_counter()
        fleetplan.simulate(s, duration="3m")
        done["seconds"] = time.perf_counter() - start

    t = threading.Thread(target=run)
    ticks = 0
    t.start()
    while t.is_alive():
        ticks += 1
        time.sleep(0.001)
    t.join()
    # With the GIL held for the whole run this loop could not turn while it lasted.
    assert done["seconds"] > 0.05
    assert ticks >= 10, (ticks, done)


def test_timeseries_is_the_report_s_section():
    r = fleetplan.simulate(fleetplan.Scenario.atlas(), duration="10s")
    ts = r.timeseries
    assert ts is r.report["timeseries"]
    assert ts["windows"] == len(ts["window_start_s"]) > 10
    assert len(ts["replicas"]) == 6
    for name, figures in r.report["classes"].items():
        assert sum(ts["classes"][name]["arrivals"]) == figures["requests"]
        assert sum(ts["classes"][name]["completions"]) == int((r.records[r.records["class"] == name]["status"] == "ok").sum())


def test_threads_simulating_side_by_side_get_the_sequential_bytes():
    seeds = [1, 2, 3, 4]
    atlas = fleetplan.Scenario.atlas()
    sequential = [fleetplan.simulate(atlas, seed=s, duration="20s").report_json for s in seeds]
    parallel = [None] * len(seeds)

    def run(i):
        parallel[i] = fleetplan.simulate(atlas, seed=seeds[i], duration="20s").report_json

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(seeds))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert parallel == sequential


def test_ctrl_c_stops_a_long_simulation_promptly():
    # H7: the run released the GIL and never looked at signals, so Ctrl-C one second
    # into a long run raised KeyboardInterrupt only when the run ended (29.6 s uninterrupted).
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            fleetplan.simulate(fleetplan.Scenario.atlas(), duration="240m")
    finally:
        timer.cancel()
    assert time.monotonic() - started < 5.0
    # The next run is whole: nothing of the interrupted one is left behind.
    assert fleetplan.simulate(fleetplan.Scenario.atlas(), duration="20s").report["fleet"]["requests"] > 0


def test_requests_and_duration_together_are_a_usage_error():
    # S17: the CLI refuses --requests with --duration; the module ran with both.
    with pytest.raises(fleetplan.UsageError, match="give requests or duration, not both") as e:
        fleetplan.simulate(fleetplan.Scenario.atlas(), duration="1m", requests=5)
    assert e.value.code == 2
