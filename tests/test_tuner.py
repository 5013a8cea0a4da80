"""The model-guided tuner: expressions, tuning-space files, constraints
and rejections, the judge's arithmetic on hand-made results, saving and resuming, the whole
tuning on PoCL at tiny sizes, and the command line."""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, strategies as st

import tiletraffic as tt
from tiletraffic.analysis.tune import tuner, stats as tuning_stats
from tiletraffic.analysis.cli import main
from tiletraffic.frontend.expressions import BOOLEAN, NUMBER, ExpressionError, parse
from tiletraffic.analysis.tune.space import Candidate, SpaceError, check_candidate, load_space
from tiletraffic.gpu.runtime.launch import list_devices
from tiletraffic.simulator.engine.limits import GENERIC_GPU, DeviceLimits
from tiletraffic.simulator.ir.sequence import kernels_of

from shared_results import computed_once

HAS_POCL = any(d.is_pocl for d in list_devices())
needs_pocl = pytest.mark.skipif(not HAS_POCL, reason="PoCL is not installed")

SMALL_SPACE = """
operation = "gemm"
[constants]
max_private_floats = 40

[[constraint]]
rule = "work_group_items <= device_max_work_group_size"
why = "work-group too large"

[[constraint]]
rule = "local_mem_bytes <= device_local_mem_bytes"
why = "local memory too large"

[[family]]
name = "gemm-tiled"
[family.parameters]
tile = [8, 16]
[family.derived]
work_group_items = "tile * tile"
local_mem_bytes = "4 * 2 * tile * tile"

[[family]]
name = "gemm-vectorized"
[family.parameters]
tile = [8]
wg_rows = [8]
tm = [2, 4, 8]
tn = [4]
bk = [8]
[family.derived]
work_group_items = "tile * wg_rows"
local_mem_bytes = "4 * bk * (tm * wg_rows + tn * tile)"
[[family.constraint]]
rule = "tm * tn + tm + tn <= max_private_floats"
why = "too many private floats"
[[family.constraint]]
rule = "tm % 4 == 0"
"""
"""Five candidates: two gemm-tiled, three gemm-vectorized of which tm = 2 (not a multiple
of 4) and tm = 8 (8·4 + 8 + 4 = 44 private floats > 40) are rejected: three valid."""


def write(tmp_path, text, name="space.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


# ----------------------------------------------------------------------------- expressions

def test_expressions_evaluate_arithmetic_comparisons_and_logic_by_hand():
    values = {"tm": 8, "tn": 4, "K": 66, "M": 100}
    assert parse("tm * tn + tm + tn", values).evaluate(values) == 44
    assert parse("ceil_div(M, tm)", values).evaluate(values) == 13
    assert parse("min(tm, tn, 3) + max(tm, 2)", values).evaluate(values) == 11
    assert parse("1 <= tn <= tm < 9", values).evaluate(values) is True
    assert parse("1 <= tm <= tn", values).evaluate(values) is False
    assert parse("K % 4 == 0 or not tm > 4", values).evaluate(values) is False
    assert parse("M // 3 - -tn", values).evaluate(values) == 37
    assert parse("K / 4", values).evaluate(values) == 16.5
    assert parse("tm <= 8", values, BOOLEAN).kind == BOOLEAN
    assert parse("tm + 1", values).names == {"tm"}


@pytest.mark.parametrize("text, words", [
    ("__import__('os').system('true')", "only the functions"),
    ("tm.real", "Attribute"),
    ("tm ** 2", "'**' is not allowed"),
    ("tm << 2", "'<<' is not allowed"),
    ("'a' == 'a'", "only numbers and True/False"),
    ("tk * 2", "unknown name 'tk'"),
    ("tm and tn", "'and' needs a truth value"),
    ("(tm < 4) + 1", "'+' needs a number"),
    ("tm <", "syntax error at the end"),
    ("tm + * 2", "syntax error at column 6"),
    ("min()", "one or more arguments"),
    ("ceil_div(tm)", "exactly two arguments"),
    ("max(tm, key=tn)", "positional arguments only"),
    ("[tm][0]", "not allowed"),
    ("tm if tn else 1", "not allowed"),
    ("lambda: 1", "not allowed"),
    ("tm in (1, 2)", "not allowed"),
    ("", "empty expression"),
])
def test_expressions_refuse_what_is_not_whitelisted_naming_it(text, words):
    with pytest.raises(ExpressionError) as err:
        parse(text, {"tm", "tn"})
    assert words in str(err.value)


def test_an_expression_of_the_wrong_kind_and_division_by_zero_are_errors():
    with pytest.raises(ExpressionError, match="gives a number; a truth value is needed"):
        parse("tm * 2", {"tm"}, BOOLEAN)
    with pytest.raises(ExpressionError, match="gives a truth value; a number is needed"):
        parse("tm < 2", {"tm"}, NUMBER)
    with pytest.raises(ExpressionError, match="division by zero with tm = 0"):
        parse("4 % tm", {"tm"}).evaluate({"tm": 0})
    with pytest.raises(ExpressionError, match="longer than"):
        parse("1 + " * 400 + "1", set())


ARITH = st.recursive(
    st.one_of(st.integers(-20, 20).map(str), st.sampled_from(["a", "b", "c"])),
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from(["+", "-", "*"]), inner).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(inner, inner).map(lambda t: f"min({t[0]}, {t[1]})"),
        st.tuples(inner, inner).map(lambda t: f"max({t[0]}, {t[1]})")),
    max_leaves=8)


@given(ARITH, ARITH, st.sampled_from(["<", "<=", "==", "!=", ">", ">="]),
       st.tuples(st.integers(-9, 9), st.integers(-9, 9), st.integers(1, 9)))
def test_the_tree_walk_agrees_with_python_on_generated_expressions(left, right, op, abc):
    """The evaluator is a walk of the tree, not eval; on arithmetic, min/max and comparisons
    it gives Python's value (eval of our own generated text, in this test only)."""
    values = dict(zip("abc", abc))
    for text in (left, f"{left} {op} {right}", f"not ({left} {op} {right}) or a < b"):
        assert parse(text, values).evaluate(values) == eval(text, {"min": min, "max": max},
                                                           dict(values))


