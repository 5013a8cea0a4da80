"""The ladder's tables (markdown) from the committed raw data: per N, each case's measured
median time and spread (min-max over the timed launches), TFLOP/s (2·N³ / median), % of
cuBLAS FP32 (cuBLAS median / case median), the model's predicted time (``model_predictions*.json``
of :mod:`experiments.h200.ladder.predict`) and its error
((predicted - measured) / measured), and whether the result was checked against float64.

    python -m experiments.h200.ladder.table [reports/nvidia-h200/ladder]
"""
from __future__ import annotations

import sys
from pathlib import Path

from experiments.h200.data import read_json

from experiments.h200.ladder import cases as C


def _first(folder: Path, *names):
    for name in names:
        for p in (folder / name, folder / (name + ".gz")):
            if p.exists():
                return read_json(p)
    return None


def tables(folder: Path) -> str:
    raw = _first(folder, "ladder_raw.json")
    preds = []
    for path in sorted(folder.glob("model_predictions*.json*")):
        preds += read_json(path)
    pred = {(p["label"], p["n"]): p["predicted_time_s"] for p in preds}
    cublas = {c["n"]: c for c in raw["cublas"]}
    options = {c[0]: (c[2], c[3]) for c in C.CASES}
    out = []
    for n in raw["sizes"]:
        cb = cublas[n]
        out.append(f"\n### N = {n}  (cuBLAS FP32, TF32 off: {cb['median_s'] * 1e3:.3f} ms "
                   f"[{cb['min_s'] * 1e3:.3f}-{cb['max_s'] * 1e3:.3f}], "
                   f"{cb['tflops']:.1f} TFLOP/s)\n")
        out.append("| case | work-group; TM×TN, BK | median ms [min-max] | TFLOP/s | % cuBLAS "
                   "| predicted ms | model error | checked |")
        out.append("|---|---|---|---|---|---|---|---|")
        for r in raw["cases"]:
            if r["n"] != n:
                continue
            tile, opt = options[r["label"]]
            ex = r.get("extra") or {}
            if "tm" in ex:
                params = (f"{tile}×{ex['wg_rows']}; {ex['tm']}×{ex['tn']}, BK {ex['bk']} "
                          f"(block {ex['bm']}×{ex['bn']})")
            else:
                params = f"{tile}×{tile}"
            p = pred.get((r["label"], n))
            if r["status"] != "ok":
                out.append(f"| {r['label']} | {params} | {r['status']}: "
                           f"{r.get('error_type', '')} {r.get('error', '')[:80]} | | | "
                           f"{'' if p is None else f'{p * 1e3:.3f}'} | | no |")
                continue
            med = r["median_s"]
            perr = "not computed" if p is None else f"{(p - med) / med * 100:+.0f}%"
            pms = "not computed" if p is None else f"{p * 1e3:.3f}"
            chk = r["run"]["check"]
            out.append(f"| {r['label']} | {params} | {med * 1e3:.3f} "
                       f"[{r['min_s'] * 1e3:.3f}-{r['max_s'] * 1e3:.3f}] | {r['tflops']:.1f} "
                       f"| {cb['median_s'] / med * 100:.0f}% | {pms} | {perr} | "
                       f"{'yes' if r['checked'] else 'NO'} (err/tol "
                       f"{chk['error_over_tolerance']:.2f}) |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    print(tables(Path(sys.argv[1] if len(sys.argv) > 1 else "reports/nvidia-h200/ladder")))
