"""simulator.engine.accelerators.class_safety: the static proof that work-group classes stand for
every work-group. Every built-in family passes it untrusted; a schedule whose masks depend
on the work-group id inside the NDRange is refused, naming the condition, and then every
work-group runs, so counts by classes equal full execution's for drawn group-dependent
schedules; the check before launch, the budget and ``model`` follow the same decision."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.engine.accelerators import Accelerators, class_safety
from tiletraffic.simulator.engine.budget import estimate_simulation
from tiletraffic.simulator.engine.simulation import simulate
from tiletraffic.simulator.engine.launch_check import check_launch
from tiletraffic.simulator.observers.memory import MemoryObserver
from tiletraffic.simulator.ir.nodes import (Accumulate, Const, DeclareFloat, For, GlobalArray,
                                            If, Let, Param, Schedule, Var, block, global_id,
                                            group_id, local_id, store)
from tiletraffic.simulator.kernels.families import FAMILIES, REGISTER_BLOCKED_FAMILIES, build

from strategies import gemm_tiles, register_block_options, register_block_sizes


def _matvec_with(extra_cond: S.Cond, m: int, k: int, local: int = 16,
                 family: str = "user-matvec") -> Schedule:
    """Row-per-work-item matrix-vector product whose work-items re-read x[0..7] where
    ``extra_cond`` holds (an extra mask that may depend on the work-group id)."""
    M, K = Param("M"), Param("K")
    A, x = GlobalArray("A", "in", ("M", "K")), GlobalArray("x", "in", ("K",))
    y = GlobalArray("y", "out", ("M",))
    row, acc, j = Let("row", global_id(0)), DeclareFloat("acc"), Var("j")
    reread = If(extra_cond, (For("i", Const(0), minimum_of(K, 8), Const(1),
                                 (Accumulate("acc", x[Var("i")]),)),))
    body = block(row, acc, If(row.var < M, (
        For("j", Const(0), K, Const(1), (Accumulate("acc", A[row.var, j] * x[j]),)),
        reread, store(y, (row.var,), acc.ref))))
    return Schedule(family=family, kernel_name="user_matvec", body=body,
                    params=(("M", m), ("K", k)), arrays=(A, x, y), local_arrays=(),
                    local_size=(local,), global_size=(-(-m // local) * local,), tile=local)


def minimum_of(a, b):
    return S.minimum(a, b)


def _untrusted(monkeypatch):
    monkeypatch.setattr(class_safety, "_trusted_families", lambda: ())


def _counts(schedule: Schedule, classes: bool):
    memory = MemoryObserver()
    res = simulate(schedule, compute_values=False, observers=[memory],
                   accelerators=Accelerators(work_group_classes=classes))
    return res.counts.to_dict(), memory.counts.to_dict(), res.representatives


# --------------------------------------------------------------- the built-in families
@st.composite
def built_in_schedules(draw) -> Schedule:
    family = draw(st.sampled_from(FAMILIES))
    if family in REGISTER_BLOCKED_FAMILIES:
        m, k, n = draw(register_block_sizes(family, 300))
        return build(family, m, k, n, **draw(register_block_options(family)))
    if family.startswith("gemm"):
        return build(family, draw(st.integers(1, 300)), draw(st.integers(1, 64)),
                     draw(st.integers(1, 300)), tile=draw(gemm_tiles(16)))
    return build(family, draw(st.integers(1, 2000)), draw(st.integers(1, 300)),
                 tile=draw(st.integers(1, 64)))


@settings(max_examples=60, deadline=None)
@given(built_in_schedules())
def test_every_built_in_family_is_proved_without_being_trusted(schedule):
    # the proof is not merely a list of trusted names: the families' own guards pass it
    # (block orders and split-K slices, which divide the work-group id, are trusted)
    saved = class_safety._trusted_families
    class_safety._trusted_families = lambda: ()
    try:
        assert class_safety.classes_problem(schedule) is None
    finally:
        class_safety._trusted_families = saved


# ------------------------------------------------------------------ what is refused
@pytest.mark.parametrize("cond, proved", [
    (global_id(0) < Param("M"), True),               # the edge: only the last work-group
    (global_id(0) >= 0, True),
    (group_id(0) < 1, True),                          # the first work-group only
    (local_id(0) < 3, True),                          # no work-group dependence
    (group_id(0).eq(5), True),                        # work-group 5: a segment of its own
    (group_id(0).ne(2), True),
    (global_id(0) < Param("M") // 2, True),           # a crossing in the middle: two runs
    ((global_id(0) // 16).eq(3), True),               # = group_id(0) == 3 with 16 work-items
    (group_id(0) % 2 < 1, False),                     # alternating work-groups
    (group_id(0) * group_id(0) < 9, False),
    (group_id(0) < local_id(0) * 3, False),           # changes at 37 work-groups
    ((global_id(0) // 4) % 4 < 2, True),              # depends on the local id only
])
def test_conditions_that_depend_on_the_work_group_id_inside_the_ndrange_are_refused(
        cond, proved):
    sch = _matvec_with(cond, 640, 24)
    problem = class_safety.classes_problem(sch)
    assert (problem is None) == proved, problem
    if not proved:
        assert "work-group" in problem
    else:
        assert _counts(sch, True)[:2] == _counts(sch, False)[:2]


def test_the_refusal_names_the_condition():
    problem = class_safety.classes_problem(_matvec_with(group_id(0) < local_id(0) * 3, 640, 24))
    assert problem == ("the condition group_id(0) < (local_id(0) * 3) differs between "
                       "work-groups (at more than 24 runs of work-groups of NDRange "
                       "dimension 0)")


def test_a_condition_true_in_one_interior_work_group_gets_a_class_of_its_own():
    sch = _matvec_with(group_id(0).eq(5), 640, 24)
    plan = class_safety.class_plan(sch)
    assert plan.starts == ((0, 1, 5, 6, 39),)
    reps = _counts(sch, True)[2]
    assert 5 in reps.tolist()


def test_a_loop_whose_trips_vary_with_the_work_group_is_refused():
    sch = _matvec_with(local_id(0) < 0, 640, 24)
    grid_stride = For("q", global_id(0), Param("M"), Const(64), ())
    sch = Schedule(**{**sch.__dict__, "body": sch.body + (grid_stride,)})
    assert "runs a number of times that varies" in class_safety.classes_problem(sch)


def test_a_small_dimension_needs_no_proof():
    # fewer than MIN_GROUPS_FOR_CLASSES work-groups: each is its own class anyway
    assert class_safety.classes_problem(_matvec_with(group_id(0).eq(2), 64, 8)) is None


# ------------------------------------------------- classes equal full execution
_CONDITIONS = st.one_of(
    st.builds(lambda c: group_id(0).eq(c), st.integers(0, 12)),
    st.builds(lambda c: group_id(0) < c, st.integers(0, 12)),
    st.builds(lambda c: global_id(0) < c, st.integers(0, 200)),
    st.builds(lambda c, d: group_id(0) % d < c, st.integers(0, 3), st.integers(1, 4)),
    st.builds(lambda c: (global_id(0) // 8) % 2 < c, st.integers(0, 2)),
    st.builds(lambda c: global_id(0) - Param("M") + c >= 0, st.integers(0, 40)),
    st.builds(lambda c: local_id(0) < c, st.integers(0, 16)),
)


@settings(max_examples=60, deadline=None)
@given(_CONDITIONS, st.integers(1, 200), st.integers(1, 12), st.sampled_from([4, 8, 16]))
def test_counts_by_classes_equal_full_execution_for_group_dependent_masks(cond, m, k, local):
    sch = _matvec_with(cond, m, k, local)
    by_classes, full = _counts(sch, True), _counts(sch, False)
    assert by_classes[:2] == full[:2]
    if class_safety.classes_problem(sch) is not None:
        assert by_classes[2] is None          # every work-group ran


# ------------------------------------------------------- the decision, everywhere
def test_the_check_before_launch_checks_an_unproved_launch_whole():
    # work-group 5 stores out of bounds: a check of representatives would miss it
    M = Param("M")
    sch = _matvec_with(local_id(0) < 0, 4096, 64, local=64)
    y = sch.array("y")
    oob = If((group_id(0) % 7).eq(5), (store(y, (global_id(0) + M,), S.FConst(1.0)),))
    sch = Schedule(**{**sch.__dict__, "body": sch.body + (oob,)})
    checked = check_launch(sch, full_check_work=1000)
    assert checked.work_groups_checked is None
    assert "(group_id(0) % 7)" in checked.why_every_work_group
    assert "no representatives" in checked.scope
    assert [h.kind for h in checked.hazards] == ["out-of-bounds"]
    # the same launch without the fault, proved: representatives
    clean = _matvec_with(local_id(0) < 0, 4096, 64, local=64)
    assert check_launch(clean, full_check_work=1000).work_groups_checked is not None


def test_the_budget_estimates_full_execution_where_classes_are_not_proved():
    unproved = _matvec_with((group_id(0) % 7).eq(5), 4096, 64)
    proved = _matvec_with(global_id(0) < Param("M"), 4096, 64)
    full = estimate_simulation(unproved, compute_values=False, work_group_classes=False)
    assert estimate_simulation(unproved, compute_values=False,
                               work_group_classes=True).time_s == full.time_s
    assert estimate_simulation(proved, compute_values=False, work_group_classes=True).time_s \
        < full.time_s


def test_model_counts_a_group_dependent_kernel_as_full_execution():
    from tiletraffic.simulator.model.device_model import device_model
    from tiletraffic.simulator.model.launch import model_launch

    sch = _matvec_with(group_id(0).eq(3), 640, 64)
    modelled = model_launch(sch, device_model("nvidia-h200"))
    assert modelled.counts.global_load_elems == _counts(sch, False)[0]["global_load_elems"]


def test_the_commands_say_when_every_work_group_is_executed(tmp_path):
    from click.testing import CliRunner

    from tiletraffic.analysis.cli import main

    (tmp_path / "k.cl").write_text(
        "__kernel void k(int N, __global const float* x, __global float* y) {\n"
        "  int i = get_global_id(0);\n  float acc = x[i];\n"
        "  if (get_group_id(0) % 3 == 2) { for (int j = 0; j < 16; j++) acc += x[j]; }\n"
        "  y[i] = acc;\n}\n")
    (tmp_path / "k.toml").write_text(
        'source = "k.cl"\nkernel = "k"\n[sizes]\nN = 1024\n[launch]\nglobal_size = ["N"]\n'
        'local_size = ["16"]\n[args]\nN = "N"\nx = { shape = ["N"], access = "in" }\n'
        'y = { shape = ["N"], access = "out" }\n')
    runner = CliRunner()
    simulated = runner.invoke(main, ["simulate", str(tmp_path / "k.toml"), "--counts-only",
                                     "--json"])
    assert simulated.exit_code == 0, simulated.output
    import json
    loads = json.loads(simulated.stdout)["global_load_elems"]
    # x[i] by each work-item, x[0..15] by the 16 of each of work-groups 2, 5, ..., 62
    assert loads == 1024 + 21 * 16 * 16
    modelled = runner.invoke(main, ["model", str(tmp_path / "k.toml"), "--json"])
    assert modelled.exit_code == 0, modelled.output
    assert "note: work-group classes not proved for k (" in modelled.stderr
    assert "(group_id(0) % 3)" in modelled.stderr
    assert "): every work-group executed, estimated " in modelled.stderr
    assert json.loads(modelled.stdout)["global_load_elems"] == loads


@pytest.mark.parametrize("operand, bits, signed, proved", [
    (local_id(0) - 1, 32, False, True),              # wraps, but alike in every work-group
    (global_id(0) - 1, 32, False, True),             # wraps in the first work-group only,
                                                     # a class of its own
    (global_id(0) + 1, 32, False, True),             # fits: the operand itself
    (global_id(0) - 1, 64, True, True),              # a signed long holds it
    (global_id(0) - 1, 64, False, True),             # a size_t below 0 in the first
                                                     # work-group only, a class of its own
    (global_id(0) - 17, 64, False, False),           # ... and in the second
    (global_id(0) + 1, 64, False, True),
])
def test_a_fixed_width_conversion_keeps_the_form_only_where_it_cannot_wrap(
        operand, bits, signed, proved):
    cond = S.Wrap(operand, bits, signed) < Param("M")
    assert (class_safety.classes_problem(_matvec_with(cond, 640, 24)) is None) == proved
