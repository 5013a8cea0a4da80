"""The distinct-sector helpers of the L1 footprint observer (simulator.observers.cache):
exactly numpy's np.unique / np.isin, found faster, on drawn accesses."""
from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from tiletraffic.simulator.observers.cache import _first_of_runs, _in_sorted, _sorted_unique

shapes = st.tuples(st.integers(1, 4), st.integers(1, 9), st.integers(1, 7))


@given(shape=shapes, seed=st.integers(0, 2**32 - 1), spread=st.integers(1, 6),
       broadcast=st.booleans())
def test_kept_entries_hold_every_distinct_sector_of_every_work_group(shape, seed, spread,
                                                                      broadcast):
    rng = np.random.default_rng(seed)
    g, items, iters = shape
    # sectors broadcast over the work-items when ``broadcast`` (as an index without a
    # work-item term is), few distinct values so that runs and repeats are common
    sector = rng.integers(0, spread, (g, 1 if broadcast else items, iters))
    sector = np.broadcast_to(sector, shape)
    mask = np.broadcast_to(rng.random(shape) < 0.7, shape)
    keep = _first_of_runs(sector, mask)
    assert keep.shape == shape and not (keep & ~mask).any()     # only executed entries
    for w in range(g):
        assert set(sector[w][keep[w]].tolist()) == set(sector[w][mask[w]].tolist())


@given(values=st.lists(st.integers(-2**40, 2**40), max_size=60),
       probes=st.lists(st.integers(-2**40, 2**40), max_size=20))
def test_sorted_unique_and_membership_equal_numpys(values, probes):
    values = np.array(values, dtype=np.int64)
    keys = _sorted_unique(values)
    assert np.array_equal(keys, np.unique(values))
    probe = np.concatenate([np.array(probes, dtype=np.int64), values[:5] + 1, values[:5]])
    assert np.array_equal(_in_sorted(probe, keys), np.isin(probe, keys))
