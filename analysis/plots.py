"""Figures of the report (the only matplotlib user; the Agg backend, no display needed).

Each function takes plain lists from ``results.json`` and writes one PNG atomically.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .files import atomic_path  # noqa: E402


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
    for label, (x, y) in series.items():
        p, c = fit_power_law(x, y)
        slopes[label] = p
        line, = ax.plot(x, y, "o", label=f"{label}: slope {p:.2f}")
        xs = np.geomspace(min(x), max(x), 50)
        ax.plot(xs, c * xs**p, "-", color=line.get_color(), alpha=0.6)
    ax.set_xscale("log", base=base)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    _save(fig, path)
    return slopes


def ratio_vs_speedup(labels: list[str], predicted: list[float], measured: list[float],
                     path: Path, device: str) -> None:
    """Bars: the counted global-load ratio (naive / tiled, exact from the simulator) next to
    the measured speedup."""
    fig, ax = plt.subplots(figsize=(max(6.4, 0.45 * len(labels) + 2), 4.4))
    x = np.arange(len(labels))
    # Bars start at 1 (no change): a speedup below 1 hangs down from the line.
    ax.bar(x - 0.2, np.asarray(predicted) - 1, 0.4, bottom=1,
           label="counted (simulator): naive / tiled global loads")
    ax.bar(x + 0.2, np.asarray(measured) - 1, 0.4, bottom=1,
           label=f"measured speedup on {device}")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_yscale("log", base=2)
    ax.set_xticks(x, labels, rotation=60, ha="right", fontsize=8)
    ax.set_ylabel("ratio (log scale)")
    ax.set_title("Traffic cut by tiling vs time saved")
    values = list(predicted) + list(measured)
    ax.set_ylim(min(min(values), 1) / 1.5, max(max(values), 1) * 6)  # room for the legend
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(True, axis="y", alpha=0.3)
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


def predicted_vs_measured(families: list[str], measured_s: list[float], spread_s: list[float],
                          predicted_s: list[float], path: Path, title: str) -> None:
    """Log-log scatter of predicted against measured time (ms), one point per case coloured
    by schedule family, horizontal error bars ± the measured spread, the diagonal (exact)
    and the ±15 % and ±35 % time targets dashed."""
    fig, ax = plt.subplots(figsize=(6.8, 5.2))
    meas, pred = np.asarray(measured_s) * 1e3, np.asarray(predicted_s) * 1e3
    err = np.asarray(spread_s) * 1e3
    names = list(dict.fromkeys(families))
    colors = plt.get_cmap("tab10")(np.arange(len(names)) % 10)
    for name, color in zip(names, colors):
        sel = np.array([f == name for f in families])
        ax.errorbar(meas[sel], pred[sel], xerr=err[sel], fmt="o", color=color, ms=5,
                    capsize=3, label=name)
    lo = min(meas.min(), pred.min()) / 1.5
    hi = max(meas.max(), pred.max()) * 1.5
    xs = np.geomspace(lo, hi, 20)
    ax.plot(xs, xs, "k-", lw=0.8, label="predicted = measured")
    for band, style in ((0.15, "--"), (0.35, ":")):
        for sign in (1, -1):
            ax.plot(xs, xs * (1 + sign * band), "k" + style, lw=0.6, alpha=0.6,
                    label=f"±{band:.0%}" if sign == 1 else None)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured time (ms), ± spread")
    ax.set_ylabel("predicted time (ms)")
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    _save(fig, path)
