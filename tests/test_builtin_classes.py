"""The built-in families' work-group classes are proved, not measured: the default counting
path (:func:`tiletraffic.simulator.engine.fast_path.count_launch`, classes and K
extrapolation where proved) gives exactly the counts of executing every work-group for every
built-in family and its options (batches, split-K slices, the grouped block order of
``group_rows``) over drawn shapes, non-multiples of every tile included; a grouped block
order takes the classes only where every block is full, and then gives full execution's
counts, requests, sectors and footprints."""
from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from tiletraffic.simulator.engine.accelerators import Accelerators
from tiletraffic.simulator.engine.accelerators.class_safety import class_plan, classes_problem
from tiletraffic.simulator.engine.fast_path import count_launch
from tiletraffic.simulator.engine.simulation import simulate
from tiletraffic.simulator.ir.sequence import kernels_of
from tiletraffic.simulator.kernels.families import REGISTER_BLOCKED_FAMILIES, build
from tiletraffic.simulator.observers.cache import FootprintObserver
from tiletraffic.simulator.observers.memory import MemoryObserver

from strategies import (gemm_tiles, register_block_options, register_block_sizes,
                        warp_tiled_configurations)

FULL = Accelerators(work_group_classes=False, private_nests=True, loop_blocks=False,
                    k_extrapolation=False)


@st.composite
def builtin_launches(draw):
    """A built-in GEMM launch with drawn sizes (up to 3 to 9 work-groups a dimension, edge
    work-groups partial) and options."""
    family = draw(st.sampled_from(("gemm-naive", "gemm-tiled", *REGISTER_BLOCKED_FAMILIES,
                                   "gemm-split-k")))
    options = {}
    if draw(st.booleans()):
        options["batch"] = draw(st.integers(2, 3))
        options["shared_b"] = draw(st.booleans())
    if family in ("gemm-naive", "gemm-tiled"):
        m, n, k = draw(st.integers(1, 90)), draw(st.integers(1, 90)), draw(st.integers(1, 24))
        return build(family, m, k, n, tile=draw(gemm_tiles(12)), **options)
    if family == "gemm-split-k":
        m, n = draw(st.integers(1, 100)), 4 * draw(st.integers(1, 25))
        splits = draw(st.integers(2, 5))
        k = 16 * splits * draw(st.integers(1, 2)) - 4 * draw(st.integers(0, 3))
        return build(family, m, k, n, splits=splits, group_rows=draw(st.integers(1, 3)),
                     **options)
    m, k, n = draw(register_block_sizes(family, 100))
    options.update(draw(register_block_options(family)))
    if family == "gemm-warp-tiled":
        options["group_rows"] = draw(st.integers(1, 4))
    return build(family, m, min(k, 24), n, **options)


def _counts(schedule, accelerators=None) -> dict:
    if accelerators is None:
        return count_launch(schedule).counts.to_dict()
    return count_launch(schedule, accelerators=accelerators).counts.to_dict()


@given(builtin_launches())
@example(build("gemm-warp-tiled", 70, 40, 132, tile=8, wg_rows=4, tm=4, tn=4, bk=8,
               group_rows=2))
@example(build("gemm-warp-tiled", 150, 16, 260, tile=8, wg_rows=4, tm=4, tn=4, bk=8,
               group_rows=3))
@example(build("gemm-tiled", 83, 9, 77, tile=7, batch=3))
@example(build("gemm-register-blocked", 97, 13, 61, tile=3, wg_rows=2, tm=3, tn=2, bk=5))
def test_the_default_path_counts_every_builtin_exactly(schedule):
    assert _counts(schedule) == _counts(schedule, FULL)


def test_a_grouped_block_order_is_not_taken_by_classes():
    # partial edge blocks fall on work-groups inside the grid: a period measured on two
    # neighbours would count them as full blocks (more loads and stores than there are)
    sch = build("gemm-warp-tiled", 70, 40, 132, tile=8, wg_rows=4, tm=4, tn=4, bk=8,
                group_rows=2)
    assert "GROUP_ROWS" in classes_problem(sch)
    counted = count_launch(sch)
    assert not counted.by_classes
    assert counted.counts.global_store_elems == 70 * 132


def test_the_builtins_take_proved_classes_at_scale():
    for family in ("gemm-naive", "gemm-tiled", *REGISTER_BLOCKED_FAMILIES, "gemm-split-k"):
        for kernel in kernels_of(build(family, 4096, 4096, 4096)):
            plan = class_plan(kernel)
            assert plan is not None, (family, classes_problem(kernel))
            assert all(p >= 1 for p in plan.periods) and all(len(s) <= 4 for s in plan.starts)


@st.composite
def grouped_full_blocks(draw):
    """A warp-tiled GEMM in a grouped block order whose blocks are all full: M and N whole
    multiples of the block (up to 7 blocks a side), K a multiple of 4, any of the small
    configurations (blocks whose columns are whole lines or not)."""
    config = draw(st.sampled_from(warp_tiled_configurations()))
    probe = build("gemm-warp-tiled", 64, 32, 64, **config)
    bm, bn = probe.extra["bm"], probe.extra["bn"]
    m, n = bm * draw(st.integers(1, 7)), bn * draw(st.integers(1, 7))
    k = 4 * draw(st.integers(1, 10))
    return build("gemm-warp-tiled", m, k, n, group_rows=draw(st.integers(2, 4)), **config)


def _memory_counts(schedule, classes: bool):
    memory, footprint = MemoryObserver(), FootprintObserver()
    res = simulate(schedule, compute_values=False, observers=[memory, footprint],
                   accelerators=Accelerators(work_group_classes=classes))
    return res.counts.to_dict(), memory.counts.to_dict(), footprint.sectors_by_buffer


@given(grouped_full_blocks())
@example(build("gemm-warp-tiled", 7 * 32, 24, 6 * 32, tile=4, wg_rows=8, tm=4, tn=8, bk=4,
               wn=32, group_rows=3))
def test_a_grouped_order_of_full_blocks_takes_classes_with_full_executions_counts(schedule):
    assert _memory_counts(schedule, True) == _memory_counts(schedule, False)


def test_a_grouped_order_of_full_aligned_blocks_is_counted_by_classes_at_scale():
    sch = build("gemm-warp-tiled", 4096, 4096, 4096, group_rows=8)
    assert class_plan(sch) is not None
    assert count_launch(sch).counts.to_dict() == count_launch(
        build("gemm-warp-tiled", 4096, 4096, 4096)).counts.to_dict()
