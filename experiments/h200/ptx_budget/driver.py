"""A register budget written into the PTX of gemm-warp-tiled at 4096³ on the H200, against
cuBLAS FP32 in the same run.

One device call, after the device preamble of ``experiments/README.md``::

    PYTHONUNBUFFERED=1 timeout 400 python3 -m experiments.h200.ptx_budget.driver --out $OUT/pb

What it does: cuBLAS FP32 through torch (TF32 off, CUDA events) before and after; every case
of :mod:`.cases` through ``tiletraffic.run`` (NVIDIA's OpenCL driver, 2 warm-ups,
``--repeat`` timed launches, every distinct output checked against float64 numpy before its
time counts; registers from the build log), ``--rounds`` times. A case with directives is
built twice: from source (NVIDIA's driver returns PTX as the program binary), then from that
PTX with the directives added (:func:`.ptx.with_directives`), with the same build options.
Output: ``OUT/ptx_budget_raw.json``, rewritten after every case (the directives found in
each built PTX recorded with it). Rehearsal on PoCL: ``--dry-run-local`` (size 256, no
torch, no directives: PoCL's binaries are not PTX).
"""
from __future__ import annotations

import contextlib
import sys
import time

from experiments.h200.block_order.driver import timing_main
from experiments.h200.ladder.driver import run_case as ladder_run_case

from experiments.h200.ptx_budget import cases as C
from tiletraffic.gpu.runtime.ptx import directives_of, with_directives

BUILT: list[dict] = []
"""What each patched build saw: the entry, the directives asked for and found."""


@contextlib.contextmanager
def ptx_directives(directives: tuple[str, ...]):
    """While inside, ``tiletraffic.gpu.runtime.launch.build_program`` builds every source from its
    PTX with ``directives`` added to each kernel entry of it."""
    import pyopencl as cl
    from tiletraffic.gpu.runtime import launch as runtime

    real = runtime.build_program

    def build_program(target, source, options=()):
        key = (source, tuple(options), directives)
        hit = target.program_cache.get(key)
        if hit is not None:
            return runtime.BuildResult(hit.program, 0.0, True, hit.log, hit.how)
        first = real(target, source, options)
        binary = first.program.get_info(cl.program_info.BINARIES)[0]
        ptx = binary.decode()
        names = first.program.get_info(cl.program_info.KERNEL_NAMES).split(";")
        for name in names:
            ptx = with_directives(ptx, name, directives)
        start = time.perf_counter()
        program = cl.Program(target.context, [target.device],
                             [ptx.encode()]).build(options=list(options))
        elapsed = time.perf_counter() - start
        log = program.get_build_info(target.device, cl.program_build_info.LOG).strip()
        BUILT.append({"entries": names, "asked": list(directives),
                      "found": directives_of(ptx), "log": log[-2000:]})
        result = runtime.BuildResult(program, elapsed, False, log, "from PTX")
        target.program_cache[key] = result
        return result

    runtime.build_program = build_program if directives else real
    try:
        yield
    finally:
        runtime.build_program = real


def run_case(case, n: int, device, repeat: int, with_directives_: bool) -> dict:
    """:func:`experiments.h200.ladder.driver.run_case` of the case, its PTX directives added
    where ``with_directives_``."""
    label, family, tile, options, directives = case
    used = tuple(directives) if with_directives_ else ()
    BUILT.clear()
    with ptx_directives(used):
        rec = ladder_run_case((label, family, tile, options), n, device, repeat)
    rec["directives"] = list(used)
    rec["ptx_builds"] = list(BUILT)
    return rec


def main(argv=None) -> int:
    return timing_main(argv, __doc__.splitlines()[0], "experiments.h200.ptx_budget.driver",
                       "ptx_budget_raw.json", C.SIZES, C.CASES, run_case)


if __name__ == "__main__":
    sys.exit(main())
