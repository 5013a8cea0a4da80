"""cuBLAS FP32 (torch ``a @ b``, TF32 off, CUDA events) at (M, K, N) shapes, beside a
``tiletraffic tune`` run of the same shapes in one device call.

    python3 -m experiments.h200.warp_tiled.cublas_shapes --out FILE 512,11008,4096 128,4096,11008

Writes FILE (JSON): per shape the median, min and max of ``--repeat`` timed products after 3
warm-ups, and the largest error of the first 64 rows against float64.
"""
from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path


def time_shape(m: int, k: int, n: int, repeat: int) -> dict:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    g = torch.Generator(device="cuda").manual_seed(m + k + n)
    a = torch.randn(m, k, device="cuda", dtype=torch.float32, generator=g)
    b = torch.randn(k, n, device="cuda", dtype=torch.float32, generator=g)
    for _ in range(3):
        c = a @ b
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        c = a @ b
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / 1e3)
    err = float((c[:64].double() - a[:64].double() @ b.double()).abs().max())
    return {"m": m, "k": k, "n": n, "times_s": times, "median_s": statistics.median(times),
            "min_s": min(times), "max_s": max(times), "allow_tf32": False,
            "max_abs_error_first_64_rows": err}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--repeat", type=int, default=50)
    p.add_argument("shapes", nargs="+", help="M,K,N")
    a = p.parse_args(argv)
    out = []
    for text in a.shapes:
        m, k, n = (int(x) for x in text.split(","))
        out.append(time_shape(m, k, n, a.repeat))
        print("cublas", m, k, n, out[-1]["median_s"], flush=True)
    a.out.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
