"""Integers assigned any number of times (``DeclareInt``, ``AssignInt``) and general loops
(``While`` with its update and ``do``/``while`` form, ``Break``, ``Continue``): the engine
executes them per work-item under its masks, equal to a numpy reference; the code generator
renders them into OpenCL C that runs on PoCL equal to numpy and that Oclgrind counts as the
simulator does; the accelerators refuse what they cannot prove; and the OpenCL C front end
translates the C that needs them (``int k; for (k = 0; ...)``, ``do { } while``, two loop
variables, an integer reassigned after a barrier), each kernel simulated, counted by Oclgrind
and run on PoCL.
"""
from __future__ import annotations

import numpy as np
import pytest

import tiletraffic as tt
from tiletraffic.frontend.opencl.translate import FrontendError
from tiletraffic.gpu.codegen.generate import generate
from tiletraffic.simulator.engine import control
from tiletraffic.simulator.engine.accelerators import Accelerators, class_safety
from tiletraffic.simulator.engine.accelerators import loop_blocks, private_nest
from tiletraffic.simulator.engine.simulation import simulate
from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.static import ExecutionError
from tiletraffic.simulator.ir.visitor import walk_statements
from tiletraffic.simulator.ir.wellformed import MalformedScheduleError, check_well_formed

SHARED_KEYS = ("global_load_elems", "global_store_elems", "local_load_elems",
               "local_store_elems", "barriers")


def oclgrind_available() -> bool:
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available as available
    return available()


needs_oclgrind = pytest.mark.skipif(not oclgrind_available(), reason="no Oclgrind platform")


# ---------------------------------------------------------------- IR built in Python
def skipping_sums(m: int, k: int, local: int = 4) -> S.Schedule:
    """``y[i]``: a sum of ``A[i, k]`` over ``k = i % 3, i % 3 + 2, ...`` below K, skipping
    ``k % 5 == 4`` (``continue``), at most 6 terms (``break``), then ``A[i, 0] + A[i, 1]``
    added by a ``do``/``while`` loop."""
    A, y = S.GlobalArray("A", "in", ("M", "K")), S.GlobalArray("y", "out", ("M",))
    i, kv, n, t = S.global_id(0), S.Var("k"), S.Var("n"), S.Var("t")
    body = S.block(
        S.DeclareFloat("acc", 0.0),
        S.DeclareInt("k"),
        S.AssignInt("k", i % 3),
        S.DeclareInt("n", S.Const(0)),
        S.While(kv < S.Param("K"), (
            S.If((kv % 5).eq(4), (S.Continue(),)),
            S.Accumulate("acc", A[i, kv]),
            S.AssignInt("n", n + 1),
            S.If(n >= 6, (S.Break(),)),
        ), (S.AssignInt("k", kv + 2),)),
        S.DeclareInt("t", S.Const(0)),
        S.While(t < 2, (S.Accumulate("acc", A[i, t]), S.AssignInt("t", t + 1)),
                do_while=True),
        S.store(y, (i,), S.Private("acc")))
    return S.Schedule("demo-skipping-sums", "skipping_sums", (("M", m), ("K", k)), (A, y),
                      (), (local,), (m,), body, tile=local)


def skipping_sums_reference(a: np.ndarray) -> np.ndarray:
    out = np.zeros(a.shape[0])
    for r in range(a.shape[0]):
        acc, k, n = 0.0, r % 3, 0
        while k < a.shape[1]:
            if k % 5 != 4:
                acc += a[r, k]
                n += 1
                if n >= 6:
                    break
            k += 2
        out[r] = acc + a[r, 0] + a[r, 1]
    return out


def test_while_break_continue_and_do_while_compute_as_numpy():
    sch = skipping_sums(20, 23)
    check_well_formed(sch)
    a = np.random.default_rng(1).standard_normal((20, 23)).astype(np.float32)
    result = simulate(sch, {"A": a})
    np.testing.assert_allclose(result.outputs["y"], skipping_sums_reference(a.astype(float)),
                               rtol=1e-5, atol=1e-5)
    loads = sum(min(6, len([k for k in range(r % 3, 23, 2) if k % 5 != 4])) + 2
                for r in range(20))
    assert result.counts.global_load_elems == loads
    assert result.counts.flop == loads


