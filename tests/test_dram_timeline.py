"""The DRAM model driven by a work-group timeline (simulator.model.dram.dram_reads_timeline):
hand-computed cases with a fully associative L2, agreement with the dispatch-order formulas
on the made-up timelines they assume, and its errors."""
from __future__ import annotations

import numpy as np
import pytest

from tiletraffic.simulator.model.dram import (BufferReads, dram_reads_lockstep,
                                              dram_reads_steady_state, dram_reads_timeline,
                                              wave_timeline)

MiB = 2 ** 20


def _two_by_two(size_a: int, size_b: int):
    """A 2 x 2 grid of work-groups: A stripes per row (shared along dimension 0), B stripes
    per column (shared along dimension 1); every work-group reads its whole stripes."""
    a = BufferReads(requested_bytes=size_a * 2, size_bytes=size_a, offset_0=0, offset_1=64)
    b = BufferReads(requested_bytes=size_b * 2, size_bytes=size_b, offset_0=8, offset_1=0)
    return {"A": a, "B": b}


@pytest.mark.parametrize("l2_mib, expect_miss", [(20, False), (10, True)])
def test_two_rows_one_after_the_other_by_hand(l2_mib, expect_miss):
    # Row 0 (work-groups 0, 1) runs over [0, 1] s, row 1 (2, 3) over [1, 2] s.
    # The B sectors at loop fraction f are read at f and again at 1 + f. In between: A
    # stripe 0 from f to 1 and stripe 1 from 0 to f (one stripe, 4 MiB), both B stripes
    # whole (8 MiB), the output of row 0 (half of 2 MiB): 13 MiB. Re-reads of A happen at
    # the same moment by the two work-groups of a row: shared, never a miss.
    buffers = _two_by_two(8 * MiB, 8 * MiB)
    start, end = np.array([0.0, 0.0, 1.0, 1.0]), np.array([1.0, 1.0, 2.0, 2.0])
    dram, miss = dram_reads_timeline(buffers, 2 * MiB, 2, start, end, l2_mib * MiB,
                                     associativity=None, samples=50)
    assert miss["A"] == 0.0
    assert miss["B"] == (1.0 if expect_miss else 0.0)
    assert dram == 16 * MiB + (8 * MiB if expect_miss else 0)


def test_work_groups_in_lock_step_share_everything():
    buffers = _two_by_two(8 * MiB, 8 * MiB)
    start, end = np.zeros(4), np.ones(4)
    dram, miss = dram_reads_timeline(buffers, 0, 2, start, end, MiB, associativity=16)
    assert miss == {"A": 0.0, "B": 0.0}
    assert dram == 16 * MiB


def _gemm_like(n: int, tile: int) -> tuple[dict[str, BufferReads], int]:
    groups_0 = n // tile
    size = n * n * 4
    a = BufferReads(size * groups_0 / 2, size, 0, tile * n)  # L1 shared by pairs
    b = BufferReads(size * groups_0, size, tile, 0)
    return {"A": a, "B": b}, groups_0


@pytest.mark.parametrize("steady, rel", [(True, 0.05), (False, 0.25)])
def test_made_up_timelines_agree_with_the_dispatch_order_formulas(steady, rel):
    # 8 MiB compulsory, 384 MiB requested: the two formulas give 214 and 35 MiB. The
    # lock-step formula counts a wave's distinct data as its reuse distance, the timeline
    # only the part read since the previous touch: the looser tolerance.
    buffers, groups_0 = _gemm_like(1024, 16)
    work_groups, concurrent, l2 = groups_0 ** 2, 512, 3 * MiB
    start, end = wave_timeline(work_groups, concurrent, 1e-4, steady=steady)
    timeline, _ = dram_reads_timeline(buffers, 4 * MiB, groups_0, start, end, l2, 16,
                                      samples=150, seed=1)
    formula = (dram_reads_steady_state if steady else dram_reads_lockstep)(
        buffers, 4 * MiB, work_groups, groups_0, l2, concurrent, 16)
    compulsory = 8 * MiB
    assert compulsory < formula
    assert timeline == pytest.approx(formula, rel=rel)


def test_wave_timeline_shapes():
    start, end = wave_timeline(10, 4, 2.0, steady=False)
    assert start.tolist() == [0, 0, 0, 0, 2, 2, 2, 2, 4, 4]
    assert (end - start).tolist() == [2.0] * 10
    start, _ = wave_timeline(6, 4, 2.0, steady=True)
    assert start.tolist() == [0, 0, 0, 0, 2.0, 2.5]


@pytest.mark.parametrize("start, end, samples, match", [
    ([0.0, 0.0], [1.0], 10, "one length"),
    ([0.0, 1.0], [1.0, 0.5], 10, "ends before"),
    ([0.0, 0.0], [1.0, 1.0], 0, "samples"),
    ([0.0, float("nan")], [1.0, 1.0], 10, "finite"),
])
def test_bad_timelines_are_refused(start, end, samples, match):
    with pytest.raises(ValueError, match=match):
        dram_reads_timeline(_two_by_two(MiB, MiB), 0, 2, np.array(start), np.array(end),
                            MiB, samples=samples)
