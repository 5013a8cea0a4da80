"""``tiletraffic validate``: the case list, measured time and spread, and the comparison of
the model with the device (time errors, speedups, ranking, and the targets they are judged by).

Pure arithmetic on numbers: nothing here needs a device or the model. The device run is
:mod:`analysis.validation_run`, the predictions and their pre-registration file
:mod:`analysis.validation_predict`, the markdown :mod:`analysis.validation_text`.

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

Targets: median |time error| <= 15 %, worst <= 35 %, every speedup within 20 %, every
qualifying pair ordered right.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field, replace
from itertools import combinations
from pathlib import Path
from statistics import median
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from tiletraffic.simulator import schedules
from tiletraffic.simulator.schedule import Schedule

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

MEDIAN_TIME_ERROR_TARGET = 0.15
WORST_TIME_ERROR_TARGET = 0.35
SPEEDUP_ERROR_TARGET = 0.20
PAIR_SPREAD_FACTOR = 2.0
"""A pair counts for the ranking when its measured times differ by more than this times the
larger of the two cases' spreads."""

BASELINES = {"gemm": "gemm-naive", "matvec": "matvec-naive"}
"""Kind of problem -> the family every other schedule of that problem is compared with."""

OPTION_KEYS = ("chunk", "mapping", "padding", "a_tile", "tm", "tn", "bk", "wg_rows")
"""Keys a case may carry beside family, m, k, n and tile (``schedules.build``'s options)."""


class CaseError(ValueError):
    """A case (or a case file) is malformed; the message names the case and the field."""


