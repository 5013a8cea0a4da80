"""Tests of simulator.engine.accelerators.loop_blocks: loops that store or assign private arrays, run in blocks
of iterations with values off, give exactly the observations of iteration-by-iteration
execution (every family over drawn shapes, on a device model that merges local loads and
one that does not; drawn kernels with guards, carried and stale integers, private values
read before they are set and hazards), and are used on the register-blocked families."""
from __future__ import annotations

import dataclasses
import warnings

import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.model import observation as tm
from tiletraffic.simulator.engine.accelerators import (ALL, Accelerators, NotApplicable,
                                                       loop_blocks)
from tiletraffic.simulator.model.device_model import DEVICE_MODELS, GuessedValueWarning
from tiletraffic.simulator.engine.simulation import simulate
from tiletraffic.simulator.observers.hazards import HazardError
from tiletraffic.simulator.ir.nodes import (Const, DeclareFloat, DeclarePrivateArray, For,
                                            GlobalArray, If, LocalArray, Let, PrivateArray,
                                            Schedule, Var, assign_elem, global_id, local_id,
                                            store)
from tiletraffic.simulator.kernels.families import REGISTER_BLOCKED_FAMILIES, build

from strategies import register_block_options, register_block_sizes
from test_classes import class_schedules

H200, CUDA = DEVICE_MODELS["nvidia-h200"], DEVICE_MODELS["nvidia-h200-cuda"]


