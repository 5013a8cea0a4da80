"""Figures of the report (the only matplotlib user; the Agg backend, no display needed).

Each function takes plain lists from ``results.json`` and writes one PNG atomically.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from tiletraffic.analysis.files import atomic_path  # noqa: E402


def fit_power_law(x, y) -> tuple[float, float]:
    """Least-squares fit of ``y = c·x^p`` in log-log space; returns ``(p, c)``.

    Raises:
        ValueError: fewer than two points, or a non-positive value.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if (x.size < 2 or x.shape != y.shape or not np.all(np.isfinite(x))
            or not np.all(np.isfinite(y)) or np.any(x <= 0) or np.any(y <= 0)):
        raise ValueError(f"a power-law fit needs >= 2 finite positive points, got x={x}, y={y}")
    if np.unique(x).size < 2:
        raise ValueError(f"a power-law fit needs two different x values, got x={x}")
    p, logc = np.polyfit(np.log(x), np.log(y), 1)
    return float(p), float(np.exp(logc))


def _save(fig, path: Path) -> None:
    try:
        with atomic_path(path, suffix=".png") as tmp:
            fig.savefig(tmp, dpi=110, bbox_inches="tight")
    finally:
        plt.close(fig)


MARKERS = ("o", "s", "^", "v", "D", "P", "X", "<", ">", "p", "h", "*")
"""Marker cycle: with the colours of ``tab20`` every series gets its own pair."""


def series_style(index: int) -> dict:
    """Colour and marker of series ``index``: the first 10 series differ in colour (tab10,
    then the light shades of tab20) and the first 12 in marker, so every series of a figure
    differs from its neighbours in both."""
    color = (plt.get_cmap("tab10")(index) if index < 10
             else plt.get_cmap("tab20")((2 * index + 1) % 20))
    return {"color": color, "marker": MARKERS[index % len(MARKERS)]}


def loglog_with_fits(series: dict[str, tuple[list, list]], xlabel: str, ylabel: str,
                     title: str, path: Path, base: int = 2) -> dict[str, float]:
    """Log-log plot of several series, each with its fitted exponent in the legend.

    Args:
        series: label -> (x values, y values).
    Returns:
        label -> fitted exponent.
    """
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    slopes = {}
    for i, (label, (x, y)) in enumerate(series.items()):
        p, c = fit_power_law(x, y)
        slopes[label] = p
        style = series_style(i)
        ax.plot(x, y, style["marker"], color=style["color"], label=f"{label}: slope {p:.2f}")
        xs = np.geomspace(min(x), max(x), 50)
        ax.plot(xs, c * xs**p, "-", color=style["color"], alpha=0.6)
    ax.set_xscale("log", base=base)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    _save(fig, path)
    return slopes


def _speedup_limits(values, low, high, extra=()) -> tuple[float, float]:
    """Bottom and top of a speedup axis (log): the values, the ranges' finite ends above 0,
    1 (no change) and ``extra``, with a margin."""
    ends = [*values, *(x for x in low if x > 0), *(x for x in high if np.isfinite(x)), 1.0,
            *extra]
    return min(ends) / 1.3, max(ends) * 1.3


def _ranges(ax, x, values, low, high, style: dict, bottom: float, top: float,
            label: str | None, line: bool = False) -> int:
    """Points ``values`` at ``x`` with their ranges as error bars; an open end (an upper
    end of infinity, a lower end of 0) is drawn as an arrow to the axis edge (``top`` or
    ``bottom``), not as a bar that ends. Returns how many open ends were drawn."""
    v = np.asarray(values, dtype=float)
    lo, hi = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    open_high, open_low = ~np.isfinite(hi), lo <= 0
    down = np.where(open_low, 0.0, v - np.maximum(lo, bottom))
    up = np.where(open_high, 0.0, np.minimum(hi, top) - v)
    ax.errorbar(x, v, yerr=np.vstack([down, up]), fmt=("-" if line else "") + style["marker"],
                color=style["color"], ms=6, capsize=3, label=label)
    arrow = {"arrowstyle": "-|>", "color": style["color"], "lw": 1.2,
             "shrinkA": 4, "shrinkB": 0}
    for xi, vi, is_open, edge in [(xi, vi, h, top) for xi, vi, h in zip(x, v, open_high)] + \
            [(xi, vi, lw, bottom) for xi, vi, lw in zip(x, v, open_low)]:
        if is_open:
            ax.annotate("", xy=(xi, edge), xytext=(xi, vi), arrowprops=arrow,
                        annotation_clip=False)
    return int(open_high.sum() + open_low.sum())