# ----------------------------------------------------------------------------- the space

def test_the_built_in_space_derives_what_the_builders_build():
    """Every valid candidate of gemm.toml at two shapes (one not a multiple of anything):
    the space's local_mem_bytes, work_group_items, bm and bn equal the built schedule's, so
    the constraints judge what would launch."""
    space = load_space()
    assert {f.family for f in space.families} == {
        "gemm-tiled", "gemm-register-blocked", "gemm-vectorized", "gemm-prefetch",
        "gemm-warp-tiled", "gemm-split-k"}
    split = 0
    for m, n, k in ((64, 64, 64), (100, 60, 36), (40, 64, 1024)):
        valid = 0
        for fam, cand in space.candidates():
            if check_candidate(space, fam, cand, m, n, k, GENERIC_GPU):
                continue
            valid += 1
            whole = cand.build(m, n, k)
            split += cand.family == "gemm-split-k"
            sch = kernels_of(whole)[0]   # split-K: the kernel with the tiles
            values = {"M": m, "N": n, "K": k, **space.constants, **cand.options}
            for name, expr in fam.derived.items():
                values[name] = expr.evaluate(values)
            assert values["local_mem_bytes"] == sch.local_mem_bytes, cand.label
            assert values["work_group_items"] == sch.work_group_items, cand.label
            extra = sch.extra if "bm" in sch.extra else {"bm": sch.tile, "bn": sch.tile}
            assert (values["bm"], values["bn"]) == (extra["bm"], extra["bn"]), cand.label
        assert valid > 50
    assert split > 0


def test_constraints_reject_hand_cases_with_the_rule_and_its_values():
    space = load_space()
    fams = {f.family: f for f in space.families}

    def reasons(family, m=64, n=64, k=64, limits=GENERIC_GPU, **params):
        cand = Candidate(family, tuple(params.items()))
        return check_candidate(space, fams[family], cand, m, n, k, limits)

    vec = dict(tile=8, wg_rows=8, tm=4, tn=4, bk=16)
    assert reasons("gemm-vectorized", **vec) == []
    (why, reason), = reasons("gemm-vectorized", k=66, **vec)
    assert why.startswith("float4 loads of A and B need K and N")
    assert "K = 66" in reason and "N = 64" in reason
    assert [w for w, _ in reasons("gemm-vectorized", **{**vec, "bk": 6})] == [
        "float4 accesses need tm, tn and bk to be multiples of 4"]
    # 16·8 + 16 + 8 = 152 private floats > 128; 16 rows x 8 work-groups rows = BM 128 > 2 M
    blocked = dict(tile=8, wg_rows=8, tm=16, tn=8, bk=8)
    got = dict(reasons("gemm-register-blocked", m=512, n=512, k=512, **blocked))
    assert "max_private_floats = 128, tm = 16, tn = 8" in got[
        "more private floats per work-item than max_private_floats (register spills)"]
    # two 128x32 and two 32x128 tiles: 4 * 2 * (4096 + 4096) = 65536 bytes > 48 KiB
    (why, reason), = reasons("gemm-prefetch", m=512, n=512, k=512,
                             tile=16, wg_rows=16, tm=8, tn=8, bk=32)
    assert "local memory" in why and "local_mem_bytes = 65536" in reason
    assert "device_local_mem_bytes = 49152" in reason
    small = DeviceLimits("tiny", 128, (128, 128, 64), 48 * 1024)
    (why, reason), = reasons("gemm-register-blocked", limits=small, tile=16, wg_rows=16,
                             tm=4, tn=4, bk=8)
    assert why.startswith("work-group larger") and "work_group_items = 256" in reason
    # more than half of C's computed block is padding: BM = 8 * 16 = 128 rows for M = 20
    assert any("padding" in w for w, _ in reasons("gemm-register-blocked", m=20, **{
        **vec, "tm": 8, "wg_rows": 16}))


@pytest.mark.parametrize("text, words", [
    ("[[family]]\nname = 'gemm-fast'\n[family.parameters]\ntile = [8]\n",
     "family 1 (gemm-fast): unknown family 'gemm-fast' for gemm; the families: gemm-naive"),
    ("[[family]]\nname = 'matvec-naive'\n[family.parameters]\ntile = [8]\n",
     "unknown family 'matvec-naive' for gemm"),
    ("[[family]]\nname = 'gemm-tiled'\n[family.parameters]\ntm = [8]\n",
     "family 1 (gemm-tiled), parameters.tm: gemm-tiled does not take 'tm'"),
    ("[[family]]\nname = 'gemm-tiled'\n[family.parameters]\ntile = []\n",
     "parameters.tile: must be a non-empty list of integers"),
    ("[[family]]\nname = 'gemm-tiled'\n[family.parameters]\ntile = [8, 'x']\n",
     "must be a non-empty list of integers"),
    ("[[family]]\nname = 'gemm-tiled'\n[family.parameters]\ntile = [8, 8]\n",
     "lists a value twice"),
    ("[[family]]\nname = 'gemm-tiled'\n", "needs a [family.parameters] table"),
    ("[[family]]\n[family.parameters]\ntile = [8]\n",
     "family 1: needs a name, one of the families of gemm: gemm-naive, gemm-tiled"),
    ("[[family]]\nname = 3\n[family.parameters]\ntile = [8]\n",
     "family 1: unknown family 3 for gemm"),
    ("[constants]\nmax_floats = 'many'\n[[family]]\nname = 'gemm-tiled'\n"
     "[family.parameters]\ntile = [8]\n",
     'constants.max_floats: must be a number, got the string "many"'),
    ("[[family]]\nname = 'gemm-tiled'\n[family.parameters]\ntile = [8]\n"
     "[[family.constraint]]\nrule = 'tile < 64'\n[[family.constraint]]\nrule = 'tile <'\n",
     "family 1 (gemm-tiled), constraint 2: 'tile <': syntax error"),
    ("[[family]]\nname = 'gemm-tiled'\n[family.parameters]\ntile = [8]\n"
     "[[family.constraint]]\nrule = 'tile * 2'\n",
     "constraint 1: 'tile * 2' gives a number; a truth value is needed"),
    ("[[family]]\nname = 'gemm-tiled'\n[family.parameters]\ntile = [8]\n"
     "[[family.constraint]]\nrule = 'open(tile)'\n", "only the functions min, max, ceil_div"),
    ("[[constraint]]\nrule = 'bm <= M'\n[[family]]\nname = 'gemm-tiled'\n"
     "[family.parameters]\ntile = [8]\n",
     "family 1 (gemm-tiled), common constraint 1 (top-level [[constraint]] 1): 'bm <= M': "
     "unknown name 'bm'"),
    ("[[family]]\nname = 'gemm-tiled'\n[family.parameters]\ntile = [8]\n[family.derived]\n"
     "tile = 'tile * 2'\n", "derived tile: 'tile' is already a size"),
    ("[[family]]\nname = 'gemm-tiled'\n[family.parameters]\ntile = [8]\n"
     "[[family]]\nname = 'gemm-tiled'\n[family.parameters]\ntile = [16]\n",
     "family 2 (gemm-tiled): gemm-tiled is listed twice"),
    ("tiles = 3\n[[family]]\nname = 'gemm-tiled'\n[family.parameters]\ntile = [8]\n",
     "top level: unknown key(s) 'tiles'"),
    ("operation = 'matvec'\n", "operation: the file tunes 'matvec', not 'gemm'"),
    ("[constants]\nK = 4\n[[family]]\nname = 'gemm-tiled'\n[family.parameters]\ntile = [8]\n",
     "constants.K: 'K' is a size or device limit"),
    ("description = 'nothing'\n", "no [[family]] entry: the space is empty"),
    ("[[family]\n", "not a valid TOML file"),
])
def test_space_file_errors_name_the_file_the_entry_and_the_problem(tmp_path, text, words):
    path = write(tmp_path, text)
    with pytest.raises(SpaceError) as err:
        load_space(path)
    assert str(err.value).startswith(f"{path}: ")
    assert words in str(err.value) and "None" not in str(err.value)


