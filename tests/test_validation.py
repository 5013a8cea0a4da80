"""`tiletraffic validate`: cases, measured time and spread, the comparison on hand-made
numbers (time errors, speedups, pairs within 2x spread left out, targets), the predictions
file (round trip, refusal on a mismatch), atomic saves and history/, and an end-to-end run
on PoCL at the quick sizes through the command line."""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tiletraffic.analysis.validation import cases as v
from tiletraffic.analysis.validation import compare as vc
from tiletraffic.analysis.validation import predict as vp
from tiletraffic.analysis.validation import results as vres
from tiletraffic.analysis.validation import run as vr
from tiletraffic.analysis.cli import main
from tiletraffic.analysis.report.text import speedup_against_cut, speedup_against_n
from tiletraffic.analysis.validation.render import noise_sentence
from tiletraffic.simulator.model.prediction import bound_name
from tiletraffic.gpu.devices.device import list_devices
from tiletraffic.simulator.model.device_model import built_in_file

HAS_POCL = any(d.is_pocl for d in list_devices())
needs_pocl = pytest.mark.skipif(not HAS_POCL, reason="PoCL is not installed "
                                "(pip install pocl-binary-distribution)")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def case(family, m, k, n=None, **extra):
    return v.Case.from_dict({"family": family, "m": m, "k": k,
                             **({"n": n} if n is not None else {}), **extra})


def measured(median_s, spread_s):
    """A Measured with the given median and spread (one round of one launch: hand-made)."""
    return vc.Measured(median_s, spread_s, (median_s,), None, spread_s, 1)


# ---------------------------------------------------------------- cases

def test_case_ids_labels_and_problems():
    c = case("gemm-vectorized", 64, 64, 64, tile=8, tm=8, tn=8, bk=16, wg_rows=8)
    assert c.id == "gemm-vectorized m=64 k=64 n=64 tile=8 bk=16 tm=8 tn=8 wg_rows=8"
    assert c.label == "gemm-vectorized B=8 bk=16 tm=8 tn=8 wg_rows=8"
    assert c.problem == "gemm 64×64×64" and not c.is_baseline
    mv = case("matvec-naive", 256, 512)
    assert (mv.tile, mv.problem, mv.is_baseline, mv.n) == (256, "matvec 256×512", True, None)
    assert mv.build().param_values == {"M": 256, "K": 512}


def test_every_family_is_in_every_built_in_list():
    for name in v.CASE_SIZES:
        cases = v.case_list(name)
        assert {c.family for c in cases} == set(v.schedules.FAMILIES), name
        assert len({c.id for c in cases}) == len(cases)
    gpu = v.case_list("gpu")
    assert sorted({c.m for c in gpu if c.kind == "gemm"}) == [1024, 4096]
    assert sorted({c.m for c in gpu if c.kind == "matvec"}) == [4096, 8192]
    assert v.default_case_list_name(False, True) == "gpu"
    assert v.default_case_list_name(False, False) == "cpu"
    assert v.default_case_list_name(True, True) == "quick"
    with pytest.raises(KeyError, match="quick, cpu, gpu"):
        v.case_list("huge")


@pytest.mark.parametrize("data, message", [
    ({"family": "gemm-fast", "m": 8, "k": 8, "n": 8}, "family 'gemm-fast' is not one of "
                                                       "gemm-naive, gemm-tiled"),
    ({"m": 8, "k": 8, "n": 8}, r"^case 3: family missing \(one of gemm-naive, .*matvec-relu, gemm-split-k\)$"),
    ({"family": "gemm-naive", "k": 8, "n": 8}, r"^case 3: m missing \(a positive integer\)$"),
    ({"family": "gemm-naive", "m": "8", "k": 8, "n": 8},
     'm must be a positive integer, got the string "8"'),
    ({"family": "gemm-naive", "m": 8, "k": 8}, "needs n"),
    ({"family": "matvec-naive", "m": 8, "k": 8, "n": 8}, "n does not apply"),
    ({"family": "gemm-naive", "m": 0, "k": 8, "n": 8}, "m must be a positive integer, got 0"),
    ({"family": "gemm-naive", "m": 8, "k": 8, "n": 8, "colour": 1}, "unknown key"),
    ({"family": "gemm-vectorized", "m": 8, "k": 6, "n": 8}, "multiple of 4"),
    ({"family": "gemm-prefetch", "m": 8, "k": 8, "n": 8, "registers": 0},
     "registers .* must be a positive integer, got 0"),
    ({"family": "gemm-prefetch", "m": 8, "k": 8, "n": 8, "registers": "79"},
     'registers .* must be a positive integer, got the string "79"'),
])
def test_malformed_cases_are_refused_naming_the_field(data, message):
    with pytest.raises(v.CaseError, match=message) as err:
        v.Case.from_dict(data, "case 3")
    assert "None" not in str(err.value) and "got '" not in str(err.value), "no Python values"