def test_rendered_while_loops_are_c_loops():
    source = generate(skipping_sums(8, 9)).source
    assert "for (; k < K; k = k + 2) {" in source
    assert "continue;" in source and "break;" in source
    assert "do {" in source and "} while (t < 2);" in source
    assert "    int k;" in source and "int n = 0;" in source


@needs_oclgrind
def test_rendered_while_loops_counted_by_oclgrind_as_simulated():
    from tiletraffic.gpu.oclgrind import oclgrind as og
    sch = skipping_sums(20, 23)
    sim = simulate(sch, compute_values=False).counts.to_dict()
    measured = og.oclgrind_counts(sch, timeout_s=120).to_dict()
    assert {k: measured[k] for k in SHARED_KEYS} == {k: sim[k] for k in SHARED_KEYS}


def test_rendered_while_loops_run_on_pocl_equal_to_numpy(pocl):
    sch = skipping_sums(20, 23)
    result = tt.run(sch, pocl, repeat=10, warmup=1, seed=3,
                    reference=lambda inputs: skipping_sums_reference(inputs["A"]))
    assert result.check.ok


def _one_group(body, local=4) -> S.Schedule:
    y = S.GlobalArray("y", "out", ("M",))
    return S.Schedule("demo-ints", "demo_ints", (("M", local),), (y,), (), (local,), (local,),
                      S.block(body, S.store(y, (S.global_id(0),), 1.0)), tile=local)


def test_an_assignment_changes_only_the_work_items_that_execute_it():
    i = S.local_id(0)
    y = S.GlobalArray("y", "out", ("M",))
    body = (S.DeclareInt("x", S.Const(0)),
            S.If(i < 2, (S.AssignInt("x", i + 10),)),
            S.store(y, (S.Var("x") % 4,), 1.0))
    sch = S.Schedule("demo-ints", "demo_ints", (("M", 4),), (y,), (), (4,), (4,), body,
                     tile=4)
    result = simulate(sch, hazards="report", race_checks=False)
    # work-items 0, 1 store into y[10 % 4], y[11 % 4]; 2 and 3 into y[0]
    assert result.outputs["y"][[0, 2, 3]].tolist() == [1.0, 1.0, 1.0]
    assert np.isnan(result.outputs["y"][1])


def test_an_integer_read_before_its_value_is_an_uninitialized_read():
    i = S.local_id(0)
    y = S.GlobalArray("y", "out", ("M",))
    body = (S.DeclareInt("x"), S.If(i < 3, (S.AssignInt("x", i),)),
            S.store(y, (S.Var("x"),), 1.0))
    sch = S.Schedule("demo-ints", "demo_ints", (("M", 4),), (y,), (), (4,), (4,), body,
                     tile=4)
    hazards = simulate(sch, hazards="report", race_checks=False).hazards
    assert [(h.kind, h.array, h.local_ids, h.count) for h in hazards] == [
        ("uninitialized-private-read", "x", (3,), 1)]
    assert "reads integer x, which it never assigned" in hazards[0].detail


def test_a_loop_that_does_not_end_is_refused_at_the_limit(monkeypatch):
    monkeypatch.setattr(control, "LOOP_TRIPS_LIMIT", 50)
    body = (S.DeclareInt("k", S.Const(0)),
            S.While(S.Var("k") >= 0, (S.AssignInt("k", S.Var("k") + 1),), source="k.cl:3:5"))
    with pytest.raises(ExecutionError, match=r"k\.cl:3:5: a while loop on k >= 0 runs "
                                             r"more than 50 iterations"):
        simulate(_one_group(body), compute_values=False)


NEVER_ENDS = """
__kernel void h3(__global const float *x, __global float *y) {
    int i = get_global_id(0);
    float s = 0.0f;
    int j = 0;
    while (1) {
        s += x[i];
        j++;
        if (j == -5) break;
    }
    y[i] = s;
}
"""


