"""A resumed tuning reuses an earlier results file only when every field it reads is there
and of its type: otherwise one line naming the file and the field, exit 2, nothing written
or moved."""
from __future__ import annotations

import copy
import json

import pytest
from click.testing import CliRunner

import tiletraffic as tt
from tiletraffic.analysis.tune import results_file as tuning_file
from tiletraffic.analysis.cli import main

SPACE = "[[family]]\nname = 'gemm-tiled'\n[family.parameters]\ntile = [8, 16]\n"

MEASURED = {"label": "gemm-tiled tile=8", "family": "gemm-tiled", "params": {"tile": 8},
            "status": "ok", "predicted_rank": 1, "predicted_time_s": 1e-5,
            "rounds": [{"round": 0, "kernel_times_s": [2e-4, 3e-4],
                        "check": {"ok": True, "error_over_tolerance": 0.1}}],
            "median_s": 2.5e-4, "min_s": 2e-4, "max_s": 3e-4, "spread_s": 5e-5,
            "gflop_per_s": 2.1, "check": {"ok": True, "error_over_tolerance": 0.1}}
"""A measurement as the tuner records it (the fields a resumed tuning reads)."""


@pytest.fixture(scope="module")
def planned(tmp_path_factory):
    """A tuning file of two modelled candidates (nothing measured) and its space."""
    folder = tmp_path_factory.mktemp("plan")
    space = folder / "space.toml"
    space.write_text(SPACE)
    out = folder / "plan.json"
    tt.tune(64, 64, 64, space=space, top=0, out=out)
    return space, json.loads(out.read_text())


def test_what_the_tuner_writes_passes_the_check(planned):
    _, doc = planned
    assert tuning_file.problem(doc) is None
    assert tuning_file.problem({**doc, "measurements": [MEASURED]}) is None


def _with(doc, where, value):
    """``doc`` with the field at ``where`` (keys and list indices) set to ``value``
    (``...``: removed)."""
    doc = copy.deepcopy(doc)
    parent = doc
    for key in where[:-1]:
        parent = parent[key]
    if value is ...:
        del parent[where[-1]]
    else:
        parent[where[-1]] = value
    return doc


@pytest.mark.parametrize("where, value, words", [
    (("predictions",), None, "field predictions must be a list, not null"),
    (("meta",), [], "field meta must be an object, not an empty list"),
    (("meta", "seed"), -3, "field meta.seed must be a non-negative integer or null, not -3"),
    (("predictions", 0, "predicted_time_s"), "fast",
     'field predictions[0].predicted_time_s must be a positive number or null, not the '
     'string "fast"'),
    (("predictions", 1, "estimate", "predicted_time_s"), -1.0,
     "field predictions[1].estimate.predicted_time_s must be a positive number, not -1"),
    (("predictions", 0, "label"), ..., "field predictions[0].label is missing"),
    (("measurements", 0, "median_s"), -1.0,
     "field measurements[0].median_s must be a positive number, not -1"),
    (("measurements", 0, "status"), "done",
     'field measurements[0].status must be one of ok, failed, incomplete, not the string '
     '"done"'),
    (("measurements", 0, "rounds", 0, "kernel_times_s", 1), None,
     "field measurements[0].rounds[0].kernel_times_s[1] must be a positive number, not null"),
    (("measurements", 0, "check", "ok"), "yes",
     'field measurements[0].check.ok must be true or false, not the string "yes"'),
    (("measurements", 0, "family"), ..., "field measurements[0].family is missing"),
])
def test_a_malformed_field_is_named_with_what_it_must_be(planned, where, value, words):
    _, doc = planned
    assert tuning_file.problem(_with({**doc, "measurements": [MEASURED]}, where, value)) \
        == words


def _resume(space, out):
    return CliRunner().invoke(main, ["tune", "gemm", "--m", "64", "--n", "64", "--k", "64",
                                     "--space", str(space), "--top", "0", "--out", str(out),
                                     "--resume"])


@pytest.mark.parametrize("where, value, words", [
    (("predictions",), None, "field predictions must be a list, not null"),
    (("measurements", 0, "median_s"), -1.0, "field measurements[0].median_s must be a "
                                            "positive number, not -1"),
    (("predictions", 0, "predicted_time_s"), "1e-3", "field predictions[0].predicted_time_s "
                                                     "must be a positive number or null"),
])
def test_resuming_from_a_malformed_file_exits_2_naming_it_and_moves_nothing(
        planned, tmp_path, where, value, words):
    space, doc = planned
    out = tmp_path / "t.json"
    text = json.dumps(_with({**doc, "measurements": [MEASURED]}, where, value))
    out.write_text(text)
    res = _resume(space, out)
    assert res.exit_code == 2, res.output
    assert f"error: {out}: cannot resume from it ({words}" in res.output
    assert [ln for ln in res.output.splitlines() if ln.startswith("error:")] == [
        res.output.splitlines()[-1]] and "Traceback" not in res.output
    assert out.read_text() == text, "the file is left as it was"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.json"], "nothing moved"


def test_a_file_that_is_not_a_json_object_is_named_in_product_words(planned, tmp_path):
    space, _ = planned
    out = tmp_path / "t.json"
    out.write_text("[1, 2]")
    res = _resume(space, out)
    assert res.exit_code == 2, res.output
    assert f"cannot resume from {out}: not a tuning file (a JSON list, expected an object)" \
        in res.output
    assert "indices" not in res.output and "Traceback" not in res.output


def test_a_well_formed_file_resumes_reusing_its_predictions(planned, tmp_path, monkeypatch):
    from tiletraffic.analysis.tune import tuner

    space, doc = planned
    out = tmp_path / "t.json"
    out.write_text(json.dumps(doc))
    monkeypatch.setattr(tuner, "_predict", lambda *a: pytest.fail("modelled again"))
    res = _resume(space, out)
    assert res.exit_code == 0, res.output
    assert "(2 reused)" in res.output