def test_case_file_round_trip_and_refusals(tmp_path):
    cases = v.case_list("quick")
    path = tmp_path / "cases.toml"
    path.write_text(v.cases_toml(cases))
    assert v.read_cases(path) == cases
    path.write_text(v.cases_toml(cases[:2] + cases[:1]))
    with pytest.raises(v.CaseError, match="listed twice"):
        v.read_cases(path)
    path.write_text("[other]\nx = 1\n")
    with pytest.raises(v.CaseError, match=r"\[\[case\]\] tables only"):
        v.read_cases(path)
    path.write_text("[[case]\n")
    with pytest.raises(v.CaseError, match="not a TOML file"):
        v.read_cases(path)


def test_a_case_s_compiled_registers_reach_the_model_and_its_id(tmp_path):
    """``registers`` (the compiled kernel's count) replaces the model's estimate: at 4096 a
    gemm-prefetch work-group of 256 work-items with 79 registers each fits 3 times in the
    H200's 65,536 registers, with the schedule's estimate (62) 4 times, and the model's
    time changes with it; the id names the count, the file keeps it, the kernel is the same."""
    from tiletraffic.simulator.model.launch import model_launch

    opts = {"tile": 16, "tm": 4, "tn": 4, "bk": 16}
    given = case("gemm-prefetch", 4096, 4096, 4096, registers=79, **opts)
    estimated = case("gemm-prefetch", 4096, 4096, 4096, **opts)
    assert given.id == estimated.id + " registers=79" and given.label == estimated.label
    from tiletraffic.gpu.codegen.generate import generate
    assert generate(given.build()).source == generate(estimated.build()).source
    path = tmp_path / "cases.toml"
    path.write_text(v.cases_toml([given, estimated]))
    assert "registers = 79" in path.read_text() and v.read_cases(path) == (given, estimated)
    model = vp.resolve_model("nvidia-h200")[0]
    p_given, p_estimated = vp.predict_case(given, model), vp.predict_case(estimated, model)
    assert p_given["predicted_time_s"] == pytest.approx(model_launch(
        given.build(), model, registers_per_work_item=79).prediction.predicted_time_s)
    assert p_given["predicted_time_s"] > p_estimated["predicted_time_s"]
    assert not any("estimated" in g for g in p_given["guessed_values"])
    assert any("estimated" in g for g in p_estimated["guessed_values"])


def test_a_case_s_id_names_its_registers_whenever_its_file_does():
    """The id and the case file agree on whether a case carries registers (a Case made
    directly is not checked, so 0 must not vanish from the id while the file keeps it)."""
    import dataclasses

    base = case("gemm-prefetch", 8, 8, 8)
    for registers in (None, 0, 1, 79):
        c = dataclasses.replace(base, registers=registers)
        assert ("registers" in c.to_dict()) == (f"registers={registers}" in c.id), registers


# ---------------------------------------------------------------- measured time and spread

def test_measured_time_median_iqr_and_round_range_by_hand():
    m = vc.measured_time([[1, 2, 3, 4, 5], [2, 3, 4, 5, 6]])
    # pooled 1 2 2 3 3 4 4 5 5 6: median 3.5; numpy's linear percentiles: 25th at position
    # 2.25 -> 2.25, 75th at 6.75 -> 4.75; IQR 2.5; round medians 3 and 4: range 1
    assert m.median_s == 3.5 and m.iqr_s == pytest.approx(2.5)
    assert m.round_medians_s == (3.0, 4.0) and m.round_range_s == 1.0
    assert m.spread_s == pytest.approx(2.5) and m.launches == 10
    # the rounds disagree more than the launches spread: the spread is the round range
    far = vc.measured_time([[1.0, 1.0, 1.0, 1.0], [2.0, 2.0, 2.0, 2.0]])
    assert (far.iqr_s, far.round_range_s, far.spread_s) == (1.0, 1.0, 1.0)
    near = vc.measured_time([[1.0, 1.1, 1.2, 1.3], [1.0, 1.1, 1.2, 1.3]])
    assert near.round_range_s == 0.0 and near.spread_s == near.iqr_s > 0
    assert vc.measured_time([[2.0, 4.0]]).round_range_s is None


@pytest.mark.parametrize("rounds", [[], [[]], [[1.0, -1.0]], [[float("nan")]]])
def test_measured_time_refuses_empty_or_bad_times(rounds):
    with pytest.raises(ValueError):
        vc.measured_time(rounds)


# ---------------------------------------------------------------- comparison, hand-made

