"""fleetplan.gate: the gate verbs' JSON through the module."""

import json

import pytest

import fleetplan
from conftest import canonical

GRAPHS = """identity: {artifact: 'sha256:m1', runtime: vllm, runtime_version: 0.6.3, hardware: h100-sxm-80g, engine_config: 'sha256:e1'}
batches: {1: 0.5, 3: 0.3, 20: 0.2}
buckets: [1, 4, 8]
eager_cpu: 4ms
graph_cpu: 0.3ms
graph_dispatch: 0.1ms
gpu: {1: 6ms, 4: 6.6ms, 8: 7ms, 32: 9ms}
graph_memory: 100MiB
memory_budget: %s
capture_time: 0.5s
"""


def test_graphs_gate_is_the_cli_s_json(cli, tmp_path):
    spec = tmp_path / "graphs.yaml"
    spec.write_text(GRAPHS % "1GiB")
    ours = fleetplan.gate("graphs", spec)
    p = cli("gate", "graphs", spec, "--json")
    assert canonical(ours) == canonical(json.loads(p.stdout))
    assert ours["decision"] == "pass"
    assert ours["proposed_buckets"] == [1, 3, 20]


def test_a_failed_gate_is_an_answer_and_bad_calls_raise(tmp_path):
    spec = tmp_path / "graphs.yaml"
    spec.write_text(GRAPHS % "100MiB")  # three graphs of 100 MiB do not fit
    tight = fleetplan.gate("graphs", spec)
    assert tight["decision"] == "fail"
    memory = [c for c in tight["checks"] if c["name"] == "memory"][0]
    assert memory["decision"] == "fail"
    with pytest.raises(fleetplan.UsageError, match="unknown gate 'graph'"):
        fleetplan.gate("graph", spec)
    with pytest.raises(TypeError, match="unexpected keyword argument 'ordinary'"):
        fleetplan.gate("graphs", spec, ordinary="8ms")
    with pytest.raises(fleetplan.InputError):
        fleetplan.gate("graphs", tmp_path / "missing.yaml")
