"""The K sweep of gemm-register-blocked and gemm-prefetch 4x4 (``ksweep.py``) against the
model, without a GPU: each case's measured and predicted time, and per (family, M = N) the
time per 1024 more K (least-squares slope over the sweep, measured and predicted), the part
that grows with the K steps.

    python -m experiments.h200.ladder.ksweep_table reports/nvidia-h200/ladder/ksweep/ksweep.json.gz \\
        --device-model reports/nvidia-h200/matvec/xprobe/h200-calibrated.toml
"""
from __future__ import annotations

import argparse
import sys
import warnings

import numpy as np

import tiletraffic as tt

from experiments.h200.data import read_json


def predicted_s(row: dict, model) -> float:
    """The model's time of one sweep case (seconds), with the registers its build reported
    (the estimate where it reported none). The device model's warnings about its guessed
    values are not repeated for every case."""
    from tiletraffic.simulator.model.device_model import GuessedValueWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GuessedValueWarning)
        sch = tt.build(row["family"], m=row["m"], k=row["k"], n=row["n"], tile=row["tile"],
                       **row["options"])
        return tt.model(sch, model, registers_per_work_item=row.get("registers")
                        ).prediction.predicted_time_s


def slope_s_per_1024_k(ks, times_s) -> float:
    """Least-squares slope of time against K, per 1024 of K (seconds)."""
    return float(np.polyfit(np.asarray(ks, float), np.asarray(times_s, float), 1)[0] * 1024)


def table(data: dict, model) -> list[str]:
    """Markdown lines: the cases, then the slopes (one per family, options, M, N and tile).

    Raises:
        ValueError: a case whose result check failed.
    """
    lines = ["| schedule | M = N | K | measured ms (IQR) | predicted ms | error |",
             "|---|---:|---:|---:|---:|---:|"]
    groups: dict = {}
    # a build reports its registers once: later runs of the same source come from the
    # program cache and report none, so each family keeps the count its first build gave
    registers = {(r["family"], tuple(sorted(r["options"].items()))): r["registers"]
                 for r in reversed(data["rows"]) if r.get("registers")}
    for r in data["rows"]:
        if not r["check_ok"]:
            raise ValueError(f"{r['family']} {r['m']} K={r['k']}: result check failed")
        p = predicted_s({**r, "registers": r.get("registers") or registers.get(
            (r["family"], tuple(sorted(r["options"].items()))))}, model)
        key = (r["family"], tuple(sorted(r["options"].items())), r["m"], r["n"], r["tile"])
        groups.setdefault(key, []).append((r["k"], r["median_s"], p))
        lines.append(f"| {r['family']} | {r['m']} | {r['k']} | {r['median_s'] * 1e3:.4f} "
                     f"({r['iqr_s'] * 1e3:.4f}) | {p * 1e3:.4f} | "
                     f"{(p - r['median_s']) / r['median_s']:+.1%} |")
    lines += ["", "| schedule | M = N | measured ms per 1024 K | predicted | error |",
              "|---|---:|---:|---:|---:|"]
    for (family, _, mn, _, _), pts in groups.items():
        ks, meas, pred = zip(*pts, strict=True)
        sm, sp = slope_s_per_1024_k(ks, meas), slope_s_per_1024_k(ks, pred)
        lines.append(f"| {family} | {mn} | {sm * 1e3:.4f} | {sp * 1e3:.4f} | "
                     f"{(sp - sm) / sm:+.1%} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("data")
    p.add_argument("--device-model", required=True)
    a = p.parse_args(argv)
    print("\n".join(table(read_json(a.data), tt.device_model(a.device_model))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
