"""Tests of hazard detection (simulator.observers.hazards, simulator.observers.local_races, the engine's
out-of-bounds, barrier-divergence and private-variable checks).

The first cases are the field's real bug reports, each checked for exactly what it must
report (kind, work-group, work-items, barrier interval, count). Then properties: no correct
schedule reports anything at any drawn shape, and every broken variant reports every kind
it is known for at every drawn shape where the fault must show. Last, races that lock-step
execution hides from the result: the result comes out right and the race is still reported.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.engine.simulation import simulate
from tiletraffic.simulator.observers.hazards import HAZARD_KINDS, HazardError, HazardLog
from tiletraffic.simulator.engine.reference import error_over_tolerance
from tiletraffic.simulator.engine.reference import reference
from tiletraffic.simulator.ir.nodes import (Accumulate, Assign, Barrier, Const, DeclareFloat,
                                            GlobalArray, If, Let, LocalArray, Private,
                                            Schedule, block, global_id, group_id, local_id,
                                            store)
from tiletraffic.simulator.kernels.families import build
from tiletraffic.simulator.kernels.variants import (VARIANTS, build_any, column_staging_demo,
                                                    rewrite, shift_demo_fixed, shift_race_demo)
from strategies import (CLEAN_SHAPE_VARIANTS, correct_demo_schedules, random_inputs,
                        schedules, seeds, variant_clean_shapes, variant_fault_shapes)


def run_report(schedule: Schedule, seed: int | None = None, **kw):
    """Simulate in "report" mode on fresh random inputs; returns (result, inputs)."""
    inputs = random_inputs(schedule, np.random.default_rng(seed))
    return simulate(schedule, inputs, hazards="report", **kw), inputs


def of_kind(hazards, kind: str, array: str | None = None) -> list:
    return [h for h in hazards if h.kind == kind and (array is None or h.array == array)]


MORE_EXAMPLES = max(100, settings.default.max_examples)
"""Hazard checks on small shapes are fast: the central properties get more examples."""


def direction(h) -> str:
    """``load`` or ``store`` from an out-of-bounds hazard's sentence."""
    return "store" if " store of " in h.detail else "load"


# ------------------------------------------------------------------- real bug reports
def test_shift_race_is_reported_with_the_racing_pair():
    """64 work-items store into local word t; items 32..63 read word t-32, no barrier."""
    result, _ = run_report(shift_race_demo())
    races = of_kind(result.hazards, "data-race")
    assert len(races) == 1, f"one merged data-race expected; got {result.hazards}"
    assert {h.kind for h in result.hazards} == {"data-race"}
    for h in races:
        assert h.array == "words" and h.group_id == (0,) and h.epoch == 0
        writer, reader = h.local_ids
        assert reader >= 32 and writer == reader - 32, h.local_ids
        assert h.index == writer, "the racing word is the one the writer stored"
        assert "read-after-write" in h.detail
    assert sum(h.count for h in races) == 32, "each of the 32 readers races once"


def test_shift_race_raises_in_default_mode():
    sch = shift_race_demo()
    with pytest.raises(HazardError) as info:
        simulate(sch, random_inputs(sch, np.random.default_rng()))
    assert info.value.hazard.kind == "data-race"
    assert "read-after-write" in str(info.value)


@pytest.mark.parametrize("items", [33, 64, 100])
def test_shift_demo_with_barrier_is_clean_and_right(items):
    sch = shift_demo_fixed(items, 1, None, items)
    result, inputs = run_report(sch)
    assert result.hazards == []
    x = inputs["x"]
    expected = np.where(np.arange(items) >= 32, np.roll(x, 32), x)
    np.testing.assert_array_equal(result.outputs["y"], expected)
    simulate(sch, inputs)  # and raise mode does not raise