@dataclass(frozen=True)
class Case:
    """One schedule at one size: what ``validate`` predicts, runs and compares.

    Attributes:
        family: a schedule family (``schedules.FAMILIES``).
        m, k, n: sizes (A is m×k, B k×n; ``n`` is ``None`` for a matrix-vector product).
        tile: the family's tile / work-group width (``schedules.DEFAULT_TILE`` when
            omitted in a file: always explicit here, so a case's id names it).
        options: ``(key, value)`` pairs of :data:`OPTION_KEYS`, sorted by key.
        registers: the compiled kernel's registers per work-item (what ``tiletraffic run``
            prints on NVIDIA), which the model's occupancy then uses instead of its
            estimate from the schedule; ``None``: estimated (warned). Not a schedule
            option: the kernel run is the same.
    """

    family: str
    m: int
    k: int
    n: int | None
    tile: int
    options: tuple[tuple[str, Any], ...] = ()
    registers: int | None = None

    @property
    def kind(self) -> str:
        """``"gemm"`` or ``"matvec"``."""
        return "gemm" if self.family in schedules.ALL_GEMM_FAMILIES else "matvec"

    @property
    def problem(self) -> str:
        """The problem the case solves, e.g. ``"gemm 1024×1024×1024"`` (M×K×N) or
        ``"matvec 4096×4096"`` (M×K): cases of one problem are ranked against each other."""
        sizes = (self.m, self.k) + ((self.n,) if self.kind == "gemm" else ())
        return f"{self.kind} {'×'.join(map(str, sizes))}"

    @property
    def id(self) -> str:
        """Unique text of the case: family, sizes, tile, options and ``registers`` (when
        given), e.g. ``"gemm-vectorized m=4096 k=4096 n=4096 tile=8 bk=16 tm=8 tn=8 wg_rows=8"``
        or ``"gemm-prefetch m=4096 k=4096 n=4096 tile=16 bk=16 tm=4 tn=4 registers=79"``."""
        sizes = [f"m={self.m}", f"k={self.k}"] + ([f"n={self.n}"] if self.n is not None else [])
        return " ".join([self.family, *sizes, f"tile={self.tile}",
                         *(f"{key}={value}" for key, value in self.options),
                         *([f"registers={self.registers}"] if self.registers is not None else [])])

    @property
    def label(self) -> str:
        """Short label for tables and figures: the id without the sizes, the family's default
        tile and ``registers`` (the kernel is the same)."""
        extra = "" if self.tile == schedules.DEFAULT_TILE[self.family] else f" B={self.tile}"
        return self.family + extra + "".join(f" {key}={value}" for key, value in self.options)

    @property
    def is_baseline(self) -> bool:
        return self.family == BASELINES[self.kind]

    def build(self) -> Schedule:
        """The schedule. Raises ``schedules.ScheduleError`` for a parameter out of range."""
        options = dict(self.options)
        chunk = options.pop("chunk", None)
        return schedules.build(self.family, self.m, self.k, self.n, self.tile, chunk, **options)

    def to_dict(self) -> dict:
        """JSON- and TOML-ready: ``family, m, k, [n,] tile`` and the options."""
        out = {"family": self.family, "m": self.m, "k": self.k}
        if self.n is not None:
            out["n"] = self.n
        out["tile"] = self.tile
        out.update(self.options)
        if self.registers is not None:
            out["registers"] = self.registers
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "case") -> Case:
        """The case a dict describes (``to_dict``'s keys; ``tile`` optional).

        Raises:
            CaseError: a missing or unknown key, a size that is not a positive integer, an
                unknown family, ``n`` given for a matrix-vector family or missing for a GEMM,
                or a schedule that cannot be built at these sizes (the builder's message),
                or ``registers`` not a positive integer.
        """
        if not isinstance(data, Mapping):
            raise CaseError(f"{where}: a case is a table of family, m, k, n, tile, ..., "
                            f"got {data!r}")
        unknown = sorted(set(data) - {"family", "m", "k", "n", "tile", "registers",
                                      *OPTION_KEYS})
        if unknown:
            raise CaseError(f"{where}: unknown key(s) {', '.join(unknown)} (known: family, m, "
                            f"k, n, tile, {', '.join(OPTION_KEYS)}, registers)")
        registers = data.get("registers")
        if registers is not None and (not isinstance(registers, int)
                                      or isinstance(registers, bool) or registers < 1):
            raise CaseError(f"{where}: registers (the compiled kernel's registers per "
                            f"work-item) must be a positive integer, got {registers!r}")
        family = data.get("family")
        if family not in schedules.FAMILIES:
            raise CaseError(f"{where}: family {family!r} is not one of "
                            f"{', '.join(schedules.FAMILIES)}")
        sizes = {}
        for key in ("m", "k", "n", "tile"):
            value = data.get(key)
            if value is None and key in ("n", "tile"):
                sizes[key] = None
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise CaseError(f"{where}: {key} must be a positive integer, got {value!r}")
            sizes[key] = value
        gemm = family in schedules.ALL_GEMM_FAMILIES
        if gemm and sizes["n"] is None:
            raise CaseError(f"{where}: {family} needs n (columns of B and C)")
        if not gemm and sizes["n"] is not None:
            raise CaseError(f"{where}: {family} computes y = A·x: n does not apply "
                            f"(got {sizes['n']})")
        tile = schedules.DEFAULT_TILE[family] if sizes["tile"] is None else sizes["tile"]
        options = tuple(sorted((key, data[key]) for key in OPTION_KEYS if key in data))
        case = cls(family, sizes["m"], sizes["k"], sizes["n"], tile, options, registers)
        try:
            case.build()
        except (schedules.ScheduleError, TypeError) as err:
            raise CaseError(f"{where} ({case.id}): {err}") from None
        return case


def _cases(gemm_sizes: Sequence[int], matvec_sizes: Sequence[int]) -> tuple[Case, ...]:
    out = []
    for n in gemm_sizes:
        out += [Case.from_dict({"m": n, "k": n, "n": n, **spec}) for spec in GEMM_SCHEDULES]
    for n in matvec_sizes:
        out += [Case.from_dict({"m": n, "k": n, **spec}) for spec in MATVEC_SCHEDULES]
    return tuple(out)


