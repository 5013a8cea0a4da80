"""Speed of the full memory-system prediction (issue #4 targets, 2-core machine).

Targets: the full cache prediction (coalescing, bank conflicts, L1 footprint, L2, DRAM,
time) for gemm-naive and gemm-tiled at N = 1024 within 60 s, and at N = 4096 within 10
minutes. Both run by work-group classes (simulator/classes.py), which the tests prove equal
to full execution. Prints time, target and ratio (below 1 meets the target) side by side.

    python benchmarks/bench_traffic_model.py
"""
from __future__ import annotations

import argparse
import time
import warnings

from tiletraffic.simulator.kernels import families as schedules
from tiletraffic.simulator.model.device_model import DEVICE_MODELS
from tiletraffic.simulator.model.launch import model_launch

NVIDIA_H200 = DEVICE_MODELS["nvidia-h200"]

CASES = [("gemm-naive", 1024, 60.0), ("gemm-tiled", 1024, 60.0),
         ("gemm-naive", 4096, 600.0), ("gemm-tiled", 4096, 600.0)]


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    warnings.simplefilter("ignore")
    print(f"{'case':24s} {'time s':>8s} {'target s':>9s} {'ratio':>7s} {'sectors':>14s} "
          f"{'L2->L1 sectors':>15s} {'predicted ms':>13s}")
    for family, n, target in CASES:
        t0 = time.perf_counter()
        launch = model_launch(schedules.build(family, n, n, n, 16), NVIDIA_H200)
        elapsed = time.perf_counter() - t0
        print(f"{family + f' N={n}':24s} {elapsed:8.2f} {target:9.0f} {elapsed / target:7.4f} "
              f"{launch.memory.global_load_sectors:14d} {launch.prediction.l2_read_sectors:15d} "
              f"{launch.prediction.predicted_time_s * 1e3:13.3f}")


if __name__ == "__main__":
    main()
