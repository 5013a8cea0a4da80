"""simulator.engine.class_check: a launch's hazard check on its work-group classes (the
representatives and the extreme members of each class, every work-group for its outputs'
accesses) finds a launch clean exactly when the full check does. A hazard that only a
work-group no class stands for has (an out-of-bounds read in the last interior work-group,
a race between the first and the last) is still found, and ``tiletraffic.check`` then
reports it as full execution does."""
from __future__ import annotations

import pytest

import tiletraffic as tt
from tiletraffic.simulator.engine.accelerators import class_safety
from tiletraffic.simulator.engine.accelerators.classes import group_classes
from tiletraffic.simulator.engine.class_check import (extreme_members, launch_proved_clean,
                                                      output_slice, proved_clean,
                                                      worth_classes)
from tiletraffic.simulator.engine.simulation import probe_runner, simulate
from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.nodes import (Assign, Barrier, Const, DeclareFloat, GlobalArray,
                                            If, Let, LocalArray, Param, Schedule, block,
                                            global_id, group_id,
                                            local_id, store)
from tiletraffic.simulator.ir.visitor import walk_statements
from tiletraffic.simulator.kernels.variants import VARIANTS, build_any, names

LOCAL = 16
GROUPS = 40


def _copy(family: str, extent_x: int, shift: int, extra=(),
          m: int = (GROUPS - 1) * LOCAL) -> Schedule:
    """``acc = x[row + shift]; y[row] = acc`` for ``row < M`` (by default M = 39 work-groups
    of 16: the 40th work-group does nothing), ``x`` of ``extent_x`` elements; ``extra``
    statements after the guarded copy (with ``row`` bound)."""
    M, K = Param("M"), Param("K")
    x, y = GlobalArray("x", "in", ("K",)), GlobalArray("y", "out", ("M",))
    row, acc = Let("row", global_id(0)), DeclareFloat("acc")
    body = block(row, acc, If(row.var < M, (Assign("acc", x[row.var + shift]),
                                            store(y, (row.var,), acc.ref))), *extra)
    return Schedule(family=family, kernel_name="copy", body=body,
                    params=(("M", m), ("K", extent_x)), arrays=(x, y),
                    local_arrays=(), local_size=(LOCAL,), global_size=(GROUPS * LOCAL,),
                    tile=LOCAL)


def test_an_out_of_bounds_read_only_in_the_last_interior_work_group_is_found():
    m = (GROUPS - 1) * LOCAL
    sch = _copy("user-copy-shifted", m, 1)   # x[row + 1] leaves x only at row m - 1
    assert class_safety.classes_problem(sch) is None
    classes = group_classes(sch, probe_runner(sch))
    last_interior = GROUPS - 2
    assert last_interior not in set(classes.representatives.tolist()), \
        "no class is represented by the work-group with the fault"
    assert last_interior in set(extreme_members(sch, classes).tolist())
    assert worth_classes(sch) and not proved_clean(sch)
    found = tt.check(sch)
    assert [h.kind for h in found] == ["out-of-bounds"]
    assert found[0].group_id == (last_interior,) and found[0].count == 1
    assert not launch_proved_clean(sch)


def test_the_same_copy_in_bounds_is_proved_clean():
    sch = _copy("user-copy", (GROUPS - 1) * LOCAL + 1, 1)
    assert proved_clean(sch)
    assert tt.check(sch) == []
    assert simulate(sch, compute_values=False, hazards="report", limits=None).hazards == []


def test_a_race_between_the_first_and_the_last_work_group_is_found():
    # the last work-group's last work-item also stores y[0], which work-group 0 stores
    m = GROUPS * LOCAL
    x = GlobalArray("x", "in", ("K",))
    y = GlobalArray("y", "out", ("M",))
    row = S.Var("row")
    extra = If((row >= Param("M") - 1) & (row < Param("M")),
               (store(y, (Const(0),), x[Const(0)]),))
    sch = _copy("user-copy-racing", m, 0, (extra,), m=m)
    assert sch.arrays[1].name == y.name and sch.arrays[0].name == x.name
    assert class_safety.classes_problem(sch) is None
    assert not proved_clean(sch)
    found = tt.check(sch)
    assert [h.kind for h in found] == ["data-race"]
    assert "between work-groups" in found[0].detail


