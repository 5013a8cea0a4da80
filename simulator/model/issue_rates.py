"""The measured issue rate of a compute unit's schedulers by resident sub-groups per
scheduler: a device-model table (``issue_rates``) the time model interpolates.

``tiletraffic calibrate``'s ``issue_rate`` benchmark measures, with one work-group per
compute unit of ``w`` sub-groups per scheduler (sub-partition), the sub-group instructions
each scheduler issues per cycle for two instruction mixes of a register-tiled loop:

* ``local_128``: per depth of the tile, 4 float4 (128-bit) local loads and 64 FMAs (a
  work-item's 8 x 8 outputs from 8 values of A and 8 of B);
* ``local_32``: per depth, 16 scalar (32-bit) local loads and the same 64 FMAs;

each with a barrier per 8 depths, as the local-memory GEMMs run. In a model file (``value``
a table; ``calibrate`` writes it inline, on one line)::

    [values.issue_rates]
    source = "measured"
    ref = "tiletraffic calibrate: issue_rate (...)"

    [values.issue_rates.value]
    warps_per_scheduler = [1, 2, 3, 4, 8]
    local_128 = [0.45, 0.7, 0.8, 0.85, 0.9]
    local_32 = [0.5, 0.75, 0.85, 0.9, 0.92]

Rates are sub-group instructions per cycle per scheduler, in the instructions the time
model counts for the benchmark's loop (FMAs, local loads, the barrier, and the loop's
counter, compare and branch). :meth:`IssueRates.rate` interpolates linearly in the sub-groups
per scheduler, holds the end values outside the measured range, and weighs the two columns
by the share of a kernel's local loads that are vector loads.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from tiletraffic.simulator.model.file_values import shown

COLUMNS = ("local_128", "local_32")
"""The instruction mixes of the table (module docstring)."""
KEYS = ("warps_per_scheduler", *COLUMNS)


@dataclass(frozen=True)
class IssueRates:
    """Sub-group instructions per cycle per scheduler at each of ``warps_per_scheduler``
    (ascending, positive) resident sub-groups per scheduler, for 128-bit (``local_128``) and
    32-bit (``local_32``) local loads beside FMAs; every rate positive and finite."""

    warps_per_scheduler: tuple[float, ...]
    local_128: tuple[float, ...]
    local_32: tuple[float, ...]

    def rate(self, warps: float, vector_share: float) -> float:
        """The issue rate at ``warps`` sub-groups per scheduler (linear between the measured
        points, the end values outside them) for a kernel whose local loads are
        ``vector_share`` (0..1) 128-bit loads: ``vector_share`` x the ``local_128`` column +
        the rest x the ``local_32`` column."""
        share = min(1.0, max(0.0, vector_share))
        return (share * _interpolate(self.warps_per_scheduler, self.local_128, warps)
                + (1 - share) * _interpolate(self.warps_per_scheduler, self.local_32, warps))

    @property
    def largest(self) -> float:
        """The largest rate of the table."""
        return max(*self.local_128, *self.local_32)

    def to_table(self) -> dict[str, list]:
        """The table as a model file holds it (keys :data:`KEYS`)."""
        return {"warps_per_scheduler": [_plain(w) for w in self.warps_per_scheduler],
                "local_128": list(self.local_128), "local_32": list(self.local_32)}

    def __format__(self, spec: str) -> str:
        """``a table at 1, 2, 3, 4, 8 sub-groups per scheduler (largest 0.91)``, the
        largest rate in ``spec``'s format."""
        warps = ", ".join(str(_plain(w)) for w in self.warps_per_scheduler)
        return (f"a table at {warps} sub-groups per scheduler (largest "
                f"{self.largest:{spec or 'g'}})")


def _plain(w: float) -> int | float:
    return int(w) if float(w).is_integer() else float(w)


def _interpolate(xs: tuple[float, ...], ys: tuple[float, ...], x: float) -> float:
    if x <= xs[0]:
        return ys[0]
    for (x0, y0), (x1, y1) in zip(zip(xs, ys), zip(xs[1:], ys[1:])):
        if x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return ys[-1]


def _numbers(table: dict, key: str, problems: list[str], where: str) -> tuple[float, ...]:
    got = table.get(key)
    if isinstance(got, (list, tuple)) and got:
        bad = next(((i, x) for i, x in enumerate(got, 1) if not (
            isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
            and x > 0)), None)
        if bad is None:
            return tuple(float(x) for x in got)
        what = f"{shown(bad[1])} (element {bad[0]})"
    else:
        what = "an empty list" if isinstance(got, (list, tuple)) else \
            "nothing (the key is missing)" if key not in table else shown(got)
    problems.append(f"{where}.{key}: must be a non-empty list of positive finite numbers, "
                    f"got {what}")
    return ()


def issue_rates_from_table(table: Any, problems: list[str],
                           where: str = "values.issue_rates.value") -> IssueRates | None:
    """An :class:`IssueRates` from its file table (or an :class:`IssueRates`, returned as
    it is); None with a message appended to ``problems`` (naming ``where``, the key and
    the value) when a key is missing or unknown, a list is empty, holds a value that is
    not a positive finite number, the lists differ in length, or the sub-groups per
    scheduler are not ascending."""
    if isinstance(table, IssueRates):
        return table
    if not isinstance(table, dict):
        problems.append(f"{where}: must be a table with {', '.join(KEYS)}, got {shown(table)}")
        return None
    before = len(problems)
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        problems.append(f"{where}: unknown key(s) {', '.join(map(repr, unknown))} (known: "
                        f"{', '.join(KEYS)})")
    columns = [_numbers(table, k, problems, where) for k in KEYS]
    if len(problems) > before:
        return None
    warps = columns[0]
    if len({len(c) for c in columns}) != 1:
        problems.append(f"{where}: {', '.join(KEYS)} must be lists of one length, got "
                        f"{', '.join(str(len(c)) for c in columns)}")
        return None
    if any(b <= a for a, b in zip(warps, warps[1:])):
        problems.append(f"{where}.warps_per_scheduler: must be ascending, got "
                        f"{', '.join(f'{w:g}' for w in warps)}")
        return None
    return IssueRates(*columns)
