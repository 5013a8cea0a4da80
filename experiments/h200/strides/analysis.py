"""The stride family's measurements against the predictions committed before the run
(no GPU): one row per case with both passes' medians, the spread, the prediction and its
error, and the ratio of each aligned stride (K a multiple of 32 floats) to the mean of its
unaligned neighbours.

    python -m experiments.h200.strides.analysis reports/nvidia-h200/strides
"""
from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from experiments.h200.data import read_json


def _load(folder: Path, name: str):
    for candidate in (folder / name, folder / f"{name}.gz"):
        if candidate.exists():
            return read_json(candidate)
    raise FileNotFoundError(f"no {name} (or {name}.gz) in {folder}")


def rows(raw: dict, predictions: dict) -> list[dict]:
    """Per case id (in the order first measured): medians of every pass, the worst spread,
    the predicted time and the error of the prediction against the median of the medians."""
    by_id: dict[str, list[dict]] = {}
    for rec in raw["cases"]:
        by_id.setdefault(rec["id"], []).append(rec)
    out = []
    for cid, recs in by_id.items():
        ok = [r for r in recs if r.get("status") == "ok" and r.get("checked")]
        pred = predictions["cases"].get(cid, {}).get("predicted_time_s")
        med = statistics.median(r["median_s"] for r in ok) if ok else None
        out.append({"id": cid, "k": recs[0].get("k"), "family": recs[0]["family"],
                    "aligned": recs[0].get("stride_multiple_of_128_bytes"),
                    "medians_s": [r["median_s"] for r in ok],
                    "spread": max((r["spread"] for r in ok), default=None),
                    "measured_s": med, "predicted_s": pred,
                    "error": (pred - med) / med if pred is not None and med else None,
                    "not_ok": [f"{r['status']}: {r.get('error', '')[:120]}" for r in recs
                               if r not in ok]})
    return out


def aligned_ratios(table: list[dict]) -> list[dict]:
    """For each aligned matvec stride: its time / the mean of the unaligned strides within
    ±2 of it that were measured."""
    mv = {r["k"]: r for r in table if r["family"].startswith("matvec") and r["measured_s"]}
    out = []
    for k, r in sorted(mv.items()):
        if not r["aligned"]:
            continue
        near = [mv[j]["measured_s"] for j in range(k - 2, k + 3)
                if j in mv and not mv[j]["aligned"]]
        if near:
            out.append({"k": k, "ratio": r["measured_s"] / statistics.mean(near),
                        "neighbours": len(near)})
    return out


def markdown(table: list[dict], ratios: list[dict]) -> str:
    lines = ["| case | multiple of 128 B | medians (ms) | spread | predicted (ms) | error |",
             "|---|---|---|---|---|---|"]
    for r in table:
        med = ", ".join(f"{m * 1e3:.4f}" for m in r["medians_s"]) or "—"
        lines.append(f"| {r['id']} | {'yes' if r['aligned'] else 'no'} | {med} | "
                     + (f"{r['spread']:.1%}" if r["spread"] is not None else "—") + " | "
                     + (f"{r['predicted_s'] * 1e3:.4f}" if r["predicted_s"] else "—") + " | "
                     + (f"{r['error']:+.1%}" if r["error"] is not None else "—")
                     + (f" ({'; '.join(r['not_ok'])})" if r["not_ok"] else "") + " |")
    errs = sorted(abs(r["error"]) for r in table if r["error"] is not None)
    if errs:
        lines += ["", f"{len(errs)} cases: median |error| {statistics.median(errs):.1%}, "
                  f"worst {errs[-1]:.1%}, within 25%: {sum(e <= 0.25 for e in errs)}."]
    for q in ratios:
        lines.append(f"- K = {q['k']}: {q['ratio']:.2f}x the mean of its {q['neighbours']} "
                     "unaligned neighbours (K ± 2)")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder", type=Path, help="holds strides_raw.json[.gz] and predictions.json")
    a = p.parse_args(argv)
    table = rows(_load(a.folder, "strides_raw.json"), _load(a.folder, "predictions.json"))
    print(markdown(table, aligned_ratios(table)), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
