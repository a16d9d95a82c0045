"""fleetplan: a deterministic planner and discrete-event simulator for LLM inference
platforms, from Python (docs/python.md).

    import fleetplan
    r = fleetplan.simulate(fleetplan.Scenario.atlas(), duration="2m")
    r.report["classes"]["interactive"]      # report.json, as a dict
    r.records["finish_s"] - r.records["arrival_s"]   # E2E per request (numpy)
    fleetplan.fit(model="atlas-70b", gpu="h100-sxm-80g", tp=4)

The functions mirror the CLI's verbs and return what their JSON output holds:

  simulate(scenario, seed=None, requests=None, duration=None) -> SimulationResult
      `fleetplan simulate [SCENARIO] --json`; scenario: a Scenario, a path, YAML text
      (a str with a newline) or a dict.
  sweep(spec, jobs=None) -> dict  `fleetplan sweep SPEC --json`, points on native threads
  fit(**flags) -> dict          `fleetplan fit --json` (fit=False is an answer, not an error)
  layout(**flags) -> dict       `fleetplan layout --json`
  plan(bundle=None, as_of=...) -> dict   `fleetplan plan [BUNDLE] --as-of TIME --json`
  write_atlas_bundle(folder) -> str      `fleetplan plan --print-bundle FOLDER`

Errors are the CLI's, as exceptions: InputError (exit 3, located: file, line, column,
field), CheckFailed (1), UsageError (2), InternalError (70), FolderBusy (75).
"""

import json as _json
import os as _os

from . import _core
from ._errors import CheckFailed, Error, FolderBusy, InputError, InternalError, UsageError
from ._records import RecordColumns
from ._scenario import Scenario, as_scenario as _as_scenario

__all__ = [
    "CheckFailed", "Error", "FolderBusy", "InputError", "InternalError", "Scenario", "SimulationResult",
    "UsageError", "capacity", "fit", "gate", "layout", "plan", "rollout_compare", "simulate", "sweep",
    "write_atlas_bundle",
]


class SimulationResult:
    """One simulation: report.json as a dict, the records, the time series."""

    def __init__(self, scenario, report_text, columns):
        self.scenario = scenario
        self.report_json = report_text  # the text `fleetplan simulate --json` prints
        self.report = _json.loads(report_text)
        self._columns = columns
        self._records = None

    @property
    def records(self):
        """Per-request records: a numpy structured array with the fields of requests.jsonl
        (fleetplan/_records.py), or a list of its dicts when numpy is not installed."""
        if self._records is None:
            try:
                self._records = self._columns.to_numpy()
            except ImportError:
                self._records = self._columns.to_dicts()
        return self._records

    def records_as_dicts(self):
        """The records as dicts, exactly json.loads of each line of requests.jsonl."""
        return self._columns.to_dicts()

    @property
    def timeseries(self):
        """report.json's `timeseries` section (docs/records.md "Time series": per window,
        per replica and per class), or None for a report without one."""
        return self.report.get("timeseries")

    def __repr__(self):
        return "SimulationResult(%s, %d requests)" % (self.scenario.name, len(self._columns))


def _count(name, value, minimum, maximum=2**63 - 1):
    # Checked here, as the CLI checks its flags: a value the native call cannot take would
    # otherwise surface as pybind11's signature dump.
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InputError("%s: expected an integer >= %d, got %r" % (name, minimum, value), 3, field=name,
                         detail="expected an integer >= %d, got %r" % (minimum, value))
    if value > maximum:
        raise InputError("%s: expected an integer from %d to %d, got %r" % (name, minimum, maximum, value), 3,
                         field=name, detail="expected an integer from %d to %d, got %r" % (minimum, maximum, value))
    return value


def simulate(scenario, seed=None, requests=None, duration=None):
    """Simulates a scenario; the GIL is released while it runs.

    scenario: a Scenario, a path (str without a newline, or os.PathLike), YAML text (a str
      with a newline) or a dict of the scenario's values.
    seed: the master seed (default: the scenario's), as --seed.
    requests: stop the workload after this many requests, as --requests.
    duration: stop arrivals at this simulated time: a str with a unit ("2m", "90s") as
      --duration, or seconds as a number.
    No files are written; the report is what `fleetplan simulate --json` prints for the
    same inputs, byte for byte (report_json).
    """
    s = _as_scenario(scenario)
    if requests is not None and duration is not None:
        # As the CLI: one limit, not two that would race (`--requests` excludes `--duration`).
        raise UsageError("simulate: give requests or duration, not both", code=2)
    if seed is not None:
        _count("seed", seed, 0, 2**64 - 1)
    if requests is not None:
        _count("requests", requests, 1)
    out = _core.simulate(*s._source(), seed, requests, duration)
    columns = RecordColumns(out["records"], out["classes"], out["tenants"])
    return SimulationResult(s, out["report"], columns)


