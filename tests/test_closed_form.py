"""Simulated counts equal simulator.kernels.closed_forms exactly, and the seeds' textbook numbers."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tiletraffic.simulator.kernels.closed_forms import counts, textbook_per_tile_reads
from tiletraffic.simulator.observers.counters import Observer
from tiletraffic.simulator.engine.simulation import simulate
from tiletraffic.simulator.kernels.families import GEMM_FAMILIES, build
from strategies import gemm_tiles, schedules, sizes

MORE_EXAMPLES = max(100, settings.default.max_examples)


@settings(max_examples=MORE_EXAMPLES)
@given(schedule=schedules())
@example(schedule=build("gemm-tiled", 17, 5, 23, tile=7))
@example(schedule=build("gemm-naive", 33, 48, 1, tile=16))
@example(schedule=build("matvec-local", 45, 37, tile=8, chunk=5))
@example(schedule=build("matvec-local", 3, 48, tile=128, chunk=7))  # tile > chunk
@example(schedule=build("matvec-naive", 47, 13, tile=6))
def test_every_simulated_count_equals_the_closed_form(schedule):
    simulated = simulate(schedule, compute_values=False).counts.to_dict()
    predicted = counts(schedule)
    assert set(simulated) == set(predicted), "closed form and counter keys differ"
    differing = {key: (simulated[key], predicted[key]) for key in simulated
                 if simulated[key] != predicted[key]}
    assert not differing, f"{schedule.family} {schedule.params} tile {schedule.tile} " \
                          f"{schedule.extra}: (simulated, closed form) = {differing}"


@st.composite
def _full_tiles(draw):
    """(M, N, B) with B dividing N (K = N) and M >= B: at least one full B×B output tile."""
    b = draw(st.integers(1, 16), label="B")
    n = b * draw(st.integers(1, 48 // b), label="N/B")
    m = draw(st.integers(b, 48), label="M")
    return m, n, b


@pytest.mark.parametrize("family", GEMM_FAMILIES)
@given(mnb=_full_tiles())
@example(mnb=(48, 64, 16))  # the seed's B = 16
@example(mnb=(7, 21, 7))
def test_per_tile_reads_equal_the_textbook_count(family, mnb):
    m, n, b = mnb
    r = simulate(build(family, m, n, n, tile=b), compute_values=False)
    expected = textbook_per_tile_reads(family, n, b)
    assert expected == (b * b * 2 * n if family == "gemm-naive" else 2 * n * b)
    assert r.counts.global_load_elems_per_tile == expected
    # and the busiest work-group is a full tile: the first one
    assert r.global_loads_per_group[0] == expected


def test_textbook_ratio_is_the_tile_width():
    n, b = 96, 8
    naive = simulate(build("gemm-naive", n, n, n, b), compute_values=False).counts
    tiled = simulate(build("gemm-tiled", n, n, n, b), compute_values=False).counts
    assert naive.global_load_elems_per_tile == b * tiled.global_load_elems_per_tile
    assert naive.global_load_elems == b * tiled.global_load_elems


class _BarriersPerGroup(Observer):
    """Barriers reached per work-group, and whether every arrival was a full work-group."""

    def __init__(self, groups: int, items: int):
        self.per_group = np.zeros(groups, dtype=np.int64)
        self.items = items
        self.partial = 0

    def on_barrier(self, group_index, arrived):
        self.per_group[group_index] += arrived > 0
        self.partial += int(np.count_nonzero((arrived > 0) & (arrived != self.items)))


@given(mkn=sizes(), tile=gemm_tiles())
@example(mkn=(20, 20, 20), tile=16)
@example(mkn=(7, 1, 9), tile=3)
def test_gemm_tiled_barriers_per_work_group_are_two_per_k_tile(mkn, tile):
    m, k, n = mkn
    schedule = build("gemm-tiled", m, k, n, tile)
    observer = _BarriersPerGroup(schedule.work_groups, schedule.work_group_items)
    r = simulate(schedule, compute_values=False, observers=[observer])
    expected = 2 * math.ceil(k / tile)
    np.testing.assert_array_equal(observer.per_group, np.full(schedule.work_groups, expected))
    assert observer.partial == 0, "a barrier was reached by only part of a work-group"
    assert r.counts.barriers == expected * schedule.work_groups
    assert r.hazards == []
