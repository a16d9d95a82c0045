"""examples/sweep_replicas.py runs headless and plots goodput per GPU."""

import os
import subprocess
import sys


def test_sweep_example_runs_headless(root, tmp_path):
    out = tmp_path / "plot.png"
    env = dict(os.environ, MPLBACKEND="Agg")
    p = subprocess.run([sys.executable, str(root / "examples/sweep_replicas.py"), "--replicas", "1,2,4",
                        "--duration", "20s", "--out", str(out)], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].split()[:4] == ["replicas", "gpus", "goodput_rps", "goodput_per_gpu"]
    rows = [line.split() for line in lines[1:4]]
    assert [int(r[0]) for r in rows] == [1, 2, 4]
    assert [int(r[1]) for r in rows] == [4, 8, 16]
    for r in rows:
        assert abs(float(r[2]) / int(r[1]) - float(r[3])) < 1e-3
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 5000