def _observation(schedule: Schedule, model, blocked: bool) -> dict:
    """Every figure observe_launch gives, the blocked run's without its fallback."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GuessedValueWarning)
        obs = tm._observe(schedule, model, ALL.replace(loop_blocks=blocked), None)
    return {"counts": obs.counts.to_dict(), "memory": obs.memory.to_dict(),
            "sectors": obs.footprint.sectors_by_buffer,
            "own": obs.footprint.own_sectors_by_buffer, "phases": obs.load_phases,
            "offsets": obs.offsets, "strides": dataclasses.asdict(obs.strides)}


def _blocked_loops_run(schedule: Schedule, model) -> int:
    """Blocked loop entries of one blocked observation of ``schedule``."""
    entries = []
    ready = loop_blocks.ready

    def spy(machine, block, mask):
        done = ready(machine, block, mask)
        entries.append(done)
        return done

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(loop_blocks, "ready", spy)
        _observation(schedule, model, True)
    return sum(entries)


@st.composite
def register_blocked_schedules(draw) -> Schedule:
    family = draw(st.sampled_from(REGISTER_BLOCKED_FAMILIES))
    m, k, n = draw(register_block_sizes(family, 100))
    return build(family, m, k, n, **draw(register_block_options(family)))


@settings(max_examples=20)
@given(st.one_of(class_schedules(), register_blocked_schedules()), st.sampled_from((H200, CUDA)))
@example(build("gemm-register-blocked", 70, 45, 90, tile=8, tm=2, tn=4, bk=8, wg_rows=4), CUDA)
@example(build("gemm-prefetch", 70, 45, 90, tile=8, tm=2, tn=4, bk=8, wg_rows=4), CUDA)
@example(build("gemm-vectorized", 70, 48, 96, tile=8, tm=4, tn=4, bk=8, wg_rows=4), CUDA)
@example(build("gemm-prefetch", 130, 61, 140, tile=4, tm=3, tn=5, bk=3, wg_rows=5), H200)
@example(build("gemm-register-blocked", 37, 40, 44, tile=8, tm=3, tn=5, bk=4, wg_rows=3), H200)
def test_blocked_loops_give_the_observation_of_iteration_by_iteration(schedule, model):
    assert _observation(schedule, model, True) == _observation(schedule, model, False)


@pytest.mark.parametrize("family", REGISTER_BLOCKED_FAMILIES)
def test_register_blocked_families_run_their_loops_blocked(family):
    schedule = build(family, 64, 64, 64, tile=8, tm=4, tn=4, bk=8, wg_rows=8)
    assert _blocked_loops_run(schedule, H200) > 0


def test_the_loops_of_a_tiled_gemm_are_not_blocked():
    # its K loop has barriers, its kk loop is a vectorized loop already
    schedule = build("gemm-tiled", 64, 64, 64, tile=8)
    assert _blocked_loops_run(schedule, H200) == 0


X = GlobalArray("x", "in", ("N",))
Y = GlobalArray("y", "out", ("N",))
T = LocalArray("t", (Const(64),))


def _kernel(n: int, local: int, body, work_items: int | None = None) -> Schedule:
    return Schedule("blocked-loop", "blocked_loop", (("N", n),), (X, Y), (T,), (local,),
                    (work_items or n,), S.block(*body), local)


@st.composite
def blocked_loop_kernels(draw) -> Schedule:
    """A loop ``for e in lid .. stop step local`` whose body (guarded or not) loads x into
    a private array element (or two, by an inner loop) and a private float and stores them to local memory, with a
    drawn hazard or fallback: a store out of bounds, a private element read before any
    iteration sets it or before the iteration that sets it, an integer carried from one iteration to the next, or one read
    after the loop."""
    local = draw(st.sampled_from((1, 2, 4, 8)))
    groups = draw(st.integers(1, 6))
    n = local * groups - draw(st.integers(0, local - 1))
    stop = draw(st.integers(0, 64 + 2))             # above 64: local stores out of bounds
    trap = draw(st.sampled_from(("none", "unset", "late", "carried", "stale", "guard")))
    e, q, lid, g = Var("e"), Var("q"), Let("lid", local_id(0)), Let("g", global_id(0))
    p = PrivateArray("p", (Const(2),))
    value = X[S.Min(g.var, Const(n - 1))]
    expanded = draw(st.booleans())   # p[0], p[1] set by an inner loop (run expanded)
    lets = [Let("q", e + 1), Let("w", q + 1)]
    inner = [*(lets[::-1] if trap == "carried" else lets),   # carried: q of the last iteration
             For("r", Const(0), Const(2), Const(1), (assign_elem(p[Var("r")], value),))
             if expanded else assign_elem(p[Const(0)], value),
             S.Assign("s", value * p[Const(0)] if trap not in ("unset", "late")
                      else p[Const(1)])]
    if trap == "late":   # p[1] set from the second iteration on: the first reads it unset
        inner.insert(2, If(e >= lid.var + local, (assign_elem(p[Const(1)], value),)))
    stores = [store(T, e, S.Private("s") + p[Const(0)])]
    if trap == "guard":
        body = inner + [If(e < Const(stop - 1), tuple(stores), (store(T, e, S.FConst(0)),))]
    else:
        body = inner + stores
    after = [S.Barrier()]
    if trap == "stale":
        after.append(store(Y, S.Min(g.var + q - q, Const(n - 1)), S.FConst(1)))
    else:
        after.append(If(g.var < Const(n), (store(Y, g.var, S.FConst(1)),)))
    return _kernel(n, local, [
        lid, g, Let("q", Const(0)), DeclarePrivateArray(p, None), DeclareFloat("s", None),
        For("e", lid.var, Const(stop), Const(local), tuple(body)), *after], local * groups)


def _outcome(schedule: Schedule, blocked: bool):
    """observe_launch's observation, or the hazard it raises (its text)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            obs = tm.observe_launch(schedule, H200, limits=None, accelerators=ALL.replace(loop_blocks=blocked))
    except HazardError as err:
        return "hazard: " + str(err)
    return obs.counts.to_dict(), obs.memory.to_dict(), obs.footprint.sectors_by_buffer


@settings(max_examples=60)
@given(blocked_loop_kernels())
def test_drawn_loops_give_the_outcome_of_iteration_by_iteration(schedule):
    assert _outcome(schedule, True) == _outcome(schedule, False)
    try:   # which path gave it (applicability: the explicit tests below)
        _observation(schedule, H200, True)
        event("blocked")
    except Exception as err:   # noqa: BLE001
        event(f"fell back: {type(err).__name__}")


