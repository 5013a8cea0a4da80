"""DRAM reads when the buffers do not fit in L2: reuse distance in work-group dispatch order.

A sector that L2 is asked for again is a DRAM read again unless it is still in L2. Which
work-groups ask for the same sectors follows from the load offsets between neighbouring
work-groups (measured by probing, :func:`simulator.classes.load_offsets`): a buffer whose
loads do not move between neighbours in NDRange dimension 0 (``offset_0 == 0``, the A stripe
of a GEMM row of work-groups, the x vector of a matrix-vector product) is re-read by the very
next work-group in dispatch order (``gap = 1``); one that moves in dimension 0 but not in
dimension 1 (``offset_1 == 0``, the B columns of a GEMM) is re-read one row of work-groups
later (``gap = groups_0``). Any other pattern (offsets not constant, or moving in both
dimensions) is taken as re-read by the next work-group (``gap = 1``). Work-groups are
dispatched in linear order (dimension 0 fastest) as compute-unit slots free up;
``concurrent = resident work-groups per compute unit × compute units`` run at once.

The reuse distance of a re-read is the distinct data of the window of work-groups between
its two readers (:func:`window_bytes`: each buffer's per-work-group footprint divided among
the work-groups of the window that read the same sectors, plus their output). Whether the
sector survived that distance is :func:`miss_probability`: a set-associative L2 with hashed
set placement (or, with ``associativity=None``, a fully associative LRU cache: a miss exactly
when the distance exceeds the L2).

Two estimates, each named in ``methods`` and reported side by side:

* ``dram: reuse distance, steady-state dispatch`` (the prediction) — work-groups that start
  within the first ``concurrent`` start together and share their reads; later ones start one
  by one as others finish, so two readers ``gap`` apart in dispatch order are ``gap``
  work-group starts apart in time, and the re-read misses with the probability of the
  distance of ``gap`` work-groups.
* ``dram: lock-step waves`` (the other extreme) — waves of ``concurrent`` work-groups start and
  advance together: readers in one wave share every L2 fill, and each wave's distinct data
  of a buffer were left by the previous wave with the probability that a wave's distinct
  data did not evict them.

When every buffer fits in L2 together, :func:`simulator.traffic_model.predict` reports
compulsory reads without asking this model (so conflict misses of a low-associativity L2 are
ignored there: a small jump at that size). ``reports/nvidia-h200/validation.md`` compares
both estimates with the H200's counters.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


def miss_probability(distance_bytes: float, l2_bytes: int, associativity: int | None) -> float:
    """Probability that a sector re-read after ``distance_bytes`` of other distinct data is
    no longer in L2.

    ``associativity=None``: a fully associative LRU cache, a miss exactly when the distance
    exceeds ``l2_bytes`` (Mattson et al. 1970). Otherwise an A-way set-associative LRU cache
    whose lines fall into sets at random (address hashing): the other lines landing in the
    sector's set are Poisson with mean ``A × distance / l2_bytes``, and it is evicted when
    A or more did (the random-placement model of Agarwal, Horowitz, Hennessy, ACM TOCS 1989).
    """
    if l2_bytes <= 0:
        raise ValueError(f"L2 size must be positive, got {l2_bytes} bytes")
    if associativity is None:
        return float(distance_bytes > l2_bytes)
    if associativity < 1:
        raise ValueError(f"L2 associativity must be at least 1 way (or None), got {associativity}")
    lam = associativity * distance_bytes / l2_bytes
    if lam == 0:
        return 0.0
    log_lam = math.log(lam)
    below = sum(math.exp(i * log_lam - lam - math.lgamma(i + 1)) for i in range(associativity))
    return min(1.0, max(0.0, 1.0 - below))


@dataclass(frozen=True)
class BufferReads:
    """What L2 is asked for, per input buffer (bytes), and how its readers are spaced.

    ``requested_bytes``: sectors L2 sends to L1 for this buffer × sector size (after any
    sharing of L1 between work-groups); ``size_bytes``: the buffer; ``offset_0`` /
    ``offset_1``: element offset of its loads between neighbouring work-groups in NDRange
    dimensions 0 / 1 (``None``: not one constant, or the dimension has a single work-group);
    ``footprint_bytes``: the distinct sectors each work-group loads, summed over
    work-groups (× sector size), before L1 sharing; defaults to ``requested_bytes``.
    """

    requested_bytes: float
    size_bytes: int
    offset_0: int | None
    offset_1: int | None
    footprint_bytes: float | None = None

    @property
    def own_bytes(self) -> float:
        return self.requested_bytes if self.footprint_bytes is None else self.footprint_bytes

    @property
    def compulsory_bytes(self) -> float:
        return min(self.requested_bytes, self.size_bytes)

    def gap(self, groups_0: int) -> int:
        """Work-groups, in dispatch order, between two readers of the same sector."""
        moves_only_in_0 = self.offset_0 not in (0, None) and self.offset_1 == 0
        return groups_0 if moves_only_in_0 else 1


def _sharers(b: BufferReads, window: float, groups_0: int) -> float:
    """Work-groups among ``window`` consecutive ones (dispatch order) that read the same
    sectors of ``b``: a whole row of work-groups when the loads do not move in dimension 0,
    one per row of work-groups when they move only in dimension 0."""
    if b.offset_0 == 0:
        return max(1.0, min(window, groups_0))
    if b.offset_1 == 0:
        return max(1.0, window / groups_0)
    return 1.0


def window_bytes(buffers: dict[str, BufferReads], output_bytes: int, work_groups: int,
                 groups_0: int, window: float) -> float:
    """Distinct bytes that ``window`` consecutive work-groups (dispatch order) bring into
    L2: each buffer's per-work-group share divided among the work-groups sharing it
    (at most the buffer), plus their part of the output."""
    total = output_bytes * min(1.0, window / work_groups)
    for b in buffers.values():
        per_group = b.own_bytes / work_groups
        total += min(b.size_bytes, per_group * window / _sharers(b, window, groups_0))
    return total


def dram_reads_steady_state(buffers: dict[str, BufferReads], output_bytes: int,
                            work_groups: int, groups_0: int, l2_bytes: int,
                            concurrent: int, associativity: int | None = None) -> float:
    """DRAM bytes read, steady-state dispatch and an LRU L2 of ``l2_bytes``.

    The first ``concurrent`` work-groups start together and share what they read: of a
    buffer's re-readers (every work-group from ``gap`` on), those below ``concurrent`` hit;
    the others miss with :func:`miss_probability` of the reuse distance
    (:func:`window_bytes` over the gap).
    """
    total = 0.0
    for b in buffers.values():
        gap = b.gap(groups_0)
        rereaders = max(1, work_groups - gap)
        later = 1.0 - max(0, min(concurrent, work_groups) - gap) / rereaders
        total += b.compulsory_bytes
        distance = window_bytes(buffers, output_bytes, work_groups, groups_0, gap)
        total += ((b.requested_bytes - b.compulsory_bytes) * later
                  * miss_probability(distance, l2_bytes, associativity))
    return total


def dram_reads_lockstep(buffers: dict[str, BufferReads], output_bytes: int,
                        work_groups: int, groups_0: int, l2_bytes: int,
                        concurrent: int, associativity: int | None = None) -> float:
    """DRAM bytes read when waves of ``concurrent`` work-groups advance together: each wave
    reads its distinct data of every buffer; what an earlier wave read is found again with
    the probability that a wave's distinct data (the reuse distance) leave it in L2."""
    wave = max(1, min(concurrent, work_groups))
    miss = miss_probability(window_bytes(buffers, output_bytes, work_groups, groups_0, wave),
                            l2_bytes, associativity)
    total = 0.0
    for b in buffers.values():
        per_wave = max(b.compulsory_bytes,
                       min(b.requested_bytes, b.own_bytes / _sharers(b, wave, groups_0)))
        total += b.compulsory_bytes + (per_wave - b.compulsory_bytes) * miss
    return total
