"""Measured time and spread, and the comparison of the model with the device: time errors,
speedups, ranking and the targets they are judged by.

Pure arithmetic on numbers: nothing here needs a device or the model. The cases are
:mod:`.cases`, the device run :mod:`.run`, the predictions and their pre-registration file
:mod:`.predict`, the markdown :mod:`.render`.

Definitions (used everywhere below):

- **measured time** of a case: the median of every timed launch of every round (seconds;
  OpenCL profiling events, warm-up launches excluded).
- **launch spread** (``iqr_s``): the interquartile range (75th minus 25th percentile, numpy's
  linear interpolation) of the same launch times.
- **run-to-run spread** (``round_range_s``): the largest minus the smallest of the rounds'
  medians (a round runs every case once; the whole case set is run ``rounds`` times, every
  other round in reverse order, so a slow drift of the device's speed shows up as a
  difference between rounds rather than between cases); ``None`` with one round.
- **spread** (``spread_s``): the larger of the two, the figure the ranking uses.
- **time error**: (predicted − measured) / measured.
- **speedup** of a case: time of its problem's baseline (the first ``gemm-naive`` or
  ``matvec-naive`` case of the same sizes in the list) divided by its own time, measured and
  predicted; **speedup error**: predicted speedup / measured speedup − 1.
- **qualifying pair**: two cases of the same problem (kind and sizes) whose measured times
  differ by more than :data:`PAIR_SPREAD_FACTOR` times the larger of their spreads; the
  model **orders it right** when it predicts the measured-faster case strictly faster.

Targets (named limits, :mod:`analysis.validation.targets`; built in: ``median-abs-error`` 15 %,
``worst-abs-error`` 35 %, ``speedup-error`` 20 %, ``ranking`` 2x the spread): median |time
error| and worst |time error| at most their limits, every speedup within its limit, every
qualifying pair ordered right.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from itertools import combinations
from statistics import median
from typing import Mapping, Sequence

import numpy as np

from tiletraffic.analysis.validation.cases import Case

from tiletraffic.analysis.validation.targets import Targets, built_in

PAIR_SPREAD_FACTOR = built_in()["ranking"]
"""The built-in ``ranking`` target (``analysis/validation/targets.toml``): a pair counts for the ranking
when its measured times differ by more than this times the larger of the two cases'
spreads."""

# ------------------------------------------------------------------ measured time and spread

@dataclass(frozen=True)
class Measured:
    """Measured time of one case (see the module docstring for each definition).

    Attributes:
        median_s: median over every timed launch of every round.
        iqr_s: interquartile range of those launch times.
        round_medians_s: the median of each round, in round order.
        round_range_s: max − min of ``round_medians_s`` (``None`` with one round).
        spread_s: ``max(iqr_s, round_range_s)``.
        launches: timed launches in all.
    """

    median_s: float
    iqr_s: float
    round_medians_s: tuple[float, ...]
    round_range_s: float | None
    spread_s: float
    launches: int

    @property
    def relative_iqr(self) -> float:
        return self.iqr_s / self.median_s

    @property
    def relative_round_range(self) -> float | None:
        return None if self.round_range_s is None else self.round_range_s / self.median_s

    @property
    def relative_spread(self) -> float:
        return self.spread_s / self.median_s


def measured_time(round_times_s: Sequence[Sequence[float]]) -> Measured:
    """:class:`Measured` from the launch times (seconds) of each round.

    Raises:
        ValueError: no round, an empty round, or a time that is not finite and positive.
    """
    rounds = [np.asarray(r, dtype=float) for r in round_times_s]
    if not rounds or any(r.size == 0 for r in rounds):
        raise ValueError(f"measured_time needs at least one round of launch times, got "
                         f"{[r.size for r in rounds]} launches per round")
    times = np.concatenate(rounds)
    if not np.all(np.isfinite(times)) or np.any(times <= 0):
        raise ValueError(f"launch times must be finite and positive, got {times.tolist()}")
    q25, q75 = np.percentile(times, [25, 75])
    medians = tuple(float(np.median(r)) for r in rounds)
    rng = max(medians) - min(medians) if len(medians) > 1 else None
    iqr = float(q75 - q25)
    return Measured(float(np.median(times)), iqr, medians, rng,
                    max(iqr, rng if rng is not None else 0.0), int(times.size))


# ------------------------------------------------------------------ the comparison

@dataclass(frozen=True)
class CaseResult:
    """One case: measured (``None``: did not run), predicted seconds (``None``: the model
    failed) and the time error (``None`` unless both exist)."""

    case: Case
    measured: Measured | None
    predicted_s: float | None

    @property
    def time_error(self) -> float | None:
        if self.measured is None or self.predicted_s is None:
            return None
        return (self.predicted_s - self.measured.median_s) / self.measured.median_s


@dataclass(frozen=True)
class Speedup:
    """A case against its problem's baseline: measured and predicted speedups (baseline time
    / case time) and the speedup error (predicted / measured − 1)."""

    case: Case
    baseline: Case
    measured: float
    predicted: float

    @property
    def error(self) -> float:
        return self.predicted / self.measured - 1.0


@dataclass(frozen=True)
class PairOrder:
    """Two cases of one problem, ``faster`` the one measured faster. ``qualifies``: their
    measured times differ by more than :data:`PAIR_SPREAD_FACTOR` × the larger spread;
    ``right``: the model predicts ``faster`` strictly faster."""

    faster: CaseResult
    slower: CaseResult
    qualifies: bool
    right: bool

    @property
    def measured_ratio(self) -> float:
        return self.slower.measured.median_s / self.faster.measured.median_s

    @property
    def predicted_ratio(self) -> float:
        return self.slower.predicted_s / self.faster.predicted_s


@dataclass(frozen=True)
class Target:
    """One target of the validation: what it asks, the figure reached, met or not (``None``:
    nothing to judge, e.g. no pair qualified)."""

    name: str
    asked: str
    figure: str
    met: bool | None

    @property
    def verdict(self) -> str:
        return {True: "met", False: "not met", None: "nothing to judge"}[self.met]


@dataclass(frozen=True)
class Summary:
    """The comparison of a validation run (module docstring: definitions)."""

    results: tuple[CaseResult, ...]
    speedups: tuple[Speedup, ...]
    pairs: tuple[PairOrder, ...]
    targets: tuple[Target, ...] = field(default=())
    limits: Targets = field(default_factory=built_in)

    @property
    def compared(self) -> tuple[CaseResult, ...]:
        return tuple(r for r in self.results if r.time_error is not None)

    @property
    def median_abs_time_error(self) -> float | None:
        errs = [abs(r.time_error) for r in self.compared]
        return median(errs) if errs else None

    @property
    def worst_time_error(self) -> CaseResult | None:
        return max(self.compared, key=lambda r: abs(r.time_error), default=None)

    @property
    def worst_speedup(self) -> Speedup | None:
        return max(self.speedups, key=lambda s: abs(s.error), default=None)

    @property
    def qualifying_pairs(self) -> tuple[PairOrder, ...]:
        return tuple(p for p in self.pairs if p.qualifies)

    @property
    def pairs_right(self) -> int:
        return sum(p.right for p in self.qualifying_pairs)

    def to_dict(self) -> dict:
        """JSON-ready figures (errors as fractions: 0.15 = 15 %)."""
        worst, ws = self.worst_time_error, self.worst_speedup
        return {
            "cases_compared": len(self.compared), "cases": len(self.results),
            "median_abs_time_error": self.median_abs_time_error,
            "worst_time_error": worst.time_error if worst else None,
            "worst_time_error_case": worst.case.id if worst else None,
            "speedups": len(self.speedups),
            "speedups_within_target": sum(abs(s.error) <= self.limits["speedup-error"]
                                          for s in self.speedups),
            "worst_speedup_error": ws.error if ws else None,
            "worst_speedup_case": ws.case.id if ws else None,
            "pairs": len(self.pairs), "pairs_counted": len(self.qualifying_pairs),
            "pairs_ordered_right": self.pairs_right,
            "misordered_pairs": [[p.faster.case.id, p.slower.case.id]
                                 for p in self.qualifying_pairs if not p.right],
            "targets": [{"name": t.name, "asked": t.asked, "figure": t.figure,
                         "met": t.met} for t in self.targets],
            "target_limits": self.limits.to_dict(),
        }


def _pct(x: float) -> str:
    return f"{x * 100:+.1f}%"


def compare(cases: Sequence[Case], predicted_s: Mapping[str, float | None],
            measured: Mapping[str, Measured | None], targets: Targets | None = None
            ) -> Summary:
    """Time errors, speedups, pair orders and targets of ``cases``.

    Args:
        predicted_s: case id -> predicted seconds (missing or ``None``: no prediction).
        measured: case id -> :class:`Measured` (missing or ``None``: did not run).
        targets: the limits judged by (default: the built-in ones, ``analysis/validation/targets.toml``).
    """
    targets = built_in() if targets is None else targets
    spread_factor = targets["ranking"]
    results = tuple(CaseResult(c, measured.get(c.id), predicted_s.get(c.id)) for c in cases)
    usable = [r for r in results if r.time_error is not None]
    baselines: dict[str, CaseResult] = {}
    for r in usable:
        if r.case.is_baseline:
            baselines.setdefault(r.case.problem, r)
    speedups = []
    for r in usable:
        base = baselines.get(r.case.problem)
        if base is None or r is base or r.case.is_baseline:
            continue
        speedups.append(Speedup(r.case, base.case, base.measured.median_s / r.measured.median_s,
                                base.predicted_s / r.predicted_s))
    pairs = []
    for a, b in combinations(usable, 2):
        if a.case.problem != b.case.problem:
            continue
        fast, slow = (a, b) if a.measured.median_s <= b.measured.median_s else (b, a)
        gap = slow.measured.median_s - fast.measured.median_s
        qualifies = gap > spread_factor * max(fast.measured.spread_s, slow.measured.spread_s)
        pairs.append(PairOrder(fast, slow, qualifies, fast.predicted_s < slow.predicted_s))
    summary = Summary(results, tuple(speedups), tuple(pairs), limits=targets)
    return replace(summary, targets=_targets(summary))


def _targets(s: Summary) -> tuple[Target, ...]:
    lim = s.limits
    med, worst, ws = s.median_abs_time_error, s.worst_time_error, s.worst_speedup
    within = sum(abs(x.error) <= lim["speedup-error"] for x in s.speedups)
    counted = len(s.qualifying_pairs)
    return (
        Target("median-abs-error", f"median |time error| <= {lim['median-abs-error']:.0%}",
               "no case compared" if med is None else
               f"{med * 100:.1f}% over {len(s.compared)} cases",
               None if med is None else med <= lim["median-abs-error"]),
        Target("worst-abs-error", f"worst |time error| <= {lim['worst-abs-error']:.0%}",
               "no case compared" if worst is None else
               f"{_pct(worst.time_error)} ({worst.case.label}, {worst.case.problem})",
               None if worst is None else abs(worst.time_error) <= lim["worst-abs-error"]),
        Target("speedup-error", f"every speedup over the naive baseline within "
               f"{lim['speedup-error']:.0%}",
               "no speedup compared" if ws is None else
               f"{within} of {len(s.speedups)} within; worst {_pct(ws.error)} "
               f"({ws.case.label}, {ws.case.problem})",
               None if ws is None else within == len(s.speedups)),
        Target("ranking", f"every pair whose times differ by more than "
               f"{lim['ranking']:g}x their spread ordered right",
               f"{s.pairs_right} of {counted} pairs ordered right "
               f"({len(s.pairs) - counted} of {len(s.pairs)} pairs too close to count)",
               None if counted == 0 else s.pairs_right == counted),
    )
