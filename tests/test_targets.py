"""The targets the model is judged by: named package data (analysis/validation/targets.toml), read
through the expression parser, overridable per target with a file (``--targets FILE``)."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from tiletraffic.analysis.validation import targets as T
from tiletraffic.analysis.tune import stats as tuning_stats
from tiletraffic.analysis.cli import main
from tiletraffic.analysis.validation.cases import Case
from tiletraffic.analysis.validation.compare import compare, measured_time


def test_the_built_in_targets_are_the_package_data():
    t = T.built_in()
    assert t.limits == {"median-abs-error": 0.15, "worst-abs-error": 0.35,
                        "speedup-error": 0.20, "ranking": 2.0, "tune-regret": 0.10}
    assert set(t.descriptions) == set(T.NAMES) and all(t.descriptions.values())
    assert t.to_dict() == {"source": "built-in", "limits": t.limits}


def test_a_file_overrides_the_targets_it_names_and_limits_may_be_expressions(tmp_path):
    f = tmp_path / "mine.toml"
    f.write_text('[speedup-error]\nlimit = "30 / 100"\n[tune-regret]\nlimit = 0.05\n')
    t = T.load(f)
    assert t["speedup-error"] == pytest.approx(0.30) and t["tune-regret"] == 0.05
    assert t["median-abs-error"] == 0.15 and t.source == str(f)
    assert T.Targets.from_dict(t.to_dict()).limits == t.limits


@pytest.mark.parametrize("text, words", [
    ("[median-error]\nlimit = 0.1\n", "unknown target(s) median-error"),
    ("[ranking]\nfactor = 2\n", "[ranking] needs a limit"),
    ("[ranking]\nlimit = 2\nunit = 'x'\n", "unknown key(s) unit"),
    ("[ranking]\nlimit = -1\n", "must be a positive finite number"),
    ("[ranking]\nlimit = 'import os'\n", "[ranking] limit:"),
    ("[ranking]\nlimit = true\n", "is not a number"),
    ("[ranking\n", "not valid TOML"),
])
def test_a_bad_targets_file_is_one_error_naming_file_and_target(tmp_path, text, words):
    f = tmp_path / "t.toml"
    f.write_text(text)
    with pytest.raises(T.TargetsError) as err:
        T.load(f)
    assert words in str(err.value) and str(f) in str(err.value)


def _two_cases(error):
    """A naive and a tiled GEMM, measured 10 ms and 1 ms, predicted so that the tiled
    one's speedup is off by ``error``."""
    naive, tiled = Case("gemm-naive", 64, 64, 64, 16), Case("gemm-tiled", 64, 64, 64, 16)
    measured = {naive.id: measured_time([[0.010] * 10, [0.010] * 10]),
                tiled.id: measured_time([[0.001] * 10, [0.001] * 10])}
    predicted = {naive.id: 0.010, tiled.id: 0.010 / (10 * (1 + error))}
    return [naive, tiled], predicted, measured


def test_the_comparison_judges_by_the_targets_given_and_reports_their_names(tmp_path):
    cases, predicted, measured = _two_cases(0.25)
    default = {t.name: t for t in compare(cases, predicted, measured).targets}
    assert list(default) == ["median-abs-error", "worst-abs-error", "speedup-error", "ranking"]
    assert default["speedup-error"].met is False and "20%" in default["speedup-error"].asked
    f = tmp_path / "loose.toml"
    f.write_text("[speedup-error]\nlimit = 0.3\n")
    loose = compare(cases, predicted, measured, T.load(f))
    judged = {t.name: t for t in loose.targets}
    assert judged["speedup-error"].met is True and "30%" in judged["speedup-error"].asked
    assert loose.to_dict()["target_limits"]["limits"]["speedup-error"] == 0.3


def test_the_tuners_regret_is_judged_by_tune_regret():
    def doc(targets):
        runs = [{"label": label, "status": "ok", "predicted_rank": rank,
                 "predicted_time_s": t, "median_s": t * slower, "spread_s": 1e-9}
                for label, rank, t, slower in (("a", 1, 1.0, 1.08), ("b", 2, 1.05, 0.95))]
        return {"meta": {"space_candidates": 2, **({"targets": targets} if targets else {})},
                "predictions": runs, "measurements": runs}
    s = tuning_stats.summarize(doc(None))
    assert s["regret_target"] == 0.10 and s["within_regret_target"] is True
    strict = {"source": "strict.toml", "limits": {"tune-regret": 0.05}}
    s = tuning_stats.summarize(doc(strict))
    assert s["regret_target"] == 0.05 and s["within_regret_target"] is False
    elsewhere = doc(strict)   # a model of another device: no verdict on its pick
    elsewhere["meta"].update(model_describes_device=False,
                             model_why="`generic-gpu` is not a model of cpu")
    s = tuning_stats.summarize(elsewhere)
    assert s["regret_ratio"] == pytest.approx(1.08 / 0.9975) and s["within_regret_target"] is None


def test_the_commands_take_targets_and_refuse_a_bad_file(tmp_path):
    for argv in (["validate"], ["tune", "gemm"], ["report"]):
        assert "--targets FILE" in CliRunner().invoke(main, [*argv, "--help"]).stdout
    bad = tmp_path / "bad.toml"
    bad.write_text("[regret]\nlimit = 0.1\n")
    res = CliRunner().invoke(main, ["tune", "gemm", "--m", "8", "--n", "8", "--k", "8",
                                    "--top", "0", "--targets", str(bad)])
    assert res.exit_code == 2 and "unknown target(s) regret" in res.stderr
