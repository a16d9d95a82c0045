#!/usr/bin/python3
"""Behaviour tests as data: run scenarios through the `fleetplan` binary and compare
each report.json with its reviewed expectation (tests/scenarios/README.md).

  run_scenarios.py --fleetplan BIN NAME...        run NAME.yaml, compare with NAME.expected.json
  run_scenarios.py --fleetplan BIN --self-test NAME
                                                  prove the comparison can fail: a perturbed
                                                  copy of NAME.expected.json must be rejected
  run_scenarios.py --check-folder                 every scenario has a header, an expected
                                                  file and a README row (and no orphans)

FLEETPLAN_UPDATE_EXPECTED=1 rewrites NAME.expected.json from the run instead of comparing
(review the result with `git diff`). Exit codes: 0 pass, 1 mismatch or failure, 2 usage,
77 skipped (ctest SKIP_RETURN_CODE).

Standard library only.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SKIP = 77
MAX_DIFFS_SHOWN = 60

# Keys that depend on where the file lives or on the build, not on the scenario's bytes
# and seed. Paths are dotted from the report's root.
VOLATILE_KEYS = [
    ("fleetplan_version",),  # the build's version string
    ("scenario", "source"),  # the scenario's display name: the path it was opened by
]


def update_mode():
    return os.environ.get("FLEETPLAN_UPDATE_EXPECTED", "") not in ("", "0")


# --- normalising a report --------------------------------------------------------------


def strip_volatile(report, replacements):
    """Drops VOLATILE_KEYS and replaces machine-specific path prefixes inside strings."""
    for path in VOLATILE_KEYS:
        node = report
        for key in path[:-1]:
            node = node.get(key) if isinstance(node, dict) else None
            if node is None:
                break
        if isinstance(node, dict):
            node.pop(path[-1], None)

    def walk(value):
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, str):
            for old, new in replacements:
                value = value.replace(old, new)
        return value

    return walk(report)


# --- writing expectations: sorted keys, scalar lists on one line -----------------------


def dumps(value, indent=0):
    pad = "  " * indent
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [
            pad + "  " + json.dumps(k) + ": " + dumps(value[k], indent + 1) for k in sorted(value)
        ]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, list):
        if all(not isinstance(v, (dict, list)) for v in value):
            return "[" + ", ".join(json.dumps(v) for v in value) + "]"
        items = [pad + "  " + dumps(v, indent + 1) for v in value]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return json.dumps(value)


# --- comparing ---------------------------------------------------------------------------


ABSENT = object()


def show(value):
    if value is ABSENT:
        return "<absent>"
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 200 else text[:197] + "..."


def diff(expected, got, path=""):
    """Yields (path, expected, got) for every leaf that differs. Numbers compare by value
    and type class (1 and 1.0 are equal, true and 1 are not)."""
    if isinstance(expected, dict) and isinstance(got, dict):
        for key in sorted(set(expected) | set(got)):
            sub = f"{path}.{key}" if path else key
            yield from diff(expected.get(key, ABSENT), got.get(key, ABSENT), sub)
        return
    if isinstance(expected, list) and isinstance(got, list):
        if len(expected) != len(got):
            yield (path + ".length", len(expected), len(got))
        for i in range(min(len(expected), len(got))):
            yield from diff(expected[i], got[i], f"{path}[{i}]")
        return
    if isinstance(expected, bool) != isinstance(got, bool) or expected != got:
        yield (path, expected, got)


# --- running one scenario ----------------------------------------------------------------


def run_scenario(fleetplan, name):
    """Runs NAME.yaml (by its file name, from this folder, so paths inside the report are
    relative and stable) and returns the normalised report, or raises RuntimeError."""
    scenario = os.path.join(HERE, name + ".yaml")
    if not os.path.isfile(scenario):
        raise RuntimeError(f"no scenario {scenario}")
    out = tempfile.mkdtemp(prefix=f"fleetplan-scenario-{name}-")
    try:
        cmd = [fleetplan, "simulate", name + ".yaml", "--out", out, "--quiet", "--no-timeline", "--no-requests"]
        try:
            proc = subprocess.run(cmd, cwd=HERE, capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"{' '.join(cmd)}: still running after 120 s")
        if proc.returncode != 0:
            raise RuntimeError(
                f"{' '.join(cmd)} (in {HERE}) exited {proc.returncode}\n"
                f"--- stdout\n{proc.stdout}--- stderr\n{proc.stderr}"
            )
        with open(os.path.join(out, "report.json"), encoding="utf-8") as f:
            report = json.load(f)
        return strip_volatile(report, [(out, "<out>"), (HERE, "<scenarios>")])
    finally:
        shutil.rmtree(out, ignore_errors=True)


def compare(fleetplan, name, expected_dir):
    expected_path = os.path.join(expected_dir, name + ".expected.json")
    try:
        got = run_scenario(fleetplan, name)
    except RuntimeError as e:
        print(f"FAIL {name}: {e}")
        return 1
    if update_mode():
        with open(expected_path, "w", encoding="utf-8") as f:
            f.write(dumps(got) + "\n")
        print(f"UPDATED {expected_path} (FLEETPLAN_UPDATE_EXPECTED is set; review with git diff)")
        return 0
    if not os.path.isfile(expected_path):
        print(f"FAIL {name}: no expected file {expected_path}\n"
              f"  create it with FLEETPLAN_UPDATE_EXPECTED=1 and review it")
        return 1
    with open(expected_path, encoding="utf-8") as f:
        expected = json.load(f)
    diffs = list(diff(expected, got))
    if not diffs:
        print(f"PASS {name}")
        return 0
    print(f"FAIL {name}: {len(diffs)} value(s) differ from {expected_path} (path: expected vs got)")
    for path, e, g in diffs[:MAX_DIFFS_SHOWN]:
        print(f"  {path}: {show(e)} vs {show(g)}")
    if len(diffs) > MAX_DIFFS_SHOWN:
        print(f"  ... and {len(diffs) - MAX_DIFFS_SHOWN} more")
    print("  if the change is intended: FLEETPLAN_UPDATE_EXPECTED=1 ctest -R scenario. and review the git diff")
    return 1


# --- the runner's own check --------------------------------------------------------------


def self_test(fleetplan, name):
    """The runner must reject a perturbed expectation and name the perturbed keys, and
    accept the unperturbed one."""
    if update_mode():
        print("SKIP self-test while FLEETPLAN_UPDATE_EXPECTED is set")
        return SKIP
    source = os.path.join(HERE, name + ".expected.json")
    with open(source, encoding="utf-8") as f:
        expected = json.load(f)
    env = dict(os.environ)
    env.pop("FLEETPLAN_UPDATE_EXPECTED", None)
    tmp = tempfile.mkdtemp(prefix="fleetplan-scenario-selftest-")
    try:
        def run_against(doc):
            with open(os.path.join(tmp, name + ".expected.json"), "w", encoding="utf-8") as f:
                f.write(dumps(doc) + "\n")
            cmd = [sys.executable, os.path.abspath(__file__), "--fleetplan", fleetplan, "--expected-dir", tmp, name]
            return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=180)

        same = run_against(expected)
        if same.returncode != 0:
            print(f"FAIL self-test: the unperturbed copy did not pass:\n{same.stdout}{same.stderr}")
            return 1

        perturbed = json.loads(json.dumps(expected))
        perturbed["fleet"]["requests"] += 1                    # a changed number
        perturbed["engine"].pop("steps")                       # a key the run has, expectation lacks
        perturbed["classes"]["self-test-extra"] = {"requests": 0}  # a key the expectation has, run lacks
        bad = run_against(perturbed)
        must_name = ["fleet.requests: 401 vs", "engine.steps: <absent> vs", "classes.self-test-extra: "]
        missing = [m for m in must_name if m not in bad.stdout]
        if bad.returncode != 1 or missing:
            print(f"FAIL self-test: a perturbed expectation was not rejected as it should be "
                  f"(exit {bad.returncode}, missing from the diff: {missing}):\n{bad.stdout}{bad.stderr}")
            return 1
        print("PASS self-test: the perturbed expectation was rejected with this diff:")
        print(bad.stdout)
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# --- the folder's own rules ----------------------------------------------------------------


def scenario_names():
    return sorted(f[: -len(".yaml")] for f in os.listdir(HERE) if f.endswith(".yaml"))


def check_folder():
    problems = []
    names = scenario_names()
    with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    for name in names:
        with open(os.path.join(HERE, name + ".yaml"), encoding="utf-8") as f:
            lines = f.read().splitlines()
        header = [l for l in lines[: next((i for i, l in enumerate(lines) if not l.startswith("#")), len(lines))]]
        if len(header) < 2:
            problems.append(f"{name}.yaml: needs a comment header (what it checks, which report keys show it)")
        elif "Keys:" not in "\n".join(header):
            problems.append(f"{name}.yaml: the header should name the report keys that matter (a 'Keys:' line)")
        if not os.path.isfile(os.path.join(HERE, name + ".expected.json")):
            problems.append(f"{name}.yaml: no {name}.expected.json (FLEETPLAN_UPDATE_EXPECTED=1 creates it)")
        if f"`{name}.yaml`" not in readme:
            problems.append(f"{name}.yaml: not listed in README.md's table")
    for f in sorted(os.listdir(HERE)):
        if f.endswith(".expected.json") and f[: -len(".expected.json")] not in names:
            problems.append(f"{f}: no scenario {f[: -len('.expected.json')]}.yaml")
    for p in problems:
        print("FAIL " + p)
    if not problems:
        print(f"PASS folder: {len(names)} scenarios, each with a header, an expected file and a README row")
    return 1 if problems else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fleetplan", help="the fleetplan binary")
    ap.add_argument("--expected-dir", default=HERE, help="where NAME.expected.json files are (default: beside the scenarios)")
    ap.add_argument("--self-test", action="store_true", help="check that the comparison rejects a perturbed expectation")
    ap.add_argument("--check-folder", action="store_true", help="check headers, expected files and the README table")
    ap.add_argument("names", nargs="*", help="scenario names (file names without .yaml); default: all")
    args = ap.parse_args()
    if args.check_folder:
        return check_folder()
    if not args.fleetplan:
        ap.error("--fleetplan is required")
    if not os.access(args.fleetplan, os.X_OK):
        print(f"FAIL: {args.fleetplan} is not an executable (build the `fleetplan` target first)")
        return 1
    fleetplan = os.path.abspath(args.fleetplan)
    names = args.names or scenario_names()
    if args.self_test:
        if len(names) != 1:
            ap.error("--self-test takes one scenario name")
        return self_test(fleetplan, names[0])
    return max(compare(fleetplan, n, args.expected_dir) for n in names)


if __name__ == "__main__":
    sys.exit(main())
