"""The simulator against Oclgrind on the same kernels: same counts, time side by side.

DESIGN.md's goal: at least 100 times faster than Oclgrind with the same counts. Each case is
counted by the simulator (full execution, and by work-group classes) and by Oclgrind's
instruction counter on the generated OpenCL kernel; the script asserts nothing about time,
it prints the counts (which must be equal) and the ratio of the times.

    python benchmarks/bench_vs_oclgrind.py
"""
from __future__ import annotations

import time

from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_counts
from tiletraffic.simulator.kernels import families as schedules
from tiletraffic.simulator.engine.accelerators import Accelerators
from tiletraffic.simulator.engine.simulation import simulate

CASES = [("gemm-naive", 64, 16), ("gemm-tiled", 64, 16), ("gemm-tiled", 128, 16),
         ("matvec-local", 1024, 256)]
KEYS = ("global_load_elems", "global_store_elems", "local_load_elems", "local_store_elems",
        "barriers")


def main() -> None:
    print(f"{'case':24s} {'oclgrind s':>11s} {'simulator s':>12s} {'by classes s':>13s} "
          f"{'speedup':>8s} {'counts equal':>13s}")
    for family, n, tile in CASES:
        sch = schedules.build(family, n, n, n if family.startswith("gemm") else None, tile)
        t0 = time.perf_counter()
        ocl = oclgrind_counts(sch).to_dict()
        t_ocl = time.perf_counter() - t0
        t0 = time.perf_counter()
        full = simulate(sch, compute_values=False, limits=None).counts.to_dict()
        t_sim = time.perf_counter() - t0
        t0 = time.perf_counter()
        simulate(sch, compute_values=False, limits=None,
                 accelerators=Accelerators(work_group_classes=True))
        t_cls = time.perf_counter() - t0
        equal = all(full[k] == ocl[k] for k in KEYS)
        print(f"{family + f' N={n}':24s} {t_ocl:11.2f} {t_sim:12.3f} {t_cls:13.3f} "
              f"{t_ocl / min(t_sim, t_cls):8.0f} {str(equal):>13s}")


if __name__ == "__main__":
    main()
