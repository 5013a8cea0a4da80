"""DRAM reads when the buffers do not fit in L2: reuse distance in work-group dispatch order.

A sector that L2 is asked for again is a DRAM read again unless it is still in L2. Which
work-groups ask for the same sectors follows from the load offsets between neighbouring
work-groups (measured by probing, :func:`simulator.engine.accelerators.classes.load_offsets`): a buffer whose
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

When every buffer fits in L2 together, :func:`simulator.model.prediction.predict` reports
compulsory reads without asking this model (so conflict misses of a low-associativity L2 are
ignored there: a small jump at that size).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


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

    @property
    def moves_only_in_0(self) -> bool:
        """Loads move between neighbours in dimension 0 but not in dimension 1 (the B
        columns of a GEMM): a column of work-groups reads the same sectors."""
        return self.offset_0 not in (0, None) and self.offset_1 == 0

    def gap(self, groups_0: int) -> int:
        """Work-groups, in dispatch order, between two readers of the same sector."""
        return groups_0 if self.moves_only_in_0 else 1


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


def _stripes(b: BufferReads, work_groups: int, groups_0: int) -> np.ndarray:
    """Work-group ids (dispatch order) that read the same sectors of ``b``, one row per
    group of sharers: a row of work-groups (loads fixed in dimension 0), a column of them
    (loads fixed in dimension 1 only), or each work-group alone."""
    ids = np.arange(work_groups)
    rows = work_groups // groups_0
    if b.offset_0 == 0 and rows * groups_0 == work_groups:
        return ids.reshape(rows, groups_0)
    if b.moves_only_in_0 and rows * groups_0 == work_groups:
        return ids.reshape(rows, groups_0).T
    return ids.reshape(work_groups, 1)


def _covered_fraction(start: np.ndarray, end: np.ndarray, t1: float, t2: float) -> np.ndarray:
    """Per row of readers: the length of the union of the fractions of the K loop the
    readers went through between times ``t1`` and ``t2`` (each reader moves through it
    at a constant rate from its start to its end)."""
    span = np.maximum(end - start, 1e-30)
    f1 = np.clip((t1 - start) / span, 0.0, 1.0)
    f2 = np.clip((t2 - start) / span, 0.0, 1.0)
    order = np.argsort(f1, axis=1)
    f1 = np.take_along_axis(f1, order, axis=1)
    f2 = np.take_along_axis(f2, order, axis=1)
    reach = np.maximum.accumulate(f2, axis=1)
    before = np.concatenate([np.zeros((len(f1), 1)), reach[:, :-1]], axis=1)
    return np.maximum(0.0, f2 - np.maximum(f1, before)).sum(axis=1)


def dram_reads_timeline(buffers: dict[str, BufferReads], output_bytes: int, groups_0: int,
                        start_s: np.ndarray, end_s: np.ndarray, l2_bytes: int,
                        associativity: int | None = None, samples: int = 400,
                        seed: int = 0) -> tuple[float, dict[str, float]]:
    """DRAM bytes read when work-group ``g`` ran from ``start_s[g]`` to ``end_s[g]``.

    The timeline may be measured (``%globaltimer`` read in each work-group) or made up
    (:func:`wave_timeline`). Each work-group reads its share
    of every buffer at a constant rate over its run (the fraction ``f`` of its loop at time
    ``start + f × (end - start)``). A re-read of the sectors at fraction ``f`` of a stripe
    (the sectors a row or column of work-groups share, see :func:`_stripes`) by reader
    ``r`` finds them in L2 unless the distinct data touched since the stripe's previous
    touch at ``f`` (by any of its readers) evicted them: that reuse distance is, over all
    buffers and stripes, the union of the loop fractions the readers went through in the
    window, times the stripe's bytes, plus the output of the work-groups that ended in it;
    :func:`miss_probability` turns it into a miss probability. Monte Carlo over
    ``samples`` re-reads (stripe, reader, ``f``) per buffer, fixed ``seed``.

    Args:
        start_s, end_s: shape ``(work_groups,)``, seconds (any origin), dispatch order
            (linear work-group id, dimension 0 fastest).

    Returns:
        (DRAM bytes read, mean miss probability of a re-read per buffer).

    Raises:
        ValueError: timelines of different lengths, a time that is not finite, an end
            before its start, or ``samples < 1``.
    """
    start = np.asarray(start_s, dtype=float)
    end = np.asarray(end_s, dtype=float)
    if start.shape != end.shape or start.ndim != 1:
        raise ValueError(f"start_s and end_s must be 1-D of one length, got {start.shape} "
                         f"and {end.shape}")
    if not (np.all(np.isfinite(start)) and np.all(np.isfinite(end))):
        raise ValueError("the timeline has a start or end that is not a finite number")
    if np.any(end < start):
        raise ValueError("a work-group ends before it starts in the timeline")
    if samples < 1:
        raise ValueError(f"samples must be at least 1, got {samples}")
    work_groups = len(start)
    rng = np.random.default_rng(seed)
    layout = {name: _stripes(b, work_groups, groups_0) for name, b in buffers.items()}
    # per buffer: its stripes' readers' starts and ends (gathered once), bytes per stripe
    stripes = [(start[ids], end[ids], b.size_bytes / ids.shape[0])
               for ids, b in ((layout[name], b) for name, b in buffers.items())]
    out_per_group = output_bytes / work_groups

    def distance(t1: float, t2: float) -> float:
        total = out_per_group * float(np.count_nonzero((end > t1) & (end <= t2)))
        for s, e, stripe_bytes in stripes:
            total += stripe_bytes * float(_covered_fraction(s, e, t1, t2).sum())
        return total

    total = 0.0
    miss_by_buffer: dict[str, float] = {}
    for name, b in buffers.items():
        total += b.compulsory_bytes
        ids = layout[name]
        if ids.shape[1] < 2 or b.requested_bytes <= b.compulsory_bytes:
            miss_by_buffer[name] = 0.0
            continue
        misses = []
        while len(misses) < samples:
            stripe = ids[rng.integers(ids.shape[0])]
            f = rng.random()
            touch = start[stripe] + f * (end[stripe] - start[stripe])
            r = rng.integers(len(stripe))
            t = touch[r]
            earlier = touch[touch < t]
            if np.any(touch[:r] == t):
                misses.append(0.0)  # a reader touching at the same time paid for the fill
                continue
            if earlier.size == 0:
                continue  # the stripe's first touch at f: compulsory
            misses.append(miss_probability(distance(float(earlier.max()), float(t)),
                                           l2_bytes, associativity))
        miss_by_buffer[name] = float(np.mean(misses))
        total += (b.requested_bytes - b.compulsory_bytes) * miss_by_buffer[name]
    return total, miss_by_buffer


def wave_timeline(work_groups: int, concurrent: int, duration_s: float,
                  steady: bool) -> tuple[np.ndarray, np.ndarray]:
    """A made-up timeline of ``work_groups`` equal work-groups on ``concurrent`` slots.

    ``steady=False``: lock-step waves (work-group ``g`` starts at ``(g // concurrent) ×
    duration``). ``steady=True``: the first ``concurrent`` start together, then one by one
    (work-group ``g >= concurrent`` starts at ``(g / concurrent) × duration``), the
    steady-state dispatch of :func:`dram_reads_steady_state`.

    Returns:
        (start_s, end_s), each of shape ``(work_groups,)``.
    """
    g = np.arange(work_groups, dtype=float)
    start = (np.floor(g / concurrent) if not steady
             else np.where(g < concurrent, 0.0, g / concurrent)) * duration_s
    return start, start + duration_s


# ------------------------------------------------------------------ write-back of dirty lines

def miss_probabilities(distance_bytes: np.ndarray, l2_bytes: int,
                       associativity: int | None) -> np.ndarray:
    """:func:`miss_probability` of every distance of an array (same shape, same model)."""
    d = np.asarray(distance_bytes, dtype=float)
    if l2_bytes <= 0:
        raise ValueError(f"L2 size must be positive, got {l2_bytes} bytes")
    if associativity is None:
        return (d > l2_bytes).astype(float)
    if associativity < 1:
        raise ValueError(f"L2 associativity must be at least 1 way (or None), got {associativity}")
    lam = associativity * d / l2_bytes
    below = np.zeros_like(lam)
    log_lam = np.log(np.where(lam > 0, lam, 1.0))
    for i in range(associativity):
        below += np.exp(i * log_lam - lam - math.lgamma(i + 1))
    return np.where(lam > 0, np.clip(1.0 - below, 0.0, 1.0), 0.0)


def _window_bytes_array(buffers: dict[str, BufferReads], output_bytes: int, work_groups: int,
                        groups_0: int, window: np.ndarray) -> np.ndarray:
    """:func:`window_bytes` of every (real, non-negative) window of an array."""
    w = np.asarray(window, dtype=float)
    total = output_bytes * np.minimum(1.0, w / work_groups)
    for b in buffers.values():
        if b.offset_0 == 0:
            sharers = np.maximum(1.0, np.minimum(w, groups_0))
        elif b.offset_1 == 0:
            sharers = np.maximum(1.0, w / groups_0)
        else:
            sharers = 1.0
        total = total + np.minimum(b.size_bytes, b.own_bytes / work_groups * w / sharers)
    return total


def _windows_of_distances(buffers: dict[str, BufferReads], output_bytes: int,
                          work_groups: int, groups_0: int, distance_bytes: np.ndarray,
                          iterations: int = 64) -> np.ndarray:
    """The largest window (work-groups, real) whose distinct bytes
    (:func:`window_bytes`, non-decreasing in the window) are at most each distance: a
    bisection over ``[0, work_groups]`` for all distances at once."""
    lo = np.zeros_like(distance_bytes, dtype=float)
    hi = np.full_like(lo, float(work_groups))
    full = _window_bytes_array(buffers, output_bytes, work_groups, groups_0, hi)
    for _ in range(iterations):
        mid = (lo + hi) / 2
        fits = _window_bytes_array(buffers, output_bytes, work_groups, groups_0, mid) \
            <= distance_bytes
        lo = np.where(fits, mid, lo)
        hi = np.where(fits, hi, mid)
    return np.where(full <= distance_bytes, float(work_groups), lo)


def partition_copies(readers: float, partitions: int) -> float:
    """Expected copies in L2 of a line that ``readers`` work-groups read, each on
    a compute unit of a random one of ``partitions`` L2 partitions: one in the partition
    that owns its address, and one in every other partition one of the readers belongs to
    (an SM's request is filled into its own partition, which keeps a copy of data owned by
    the other: the A100 whitepaper's "each L2 partition localizes and caches data for
    memory accesses from SMs in the GPCs directly connected to the partition"):
    ``1 + (P - 1) (1 - (1 - 1/P)^readers)``. One partition: 1; two partitions: 1.5 for one
    reader, 1.75 for two, towards 2 for many.

    Raises:
        ValueError: ``partitions < 1`` or ``readers < 0``.
    """
    if partitions < 1 or readers < 0:
        raise ValueError(f"L2 copies need partitions >= 1 and readers >= 0, got "
                         f"{partitions}, {readers}")
    return 1.0 + (partitions - 1) * (1.0 - (1.0 - 1.0 / partitions) ** readers)


def _with_copies(b: BufferReads, partitions: int) -> BufferReads:
    """``b`` with its bytes scaled by :func:`partition_copies` of its readers per sector
    (its per-work-group footprints summed over work-groups / its size, at least 1)."""
    c = partition_copies(max(1.0, b.own_bytes / max(1, b.size_bytes)), partitions)
    return BufferReads(b.requested_bytes * c, b.size_bytes * c, b.offset_0, b.offset_1,
                       b.own_bytes * c)


def dram_writes_write_back(buffers: dict[str, BufferReads], output_bytes: int,
                           work_groups: int, groups_0: int, l2_bytes: int,
                           associativity: int | None = None, partitions: int = 1,
                           points: int = 2049) -> float:
    """DRAM bytes written during the kernel by a write-back L2: the output lines evicted
    before the kernel ends.

    L2 is write-back (a written line is dirty in L2 and reaches DRAM only when it is
    evicted; NVIDIA's H100 whitepaper, "L2 cache"; Hennessy and Patterson, *Computer
    Architecture*, appendix B). What is still dirty in L2 when the kernel ends is written
    after it, and Nsight Compute's ``dram__bytes_write`` of the kernel does not count it.
    Each work-group writes its share of the output (``output_bytes / work_groups``); in
    steady-state dispatch the work-groups end in dispatch order, and after the ``w``-th
    from the end wrote its output, the ``w`` work-groups' worth of work still to come
    brings :func:`window_bytes` ``(w)`` of distinct data into L2 (inputs and output alike):
    the reuse distance at which that output line would be touched again after the kernel.
    It is still in L2 with probability ``1 - miss_probability(distance)``, the same
    replacement model as the reads. Retained = ``output_bytes / work_groups`` × the
    integral of that survival over ``w`` in ``[0, work_groups]``; written = output -
    retained.

    Fully associative (``associativity=None``): the last ``w*`` work-groups' output stays,
    ``w*`` the window whose distinct data fill the L2, so a kernel streaming ``I`` bytes of
    inputs once and writing ``O`` keeps ``O × C / (I + O)`` of an L2 of ``C`` (when
    ``I + O > C``). Hashed A-way sets give the same for a long stream (the integral of
    P(Poisson(λ) < A) over λ is A) and more write-back when the whole stream is near ``C``.
    Integrated over ``points`` distances from 0 to where the survival is below 1e-9
    (exactly ``C`` when fully associative: the result is then exact).

    ``partitions`` > 1: an L2 of that many partitions, where every input line takes
    :func:`partition_copies` of its readers' lines of capacity (a buffer read by many
    work-groups about ``partitions`` times its size, one read once ``1 + (P - 1) / P`` of
    it); an output line takes one, in the partition that owns it (a store brings no data
    back for the writer's partition to keep: an assumption, not measured). A kernel that
    re-reads shared inputs (a GEMM's B) keeps less of its output than one that streams.
    When everything (with its copies) fits in L2, nothing is written during the kernel
    (conflict misses of a set-associative L2 are left out there, as for the reads).

    Raises:
        ValueError: a non-positive L2 size, associativity below 1, ``work_groups < 1`` or
            ``points < 2``.
    """
    if work_groups < 1 or points < 2:
        raise ValueError(f"write-back needs work_groups >= 1 and points >= 2, got "
                         f"{work_groups}, {points}")
    miss_probabilities(np.zeros(1), l2_bytes, associativity)   # checks the L2 arguments
    if output_bytes <= 0:
        return 0.0
    buffers = {k: _with_copies(b, partitions) for k, b in buffers.items()}
    total = float(_window_bytes_array(buffers, output_bytes, work_groups, groups_0,
                                      np.array(float(work_groups))))
    if total <= l2_bytes:
        return 0.0
    if associativity is None:
        reach = float(l2_bytes)
    else:
        reach = l2_bytes * (associativity + 10 * math.sqrt(associativity) + 20) / associativity
    distances = np.linspace(0.0, min(total, reach), points)
    windows = _windows_of_distances(buffers, output_bytes, work_groups, groups_0, distances)
    if associativity is None:   # survival 1 up to C: the retained window is w(min(total, C))
        retained_windows = float(windows[-1])
    else:
        survive = 1.0 - miss_probabilities(distances, l2_bytes, associativity)
        retained_windows = float(np.sum(np.diff(windows) * (survive[1:] + survive[:-1]) / 2))
    return output_bytes * (1.0 - min(1.0, retained_windows / work_groups))
