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
import contextlib
import dataclasses
import sys
import warnings

from experiments.h200.ladder.driver import (add_timing_options, begin_run, chosen_cases,
                                            cublas_reference, timed_rounds)
from experiments.h200.ladder.driver import run_case as ladder_run_case

from experiments.h200.block_order import cases as C


@contextlib.contextmanager
def extra_build_options(options: tuple[str, ...]):
    """While inside, every generated kernel is built with ``options`` added to its own."""
    from tiletraffic.gpu.codegen import generate as codegen

    real = codegen.generate

    def generate(schedule):
        kernel = real(schedule)
        return dataclasses.replace(
            kernel, build_options=tuple(kernel.build_options) + tuple(options))

    codegen.generate = generate if options else real
    try:
        yield
    finally:
        codegen.generate = real


def run_case(case, n: int, device, repeat: int, with_options: bool) -> dict:
    """:func:`experiments.h200.ladder.driver.run_case` of the case, its build options (the
    register cap) added where ``with_options``."""
    label, family, tile, options, build_options = case
    used = tuple(build_options) if with_options else ()
    with extra_build_options(used):
        rec = ladder_run_case((label, family, tile, options), n, device, repeat)
    rec["build_options"] = list(used)
    return rec


def timing_main(argv, description: str, module: str, filename: str, sizes, all_cases,
                run) -> int:
    """The main of a timing driver with a PoCL rehearsal (``--dry-run-local``: size 256,
    repeat 10, one round, no torch): cuBLAS before and after, ``run(case, n, device,
    repeat, on_device)`` per case and size and round, ``OUT/filename`` saved after each."""
    p = argparse.ArgumentParser(description=description)
    add_timing_options(p, sizes, 330.0)
    p.add_argument("--dry-run-local", action="store_true",
                   help="PoCL rehearsal: size 256, repeat 10, one round, no torch")
    a = p.parse_args(argv)
    if a.dry_run_local:
        a.sizes, a.repeat, a.rounds, a.device = [256], 10, 1, None
    cases = chosen_cases(p, a, all_cases)
    warnings.simplefilter("ignore")
    raw, save, start = begin_run(module, argv, a, filename)

    def reference(when: str):
        if not a.dry_run_local:
            cublas_reference(raw, a.sizes, a.repeat, when, save)

    reference("before")
    timed_rounds(raw, cases, a.sizes, a.rounds, start, a.budget_s,
                 lambda case, n: run(case, n, a.device, a.repeat, not a.dry_run_local), save)
    reference("after")
    save()
    return 0


def main(argv=None) -> int:
    return timing_main(argv, __doc__.splitlines()[0], "experiments.h200.block_order.driver",
                       "block_order_raw.json", C.SIZES, C.CASES, run_case)


if __name__ == "__main__":
    sys.exit(main())