def test_early_return_diverges_at_the_first_barrier_with_arrival_counts():
    sch = VARIANTS["gemm-tiled:early-return"].make(20, 20, 20, 16)
    result, _ = run_report(sch)
    divergence = of_kind(result.hazards, "barrier-divergence")
    assert sorted(h.site for h in divergence) == ["barrier 1", "barrier 2"], "one per barrier"
    for h in divergence:
        # K = 20, B = 16: two K-tiles, so each barrier executes twice; per execution 64, 64
        # and 16 of the 256 work-items of the three edge work-groups arrive
        assert h.occurrences == 2 and h.work_groups == 3 and h.count == 2 * (64 + 64 + 16)
        assert h.group_counts == (((1, 0), 128), ((0, 1), 128), ((1, 1), 32)), "linear order"
        assert h.group_id == (1, 0)
        # the work-items named are ones that did not arrive (they returned early)
        for li in h.local_ids:
            col = h.group_id[0] * 16 + li % 16
            row = h.group_id[1] * 16 + li // 16
            assert row >= 20 or col >= 20, (h.group_id, li)


def test_early_return_raises_in_default_mode():
    sch = VARIANTS["gemm-tiled:early-return"].make(20, 20, 20, 16)
    with pytest.raises(HazardError) as info:
        simulate(sch, random_inputs(sch, np.random.default_rng()))
    assert info.value.hazard.kind == "barrier-divergence"


def test_column_staging_without_end_barrier_races_write_after_read():
    sch = column_staging_demo(8, 8, 8, 4, end_barrier=False)
    result, _ = run_report(sch)
    (h,) = of_kind(result.hazards, "data-race", "b_column")
    assert {h.kind for h in result.hazards} == {"data-race"}
    # the next column's store (interval j) meets this column's loads (interval j, after the
    # barrier that separated this column's own store from its loads): columns 1..7, each
    # stored in 2 iterations of the staging loop (K = 8, 4 work-items): 14 executions merged
    assert h.site.startswith("write-after-read")
    assert h.epoch == 1 and h.occurrences == 14
    # every store of columns 1..7 races: 8 words per column in each of the 2 work-groups
    assert h.group_counts == (((0,), 56), ((1,), 56)) and h.count == 112


def test_column_staging_with_end_barrier_is_clean_and_right():
    sch = column_staging_demo(8, 8, 8, 4)
    result, inputs = run_report(sch)
    assert result.hazards == []
    assert error_over_tolerance(result.outputs["C"], reference(sch, inputs)) <= 1


def test_unguarded_copy_reports_out_of_bounds_and_race_with_counts():
    sch = VARIANTS["matvec-local-whole:unguarded-copy"].make(128, 8, None, 128)
    result, _ = run_report(sch)
    oob_x = of_kind(result.hazards, "out-of-bounds", "x")
    oob_local = of_kind(result.hazards, "out-of-bounds", "x_local")
    assert [direction(h) for h in oob_x] == ["load"]
    assert [direction(h) for h in oob_local] == ["store"]
    assert oob_x[0].count == 128 - 8 and oob_local[0].count == 128 - 8
    assert oob_x[0].index == 8 and oob_x[0].local_ids == (8,), "first offender: work-item 8"
    races = of_kind(result.hazards, "data-race", "x_local")
    assert len(races) == 1 and races[0].site.startswith("read-after-write")
    # every one of the 128 rows reads the 8 words; only its own word (rows 0..7) is safe
    assert races[0].count == 128 * 8 - 8


def test_unguarded_copy_counts_per_work_group_not_summed_under_the_first():
    """Issue #15 case 4: M = 1024, K = 8, work-group 128: the 960 out-of-bounds accesses are
    120 in each of 8 work-groups, not 960 under work-group (0,)."""
    sch = VARIANTS["matvec-local-whole:unguarded-copy"].make(1024, 8, None, 128)
    result, _ = run_report(sch)
    for array in ("x", "x_local"):
        (h,) = of_kind(result.hazards, "out-of-bounds", array)
        assert h.count == 960 and h.work_groups == 8 and h.occurrences == 1
        assert h.group_counts == (((0,), 120), ((1,), 120), ((2,), 120))
    (race,) = of_kind(result.hazards, "data-race", "x_local")
    assert race.count == 8 * (128 * 8 - 8) and race.work_groups == 8
    assert race.group_counts == (((0,), 1016), ((1,), 1016), ((2,), 1016))
    keys = [(h.kind, h.array, h.site) for h in result.hazards]
    assert len(keys) == len(set(keys)) == 3


