"""Speed of the tuner's ranking step (issue #13 target: the model ranks 200 candidates at
N = 4096 in at most 60 s on 2 cores).

Models every valid candidate of the built-in space (``analysis/tune/spaces/gemm.toml``,
213 valid at N = 4096) on ``nvidia-h200`` with ``tiletraffic.tune(..., top=0)`` (nothing
measured, no device) and prints the wall time, the target scaled to the number of
candidates (60 s per 200) and their ratio (below 1 meets it), plus the slowest candidates.
``--n 256`` checks the script in a minute; the issue's size is the default.

    python benchmarks/bench_tuner.py [--n 4096] [--jobs 2] [--out FILE]
"""
from __future__ import annotations

import argparse
import time

import tiletraffic as tt

TARGET_S_PER_200 = 60.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=4096, help="M = N = K (default 4096)")
    parser.add_argument("--jobs", type=int, default=2, help="modelling processes (default 2)")
    parser.add_argument("--out", default=None,
                        help="save the predictions as they come (resumable with --resume)")
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args()
    t0 = time.perf_counter()
    res = tt.tune(args.n, args.n, args.n, top=0, jobs=args.jobs, out=args.out,
                  resume=args.resume, progress=True)
    elapsed = time.perf_counter() - t0
    count = res.summary["modelled"]
    target = TARGET_S_PER_200 * count / 200
    print(f"N = {args.n}: {count} candidates modelled in {elapsed:.1f} s with {args.jobs} "
          f"processes; target {target:.1f} s ({TARGET_S_PER_200:.0f} s per 200): ratio "
          f"{elapsed / target:.2f}")
    slow = sorted(res.predictions, key=lambda p: -p["model_s"])[:5]
    for p in slow:
        print(f"  {p['model_s']:8.1f} s  {p['label']}")


if __name__ == "__main__":
    main()