def test_builder_and_limit_refusals_are_rejections_not_crashes(tmp_path):
    """A space without gemm-vectorized's K % 4 rule: the builder's ScheduleError rejects
    every candidate at K = 66 (stage builder). One without a local-memory rule: the built
    schedule's local memory is refused against the limits (stage limits)."""
    space = load_space(write(tmp_path, "[[family]]\nname = 'gemm-vectorized'\n"
                                       "[family.parameters]\ntile = [8]\ntm = [4, 8]\n"))
    valid, rejected = tuner.screen(space, 64, 64, 66, GENERIC_GPU)
    assert valid == [] and [r["stage"] for r in rejected] == ["builder", "builder"]
    assert "gemm-vectorized needs K to be a multiple of 4" in rejected[0]["reasons"][0]
    with pytest.raises(tuner.TuneError, match="no valid candidate .* all 2 rejected; most "
                                              "often: the builder refused"):
        tt.tune(64, 64, 66, space=space, top=0)
    space = load_space(write(tmp_path, "[[family]]\nname = 'gemm-tiled'\n"
                                       "[family.parameters]\ntile = [8, 32, 64]\n", "b.toml"))
    valid, rejected = tuner.screen(space, 64, 64, 64, GENERIC_GPU)
    assert [c.label for c, _ in valid] == ["gemm-tiled tile=8", "gemm-tiled tile=32"]
    assert rejected[0]["stage"] == "limits"
    assert "a work-group of 4096 work-items (64 x 64) exceeds the maximum work-group size " \
           "1024" in rejected[0]["reasons"][0]


WARP_SPACE = """
operation = "gemm"
[[family]]
name = "gemm-warp-tiled"
[family.parameters]
tile = [8]
wg_rows = [8]
tm = [4]
tn = [4]
bk = [32]
wn = [32]
max_registers = [MAX_REGISTERS]
"""
"""One gemm-warp-tiled candidate per register budget (0: none)."""


def test_a_candidate_without_a_register_budget_shows_none_in_its_label(tmp_path):
    """``max_registers = 0`` is no budget: the labels (and ``tune --shapes``' pick column)
    leave the field out; a budget above 0 is shown with its value."""
    both = load_space(write(tmp_path, WARP_SPACE.replace("MAX_REGISTERS", "0, 128")))
    base = "gemm-warp-tiled tile=8 wg_rows=8 tm=4 tn=4 bk=32 wn=32"
    assert [c.label for _, c in both.candidates()] == [base, base + " max_registers=128"]
    space = write(tmp_path, WARP_SPACE.replace("MAX_REGISTERS", "0"), "none.toml")
    shapes = write(tmp_path, "[[shape]]\nm = 64\nn = 64\nk = 64\n", "shapes.toml")
    res = CliRunner().invoke(main, ["tune", "gemm", "--shapes", str(shapes), "--space",
                                    str(space), "--top", "0", "--out", str(tmp_path / "s")])
    assert res.exit_code == 0, res.output
    assert base in res.stdout and "max_registers" not in res.stdout, res.stdout
    doc = json.loads((tmp_path / "s" / "gemm-64x64x64.json").read_text())
    assert doc["predictions"][0]["params"]["max_registers"] == 0     # the data keeps it


def test_a_candidate_the_model_refuses_is_rejected_and_the_rest_ranked(tmp_path, monkeypatch):
    from tiletraffic.simulator.model import launch as traffic_model
    from tiletraffic.simulator.engine.limits import LimitError

    real = traffic_model.model_launch

    def picky(sch, model, **kw):
        if sch.tile == 16:
            raise LimitError("gemm-tiled: over a limit (hand-made for the test)")
        return real(sch, model, **kw)

    monkeypatch.setattr(traffic_model, "model_launch", picky)
    res = tt.tune(64, 64, 64, space=write(tmp_path, SMALL_SPACE), top=0)
    assert [r["label"] for r in res.rejected if r["stage"] == "model"] == [
        "gemm-tiled tile=16"]
    assert "LimitError: gemm-tiled: over a limit" in res.rejected[-1]["reasons"][0]
    assert [p["predicted_rank"] for p in res.predictions] == [1, 2]
    times = [p["predicted_time_s"] for p in res.predictions]
    assert times == sorted(times)
    assert res.summary["valid"] == 3 and res.summary["modelled"] == 2


