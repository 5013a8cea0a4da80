"""Sub-group coalescing of global accesses and bank conflicts of local accesses.

An observer of the engine's access stream. Work-items are grouped into sub-groups of
``sub_group_size`` consecutive flattened local ids (dimension 0 fastest), as NVIDIA forms
warps (CUDA C++ Programming Guide, "SIMT Architecture"). Each load or store statement
executed by a sub-group with at least one active work-item is one *request* (one
instruction); the request touches the distinct 32-byte *sectors* and 128-byte *lines* of
its active work-items' addresses (CUDA C++ Best Practices Guide, "Coalesced Access to Global
Memory"). Buffers are taken as aligned to 256 bytes, as ``cudaMalloc`` and OpenCL buffers
on NVIDIA are.

Local memory has ``local_banks`` banks of ``bank_bytes`` bytes; word w sits in bank
w mod banks. With ``local_vector_words`` v > 1, a local load that reads v consecutive,
v-aligned words in v consecutive iterations of an inner loop is counted as one vector load
(NVCC unrolls such loops and emits 128-bit LDS for them). A loop of n such iterations, n
not a multiple of v, after at least one whole run ends with one more vector load where its
v words lie inside the local array for every work-item, else with n mod v scalar loads (as
the CUDA build's LDS.128 and scalar LDS remainders). A vector load's wavefronts count the
distinct words of all v, by the phase rule of vector accesses below (a 128-bit load of 1,
2 or 4 distinct 16-byte words takes two wavefronts, one per half sub-group, with 32 active
work-items and one with the 8 of a last, partial sub-group), and at least
``vector_min_wavefronts`` (a device-model value). A request needs as many *wavefronts* as the
largest number of distinct words it touches in one bank (work-items reading the same word
share it: a broadcast); its bank conflicts are the wavefronts above that minimum (one for
scalar loads) (CUDA C++ Programming Guide, "Shared Memory", compute capability 5.x and
later).

The loads merged so (:meth:`MemoryObserver._chain`) follow what the CUDA build's compiler
does in an unrolled loop: a word one iteration's source loads twice is read once (the
compiler reuses the value), and loads of different statements in one iteration that read
consecutive words chain as iterations do (``s[k][2x]`` and ``s[k][2x + 1]``); two chained
words whose first is even for every work-item of the batch, active or not (the alignment
the address expression proves), and that are not part of a v-word run, are one 64-bit
load. Vector local *loads*, explicit or merged, take wavefronts by the thread-pair rule of
:meth:`MemoryObserver._vector_load_wavefronts`; the phase rule below is kept for vector
local stores.

Vector accesses (``float2``/``float4``, :attr:`AccessEvent.vector_width` w > 1) are one
instruction per work-item: one request per sub-group that executes it, whose sectors and
lines are the distinct ones of all 4·w bytes of every active work-item (a ``float4`` load by
32 consecutive work-items: 512 bytes, 16 sectors, 4 lines, 1 request). Local vector
accesses, explicit or merged by the compiler (``local_vector_words``), are served in
*phases* of banks / w consecutive work-items (8 for 128-bit, 16 for 64-bit accesses: one
phase moves at most 32 words, NVIDIA GTC 2019 S9593: 128-bit shared accesses go by
quarter-warps). A phase takes as many wavefronts as the largest number of distinct words it
reads in one bank; two neighbouring phases (0 and 1, 2 and 3) share one wavefront when
together they read at most one distinct word per bank (the pairing Nsight Compute's
wavefront counts of 128-bit loads show), but not in a 128-bit request whose sub-group reads
more than banks / 2 distinct words (``float4`` reads of 8 distinct 16-byte words take 4
wavefronts, of 4 words 2). The
wavefronts are at least ``vector_min_wavefronts`` for
128-bit accesses; their bank conflicts are the wavefronts each phase takes beyond one, and
the ideal wavefronts the rest: a conflict-free 128-bit load of 512 distinct bytes has 4
wavefronts and 0 conflicts; 32 work-items reading one 16-byte word take 2 and 0; 8 distinct
16-byte words 32 bytes apart, each read by 4 work-items, 8 and 4 (Nsight Compute's
``l1tex__data_bank_conflicts_pipe_lsu_mem_shared`` counts wavefronts beyond the ideal
ones: "Shared Memory" in the Nsight Compute Kernel Profiling Guide).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from tiletraffic.simulator.observers.counters import (AccessEvent, Observer, compact_mask,
                                                      same_in_every_group)
from tiletraffic.simulator.ir.nodes import FLOAT_BYTES


@dataclass
class MemoryCounts:
    """Requests, sectors, lines (global) and wavefronts, bank conflicts (local).

    Keys of the per-buffer dicts are ``"<buffer>:<load|store>"``.
    """

    global_load_requests: int = 0
    global_store_requests: int = 0
    global_load_sectors: int = 0
    global_store_sectors: int = 0
    global_load_lines: int = 0
    global_store_lines: int = 0
    local_load_requests: int = 0
    local_store_requests: int = 0
    local_load_wavefronts: int = 0
    local_store_wavefronts: int = 0
    local_bank_conflicts: int = 0
    local_load_bank_conflicts: int = 0
    local_store_bank_conflicts: int = 0
    requests_by_buffer: dict = field(default_factory=dict)
    sectors_by_buffer: dict = field(default_factory=dict)

    @property
    def global_load_sectors_per_request(self) -> float:
        return self.global_load_sectors / self.global_load_requests if \
            self.global_load_requests else 0.0

    def to_dict(self) -> dict:
        d = {k: v for k, v in self.__dict__.items() if not isinstance(v, dict)}
        d["global_load_sectors_per_request"] = self.global_load_sectors_per_request
        d["requests_by_buffer"] = dict(self.requests_by_buffer)
        d["sectors_by_buffer"] = dict(self.sectors_by_buffer)
        return d


def _add(counts: MemoryCounts, prefix: str, **amounts: int) -> None:
    """``counts.<prefix>_<name> += amount`` for each amount (prefix e.g. "global_load")."""
    for name, amount in amounts.items():
        field_name = f"{prefix}_{name}"
        setattr(counts, field_name, getattr(counts, field_name) + amount)


def sub_group_rows(values: np.ndarray, mask: np.ndarray, shape, width: int):
    """Reshape (G, L, I) to rows of one sub-group and iteration: (G, S, I, width).

    Masked-off and padding lanes get -1.
    """
    G, L, I = shape
    subgroups = -(-L // width)
    v = np.where(np.broadcast_to(mask, shape), np.broadcast_to(values, shape), -1)
    if subgroups * width != L:
        v = np.concatenate([v, np.full((G, subgroups * width - L, I), -1, v.dtype)], axis=1)
    return v.reshape(G, subgroups, width, I).transpose(0, 1, 3, 2)


def vector_sub_group_rows(values: np.ndarray, ev: AccessEvent, width: int) -> np.ndarray:
    """Rows of one sub-group's vector instruction: (G, S, I, width · vector_width), the
    values of every element its active work-items touch; -1 where inactive."""
    G, L, IW = ev.shape
    v = ev.vector_width
    I = IW // v
    vals = np.broadcast_to(values, ev.shape).reshape(G, L, I, v)
    mask = np.broadcast_to(ev.mask, ev.shape).reshape(G, L, I, v)
    # (G, L*v, I): work-item l's element w at position l*v + w, sub-groups of width*v
    vals = vals.transpose(0, 1, 3, 2).reshape(G, L * v, I)
    mask = mask.transpose(0, 1, 3, 2).reshape(G, L * v, I)
    return sub_group_rows(vals, mask, (G, L * v, I), width * v)


def distinct_per_row(rows: np.ndarray) -> np.ndarray:
    """Distinct non-negative values per row of a (..., width) array."""
    s = np.sort(rows, axis=-1)
    new = s[..., 1:] != s[..., :-1]
    return (s[..., 0] >= 0).astype(np.int64) + ((s[..., 1:] >= 0) & new).sum(axis=-1)


def padded_rows(rows: np.ndarray, multiple: int) -> np.ndarray:
    """``rows`` with inactive entries (-1) appended on the last axis up to a multiple of
    ``multiple`` entries (``rows`` itself when already one)."""
    extra = -rows.shape[-1] % multiple
    if not extra:
        return rows
    pad = np.full(rows.shape[:-1] + (extra,), -1, rows.dtype)
    return np.concatenate([rows, pad], axis=-1)


class _Chain:
    """Consecutive loads of one local array in which every active work-item reads the word
    after the one it read before: ``first`` and ``last`` words, ``mask`` and ``length``
    (words), each a ``(G, L)`` array but ``length``; ``sites``: the statements whose loads
    it holds; ``last_round``: the round (see :meth:`MemoryObserver._chain`) of its last
    load."""

    def __init__(self, event: AccessEvent, words: np.ndarray, mask: np.ndarray,
                 round_: int):
        self.event, self.first, self.last, self.mask, self.length = (
            event, words, words, mask, 1)
        self.sites, self.last_round = {event.site}, round_

    def extends(self, site: str, round_: int, words: np.ndarray, mask: np.ndarray) -> bool:
        """Whether a load of ``site`` in round ``round_`` continues the chain: the same
        active work-items, each reading the word after the chain's last one, and either a
        statement already in the chain (a later iteration) or another statement in the
        same round (the same iteration)."""
        if site not in self.sites and round_ != self.last_round:
            return False
        return bool(np.array_equal(mask, self.mask)
                    and np.array_equal(words[mask], self.last[mask] + 1))

    def add(self, site: str, round_: int, words: np.ndarray) -> None:
        self.length += 1
        self.last, self.last_round = words, round_
        self.sites.add(site)


def paired_positions(first: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Of a chain's ``positions`` left to scalar loads, the starts of the pairs of
    neighbouring positions whose first word is even for every work-item of the batch,
    active or not (one 64-bit load each: the alignment a compiler can prove from the
    address expression, not only from the work-items that happen to execute it)."""
    starts, p = [], 0
    ordered = sorted(set(int(x) for x in positions))
    taken = set(ordered)
    parity = np.asarray(first) % 2
    aligned = (bool((parity == 0).all()), bool((parity == 1).all()))   # by q's parity
    while p < len(ordered):
        q = ordered[p]
        if q + 1 in taken and aligned[q % 2]:
            starts.append(q)
            p += 2
        else:
            p += 1
    return np.array(starts, dtype=np.int64)