def test_floor_grid_leaves_144_outputs_unwritten():
    sch = VARIANTS["gemm-tiled:floor-grid"].make(20, 20, 20, 16)
    assert sch.global_size == (16, 16)
    result, inputs = run_report(sch)
    (h,) = result.hazards
    assert h.kind == "unwritten-output" and h.array == "C" and h.count == 144 == 400 - 256
    assert "144 of 400" in h.detail
    c = result.outputs["C"]
    assert np.isnan(c[16:, :]).all() and np.isnan(c[:, 16:]).all()
    ref = reference(sch, inputs)
    sub = dataclasses.replace(ref, value=ref.value[:16, :16],
                              abs_product=ref.abs_product[:16, :16])
    assert error_over_tolerance(c[:16, :16], sub) <= 1, "the launched tiles are still right"


def test_no_guards_reads_a_and_b_and_writes_c_out_of_bounds():
    sch = VARIANTS["gemm-tiled:no-guards"].make(20, 20, 20, 16)
    assert sch.global_size == (32, 32), "rounded-up grid"
    result, _ = run_report(sch)
    oob = of_kind(result.hazards, "out-of-bounds")
    assert {h.kind for h in result.hazards} == {"out-of-bounds"}
    assert {(h.array, direction(h)) for h in oob} == {("A", "load"), ("B", "load"),
                                                      ("C", "store")}
    for h in oob:
        assert h.count > 0 and "outside dimension" in h.detail


@settings(max_examples=5)
@given(seed=seeds)
def test_correct_gemm_tiled_at_the_same_shape_equals_numpy(seed):
    sch = build("gemm-tiled", 20, 20, 20, 16)
    result, inputs = run_report(sch, seed)
    assert result.hazards == []
    ref = reference(sch, inputs)
    assert not np.allclose(ref.value, ref.value.flat[0]), "inputs must not be constant"
    assert error_over_tolerance(result.outputs["C"], ref) <= 1


# ------------------------------------------------------- uninitialized private reads
def _accumulate_demo(items: int, init: float | None, assign_below: int | None = None):
    """y[i] = (acc += x[i]) with ``float acc = init`` (``None``: uninitialized); with
    ``assign_below``, work-items i < assign_below first assign ``acc = 0``."""
    x, y = GlobalArray("x", "in", ("M",)), GlobalArray("y", "out", ("M",))
    i = Let("i", global_id(0))
    assign = [] if assign_below is None else [
        If(i.var < assign_below, (Assign("acc", S.FConst(0.0)),))]
    body = block(i, DeclareFloat("acc", init=init), assign, Accumulate("acc", x[i.var]),
                 store(y, i.var, Private("acc")))
    return Schedule("uninit-demo", "uninit_demo", (("M", items),), (x, y), (), (items,),
                    (items,), body, items)


def test_accumulate_into_uninitialized_private_is_reported():
    result, _ = run_report(_accumulate_demo(8, init=None))
    (h,) = result.hazards
    assert h.kind == "uninitialized-private-read" and h.array == "acc"
    assert h.count == 8 and h.local_ids == (0,)


def test_partly_assigned_private_reports_only_the_unassigned_work_items():
    result, _ = run_report(_accumulate_demo(8, init=None, assign_below=5))
    (h,) = result.hazards
    assert h.kind == "uninitialized-private-read" and h.count == 3 and h.local_ids == (5,)


@pytest.mark.parametrize("init, assign_below", [(0.0, None), (None, 8)])
def test_initialized_or_assigned_private_is_clean(init, assign_below):
    result, inputs = run_report(_accumulate_demo(8, init=init, assign_below=assign_below))
    assert result.hazards == []
    np.testing.assert_array_equal(result.outputs["y"], inputs["x"])


def test_gemm_naive_with_uninitialized_accumulator_is_reported():
    sch = build("gemm-naive", 5, 6, 7, 4)
    body = rewrite(sch.body, lambda s: (DeclareFloat(s.name, init=None),)
                   if isinstance(s, DeclareFloat) else None)
    broken = dataclasses.replace(sch, body=body)
    result, _ = run_report(broken)
    (h,) = result.hazards
    assert h.kind == "uninitialized-private-read" and h.array == "acc"
    # each of the 5 x 7 work-items (in 4 work-groups of 4 x 4) reads an undefined value
    # in all K = 6 accumulations (they run as one vectorized block)
    assert h.count == 5 * 7 * 6 and h.work_groups == 4 and h.occurrences == 1
    with pytest.raises(HazardError, match="uninitialized-private-read"):
        simulate(broken, random_inputs(broken, np.random.default_rng()))