GEMM_SCHEDULES = (
    {"family": "gemm-naive", "tile": 16},
    {"family": "gemm-tiled", "tile": 16},
    {"family": "gemm-tiled", "tile": 32},
    {"family": "gemm-register-blocked", "tile": 16, "tm": 4, "tn": 4, "bk": 16},
    {"family": "gemm-vectorized", "tile": 16, "tm": 4, "tn": 4, "bk": 16},
    {"family": "gemm-vectorized", "tile": 8, "wg_rows": 8, "tm": 8, "tn": 8, "bk": 16},
    {"family": "gemm-prefetch", "tile": 16, "tm": 4, "tn": 4, "bk": 16},
)
"""The GEMM schedules of every case list, at each GEMM size (M = K = N): the ladder naive ->
tiled -> register-blocked -> vectorized -> prefetch with each family's defaults, plus tiled
B = 32 and the fastest hand-picked gemm-vectorized of the H200 ladder (experiments/h200/
ladder: TM = TN = 8, BK = 16, an 8×8 work-group)."""

MATVEC_SCHEDULES = (
    {"family": "matvec-naive", "tile": 256},
    {"family": "matvec-local", "tile": 256},
    {"family": "matvec-local-whole", "tile": 256},
    {"family": "matvec-rows-reduce", "tile": 32, "wg_rows": 8},
)
"""The matrix-vector schedules of every case list, at each matvec size (M = K)."""

CASE_SIZES = {
    "quick": ((64, 128), (256, 1024)),
    "cpu": ((256, 512), (2048, 4096)),
    "gpu": ((1024, 4096), (4096, 8192)),
}
"""Case list name -> (GEMM sizes, matvec sizes). ``quick``: tiny, seconds on PoCL (CI);
``cpu``: a CPU OpenCL device (PoCL) without --quick; ``gpu``: what a performance engineer
checks on a GPU. On an H200 the ``gpu`` list's kernels take about 3 s in all (2 rounds of
12 launches; from the ladder's times, experiments/h200/ladder: the N = 4096 GEMMs, 4-26 ms
each, dominate); the host's float64 reference checks of the N = 4096 GEMMs (A·B and |A|·|B|,
once per case and round) take longer than the kernels."""


def case_list(name: str) -> tuple[Case, ...]:
    """The built-in case list ``name`` (a key of :data:`CASE_SIZES`).

    Raises:
        KeyError: an unknown name (the message lists the names).
    """
    if name not in CASE_SIZES:
        raise KeyError(f"unknown case list {name!r}; built-in: {', '.join(CASE_SIZES)}")
    return _cases(*CASE_SIZES[name])


def default_case_list_name(quick: bool, is_gpu: bool) -> str:
    """``quick`` with --quick, else ``gpu`` on a GPU and ``cpu`` on any other device."""
    return "quick" if quick else ("gpu" if is_gpu else "cpu")