def _never_ends(n: int = 64) -> S.Schedule:
    args = {"x": {"shape": [n], "access": "in"}, "y": {"shape": [n], "access": "out"}}
    return tt.from_opencl(NEVER_ENDS, "h3", [n], [n], args)


def test_a_loop_whose_integers_change_but_never_ends_is_refused_at_the_launch_limit(
        monkeypatch):
    # j changes every iteration, so no iteration repeats another: only the limit stops it,
    # here far below LOOP_TRIPS_LIMIT (a launch of 64 work-items and 64-element arrays)
    monkeypatch.setattr(control, "WHILE_TRIPS_FLOOR", 300)
    with pytest.raises(ExecutionError, match=r"<source>:6:5: a while loop on 1 != 0 runs "
                                             r"more than 300 iterations, the limit for one "
                                             r"loop of this launch \(4 x the largest of its "
                                             r"sizes.*raises the limit"):
        simulate(_never_ends(), compute_values=False)


def test_simulate_stops_a_loop_that_never_ends_with_exit_status_2(monkeypatch, tmp_path):
    from click.testing import CliRunner
    from tiletraffic.analysis.cli import main

    monkeypatch.setattr(control, "WHILE_TRIPS_FLOOR", 300)
    (tmp_path / "h3.cl").write_text(NEVER_ENDS.lstrip("\n"))
    (tmp_path / "h3.toml").write_text(
        'source = "h3.cl"\nkernel = "h3"\n[launch]\nglobal_size = [64]\nlocal_size = [64]\n'
        '[args]\nx = { shape = [64], access = "in" }\ny = { shape = [64], access = "out" }\n')
    res = CliRunner().invoke(main, ["simulate", str(tmp_path / "h3.toml")])
    assert res.exit_code == 2
    assert "h3.cl:5:5: a while loop on 1 != 0 runs more than 300 iterations" in res.output


def test_the_while_loop_limit_follows_the_launch_sizes_and_the_loop_constants():
    sch = _never_ends()
    loop = next(s for s in walk_statements(sch.body) if isinstance(s, S.While))
    assert control.while_trips_limit(sch, loop) == control.WHILE_TRIPS_FLOOR == 2**16
    # 4 x the largest array extent, work-item count or size parameter
    assert control.while_trips_limit(_never_ends(2**16), loop) == 2**18
    k = S.Var("k")
    big = S.While(k < 10**6, (S.If(k.eq(3 * 10**6), (S.Break(),)),
                              S.AssignInt("k", k + 1)))
    assert control.while_trips_limit(sch, big) == 4 * 3 * 10**6   # its constants
    huge = S.While(k < 2**30, (S.AssignInt("k", k + 1),))
    assert control.while_trips_limit(sch, huge) == control.LOOP_TRIPS_LIMIT


@pytest.mark.parametrize("update, period", [
    # work-items 2 and 3 never advance k: the loop's integers stop changing
    (lambda i, k: S.If(i < 2, (S.AssignInt("k", k + 1),)), 1),
    # k flips between 0 and 1 for ever
    (lambda i, k: S.AssignInt("k", S.Const(1) - k), 2),
])
def test_a_loop_that_repeats_an_iteration_is_refused_at_once(update, period):
    i, k = S.local_id(0), S.Var("k")
    body = (S.DeclareInt("k", S.Const(0)),
            S.While(k < 5, (update(i, k),), source="k.cl:3:5"))
    with pytest.raises(ExecutionError, match=r"k\.cl:3:5: a while loop on k < 5 never ends: "
                                             r"iteration [0-9,]+ starts with the integers"):
        simulate(_one_group(body), compute_values=False)
    assert control.REPEAT_CHECK_FROM * (1 + period) < control.LOOP_TRIPS_LIMIT


