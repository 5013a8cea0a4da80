"""Which machine code each driver really builds: run by ``driver.py``'s ``jit_sass`` stage
in a child process whose ``CUDA_CACHE_PATH`` is an empty folder with the JIT cache switched
on.

Builds every (schedule, tile) of ``driver.KERNELS`` through NVIDIA's OpenCL driver, then
loads the same OpenCL PTX (``--code`` folder, ``<schedule>-T<tile>.opencl.ptx``) through
CUDA (CuPy), and prints one JSON line: the cache files each build added,
``{"opencl": {name: [paths]}, "cuda": {name: [paths]}}``.

    python -m experiments.h200.codegen.jit_probe --code DIR
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def _case(family: str, tile: int) -> dict:
    return {"family": family, "m": 1024, "k": 1024,
            "n": None if family.startswith("matvec") else 1024, "tile": tile}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--code", type=Path, required=True,
                    help="folder of the OpenCL driver's PTX files (driver.py's code stage)")
    args = ap.parse_args(argv)
    cache = Path(os.environ["CUDA_CACHE_PATH"])

    def files() -> set[str]:
        return {str(p) for p in cache.rglob("*") if p.is_file()}

    import pyopencl as cl

    from tiletraffic.gpu.codegen.generate import generate
    from tiletraffic.gpu.devices.device import select_device
    from tiletraffic.gpu.runtime.launch import build_program

    from experiments.h200.codegen.driver import KERNELS, build_case

    target = select_device("nvidia")
    seen: dict = {"opencl": {}, "cuda": {}}
    before = files()
    for family, tile in KERNELS:
        kernel = generate(build_case(_case(family, tile)))
        prg = build_program(target, kernel.source).program
        cl.Kernel(prg, kernel.name)  # the driver compiles the PTX by now
        now = files()
        seen["opencl"][f"{family}-T{tile}"] = sorted(now - before)
        before = now
    import cupy as cp
    for family, tile in KERNELS:
        if family in ("matvec-local-whole",):
            continue
        kernel = generate(build_case(_case(family, tile)))
        m = cp.RawModule(path=str(args.code / f"{family}-T{tile}.opencl.ptx"))
        m.get_function(kernel.name).kernel
        now = files()
        seen["cuda"][f"{family}-T{tile}"] = sorted(now - before)
        before = now
    print(json.dumps(seen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