def test_plan_refuses_carried_integers_barriers_and_arrays_loaded_and_stored():
    e, q = Var("e"), Var("q")
    carried = For("e", Const(0), Const(4), Const(1), (
        store(T, q, X[e]), Let("q", e)))
    barrier = For("e", Const(0), Const(4), Const(1), (store(T, e, X[e]), S.Barrier()))
    both = For("e", Const(0), Const(4), Const(1), (store(T, e + 1, T[e]),))
    bounds = For("e", Const(0), q, Const(1), (Let("q", e), store(T, e, X[e])))
    for loop in (carried, barrier, both, bounds):
        assert loop_blocks.plan(loop, {"N": 8}) is None
    ok = For("e", Const(0), Const(4), Const(1), (Let("q", e + 1), store(T, q, X[e])))
    block = loop_blocks.plan(ok, {"N": 8})
    assert block is not None and block.lets == {"q"}


def test_a_let_read_after_a_blocked_loop_falls_back():
    e, q = Var("e"), Var("q")
    schedule = _kernel(8, 8, [
        Let("lid", local_id(0)),
        For("e", Var("lid"), Const(16), Const(8), (Let("q", e + 1), store(T, e, X[e % 8]))),
        S.Barrier(), store(Y, q % 8, S.FConst(1))])
    with pytest.raises(NotApplicable):
        simulate(schedule, compute_values=False, limits=None, race_checks=False,
                 accelerators=Accelerators(work_group_classes=True, loop_blocks=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast = tm.observe_launch(schedule, H200, limits=None)
        slow = tm.observe_launch(schedule, H200, limits=None, accelerators=ALL.replace(loop_blocks=False))
    assert fast.counts.to_dict() == slow.counts.to_dict()


def test_a_hazard_in_a_blocked_loop_is_the_one_of_iteration_by_iteration():
    lid = Let("lid", local_id(0))
    schedule = _kernel(8, 8, [lid, For("e", lid.var, Const(72), Const(8), (
        store(T, Var("e"), X[Var("lid")]),)), store(Y, lid.var, S.FConst(0))])
    with pytest.raises(HazardError) as fast:
        tm.observe_launch(schedule, H200, limits=None)
    with pytest.raises(HazardError) as slow:
        tm.observe_launch(schedule, H200, limits=None, accelerators=ALL.replace(loop_blocks=False))
    assert "out-of-bounds" in str(fast.value) and str(fast.value) == str(slow.value)


def _consecutive_local_reads(reads: int) -> Schedule:
    """8 work-items store 8 words each into local memory, then each reads ``reads`` of its
    own consecutive words 8·lid + k in a loop that assigns a private array (run blocked)."""
    lid = Let("lid", local_id(0))
    p = PrivateArray("p", (Const(1),))
    return _kernel(8, 8, [
        lid, DeclarePrivateArray(p, None),
        For("f", Const(0), Const(8), Const(1), (store(T, lid.var * 8 + Var("f"), X[lid.var]),)),
        S.Barrier(),
        For("k", Const(0), Const(reads), Const(1), (assign_elem(p[Const(0)], T[lid.var * 8 +
                                                                              Var("k")]),)),
        store(Y, lid.var, p[Const(0)])])


@pytest.mark.parametrize("reads, merged", [
    # k = 0..7 for the 8 work-items of one sub-group: two runs of 4
    (8, 2),
    # k = 0..6: one run of 4, then 3 words whose 4-word load (8·lid + 4 .. 8·lid + 7) lies
    # inside the 64-word array for every work-item: one more vector load
    (7, 2),
])
def test_blocked_and_one_by_one_iterations_merge_into_vector_loads_alike(reads, merged):
    # consecutive words along the loop's iterations: a local_vector_words = 4 model merges
    # each 4-aligned run of 4 into one vector load (the CUDA build's LDS.128 of an unrolled
    # loop), whether the iterations reach the observer in a block or one by one
    schedule = _consecutive_local_reads(reads)
    fast = _observation(schedule, CUDA, True)
    assert fast == _observation(schedule, CUDA, False)
    assert _blocked_loops_run(schedule, CUDA) == 2
    assert fast["memory"]["local_load_requests"] == merged
    assert _observation(schedule, H200, True)["memory"]["local_load_requests"] == reads
