"""DRAM write-back of dirty output lines (simulator.model.dram.dram_writes_write_back),
against values computed by hand."""
from __future__ import annotations

import math

import numpy as np
import pytest

from tiletraffic.simulator.model.dram import (BufferReads, dram_writes_write_back,
                                              partition_copies, miss_probabilities,
                                              miss_probability)


def streams(*sizes: int) -> dict[str, BufferReads]:
    """Inputs each work-group reads a disjoint part of, once (an elementwise kernel): the
    loads move between neighbours (offset 256 in dimension 0, one dimension)."""
    return {f"in{i}": BufferReads(s, s, 256, None) for i, s in enumerate(sizes)}


def test_elementwise_fully_associative_keeps_its_share_of_the_l2():
    # c = a + b: inputs 2 x 3000 B, output 3000 B, over 1000 work-groups; a fully
    # associative LRU L2 of 1200 B. The last w work-groups bring 9 w B of distinct data
    # (3 B of a, b, c each per work-group... 3000 / 1000 = 3 B of each): the L2 holds the
    # last 1200 / 9 = 133.3 work-groups, whose output is 133.3 x 3 = 400 B = C / 3 of it.
    # Written during the kernel: 3000 - 400 = 2600 B.
    assert dram_writes_write_back(streams(3000, 3000), 3000, 1000, 1000, 1200, None) == \
        pytest.approx(2600, rel=1e-12)
    # one input: output share 1 / 2 -> 3000 - 600 = 2400 B
    assert dram_writes_write_back(streams(3000), 3000, 1000, 1000, 1200, None) == \
        pytest.approx(2400, rel=1e-12)
    # output only (a fill): the L2 keeps 1200 B of it -> 1800 B written
    assert dram_writes_write_back({}, 3000, 1000, 1000, 1200, None) == \
        pytest.approx(1800, rel=1e-12)


def test_everything_fits_nothing_is_written_during_the_kernel():
    # 3 x 300 B = 900 B <= 1200 B: every output line is still in L2 at the end
    assert dram_writes_write_back(streams(300, 300), 300, 100, 100, 1200, None) == 0
    assert dram_writes_write_back(streams(300, 300), 0, 100, 100, 1200, None) == 0


def test_direct_mapped_hashed_l2_by_hand():
    # One way, lines placed at random: a line survives a reuse distance d with probability
    # e^(-d / C) (no other line in its set, Poisson with mean d / C). Output density 1/3 of
    # the distance: retained = (1/3) x integral_0^T e^(-d/C) dd = (C/3)(1 - e^(-T/C)),
    # T = 9000 B, C = 1200 B: 400 x (1 - e^-7.5) = 399.776 B; written 2600.22 B.
    expected = 3000 - 400 * (1 - math.exp(-7.5))
    assert dram_writes_write_back(streams(3000, 3000), 3000, 1000, 1000, 1200, 1) == \
        pytest.approx(expected, rel=1e-6)