def test_nan_from_an_uninitialized_accumulator_is_labelled_by_its_cause():
    """Issue #15 case 5: the NaN output of an uninitialized accumulator is written (from an
    undefined value), not unwritten; the floor-grid's missing tiles are unwritten."""
    from tiletraffic.gpu.runtime.launch import check_result

    sch = build("gemm-naive", 5, 6, 7, 4)
    broken = dataclasses.replace(sch, body=rewrite(
        sch.body, lambda s: (DeclareFloat(s.name, init=None),)
        if isinstance(s, DeclareFloat) else None))
    result, inputs = run_report(broken)
    assert [h.kind for h in result.hazards] == ["uninitialized-private-read"]
    ref = reference(broken, inputs)
    check = check_result(result.outputs["C"], ref.value, ref.k, ref.abs_product)
    assert check.written_nonfinite_count == 5 * 7 and check.unwritten_count == 0

    floor = VARIANTS["gemm-tiled:floor-grid"].make(20, 20, 20, 16)
    result, inputs = run_report(floor)
    assert [h.kind for h in result.hazards] == ["unwritten-output"]
    ref = reference(floor, inputs)
    check = check_result(result.outputs["C"], ref.value, ref.k, ref.abs_product)
    assert check.unwritten_count == 144 and check.written_nonfinite_count == 0


def test_hazard_log_refuses_an_unknown_mode():
    with pytest.raises(ValueError, match="'raise' or 'report'"):
        HazardLog("ignore")


# ------------------------------------------------------------------------- properties
@settings(max_examples=MORE_EXAMPLES)
@given(schedule=schedules(), seed=seeds)
def test_correct_families_report_no_hazard(schedule, seed):
    result, _ = run_report(schedule, seed)
    assert result.hazards == [], [h.detail for h in result.hazards[:3]]


@given(schedule=correct_demo_schedules(), seed=seeds)
def test_correct_demos_report_no_hazard(schedule, seed):
    result, _ = run_report(schedule, seed)
    assert result.hazards == [], [h.detail for h in result.hazards[:3]]


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_every_variant_reports_its_expected_kinds_at_its_example_shape(name):
    variant = VARIANTS[name]
    assert set(variant.expected) <= set(HAZARD_KINDS)
    result, _ = run_report(build_any(name))
    found = {h.kind for h in result.hazards}
    if variant.run_only:  # correct in any one launch
        assert variant.expected == () and result.hazards == []
        return
    assert {h.schedule for h in result.hazards} == {name}, "hazards name the variant"
    assert set(variant.expected) <= found, f"{name}: expected {variant.expected}, found {found}"
    keys = [(h.kind, h.array, h.site) for h in result.hazards]
    assert len(keys) == len(set(keys)), f"{name}: repeated entries {keys}"
    for h in result.hazards:
        named = sum(c for _, c in h.group_counts)
        assert len(h.group_counts) == min(h.work_groups, 3) and named <= h.count
        assert (named == h.count) == (h.work_groups <= 3) or not h.group_counts