def test_a_long_loop_that_ends_is_not_taken_for_one_that_repeats():
    k, t = S.Var("k"), S.Var("t")
    trips = 3 * control.REPEAT_CHECK_FROM
    x = S.GlobalArray("x", "in", ("M",))
    y = S.GlobalArray("y", "out", ("M",))
    acc = S.DeclareFloat("acc")
    # t cycles with period 3 while k counts up to the end: no iteration repeats another
    body = (acc, S.DeclareInt("k", S.Const(0)), S.DeclareInt("t", S.Const(0)),
            S.While(k < trips, (S.Accumulate("acc", S.Load(x, (t,))),
                                S.AssignInt("t", (t + 1) % 3), S.AssignInt("k", k + 1))),
            S.store(y, (S.global_id(0),), acc.ref))
    sch = S.Schedule("demo-ints", "demo_ints", (("M", 4),), (x, y), (), (4,), (4,), body,
                     tile=4)
    result = simulate(sch, {"x": np.array([1.0, 2.0, 4.0, 8.0], dtype=np.float32)})
    assert result.counts.global_load_elems == 4 * trips
    assert result.outputs["y"].tolist() == [7.0 * trips / 3] * 4


def test_a_break_that_skips_a_barrier_is_barrier_divergence():
    i, t = S.local_id(0), S.Var("t")
    body = (S.DeclareInt("t", S.Const(0)),
            S.While(t < 3, (S.If((i.eq(1)) & t.eq(1), (S.Break(),)), S.Barrier(),
                            S.AssignInt("t", t + 1))))
    kinds = {h.kind for h in simulate(_one_group(body), hazards="report").hazards}
    assert kinds == {"barrier-divergence"}


def test_well_formed_refuses_a_break_in_a_for_and_an_assignment_to_a_let():
    in_for = (S.For("i", S.Const(0), S.Const(4), S.Const(1), (S.Break(),)),)
    with pytest.raises(MalformedScheduleError, match="Break in a For loop's body"):
        check_well_formed(_one_group(in_for))
    to_let = (S.Let("x", S.Const(1)), S.AssignInt("x", S.Const(2)))
    with pytest.raises(MalformedScheduleError, match="AssignInt to 'x', which a Let or For "
                                                     "binds"):
        check_well_formed(_one_group(to_let))
    with pytest.raises(S.ScheduleError, match="AssignInt statements only"):
        S.While(S.Const(0) < 1, (), (S.Barrier(),))


def test_the_engine_refuses_a_break_in_a_for():
    body = (S.For("i", S.Const(0), S.Const(4), S.Const(1), (S.Barrier(), S.Break())),)
    with pytest.raises(ExecutionError, match="break outside a While loop's body"):
        simulate(_one_group(body), compute_values=False)