# ----------------------------------------------------------------------------- the judge

def _measured(label, rank, predicted_ms, median_ms, spread_ms):
    return {"label": label, "family": "gemm-tiled", "params": {}, "status": "ok",
            "predicted_rank": rank, "predicted_time_s": predicted_ms * 1e-3,
            "median_s": median_ms * 1e-3, "spread_s": spread_ms * 1e-3,
            "gflop_per_s": 1.0, "check": {"ok": True, "error_over_tolerance": 0.1}}


def test_regret_rank_correlation_and_resolvable_pairs_on_hand_made_results():
    """Five measured candidates (predicted rank, predicted ms, measured ms ± spread):
    a 1 1.0 1.20±0.01, b 2 1.1 1.00±0.01, c 3 1.2 1.05±0.10, d 4 1.3 2.00±0.01,
    e 5 1.4 1.90±0.02, and a failed one ranked 0.5 ahead of all.
    Pick a (rank 1 of the measured), best b: regret 1.2 / 1.0 = 1.2x, +20%, not within 10%,
    resolvable (0.2 ms > 2 x 0.01). Spearman: measured ranks a 3, b 1, c 2, d 5, e 4 against
    1..5: d² = 4 + 1 + 1 + 1 + 1 = 8, rho = 1 - 6·8 / (5·24) = 0.6.
    Pairs: 10; not resolvable: b-c (0.05 <= 2 x 0.10) and a-c (0.15 <= 0.2); d-e is
    (0.1 > 2 x 0.02). Of the 8 resolvable, a-b and d-e are discordant, 6 concordant."""
    doc = {"meta": {"space_candidates": 9}, "valid_candidates": 7,
           "predictions": [{"predicted_time_s": 1e-3}] * 7,
           "rejected": [{"label": "x", "stage": "constraint", "reasons": ["r1: long"],
                         "whys": ["r1"]},
                        {"label": "y", "stage": "builder", "reasons": ["b"], "whys": ["b"]}],
           "measurements": [
               _measured("a", 2, 1.0, 1.20, 0.01), _measured("b", 3, 1.1, 1.00, 0.01),
               _measured("c", 4, 1.2, 1.05, 0.10), _measured("d", 5, 1.3, 2.00, 0.01),
               _measured("e", 6, 1.4, 1.90, 0.02),
               {"label": "z", "family": "gemm-tiled", "params": {"tile": 4},
                "status": "failed", "predicted_rank": 1, "predicted_time_s": 0.5e-3,
                "stage": "check",
                "error_type": "ResultMismatchError", "error": "wrong"}]}
    s = tuning_stats.summarize(doc)
    assert s["pick"]["label"] == "a" and s["best"]["label"] == "b"
    assert s["failed_above_pick"] == ["z"]
    assert s["regret_ratio"] == pytest.approx(1.2) and s["regret_pct"] == pytest.approx(20)
    assert s["within_regret_target"] is False and s["pick_is_best"] is False
    assert s["pick_resolvable_from_best"] is True
    assert s["spearman_rho"] == pytest.approx(0.6)
    assert s["pairs"] == {"total": 10, "resolvable": 8, "concordant": 6, "discordant": 2,
                          "model_ties": 0}
    assert {(d["measured_faster"], d["measured_slower"]) for d in s["discordant_pairs"]} == {
        ("b", "a"), ("e", "d")}
    assert (s["valid"], s["measured_ok"], s["measured_failed"], s["rejected"]) == (7, 5, 1, 2)
    assert s["rejected_by_stage"] == {"constraint": 1, "builder": 1}
    assert s["scope"] == ("regret over the 5 measured of 7 valid candidates; the 2 not "
                          "measured could hold a faster one")
    text = tuning_stats.table({**doc, "meta": {"m": 1, "n": 1, "k": 1, "space": "s",
                                               "device_model": "x", "device": None}})
    assert "regret: 1.200x (+20.0%), NOT within 10% of the best" in text
    assert "of 10 pairs, 8 differ by more than twice their spread: 6 ordered right" in text
    elsewhere = tuning_stats.table({**doc, "meta": {
        "m": 1, "n": 1, "k": 1, "space": "s", "device_model": "x", "device": None,
        "model_describes_device": False, "model_why": "`x` is not a model of cpu"}})
    assert ("regret: 1.200x (+20.0%), no verdict against 10% of the best (target "
            "tune-regret): the model is not this device's; the pick is resolvably slower"
            in elsewhere)


def test_the_table_fits_long_parameters_and_explains_rejections_counted_twice():
    long = {"tile": 16, "wg_rows": 16, "tm": 8, "tn": 8, "bk": 16, "wn": 64,
            "group_rows": 8, "max_registers": 128}
    rows = [{**_measured("a", 1, 1.0, 1.0, 0.01), "params": long},
            {**_measured("b", 2, 1.1, 1.2, 0.01), "params": {"tile": 4}}]
    doc = {"meta": {"m": 1, "n": 1, "k": 1, "space": "s", "device_model": "x",
                    "device": None, "space_candidates": 4},
           "predictions": [{"predicted_time_s": 1e-3}] * 2, "measurements": rows,
           "rejected": [{"label": "x", "stage": "constraint", "reasons": ["r1", "r2"],
                         "whys": ["r1", "r2"]},
                        {"label": "y", "stage": "constraint", "reasons": ["r1"],
                         "whys": ["r1"]}]}
    text = tuning_stats.table(doc)
    params = " ".join(f"{k}={v}" for k, v in long.items())
    assert len(params) > 34
    lines = [ln for ln in text.splitlines() if "gemm-tiled" in ln]
    assert len(lines) == 2 and params in lines[0]
    # the predicted-ms column starts at the same place in both rows and the header
    head = next(ln for ln in text.splitlines() if "predicted ms" in ln)
    at = lines[0].index("1.000")
    assert lines[1].index("1.100") == at
    assert head.index("predicted ms") <= at < head.index("predicted ms") + len("predicted ms")
    assert "rejected before launch: 2 (2 constraint); a candidate counts under every " \
           "rule it breaks" in text
    one = tuning_stats.table({**doc, "rejected": doc["rejected"][1:]})
    assert "counts under every rule" not in one