@pytest.mark.parametrize("name", sorted(VARIANTS))
@settings(max_examples=max(50, settings.default.max_examples))
@given(data=st.data(), seed=seeds)
def test_every_variant_reports_its_expected_kinds_where_the_fault_must_show(name, data, seed):
    variant = VARIANTS[name]
    m, k, n, tile = data.draw(variant_fault_shapes(name), label="m, k, n, tile")
    sch = variant.make(m, k, n, tile)
    result, _ = run_report(sch, seed, limits=None)
    found = {h.kind for h in result.hazards}
    assert set(variant.expected) <= found, (f"{name} at {(m, k, n, tile)}: expected "
                                            f"{variant.expected}, found {found}")
    if "unwritten-output" in variant.expected:
        (h,) = of_kind(result.hazards, "unwritten-output")
        assert h.count == m * n - (m // tile * tile) * (n // tile * tile)


@pytest.mark.parametrize("name", CLEAN_SHAPE_VARIANTS)
@given(data=st.data(), seed=seeds)
def test_shape_dependent_variants_are_clean_where_the_fault_cannot_show(name, data, seed):
    m, k, n, tile = data.draw(variant_clean_shapes(name), label="m, k, n, tile")
    sch = VARIANTS[name].make(m, k, n, tile)
    result, inputs = run_report(sch, seed, limits=None)
    assert result.hazards == [], [h.detail for h in result.hazards[:3]]
    ref = reference(sch, inputs)
    assert error_over_tolerance(result.outputs[ref.output], ref) <= 1


# ----------------------------------------------------- races that lock-step hides
def test_shift_race_output_is_the_sequential_one_and_the_race_is_still_reported():
    sch = shift_race_demo()
    result, inputs = run_report(sch)
    x = inputs["x"]
    assert len(np.unique(x)) == x.size, "distinct inputs, so a wrong word would show"
    sequential = np.concatenate([x[:32], x[:32]])  # y[t] = x[t-32] for t >= 32, else x[t]
    np.testing.assert_array_equal(result.outputs["y"], sequential)
    assert of_kind(result.hazards, "data-race"), "the race is invisible in the result"


@pytest.mark.parametrize("name", ["gemm-tiled:no-first-barrier",
                                  "gemm-tiled:no-second-barrier"])
@given(seed=seeds)
@settings(max_examples=10)
def test_missing_barrier_gives_the_right_product_and_is_still_reported(name, seed):
    variant = VARIANTS[name]
    sch = variant.make(*variant.example)
    result, inputs = run_report(sch, seed)
    assert error_over_tolerance(result.outputs["C"], reference(sch, inputs)) <= 1
    assert of_kind(result.hazards, "data-race")


# -------------------------------------------------------------- found bugs (xfail)
def _group_uniform_barrier_demo() -> Schedule:
    """Two work-groups of two work-items; each stores its x into local word t, then only
    work-group 0 passes a barrier (a condition uniform over the work-group: legal), and
    every work-item reads the word of its neighbour. Work-group 1 races."""
    x, y = GlobalArray("x", "in", ("M",)), GlobalArray("y", "out", ("M",))
    words = LocalArray("w", (Const(2, "WG_SIZE"),))
    t, i = Let("t", local_id(0)), Let("i", global_id(0))
    body = block(t, i, store(words, t.var, x[i.var]),
                 If(group_id(0).eq(0), (Barrier(),)),
                 store(y, i.var, words[1 - t.var]))
    return Schedule("demo-uniform-barrier", "uniform_barrier", (("M", 4),), (x, y), (words,),
                    (2,), (4,), body, 2)


def test_race_in_a_work_group_alone_in_its_batch_is_found():
    """Control for the xfail below: executed one work-group per batch, the race is found."""
    result, _ = run_report(_group_uniform_barrier_demo(), batch_work_items=2)
    assert [(h.kind, h.group_id) for h in result.hazards] == [("data-race", (1,))]


def test_race_is_found_whatever_the_batch_of_work_groups():
    result, _ = run_report(_group_uniform_barrier_demo())
    assert ("data-race", (1,)) in [(h.kind, h.group_id) for h in result.hazards]


@pytest.mark.parametrize("name", ["gemm-tiled:no-second-barrier",
                                  "gemm-tiled:no-first-barrier",
                                  "matvec-local-whole:unguarded-copy"])
def test_local_hazards_are_the_same_whatever_the_batch_of_work_groups(name):
    # a batch of many work-groups keeps one table for every work-group while the local
    # accesses are the same in all of them; one work-group per batch keeps its own
    sch = build_any(name, *{"matvec-local-whole:unguarded-copy": (100, 200, None, 64)}.get(
        name, (48, 40, 48, 16)), None)
    together = simulate(sch, compute_values=False, hazards="report")
    alone = simulate(sch, compute_values=False, hazards="report",
                     batch_work_items=sch.work_group_items)
    assert together.hazards, name

    def found(hazards):   # all but how many times the statement ran (once per batch)
        return [({k: v for k, v in h.to_dict().items() if k not in ("detail", "occurrences")},
                 h.detail.split(", over ")[0]) for h in hazards]

    assert found(together.hazards) == found(alone.hazards)