# ---------------------------------------------------------------- the accelerators
def _rows(m: int, body_of_row) -> S.Schedule:
    A, y = S.GlobalArray("A", "in", ("M", "K")), S.GlobalArray("y", "out", ("M",))
    body = S.block(S.DeclareFloat("acc", 0.0), body_of_row(A), S.If(
        S.global_id(0) < S.Param("M"), (S.store(y, (S.global_id(0),), S.Private("acc")),)))
    return S.Schedule("user-rows", "user_rows", (("M", m), ("K", 16)), (A, y), (), (8,),
                      (-(-m // 8) * 8,), body, tile=8)


def _counts(sch, classes: bool):
    res = simulate(sch, compute_values=False,
                   accelerators=Accelerators(work_group_classes=classes, loop_blocks=classes))
    return res.counts.to_dict(), res.representatives


def test_classes_are_proved_for_integers_assigned_outside_loops():
    def body(A):
        r = S.Var("r")
        return (S.DeclareInt("r", S.global_id(0)),
                S.If(r < S.Param("M"), (S.Accumulate("acc", A[r, 0]),)),
                S.AssignInt("r", S.Param("M") - 1 - S.global_id(0)),
                S.If(r >= 0, (S.Accumulate("acc", A[r, 1]),)))
    sch = _rows(200, body)
    assert class_safety.classes_problem(sch) is None
    by_classes, representatives = _counts(sch, True)
    assert representatives is not None
    assert by_classes == _counts(sch, False)[0]


@pytest.mark.parametrize("kind", ["while", "carried"])
def test_classes_refused_for_while_loops_and_integers_carried_by_a_loop(kind):
    def body(A):
        k = S.Var("k")
        if kind == "while":
            return (S.DeclareInt("k", S.Const(0)),
                    S.While(k < S.group_id(0) % 4 + 1, (
                        S.If(S.global_id(0) < S.Param("M"), (S.Accumulate("acc", A[
                            S.global_id(0), k]),)),
                        S.AssignInt("k", k + 1))))
        return (S.DeclareInt("k", S.Const(0)),
                S.For("j", S.Const(0), S.Const(4), S.Const(1), (
                    S.If(S.global_id(0) < S.Param("M"),
                         (S.Accumulate("acc", A[S.global_id(0), k]),)),
                    S.AssignInt("k", k + S.group_id(0) % 3))))
    sch = _rows(200, body)
    problem = class_safety.classes_problem(sch)
    # the while loop is unrolled; its trip count, group_id(0) % 4 + 1, is not of the form
    assert problem == ("(group_id(0) % 4): the work-group id's step is not a multiple of 4 "
                       "(or the value can be negative)" if kind == "while" else
                       "integer k is assigned in the loop over j: its value can change from "
                       "one iteration to the next")
    by_classes, representatives = _counts(sch, True)
    assert representatives is None
    assert by_classes == _counts(sch, False)[0]


def test_statement_passes_do_not_plan_bodies_with_the_new_statements():
    loops = [
        S.For("j", S.Const(0), S.Const(4), S.Const(1), (S.AssignInt("k", S.Var("j")),
                                                        S.Assign("a", 1.0, (S.Var("j"),)))),
        S.For("j", S.Const(0), S.Const(4), S.Const(1), (
            S.While(S.Var("j") < 0, (S.Assign("a", 1.0, (S.Var("j"),)),)),)),
    ]
    for loop in loops:
        assert private_nest.plan(loop, {}) is None
        assert loop_blocks.plan(loop, {}) is None


# ------------------------------------------------------------ OpenCL C front end
DECLARED_K = r"""
// C = A * B, one element per work-item, its loop variable declared before the loop
__kernel void gemm_declared_k(__global const float *A, __global const float *B,
                              __global float *C, const int M, const int N, const int K)
{
    int row, col, k;
    float acc = 0.0f;
    row = get_global_id(1);
    col = get_global_id(0);
    if (row < M && col < N) {
        for (k = 0; k < K; k++)
            acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}
"""

DO_WHILE_TILES = r"""
// C = A * B through TILE x TILE tiles of local memory, the tile loop a do/while
#define TILE 4
__kernel void gemm_do_while(__global const float *A, __global const float *B,
                            __global float *C, const int M, const int N, const int K)
{
    __local float As[TILE][TILE];
    __local float Bs[TILE][TILE];
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int row = get_group_id(1) * TILE + ty;
    const int col = get_group_id(0) * TILE + tx;
    const int tiles = (K + TILE - 1) / TILE;
    float acc = 0.0f;
    int t = 0;
    do {
        const int ka = t * TILE + tx;
        const int kb = t * TILE + ty;
        if (row < M && ka < K) As[ty][tx] = A[row * K + ka]; else As[ty][tx] = 0.0f;
        if (kb < K && col < N) Bs[ty][tx] = B[kb * N + col]; else Bs[ty][tx] = 0.0f;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int e = 0; e < TILE; ++e)
            acc += As[ty][e] * Bs[e][tx];
        barrier(CLK_LOCAL_MEM_FENCE);
        t++;
    } while (t < tiles);
    if (row < M && col < N)
        C[row * N + col] = acc;
}
"""

TWO_VARIABLES = r"""
// C = A * B, a and b walking a row of A and a column of B together
__kernel void gemm_two_walkers(__global const float *A, __global const float *B,
                               __global float *C, const int M, const int N, const int K)
{
    const int row = get_global_id(1);
    const int col = get_global_id(0);
    if (row >= M || col >= N)
        return;
    float acc = 0.0f;
    for (int a = row * K, b = col; a < (row + 1) * K; a += 1, b += N)
        acc += A[a] * B[b];
    C[row * N + col] = acc;
}
"""

TRANSPOSE = r"""
// dst = src^T through a padded TILE x (TILE + 1) tile; x and y computed again after the barrier
#define TILE 8
__kernel void transpose_again(__global const float *src, __global float *dst,
                              const int width, const int height)
{
    __local float tile[TILE][TILE + 1];
    int x = get_group_id(0) * TILE + get_local_id(0);
    int y = get_group_id(1) * TILE + get_local_id(1);
    if (x < width && y < height)
        tile[get_local_id(1)][get_local_id(0)] = src[y * width + x];
    barrier(CLK_LOCAL_MEM_FENCE);
    x = get_group_id(1) * TILE + get_local_id(0);
    y = get_group_id(0) * TILE + get_local_id(1);
    if (x < height && y < width)
        dst[y * height + x] = tile[get_local_id(0)][get_local_id(1)];
}
"""


def _gemm(source: str, kernel: str, m: int, n: int, k: int, local=(4, 4)) -> S.Schedule:
    gsize = [-(-n // local[0]) * local[0], -(-m // local[1]) * local[1]]
    args = {"A": {"shape": ["M", "K"], "access": "in"},
            "B": {"shape": ["K", "N"], "access": "in"},
            "C": {"shape": ["M", "N"], "access": "out"}, "M": m, "N": n, "K": k}
    return tt.from_opencl(source, kernel, gsize, list(local), args)


def _transpose(width: int, height: int) -> S.Schedule:
    gsize = [-(-width // 8) * 8, -(-height // 8) * 8]
    args = {"src": {"shape": ["height", "width"], "access": "in"},
            "dst": {"shape": ["width", "height"], "access": "out"},
            "width": width, "height": height}
    return tt.from_opencl(TRANSPOSE, "transpose_again", gsize, [8, 8], args)


CASES = {
    "declared k": lambda: _gemm(DECLARED_K, "gemm_declared_k", 10, 7, 9),
    "do/while tiles": lambda: _gemm(DO_WHILE_TILES, "gemm_do_while", 10, 7, 9),
    "two variables": lambda: _gemm(TWO_VARIABLES, "gemm_two_walkers", 10, 7, 9),
    "transpose": lambda: _transpose(20, 12),
}


def _reference(name: str):
    if name == "transpose":
        return lambda inputs: inputs["src"].T.copy()
    return lambda inputs: inputs["A"] @ inputs["B"]


def _statements(sch) -> list:
    from tiletraffic.simulator.ir.visitor import walk_statements
    return list(walk_statements(sch.body))


def test_the_kernels_become_the_new_statements():
    kinds = {name: {type(s).__name__ for s in _statements(make())}
             for name, make in CASES.items()}
    # a counted loop over k declared before it: the IR's For, then k's value after it
    assert {"DeclareInt", "AssignInt", "For"} <= kinds["declared k"]
    assert "While" not in kinds["declared k"]
    while_loops = [s for s in _statements(CASES["do/while tiles"]()) if isinstance(s, S.While)]
    assert len(while_loops) == 1 and while_loops[0].do_while
    assert sum(isinstance(s, S.Barrier) for s in while_loops[0].body) == 2
    two = [s for s in _statements(CASES["two variables"]()) if isinstance(s, S.While)]
    assert [u.name for u in two[0].update] == ["a", "b"]
    assert "While" not in kinds["transpose"]
    assigned = [s.name for s in _statements(CASES["transpose"]()) if isinstance(s, S.AssignInt)]
    assert assigned == ["x", "y"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_kernel_computes_as_numpy(name):
    sch = CASES[name]()
    rng = np.random.default_rng(4)
    inputs = {a.name: rng.standard_normal([sch.param_values[d] for d in a.shape])
              .astype(np.float32) for a in sch.arrays if a.role == "in"}
    result = simulate(sch, inputs)
    want = _reference(name)({k: v.astype(np.float64) for k, v in inputs.items()})
    (out,) = result.outputs.values()
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    assert tt.check(sch, seed=3) == []


def test_counts_of_the_kernels():
    m, n, k = 10, 7, 9
    for name in ("declared k", "two variables"):
        counts = simulate(CASES[name](), compute_values=False).counts
        assert (counts.global_load_elems, counts.global_store_elems, counts.flop) == (
            2 * m * n * k, m * n, 2 * m * n * k), name
    tiles = simulate(CASES["do/while tiles"](), compute_values=False).counts
    groups, steps = 2 * 3, 3           # 8 x 12 work-items, K = 9 in tiles of 4
    assert tiles.barriers == 2 * steps * groups
    assert tiles.local_store_elems == 2 * 16 * steps * groups
    transpose = simulate(CASES["transpose"](), compute_values=False).counts
    assert (transpose.global_load_elems, transpose.global_store_elems,
            transpose.local_store_elems, transpose.local_load_elems) == (240, 240, 240, 240)


@needs_oclgrind
@pytest.mark.parametrize("name", sorted(CASES))
def test_oclgrind_counts_each_kernel_as_simulated(name):
    from tiletraffic.gpu.oclgrind.crosscheck import compare_counts
    comparison = compare_counts(CASES[name]())
    assert comparison.equal, comparison.to_dict()
    assert comparison.oclgrind["global_load_elems"] > 0


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_kernel_runs_on_pocl_equal_to_numpy(name, pocl):
    result = tt.run(CASES[name](), pocl, repeat=10, warmup=1, seed=5,
                    reference=_reference(name))
    assert result.check.ok


def test_the_reassigned_transpose_is_counted_by_classes():
    sch = _transpose(8 * 7, 8 * 6)
    assert class_safety.classes_problem(sch) is None
    full = simulate(sch, compute_values=False).counts
    by_classes = simulate(sch, compute_values=False,
                          accelerators=Accelerators(work_group_classes=True))
    assert by_classes.representatives is not None
    assert by_classes.counts == full


def test_a_loop_read_after_it_sees_the_last_value_and_several_declarators():
    source = r"""
    __kernel void k(__global const float *A, __global float *C, int N) {
        int i, j, counter = 0;
        i = get_global_id(0);
        for (j = 0; j < N; j += 3)
            counter++;
        C[i] = A[(j + counter + i) % N];   // j = 66, counter = 22 for N = 64
    }"""
    args = {"A": {"shape": [64], "access": "in"}, "C": {"shape": [64], "access": "out"},
            "N": 64}
    sch = tt.from_opencl(source, "k", [64], [16], args)
    a = np.arange(64, dtype=np.float32)
    out = simulate(sch, {"A": a}).outputs["C"]
    assert out.tolist() == [float((66 + 22 + i) % 64) for i in range(64)]


def test_while_break_continue_and_moved_pointers_in_c():
    source = r"""
    __kernel void k(__global const float *A, __global float *C, int N) {
        const int i = get_global_id(0);
        __global const float *p = A + i;
        float acc = 0.0f;
        int n = 0;
        while (1) {
            n++;
            if (n % 2 == 0) continue;
            if (n > 7) break;
            acc += p[0];
            p += 2;
        }
        A += 1;
        C[i] = acc + A[0];
    }"""
    args = {"A": {"shape": [80], "access": "in"}, "C": {"shape": [64], "access": "out"},
            "N": 64}
    sch = tt.from_opencl(source, "k", [64], [16], args)
    a = np.random.default_rng(2).standard_normal(80).astype(np.float32)
    out = simulate(sch, {"A": a}).outputs["C"]
    want = [a[i] + a[i + 2] + a[i + 4] + a[i + 6] + a[1] for i in range(64)]
    np.testing.assert_allclose(out, want, rtol=1e-6)


def test_a_do_while_zero_macro_is_its_body():
    source = r"""
    #define STORE(i, v) do { C[i] = v; } while (0)
    __kernel void k(__global const float *A, __global float *C, int N) {
        const int i = get_global_id(0);
        STORE(i, A[i]);
    }"""
    args = {"A": {"shape": [64], "access": "in"}, "C": {"shape": [64], "access": "out"},
            "N": 64}
    sch = tt.from_opencl(source, "k", [64], [16], args)
    assert [type(s).__name__ for s in sch.body] == ["Let", "Store"]


def test_assigning_a_helpers_parameter_is_refused_naming_its_place():
    source = r"""int twice(int n) { n = n * 2; return n; }
    __kernel void k(__global const float *A, __global float *C, int N) {
        C[twice(get_global_id(0)) % N] = A[0];
    }"""
    args = {"A": {"shape": [64], "access": "in"}, "C": {"shape": [64], "access": "out"},
            "N": 64}
    with pytest.raises(FrontendError,
                       match=r"^<source>:1:20: n assigned, but it is a helper's parameter"):
        tt.from_opencl(source, "k", [64], [16], args)


@pytest.mark.parametrize("start,stop,step,last", [("5", "N - 100", "2", 5), ("1", "11", "4", 13),
                                                   ("0", "N", "3", 66), ("-7", "2", "3", 2),
                                                   ("N", "N + 1", "N", 128)])
def test_a_counted_loop_over_an_earlier_integer_leaves_its_last_value(start, stop, step, last):
    source = f"""
    __kernel void k(__global const float *A, __global float *C, int N) {{
        int k;
        const int i = get_global_id(0);
        for (k = {start}; k < {stop}; k += {step})
            C[i] = A[(i + k + 640) % N];
        C[i] = A[(k + 640) % N];
    }}"""
    args = {"A": {"shape": [64], "access": "in"}, "C": {"shape": [64], "access": "out"},
            "N": 64}
    sch = tt.from_opencl(source, "k", [64], [16], args)
    assert any(isinstance(s, S.For) for s in sch.body)
    out = simulate(sch, {"A": np.arange(64, dtype=np.float32)}).outputs["C"]
    assert out.tolist() == [float((last + 640) % 64)] * 64


def nested_loops() -> S.Schedule:
    """Per work-item i: for (o = 0; o < 4; o++) { if (o == i % 3) continue;
    j = 0; while (1) { if (j == o + 1) break; if (i == 5 && o == 3) return;
    acc += A[i, j]; j++; } }  y[i] = acc (never stored by work-item 5)."""
    A, y = S.GlobalArray("A", "in", ("M", "K")), S.GlobalArray("y", "out", ("M",))
    i, o, j = S.global_id(0), S.Var("o"), S.Var("j")
    inner = S.While(S.Const(0) < 1, (
        S.If(j.eq(o + 1), (S.Break(),)),
        S.If(i.eq(5) & o.eq(3), (S.Return(),)),
        S.Accumulate("acc", A[i, j]),
        S.AssignInt("j", j + 1)))
    body = S.block(
        S.DeclareFloat("acc", 0.0), S.DeclareInt("o", S.Const(0)),
        S.While(o < 4, (S.If(o.eq(i % 3), (S.Continue(),)), S.DeclareInt("j", S.Const(0)),
                        inner), (S.AssignInt("o", o + 1),)),
        S.store(y, (i,), S.Private("acc")))
    return S.Schedule("demo-nested", "nested", (("M", 8), ("K", 4)), (A, y), (), (8,), (8,),
                      body, tile=8)


def test_nested_loops_leave_only_their_own_loop_and_return_leaves_the_kernel():
    sch = nested_loops()
    check_well_formed(sch)
    a = np.random.default_rng(7).standard_normal((8, 4)).astype(np.float32)
    out = simulate(sch, {"A": a}, hazards="report").outputs["y"]
    for r in range(8):
        if r == 5:
            assert np.isnan(out[r])
            continue
        want = sum(a[r, jj] for oo in range(4) if oo != r % 3 for jj in range(oo + 1))
        assert out[r] == pytest.approx(want, rel=1e-5)


@needs_oclgrind
def test_rendered_nested_loops_counted_by_oclgrind_as_simulated():
    from tiletraffic.gpu.oclgrind import oclgrind as og
    sch = nested_loops()
    sim = simulate(sch, compute_values=False, hazards="report").counts.to_dict()
    measured = og.oclgrind_counts(sch, timeout_s=120).to_dict()
    assert {k: measured[k] for k in SHARED_KEYS} == {k: sim[k] for k in SHARED_KEYS}
