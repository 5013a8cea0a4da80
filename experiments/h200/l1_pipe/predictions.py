"""Pre-register the model's L1 data-pipe wavefronts for launches its barrier term was not
read from, before measuring them.

The barrier term (``barrier_wavefronts_per_work_group``) was read off the L1 data-pipe
counters of ``reports/nvidia-h200/l1_pipe`` (gemm-tiled at N = 1024 and 4096, matvec-local
at 16384). This writes ``reports/nvidia-h200/l1_pipe/holdout/predictions.json``: for other
sizes (CASES), the ``nvidia-h200`` model's L1 wavefronts (``TrafficPrediction.l1_wavefronts``)
and their barrier part. The file is committed before the device run, which then uses it as
its case list::

    python3 -m experiments.h200.codegen.driver --out $OUT --skip times --skip options \\
        --skip occupancy --skip carveout --skip counters_ptx --l1-pipe-metrics \\
        --cubin-cases reports/nvidia-h200/l1_pipe/holdout/predictions.json

Usage: ``python -m experiments.h200.l1_pipe.predictions`` (under a minute). The committed
file was written by ``python benchmarks/h200_l1_pipe_predictions.py``, this module's earlier
path (its ``command``).
"""
from __future__ import annotations

import datetime as _dt
import json
import subprocess
import sys

from experiments.h200.hardware import modelled_launch
from tiletraffic.simulator.model.device_model import DEVICE_MODELS

from experiments.h200.data import REPO, REPORT

NVIDIA_H200 = DEVICE_MODELS["nvidia-h200"]

CASES = [("gemm-tiled", 2048, 8), ("gemm-tiled", 2048, 16), ("gemm-tiled", 2048, 32),
         ("gemm-tiled", 3072, 8), ("gemm-tiled", 6144, 32), ("gemm-naive", 2048, 16),
         ("matvec-local", 8192, 256)]
"""(schedule, N, tile): square sizes none of which the barrier term was read from."""

OUT = REPORT / "l1_pipe" / "holdout" / "predictions.json"


def main() -> int:
    cases = []
    for family, n, tile in CASES:
        launch = modelled_launch(family, n, n, None if family.startswith("matvec") else n,
                                 tile, NVIDIA_H200)
        barrier = NVIDIA_H200.barrier_wavefronts_per_work_group * launch.counts.barriers
        cases.append({"family": family, "n": n, "tile": tile,
                      "l1_wavefronts": launch.prediction.l1_wavefronts,
                      "barrier_wavefronts": barrier})
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True,
                            text=True).stdout.strip()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    tmp = OUT.with_suffix(".tmp")
    tmp.write_text(json.dumps({
        "meta": {"created_utc": _dt.datetime.now(_dt.timezone.utc).strftime(
                     "%Y-%m-%dT%H:%M:%SZ"),
                 "code_commit": commit, "device_model": NVIDIA_H200.name,
                 "command": "python -m experiments.h200.l1_pipe.predictions"},
        "cases": cases}, indent=1))
    tmp.replace(OUT)
    print(f"wrote {OUT} ({len(cases)} cases)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
