"""An integer ``/`` or ``%`` whose divisor is 0 for a work-item that executes it is the hazard
``integer-division-by-zero`` (undefined in C): with the expression (its place in the
OpenCL C source), an example work-item and work-group and a count; work-items whose mask
is off for the statement (``if (d != 0) n / d``), or for which C does not evaluate the
operand (``d != 0 && n / d > 1``), are none. The same with the accelerators (work-group
classes, private nests, loop blocks: a hazard in a blocked loop falls back), in ``check``
(exit 1) and in the check before a launch (memory-unsafe)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from click.testing import CliRunner

import tiletraffic as tt
from tiletraffic.analysis.cli import main
from tiletraffic.gpu.oclgrind.oclgrind import SIMULATOR_HAZARD_KINDS
from tiletraffic.simulator.engine import simulation as engine
from tiletraffic.simulator.engine import launch_check as lc
from tiletraffic.simulator.model import observation
from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.engine.accelerators import ALL, Accelerators, NotApplicable
from tiletraffic.simulator.model.device_model import DEVICE_MODELS, GuessedValueWarning
from tiletraffic.simulator.engine.simulation import simulate
from tiletraffic.simulator.observers.hazards import HAZARD_KINDS, HazardError
from tiletraffic.simulator.ir.static import ExecutionError, eval_static

KIND = "integer-division-by-zero"
A = S.GlobalArray("A", "in", ("N",))
B = S.GlobalArray("B", "inout", ("N",))   # inout: a guarded store leaves no hazard
I, NP = S.global_id(0), S.Param("N")
D = S.Var("d")


def _schedule(*body, n=16, local=8, family="division-test"):
    return S.Schedule(family=family, kernel_name="division_test", params=(("N", n),),
                      arrays=(A, B), local_arrays=(), local_size=(local,),
                      global_size=(n,), body=S.block(*body), tile=local)


def _inputs(n=16):
    rng = np.random.default_rng(0)
    return {name: rng.standard_normal(n).astype(np.float32) for name in ("A", "B")}


def _in_bounds(q):
    """``q`` folded into 0 .. N-1 (C's ``%`` keeps the dividend's sign)."""
    return (q % NP + NP) % NP


def _store_of(q):
    return S.store(B, (I,), A[_in_bounds(q)])


def _kinds(hazards):
    return [h.kind for h in hazards]


def _report(sch, **kw):
    kw.setdefault("compute_values", False)
    inputs = _inputs(sch.param_values["N"]) if kw["compute_values"] else None
    return simulate(sch, inputs, hazards="report", limits=None, **kw).hazards


# ---------------------------------------------------------------------- one work-item
@pytest.mark.parametrize("op, offset, gid, lid, group", [
    ("/", 3, 3, 3, 0), ("%", 11, 11, 3, 1)])
def test_one_work_item_dividing_by_zero_is_the_hazard_with_its_example(op, offset, gid, lid,
                                                                        group):
    q = NP // D if op == "/" else NP % D
    sch = _schedule(S.Let("d", I - offset), _store_of(q))
    for values in (True, False):
        [h] = _report(sch, compute_values=values)
        assert (h.kind, h.group_id, h.local_ids, h.count, h.array) == (
            KIND, (group,), (lid,), 1, "")
        what = "division" if op == "/" else "remainder"
        assert h.detail.startswith(
            f"N {op} d is 16 {op} 0 for the work-item of global id ({gid},) (local id "
            f"({lid},) of work-group ({group},)): an integer {what} by zero"), h.detail
        assert f"1 {what}s by zero in 1 work-group(s)" in h.detail
    with pytest.raises(HazardError, match=KIND):
        simulate(sch, _inputs())
    assert KIND in HAZARD_KINDS


def test_the_count_adds_up_every_work_item_and_execution_that_divides_by_zero():
    """d = lid % 4 is 0 for 2 work-items of each of the 2 work-groups, in each of the 3
    iterations of a loop: one hazard of 12 divisions, naming both work-groups."""
    body = (S.Let("d", S.local_id(0) % 4),
            S.For("k", S.Const(0), S.Const(3), S.Const(1), (_store_of(NP // D + S.Var("k")),)))
    [h] = _report(_schedule(*body))
    assert h.count == 12 and h.work_groups == 2 and h.occurrences == 3
    assert h.group_counts == (((0,), 6), ((1,), 6))


def test_a_zero_divisor_of_every_work_item_is_the_hazard_too():
    """A constant or parameter divisor 0 for every work-item executing it is the kernel's
    fault as well: the same hazard, counted per work-item. A size the launch needs before
    anything runs cannot be computed: the simulator's error."""
    sch = _schedule(_store_of(I // S.Const(0)))
    [h] = _report(sch)
    assert h.kind == KIND and h.count == 16
    assert h.detail.startswith("global_id(0) / 0 is 0 / 0 for the work-item of global id (0,)")
    with pytest.raises(ExecutionError, match="by zero"):
        eval_static(NP // (NP - 16), {"N": 16})


# ---------------------------------------------------------------------- masks
PLAIN = S.store(B, (I,), A[I])
Q = NP // D
GUARDS = {   # name: (the division guarded, the same statements with the guard not guarding)
    "if": ((S.If(D.ne(0), (_store_of(Q),)),), (_store_of(Q),)),
    "and": ((S.If(D.ne(0) & (Q > 1), (PLAIN,)),), (S.If((Q > 1) & D.ne(0), (PLAIN,)),)),
    "or": ((S.If(D.eq(0) | (Q > 1), (PLAIN,)),), (S.If((Q > 1) | D.eq(0), (PLAIN,)),)),
    "not-or": ((S.If(~(D.eq(0) | (Q < 1)), (PLAIN,)),),
               (S.If(~((Q < 1) | D.eq(0)), (PLAIN,)),)),
    "else": ((S.If(D.eq(0), (PLAIN,), (_store_of(Q),)),),
             (S.If(D.eq(0), (_store_of(Q),), (PLAIN,)),)),
    "return": ((S.If(D.eq(0), (PLAIN, S.Return())), _store_of(Q)),
               (_store_of(Q), S.If(D.eq(0), (PLAIN, S.Return())))),
    "loop": tuple((S.For("k", S.Const(0), S.Const(2), S.Const(1), (
        S.If(guard, (S.Let("q", Q + S.Var("k")), _store_of(S.Var("q")))),)),)
        for guard in (D.ne(0), D.eq(0))),
}


@pytest.mark.parametrize("name", sorted(GUARDS))
def test_work_items_that_do_not_execute_the_division_are_not_reported(name):
    """Guarded (C does not evaluate the division where d = 0): clean; the same statements
    with the guard after the division, or the other way round: the hazard."""
    guarded, unguarded = GUARDS[name]
    for values in (True, False):
        assert _report(_schedule(S.Let("d", I - 3), *guarded), compute_values=values) == []
        assert [(h.kind, h.local_ids) for h in _report(
            _schedule(S.Let("d", I - 3), *unguarded), compute_values=values)] == [
                (KIND, (3,))]
    assert tt.check(_schedule(S.Let("d", I - 3), *guarded)) == []


def test_a_division_in_a_select_condition_is_checked_without_values_too():
    value = S.select(NP // D > 1, A[I], S.FConst(0))
    sch = _schedule(S.Let("d", I - 3), S.store(B, (I,), value))
    for values in (True, False):
        [h] = _report(sch, compute_values=values)
        assert (h.kind, h.local_ids, h.count, h.occurrences) == (KIND, (3,), 1, 1)
    check = lc.check_launch(sch)      # the values and their sum lengths: reported once
    assert [(h.kind, h.count) for h in check.hazards] == [(KIND, 1)]


def test_a_division_in_a_loop_bound_counts_once_per_entry():
    body = (S.Let("d", I - 3),
            S.For("k", S.Const(0), NP // D % 4 + 2, S.Const(1), (_store_of(S.Var("k")),)),
            S.For("j", S.Const(0), S.Const(2), S.Const(1) + NP % D % 2 * 0,
                  (_store_of(S.Var("j")),)))
    hazards = _report(_schedule(*body))
    assert [(h.kind, h.count, h.local_ids) for h in hazards] == [(KIND, 1, (3,))] * 2


# ---------------------------------------------------------------------- accelerators
def test_work_group_classes_run_every_work_group_where_a_divisor_may_be_zero():
    """A divisor that can be 0 is not proved for classes (the launch runs whole): the hazard
    of full execution, in simulate and in the check before launch of a large launch."""
    sch = _schedule(S.Let("d", I - 11), _store_of(NP // D), n=64)
    full = _report(sch)
    fast = simulate(sch, compute_values=False, hazards="report", limits=None,
                    accelerators=ALL.replace(k_extrapolation=False))
    assert fast.representatives is None and fast.hazards == full
    assert [(h.kind, h.group_id, h.local_ids) for h in full] == [(KIND, (1,), (3,))]
    check = lc.check_launch(sch, full_check_work=0)
    assert check.why_every_work_group and check.hazards == full
    assert check.memory_unsafe == full


def test_a_private_nest_dividing_by_zero_is_executed_and_reported_by_the_engine():
    """``acc[k + 0 * (3 / (k - 2))]`` under ``if (lid < 2)``: its plan cannot be static at
    k = 2 (the division is left to the engine, which reads the mask): one division by zero
    per active work-item, with private nests as without them."""
    acc = S.PrivateArray("acc", (S.Const(4),))
    k = S.Var("k")
    nest = S.For("k", S.Const(0), S.Const(4), S.Const(1), (
        S.assign_elem(acc[k + S.Const(0) * (S.Const(3) // (k - 2))], S.FConst(1)),))
    sch = _schedule(S.DeclarePrivateArray(acc, 0.0), S.If(S.local_id(0) < 2, (nest,)),
                    S.store(B, (I,), acc[S.Const(0)]))
    nests = _report(sch)
    plain = _report(sch, accelerators=Accelerators(private_nests=False))
    assert nests == plain and [(h.kind, h.count, h.work_groups) for h in nests] == [
        (KIND, 4, 2)]
    assert nests[0].detail.startswith("3 / (k - 2) is 3 / 0 for the work-item of global id "
                                      "(0,)")


BLOCKED_X = S.GlobalArray("x", "in", ("N",))
BLOCKED_Y = S.GlobalArray("y", "out", ("N",))
BLOCKED_T = S.LocalArray("t", (S.Const(64),))


def _blocked_loop(*zeros: int) -> S.Schedule:
    """``for (e = lid; e < 64; e += 8) t[e] = x[(N / ((e - z0) * (e - z1))) mod N]``: a loop
    of stores, run in blocks of iterations under work-group classes; the divisor is 0 where
    e is one of ``zeros`` (none: outside 0 .. 63)."""
    lid, e = S.Let("lid", S.local_id(0)), S.Var("e")
    q = NP // ((e - zeros[0]) * (e - zeros[1]))
    loop = S.For("e", lid.var, S.Const(64), S.Const(8), (
        S.store(BLOCKED_T, (e,), BLOCKED_X[(q % NP + NP) % NP]),))
    return S.Schedule("blocked-division", "blocked_division", (("N", 8),),
                      (BLOCKED_X, BLOCKED_Y), (BLOCKED_T,), (8,), (8,),
                      S.block(lid, loop, S.Barrier(), S.store(BLOCKED_Y, (lid.var,),
                                                              BLOCKED_T[lid.var])), 8)


@pytest.fixture
def classes_forced(monkeypatch):
    """Work-group classes (and so loop blocks) used whatever the proof says: a division by
    zero reaches a blocked loop only so (a divisor that may be 0 is never proved)."""
    monkeypatch.setattr(engine, "classes_problem", lambda schedule: None)
    monkeypatch.setattr(lc, "classes_problem", lambda schedule: None)


def test_a_division_by_zero_in_a_blocked_loop_falls_back_to_iteration_by_iteration(
        classes_forced):
    sch = _blocked_loop(17, 10)   # lid 1 in iteration 2, lid 2 in iteration 1
    blocked = Accelerators(work_group_classes=True, loop_blocks=True)
    unblocked = blocked.replace(loop_blocks=False)
    for mode in ("raise", "report"):
        with pytest.raises(NotApplicable):
            simulate(sch, compute_values=False, hazards=mode, limits=None,
                     accelerators=blocked)
    slow = simulate(sch, compute_values=False, hazards="report", limits=None,
                    accelerators=unblocked).hazards
    assert [(h.kind, h.local_ids, h.count, h.occurrences) for h in slow] == [
        (KIND, (2,), 2, 2)]   # iteration by iteration: the first is lid 2's, in iteration 1
    assert lc.check_launch(sch, full_check_work=0).hazards == slow
    model = DEVICE_MODELS["nvidia-h200"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GuessedValueWarning)
        with pytest.raises(HazardError) as fast:
            observation.observe_launch(sch, model, limits=None)
        with pytest.raises(HazardError) as plain:
            observation.observe_launch(sch, model, limits=None,
                                       accelerators=ALL.replace(loop_blocks=False))
        assert str(fast.value) == str(plain.value) and KIND in str(fast.value)
        clean = observation.observe_launch(_blocked_loop(-1, -2), model, limits=None)
    assert clean.counts.global_load_elems == 64


# ---------------------------------------------------------------------- OpenCL C, check, run
KERNEL = """__kernel void k(__global const float *A, __global float *B, const int n) {{
    int i = get_global_id(0);
    int d = i - 3;
{body}
}}
"""
LAUNCH = """source = "k.cl"
kernel = "k"

[sizes]
N = 64

[launch]
global_size = ["N"]
local_size = [16]

[args]
n = "N"
A = {{ shape = ["N"], access = "in" }}
B = {{ shape = ["N"], access = "out" }}
"""


def _launch_file(tmp_path, body: str):
    (tmp_path / "k.cl").write_text(KERNEL.format(body=body))
    (tmp_path / "k.toml").write_text(LAUNCH.format())
    return tmp_path / "k.toml"


def test_the_opencl_front_end_names_the_division_by_its_place_in_the_source(tmp_path):
    path = _launch_file(tmp_path, "    B[i] = A[((n / d) % n + n) % n];")
    [h] = tt.check(tt.build(str(path)))
    where = tmp_path / "k.cl"
    assert h.kind == KIND and h.detail.startswith(
        f"{where}:4:16: n / d is 64 / 0 for the work-item of global id (3,) (local id (3,) "
        "of work-group (0,))"), h.detail
    res = CliRunner().invoke(main, ["check", str(path)])
    assert res.exit_code == 1, res.output
    assert f"[{KIND}] {where}:4:16: n / d is 64 / 0" in res.output


@pytest.mark.parametrize("guarded, unguarded", [
    ("    if (d != 0) B[i] = A[((n / d) % n + n) % n]; else B[i] = 0.0f;",
     "    if (d != 1) B[i] = A[((n / d) % n + n) % n]; else B[i] = 0.0f;"),
    ("    B[i] = A[i] * ((d != 0 && n / d > 1) ? 1.0f : 2.0f);",
     "    B[i] = A[i] * ((n / d > 1 && d != 0) ? 1.0f : 2.0f);"),
    ("    if (d == 0 || n % d == 1) B[i] = A[i]; else B[i] = 2.0f;",
     "    if (n % d == 1 || d == 0) B[i] = A[i]; else B[i] = 2.0f;"),
    ("    if (d == 0) { B[i] = 0.0f; return; }\n    B[i] = A[((n / d) % n + n) % n];",
     "    if (d == 1) { B[i] = 0.0f; return; }\n    B[i] = A[((n / d) % n + n) % n];"),
], ids=["if-else", "and-select", "or", "return"])
def test_guarded_divisions_in_opencl_c_are_clean(tmp_path, guarded, unguarded):
    """Clean where the guard keeps d = 0 from the division; the same kernel guarding d = 1
    instead (or dividing before the test): the hazard, and ``check`` exits 1."""
    path = _launch_file(tmp_path, guarded)
    assert tt.check(tt.build(str(path))) == []
    res = CliRunner().invoke(main, ["check", str(path)])
    assert res.exit_code == 0 and "clean" in res.output, res.output
    path = _launch_file(tmp_path, unguarded)
    assert _kinds(tt.check(tt.build(str(path)))) == [KIND]
    assert CliRunner().invoke(main, ["check", str(path)]).exit_code == 1


@pytest.mark.parametrize("body, text", [
    ("    B[i] = A[i / (n - 64)];", "<source>:4:14: i / (n - 64) is 0 / 0"),
    ("    B[i] = A[i % 0];", "<source>:4:14: i % 0 is 0 % 0"),
    # a division of macros is named as written, not by the macros' definitions
    ("#define W 64\n    B[i] = A[i + W / (n - W)];", "<source>:5:18: W / (n - W) is 64 / 0"),
])
def test_a_divisor_zero_for_every_work_item_is_named_by_its_place(body, text):
    macros, _, body = body.rpartition("\n")
    source = macros + "\n" * bool(macros) + KERNEL.format(body=body)
    sch = tt.from_opencl(source, "k", [64], [16],
                         {"A": {"shape": [64], "access": "in"},
                          "B": {"shape": [64], "access": "out"}, "n": 64})
    with pytest.raises(HazardError) as err:
        simulate(sch, compute_values=False)
    assert text in str(err.value) and "\n" not in str(err.value)
    [h] = tt.check(sch)
    assert h.kind == KIND and h.count == 64


def test_run_refuses_a_launch_that_divides_by_zero_as_memory_unsafe():
    assert KIND in lc.MEMORY_UNSAFE_KINDS
    sch = _schedule(S.Let("d", I - 3), _store_of(NP // D))
    check = lc.check_launch(sch)
    assert [h.kind for h in check.memory_unsafe] == [KIND]


def test_oclgrind_has_no_counterpart_and_the_crosscheck_says_so():
    """Oclgrind's interpreter gives 0 for an integer division by zero and reports nothing:
    no Oclgrind kind corresponds, and a comparison states that it cannot see the kind."""
    from tiletraffic.gpu.oclgrind.crosscheck import HazardComparison

    assert SIMULATOR_HAZARD_KINDS[KIND] == frozenset()
    comparison = HazardComparison("k", [KIND], [])
    assert comparison.agree and f"Oclgrind cannot see {KIND}" in comparison.difference
