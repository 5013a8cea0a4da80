"""Where does gemm-prefetch 4x4 lose to gemm-register-blocked 4x4 at N = 1024 on the H200?

validate measured gemm-prefetch (BK 16, 4 x 4 per work-item) 7% slower than
gemm-register-blocked at M = N = K = 1024 in round 7 (0.115 against 0.107 ms) and faster at
4096, where the model predicts it 1% faster at both; it is validate's worst case in every
round (-12..-14%). At 1024 the 256 work-groups fill each SM with at most 2, so a launch is
64 K steps of few warps. This script runs both at M = N = 1024 and 2048 over K = 256 ..
4096 (results checked against float64, median of ``--repeat`` event-timed launches, the
build's registers) so the time splits into a part per K step and a fixed part, to set
against the model's (``ksweep_table``, no GPU).

Run on the device after the preamble of ``experiments/README.md``; with the driver's JIT
cache kept, a second invocation reads the machine code of both kernels (main-loop counts:
instructions, global and local loads, local stores, barriers, FFMAs, per K step)::

    CUDA_CACHE_PATH=/tmp/jit CUDA_CACHE_DISABLE=0 \
        python3 -m experiments.h200.ladder.ksweep --device NVIDIA --out $OUT/ksweep.json
    python3 -m experiments.h200.ladder.ksweep --read-jit-cache /tmp/jit --out $OUT/ksweep_sass
"""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np

import tiletraffic as tt

FAMILIES = (("gemm-register-blocked", {"bk": 16, "tm": 4, "tn": 4}),
            ("gemm-prefetch", {"bk": 16, "tm": 4, "tn": 4}))
MN = (1024, 2048)
K = (256, 512, 1024, 2048, 4096)
TILE = 16


def cases():
    """(family, options, m=n, k) of the sweep."""
    for family, options in FAMILIES:
        for mn in MN:
            for k in K:
                yield family, options, mn, k


def main(argv: list[str] | None = None) -> int:
    from experiments.h200.matvec.codeform import add_read_jit_cache

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default=None)
    p.add_argument("--out", required=True)
    p.add_argument("--repeat", type=int, default=30)
    add_read_jit_cache(p, "both kernels' machine code")
    a = p.parse_args(argv)
    if a.read_jit_cache is not None:
        from pathlib import Path

        from experiments.h200.matvec.codeform import write_jit_sass

        return write_jit_sass(a.read_jit_cache, Path(a.out),
                              tuple(f.replace("-", "_") for f, _ in FAMILIES))
    rows = []
    for family, options, mn, k in cases():
        sch = tt.build(family, m=mn, k=k, n=mn, tile=TILE, **options)
        r = tt.run(sch, a.device, repeat=a.repeat, seed=14)
        d = r.to_dict()
        times = d["kernel_times_s"]
        q = np.percentile(times, [25, 50, 75])
        rows.append({"family": family, "options": options, "m": mn, "n": mn, "k": k,
                     "tile": TILE, "times_s": times, "median_s": float(q[1]),
                     "iqr_s": float(q[2] - q[0]), "check_ok": bool(d["check"]["ok"]),
                     "registers": d["registers_per_work_item"]})
        print(f"{family:22s} {mn:5d} K={k:5d} {q[1] * 1e3:8.4f} ms (iqr "
              f"{(q[2] - q[0]) * 1e3:.4f}) registers {rows[-1]['registers']} "
              f"check {rows[-1]['check_ok']}", flush=True)
    with open(a.out, "w") as f:
        json.dump({"repeat": a.repeat, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