def sweep(spec, jobs=None, out=None):
    """`fleetplan sweep SPEC --json` (docs/sweep.md): every point of the spec on `jobs`
    native threads (default: every hardware thread), the GIL released; returns sweep.json
    as a dict, the same bytes for any `jobs`. A point that fails is a row with its reason
    (counts.failed), not an error. With `out`, also writes OUT/sweep.json and sweep.csv.

    spec: a path (str without a newline, or os.PathLike), YAML text (a str with a newline)
      or a dict; a relative `base` resolves against the spec file's folder (the working
      folder for text and dicts). Errors in the spec are InputErrors, located."""
    if jobs is not None:
        _count("jobs", jobs, 1, 2**31 - 1)
    if isinstance(spec, dict):
        source = ("text", _core.tree_to_yaml(spec), "<dict>", "")
    elif isinstance(spec, _os.PathLike) or (isinstance(spec, str) and "\n" not in spec):
        source = ("path", _os.fspath(spec), _os.fspath(spec), "")
    elif isinstance(spec, str):
        source = ("text", spec, "<string>", "")
    else:
        raise TypeError("a sweep spec is a path, YAML text or a dict, got %s" % type(spec).__name__)
    text = _core.sweep(*source, jobs or 0, None if out is None else _os.fspath(out))
    return _json.loads(text)


def _flags(verb, allowed, kwargs):
    args = [verb, "--json"]
    for key, value in kwargs.items():
        if key not in allowed:
            raise TypeError("%s() got an unexpected keyword argument %r (valid: %s)"
                            % (verb, key, ", ".join(sorted(allowed))))
        flag = "--" + key.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            args.append(flag)
        elif isinstance(value, (list, tuple)):
            for v in value:
                args += [flag, _text(v)]
        else:
            args += [flag, _text(value)]
    return args


def _text(v):
    return _os.fspath(v) if isinstance(v, _os.PathLike) else str(v)


_FIT_FLAGS = {
    "scenario", "pool", "model", "gpu", "gpu_memory", "tp", "pp", "ep", "weight_dtype", "kv_dtype",
    "kv_window", "context", "concurrency", "gpu_memory_utilization", "block_tokens", "max_batched_tokens",
    "catalog",
}

_LAYOUT_FLAGS = {
    "model", "cluster", "weight_dtype", "kv_dtype", "context", "batch", "prefill_tokens", "microbatches",
    "runtime", "all_reduce", "tp", "pp", "ep", "dp", "gpu_memory_utilization", "close_call", "without",
    "allow_cross_node_tp", "catalog", "scenario", "simulate_top", "jobs",
}


def _run_json(args):
    _, out = _core.run_verb(args)
    return _json.loads(out)


def fit(**flags):
    """`fleetplan fit --json` with these flags (tp=4 is --tp 4; catalog=[...] repeats
    --catalog; scenario is a path). Returns its JSON as a dict; a model that does not fit
    is an answer (report["fits"] is False), not an error. Errors name the flag ("--tp")."""
    if isinstance(flags.get("scenario"), Scenario):
        s = flags["scenario"]
        if s._kind != "path" or s._tree is not None:
            raise TypeError("fit(scenario=...) reads a scenario file; save this Scenario first (Scenario.save)")
        flags["scenario"] = s._value
    return _run_json(_flags("fit", _FIT_FLAGS, flags))


def capacity(spec, jobs=None, verify=True, out=None):
    """`fleetplan capacity SPEC --json` (docs/capacity.md): the fleet a peak demand needs
    across failure domains, priced and (with `verify`) simulated through its deciding loss.
    Returns capacity.json as a dict. Over budget, no feasible layout, or a fleet that misses
    its targets after the loss is an answer (`within_budget`, `feasible`,
    `simulated_after_loss.meets_targets`), not an error. `spec` is a path; with `out` the
    verb also leaves OUT/capacity.json there (else it writes to a scratch folder)."""
    import tempfile
    if jobs is not None:
        _count("jobs", jobs, 1, 2**31 - 1)
    with tempfile.TemporaryDirectory(prefix="fleetplan-capacity-") as scratch:
        args = ["capacity", _text(spec), "--json", "--quiet", "--out", _text(out) if out is not None else scratch]
        if jobs is not None:
            args += ["--jobs", str(jobs)]
        if not verify:
            args.append("--no-verify")
        return _run_json(args)


