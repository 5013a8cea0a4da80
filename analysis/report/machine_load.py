"""How busy the machine was while a report's kernels were timed, and whether its times are to
be trusted.

The load is the CPU time that other processes used: the machine's busy time from
``/proc/stat`` (all CPUs: user, nice, system, irq, softirq and steal) less this process's
own (all its threads, and its children that have finished), over the CPU time the machine
had (wall time × CPUs). A report's times are not to be trusted when that share reaches
:data:`BUSY_SHARE`, or when the spreads of its measured cases are wide
(:data:`WIDE_MEDIAN_SPREAD`, :data:`WIDE_CASE_SPREAD`): a device's time varies little
between launches and rounds when nothing else runs.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from statistics import median

BUSY_SHARE = 0.10
"""Share of the machine's CPU time used by other processes while timing from which the
machine counts as busy."""
WIDE_MEDIAN_SPREAD = 0.15
"""Spread over median time of the median measured case from which the spreads count as
wide."""
WIDE_CASE_SPREAD = 0.5
"""Spread over median time from which one measured case's spread counts as wide."""


@dataclass(frozen=True)
class CpuClock:
    """One reading of the machine's and this process's CPU time.

    Attributes:
        wall_s: ``time.monotonic()`` (seconds).
        machine_busy_s: CPU seconds all CPUs of the machine spent busy since boot.
        own_s: CPU seconds of this process (user and system, all threads, and its children
            that have finished).
        cpus: CPUs of the machine (``/proc/stat``'s ``cpuN`` lines).
    """

    wall_s: float
    machine_busy_s: float
    own_s: float
    cpus: int


def own_cpu_s() -> float:
    """CPU seconds of this process: user and system, all threads, finished children."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def read_cpu_clock(stat_path: str | os.PathLike = "/proc/stat",
                   own_s: float | None = None) -> CpuClock | None:
    """The machine's busy CPU time from ``stat_path`` (Linux's ``/proc/stat``) and this
    process's (``own_s``; default :func:`own_cpu_s`); ``None`` where the file is missing or
    unreadable (not Linux)."""
    try:
        lines = Path(stat_path).read_text().splitlines()
        fields = next(line.split() for line in lines if line.startswith("cpu "))
        jiffies = [int(x) for x in fields[1:]]
    except (OSError, StopIteration, ValueError):
        return None
    # user nice system idle iowait irq softirq steal (guest time is inside user)
    busy = sum(jiffies[i] for i in (0, 1, 2, 5, 6, 7) if i < len(jiffies))
    cpus = sum(1 for line in lines if line.startswith("cpu") and line[3:4].isdigit())
    try:
        hz = os.sysconf("SC_CLK_TCK")
    except (ValueError, OSError, AttributeError):
        hz = 100
    return CpuClock(time.monotonic(), busy / hz, own_cpu_s() if own_s is None else own_s,
                    max(cpus, 1))


def other_load(start: CpuClock, end: CpuClock) -> dict:
    """What other processes used between two readings: ``wall_s``, ``cpus``,
    ``other_cpu_s`` (CPU seconds, never below 0) and ``other_cpu_share`` (of the
    ``wall_s × cpus`` the machine had; 0 over no time)."""
    wall = max(end.wall_s - start.wall_s, 0.0)
    other = max((end.machine_busy_s - start.machine_busy_s) - (end.own_s - start.own_s), 0.0)
    capacity = wall * end.cpus
    return {"wall_s": round(wall, 3), "cpus": end.cpus, "other_cpu_s": round(other, 3),
            "other_cpu_share": round(other / capacity, 4) if capacity > 0 else 0.0}


class LoadMeter:
    """Other processes' load from the moment it is made: :meth:`now` gives
    :func:`other_load` since then (``None`` where the machine's CPU time cannot be read),
    with the load averages at the start and now."""

    def __init__(self, read=read_cpu_clock):
        self._read = read
        self._start = read()
        self._loadavg_start = _loadavg()

    def now(self) -> dict | None:
        end = self._read() if self._start is not None else None
        if end is None:
            return None
        return {**other_load(self._start, end), "loadavg_start": self._loadavg_start,
                "loadavg_end": _loadavg()}


def _loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        return None


@dataclass(frozen=True)
class TimingVerdict:
    """Whether a report's times are to be trusted: ``reasons`` why not (empty: trusted)
    and ``facts``, one sentence on the load and the spreads either way."""

    reasons: tuple[str, ...]
    facts: str

    @property
    def trusted(self) -> bool:
        return not self.reasons


def timing_verdict(load: dict | None, relative_spreads: list[float]) -> TimingVerdict:
    """Judge the times from the machine's load while timing (:meth:`LoadMeter.now`'s dict,
    ``None``: not measured) and each measured case's spread over its median time."""
    reasons, facts = [], []
    if load is None:
        facts.append("the machine's load while timing was not measured")
    else:
        share = load["other_cpu_share"]
        said = (f"other processes used {_percent(share)} of the CPU time of its "
                f"{load['cpus']} CPU{'s' if load['cpus'] != 1 else ''} while the kernels "
                "were timed")
        facts.append(said)
        if share >= BUSY_SHARE:
            reasons.append(f"the machine was busy: {said}")
    if relative_spreads:
        mid, widest = median(relative_spreads), max(relative_spreads)
        facts.append(f"the median case's spread is {_percent(mid)} of its time, the widest "
                     f"{_percent(widest)}")
        wide = sum(s >= WIDE_CASE_SPREAD for s in relative_spreads)
        if mid >= WIDE_MEDIAN_SPREAD:
            reasons.append(f"the spreads are wide: the median case's spread is {_percent(mid)} "
                           "of its time")
        if wide:
            reasons.append(f"{wide} of {len(relative_spreads)} cases vary by "
                           f"{_percent(WIDE_CASE_SPREAD)} of their time or more (up to "
                           f"{_percent(widest)})")
    return TimingVerdict(tuple(reasons), "; ".join(facts))


def _percent(x: float) -> str:
    return f"{x * 100:.1f}%" if x < 0.1 else f"{x * 100:.0f}%"
