"""Global requests whose work-items' addresses lie many lines apart (strided requests): their
L1 cost where the device model has it, else the declaration that it is outside the model.

One L1 wavefront per line does not price such requests: their cost depends on where their
lines fall in the L1 (a row stride that is a multiple of the 128-byte line, every line read at
the same offset, costs more than one that is not), and NVIDIA documents neither how the L1
places lines in sets nor how many tags it looks up per cycle. ``tiletraffic calibrate``'s
``strided_read`` measures what such requests cost (rows whose words fall in 1, 2, ... 32 of
the 32 banks) and fits cycles = a x lines + b x the lines of the busiest bank (``l1_strided_cycles_per_line``, ``l1_strided_cycles_per_busiest_bank_line``); with
those the model charges :func:`strided_l1_cycles`, without them (both 0) it flags the
launches (:func:`strided_declaration`). The same fit prices every request of 2 to 7 lines
(multi-line requests: a GEMM's rows of A, a run straddling two lines, a ``float4`` row): the
cost Nsight Compute counts for them as L1 data-pipe wavefronts.
With ``strided_dram_fill_sub_group_cycles_per_line`` (``strided_read_dram``) the L1 lines
that strided loads fill from DRAM are a ceiling of their own
(:func:`strided_dram_fill_cycles`). A request counts as strided when its active addresses
touch at least :data:`STRIDED_MIN_LINES` distinct lines (a contiguous request of
32 work-items touches at most 5, a ``float4`` one included); it is aligned when every
work-item's first address sits at the same offset within its 128-byte line (a row stride
that is a multiple of 128 B). The threshold (declaration, fills from DRAM) lies between the
4 lines of gemm-naive and gemm-tiled with B = 8 (four rows of A per sub-group, aligned) and
the 32 of matvec-naive (one row per work-item).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tiletraffic.simulator.observers.counters import AccessEvent, Observer
from tiletraffic.simulator.observers.memory import (distinct_per_row, sub_group_rows,
                                                    vector_sub_group_rows)

STRIDED_MIN_LINES = 8
"""Lines a request's addresses must span to count as strided."""

STRIDED_WARN_SHARE = 0.1
"""Share of a launch's L1 wavefronts from strided requests above which its L1 time is
declared outside what the model predicts."""


@dataclass
class StridedRequests:
    """Lines (L1 wavefronts) of strided global requests, weighted by work-group classes:
    ``aligned_lines`` of those whose addresses share one offset within their lines (a row
    stride that is a multiple of the line), ``other_lines`` of the rest;
    ``busiest_bank_lines``: over the same requests, the sum of the distinct lines whose
    touched words lie in the request's busiest 4-byte bank (a request of 32 lines at one
    offset: 32; at 32 different word offsets: 1); ``arrays``: the global arrays such
    requests load (strided stores fill no L1 lines: an array they write is not named);
    ``load_requests`` and ``strided_load_requests``: per array, its sub-group load requests
    and those of them that are strided (what :meth:`strided_share` divides)."""

    aligned_lines: int = 0
    other_lines: int = 0
    busiest_bank_lines: int = 0
    arrays: set[str] = field(default_factory=set)
    load_requests: dict[str, int] = field(default_factory=dict, compare=False)
    strided_load_requests: dict[str, int] = field(default_factory=dict, compare=False)
    multi_lines: int = field(default=0, compare=False)
    multi_busiest_bank_lines: int = field(default=0, compare=False)
    """Lines and busiest-bank lines, as above, of the requests that touch 2 to
    :data:`STRIDED_MIN_LINES` - 1 lines (a GEMM's rows of A, a run of B straddling two
    lines, a ``float4`` row of 4 lines): :func:`strided_l1_cycles` charges them as it
    charges the strided ones."""

    def strided_share(self, array: str) -> float:
        """The share of ``array``'s load requests that are strided (0 when it has none)."""
        total = self.load_requests.get(array, 0)
        return self.strided_load_requests.get(array, 0) / total if total else 0.0

    @property
    def lines(self) -> int:
        return self.aligned_lines + self.other_lines

    @property
    def modelled_lines(self) -> int:
        """The lines of every request of two or more lines (strided and multi-line)."""
        return self.lines + self.multi_lines