LOCAL_CACHE_ENTRIES = 1 << 16
"""Largest local access (index and mask entries) whose figures are remembered per batch."""
LOCAL_CACHE_EVENTS = 4096
"""Most local accesses remembered per batch."""


class MemoryObserver(Observer):
    """Counts requests/sectors/lines and wavefronts/bank conflicts, weighted per work-group.

    Args:
        sub_group_size: work-items per sub-group (32 on NVIDIA).
        sector_bytes, line_bytes: global memory granularities (32 and 128 B on NVIDIA).
        local_banks, bank_bytes: local memory banks (32 banks of 4 B on NVIDIA).
        local_vector_words: words of one vector local load (1: no vector loads).
        vector_min_wavefronts: wavefronts a vector local load takes at least, however few
            distinct words it reads (the device model's value of the same name).
    """

    def __init__(self, sub_group_size: int = 32, sector_bytes: int = 32, line_bytes: int = 128,
                 local_banks: int = 32, bank_bytes: int = 4, local_vector_words: int = 1,
                 vector_min_wavefronts: int = 1):
        self.width = sub_group_size
        self.vector = local_vector_words
        self.vector_min_wavefronts = vector_min_wavefronts
        self.sector_bytes, self.line_bytes = sector_bytes, line_bytes
        self.banks, self.bank_bytes = local_banks, bank_bytes
        self.counts = MemoryCounts()
        self.weights: np.ndarray | None = None
        self._local_seen: dict[tuple, tuple[int, int, int]] = {}
        self._chains: dict[str, list[_Chain]] = {}
        self._rounds: dict[str, int] = {}
        self._round_loads: dict[tuple[str, int], list] = {}

    def on_batch(self, group_index, work_items, weights=None) -> None:
        self._flush_chains()
        self.weights = weights
        # figures of the batch's local accesses by their full description (index, mask,
        # shape, width): a K loop repeats the same local accesses every step
        self._local_seen = {}

    def on_barrier(self, group_index, arrived) -> None:
        self._flush_chains()

    def on_finish(self) -> None:
        self._flush_chains()

    def count_held_loads(self) -> None:
        """Count the local loads held back for merging with later iterations (what a local
        store, a barrier, a new batch and the end do): for an observer of part of a
        launch's statements, called when another statement stores to local memory."""
        self._flush_chains()

    # ------------------------------------------------ loads of consecutive iterations
    def _chain(self, ev: AccessEvent) -> None:
        """Take a local load of loop iterations executed one at a time (or in blocks,
        ``merge_iterations`` false), as the build's compiler reads it. Each statement's
        executions since the last store, barrier or batch are numbered (its *rounds*: the
        iterations of its loop); an execution that reads the words another execution of
        the same round already read, for the same active work-items, is not counted (the
        compiler reuses the value). Each other execution extends the open
        :class:`_Chain` of the array whose every active work-item read the word before
        (same mask), where that chain holds the same statement (a later iteration) or
        ended in the same round (another statement of the iteration), or opens one.
        Chains are counted when they close (:meth:`_flush_chains`: a local store, a
        barrier, a new batch, the end)."""
        G, L, I = ev.shape
        words = np.broadcast_to(np.asarray(ev.index, dtype=np.int64), ev.shape)
        mask = np.broadcast_to(np.asarray(ev.mask, dtype=bool), ev.shape)
        open_chains = self._chains.setdefault(ev.array, [])
        first_round = self._rounds.get(ev.site, 0)
        self._rounds[ev.site] = first_round + I
        for it in range(I):
            w, m = words[:, :, it], mask[:, :, it]
            if not m.any():
                continue
            round_ = first_round + it
            loaded = self._round_loads.setdefault((ev.array, round_), [])
            if any(np.array_equal(m, pm) and np.array_equal(w[m], pw[m]) for pw, pm in loaded):
                continue
            loaded.append((w, m))
            for ch in open_chains:
                if ch.extends(ev.site, round_, w, m):
                    ch.add(ev.site, round_, w)
                    break
            else:
                open_chains.append(_Chain(ev, w, m, round_))

    def _flush_chains(self) -> None:
        """Count every open chain: each run of ``local_vector_words`` consecutive words
        that starts at a multiple of it for every active work-item is one vector load
        (:meth:`_vector_load`); after at least one such run, the words after the last run
        are one more vector load where its words lie inside the array for every active
        work-item (as :meth:`_vector_runs_and_rest`); of the chain's other words, each two
        neighbours whose first is even for every work-item (:func:`paired_positions`) are
        one 64-bit load, the rest scalar loads."""
        chains, self._chains = self._chains, {}
        self._rounds, self._round_loads = {}, {}
        v = self.vector
        for ch in (c for site in chains.values() for c in site):
            first = np.where(ch.mask, ch.first, 0)
            offsets = np.unique((first % v)[ch.mask])
            start = (v - int(offsets[0])) % v if offsets.size == 1 else ch.length
            runs = max(0, (ch.length - start) // v)
            end = start + runs * v
            if runs and end < ch.length and \
                    (ch.first[ch.mask] + end + v <= ch.event.array_size).all():
                end += v
            vector = np.arange(start, end)
            rest = np.setdiff1d(np.arange(ch.length), vector)
            pairs = paired_positions(ch.first, rest)
            scalar = np.setdiff1d(rest, np.concatenate([pairs, pairs + 1]))
            for positions, merged in ((vector, True), (scalar, False)):
                if positions.size == 0:
                    continue
                index = ch.first[:, :, None] + positions
                part = dataclasses.replace(
                    ch.event, index=index, mask=ch.mask[:, :, None],
                    shape=index.shape, merge_iterations=merged)
                self._count_local(part, index * FLOAT_BYTES)
            if pairs.size:
                index = ch.first[:, :, None] + (pairs[:, None] + np.arange(2)).ravel()
                part = dataclasses.replace(ch.event, index=index, mask=ch.mask[:, :, None],
                                           shape=index.shape, vector_width=2)
                self._count_local(part, index * FLOAT_BYTES)

    def _weighted(self, per_row: np.ndarray) -> int:
        per_group = per_row.reshape(per_row.shape[0], -1).sum(axis=1)
        if self.weights is None:
            return int(per_group.sum())
        return int(per_group @ self.weights)

    def on_access(self, ev: AccessEvent) -> None:
        if not np.any(ev.mask):
            return
        byte = np.asarray(ev.index, dtype=np.int64) * ev.element_bytes
        c = self.counts
        key = f"{ev.array}:{ev.direction}"
        if ev.space == "global":
            if ev.vector_width > 1:
                rows = vector_sub_group_rows(byte, ev, self.width)
                requests = self._weighted((rows >= 0).any(axis=-1))
                sectors = self._weighted(distinct_per_row(np.where(
                    rows >= 0, rows // self.sector_bytes, -1)))
                lines = self._weighted(distinct_per_row(np.where(
                    rows >= 0, rows // self.line_bytes, -1)))
            else:
                active = sub_group_rows(np.zeros(1, dtype=np.int64), ev.mask, ev.shape,
                                        self.width)
                requests = self._weighted((active >= 0).any(axis=-1))
                sectors = self._weighted(distinct_per_row(sub_group_rows(
                    byte // self.sector_bytes, ev.mask, ev.shape, self.width)))
                lines = self._weighted(distinct_per_row(sub_group_rows(
                    byte // self.line_bytes, ev.mask, ev.shape, self.width)))
            _add(c, f"global_{ev.direction}", requests=requests, sectors=sectors, lines=lines)
            c.requests_by_buffer[key] = c.requests_by_buffer.get(key, 0) + requests
            c.sectors_by_buffer[key] = c.sectors_by_buffer.get(key, 0) + sectors
            return
        if ev.direction == "store":
            self._flush_chains()
        elif self.vector > 1 and ev.vector_width == 1 and (not ev.merge_iterations
                                                            or ev.shape[2] == 1):
            self._chain(ev)
            return
        self._count_local(ev, byte)

    def _count_local(self, ev: AccessEvent, byte: np.ndarray) -> None:
        """Add a local access's requests, wavefronts and bank conflicts to the counts."""
        c = self.counts
        index, mask = np.asarray(ev.index), compact_mask(np.asarray(ev.mask))
        if mask is not ev.mask:
            ev = dataclasses.replace(ev, mask=mask)
        if index.size + mask.size <= LOCAL_CACHE_ENTRIES:
            seen = (ev.direction, ev.vector_width, ev.merge_iterations, ev.shape,
                    index.dtype.str, index.shape, index.tobytes(), mask.shape, mask.tobytes())
            found = self._local_seen.get(seen)
            if found is None:
                found = self._local_figures(ev, byte)
                if len(self._local_seen) < LOCAL_CACHE_EVENTS:
                    self._local_seen[seen] = found
        else:
            found = self._local_figures(ev, byte)
        requests, wavefronts, ideal = found
        conflicts = wavefronts - ideal
        _add(c, f"local_{ev.direction}", requests=requests, wavefronts=wavefronts,
             bank_conflicts=conflicts)
        c.local_bank_conflicts += conflicts

    def _local_figures(self, ev: AccessEvent, byte: np.ndarray) -> tuple[int, int, int]:
        """:meth:`_local`; when neither index nor mask depends on the work-group, computed
        for one work-group and weighted by all of the batch's (the same integers: every
        work-group's figures are equal)."""
        G = ev.shape[0]
        if G == 1 or not (same_in_every_group(ev.index) and same_in_every_group(ev.mask)):
            return self._local(ev, byte)
        weights = self.weights
        self.weights = np.array([G if weights is None else int(weights.sum())])
        try:
            return self._local(dataclasses.replace(ev, shape=(1,) + ev.shape[1:]), byte)
        finally:
            self.weights = weights

    def _local(self, ev: AccessEvent, byte: np.ndarray) -> tuple[int, int, int]:
        """Requests, wavefronts and ideal wavefronts of a local access."""
        active = sub_group_rows(np.zeros(1, dtype=np.int64), ev.mask, ev.shape, self.width)
        requests = self._weighted((active >= 0).any(axis=-1))
        ideal = requests
        if ev.vector_width > 1:
            requests, wavefronts, ideal = self._explicit_vector(ev, byte // self.bank_bytes)
        elif ev.direction == "load" and self.vector > 1 and ev.merge_iterations and \
                self._contiguous(ev):
            requests, wavefronts, ideal = self._vector_load(ev, byte // self.bank_bytes)
        elif ev.direction == "load" and self.vector > 1 and ev.merge_iterations and \
                ev.shape[2] > self.vector and ev.shape[2] % self.vector:
            return self._vector_runs_and_rest(ev, byte)
        else:
            words = sub_group_rows(byte // self.bank_bytes, ev.mask, ev.shape, self.width)
            wavefronts = self._weighted(self._wavefronts(words))
        return requests, wavefronts, ideal

    def _vector_runs_and_rest(self, ev: AccessEvent, byte: np.ndarray) -> tuple[int, int, int]:
        """A block of I iterations, I > ``local_vector_words`` v and not a multiple of it:
        when its first v·(I // v) iterations are whole vector runs (:meth:`_contiguous`) and
        each active work-item reads on into the last I mod v iterations, those are one more
        vector load where the v words from the first of them lie inside the array for every
        active work-item, else scalar loads; a block whose runs are not whole is scalar."""
        G, L, I = ev.shape
        whole = I // self.vector * self.vector
        index = np.broadcast_to(np.asarray(ev.index), ev.shape)
        mask = np.broadcast_to(np.asarray(ev.mask), ev.shape)

        def part(first: int, stop: int) -> AccessEvent:
            cut = index[:, :, first:stop]
            return dataclasses.replace(ev, index=cut, mask=mask[:, :, first:stop],
                                       shape=cut.shape)

        head, rest = part(0, whole), part(whole, I)
        rest_on = rest.mask[:, :, :1]
        reads_on = (np.array_equal(np.broadcast_to(rest_on, rest.shape), rest.mask)
                    and (rest.index - head.index[:, :, -1:] == np.arange(1, I - whole + 1))
                    [np.broadcast_to(rest_on, rest.shape)].all())
        if not (self._contiguous(head) and reads_on):
            return self._local(dataclasses.replace(ev, merge_iterations=False), byte)
        start = rest.index[:, :, :1]
        if (start + self.vector <= ev.array_size)[rest_on].all():
            rest = dataclasses.replace(
                rest, index=start + np.arange(self.vector),
                mask=np.broadcast_to(rest_on, (G, L, self.vector)), shape=(G, L, self.vector))
        else:
            rest = dataclasses.replace(rest, merge_iterations=False)
        figures = [self._local(p, np.asarray(p.index, dtype=np.int64) * FLOAT_BYTES)
                   for p in (head, rest)]
        return tuple(int(a + b) for a, b in zip(*figures))

    def _contiguous(self, ev: AccessEvent) -> bool:
        """Whether every work-item reads consecutive, vector-aligned words along the
        iteration axis, in whole runs of ``local_vector_words`` iterations."""
        G, L, I = ev.shape
        v = self.vector
        index = np.asarray(ev.index)
        if I % v or index.ndim < 3 or index.shape[2] != I:
            return False
        runs = index.reshape(index.shape[:2] + (I // v, v))
        mask = np.broadcast_to(ev.mask, ev.shape).reshape(G, L, I // v, v)
        whole = (mask.all(axis=-1) | ~mask.any(axis=-1)).all()
        return bool(whole and (np.diff(runs, axis=-1) == 1).all() and (runs[..., 0] % v == 0).all())

    def _vector_load(self, ev: AccessEvent, words: np.ndarray) -> tuple[int, int, int]:
        """Requests, wavefronts and ideal wavefronts when each run of ``v`` iterations is
        one vector load."""
        G, L, I = ev.shape
        v = self.vector
        shape = (G, L, I // v)
        first = np.broadcast_to(words, ev.shape).reshape(G, L, I // v, v)[..., 0]
        mask = np.broadcast_to(ev.mask, ev.shape).reshape(G, L, I // v, v)[..., 0]
        active = sub_group_rows(np.zeros(1, dtype=np.int64), mask, shape, self.width)
        requests = self._weighted((active >= 0).any(axis=-1))
        lanes = sub_group_rows(first, mask, shape, self.width)        # (G, S, I/v, W)
        expanded = np.where(lanes[..., None] >= 0, lanes[..., None] + np.arange(v), -1)
        wavefronts, ideal = self._vector_load_wavefronts(
            expanded.reshape(lanes.shape[:-1] + (-1,)), v)
        return requests, wavefronts, ideal

    def _explicit_vector(self, ev: AccessEvent, words: np.ndarray) -> tuple[int, int, int]:
        """Requests, wavefronts and ideal wavefronts of an explicit local vector access."""
        rows = vector_sub_group_rows(words, ev, self.width)
        requests = self._weighted((rows >= 0).any(axis=-1))
        figures = (self._vector_load_wavefronts if ev.direction == "load"
                   else self._vector_wavefronts)
        wavefronts, ideal = figures(rows, ev.vector_width)
        return requests, wavefronts, ideal

    def _vector_load_wavefronts(self, rows: np.ndarray, vector_words: int) -> tuple[int, int]:
        """(wavefronts, ideal wavefronts) of vector local loads, one per row of word
        indices (-1: inactive), ``vector_words`` v consecutive entries per work-item,
        work-item-major.

        One wavefront returns one word per bank, i.e. one register of a full sub-group, so
        a v-word load is served in v *phases* of ``banks // v`` consecutive work-items (8
        for 128-bit, 16 for 64-bit loads); where every pair of active work-items l and
        l xor 1, or every pair l and l xor 2, reads the same address, their registers are
        packed and the load is served in v / 2 phases of twice as many work-items. A phase
        with an active work-item takes as many wavefronts as the largest number of
        distinct words it reads in one bank (its ideal: one); bank conflicts are the
        wavefronts beyond the ideal ones. 128-bit loads take at least
        ``vector_min_wavefronts``. So 32 work-items reading one float4, or float4s
        that pairs of neighbours share, take 2 wavefronts; 32 distinct consecutive
        float4s take 4; a float4 per work-item l at word 4·(l mod 4) takes 4 (no pair
        shares an address); a 64-bit load of 32 distinct consecutive word pairs takes 2,
        and one whose 16-work-item halves each read one pair, 1.

        Source: NVIDIA Developer Forums, "Unexpected shared memory bank conflict" (the
        thread-pair rule for 128-bit shared loads, and shared memory's return bandwidth
        of one register per cycle), as Nsight Compute counts the wavefronts of LDS.128
        and LDS.64 instructions.
        """
        v = vector_words
        low = self.vector_min_wavefronts if v * self.bank_bytes >= 16 else 1
        rows = padded_rows(rows, 4 * v)
        padded = rows.shape[-1] // v
        address = rows.reshape(rows.shape[:-1] + (padded, v))[..., 0]
        paired = np.zeros(rows.shape[:-1], dtype=bool)
        for step in (1, 2):
            halves = address.reshape(address.shape[:-1] + (padded // (2 * step), 2, step))
            a, b = halves[..., 0, :], halves[..., 1, :]
            paired |= ((a == b) | (a < 0) | (b < 0)).all(axis=(-1, -2))
        lanes = max(1, self.banks // v)
        per_request = np.zeros(rows.shape[:-1], dtype=np.int64)
        ideal = np.zeros(rows.shape[:-1], dtype=np.int64)
        for packed in (False, True):
            phase_entries = lanes * v * (2 if packed else 1)
            cut = padded_rows(rows, phase_entries)
            w = self._wavefronts(cut.reshape(cut.shape[:-1] + (-1, phase_entries)))
            chosen = paired if packed else ~paired
            per_request = np.where(chosen, w.sum(axis=-1), per_request)
            ideal = np.where(chosen, (w > 0).sum(axis=-1), ideal)
        any_active = per_request > 0
        ideal = np.where(any_active, np.maximum(ideal, low), 0)
        per_request = np.where(any_active, np.maximum(per_request, low), 0)
        return self._weighted(per_request), self._weighted(ideal)

    def _vector_wavefronts(self, rows: np.ndarray, vector_words: int) -> tuple[int, int]:
        """(wavefronts, ideal wavefronts) of vector requests, one per row of word indices
        (-1: inactive), ``vector_words`` consecutive entries per work-item, work-item-major.

        The sub-group is served in *phases* of ``banks // vector_words`` consecutive
        work-items (8 for 128-bit, 16 for 64-bit accesses: one phase moves at most one word
        per bank); a phase takes as many wavefronts as the largest number of distinct words
        it reads in one bank (:meth:`_wavefronts`), and two neighbouring phases (0 and 1, 2
        and 3) share a single wavefront when together they read at most one distinct word
        per bank. Ideal wavefronts are those without the conflicts inside each phase (the
        wavefronts a phase needs beyond one). Both are at least ``vector_min_wavefronts``
        for 128-bit accesses. A 128-bit request whose sub-group reads more than banks / 2
        distinct words shares no wavefront between phases (8 distinct 16-byte words, each
        read by 4 work-items: 4 wavefronts; 4 distinct, each by 8: 2).

        Source: NVIDIA, GTC 2019 S9593 (cuTENSOR) slides, 128-bit shared-memory accesses
        are processed in quarter-warp phases; the pairing of conflict-free phases is the
        one Nsight Compute's wavefront counts of 128-bit loads show.
        """
        low = self.vector_min_wavefronts if vector_words * self.bank_bytes >= 16 else 1
        lanes = max(1, self.banks // vector_words)
        per_phase_entries = lanes * vector_words
        rows = padded_rows(rows, per_phase_entries)
        phases = rows.shape[-1] // per_phase_entries
        if phases % 2:
            pad = np.full(rows.shape[:-1] + (per_phase_entries,), -1, rows.dtype)
            rows = np.concatenate([rows, pad], axis=-1)
            phases += 1
        by_phase = rows.reshape(rows.shape[:-1] + (phases, per_phase_entries))
        w = self._wavefronts(by_phase)                               # (..., phases)
        pairs = w.reshape(w.shape[:-1] + (phases // 2, 2))
        together = self._wavefronts(
            by_phase.reshape(rows.shape[:-1] + (phases // 2, 2 * per_phase_entries)))
        shared = (together <= 1) & (pairs.max(axis=-1) > 0)
        if vector_words * self.bank_bytes >= 16:
            # 128-bit: pairs share only in a request of at most banks / 2 distinct words
            shared &= (distinct_per_row(rows) <= self.banks // 2)[..., None]
        per_pair = np.where(shared, 1, pairs.sum(axis=-1))
        conflicts = np.maximum(w - 1, 0).sum(axis=-1)
        per_request = per_pair.sum(axis=-1)
        any_active = per_request > 0
        ideal = np.where(any_active, np.maximum(per_request - conflicts, low), 0)
        per_request = np.where(any_active, np.maximum(per_request, low), 0)
        return self._weighted(per_request), self._weighted(ideal)

    def _wavefronts(self, words: np.ndarray) -> np.ndarray:
        """Max distinct words per bank, per request row; 0 for rows with no active lane."""
        s = np.sort(words, axis=-1)
        first = np.ones(s.shape, dtype=bool)
        first[..., 1:] = s[..., 1:] != s[..., :-1]
        distinct = first & (s >= 0)
        rows = np.arange(int(np.prod(s.shape[:-1]))).reshape(s.shape[:-1] + (1,))
        slot = rows * self.banks + (s % self.banks)
        per_bank = np.bincount(slot[distinct], minlength=rows.size * self.banks)
        return per_bank.reshape(-1, self.banks).max(axis=1).reshape(s.shape[:-1])