def test_a_pick_within_the_spread_is_within_10_percent_and_not_resolvable():
    doc = {"meta": {}, "predictions": [], "rejected": [], "measurements": [
        _measured("a", 1, 1.0, 1.05, 0.05), _measured("b", 2, 2.0, 1.00, 0.01)]}
    s = tuning_stats.summarize(doc)
    assert s["within_regret_target"] is True and s["pick_resolvable_from_best"] is False
    assert s["pairs"]["resolvable"] == 0 and s["spearman_rho"] == pytest.approx(-1.0)
    assert tuning_stats.spearman([1, 2], [5, 5]) is None


# ----------------------------------------------------------------------------- on PoCL

@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """The small space tuned on PoCL (the best 3 measured) and its tuning file, made once per
    test run (``shared_results.computed_once``); the tests only read the file."""
    if not HAS_POCL:
        pytest.skip("PoCL is not installed")

    def tune():
        folder = tmp_path_factory.mktemp("tune")
        space = write(folder, SMALL_SPACE)
        out = folder / "out.json"
        return tt.tune(64, 64, 64, device="pocl", space=space, top=3, out=out, seed=3), out

    return computed_once(tmp_path_factory, "test_tuner.small_run", tune)


@needs_pocl
def test_the_whole_tuning_on_pocl_checks_every_measured_result(small_run):
    res, out = small_run
    s = res.summary
    assert (s["candidates"], s["rejected"], s["valid"], s["modelled"]) == (5, 2, 3, 3)
    assert s["rejected_by_reason"] == {"too many private floats": 1, "tm % 4 == 0": 1}
    assert [m["predicted_rank"] for m in res.measurements] == [1, 2, 3]
    for m in res.measurements:
        assert m["status"] == "ok", m
        assert m["check"]["ok"] and m["check"]["error_over_tolerance"] <= 1
        assert [r["round"] for r in m["rounds"]] == [0, 1]
        for r in m["rounds"]:  # every round checked: its first and last of 12 launches
            assert r["check"]["ok"] and {0, 11} <= set(r["check"]["checked_launches"])
            assert len(r["kernel_times_s"]) == 10
        times = [t for r in m["rounds"] for t in r["kernel_times_s"]]
        assert m["median_s"] == pytest.approx(float(np.median(times)))
        q25, q75 = np.percentile(times, [25, 75])
        gap = abs(np.median(m["rounds"][0]["kernel_times_s"])
                  - np.median(m["rounds"][1]["kernel_times_s"]))
        assert m["spread_s"] == pytest.approx(max(q75 - q25, gap))
        assert m["gflop_per_s"] == pytest.approx(2 * 64 ** 3 / m["median_s"] / 1e9)
    best = min(res.measurements, key=lambda m: m["median_s"])
    assert s["best"]["label"] == best["label"]
    assert s["regret_ratio"] == pytest.approx(res.measurements[0]["median_s"]
                                              / best["median_s"])
    assert json.loads(out.read_text()) == res.data and res.data["status"] == "complete"
    assert res.data["meta"]["device"]["name"] and res.data["meta"]["seed"] == 3
    table = res.table()
    for words in ("predicted ms", "measured ms", "GFLOP/s", "ok (err/tol", "regret:",
                  "rejected before launch: 2", "regret over the 3 measured of 3 valid"):
        assert words in table


@needs_pocl
def test_saving_is_atomic_after_every_candidate_and_resume_redoes_nothing(
        small_run, tmp_path, monkeypatch):
    res, out = small_run
    copy = tmp_path / "out.json"
    copy.write_text(out.read_text())
    monkeypatch.setattr(tuner, "measure_round", lambda *a: pytest.fail("measured again"))
    monkeypatch.setattr(tuner, "_predict", lambda *a: pytest.fail("modelled again"))
    again = tt.tune(64, 64, 64, device="pocl", space=res.data["meta"]["space"], top=3,
                    out=copy, resume=True)
    assert again.measurements == res.measurements
    assert again.data["meta"]["seed"] == 3, "the seed of the measurements is kept"
    fewer = tt.tune(64, 64, 64, device="pocl", space=res.data["meta"]["space"], top=1,
                    out=copy, resume=True)
    assert len(fewer.measurements) == 3, "measurements outside the new top are kept"
    with pytest.raises(tuner.TuneError, match=r"holds another tuning \(--m was 64, now 32\)"):
        tt.tune(32, 64, 64, device="pocl", space=res.data["meta"]["space"], top=3,
                out=copy, resume=True)


@needs_pocl
def test_ctrl_c_keeps_what_finished_and_resume_completes_it(tmp_path, monkeypatch):
    space = write(tmp_path, SMALL_SPACE)
    out = tmp_path / "t.json"
    snapshots = []
    real_write = tuner.atomic_write_text

    def recording(path, text):
        real_write(path, text)
        snapshots.append(json.loads(text))

    monkeypatch.setattr(tuner, "atomic_write_text", recording)
    real_measure = tuner.measure_round
    calls = []

    def interrupt_fourth(*args):  # round 0 ran all three; round 1's first is interrupted
        calls.append(args)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return real_measure(*args)

    monkeypatch.setattr(tuner, "measure_round", interrupt_fourth)
    with pytest.raises(tuner.TuneInterrupted) as err:
        tt.tune(64, 64, 64, device="pocl", space=space, top=3, out=out, seed=5)
    assert "saved in" in str(err.value)
    saved = json.loads(out.read_text())
    assert saved["status"] == "interrupted"
    assert [(m["status"], len(m["rounds"])) for m in saved["measurements"]] == [
        ("incomplete", 1)] * 3
    assert saved["summary"]["measured_ok"] == 0 and "1 round(s) only" in tuning_stats.table(
        saved)
    first = saved["measurements"][0]
    # a snapshot after every modelled candidate and every measured run, each a whole document
    assert [len(s["predictions"]) for s in snapshots][:4] == [0, 1, 2, 3]
    assert [len(s["measurements"]) for s in snapshots][-4:] == [1, 2, 3, 3]
    monkeypatch.setattr(tuner, "measure_round", real_measure)
    done = tt.tune(64, 64, 64, device="pocl", space=space, top=3, out=out, resume=True)
    assert done.data["status"] == "complete" and len(done.measurements) == 3
    assert done.measurements[0]["rounds"][0] == first["rounds"][0]
    assert len(calls) == 4, "round 0 was not run again"
    assert done.data["meta"]["seed"] == 5
    # without --resume an existing file is moved to history/, never overwritten
    again = tt.tune(64, 64, 64, space=space, top=0, out=out)
    moved = list((tmp_path / "history").iterdir())
    assert len(moved) == 1 and json.loads(moved[0].read_text()) == done.data
    assert again.data["meta"]["previous_results_moved_to"] == str(moved[0])


