"""fleetplan.plan and fleetplan.write_atlas_bundle: `fleetplan plan --json` through the
module, on the built-in Atlas bundle and on an edited copy of it."""

import datetime
import json

import pytest

import fleetplan

AS_OF = "2026-12-01T00:00:00Z"


@pytest.fixture(scope="module")
def atlas(tmp_path_factory):
    """The built-in bundle planned twice into one folder (plan.json names the bundle's
    files by path, so the same folder gives the same document)."""
    out = tmp_path_factory.mktemp("atlas")
    return out, fleetplan.plan(as_of=AS_OF, out=out), fleetplan.plan(as_of=AS_OF, out=out)


def edited_copy(folder, cut_from):
    """The Atlas bundle written under `folder`, with workload.yaml cut from the line
    `cut_from` to its end; returns the bundle's path."""
    bundle = fleetplan.write_atlas_bundle(folder)
    assert bundle == str(folder / "plan.yaml")
    workload = folder / "workload.yaml"
    text = workload.read_text()
    assert cut_from in text
    workload.write_text(text[:text.index(cut_from)])
    return bundle


def test_the_built_in_bundle_holds_at_canary_1(atlas):
    out, first, second = atlas
    assert first["kind"] == "fleetplan-plan"
    assert first["as_of"] == AS_OF
    decision = first["decision"]
    assert decision["release"] == "hold"
    assert decision["stage"] == {"name": "canary-1", "rollout": "hold", "traffic": 0.01}
    assert [r["name"] for r in decision["reasons"]] == ["rollout"]
    assert first["capacity"]["chosen_layout"] == "tp8"
    assert first["digest"].startswith("sha256:") and len(first["digest"]) == 71
    # Deterministic: two runs give the same document, and it is the CLI's plan.json.
    assert first == second
    assert json.loads((out / "plan.json").read_text()) == first
    assert (out / "report.html").read_text().count(first["digest"]) >= 1
    assert (out / "bundle" / "plan.yaml").exists()


def workload_digest(plan):
    return [i for i in plan["inputs"] if i["name"] == "workload.yaml"][0]["content_digest"]


def test_a_workload_without_the_research_class_fails_on_coverage(tmp_path, atlas):
    bundle = edited_copy(tmp_path / "atlas", "      research:")
    result = fleetplan.plan(bundle, as_of=AS_OF)
    assert result["decision"]["release"] == "fail"
    coverage = [r for r in result["decision"]["reasons"] if r["name"] == "coverage"]
    assert len(coverage) == 1
    assert coverage[0]["decision"] == "fail"
    assert coverage[0]["numbers"]["missing"] == ["research"]
    assert "research" in coverage[0]["reason"]
    # Deterministic, and an aware datetime is the same --as-of.
    again = fleetplan.plan(bundle, as_of=datetime.datetime(2026, 12, 1, tzinfo=datetime.timezone.utc))
    assert again == result
    # The edit is bound: the workload's digest, and so the plan's, differ from the built-in's.
    _, builtin, _ = atlas
    assert workload_digest(result) != workload_digest(builtin)
    assert result["digest"] != builtin["digest"]


def test_html_is_left_in_out_and_removed_without_it(tmp_path):
    bundle = edited_copy(tmp_path / "atlas", "      research:")
    out = tmp_path / "o"
    fleetplan.plan(bundle, as_of=AS_OF, out=out)
    assert sorted(p.name for p in out.iterdir()) == ["plan.json", "plan.txt", "report.html"]
    assert "Release: fail" in (out / "report.html").read_text()
    fleetplan.plan(bundle, as_of=AS_OF, out=out, html=False)
    assert sorted(p.name for p in out.iterdir()) == ["plan.json", "plan.txt"]


def test_a_missing_or_bad_as_of_raises(tmp_path):
    bundle = fleetplan.write_atlas_bundle(tmp_path / "atlas")
    with pytest.raises(fleetplan.UsageError, match="--as-of TIME is required") as e:
        fleetplan.plan(bundle)
    assert e.value.code == 2
    with pytest.raises(fleetplan.UsageError, match="--as-of: expected a UTC time"):
        fleetplan.plan(bundle, as_of="yesterday")
    with pytest.raises(fleetplan.InputError, match="needs a time zone"):
        fleetplan.plan(bundle, as_of=datetime.datetime(2026, 12, 1))
    with pytest.raises(TypeError):
        fleetplan.plan(bundle, as_of=20261201)


def test_an_invalid_bundle_raises_a_located_input_error(tmp_path):
    bundle = fleetplan.write_atlas_bundle(tmp_path / "atlas")
    plan_yaml = tmp_path / "atlas" / "plan.yaml"
    plan_yaml.write_text(plan_yaml.read_text().replace("\nevidence:", "\nevidnce:"))
    with pytest.raises(fleetplan.InputError, match="did you mean 'evidence'") as e:
        fleetplan.plan(bundle, as_of=AS_OF)
    assert e.value.code == 3
    assert e.value.file.endswith("plan.yaml")
    assert e.value.line == 12 and e.value.column == 1
    with pytest.raises(fleetplan.InputError, match="cannot read"):
        fleetplan.plan(tmp_path / "missing.yaml", as_of=AS_OF)