def test_a_local_array_whose_accesses_move_differently_is_not_taken():
    # tile[lid] stored, tile[lid + group] read: which words are read unstored depends on
    # the work-group beyond a translation, so the classes cannot stand for the others
    M = Param("M")
    y = GlobalArray("y", "out", ("M",))
    tile = LocalArray("tile", (Const(64),))
    lid, row = local_id(0), Let("row", global_id(0))
    body = block(row, store(tile, (lid,), S.FConst(1.0)), Barrier(),
                 If(row.var < M, (store(y, (row.var,), tile[lid + group_id(0)]),)))
    sch = Schedule(family="user-moving-tile", kernel_name="moving", body=body,
                   params=(("M", GROUPS * LOCAL),), arrays=(y,), local_arrays=(tile,),
                   local_size=(LOCAL,), global_size=(GROUPS * LOCAL,), tile=LOCAL)
    assert class_safety.classes_problem(sch) is None
    assert "tile" in class_safety.translation_problem(sch)
    assert not proved_clean(sch)
    assert {h.kind for h in tt.check(sch)} == {"uninitialized-local-read"}


def test_the_output_slice_keeps_only_the_outputs_accesses_and_what_they_need():
    sch = tt.build("gemm-tiled", 64, 64, 64)
    sliced = output_slice(sch)
    kinds = [type(s).__name__ for s in walk_statements(sliced.body)]
    assert "Barrier" not in kinds and "For" not in kinds
    stores = [s for s in walk_statements(sliced.body) if isinstance(s, S.Store)]
    assert [s.array.name for s in stores] == ["C"]
    full = simulate(sch, compute_values=False, hazards="report", limits=None).counts
    part = simulate(sliced, compute_values=False, hazards="report", limits=None).counts
    assert part.global_store_elems == full.global_store_elems
    assert part.global_load_elems == 0


@pytest.mark.parametrize("name", names())
def test_proved_clean_exactly_where_the_full_check_is_clean(name):
    # every family, demo and faulty variant at its example shape, and a GEMM also at a
    # shape of ten work-groups per dimension (where classes stand for most of them)
    shapes = [{}]
    if name.startswith("gemm") and not name.startswith("gemm-split-k"):
        shapes.append(dict(m=152, k=24, n=152))
    for shape in shapes:
        sch = build_any(name, **shape)
        full = simulate_hazards(sch)
        clean = launch_proved_clean(sch)
        assert not (clean and full), f"{name} {shape}: proved clean, but {full}"
        if name not in VARIANTS and shape:
            assert clean and not full, f"{name} {shape}: clean, but not proved"


def simulate_hazards(sch) -> list:
    from tiletraffic.simulator.model.sequence_run import simulate as run

    return run(sch, compute_values=False, hazards="report", limits=None).hazards


def test_every_built_in_family_moves_its_local_and_private_arrays_by_translation(monkeypatch):
    # proved without being trusted
    from tiletraffic.simulator.ir.sequence import is_sequence
    from tiletraffic.simulator.kernels.families import FAMILIES, SEQUENCE_FAMILIES

    monkeypatch.setattr(class_safety, "_trusted_families", lambda: ())
    for family in (*FAMILIES, *SEQUENCE_FAMILIES):
        sch = build_any(family)
        for kernel in (sch.kernels if is_sequence(sch) else (sch,)):
            why = class_safety.translation_problem(kernel)
            # the slices are proved where each of their work-groups is a class of its own
            # (fewer than MIN_GROUPS_FOR_CLASSES per dimension, as here), else trusted
            assert why is None, (kernel.family, why)


def test_the_check_before_launch_finds_the_out_of_bounds_read_of_the_last_interior_group():
    from tiletraffic.simulator.engine.launch_check import check_launch

    sch = _copy("user-copy-shifted", (GROUPS - 1) * LOCAL, 1)
    checked = check_launch(sch, full_check_work=0)
    assert checked.work_groups_checked is not None, "checked on representatives"
    assert (GROUPS - 2,) in checked.work_groups_checked
    assert [h.kind for h in checked.hazards] == ["out-of-bounds"]
    assert checked.hazards[0].group_id == (GROUPS - 2,)