@needs_pocl
def test_a_failed_measurement_is_recorded_and_the_tuning_goes_on(tmp_path, monkeypatch):
    from tiletraffic.gpu.runtime import checked_run as validate
    from tiletraffic.gpu.runtime.launch import KernelBuildError

    real = validate.run_on_device

    def fail_tiled(target, sch, **kw):
        if sch.family == "gemm-tiled":
            raise KernelBuildError("error: hand-made build failure", "log")
        return real(target, sch, **kw)

    monkeypatch.setattr(validate, "run_on_device", fail_tiled)
    res = tt.tune(64, 64, 64, device="pocl", space=write(tmp_path, SMALL_SPACE), top=3,
                  out=None)
    failed = [m for m in res.measurements if m["status"] == "failed"]
    assert [m["family"] for m in failed] == ["gemm-tiled", "gemm-tiled"]
    assert failed[0]["stage"] == "build" and "hand-made" in failed[0]["error"]
    assert failed[0]["failed_round"] == 0 and failed[0]["rounds"] == []
    assert res.summary["measured_ok"] == 1 and res.summary["regret_ratio"] == 1.0
    assert "build: KernelBuildError: error: hand-made build failure" in res.table()


def test_a_pool_of_processes_models_what_one_process_does(tmp_path):
    space = write(tmp_path, SMALL_SPACE)
    one = tt.tune(64, 64, 64, space=space, top=0)
    two = tt.tune(64, 64, 64, space=space, top=0, jobs=2)
    assert [(p["label"], p["predicted_time_s"]) for p in one.predictions] == \
        [(p["label"], p["predicted_time_s"]) for p in two.predictions]
    assert one.data["meta"]["device_model"] == "nvidia-h200" and one.measurements == []
    warned = {p["label"] for p in one.predictions if p["model_warnings"]}
    assert warned == {p["label"] for p in two.predictions if p["model_warnings"]}
    assert all("GuessedValueWarning" not in w for p in one.predictions
               for w in p["model_warnings"]), "guesses are reported once, in the log"
    if warned:
        assert f"the model warned about {len(warned)} of 3 candidates" in one.table()


# ----------------------------------------------------------------------------- command line

def invoke(*args):
    return CliRunner().invoke(main, ["tune", "gemm", *args], catch_exceptions=False)


