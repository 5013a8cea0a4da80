"""Block order (``group_rows``) and a register cap for gemm-warp-tiled at 4096³ on the
H200, against cuBLAS FP32 in the same run.

One device call, after the device preamble of ``experiments/README.md``::

    PYTHONUNBUFFERED=1 timeout 400 python3 -m experiments.h200.block_order.driver --out $OUT

What it does: cuBLAS FP32 through torch (TF32 off, CUDA events) before and after; every case
of :mod:`.cases` through ``tiletraffic.run`` (NVIDIA's OpenCL driver, 2 warm-ups,
``--repeat`` timed launches, the output checked against float64 numpy before its time
counts; registers from the build log), ``--rounds`` times. A case's build options (the
register cap) are added to the generated kernel's. Output: ``OUT/block_order_raw.json``,
rewritten after every case. Rehearsal on PoCL: ``--dry-run-local`` (size 256, no torch, no
build options).
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import time
import traceback
import warnings

from experiments.h200.ladder.driver import (add_timing_options, begin_run, chosen_cases,
                                            cublas_reference, timed_rounds)

from . import cases as C


def run_case(case, n: int, device, repeat: int, with_options: bool) -> dict:
    import tiletraffic
    from tiletraffic.gpu import codegen

    label, family, tile, options, build_options = case
    rec = {"label": label, "family": family, "tile": tile, "options": options, "n": n,
           "build_options": list(build_options) if with_options else []}
    real = codegen.generate

    def generate(schedule):
        kernel = real(schedule)
        if with_options and build_options:
            kernel = dataclasses.replace(
                kernel, build_options=tuple(kernel.build_options) + tuple(build_options))
        return kernel

    t0 = time.perf_counter()
    codegen.generate = generate
    try:
        s = tiletraffic.build(family, m=n, k=n, n=n, tile=tile, **options)
        dr = tiletraffic.run(s, device, repeat=repeat, warmup=2, seed=n)
        d = dr.to_dict()
        d.pop("output_digests", None)
        rec.update(status="ok", checked=bool(dr.check.ok), run=d, median_s=dr.run.median_s,
                   min_s=dr.run.min_s, max_s=dr.run.max_s,
                   tflops=2 * n ** 3 / dr.run.median_s / 1e12)
    except Exception as e:  # noqa: BLE001 - one case's failure never stops the run
        rec.update(status="error", checked=False, error_type=type(e).__name__,
                   error=str(e)[:4000], traceback=traceback.format_exc()[-4000:])
    finally:
        codegen.generate = real
    rec["wall_s"] = time.perf_counter() - t0
    return rec


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_timing_options(p, C.SIZES, 330.0)
    p.add_argument("--dry-run-local", action="store_true",
                   help="PoCL rehearsal: size 256, repeat 10, one round, no torch")
    a = p.parse_args(argv)
    if a.dry_run_local:
        a.sizes, a.repeat, a.rounds, a.device = [256], 10, 1, None
    cases = chosen_cases(p, a, C.CASES)
    warnings.simplefilter("ignore")
    raw, save, start = begin_run("experiments.h200.block_order.driver", argv, a,
                                 "block_order_raw.json")

    def reference(when: str):
        if not a.dry_run_local:
            cublas_reference(raw, a.sizes, a.repeat, when, save)

    reference("before")
    timed_rounds(raw, cases, a.sizes, a.rounds, start, a.budget_s,
                 lambda case, n: run_case(case, n, a.device, a.repeat, not a.dry_run_local), save)
    reference("after")
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
