"""Work-group classes over runs of work-groups (simulator.engine.accelerators.class_safety,
class_proof): the forms a stencil or convolution writes at the borders of its NDRange (a
clamped halo, ``clamp`` / ``min`` / ``max`` of the index, a reflected index, a ``?:`` or
``select`` on the ids, a ``for`` loop with ``break``, an NDRange overhanging its data) are
proved per run of work-groups, and counting one work-group per class gives exactly the
counts of executing every work-group, over drawn sizes; what cannot be proved is refused."""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.nodes import (Accumulate, Const, DeclareFloat, DeclareInt, For,
                                            GlobalArray, If, Let, Param, Schedule, Var,
                                            global_id, group_id, int_select, local_id,
                                            minimum, store)
from tiletraffic.simulator.engine.accelerators import Accelerators, class_safety
from tiletraffic.simulator.engine.class_check import launch_proved_clean
from tiletraffic.simulator.engine.simulation import simulate
from tiletraffic.simulator.observers.memory import MemoryObserver

CORPUS = Path(__file__).parent / "corpora" / "opencl"


def maximum(a, b) -> S.IntExpr:
    """max(a, b) as the C front end writes it: -min(-a, -b)."""
    return Const(0) - minimum(Const(0) - a, Const(0) - b)


def clamp(x, lo, hi) -> S.IntExpr:
    """OpenCL C's integer clamp(x, lo, hi), as the C front end writes it."""
    return minimum(maximum(x, lo), hi)


def counts(schedule: Schedule, classes: bool):
    """(traffic counts, memory counts, representatives) counted by classes or by every
    work-group."""
    memory = MemoryObserver()
    res = simulate(schedule, compute_values=False, observers=[memory], hazards="report",
                   accelerators=Accelerators(work_group_classes=classes))
    return res.counts.to_dict(), memory.counts.to_dict(), res.representatives


def assert_classes_exact(schedule: Schedule) -> np.ndarray:
    """The classes are proved for ``schedule`` and give full execution's counts; the
    representatives."""
    assert class_safety.classes_problem(schedule) is None, class_safety.classes_problem(
        schedule)
    by_classes, full = counts(schedule, True), counts(schedule, False)
    assert by_classes[:2] == full[:2]
    return by_classes[2]