@needs_pocl
def test_cli_tunes_on_pocl_and_writes_the_json(tmp_path):
    space = write(tmp_path, SMALL_SPACE)
    out = tmp_path / "r.json"
    res = invoke("--m", "64", "--n", "64", "--k", "64", "--space", str(space), "--top", "2",
                 "--device", "pocl", "--out", str(out), "--seed", "1")
    assert res.exit_code == 0, res.output
    assert "model's pick:" in res.output and f"results: {out}" in res.output
    data = json.loads(out.read_text())
    assert len(data["measurements"]) == 2 and data["meta"]["command"].startswith("tiletraffic")
    assert all(m["check"]["ok"] for m in data["measurements"])
    # a CPU under a GPU model completed from its OpenCL limits: said in the JSON and table
    assert data["meta"]["model_describes_device"] is False
    assert "the measured times, not the predicted ones, rank" in res.output
    res = invoke("--m", "64", "--n", "64", "--k", "64", "--space", str(space), "--top", "0",
                 "--out", str(out), "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["measurements"] == []
    assert "moved to" in res.stderr


@pytest.mark.parametrize("args, words", [
    (["--m", "0", "--n", "8", "--k", "8"], "Invalid value for '--m'"),
    (["--m", "8", "--n", "8"], "Missing option '--k'"),
    (["--m", "8", "--n", "8", "--k", "8", "--repeat", "3"], "Invalid value for '--repeat'"),
    (["--m", "50000", "--n", "50000", "--k", "8"], "M*N = 2500000000 exceeds the 32-bit"),
    (["--m", "8", "--n", "8", "--k", "8", "--space", "nope.toml"], "does not exist"),
    (["--m", "8", "--n", "8", "--k", "8", "--device-model", "nope"], "unknown device model"),
])
def test_cli_usage_errors_exit_2_with_one_clear_line(tmp_path, args, words):
    res = CliRunner().invoke(main, ["tune", "gemm", *args, "--top", "0",
                                    "--out", str(tmp_path / "x.json")])
    assert res.exit_code == 2 and words in res.output, res.output
    assert "Traceback" not in res.output


def test_cli_bad_space_and_empty_space_exit_2_naming_file_and_entry(tmp_path):
    bad = write(tmp_path, "[[family]]\nname = 'gemm-tiled'\n[family.parameters]\ntile = [8]\n"
                          "[[family.constraint]]\nrule = 'tile <= tk'\n")
    res = invoke("--m", "64", "--n", "64", "--k", "64", "--space", str(bad), "--top", "0",
                 "--out", str(tmp_path / "x.json"))
    assert res.exit_code == 2
    assert f"{bad}: family 1 (gemm-tiled), constraint 1: 'tile <= tk': unknown name 'tk'" in \
        " ".join(res.output.split())
    empty = write(tmp_path, "[[family]]\nname = 'gemm-tiled'\n[family.parameters]\n"
                            "tile = [8]\n[[family.constraint]]\nrule = 'tile > M'\n", "e.toml")
    res = invoke("--m", "64", "--n", "64", "--k", "64", "--space", str(empty), "--top", "0",
                 "--out", str(tmp_path / "x.json"))
    assert res.exit_code == 2 and "no valid candidate" in res.output
    assert "most often: tile > M (1); e.g. gemm-tiled tile=8: tile > M is false (M = 64, " \
           "tile = 8)" in " ".join(res.output.split())


def test_cli_without_a_device_exits_1_before_modelling(tmp_path, monkeypatch):
    from tiletraffic.gpu.devices import device as gpu_device

    def none(spec=None):
        raise gpu_device.DeviceError("no OpenCL device found (hand-made for the test)")

    monkeypatch.setattr(gpu_device, "select_device", none)
    monkeypatch.setattr(tuner, "_model_all", lambda *a: pytest.fail("modelled"))
    res = CliRunner().invoke(main, ["tune", "gemm", "--m", "64", "--n", "64", "--k", "64",
                                    "--out", str(tmp_path / "x.json")])
    assert res.exit_code == 1 and "error: no OpenCL device found" in res.output
    assert not (tmp_path / "x.json").exists(), "stopped before writing anything"


@needs_pocl
def test_model_here_measure_there_through_resume(tmp_path, monkeypatch):
    """Rank without a device (--top 0), then measure with --resume where the device is:
    the predictions are reused as long as the device model is the same."""
    space = write(tmp_path, SMALL_SPACE)
    out = tmp_path / "plan.json"
    plan = tt.tune(64, 64, 64, space=space, top=0, device_model="nvidia-h200", out=out)
    assert plan.data["meta"]["device"] is None and plan.measurements == []
    monkeypatch.setattr(tuner, "_predict", lambda *a: pytest.fail("modelled again"))
    done = tt.tune(64, 64, 64, space=space, top=2, device="pocl", device_model="nvidia-h200",
                   out=out, resume=True)
    assert [m["label"] for m in done.measurements] == [p["label"] for p in plan.predictions[:2]]
    assert all(m["status"] == "ok" and m["check"]["ok"] for m in done.measurements)



def test_cli_refuses_an_unwritable_out_file_before_modelling(tmp_path):
    from click.testing import CliRunner

    from tiletraffic.analysis.cli import main
    blocker = tmp_path / "file"
    blocker.write_text("x")
    res = CliRunner().invoke(main, ["tune", "gemm", "--m", "64", "--n", "64", "--k", "64",
                                    "--top", "0", "--out", str(blocker / "t.json")])
    assert res.exit_code == 2, res.output
    assert "cannot write --out" in res.output and "candidates" not in res.output


@needs_pocl
def test_each_candidate_is_checked_before_launch_once_for_all_its_rounds(
        tmp_path, checks_before_launch):
    # the check before launch depends on the schedule only; the second round reuses it
    res = tt.tune(64, 64, 64, device="pocl", space=write(tmp_path, SMALL_SPACE), top=3,
                  seed=4, out=tmp_path / "t.json")
    assert [len(m["rounds"]) for m in res.measurements] == [2, 2, 2]
    assert all(m["status"] == "ok" and m["check"]["ok"] for m in res.measurements)
    assert len(checks_before_launch) == 3


def test_an_expression_beyond_a_64_bit_integer_is_refused_not_computed():
    """Chained products grow without bound; each step is checked, so a runaway value is one
    line naming the limit (not minutes of arithmetic or a traceback)."""
    from tiletraffic.frontend.expressions import ExpressionError, parse

    product = parse("X * X * X", {"X"})
    assert product.evaluate({"X": 2**21}) == 2**63
    with pytest.raises(ExpressionError, match=r"beyond 2\^63.*X = 2097153"):
        product.evaluate({"X": 2**21 + 1})
    with pytest.raises(ExpressionError, match=r"beyond 2\^63"):
        parse("99999999999999999999 + 1", set()).evaluate({})


def test_min_and_max_of_one_argument_are_that_argument():
    from tiletraffic.frontend.expressions import parse

    assert parse("min(N)", {"N"}).evaluate({"N": 3}) == 3
    assert parse("max(N, 2, 7)", {"N"}).evaluate({"N": 3}) == 7


def test_no_valid_candidate_writes_and_moves_nothing_and_counts_the_reasons(tmp_path):
    space = write(tmp_path, "[[family]]\nname = 'gemm-tiled'\n[family.parameters]\n"
                            "tile = [8, 16, 32]\n[[family.constraint]]\nrule = 'tile > M'\n"
                            "[[family]]\nname = 'gemm-vectorized'\n[family.parameters]\n"
                            "tile = [8]\ntm = [4]\n")
    earlier = tmp_path / "runs" / "t.json"
    earlier.parent.mkdir()
    earlier.write_text('{"meta": {"created_utc": "2020-01-01T00:00:00Z"}}')
    for out in (earlier, tmp_path / "new" / "t.json"):
        res = invoke("--m", "64", "--n", "64", "--k", "66", "--space", str(space), "--top",
                     "0", "--out", str(out))
        assert res.exit_code == 2, res.output
        text = " ".join(res.output.split())
        assert "no valid candidate" in text and "all 4 rejected" in text
        assert "tile > M (3)" in text and "the builder refused: gemm-vectorized needs K " \
                                          "to be a multiple of 4" in text
        assert "(1)" in text
        assert len([ln for ln in res.output.splitlines() if ln.startswith("error:")]) == 1
    assert earlier.read_text() == '{"meta": {"created_utc": "2020-01-01T00:00:00Z"}}'
    assert not (earlier.parent / "history").exists(), "nothing archived"
    assert not (tmp_path / "new").exists(), "no folder created"


def test_a_refused_resume_names_what_differs_by_its_option(tmp_path):
    space = write(tmp_path, "[[family]]\nname = 'gemm-tiled'\n[family.parameters]\n"
                            "tile = [8]\n")
    other = write(tmp_path, "[[family]]\nname = 'gemm-tiled'\n[family.parameters]\n"
                            "tile = [8, 16]\n", "other.toml")
    out = tmp_path / "t.json"
    tt.tune(64, 64, 64, space=space, top=0, out=out)
    res = invoke("--m", "32", "--n", "64", "--k", "64", "--space", str(other), "--top", "0",
                 "--out", str(out), "--resume")
    assert res.exit_code == 2, res.output
    assert "holds another tuning (--m was 64, now 32; the space file (--space) differs)" in \
        " ".join(res.output.split())
    assert "sha256" not in res.output


@needs_pocl
@pytest.mark.parametrize("fails, words", [
    ("recheck", "error: no candidate left: all 3 valid candidates were rejected (3 failed to "
                "build on the device); first gemm-"),
    ("measure", "error: none of the 2 measured candidates ran (build: error: hand-made"),
])
def test_every_candidate_failing_its_build_is_a_failed_run_exit_1(tmp_path, monkeypatch,
                                                                  fails, words):
    """A build failure on the device is a failed run (exit 1, as ``run`` and ``tune
    LAUNCH.toml``), not bad input, and not a success."""
    from tiletraffic.analysis.tune import recheck as tuning_recheck
    from tiletraffic.gpu.runtime import checked_run as measure
    from tiletraffic.gpu.runtime.launch import KernelBuildError

    def refuse(*args, **kwargs):
        raise KernelBuildError("error: hand-made build failure", "log")

    monkeypatch.setattr(*((tuning_recheck, "compiled_resources") if fails == "recheck" else
                          (measure, "run_on_device")), refuse)
    out = tmp_path / "t.json"
    res = invoke("--m", "64", "--n", "64", "--k", "64", "--space",
                 str(write(tmp_path, SMALL_SPACE)), "--top", "2", "--device", "pocl",
                 "--rounds", "1", "--out", str(out), *(("--recheck", "0") if fails ==
                                                       "measure" else ()))
    assert res.exit_code == 1, res.output
    last = res.output.strip().splitlines()[-1]
    assert last.startswith(words) and "hand-made build failure" in last, last
    assert json.loads(out.read_text())["status"] == "complete", "the results are kept"


def test_a_tuning_with_a_result_is_no_failure_and_one_the_model_refused_whole_is():
    ok = {"predictions": [{"label": "a"}], "rejected": [],
          "measurements": [{"status": "failed"}, {"status": "ok"}]}
    assert tuning_stats.failure(ok) is None
    assert tuning_stats.failure({**ok, "measurements": []}) is None, "nothing measured"
    refused = {"predictions": [], "measurements": [], "rejected": [
        {"label": "a", "stage": "constraint", "reasons": ["tile > M"]},
        {"label": "b", "stage": "model", "reasons": ["LimitError: too much local memory"]}]}
    assert tuning_stats.failure(refused) == (
        "no candidate left: the one valid candidate was rejected (1 refused by the model); "
        "first b: LimitError: too much local memory")


def test_a_tune_result_shows_as_one_short_line_with_its_data_kept(tmp_path):
    out = tmp_path / "t.json"
    res = tt.tune(64, 64, 64, space=write(tmp_path, SMALL_SPACE), top=0, out=out)
    shown = repr(res)
    assert "\n" not in shown and len(shown) < 200, shown
    assert shown.startswith("<TuneResult gemm M=64 N=64 K=64: ")
    assert f"{res.summary['candidates']} candidates, {res.summary['valid']} valid" in shown
    assert f"pick {res.predictions[0]['label']}, 0 measured, file {out}>" in shown
    assert len(res.predictions) == res.summary["modelled"] and res.data["meta"]["m"] == 64


FOURTEEN_SPACE = """
operation = "gemm"
[[family]]
name = "gemm-tiled"
[family.parameters]
tile = [1, 2, 4, 8, 16]
[[family]]
name = "gemm-vectorized"
[family.parameters]
tile = [4, 8, 16]
wg_rows = [1, 2, 4]
"""
"""Fourteen valid candidates at M = N = K = 16 (about a second to model)."""


class _Clock:
    """A stand-in for ``time.monotonic`` that moves only when told to."""

    def __init__(self):
        self.now_s = 1000.0

    def __call__(self):
        return self.now_s


def test_modelling_writes_the_results_file_fewer_times_than_candidates(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(tuner, "monotonic", clock)
    writes = []
    tuning = type("Saving", (), {})()
    tuning.modelled_count = tuning.unsaved_count = 0
    tuning.saved_at = clock()

    def save():
        writes.append(tuning.modelled_count)
        tuning.unsaved_count, tuning.saved_at = 0, clock()

    tuning.save = save
    for _ in range(1000):
        tuner._Tuning.save_modelled(tuning)
    assert writes[:7] == [1, 2, 3, 4, 5, 6, 7], "the first candidates are each written"
    assert len(writes) < 60, "a logarithmic number of writes, not one per candidate"
    unwritten = [b - a for a, b in zip([0] + writes, writes)]
    assert all(gap <= 1 + done // 8 for gap, done in zip(unwritten, writes))
    # after SAVE_INTERVAL_S seconds the next finished candidate is written
    clock.now_s += tuner.SAVE_INTERVAL_S
    tuner._Tuning.save_modelled(tuning)
    assert writes[-1] == 1001


def test_an_error_after_the_modelling_writes_every_modelled_candidate(tmp_path, monkeypatch):
    from tiletraffic.analysis.tune import recheck as tuning_recheck

    monkeypatch.setattr(tuner, "monotonic", _Clock())
    out = tmp_path / "t.json"
    writes = []
    real_write = tuner.atomic_write_text

    def recording(path, text):
        real_write(path, text)
        writes.append(len(json.loads(text)["predictions"]))

    def failing_rank(doc):
        raise RuntimeError("hand-made failure after the modelling")

    monkeypatch.setattr(tuner, "atomic_write_text", recording)
    monkeypatch.setattr(tuning_recheck, "rank", failing_rank)
    with pytest.raises(RuntimeError, match="hand-made"):
        tt.tune(16, 16, 16, space=write(tmp_path, FOURTEEN_SPACE), top=0, out=out)
    assert len(writes) < 15, "not one write per modelled candidate"
    assert writes[-1] == 14 and len(json.loads(out.read_text())["predictions"]) == 14
