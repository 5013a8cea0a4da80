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
from tiletraffic.gpu.codegen.generate import generate
from tiletraffic.simulator.engine import control
from tiletraffic.simulator.engine.accelerators import Accelerators, class_safety
from tiletraffic.simulator.engine.accelerators import loop_blocks, private_nest
from tiletraffic.simulator.engine.simulation import simulate
from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.static import ExecutionError
from tiletraffic.simulator.ir.wellformed import MalformedScheduleError, check_well_formed
from tiletraffic.simulator.observers.hazards import HazardError

SHARED_KEYS = ("global_load_elems", "global_store_elems", "local_load_elems",
               "local_store_elems", "barriers")


def oclgrind_available() -> bool:
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available as available
    return available()


needs_oclgrind = pytest.mark.skipif(not oclgrind_available(), reason="no Oclgrind platform")


@pytest.fixture(scope="module")
def pocl():
    from tiletraffic.gpu.devices.device import list_devices
    devices = [d for d in list_devices() if "portable" in d.platform_name.lower()
               or "pocl" in d.platform_name.lower()]
    if not devices:
        pytest.skip("no PoCL device")
    return f"{devices[0].platform_index}:{devices[0].device_index}"


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
    assert problem == ("a statement of kind While" if kind == "while" else
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