def test_long_stream_any_associativity_keeps_the_same_share():
    # integral over lambda of P(Poisson(lambda) < A) = A, so a stream much longer than the
    # L2 keeps C / 3 whatever the ways: 14.68 M floats of c = a + b on a 60 MiB L2 write
    # 58.72 MB - 62.91 MB / 3 = 37.75 MB during the kernel with one L2 partition (the H200:
    # about 37 MB measured; the H200 model's two partitions give 45.6 MB at 50 MiB, below);
    # the stream is 2.8 L2s long, so with few ways a little of the integral is cut off
    # (4 ways: P(Poisson(11.2) < 4) is 0.3%, 0.08% more written)
    n = 14_680_064 * 4
    c = 60 * 2**20
    expected = n - c / 3
    assert expected == pytest.approx(37.75e6, rel=1e-3)
    for ways in (None, 4, 16):
        assert dram_writes_write_back(streams(n, n), n, n // 1024, n // 1024, c, ways) == \
            pytest.approx(expected, rel=1e-3)


def test_gemm_like_window_by_hand():
    # gemm-tiled 64^3, B = 16 (tests/test_traffic_model.py, test_dram_reuse_distance_by_hand):
    # A requested 65536 B (stripe shared along a row of 4 work-groups), B requested 65536 B
    # (shared down a column), 16 work-groups, C 16384 B. The last 4 work-groups bring
    # A 4096 + B 16384 + C 4096 = 24576 B: an L2 of 24576 B keeps their 4096 B of C.
    bufs = {"A": BufferReads(65536, 16384, 0, 16 * 64),
            "B": BufferReads(65536, 16384, 16, 0)}
    assert dram_writes_write_back(bufs, 16384, 16, 4, 24576, None) == pytest.approx(12288)
    # window 2: A 4096 x 2 / 2 + B 4096 x 2 + C 2048 = 14336 B -> 2048 B kept
    assert dram_writes_write_back(bufs, 16384, 16, 4, 14336, None) == pytest.approx(14336)


def test_vector_miss_probabilities_equal_the_scalar_ones():
    d = np.array([0.0, 10.0, 999.0, 1000.0, 1001.0, 5000.0])
    for ways in (None, 1, 2, 16):
        assert miss_probabilities(d, 1000, ways) == pytest.approx(
            [miss_probability(x, 1000, ways) for x in d], abs=1e-12)


@pytest.mark.parametrize("args, match", [
    ((1000, 1000, 0, None), "L2 size must be positive, got 0"),
    ((1000, 1000, 1200, 0), "associativity must be at least 1 way"),
    ((0, 1, 1200, None), "work_groups >= 1"),
])
def test_bad_arguments_are_refused(args, match):
    work_groups, groups_0, l2, ways = args
    with pytest.raises(ValueError, match=match):
        dram_writes_write_back(streams(10), 10, work_groups, groups_0, l2, ways)


def test_partition_copies_by_hand():
    # two partitions: one reader -> its partition plus, half the time, the owner: 1.5;
    # two readers -> 1 + (1 - 1/4) = 1.75; one partition: always 1; three partitions and
    # one reader: 1 + 2 x (1 - 2/3) = 5/3
    assert partition_copies(1, 2) == 1.5
    assert partition_copies(2, 2) == 1.75
    assert partition_copies(1000, 2) == pytest.approx(2.0)
    assert partition_copies(7, 1) == 1.0
    assert partition_copies(1, 3) == pytest.approx(5 / 3)
    with pytest.raises(ValueError, match="partitions >= 1"):
        partition_copies(1, 0)


def test_two_partitions_elementwise_by_hand():
    # c = a + b, two partitions: each input line has one reader -> 1.5 copies; the output
    # one (its owner's). The last w work-groups take (3 + 3) x 1.5 + 3 = 12 B each: an L2
    # of 1200 B keeps the last 100 work-groups' 300 B of c; 2700 B are written
    assert dram_writes_write_back(streams(3000, 3000), 3000, 1000, 1000, 1200, None,
                                  partitions=2) == pytest.approx(2700, rel=1e-12)


def test_two_partitions_gemm_like_by_hand():
    # the 64^3 GEMM above: each sector of A and B has 65536 / 16384 = 4 readers ->
    # 1 + (1 - 2^-4) = 1.9375 copies; C one. The last 4 work-groups take
    # A 4096 x 1.9375 + B 16384 x 1.9375 + C 4096 = 7936 + 31744 + 4096 = 43776 B:
    # an L2 of that size keeps their 4096 B of C; 12288 B are written
    bufs = {"A": BufferReads(65536, 16384, 0, 16 * 64),
            "B": BufferReads(65536, 16384, 16, 0)}
    assert dram_writes_write_back(bufs, 16384, 16, 4, 43776, None, partitions=2) == \
        pytest.approx(12288)
    # everything with its copies: (16384 + 16384) x 1.9375 + 16384 = 79872 B; an L2 of
    # 79872 B keeps it all, one of 75000 B does not (with one partition 49152 B fit)
    assert dram_writes_write_back(bufs, 16384, 16, 4, 79872, None, partitions=2) == 0
    assert dram_writes_write_back(bufs, 16384, 16, 4, 75000, None, partitions=2) > 0
    assert dram_writes_write_back(bufs, 16384, 16, 4, 75000, None, partitions=1) == 0


def test_issue_14_elementwise_point_on_the_h200_model_by_hand():
    # two partitions, 50 MiB: inputs read once take 1.5 copies, the output one; the L2 keeps
    # X C / (1.5 x 2X + X) = C / 4 = 13.11 MB of c: 58.72 - 13.11 = 45.61 MB written
    n = 14_680_064 * 4
    c = 50 * 2**20
    assert dram_writes_write_back(streams(n, n), n, n // 1024, n // 1024, c, 16,
                                  partitions=2) == pytest.approx(n - c / 4, rel=1e-3)