def busiest_bank_lines(rows: np.ndarray, line_bytes: int = 128, bank_bytes: int = 4,
                       banks: int = 32) -> np.ndarray:
    """Per request (last axis: the byte addresses of its active elements, -1 inactive), the
    most distinct lines any one bank holds a touched word of: bank = (byte // ``bank_bytes``)
    mod ``banks``, as for local memory. Shape: ``rows.shape[:-1]``."""
    flat = rows.reshape(-1, rows.shape[-1])
    active = flat >= 0
    key = np.where(active, (flat // bank_bytes % banks) * (1 << 40) + flat // line_bytes, -1)
    key = np.sort(key, axis=-1)
    first = key >= 0
    first[:, 1:] &= key[:, 1:] != key[:, :-1]
    per_bank = np.zeros((flat.shape[0], banks), dtype=np.int64)
    r, c = np.nonzero(first)
    np.add.at(per_bank, (r, key[r, c] >> 40), 1)
    return per_bank.max(axis=-1).reshape(rows.shape[:-1])


class StrideObserver(Observer):
    """Counts :class:`StridedRequests` of the global accesses (sub-groups of
    ``sub_group_size`` work-items, lines of ``line_bytes``, ``banks`` banks of
    ``bank_bytes``)."""

    def __init__(self, sub_group_size: int = 32, line_bytes: int = 128,
                 min_lines: int = STRIDED_MIN_LINES, bank_bytes: int = 4, banks: int = 32):
        self.width = sub_group_size
        self.line_bytes = line_bytes
        self.min_lines = min_lines
        self.bank_bytes = bank_bytes
        self.banks = banks
        self.counts = StridedRequests()
        self.weights = None

    def on_batch(self, group_index, work_items, weights=None) -> None:
        self.weights = weights

    def _weighted(self, per_row: np.ndarray) -> int:
        per_group = per_row.reshape(per_row.shape[0], -1).sum(axis=1)
        return int(per_group.sum() if self.weights is None else per_group @ self.weights)

    def on_access(self, ev: AccessEvent) -> None:
        if ev.space != "global" or not np.any(ev.mask):
            return
        byte = np.asarray(ev.index, dtype=np.int64) * ev.element_bytes
        rows = (vector_sub_group_rows(byte, ev, self.width) if ev.vector_width > 1
                else sub_group_rows(byte, ev.mask, ev.shape, self.width))
        active = rows >= 0
        line = rows // self.line_bytes            # -1 // 128 = -1 where inactive
        # runs of one line along the lanes bound the distinct lines from above: a row of one
        # run touches one line (most rows: no sort needed for them)
        change = active[..., 1:] & (~active[..., :-1] | (line[..., 1:] != line[..., :-1]))
        runs = active[..., 0].astype(np.int64) + change.sum(axis=-1)
        load = ev.direction == "load"
        if load:
            self._tally(self.counts.load_requests, ev.array, active.any(axis=-1))
        wide = runs >= 2
        if not wide.any():
            return
        candidates = rows[wide]
        cand_lines = line[wide]
        # every lane active, lines strictly increasing (a row per work-item): all distinct
        rising = (candidates >= 0).all(axis=-1) & (np.diff(cand_lines, axis=-1) > 0).all(axis=-1)
        lines = np.where(rising, cand_lines.shape[-1], 0)
        if not rising.all():
            lines[~rising] = distinct_per_row(np.where(candidates[~rising] >= 0,
                                                       cand_lines[~rising], -1))
        starts = candidates[..., ::ev.vector_width]   # each work-item's first element
        offset = np.where(starts >= 0, starts % self.line_bytes, -1)
        same_offset = offset.max(axis=-1) == np.where(starts >= 0, offset,
                                                      self.line_bytes).min(axis=-1)
        strided = lines >= self.min_lines
        multi = (lines >= 2) & ~strided
        bank = busiest_bank_lines(candidates, self.line_bytes, self.bank_bytes, self.banks)

        def rows_of(values: np.ndarray) -> np.ndarray:
            """Per-candidate ``values`` back on every row (0 for the rows not wide)."""
            per_row = np.zeros(wide.shape, dtype=np.int64)
            per_row[wide] = values
            return per_row

        c = self.counts
        c.aligned_lines += self._weighted(rows_of(np.where(strided & same_offset, lines, 0)))
        c.other_lines += self._weighted(rows_of(np.where(strided & ~same_offset, lines, 0)))
        c.busiest_bank_lines += self._weighted(rows_of(np.where(strided, bank, 0)))
        c.multi_lines += self._weighted(rows_of(np.where(multi, lines, 0)))
        c.multi_busiest_bank_lines += self._weighted(rows_of(np.where(multi, bank, 0)))
        if strided.any() and load:
            c.arrays.add(ev.array)
            self._tally(c.strided_load_requests, ev.array, rows_of(strided))

    def _tally(self, totals: dict[str, int], array: str, per_row: np.ndarray) -> None:
        totals[array] = totals.get(array, 0) + self._weighted(per_row.astype(np.int64))


class StridedRequestWarning(UserWarning):
    """A launch's L1 time rests on strided requests, which the model does not predict."""


STRIDED_METHOD = ("l1: requests of 2 or more lines at l1_strided_cycles_per_line per line + "
                  "l1_strided_cycles_per_busiest_bank_line per line of their busiest bank")
"""``methods["l1_strided_requests"]`` when the device model has the strided-request cost."""


def strided_l1_cycles(strided: StridedRequests, cycles_per_line: float,
                      cycles_per_busiest_bank_line: float) -> float | None:
    """Cycles a compute unit's L1 spends on the requests of two or more lines (strided and
    multi-line, :attr:`StridedRequests.modelled_lines`): ``cycles_per_line`` x their lines +
    ``cycles_per_busiest_bank_line`` x the lines of their busiest banks
    (:class:`StridedRequests`; the fit of ``tiletraffic calibrate``'s ``strided_read``,
    :func:`tiletraffic.analysis.calibrate.calibrate.strided_fit`). ``None`` when both costs
    are 0 (not modelled: the caller charges one wavefront per line and declares strided
    launches)."""
    if cycles_per_line <= 0 and cycles_per_busiest_bank_line <= 0:
        return None
    return (cycles_per_line * strided.modelled_lines
            + cycles_per_busiest_bank_line * (strided.busiest_bank_lines
                                              + strided.multi_busiest_bank_lines))


STRIDED_DRAM_METHOD = ("l1: the lines strided requests fill from DRAM at "
                       "strided_dram_fill_sub_group_cycles_per_line / resident sub-groups")
"""``methods["l1_strided_dram"]`` when the device model has the cost of those fills."""


def strided_dram_fill_cycles(fill_lines: float, l2_miss_fraction: float,
                             sub_group_cycles_per_line: float, sub_groups: int) -> float:
    """Cycles a compute unit needs to fill the ``fill_lines`` L1 lines of its strided
    requests' arrays when a ``l2_miss_fraction`` of them come from DRAM: each such line costs
    ``sub_group_cycles_per_line`` (``tiletraffic calibrate``'s ``strided_read_dram``: a
    sub-group's cycles per line filled, measured with a known number of resident sub-groups)
    shared by the unit's ``sub_groups`` resident sub-groups, whose fills overlap (Little's
    law: lines in flight = sub-groups x a sub-group's lines in flight). A floor, not an
    addition: the L1's own time for the requests (:func:`strided_l1_cycles`) overlaps the
    fills.

    Raises:
        ValueError: ``sub_groups`` < 1, or a negative count or fraction.
    """
    if sub_groups < 1 or fill_lines < 0 or not 0 <= l2_miss_fraction <= 1:
        raise ValueError(f"strided fills: sub_groups = {sub_groups} (at least 1), fill_lines "
                         f"= {fill_lines} (at least 0), l2_miss_fraction = "
                         f"{l2_miss_fraction} (0..1)")
    return fill_lines * l2_miss_fraction * sub_group_cycles_per_line / sub_groups


def strided_declaration(strided: StridedRequests, l1_wavefronts: int) -> str | None:
    """The ``methods["l1_strided_requests"]`` text when strided requests make at least
    :data:`STRIDED_WARN_SHARE` of ``l1_wavefronts``, else ``None``: their share, the kind
    of stride, and that a device model without strided-request costs (both 0, the caller
    declares only then) does not predict their time, with the command that measures them."""
    if l1_wavefronts <= 0 or strided.lines < STRIDED_WARN_SHARE * l1_wavefronts:
        return None
    share = strided.lines / l1_wavefronts
    kind = ("their lines at one offset: a row stride that is a multiple of 128 B"
            if strided.aligned_lines >= strided.other_lines else
            "their lines at different offsets: a row stride that is not a multiple of 128 B")
    return (f"outside the model: {share:.0%} of the L1 wavefronts come from requests whose "
            f"addresses touch {STRIDED_MIN_LINES} or more lines ({kind}); the L1 time charges "
            "them one wavefront per line, which does not predict their time: this device "
            "model has no strided-request costs (l1_strided_cycles_per_line and "
            "l1_strided_cycles_per_busiest_bank_line are 0; `tiletraffic calibrate` "
            "measures them on the device)")