def _open_note(ax, opened: int) -> None:
    """A legend entry saying what an arrow means, where one was drawn."""
    if opened:
        ax.plot([], [], linestyle="none", marker=r"$\uparrow$", color="k", ms=8,
                label="arrow: the range is open (to the axis edge)")


def _dodge(x: float, index: int, count: int, step: float = 0.08) -> float:
    """``x`` moved sideways (log scale, ``step`` octaves per series at most) by series
    ``index`` of ``count``, so points of one x sit side by side instead of on top of each
    other."""
    step = min(step, 0.5 / max(count - 1, 1))
    return x * 2 ** ((index - (count - 1) / 2) * step)


def speedup_vs_cut(series: dict[str, tuple[list, list, list, list]], path: Path,
                   device: str) -> None:
    """Scatter: the counted cut in global loads (naive / optimized, exact from the simulator)
    against the measured speedup with its range as error bars (an open range: an arrow to
    the axis edge), one colour and marker per series (label -> (cuts, speedups, lows,
    highs)), the series of one cut side by side; the diagonal (speedup = cut) and no change
    (1) drawn; both axes span the data."""
    fig, ax = plt.subplots(figsize=(7.8, 4.8))
    cuts = [c for xs, *_ in series.values() for c in xs]
    values = [v for _, vs, *_ in series.values() for v in vs]
    lows = [x for *_, ls, _ in series.values() for x in ls]
    highs = [x for *_, hs in series.values() for x in hs]
    bottom, top = _speedup_limits(values, lows, highs, extra=cuts)
    left, right = min(cuts) / 1.5, max(cuts) * 1.5
    opened = 0
    for i, (label, (cut, value, low, high)) in enumerate(series.items()):
        x = [_dodge(c, i, len(series)) for c in cut]
        opened += _ranges(ax, x, value, low, high, series_style(i), bottom, top, label)
    xs = np.geomspace(left, right, 20)
    ax.plot(xs, xs, "k--", lw=0.8, label="speedup = cut in loads")
    ax.axhline(1.0, color="k", lw=0.8)
    _open_note(ax, opened)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlim(left, right)
    ax.set_ylim(bottom, top)
    ax.set_xlabel("cut in global loads (naive / optimized, counted; "
                  "points of one cut side by side)")
    ax.set_ylabel(f"measured speedup on {device}")
    ax.set_title("Traffic cut by tiling vs time saved (error bars: the spreads' range)",
                 fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    _save(fig, path)


def speedup_vs_n(series: dict[str, tuple[list, list, list, list]], path: Path,
                 device: str) -> None:
    """Measured speedup against N, one series per tile width (label -> (N, speedup, low,
    high)), each with its own colour and marker and error bars from the spreads (an open
    range: an arrow to the axis edge), the series of one N side by side."""
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    bottom, top = _speedup_limits([v for _, vs, _, _ in series.values() for v in vs],
                                  [x for _, _, ls, _ in series.values() for x in ls],
                                  [x for _, _, _, hs in series.values() for x in hs])
    opened = 0
    for i, (label, (n, value, low, high)) in enumerate(series.items()):
        x = [_dodge(v, i, len(series), step=0.04) for v in n]
        opened += _ranges(ax, x, value, low, high, series_style(i), bottom, top, label,
                          line=True)
    ax.axhline(1.0, color="k", lw=0.8)
    _open_note(ax, opened)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_ylim(bottom, top)
    ax.set_xlabel("N (M = N = K)")
    ax.set_ylabel("measured speedup over naive")
    ax.set_title(f"Tiled vs naive GEMM on {device}", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    _save(fig, path)


def roofline(points: list[tuple], dram_bytes_per_s: float, fp32_flop_per_s: float,
             references: list[tuple[int, float]], path: Path) -> None:
    """Roofline chart (Williams, Waterman, Patterson, CACM 2009).

    Args:
        points: (label, flop, predicted intensity FLOP/B, predicted FLOP/s, measured
            intensity, measured FLOP/s or None) per kernel.
        references: (N, FLOP/s) of a reference library (drawn as horizontal marks).
    """
    fig, ax = plt.subplots(figsize=(7.4, 5.0))
    xs = np.geomspace(0.1, 1e4, 200)
    ax.plot(xs, np.minimum(xs * dram_bytes_per_s, fp32_flop_per_s) / 1e9, "k-", lw=1,
            label="ceilings: DRAM bandwidth, FP32 peak")
    # one colour per kernel (the default cycle repeats after 10) and one marker per family
    colors = plt.get_cmap("turbo")(np.linspace(0.05, 0.95, max(len(points), 1)))
    markers = {"gemm-naive": "o", "gemm-tiled": "s", "matvec-naive": "^",
               "matvec-local": "v", "matvec-local-whole": "D"}
    for i, (label, _, pi, pf, mi, mf) in enumerate(points):
        c = colors[i]
        mk = markers.get(label.split(" ")[0], "o")
        ax.plot(pi, pf / 1e9, mk, mfc="none", color=c)
        if mf:
            ax.plot(mi, mf / 1e9, mk, color=c, label=label)
            ax.plot([pi, mi], [pf / 1e9, mf / 1e9], "-", color=c, alpha=0.4)
    for n, flops in references:
        ax.axhline(flops / 1e9, color="grey", ls=":", lw=1)
        ax.text(0.12, flops / 1e9 * 1.05, f"cuBLAS FP32 N={n}", fontsize=7, color="grey")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP per DRAM byte)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title("Roofline: open = predicted, filled = measured")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6, ncol=2, loc="lower right")
    _save(fig, path)