def _problem():
    naive, tiled, blocked = (case("gemm-naive", 64, 64, 64), case("gemm-tiled", 64, 64, 64),
                             case("gemm-register-blocked", 64, 64, 64))
    meas = {naive.id: measured(10.0, 0.5), tiled.id: measured(8.0, 0.5),
            blocked.id: measured(8.5, 0.5)}
    return (naive, tiled, blocked), meas


def test_errors_speedups_and_ranking_on_hand_made_numbers():
    (naive, tiled, blocked), meas = _problem()
    pred = {naive.id: 9.0, tiled.id: 8.8, blocked.id: 7.0}
    s = vc.compare([naive, tiled, blocked], pred, meas)
    errors = {r.case.family: r.time_error for r in s.results}
    assert errors == pytest.approx({"gemm-naive": -0.1, "gemm-tiled": 0.1,
                                    "gemm-register-blocked": 7.0 / 8.5 - 1})
    assert s.median_abs_time_error == pytest.approx(0.1)
    assert s.worst_time_error.case == blocked
    speed = {x.case.family: (x.measured, x.predicted, x.error) for x in s.speedups}
    assert speed["gemm-tiled"] == pytest.approx((1.25, 9 / 8.8, (9 / 8.8) / 1.25 - 1))
    assert speed["gemm-register-blocked"] == pytest.approx(
        (10 / 8.5, 9 / 7, (9 / 7) / (10 / 8.5) - 1))
    # tiled (8.0) vs blocked (8.5): 0.5 apart, within 2 x 0.5: left out although the model
    # has them the wrong way round (7.0 < 8.8)
    assert len(s.pairs) == 3 and len(s.qualifying_pairs) == 2 and s.pairs_right == 2
    left_out = [p for p in s.pairs if not p.qualifies]
    assert {left_out[0].faster.case, left_out[0].slower.case} == {tiled, blocked}
    assert not left_out[0].right
    assert [t.met for t in s.targets] == [True, True, True, True]
    d = s.to_dict()
    assert (d["pairs_counted"], d["pairs_ordered_right"], d["misordered_pairs"]) == (2, 2, [])
    assert d["speedups_within_target"] == 2


def test_a_misordered_qualifying_pair_and_a_tie_fail_the_ranking():
    (naive, tiled, blocked), meas = _problem()
    # naive (10.0) vs tiled (8.0): 2.0 apart > 2 x 0.5, but predicted the other way round
    s = vc.compare([naive, tiled], {naive.id: 8.0, tiled.id: 9.0}, meas)
    assert s.pairs_right == 0 and len(s.qualifying_pairs) == 1
    assert s.qualifying_pairs[0].predicted_ratio == pytest.approx(8.0 / 9.0)
    ranking = s.targets[3]
    assert ranking.met is False and ranking.figure.startswith("0 of 1 pairs")
    assert s.to_dict()["misordered_pairs"] == [[tiled.id, naive.id]]
    # equal predictions do not order a pair
    tie = vc.compare([naive, tiled], {naive.id: 9.0, tiled.id: 9.0}, meas)
    assert tie.pairs_right == 0
    # the speedup 10/8 = 1.25 predicted as 8/9: error far beyond 20 %
    assert s.targets[2].met is False


def test_pairs_exactly_at_twice_the_spread_and_other_problems_do_not_count():
    a, b = case("gemm-naive", 64, 64, 64), case("gemm-tiled", 64, 64, 64)
    other = case("gemm-tiled", 128, 128, 128)
    meas = {a.id: measured(10.0, 0.5), b.id: measured(9.0, 0.5), other.id: measured(1.0, 0.0)}
    s = vc.compare([a, b, other], {a.id: 2.0, b.id: 1.0, other.id: 5.0}, meas)
    assert len(s.pairs) == 1 and s.qualifying_pairs == ()     # 1.0 apart = 2 x 0.5: not more
    assert s.targets[3].met is None and s.targets[3].verdict == "nothing to judge"
    assert [x.case for x in s.speedups] == [b]                  # 128: no naive baseline
    # the larger spread of the two decides
    meas[b.id] = measured(9.0, 0.1)
    assert vc.compare([a, b], {a.id: 2.0, b.id: 1.0}, meas).qualifying_pairs == ()
    meas[a.id] = measured(10.0, 0.4)
    assert len(vc.compare([a, b], {a.id: 2.0, b.id: 1.0}, meas).qualifying_pairs) == 1


def test_cases_without_a_measurement_or_prediction_are_left_out():
    (naive, tiled, blocked), meas = _problem()
    del meas[blocked.id]
    s = vc.compare([naive, tiled, blocked], {naive.id: 9.0, tiled.id: None, blocked.id: 7.0},
                  meas)
    assert [r.case for r in s.compared] == [naive]
    assert s.speedups == () and s.pairs == ()
    assert s.targets[0].met is True and s.targets[2].met is None


