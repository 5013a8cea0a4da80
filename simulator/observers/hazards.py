"""Hazards found while simulating: what went wrong, where, and for whom.

The engine and the detectors report hazards to a :class:`HazardLog`. In ``"raise"`` mode the
first hazard raises :class:`HazardError`; in ``"report"`` mode all are collected and the
offending accesses are skipped (masked off), so execution continues deterministically.

One entry per fault, not per execution: reports of the same kind, array and statement
(``site``) are merged, whichever work-group, barrier interval or loop iteration they came
from. A merged entry gives the total count, how many work-groups it involves, the first few
of them (in linear work-group order, dimension 0 fastest) with their own counts, and how
many statement executions it covers; its example (work-group, work-items, index, interval)
is the first one seen.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import asdict, dataclass, field

import numpy as np

HAZARD_KINDS = (
    "out-of-bounds",               # an index outside a dimension of a global buffer or local array
    "barrier-divergence",          # some work-items of a work-group reach a barrier, others do not
    "data-race",                   # two work-items touch one word unordered, one of them storing
    "uninitialized-local-read",    # a read of a local word no work-item of the work-group stored
    "uninitialized-private-read",  # a read of a private variable the work-item never assigned
    "uninitialized-global-read",   # a read of an output element (role out) nothing stored yet
    "unwritten-output",            # output elements no work-item stored
    "misaligned-vector-access",    # a float2/float4 access at an address not a multiple of 8/16
    "integer-division-by-zero",    # an integer / or % whose divisor is 0 for a work-item executing it
)

NAMED_GROUPS = 3
"""Work-groups named, with their counts, in a merged hazard (the total is always given)."""


def element_text(name: str, flat: int, dims: tuple[int, ...]) -> str:
    """``name[i, j]``: element ``flat`` (row-major) of an array declared with extents
    ``dims``, as the array is indexed (``C[0, 8]``, not ``C[8]``)."""
    if not dims or not 0 <= flat < math.prod(dims):
        return f"{name}[{flat}]"
    return f"{name}[{', '.join(str(int(i)) for i in np.unravel_index(flat, dims))}]"


def array_dims(schedule, name: str) -> tuple[int, ...]:
    """Extents of the global or local array ``name`` of ``schedule`` (``()`` if unknown)."""
    params = schedule.param_values
    for a in schedule.arrays:
        if a.name == name:
            return tuple(params[d] for d in a.shape)
    for a in schedule.local_arrays:
        if a.name == name:
            return tuple(d.value for d in a.dims)
    return ()


@dataclass(frozen=True)
class Hazard:
    """One hazard (merged over the executions of one statement, see the module docstring).

    Attributes:
        kind: one of :data:`HAZARD_KINDS`.
        schedule: schedule family.
        array: array or private variable involved (``""`` for barrier divergence and an
            integer division by zero).
        index: element index of the example (-1 when not applicable).
        group_id: work-group id per NDRange dimension of the example (``()``: none).
        local_ids: local (flattened) ids of the work-items of the example (a few).
        epoch: barrier interval of the example: how many barriers its work-group had passed.
        count: how many work-item accesses (or arrivals, or elements) the hazard covers, in
            all work-groups and executions.
        detail: a sentence for people.
        work_groups: how many distinct work-groups are involved (0 when not per work-group).
        group_counts: ``((group id, count), ...)`` of the first :data:`NAMED_GROUPS`
            work-groups involved, in linear order.
        occurrences: statement executions merged into this entry.
        site: what identifies the fault's statement (merge key with kind and array).
    """

    kind: str
    schedule: str
    array: str
    index: int
    group_id: tuple[int, ...]
    local_ids: tuple[int, ...]
    epoch: int
    count: int
    detail: str
    work_groups: int = 0
    group_counts: tuple[tuple[tuple[int, ...], int], ...] = ()
    occurrences: int = 1
    site: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


class HazardError(RuntimeError):
    """Raised by the simulator on the first hazard (default mode ``"raise"``)."""

    def __init__(self, hazard: Hazard):
        super().__init__(f"{hazard.kind} in {hazard.schedule}: {hazard.detail}")
        self.hazard = hazard


@dataclass
class _Entry:
    first: Hazard
    noun: str
    count: int = 0
    occurrences: int = 0
    groups: list = field(default_factory=list)  # [(linear ids, counts), ...]

    def add_groups(self, linear: np.ndarray, counts: np.ndarray) -> None:
        self.groups.append((np.asarray(linear, dtype=np.int64),
                            np.asarray(counts, dtype=np.int64)))
        if len(self.groups) > 64:
            self.groups = [self.per_group()]

    def per_group(self) -> tuple[np.ndarray, np.ndarray]:
        """(linear work-group ids ascending, count of each)."""
        if not self.groups:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        ids = np.concatenate([g for g, _ in self.groups])
        counts = np.concatenate([c for _, c in self.groups])
        keep = counts > 0
        unique, inverse = np.unique(ids[keep], return_inverse=True)
        return unique, np.bincount(inverse, weights=counts[keep],
                                   minlength=len(unique)).astype(np.int64)


@dataclass
class HazardLog:
    """Collects hazards; ``mode`` is ``"raise"`` (stop at the first) or ``"report"``.

    Attributes:
        num_groups: work-groups per NDRange dimension of the launch, to name work-groups by
            their id per dimension (``None``: ids are shown linear, as ``(id,)``).
    """

    mode: str = "raise"
    num_groups: tuple[int, ...] | None = None
    _entries: dict = field(default_factory=dict, repr=False)
    reports: int = field(default=0, repr=False)
    """Reports recorded so far (:meth:`add` calls), merged or not."""

    def __post_init__(self) -> None:
        if self.mode not in ("raise", "report"):
            raise ValueError(f"hazard mode must be 'raise' or 'report', got {self.mode!r}")

    def group_id(self, linear: int) -> tuple[int, ...]:
        """Work-group id per dimension of linear id ``linear`` (dimension 0 fastest)."""
        if self.num_groups is None:
            return (int(linear),)
        out = []
        for n in self.num_groups:
            out.append(int(linear % n))
            linear //= n
        return tuple(out)

    def add(self, hazard: Hazard, groups: tuple[np.ndarray, np.ndarray] | None = None,
            noun: str = "such accesses") -> None:
        """Record one report of ``hazard`` (its ``detail``: the example, without counts).

        Args:
            groups: ``(linear work-group ids, count of each)`` of this report; ``None``: all
                of ``hazard.count`` in ``hazard.group_id`` (or no work-group, when it is
                ``()``).
            noun: what ``count`` counts, for the sentence (``"racing accesses"``, ...).

        Raises:
            HazardError: in ``"raise"`` mode.
        """
        self.reports += 1
        key = (hazard.kind, hazard.array, hazard.site or hazard.detail)
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = _Entry(hazard, noun)
        entry.count += hazard.count
        entry.occurrences += 1
        if groups is not None:
            entry.add_groups(*groups)
        elif hazard.group_id:
            entry.add_groups([self._linear(hazard.group_id)], [hazard.count])
        if self.mode == "raise":
            raise HazardError(self._merged(entry, stopped=True))

    def _linear(self, gid: tuple[int, ...]) -> int:
        if self.num_groups is None:
            return int(gid[0])
        linear, scale = 0, 1
        for g, n in zip(gid, self.num_groups):
            linear += g * scale
            scale *= n
        return linear

    @property
    def hazards(self) -> list[Hazard]:
        """The merged hazards, in the order their first report came."""
        return [self._merged(e) for e in self._entries.values()]

    def _merged(self, entry: _Entry, stopped: bool = False) -> Hazard:
        """``entry`` as one hazard, its counts summed over the statement's executions;
        ``stopped``: the execution stops at this report (``"raise"``), which the counts
        then say they end at."""
        ids, counts = entry.per_group()
        named = tuple((self.group_id(int(i)), int(c))
                      for i, c in zip(ids[:NAMED_GROUPS], counts[:NAMED_GROUPS]))
        detail = entry.first.detail
        if len(ids):
            listing = ", ".join(f"{g}: {c}" for g, c in named)
            more = f", ... ({len(ids) - len(named)} more)" if len(ids) > len(named) else ""
            detail += (f"; {entry.count} {entry.noun} in {len(ids)} work-group(s) "
                       f"({listing}{more})")
        if entry.occurrences > 1:
            detail += f", over {entry.occurrences} executions of the statement"
        if stopped and len(ids):
            detail += ", counted up to this hazard, where the simulation stopped"
        return dataclasses.replace(entry.first, count=entry.count, detail=detail,
                                   work_groups=len(ids), group_counts=named,
                                   occurrences=entry.occurrences)