def predicted_vs_measured(labels: list[str], problems: list[str], measured_s: list[float],
                          spread_s: list[float], predicted_s: list[float], path: Path,
                          title: str, bands: bool = True) -> None:
    """Log-log scatter of predicted against measured time (ms), one point per case: one
    colour and marker per schedule (``labels``, with its parameters), open for the smaller
    problem of its kind (``problems``) and filled for larger ones; horizontal error bars ±
    the measured spread, the diagonal (exact) and, with ``bands``, the ±15 % and ±35 % time
    targets dashed."""
    fig, ax = plt.subplots(figsize=(7.4, 5.2))
    meas, pred = np.asarray(measured_s) * 1e3, np.asarray(predicted_s) * 1e3
    err = np.asarray(spread_s) * 1e3
    names = list(dict.fromkeys(labels))
    smallest = {}
    for p in problems:
        kind = p.split(" ")[0]
        size = _problem_size(p)
        smallest[kind] = min(smallest.get(kind, size), size)
    for i, name in enumerate(names):
        style = series_style(i)
        for j in (j for j, lab in enumerate(labels) if lab == name):
            kind = problems[j].split(" ")[0]
            size = _problem_size(problems[j])
            ax.errorbar(meas[j], pred[j], xerr=err[j], fmt=style["marker"],
                        color=style["color"], ms=6, capsize=3,
                        mfc="none" if size == smallest[kind] else style["color"],
                        label=name if j == labels.index(name) else None)
    lo = min(meas.min(), pred.min()) / 1.5
    hi = max(meas.max(), pred.max()) * 1.5
    xs = np.geomspace(lo, hi, 20)
    ax.plot(xs, xs, "k-", lw=0.8, label="predicted = measured")
    for band, style in (((0.15, "--"), (0.35, ":")) if bands else ()):
        for sign in (1, -1):
            ax.plot(xs, xs * (1 + sign * band), "k" + style, lw=0.6, alpha=0.6,
                    label=f"±{band:.0%}" if sign == 1 else None)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured time (ms), ± spread")
    ax.set_ylabel("predicted time (ms)")
    ax.set_title(title + "\nopen: smaller problem, filled: larger", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    _save(fig, path)


def _problem_size(problem: str) -> int:
    """Elements of a problem's sizes (``"gemm 64×64×64"``: 64³); 0 for a problem named
    otherwise (a launch file's: ``"opencl mm_tiled.toml N=64"``)."""
    try:
        return int(np.prod([int(x) for x in problem.split(" ")[-1].split("×")]))
    except ValueError:
        return 0