def test_worst_error_fails_its_target_and_names_the_case():
    (naive, tiled, blocked), meas = _problem()
    s = vc.compare([naive, tiled, blocked], {naive.id: 10.0, tiled.id: 8.0, blocked.id: 4.0},
                  meas)
    assert s.median_abs_time_error == 0.0
    worst = s.targets[1]
    assert worst.met is False and "gemm-register-blocked" in worst.figure
    assert worst.figure.startswith(f"{(4.0 / 8.5 - 1) * 100:+.1f}%")


def test_noise_sentence_is_computed_from_the_spreads():
    a, b = case("gemm-naive", 64, 64, 64), case("gemm-tiled", 64, 64, 64)
    meas = {a.id: vc.measured_time([[1.0, 1.0, 1.1, 1.1], [1.0, 1.0, 1.1, 1.1]]),
            b.id: vc.measured_time([[2.0, 2.0, 2.0, 2.0], [2.2, 2.2, 2.2, 2.2]])}
    text = noise_sentence(vc.compare([a, b], {a.id: 1.0, b.id: 2.0}, meas), "Dev")
    # a: IQR 0.1 of median 1.05 (9.5 %), rounds equal; b: IQR 0.2 of 2.1 (9.5 %), rounds
    # 0.2 apart (9.5 %): the median relative spread 9.5 % is noisy (>= 5 %)
    assert text.startswith("Timings on Dev were noisy")
    assert "differed by 4.8%" in text          # median of 0 % and 9.5 %
    assert "0 of 1 pairs of cases were too close" in text   # 1.05 apart > 2 x 0.2
    quiet = {a.id: vc.measured_time([[1.0, 1.0, 1.0, 1.001]]),
             b.id: vc.measured_time([[2.0, 2.0, 2.0, 2.0]])}
    assert "were quiet" in noise_sentence(vc.compare([a, b], {}, quiet), "Dev")


def test_report_sentences_follow_the_data():
    lines = speedup_against_cut([16.0, 4.0, 8.0], [2.0, 0.5, 1.0])
    assert "12% of the cut in global loads for the median case (12% to 12%)" in lines[0]
    assert "of 3 pairs of cases with different cuts, the larger cut went with the larger " \
           "speedup in 3" in lines[0]
    worse = speedup_against_cut([16.0, 4.0], [0.5, 2.0])[0]
    assert "in 0." in worse.split(";")[1]

    from tiletraffic.analysis.report.text import Speedup
    pairs = [Speedup("a", "square", 4.0, 0.5, 0.4, 0.6, 4, 64),
             Speedup("b", "square", 4.0, 2.0, 1.5, 2.5, 4, 128),
             Speedup("c", "square", 4.0, 1.2, 0.9, 1.5, 4, 256)]
    text = speedup_against_n(pairs)[0]
    assert text == ("Speedup of the tiled kernel against N, per tile width: B = 4: 0.50× at "
                    "N = 64 to 1.20× at N = 256, faster than naive beyond the spread at "
                    "N = 128.")


# ---------------------------------------------------------------- predictions file

TWO = (v.Case.from_dict({"family": "gemm-naive", "m": 32, "k": 32, "n": 32}),
       v.Case.from_dict({"family": "gemm-tiled", "m": 32, "k": 32, "n": 32, "tile": 8}))


def test_predictions_file_round_trip(tmp_path):
    path = tmp_path / "predictions.json"
    doc = vp.write_predictions(path, TWO, "generic-gpu", command="test")
    pf = vp.read_predictions(path)
    assert pf.cases == TWO and pf.predictions == doc["predictions"]
    assert pf.identity == vp.ModelIdentity(
        "generic-gpu", "generic-gpu", hashlib.sha256(built_in_file("generic-gpu").read_bytes())
        .hexdigest())
    assert pf.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    for c in TWO:
        p = pf.predictions[c.id]
        assert p["predicted_time_s"] > 0 and p["bound"]
        assert sum(p["time_terms_s"][k] for k in ("barrier_latency_s", "tail_s",
                                                  "launch_overhead_s")) \
            + p["time_terms_s"][p["bound"] + "_s"] == pytest.approx(p["predicted_time_s"])
        assert p["guessed_values"], "generic-gpu's guesses are recorded"
    import tiletraffic as tt
    from tiletraffic.simulator.model.device_model import GuessedValueWarning
    with pytest.warns(GuessedValueWarning):
        again = tt.model(TWO[0].build(), "generic-gpu").prediction.predicted_time_s
    assert pf.predictions[TWO[0].id]["predicted_time_s"] == again
    assert doc["created_utc"].endswith("Z") and doc["tiletraffic"]["version"]
    assert set(doc["tiletraffic"]) == {"version", "git_commit", "git_dirty"}
    vp.check_cases(pf, None)
    vp.check_cases(pf, TWO)
    model, identity = vp.model_of(pf, None)          # the file's own built-in model
    assert identity == pf.identity and model.name == "generic-gpu"


