"""Hazards found while simulating: what went wrong, where, and for whom.

The engine reports hazards to a :class:`HazardLog`. In ``"raise"`` mode the first hazard
raises :class:`HazardError`; in ``"report"`` mode all are collected and the offending
accesses are skipped (masked off), so execution continues deterministically.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

HAZARD_KINDS = (
    "out-of-bounds",        # an index outside a dimension of a global buffer or local array
    "barrier-divergence",   # some work-items of a work-group reach a barrier, others do not
    "data-race",            # two work-items touch one local word in one barrier interval
    "uninitialized-read",   # a read of local memory or a private variable nothing wrote
    "unwritten-output",     # output elements no work-item stored
)


@dataclass(frozen=True)
class Hazard:
    """One hazard.

    Attributes:
        kind: one of :data:`HAZARD_KINDS`.
        schedule: schedule family.
        array: array involved (``""`` for barrier divergence).
        index: element index involved (-1 when not applicable).
        group_id: work-group id per NDRange dimension.
        local_ids: local (flattened) ids of the work-items involved (a few, for reading).
        epoch: barrier interval: how many barriers the work-group had passed.
        count: how many work-item accesses (or arrivals) the hazard covers.
        detail: a sentence for people.
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

    def to_dict(self) -> dict:
        return asdict(self)


class HazardError(RuntimeError):
    """Raised by the simulator on the first hazard (default mode ``"raise"``)."""

    def __init__(self, hazard: Hazard):
        super().__init__(f"{hazard.kind} in {hazard.schedule}: {hazard.detail}")
        self.hazard = hazard


@dataclass
class HazardLog:
    """Collects hazards; ``mode`` is ``"raise"`` (stop at the first) or ``"report"``."""

    mode: str = "raise"
    hazards: list[Hazard] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.mode not in ("raise", "report"):
            raise ValueError(f"hazard mode must be 'raise' or 'report', got {self.mode!r}")

    def add(self, hazard: Hazard) -> None:
        if self.mode == "raise":
            raise HazardError(hazard)
        self.hazards.append(hazard)
