"""Tests of simulator.engine.accelerators.classes through simulate with work-group classes:
executing one work-group per class, weighted by the class size, gives exactly the counts of executing every
work-group, for every family and option, over drawn shapes (edges included)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tiletraffic.simulator.observers.counters import Observer
from tiletraffic.simulator.engine.accelerators import Accelerators
from tiletraffic.simulator.engine.simulation import InputError, simulate
from tiletraffic.simulator.observers.memory import MemoryObserver
from tiletraffic.simulator.ir.nodes import Schedule
from tiletraffic.simulator.kernels.families import FAMILIES, REGISTER_BLOCKED_FAMILIES, build
from tiletraffic.simulator.observers.cache import FootprintObserver

from strategies import chunks, gemm_tiles, random_inputs, register_block_options, register_block_sizes


class BatchRecorder(Observer):
    """Records which work-groups ran and the weight each stands for."""

    def __init__(self):
        self.groups: list[np.ndarray] = []
        self.weights: list[np.ndarray] = []

    def on_batch(self, group_index, work_items, weights=None) -> None:
        self.groups.append(np.array(group_index))
        self.weights.append(np.ones(len(group_index), dtype=np.int64) if weights is None
                            else np.array(weights))

    @property
    def representatives(self) -> np.ndarray:
        return np.concatenate(self.groups)

    @property
    def total_weight(self) -> int:
        return int(np.concatenate(self.weights).sum())


# Every family, and every option of the gemm families; sizes up to 150 so that the grid has
# >= 5 work-groups in a dimension (the threshold of simulator.engine.accelerators.classes) and edge work-groups.
VARIANTS = [(f, {}) for f in FAMILIES] + [
    ("gemm-naive", {"mapping": "transposed"}),
    ("gemm-tiled", {"padding": 1}),
    ("gemm-tiled", {"a_tile": "transposed"}),
    ("gemm-tiled", {"a_tile": "transposed", "padding": 3}),
]


@st.composite
def class_schedules(draw) -> Schedule:
    family, options = draw(st.sampled_from(VARIANTS))
    if family in REGISTER_BLOCKED_FAMILIES:
        m, k, n = draw(register_block_sizes(family, 150))
        return build(family, m, k, n, **draw(register_block_options(family)))
    if family.startswith("gemm"):
        m, n = draw(st.integers(1, 150)), draw(st.integers(1, 150))
        k = draw(st.integers(1, 40))
        return build(family, m, k, n, tile=draw(gemm_tiles(16)), **options)
    m, k = draw(st.integers(1, 600)), draw(st.integers(1, 150))
    tile = draw(st.one_of(st.integers(1, 16), st.integers(1, 96)))
    if family == "matvec-local":
        return build(family, m, k, tile=tile, chunk=draw(chunks(64)))
    return build(family, m, k, tile=tile)


def counts_of(schedule: Schedule, classes: bool):
    memory, footprint, batches = MemoryObserver(), FootprintObserver(), BatchRecorder()
    res = simulate(schedule, compute_values=False, observers=[memory, footprint, batches],
                   accelerators=Accelerators(work_group_classes=classes))
    return res.counts.to_dict(), memory.counts.to_dict(), footprint.sectors_by_buffer, batches


@given(class_schedules())
@example(build("gemm-tiled", 150, 20, 150, tile=16))
@example(build("gemm-tiled", 100, 33, 90, tile=7, a_tile="transposed"))
@example(build("gemm-naive", 143, 9, 101, tile=5, mapping="transposed"))
@example(build("gemm-naive", 150, 3, 150, tile=1))
@example(build("gemm-tiled", 130, 17, 150, tile=3, padding=1))
@example(build("matvec-local", 600, 150, tile=13, chunk=7))
@example(build("matvec-local-whole", 517, 37, tile=9))
@example(build("matvec-naive", 599, 11, tile=3))
def test_classes_give_exactly_the_counts_of_full_execution(schedule):
    full_counts, full_memory, full_footprint, full_batches = counts_of(schedule, False)
    cls_counts, cls_memory, cls_footprint, cls_batches = counts_of(schedule, True)
    assert cls_counts == full_counts
    assert cls_memory == full_memory
    assert cls_footprint == full_footprint
    # the full run executed each work-group once
    assert sorted(full_batches.representatives.tolist()) == list(range(schedule.work_groups))
    # classes: weights add up to the launch, representatives are distinct real work-groups
    reps = cls_batches.representatives
    assert cls_batches.total_weight == schedule.work_groups
    assert len(np.unique(reps)) == len(reps)
    assert reps.min() >= 0 and reps.max() < schedule.work_groups
    assert all((w >= 1).all() for w in cls_batches.weights)


def test_classes_of_a_large_tiled_gemm_are_few():
    # N = 1024, B = 16: 64 x 64 = 4096 work-groups. Per step of group id in dimension 0 the
    # column moves by 16 floats = 64 B: B and C addresses repeat modulo 128 B after 2 steps
    # (period 2); in dimension 1 the row moves by 16 rows of 4096 B: period 1. Classes:
    # dimension 0 first/interior/last x 2 residues, of which only 4 occur (first is even,
    # last = 63 is odd); dimension 1: first/interior/last -> 4 x 3 = 12 classes.
    schedule = build("gemm-tiled", 1024, 1024, 1024, tile=16)
    batches = BatchRecorder()
    memory = MemoryObserver()
    res = simulate(schedule, compute_values=False, observers=[memory, batches],
                   accelerators=Accelerators(work_group_classes=True))
    reps = batches.representatives
    assert schedule.work_groups == 4096
    assert len(reps) < 50
    assert len(reps) < schedule.work_groups / 10
    assert len(reps) == 12
    assert batches.total_weight == 4096
    assert len(np.unique(reps)) == len(reps)
    # and the weighted counts are the closed forms: 2·M·N·K/B loads, 2·K/B barriers per group
    assert res.counts.global_load_elems == 2 * 1024**3 // 16
    assert res.counts.barriers == 4096 * 2 * 1024 // 16
    # every A/B request of a 2-row x 16-column sub-group touches 2 x 64 B = 4 sectors
    assert memory.counts.global_load_sectors == 4 * memory.counts.global_load_requests


def test_classes_with_values_are_refused():
    schedule = build("gemm-tiled", 20, 20, 20, tile=4)
    inputs = random_inputs(schedule, np.random.default_rng(0))
    with pytest.raises(InputError, match="compute_values=False"):
        simulate(schedule, inputs, compute_values=True,
                 accelerators=Accelerators(work_group_classes=True))


def test_classes_with_read_maps_are_refused():
    schedule = build("gemm-naive", 20, 20, 20, tile=4)
    with pytest.raises(InputError):
        simulate(schedule, compute_values=False, read_maps=["A"],
                 accelerators=Accelerators(work_group_classes=True))
