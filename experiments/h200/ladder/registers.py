"""Build every ladder case's kernel on a device without launching it, and record what the
build reports: registers per work-item and spills (NVIDIA's ``-cl-nv-verbose`` ptxas lines,
:func:`tiletraffic.gpu.runtime.launch.build_kernel`), so that a round's predictions can use the
registers of the kernels it will measure (``predict --registers-from``) without timing
anything first.

    python -m experiments.h200.ladder.registers --out DIR [--device NVIDIA]
    python -m experiments.h200.ladder.registers --read-jit-cache CACHE --out DIR

The first writes ``DIR/registers.json`` (with the UTC time the builds began and the
tiletraffic commit) in the shape of ``ladder_raw.json`` (``cases``:
label, n, ``run.registers_per_work_item``, ``run.resources``), one record per case at
N = 1024: the kernels take M, K, N as arguments, so their build does not depend on N.
Run it with ``PYOPENCL_NO_CACHE=1`` (a program from pyopencl's cache has no build log).
With ``CUDA_CACHE_PATH=CACHE CUDA_CACHE_DISABLE=0`` the driver keeps its JIT's machine code,
and the second form reads the register-blocked kernels' main loops from it
(:func:`experiments.h200.matvec.codeform.write_jit_sass`).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import warnings
from pathlib import Path

from experiments.h200.ladder import cases as C

BUILD_N = 1024
JIT_KERNELS = ("gemm_register_blocked", "gemm_prefetch", "gemm_vectorized")


def build_records(device: str | None) -> list[dict]:
    """One record per case of :data:`cases.CASES`: its kernel built (not launched) on
    ``device``, with the registers and resources the build reported, or the error."""
    from tiletraffic.gpu.codegen import generate as codegen
    from tiletraffic.gpu.devices.device import select_device
    from tiletraffic.gpu.runtime.launch import build_kernel

    target = select_device(device)
    out = []
    for case in C.CASES:
        label, family = case[0], case[1]
        rec = {"label": label, "family": family, "n": BUILD_N}
        try:
            kernel = codegen.generate(C.build(case, BUILD_N))
            _, built, resources = build_kernel(target, kernel)
            rec.update(status="ok", run={
                "registers_per_work_item": resources.registers_per_work_item,
                "resources": dataclasses.asdict(resources), "build": built.how})
        except Exception as e:  # a failed build is a result of this probe, recorded
            rec.update(status="error", error=f"{type(e).__name__}: {e}"[:4000])
        print(label, rec.get("run", {}).get("registers_per_work_item"), rec.get("error", ""),
              flush=True)
        out.append(rec)
    return out


def main(argv=None) -> int:
    from experiments.h200.matvec.codeform import add_read_jit_cache, write_jit_sass

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True, help="output folder")
    p.add_argument("--device", default="NVIDIA", help="OpenCL device (as for tiletraffic run)")
    add_read_jit_cache(p, "the register-blocked kernels' machine code")
    a = p.parse_args(argv)
    if a.read_jit_cache is not None:
        return write_jit_sass(a.read_jit_cache, a.out, JIT_KERNELS)
    from tiletraffic.analysis.files import atomic_write_text
    from tiletraffic.analysis.validation.predict import provenance, utc_now

    warnings.simplefilter("ignore")
    started = utc_now()
    a.out.mkdir(parents=True, exist_ok=True)
    records = build_records(a.device)
    command = " ".join([sys.executable, "-m", "experiments.h200.ladder.registers",
                        *(argv if argv is not None else sys.argv[1:])])
    atomic_write_text(a.out / "registers.json", json.dumps(
        {"command": command, "created_utc": started, "tiletraffic": provenance(),
         "cases": records}, indent=1))
    return 0 if all(r["status"] == "ok" for r in records) else 1


if __name__ == "__main__":
    raise SystemExit(main())
