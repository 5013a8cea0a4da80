"""Pre-register the model's predictions for the held-out H200 sizes before measuring them.

Writes ``reports/nvidia-h200/holdout/predictions.json``: for every case of
``experiments.h200.validation.driver --holdout`` (GEMM at N = 2048 and 6144, every schedule and
tile; matrix-vector at 8192), what ``simulator.model.launch.model_launch`` with the
``nvidia-h200`` device model predicts (the JSON keys of ``tiletraffic simulate --json``), the
predicted speedups over the naive schedule and the predicted order of the schedules per size.
The file is committed before the device run; ``python -m experiments.h200.render
reports/nvidia-h200/holdout`` later compares it with the model of the day and with the
counters (:func:`experiments.h200.holdout.analysis.preregistered_check`).

Usage: ``python -m experiments.h200.holdout.predictions [--out DIR]`` (about a minute). The
committed file was written by ``python benchmarks/h200_holdout_predictions.py``, this
module's earlier path (its ``command``).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import subprocess
from pathlib import Path

from experiments.h200.hardware import modelled_launch
from tiletraffic.simulator.model.device_model import DEVICE_MODELS

from experiments.h200.data import REPO, REPORT
from experiments.h200.validation.driver import case_list

NVIDIA_H200 = DEVICE_MODELS["nvidia-h200"]

KEYS = ("global_load_instructions", "global_load_requests", "global_load_sectors",
        "l2_read_sectors", "dram_read_bytes", "dram_read_bytes_lockstep", "dram_write_bytes",
        "predicted_time_s", "bound")


def predictions(cases: list[dict]) -> dict:
    """Per case the predicted quantities; per size the predicted speedups and order."""
    out: dict = {"cases": {}, "speedups": {}, "rankings": {}}
    for c in cases:
        d = modelled_launch(c["family"], c["m"], c["k"], c["n"], c["tile"],
                            NVIDIA_H200).to_dict()
        out["cases"][c["id"]] = {k: d[k] for k in KEYS if k in d}
    by = {(c["family"], c["m"], c["n"], c["tile"]): c["id"] for c in cases}
    groups: dict[str, list[str]] = {}
    for c in cases:
        base = {"gemm-tiled": "gemm-naive", "matvec-local": "matvec-naive",
                "matvec-local-whole": "matvec-naive"}.get(c["family"])
        ref = by.get((base, c["m"], c["n"], c["tile"])) if base else None
        if ref:
            out["speedups"][c["id"]] = (out["cases"][ref]["predicted_time_s"]
                                        / out["cases"][c["id"]]["predicted_time_s"])
        kind = "gemm" if c["family"].startswith("gemm") else "matvec"
        groups.setdefault(f"{kind}-M{c['m']}-K{c['k']}" + (f"-N{c['n']}" if c["n"] else ""),
                          []).append(c["id"])
    for size, ids in groups.items():
        out["rankings"][size] = sorted(ids, key=lambda i: out["cases"][i]["predicted_time_s"])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=REPORT / "holdout")
    args = ap.parse_args(argv)
    cases = case_list(local=False, holdout=True)
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    data = {"created_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "model": NVIDIA_H200.name, "code_commit": head,
            "command": "python -m experiments.h200.holdout.predictions", **predictions(cases)}
    args.out.mkdir(parents=True, exist_ok=True)
    tmp = args.out / "predictions.json.tmp"
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, args.out / "predictions.json")
    print(f"{len(cases)} cases -> {args.out / 'predictions.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
