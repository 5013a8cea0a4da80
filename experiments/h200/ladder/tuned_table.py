"""The GEMM ladder with its tuned step (issue #13 item 5), from committed raw data only.

Reads the ladder run (``reports/nvidia-h200/ladder/ladder_raw.json.gz``: naive -> tiled ->
register-blocked -> vectorized -> prefetch and five hand-picked choices, 05:44 UTC), the
tuner's runs of the pre-registered call (``reports/nvidia-h200/preregistered/tune/gemm-N.json.gz``:
213 candidates ranked by the calibrated model, the top 8 measured) and that call's cuBLAS
FP32 reference (``reports/nvidia-h200/ladder/tuned/cublas_raw.json.gz``), and prints one
markdown table per N: each step's measured median, TFLOP/s (2 N^3 / median), % of cuBLAS
FP32 of the same call, the model's prediction and its error where there is one. The
ladder's own predictions (``model_predictions*.json.gz``) were made by an earlier model
(see findings.md); the tuned rows' predictions are the tuner's own (the calibrated model).

    python -m experiments.h200.ladder.tuned_table reports/nvidia-h200 > reports/nvidia-h200/ladder/ladder.md
"""
from __future__ import annotations

import argparse
from pathlib import Path

from experiments.h200.data import load_json


def _cublas(raw: dict | None) -> dict[int, float]:
    return {c["n"]: c["median_s"] for c in (raw or {}).get("cublas", []) if "median_s" in c}


def rows(root: Path) -> dict[int, list[dict]]:
    """Per N: the ladder's rows and the tuned rows (step, what, median_s, cublas_s,
    predicted_s)."""
    ladder = load_json(root / "ladder" / "ladder_raw.json.gz") or {}
    cublas_then = _cublas(ladder)
    cublas_now = _cublas(load_json(root / "ladder" / "tuned" / "cublas_raw.json.gz"))
    out: dict[int, list[dict]] = {}
    for c in ladder.get("cases", []):
        if c.get("status") != "ok":
            continue
        out.setdefault(c["n"], []).append({
            "step": c["label"], "run": "ladder 05:44", "median_s": c["median_s"],
            "cublas_s": cublas_then.get(c["n"]), "predicted_s": None})
    for n in sorted(out) or (1024, 4096, 8192):
        tune = load_json(root / "preregistered" / "tune" / f"gemm-{n}.json.gz")
        if not tune:
            continue
        s = tune["summary"]
        for key, step in (("pick", "tuned: the model's pick"), ("best", "tuned: best measured")):
            r = s[key]
            out.setdefault(n, []).append({
                "step": step, "what": r["label"], "run": "pre-registered call",
                "median_s": r["median_s"], "cublas_s": cublas_now.get(n),
                "predicted_s": r["predicted_time_s"], "rank": r["predicted_rank"]})
    return out


def markdown(table: dict[int, list[dict]]) -> str:
    lines = []
    for n, rs in sorted(table.items()):
        lines += [f"### N = {n}", "",
                  "| step | measured ms | TFLOP/s | % of cuBLAS FP32 (same call) | predicted ms "
                  "| model error | run |", "|---|---:|---:|---:|---:|---:|---|"]
        for r in rs:
            tf = 2 * n ** 3 / r["median_s"] / 1e12
            pct = f"{100 * r['cublas_s'] / r['median_s']:.0f}%" if r["cublas_s"] else ""
            pred = err = ""
            if r["predicted_s"]:
                pred = f"{r['predicted_s'] * 1e3:.3f}"
                err = f"{100 * (r['predicted_s'] - r['median_s']) / r['median_s']:+.0f}%"
            step = r["step"] + (f" ({r['what']}, model rank {r['rank']})" if r.get("what")
                                else "")
            lines.append(f"| {step} | {r['median_s'] * 1e3:.3f} | {tf:.1f} | {pct} | {pred} | "
                         f"{err} | {r['run']} |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("root", type=Path, help="reports/nvidia-h200")
    a = p.parse_args(argv)
    print(markdown(rows(a.root)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
