"""Speed and memory of the simulator against the targets of issue #2.

Targets (2-core machine): exact counts of gemm-tiled at M=N=K=1024, B=16 within 10 s;
gemm-naive at M=N=K=512 within 10 s; peak memory under 4 GiB. Each case runs in a fresh
process so that its peak resident memory is its own. Prints measured time, target and their
ratio (below 1 meets the target), plus the counts.

    python benchmarks/bench_simulator.py [--values]
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
import time

CASES = [("gemm-tiled", 1024, 16, 10.0), ("gemm-naive", 512, 16, 10.0)]
MEMORY_TARGET_BYTES = 4 * 2**30


def _one(family: str, n: int, tile: int, values: bool, queue) -> None:
    import numpy as np

    from tiletraffic.simulator.kernels import families as schedules
    from tiletraffic.simulator.engine.simulation import simulate
    from tiletraffic.simulator.engine.data_inputs import random_inputs

    sch = schedules.build(family, n, n, n, tile)
    inputs = random_inputs(sch, np.random.default_rng()) if values else None
    t0 = time.perf_counter()
    res = simulate(sch, inputs, compute_values=values)
    elapsed = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
    queue.put((elapsed, peak, res.counts.global_load_elems))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--values", action="store_true",
                    help="also compute the output matrix (not part of the target)")
    args = ap.parse_args()
    ctx = mp.get_context("spawn")
    print(f"{'case':28s} {'time s':>8s} {'target s':>9s} {'ratio':>6s} {'peak MiB':>9s} "
          f"{'mem ratio':>9s} {'global loads':>14s}")
    for family, n, tile, target in CASES:
        q = ctx.Queue()
        p = ctx.Process(target=_one, args=(family, n, tile, args.values, q))
        p.start()
        elapsed, peak, loads = q.get()
        p.join()
        print(f"{family + f' N={n} B={tile}':28s} {elapsed:8.2f} {target:9.1f} "
              f"{elapsed / target:6.2f} {peak / 2**20:9.0f} {peak / MEMORY_TARGET_BYTES:9.3f} "
              f"{loads:14d}")


if __name__ == "__main__":
    main()
