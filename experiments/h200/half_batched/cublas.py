"""cuBLAS through torch beside our kernels, in the same device call: matrix-vector
(``torch.mv``) and GEMM (``torch.matmul``) in float16 and float32, batched GEMMs
(``torch.bmm``) against the same products launched one at a time (a Python loop of
``torch.matmul``, timed as a whole with CUDA events: every launch's gap included).

TF32 is off, and float16 GEMMs accumulate in float32
(``allow_fp16_reduced_precision_reduction = False``); cuBLAS's float16 GEMMs still run on
the tensor cores, which our kernels do not use.

    python3 -m experiments.h200.half_batched.cublas --out OUT/cublas.json

Writes one JSON document: the device, torch's versions and settings, and one record per
case (``op``, shape, dtype, ``median_ms``, ``min_ms`` over ``--timed`` launches after
``--warmup``).
"""
from __future__ import annotations

import argparse
import json
import statistics

MATVEC_SHAPES = ((4096, 4096), (11008, 4096), (4096, 11008), (32000, 4096))
"""M x K of y = A·x: a layer of an LLM (the up, down and vocabulary projections)."""
GEMM_SIZES = (1024, 4096)
"""M = K = N of C = A·B."""
BATCHES = ((64, 128, 128, 128), (32, 512, 64, 512))
"""(batch, M, K, N): 64 products of 128³ and 32 attention-shaped 512×64 · 64×512."""


def _time(torch, fn, warmup: int, timed: int) -> dict:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(timed):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return {"median_ms": statistics.median(times), "min_ms": min(times), "timed": timed}


def measure(warmup: int = 5, timed: int = 30) -> dict:
    """Every case's times (module docstring)."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    dtypes = {"float32": torch.float32, "float16": torch.float16}
    g = torch.Generator(device="cuda").manual_seed(0)
    doc = {"torch": torch.__version__, "cuda": torch.version.cuda,
           "device": torch.cuda.get_device_name(0),
           "allow_tf32": torch.backends.cuda.matmul.allow_tf32,
           "allow_fp16_reduced_precision_reduction":
               torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
           "cases": []}

    def add(record, fn):
        record.update(_time(torch, fn, warmup, timed))
        doc["cases"].append(record)
        print(json.dumps(record), flush=True)

    for name, dt in dtypes.items():
        for m, k in MATVEC_SHAPES:
            a = torch.randn(m, k, device="cuda", dtype=dt, generator=g)
            x = torch.randn(k, device="cuda", dtype=dt, generator=g)
            add({"op": "mv", "m": m, "k": k, "dtype": name}, lambda: torch.mv(a, x))
        for n in GEMM_SIZES:
            a = torch.randn(n, n, device="cuda", dtype=dt, generator=g)
            b = torch.randn(n, n, device="cuda", dtype=dt, generator=g)
            add({"op": "matmul", "m": n, "k": n, "n": n, "dtype": name},
                lambda: torch.matmul(a, b))
        for batch, m, k, n in BATCHES:
            a = torch.randn(batch, m, k, device="cuda", dtype=dt, generator=g)
            b = torch.randn(batch, k, n, device="cuda", dtype=dt, generator=g)
            add({"op": "bmm", "batch": batch, "m": m, "k": k, "n": n, "dtype": name},
                lambda: torch.bmm(a, b))

            def one_at_a_time():
                for i in range(batch):
                    torch.matmul(a[i], b[i])
            add({"op": "matmul x batch", "batch": batch, "m": m, "k": k, "n": n,
                 "dtype": name}, one_at_a_time)
            add({"op": "matmul", "m": m, "k": k, "n": n, "dtype": name},
                lambda: torch.matmul(a[0], b[0]))
    return doc


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--timed", type=int, default=30)
    args = parser.parse_args(argv)
    doc = measure(args.warmup, args.timed)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