# ------------------------------------------------------------------ 1-d clamped halo
def conv1d(n: int, taps: int, local: int) -> Schedule:
    """gputools' convolve1d_buf: ``out[i] = sum_t h[t] * x[i + taps/2 - t]`` over the taps
    that stay inside ``x`` (``t`` from ``i + taps/2 >= N ? i + taps/2 + 1 - N : 0`` to
    ``i - taps/2 < 0 ? i + taps/2 + 1 : taps``), the NDRange rounded up to the work-group."""
    N, H = Param("N"), Param("H")
    x, h = GlobalArray("x", "in", ("N",)), GlobalArray("h", "in", ("H",))
    out = GlobalArray("out", "out", ("N",))
    i, half, t = Var("i"), H // 2, Var("t")
    body = S.block(
        Let("i", global_id(0)),
        Let("start", int_select(i + half >= N, i + half + 1 - N, 0)),
        Let("end", int_select(i - half < 0, i + half + 1, H)),
        DeclareFloat("acc"),
        For("t", Var("start"), Var("end"), Const(1),
            (Accumulate("acc", h[t] * x[i + half - t]),)),
        If(i < N, (store(out, (i,), S.Private("acc")),)))
    return Schedule(family="user-conv1d", kernel_name="conv1d", body=body,
                    params=(("N", n), ("H", taps)), arrays=(x, h, out), local_arrays=(),
                    local_size=(local,), global_size=(-(-n // local) * local,), tile=local)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 400), st.integers(0, 12).map(lambda k: 2 * k + 1),
       st.sampled_from([4, 8, 16, 32]))
def test_a_clamped_halo_1d_convolution_is_counted_exactly_by_classes(n, taps, local):
    sch = conv1d(n, taps, local)
    reps = assert_classes_exact(sch)
    if sch.work_groups >= 40:      # the interior shares a few classes
        assert len(reps) < sch.work_groups / 2


def test_a_halo_wider_than_a_work_group_gets_a_run_of_its_own_per_border_work_group():
    plan = class_safety.class_plan(conv1d(4096, 41, 8))   # 20 taps each side: 3 work-groups
    starts = plan.starts[0]
    assert starts[:4] == (0, 1, 2, 3) and starts[-3:] == (509, 510, 511)
    assert len(starts) <= 8


# ---------------------------------------------------------- 2-d, clamp / min / max
def conv2d(m: int, n: int, taps: int, local: tuple[int, int], mode: str) -> Schedule:
    """silx's convol_2D_XY: ``out[y, x] = sum w[jy, jx] * img[iy, ix]`` with ``ix`` = ``x - c
    + jx`` clamped to the image (``mode`` ``"clamp"``: OpenCL's clamp, ``"minmax"``:
    ``min(max(..., 0), N - 1)`` written out, ``"reflect"``: mirrored at the borders, an
    integer assigned again under a condition), the work-items outside the image returning
    first."""
    M, N, L = Param("M"), Param("N"), Param("L")
    img, w = GlobalArray("img", "in", ("M", "N")), GlobalArray("w", "in", ("L", "L"))
    out = GlobalArray("out", "out", ("M", "N"))
    gx, gy, c = global_id(0), global_id(1), L // 2

    def index(name, g, j, size):
        raw = g - c + j
        if mode == "clamp":
            return (Let(name, clamp(raw, 0, size - 1)),)
        if mode == "minmax":
            return (Let(name, minimum(Const(0) - minimum(Const(0) - raw, Const(0)), size - 1)),)
        v = Var(name)
        return (DeclareInt(name, raw),
                If(v < 0, (S.AssignInt(name, Const(0) - v - 1),)),
                If(v >= size, (S.AssignInt(name, size - (v - (size - 1))),)))

    jx, jy = Var("jx"), Var("jy")
    inner = For("jx", Const(0), L, Const(1), (
        *index("ix", gx, jx, N),
        Accumulate("acc", img[Var("iy"), Var("ix")] * w[jy, jx])))
    body = S.block(
        If(S.BoolOp("||", gx >= N, gy >= M), (S.Return(),)),
        DeclareFloat("acc"),
        For("jy", Const(0), L, Const(1), (*index("iy", gy, jy, M), inner)),
        store(out, (gy, gx), S.Private("acc")))
    lx, ly = local
    return Schedule(family="user-conv2d", kernel_name="conv2d", body=body,
                    params=(("M", m), ("N", n), ("L", taps)), arrays=(img, w, out),
                    local_arrays=(), local_size=(lx, ly),
                    global_size=(-(-n // lx) * lx, -(-m // ly) * ly), tile=lx)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 90), st.integers(1, 90), st.integers(1, 7),
       st.sampled_from([(8, 4), (4, 4), (16, 2)]), st.sampled_from(["clamp", "minmax",
                                                                   "reflect"]))
def test_a_clamped_2d_convolution_is_counted_exactly_by_classes(m, n, taps, local, mode):
    assume(mode != "reflect" or taps // 2 <= min(m, n))   # mirrored once at most
    assert_classes_exact(conv2d(m, n, taps, local, mode))


def test_the_clamp_is_the_index_itself_inside_the_ndrange():
    sch = conv2d(512, 512, 5, (8, 4), "clamp")
    plan = class_safety.class_plan(sch)
    assert plan.starts == ((0, 1, 63), (0, 1, 127))     # the first and last work-groups
    assert plan.periods == (4, 1)    # 8 columns = 32 bytes a step; a row of 4 x 2 KiB
    assert class_safety.translation_problem(sch) is None
    # the first, 4 residues and the last in dimension 0, times the first, interior and last
    assert len(assert_classes_exact(sch)) == 6 * 3


# -------------------------------------------------------------- selects on the ids
def shifted_sums(n: int, local: int, kind: str) -> Schedule:
    """gputools' add_sums2d: each work-group adds the sum of the blocks before it (none for
    the first) to its block, the NDRange overhanging the data by several work-groups:
    ``kind`` ``"select"`` reads it through a float select, ``"int-select"`` chooses the
    index with ``?:`` between values that move differently (0 in the first work-group)."""
    N = Param("N")
    x, sums = GlobalArray("x", "inout", ("N",)), GlobalArray("sums", "in", ("G",))
    g, i = group_id(0), global_id(0)
    if kind == "select":
        value = S.select(g > 0, sums[g - 1], S.FConst(0.0))
        body = (If(i < N, (Accumulate("x_i", value),)),)
    else:
        index = int_select(g < 1, Const(0), i // Const(local) - 1)
        body = (If(i < N, (Accumulate("x_i", sums[index]),)),)
    groups = -(-n // local) + 7           # seven work-groups past the data
    body = S.block(DeclareFloat("x_i"), *body,
                   If(i < N, (store(x, (i,), S.Private("x_i") + x[i]),)))
    return Schedule(family="user-sums", kernel_name="sums", body=body,
                    params=(("N", n), ("G", groups)), arrays=(x, sums), local_arrays=(),
                    local_size=(local,), global_size=(groups * local,), tile=local)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 600), st.sampled_from([4, 8, 16]), st.sampled_from(["select",
                                                                         "int-select"]))
def test_a_select_on_the_work_group_id_is_counted_exactly_by_classes(n, local, kind):
    assert_classes_exact(shifted_sums(n, local, kind))


def test_an_overhanging_ndrange_is_cut_where_its_guard_changes():
    sch = shifted_sums(1000, 8, "select")            # the data ends with work-group 124
    plan = class_safety.class_plan(sch)
    assert plan.starts == ((0, 1, 125, 131),)        # 125..130: no work-item in the data
    # sums[g - 1] moves 4 bytes a work-group (period 32): the first work-group, 32 classes
    # in 1..124, each of the 6 past the data (fewer than a period), the last
    assert len(assert_classes_exact(sch)) == 1 + 32 + 6 + 1


# ------------------------------------------------------------ loops with break
def rows_with_break(m: int, k: int, rows_per_group: int = 4) -> Schedule:
    """llama.cpp's kernel_mul_mat_f32_f32: each work-group sums ``rows_per_group`` rows of
    ``A`` (``for (row = 0; row < 4; ++row) { r = g * 4 + row; if (r >= M) break; ... }``)."""
    M, K = Param("M"), Param("K")
    A, y = GlobalArray("A", "in", ("M", "K")), GlobalArray("y", "out", ("M",))
    row, r, j = Var("row"), Var("r"), Var("j")
    loop = S.While(row < rows_per_group, (
        Let("r", group_id(0) * rows_per_group + row),
        If(r >= M, (S.Break(),)),
        DeclareFloat("acc"),
        For("j", local_id(0), K, Const(8), (Accumulate("acc", A[r, j]),)),
        If(local_id(0).eq(0), (store(y, (r,), S.Private("acc")),))),
        (S.AssignInt("row", row + 1),))
    body = S.block(DeclareInt("row", Const(0)), loop)
    groups = -(-m // rows_per_group)
    return Schedule(family="user-rows", kernel_name="rows", body=body,
                    params=(("M", m), ("K", k)), arrays=(A, y), local_arrays=(),
                    local_size=(8,), global_size=(groups * 8,), tile=8)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 200), st.integers(1, 40))
def test_a_for_loop_with_break_is_counted_exactly_by_classes(m, k):
    assert_classes_exact(rows_with_break(m, k))


def test_a_while_loop_longer_than_the_proof_unrolls_is_refused():
    sch = rows_with_break(700, 16, rows_per_group=100)
    problem = class_safety.classes_problem(sch)
    assert "runs more than 64 iterations" in problem
    assert counts(sch, True)[2] is None             # every work-group ran


# ---------------------------------------------------- what stays refused, the check
def test_a_condition_changing_at_every_work_group_is_refused():
    sch = conv1d(4096, 3, 8)
    cond = group_id(0) < local_id(0) * 9               # changes at 63 work-groups
    sch = Schedule(**{**sch.__dict__, "body": sch.body + (
        If(cond, (store(sch.array("out"), (global_id(0) * 0,), S.FConst(1.0)),)),)})
    problem = class_safety.classes_problem(sch)
    assert problem.endswith("differs between work-groups (at more than 24 runs of "
                            "work-groups of NDRange dimension 0)")


def test_the_check_finds_an_out_of_bounds_store_in_the_last_member_of_an_interior_run():
    # work-groups 0..19 store y[gid]: only work-group 19 passes the end of y (156)
    y = GlobalArray("y", "out", ("Y",))
    body = (If(group_id(0) < 20, (store(y, (global_id(0),), S.FConst(1.0)),)),)
    sch = Schedule(family="user-shift", kernel_name="shift", body=body,
                   params=(("Y", 156),), arrays=(y,), local_arrays=(), local_size=(8,),
                   global_size=(8 * 40,), tile=8)
    plan = class_safety.class_plan(sch)
    assert plan.starts == ((0, 1, 20, 39),)
    assert not launch_proved_clean(sch)
    fixed = Schedule(**{**sch.__dict__, "params": (("Y", 160),)})
    assert launch_proved_clean(fixed)


# ------------------------------------------------------------ corpus kernels
@pytest.mark.parametrize("kernel, sizes", [
    ("gputools/convolve2d_buf", {"X": 72, "Y": 44}),          # clamped halo, 2-d
    ("silx/convol_2D_XY", {"X": 100, "Y": 60, "Z": 2}),        # clamp(), 3-d NDRange
    ("llama_cpp/kernel_mul_mat_f32_f32", {"ne00": 96, "ne01": 80, "ne11": 3}),  # break
])
def test_corpus_kernels_are_counted_exactly_by_classes(kernel, sizes):
    from tiletraffic.frontend import launch_file

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sch = launch_file.load(CORPUS / f"{kernel}.toml", sizes)
    reps = assert_classes_exact(sch)
    assert len(reps) < sch.work_groups
