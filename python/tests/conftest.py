"""Shared by the module's tests: the `fleetplan` binary (FLEETPLAN_BINARY, set by ctest)
and helpers that run it, so the module's answers are compared with the CLI's."""

import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def cli():
    binary = os.environ.get("FLEETPLAN_BINARY")
    if not binary or not os.path.exists(binary):
        pytest.fail("FLEETPLAN_BINARY must name the fleetplan binary (ctest sets it)")

    def run(*args, check=True, cwd=None):
        p = subprocess.run([binary, *map(str, args)], capture_output=True, text=True, cwd=cwd)
        if check and p.returncode not in (0, 1):
            raise AssertionError("fleetplan %s: exit %d\n%s" % (" ".join(map(str, args)), p.returncode, p.stderr))
        return p

    return run


@pytest.fixture(scope="session")
def root():
    return ROOT


def canonical(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"))