_GATE_FLAGS = {
    "speculation": {"ordinary", "policy", "seed"},
    "kernel": {"seed"},
    "graphs": {"seed"},
    "quantization": {"seed"},
}


def gate(kind, *files, **flags):
    """`fleetplan gate KIND FILES... --json` (docs/gates.md): kind is speculation, kernel,
    graphs or quantization; files are its inputs (speculation: one or two rounds files);
    flags are the gate's options (ordinary="8ms", policy=path, seed=7). Returns the gate's
    report as a dict; a fail or a hold is an answer (report["decision"]), not an error."""
    if kind not in _GATE_FLAGS:
        raise UsageError("gate: unknown gate %r (valid: %s)" % (kind, ", ".join(sorted(_GATE_FLAGS))), 2)
    if not files:
        raise UsageError("gate %s: name its input file(s)" % kind, 2)
    args = _flags("gate", _GATE_FLAGS[kind], flags)
    return _run_json(["gate", kind, *[_text(f) for f in files], *args[1:]])


def rollout_compare(candidate, baseline, metrics=None, tolerance="5%", alpha=0.05, min_samples=50,
                    format="fleetplan"):
    """`fleetplan rollout compare --json` (docs/rollout.md): candidate records against a
    baseline's, per workload class and pooled. Returns the comparison as a dict; a fail or a
    hold is an answer (result["verdict"]), not an error."""
    args = ["rollout", "compare", "--json", "--candidate", _text(candidate), "--baseline", _text(baseline),
            "--tolerance", _text(tolerance), "--alpha", str(alpha), "--min-samples", str(min_samples),
            "--format", format]
    for m in metrics or []:
        args += ["--metric", m]
    return _run_json(args)


def _utc_time(name, value):
    """An RFC 3339 UTC time for a flag: a str as it is (the verb judges it), or an aware
    datetime in UTC to the second."""
    import datetime
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise InputError("%s: a datetime needs a time zone (e.g. tzinfo=datetime.timezone.utc), got %r"
                             % (name, value), 3, field=name, detail="a datetime needs a time zone")
        return value.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    if not isinstance(value, str):
        raise TypeError("%s: expected an RFC 3339 UTC time (str) or an aware datetime, got %s"
                        % (name, type(value).__name__))
    return value


def plan(bundle=None, as_of=None, out=None, policy_key=None, sensitivity=True, html=True):
    """`fleetplan plan [BUNDLE] --as-of TIME --json` (docs/plan.md): one release decision
    bound to the inputs it came from. Returns plan.json as a dict; a release that fails or
    holds is an answer (result["decision"]["release"] and its "reasons"), not an error.

    bundle: the plan bundle's YAML (a path), or None for the built-in Atlas bundle (written
      to OUT/bundle, as the CLI does; write_atlas_bundle gives an editable copy).
    as_of: the time evidence freshness is judged at, "2026-12-01T00:00:00Z" or an aware
      datetime; required (the verb never reads the clock), UsageError without it.
    out: a folder to leave plan.json, plan.txt and report.html in (with html); without it
      the verb writes to a scratch folder that is removed.
    policy_key: a PEM public key path, as --policy-key; sensitivity=False is
      --no-sensitivity (no perturbations, no review triggers).
    Invalid bundles, policies and evidence raise InputError, located."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix="fleetplan-plan-") as scratch:
        args = ["plan"]
        if bundle is not None:
            args.append(_text(bundle))
        if as_of is not None:
            args += ["--as-of", _utc_time("as_of", as_of)]
        args += ["--json", "--quiet", "--out", _text(out) if out is not None else scratch]
        if policy_key is not None:
            args += ["--policy-key", _text(policy_key)]
        if not sensitivity:
            args.append("--no-sensitivity")
        if not html or out is None:
            args.append("--no-html")
        return _run_json(args)


def write_atlas_bundle(folder):
    """`fleetplan plan --print-bundle FOLDER`: writes the built-in Atlas plan bundle's files
    (examples/atlas) under `folder`, creating folders; returns the bundle's path,
    FOLDER/plan.yaml, for plan(bundle=...) after editing a copy."""
    return _core.write_atlas_bundle(_text(folder))


def layout(**flags):
    """`fleetplan layout --json` with these flags (model and cluster are required, or
    scenario=FILE with simulate_top=K: the layouts simulated on its workload;
    without=[...] repeats --without; allow_cross_node_tp=True). Returns its JSON as a
    dict; no feasible layout is an answer (an empty `feasible`), not an error."""
    return _run_json(_flags("layout", _LAYOUT_FLAGS, flags))
