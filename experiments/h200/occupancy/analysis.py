"""Markdown table of the occupancy run (``OUT/raw.json`` of :mod:`.driver`, with
``OUT/predictions.json`` of ``driver --predict-only`` where present). No GPU.

    python -m experiments.h200.occupancy.analysis DIR
"""
from __future__ import annotations

import json
import sys
from pathlib import Path


def rows(raw: dict, predictions: dict | None = None) -> list[dict]:
    """One row per (case, build, R) that ran: times in ms, spread = (max - min) / median."""
    model = {p["label"]: p for p in (predictions or {}).get("cases", [])}
    out = []
    for c in raw["cases"]:
        for build in ("opencl", "cuda"):
            b = c.get(build) or {}
            for r in b.get("rows", []):
                if "median_s" not in r:
                    continue
                p = model.get(c["label"], {})
                out.append({
                    "case": c["label"], "build": build,
                    "r": r["forced_r"] if r["forced_r"] is not None else
                    f"natural ({b['natural_r']})",
                    "carveout": r.get("carveout", "driver"),
                    "measured_r": (r.get("timeline") or {}).get("max_resident_per_sm"),
                    "regs": b.get("registers"), "ms": r["median_s"] * 1e3,
                    "spread_pct": (r["max_s"] - r["min_s"]) / r["median_s"] * 100,
                    "ok": r["check"]["ok"],
                    "model_ms": p["predicted_time_s"] * 1e3 if p else None,
                    "model_r": p.get("resident_work_groups_per_cu")})
    return out


def table(raw: dict, predictions: dict | None = None) -> str:
    head = ("| case | build | R | carveout % | measured R | regs | measured ms | spread % "
            "| check | model ms (natural R) | model R |\n|" + "---|" * 11)
    lines = [head]
    for r in rows(raw, predictions):
        model = "—" if r["model_ms"] is None else f"{r['model_ms']:.3f}"
        lines.append(f"| {r['case']} | {r['build']} | {r['r']} | {r['carveout']} | "
                     f"{r['measured_r'] if r['measured_r'] is not None else '—'} | "
                     f"{r['regs'] if r['regs'] is not None else '—'} | {r['ms']:.3f} | "
                     f"{r['spread_pct']:.1f} | {'ok' if r['ok'] else 'FAIL'} | {model} | "
                     f"{r['model_r'] if r['model_r'] is not None else '—'} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    folder = Path((argv if argv is not None else sys.argv[1:])[0])
    pred = folder / "predictions.json"
    print(table(json.loads((folder / "raw.json").read_text()),
                json.loads(pred.read_text()) if pred.exists() else None), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
