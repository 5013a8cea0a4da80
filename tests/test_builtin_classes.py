"""The built-in families' work-group classes are proved, not measured: the default counting
path (:func:`tiletraffic.simulator.engine.fast_path.count_launch`, classes and K
extrapolation where proved) gives exactly the counts of executing every work-group for every
built-in family and its options (batches, split-K slices, the grouped block order of
``group_rows``) over drawn shapes, non-multiples of every tile included."""
from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from tiletraffic.simulator.engine.accelerators import Accelerators
from tiletraffic.simulator.engine.accelerators.class_safety import class_plan, classes_problem
from tiletraffic.simulator.engine.fast_path import count_launch
from tiletraffic.simulator.ir.sequence import kernels_of
from tiletraffic.simulator.kernels.families import REGISTER_BLOCKED_FAMILIES, build

from strategies import gemm_tiles, register_block_options, register_block_sizes

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
