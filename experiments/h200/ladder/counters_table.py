"""The ladder's Nsight Compute counters against the model (no GPU needed).

Reads ``ladder_counters.json(.gz)`` written by :mod:`experiments.h200.ladder.counters`,
models every case with the device model of the counted build (the CUDA build:
:func:`experiments.h200.hardware.counter_model_for`, ``nvidia-h200-cuda``) and prints
one markdown table per case: each quantity of :data:`experiments.h200.hardware.COMPARED`
(predicted, measured, relative error, whether its target is met), plus the registers per
work-item the CUDA build used (``launch__registers_per_thread``).

    python -m experiments.h200.ladder.counters_table reports/nvidia-h200/ladder
"""
from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from experiments.h200.data import load_json


def comparisons(raw: dict) -> list[dict]:
    """One entry per counted case: id, label, registers, rows (as CaseComparison.rows)."""
    from experiments.h200.hardware import CaseComparison, _counter_values, counter_model_for
    from tiletraffic.simulator.model.device_model import DEVICE_MODELS
    from tiletraffic.simulator.model.launch import model_launch
    from experiments.h200.validation.driver import build_case

    model = counter_model_for(DEVICE_MODELS["nvidia-h200"])
    labels = {c["id"]: c.get("label", c["id"]) for c in raw.get("cases", [])}
    by_id = {c["id"]: c for c in raw.get("cases", [])}
    out = []
    for rec in raw.get("records", []):
        counters = _counter_values(rec)
        entry = {"id": rec["id"], "label": labels.get(rec["id"], rec["id"]),
                 "check": rec.get("check"), "error": rec.get("error"),
                 "registers": counters.get("launch__registers_per_thread"),
                 "cuda_function": rec.get("cuda_function"), "rows": []}
        if counters:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                launch = model_launch(build_case(by_id[rec["id"]]), model)
            cmp = CaseComparison(rec["id"], rec["schedule"], rec["m"], rec["k"], rec.get("n"),
                                 rec["tile"], launch, counters, None,
                                 (counters.get("gpu__time_duration.sum") or 0) * 1e-9)
            entry["rows"] = cmp.rows()
        out.append(entry)
    return out


def markdown(entries: list[dict]) -> str:
    lines = []
    exact = [r for e in entries for r in e["rows"] if r["target"] == "exact"]
    lines.append(f"Exact-target quantities equal to Nsight Compute: "
                 f"{sum(1 for r in exact if r['met'])} of {len(exact)}.\n")
    for e in entries:
        lines.append(f"### {e['label']} ({e['id']})\n")
        if e["error"]:
            lines.append(f"error: {e['error']}\n")
        if e["check"]:
            lines.append(f"result check (CUDA build vs float64): ok = {e['check'].get('ok')}; "
                         f"registers per work-item (CUDA build): {e['registers']}\n")
        if not e["rows"]:
            continue
        lines.append("| quantity | predicted | Nsight Compute | error | target met |")
        lines.append("|---|---:|---:|---:|---|")
        for r in e["rows"]:
            met = "" if r["met"] is None else ("yes" if r["met"] else "**no**")
            lines.append(f"| {r['quantity']} | {r['predicted']:,.0f} | {r['measured']:,.0f} | "
                         f"{100 * r['relative_error']:+.1f}% | {met} |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder", type=Path)
    a = p.parse_args(argv)
    raw = (load_json(a.folder / "ladder_counters.json.gz")
           or load_json(a.folder / "ladder_counters.json"))
    if raw is None:
        print(f"no ladder_counters.json(.gz) in {a.folder}", file=sys.stderr)
        return 2
    print(markdown(comparisons(raw)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