def read_cases(path: str | Path) -> tuple[Case, ...]:
    """The cases of a TOML case file: one ``[[case]]`` table per case with ``family``, ``m``,
    ``k``, ``n`` (GEMM only), optional ``tile`` and options (:data:`OPTION_KEYS`), as
    :func:`cases_toml` writes them.

    Raises:
        CaseError: the file cannot be read, is not TOML, has no ``[[case]]``, a malformed
            case (its number and the field), or the same case twice.
    """
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise CaseError(f"{path}: cannot read the case file ({err.strerror})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise CaseError(f"{path}: not a TOML file ({err})") from None
    extra = sorted(set(data) - {"case"})
    if extra or not isinstance(data.get("case"), list) or not data["case"]:
        raise CaseError(f"{path}: a case file holds [[case]] tables only"
                        + (f" (found {', '.join(extra)})" if extra else " (none found)"))
    return check_unique([Case.from_dict(c, f"{path}: case {i + 1}")
                         for i, c in enumerate(data["case"])], str(path))


def check_unique(cases: Iterable[Case], where: str) -> tuple[Case, ...]:
    """``cases`` as a tuple. Raises :class:`CaseError` naming a case listed twice."""
    cases = tuple(cases)
    seen = set()
    for c in cases:
        if c.id in seen:
            raise CaseError(f"{where}: case {c.id!r} is listed twice")
        seen.add(c.id)
    if not cases:
        raise CaseError(f"{where}: no cases")
    return cases


def cases_toml(cases: Iterable[Case]) -> str:
    """The case file of ``cases`` (read back by :func:`read_cases`)."""
    lines = ["# tiletraffic validate --cases FILE: one [[case]] per schedule and size"]
    for c in cases:
        lines += ["", "[[case]]"]
        lines += [f"{key} = {json.dumps(value)}" for key, value in c.to_dict().items()]
    return "\n".join(lines) + "\n"


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
            "speedups_within_target": sum(abs(s.error) <= SPEEDUP_ERROR_TARGET
                                          for s in self.speedups),
            "worst_speedup_error": ws.error if ws else None,
            "worst_speedup_case": ws.case.id if ws else None,
            "pairs": len(self.pairs), "pairs_counted": len(self.qualifying_pairs),
            "pairs_ordered_right": self.pairs_right,
            "misordered_pairs": [[p.faster.case.id, p.slower.case.id]
                                 for p in self.qualifying_pairs if not p.right],
            "targets": [{"name": t.name, "asked": t.asked, "figure": t.figure,
                         "met": t.met} for t in self.targets],
        }


def _pct(x: float) -> str:
    return f"{x * 100:+.1f}%"


def compare(cases: Sequence[Case], predicted_s: Mapping[str, float | None],
            measured: Mapping[str, Measured | None]) -> Summary:
    """Time errors, speedups, pair orders and targets of ``cases``.

    Args:
        predicted_s: case id -> predicted seconds (missing or ``None``: no prediction).
        measured: case id -> :class:`Measured` (missing or ``None``: did not run).
    """
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
        qualifies = gap > PAIR_SPREAD_FACTOR * max(fast.measured.spread_s, slow.measured.spread_s)
        pairs.append(PairOrder(fast, slow, qualifies, fast.predicted_s < slow.predicted_s))
    summary = Summary(results, tuple(speedups), tuple(pairs))
    return replace(summary, targets=_targets(summary))


def _targets(s: Summary) -> tuple[Target, ...]:
    med, worst, ws = s.median_abs_time_error, s.worst_time_error, s.worst_speedup
    within = sum(abs(x.error) <= SPEEDUP_ERROR_TARGET for x in s.speedups)
    counted = len(s.qualifying_pairs)
    return (
        Target("median time error", f"median |time error| <= "
               f"{MEDIAN_TIME_ERROR_TARGET:.0%}",
               "no case compared" if med is None else
               f"{med * 100:.1f}% over {len(s.compared)} cases",
               None if med is None else med <= MEDIAN_TIME_ERROR_TARGET),
        Target("worst time error", f"worst |time error| <= {WORST_TIME_ERROR_TARGET:.0%}",
               "no case compared" if worst is None else
               f"{_pct(worst.time_error)} ({worst.case.label}, {worst.case.problem})",
               None if worst is None else abs(worst.time_error) <= WORST_TIME_ERROR_TARGET),
        Target("speedups", f"every speedup over the naive baseline within "
               f"{SPEEDUP_ERROR_TARGET:.0%}",
               "no speedup compared" if ws is None else
               f"{within} of {len(s.speedups)} within; worst {_pct(ws.error)} "
               f"({ws.case.label}, {ws.case.problem})",
               None if ws is None else within == len(s.speedups)),
        Target("ranking", f"every pair whose times differ by more than "
               f"{PAIR_SPREAD_FACTOR:g}x their spread ordered right",
               f"{s.pairs_right} of {counted} pairs ordered right "
               f"({len(s.pairs) - counted} of {len(s.pairs)} pairs too close to count)",
               None if counted == 0 else s.pairs_right == counted),
    )