def test_predictions_file_refuses_other_cases_or_another_model(tmp_path):
    path = tmp_path / "p.json"
    model_file = tmp_path / "m.toml"
    model_file.write_text(built_in_file("generic-gpu").read_text())
    vp.write_predictions(path, TWO, model_file)
    pf = vp.read_predictions(path)
    with pytest.raises(vp.PredictionsMismatch, match="1 case.s. of the file missing"):
        vp.check_cases(pf, TWO[:1])
    with pytest.raises(vp.PredictionsMismatch, match="another order"):
        vp.check_cases(pf, TWO[::-1])
    with pytest.raises(vp.PredictionsMismatch, match="not in the file"):
        vp.check_cases(pf, v.case_list("quick"))
    vp.model_of(pf, str(model_file))                 # the same bytes: accepted
    with pytest.raises(vp.PredictionsMismatch, match="is not the one"):
        vp.model_of(pf, "nvidia-h200")
    model_file.write_text(model_file.read_text() + "# one edit\n")
    with pytest.raises(vp.PredictionsMismatch, match="is not the one"):
        vp.model_of(pf, None)                        # the file changed since
    model_file.unlink()
    with pytest.raises(vp.PredictionsMismatch, match="not there"):
        vp.model_of(pf, None)


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.update(format="other"), "not a tiletraffic predictions file"),
    (lambda d: d.update(version=99), "version 99"),
    (lambda d: d.pop("device_model"), "missing or malformed field"),
    (lambda d: d["predictions"].popitem(), "no prediction for case"),
    (lambda d: d["cases"].append(d["cases"][0]), "listed twice"),
])
def test_malformed_predictions_files_are_refused(tmp_path, edit, message):
    path = tmp_path / "p.json"
    doc = vp.write_predictions(path, TWO, "generic-gpu")
    edit(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(vp.PredictionsError, match=message):
        vp.read_predictions(path)


def test_predict_only_needs_no_device_and_a_model(tmp_path, monkeypatch):
    import tiletraffic.gpu.devices.device as device

    def no_device(*a, **k):
        raise AssertionError("--predict-only must not open a device")
    monkeypatch.setattr(device, "select_device", no_device)
    cases = tmp_path / "cases.toml"
    cases.write_text(v.cases_toml(TWO))
    out = tmp_path / "pred.json"
    res = CliRunner().invoke(main, ["validate", "--predict-only", "--cases", str(cases),
                                    "--device-model", "generic-gpu", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "2 of 2 cases predicted with generic-gpu" in res.output
    assert vp.read_predictions(out).cases == TWO
    # a case the model refuses (more registers than a work-item may have) is named, the
    # file keeps the refusal, and the command fails instead of saying "commit it"
    bad = v.Case.from_dict({**TWO[0].to_dict(), "registers": 300})
    cases.write_text(v.cases_toml([bad, TWO[1]]))
    res = CliRunner().invoke(main, ["validate", "--predict-only", "--cases", str(cases),
                                    "--device-model", "nvidia-h200", "--out", str(out)])
    assert res.exit_code == 2, res.output       # the case list holds a case it cannot take
    assert "1 of 2 cases predicted" in res.output and "commit it" not in res.output
    assert f"not predicted: {bad.id}" in res.output and "exceed the 255" in res.output
    assert "error: 1 of 2 case(s) not predicted (above): fix or remove them" in res.output
    assert "error" in json.loads(out.read_text())["predictions"][bad.id]
    cases.write_text(v.cases_toml(TWO))
    res = CliRunner().invoke(main, ["validate", "--predict-only", "--cases", str(cases)])
    assert res.exit_code == 2 and "needs --device-model" in res.output
    res = CliRunner().invoke(main, ["validate", "--predict-only", "--device-model", "nope"])
    assert res.exit_code == 2 and 'unknown device model "nope"' in res.output
    res = CliRunner().invoke(main, ["validate", "--quick", "--cases", str(cases)])
    assert res.exit_code == 2 and "not several" in res.output


# ---------------------------------------------------------------- on PoCL

@pytest.fixture(scope="module")
def quick_run(pocl_model, tmp_path_factory):
    """`tiletraffic validate --quick` on PoCL: (output folder, CLI output)."""
    out = tmp_path_factory.mktemp("validate") / "v"
    res = CliRunner().invoke(main, ["validate", "--quick", "--device", "pocl",
                                    "--device-model", str(pocl_model), "--out", str(out)])
    assert res.exit_code == 0, res.output
    return out, res.output


@needs_pocl
def test_quick_validation_on_pocl_end_to_end(quick_run, pocl_model):
    out, output = quick_run
    data = json.loads((out / "validation.json").read_text())
    cases = v.case_list("quick")
    assert data["cases"] == [c.to_dict() for c in cases]
    assert data["meta"]["complete"] is True and data["meta"]["case_list"] == "quick"
    assert data["meta"]["device_model"]["sha256"] == \
        hashlib.sha256(pocl_model.read_bytes()).hexdigest()
    for c in cases:
        rounds = data["measurements"][c.id]["rounds"]
        assert [r["round"] for r in rounds] == [0, 1]
        for r in rounds:
            assert r["check"]["ok"] is True and len(r["kernel_times_s"]) == 10, c.id
        assert data["predictions"][c.id]["predicted_time_s"] > 0
    summary = vres.summary_of(data)
    assert data["summary"] == summary.to_dict()
    assert len(summary.compared) == len(cases)
    # the figures printed are those of the data
    for t in summary.targets:
        assert f"{t.name:18s} {t.verdict:16s} {t.figure}" in output
    md = (out / "validation.md").read_text()
    assert "| target | asked | reached |" in md and "Timings on" in md
    assert noise_sentence(summary, data["meta"]["device"]["device_name"]) in md
    bounds = {data["predictions"][c.id]["bound"] for c in cases}   # as the product names them
    assert all(f"| {bound_name(b)} |" in md for b in bounds), (bounds, md)
    assert not [key for key in ("l1", "l2", "dram", "fp32") if f"| {key} |" in md], md
    assert (out / "predicted_vs_measured.png").read_bytes().startswith(PNG_MAGIC)
    assert data["meta"]["device_model"]["describes_device"] is True, "calibrated on it"


@needs_pocl
def test_pre_registered_predictions_are_measured_and_compared(pocl_model, tmp_path):
    cases = tmp_path / "cases.toml"
    two = v.case_list("quick")[:2]
    cases.write_text(v.cases_toml(two))
    pred = tmp_path / "pred.json"
    runner = CliRunner()
    res = runner.invoke(main, ["validate", "--predict-only", "--cases", str(cases),
                               "--device-model", str(pocl_model), "--out", str(pred)])
    assert res.exit_code == 0, res.output
    registered = json.loads(pred.read_text())["predictions"]
    out = tmp_path / "v"
    res = runner.invoke(main, ["validate", "--device", "pocl", "--predictions", str(pred),
                               "--out", str(out), "--rounds", "1"])
    assert res.exit_code == 0, res.output
    data = json.loads((out / "validation.json").read_text())
    assert data["predictions"] == registered, "compared with the file's predictions as written"
    assert data["meta"]["predictions_file"]["sha256"] == \
        hashlib.sha256(pred.read_bytes()).hexdigest()
    assert "pre-registered" in (out / "validation.md").read_text()
    # other cases, or another model, are refused before anything runs
    for extra, message in ((["--quick"], "case list differs"),
                           (["--device-model", "generic-gpu"], "is not the one")):
        res = runner.invoke(main, ["validate", "--device", "pocl", "--predictions", str(pred),
                                   "--out", str(tmp_path / "no"), *extra])
        assert res.exit_code == 2 and message in res.output, res.output
        assert not (tmp_path / "no").exists()


@needs_pocl
def test_every_finished_case_is_saved_and_earlier_results_kept(pocl_model, tmp_path,
                                                               monkeypatch):
    from tiletraffic.gpu.devices.device import select_device

    target = select_device("pocl")
    out = tmp_path / "v"
    first = vr.run_validation(target, model=pocl_model, cases=TWO, out_dir=out, rounds=1,
                              progress=False)
    first_text = (out / "validation.json").read_text()
    assert first.summary.to_dict() == json.loads(first_text)["summary"]
    # the saves of a run compare the cases it holds: no case is rebuilt from its dict
    saved, held = json.loads(first_text), list(TWO)
    with monkeypatch.context() as m:
        m.setattr(vres.Case, "from_dict", classmethod(lambda cls, *a, **k: pytest.fail(
            "a case rebuilt from its dict")))
        assert vres.summary_of(saved, held).to_dict() == saved["summary"]
    real, seen = vr._run_case, []

    def interrupt_third(*a, **k):
        if len(seen) == 2:
            on_disk = json.loads((out / "validation.json").read_text())
            assert on_disk["meta"]["case_runs_done"] == 2, "each finished run is on disk"
            raise KeyboardInterrupt
        seen.append(a[1])
        return real(*a, **k)

    monkeypatch.setattr(vr, "_run_case", interrupt_third)
    with pytest.raises(vr.ValidationInterrupted) as err:
        vr.run_validation(target, model=pocl_model, cases=TWO, out_dir=out, rounds=2,
                          progress=False)
    assert (err.value.done, err.value.total) == (2, 4)
    data = json.loads((out / "validation.json").read_text())
    assert data["meta"]["complete"] is False
    assert [len(data["measurements"][c.id]["rounds"]) for c in TWO] == [1, 1]
    assert (out / "validation.md").exists()
    history = sorted((out / "history").glob("validation-*.json"))
    assert len(history) == 1 and history[0].read_text() == first_text
    assert not [p for p in out.iterdir() if p.name.startswith(".")], "no temporary file left"
    # rendering again from the JSON alone gives the same text
    md = (out / "validation.md").read_text()
    res = CliRunner().invoke(main, ["validate", "--render", str(out)])
    assert res.exit_code == 0 and (out / "validation.md").read_text() == md


@needs_pocl
def test_a_failed_round_leaves_the_case_out_with_its_error(pocl_model, tmp_path, monkeypatch):
    from tiletraffic.gpu.devices.device import select_device
    from tiletraffic.gpu.runtime.launch import ResultMismatchError

    import tiletraffic.gpu.runtime.checked_run as validate_module
    real = validate_module.run_on_device

    def wrong_second(target, schedule, **k):
        if schedule.family == "gemm-tiled":
            raise ResultMismatchError("launch 3 of 12: made up for the test", launch=2,
                                      check=None)
        return real(target, schedule, **k)

    monkeypatch.setattr(validate_module, "run_on_device", wrong_second)
    run = vr.run_validation(select_device("pocl"), model=pocl_model, cases=TWO,
                            out_dir=tmp_path / "v", rounds=1, progress=False)
    assert [r.case for r in run.summary.compared] == [TWO[0]]
    md = (tmp_path / "v" / "validation.md").read_text()
    assert "ResultMismatchError: launch 3 of 12: made up for the test" in md


def test_a_report_measures_against_predictions_in_its_validate_folder(tmp_path):
    from tiletraffic.analysis.report.build import _registered_predictions

    class Info:
        is_gpu = False

    folder = tmp_path / "validate"
    assert _registered_predictions(folder, True, Info) is None     # none: the model runs
    folder.mkdir()
    model_file = folder / "m.toml"
    model_file.write_text(built_in_file("generic-gpu").read_text())
    cases = v.case_list("quick")
    _, identity = vp.resolve_model(model_file)
    # the model's source as written from inside the folder: found beside the file
    identity = vp.ModelIdentity(identity.name, "m.toml", identity.sha256)
    doc = vp.predictions_document(cases, identity, {c.id: {"predicted_time_s": 1e-3}
                                                    for c in cases}, case_list="quick")
    (folder / "predictions.json").write_text(json.dumps(doc))
    assert _registered_predictions(folder, True, Info) == folder / "predictions.json"
    with pytest.raises(vp.PredictionsMismatch, match="case list differs"):
        _registered_predictions(folder, False, Info)                # the cpu list
    model_file.write_text(model_file.read_text() + "# changed\n")
    with pytest.raises(vp.PredictionsMismatch, match="is not the one"):
        _registered_predictions(folder, True, Info)


def test_guess_lines_name_each_guessed_value_once_and_count_the_per_case_notes():
    from tiletraffic.analysis.validation.render import _guess_lines
    value = "device model m: l2_associativity = 16 is a guess, not a documented or queried value"
    reg = "gemm-x: registers per work-item estimated from the schedule (guessed): 30 + 2 = 32"
    out = "matvec_y: outside the model: 97% of the L1 wavefronts come from strided requests"
    data = {"predictions": {"a": {"guessed_values": [value, reg]},
                            "b": {"guessed_values": [value, reg, out]},
                            "c": {"guessed_values": [value]}}}
    lines = [line for line in _guess_lines(data) if line]
    assert lines[0].startswith("The device model guessed 1 value(s)")
    assert lines[0].endswith(": l2_associativity = 16.")
    assert lines[1].startswith("2 case(s) had their registers per work-item estimated")
    assert lines[2].startswith("1 case(s) were declared outside what the model predicts; "
                               "e.g. b: outside the model")
    assert _guess_lines({"predictions": {"a": {}}}) == []


def test_cases_run_with_other_registers_than_their_file_gave_are_named():
    """A case file's ``registers`` is what the prediction used; validation.md says how many
    cases ran with that count and names each whose built kernel had another (hand-made)."""
    from tiletraffic.analysis.validation.render import _register_lines

    given = case("gemm-prefetch", 64, 64, 64, registers=79)
    other = case("gemm-register-blocked", 64, 64, 64, registers=64)
    plain = case("gemm-naive", 64, 64, 64)
    data = {"cases": [c.to_dict() for c in (given, other, plain)], "measurements": {
        given.id: {"rounds": [{"registers_per_work_item": 79}, {"registers_per_work_item": 79}]},
        other.id: {"rounds": [{"registers_per_work_item": 64}, {"registers_per_work_item": 72}]},
        plain.id: {"rounds": [{"registers_per_work_item": 32}]}}}
    lines = _register_lines(data)
    assert lines[0] == ("2 case(s) were predicted with the registers per work-item their case "
                        "file gave (`registers`): 1 ran with that count, 1 with another "
                        "(their predictions used the file's count):")
    assert lines[2] == f"- {other.id}: the case file gave 64, the built kernel had 64, 72"
    data["measurements"][other.id]["rounds"] = [{"registers_per_work_item": None}]
    assert _register_lines(data)[0].endswith(": 1 ran with that count, 1 on a device that "
                                             "reports none.")
    assert _register_lines({"cases": [plain.to_dict()], "measurements": {}}) == []


@needs_pocl
def test_another_devices_model_gets_errors_but_no_verdicts(tmp_path):
    cases = tmp_path / "cases.toml"
    cases.write_text(v.cases_toml(TWO))
    out = tmp_path / "v"
    res = CliRunner().invoke(main, ["validate", "--device", "pocl", "--cases", str(cases),
                                    "--device-model", "generic-gpu", "--rounds", "1",
                                    "--out", str(out)])
    assert res.exit_code == 0, res.output
    data = json.loads((out / "validation.json").read_text())
    assert data["meta"]["device_model"]["describes_device"] is False
    md = (out / "validation.md").read_text()
    for text in (res.output, md):
        assert "is not a model of" in text
        assert not re.search(r"\b(not met|met)\b", text), text
    assert "time error" in md and "| target |" not in md


@needs_pocl
def test_a_cases_check_before_launch_is_made_once_for_all_its_rounds(tmp_path, monkeypatch,
                                                                     pocl_model):
    import tiletraffic.gpu.runtime.checked_run as measure
    from tiletraffic.gpu.devices.device import select_device
    made = []
    real = measure.check_before_launch

    def counted(schedule, **k):
        made.append(schedule.family)
        return real(schedule, **k)

    monkeypatch.setattr(measure, "check_before_launch", counted)
    run = vr.run_validation(select_device("pocl"), model=pocl_model, cases=TWO,
                            out_dir=tmp_path / "v", rounds=2, progress=False)
    assert sorted(made) == sorted(c.family for c in TWO)
    for entry in run.data["measurements"].values():
        first, second = entry["rounds"]
        assert "reused" not in first["launch_check"] and second["launch_check"]["reused"]
        assert second["launch_check"]["sum_length"] == first["launch_check"]["sum_length"]


@needs_pocl
def test_a_split_k_case_is_predicted_as_its_two_kernels_and_measured_as_one_case(tmp_path):
    """gemm-split-k (a sequence: the slices, then their sum) is a GEMM case: its prediction
    is the two kernels' combined (as ``tiletraffic model`` gives it), and validate times
    both launches of each run and checks C."""
    from tiletraffic.simulator.model.sequence_run import model_sequence

    split = case("gemm-split-k", 64, 512, 128, tile=16, tm=8, tn=4, bk=32, wg_rows=8,
                 splits=2)
    assert split.kind == "gemm" and split.problem == "gemm 64×512×128"
    assert split.id == "gemm-split-k m=64 k=512 n=128 tile=16 bk=32 splits=2 tm=8 tn=4 wg_rows=8"
    model = vp.resolve_model("nvidia-h200")[0]
    p = vp.predict_case(split, model)
    assert p["predicted_time_s"] == pytest.approx(
        model_sequence(split.build(), model).prediction.predicted_time_s)
    with pytest.raises(v.CaseError, match="splits"):
        case("gemm-split-k", 64, 512, 128, tile=16, tm=8, tn=4, bk=32, wg_rows=8, splits=1)
    path = tmp_path / "cases.toml"
    path.write_text(v.cases_toml([split]))
    assert v.read_cases(path) == (split,)
    out = tmp_path / "v"
    res = CliRunner().invoke(main, ["validate", "--device", "pocl", "--cases", str(path),
                                    "--out", str(out), "--rounds", "1"])
    assert res.exit_code == 0, res.output
    data = json.loads((out / "validation.json").read_text())
    (run,) = data["measurements"][split.id]["rounds"]
    assert "device_error" not in run and run["check"]["ok"] is True, run
    assert run["kernel_name"] == "gemm_split_k_slices+gemm_split_k_reduce"
    assert data["predictions"][split.id]["predicted_time_s"] > 0
