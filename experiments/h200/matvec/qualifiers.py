"""Does ``restrict`` on x make matvec-naive slower on the H200? (issue #14's ranking misses)

calibrate's ``strided_read_xglobal`` (x from global memory, no ``restrict``) runs as fast
as ``strided_read_xlocal`` and as matvec-local-whole at M = K = 4096 (0.557 ms over 16
work-groups, ``experiments.h200.matvec.xprobe``), while the generated matvec-naive takes
0.625 ms. The generated kernels mark every pointer ``restrict`` and NVIDIA's compiler then
loads x (and A) through the read-only path (``LDG.E.CONSTANT``, PTX ``ld.global.nc``). This
script times matvec-naive and matvec-local-whole (``qualifiers.cl``: the generated source
with the qualifiers as macros) with ``restrict`` on every subset of {A, x}, at the validate
sizes and at one unaligned and one all-SM size, results checked against float64, and keeps
each build's PTX (NVIDIA's OpenCL binaries are PTX text) to count the ``.nc`` loads.

Run on the device after the preamble of ``experiments/README.md``::

    python3 -m experiments.h200.matvec.qualifiers --device NVIDIA --out $OUT/qualifiers
"""
from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
from pathlib import Path

import numpy as np
import pyopencl as cl

from experiments.h200.kernels import kernel_source
from experiments.h200.matvec.codeform import timed_launches
from tiletraffic.gpu.devices.device import select_device

SIZES = ((4096, 4096), (8192, 8192), (4096, 4097), (33792, 4096))
"""(M, K): validate's two matvec sizes, one unaligned row stride, one work-group per SM."""
QUALIFIED = ("A", "x")


def variants():
    """Every subset of QUALIFIED marked restrict (y always restrict, as generated)."""
    for n in range(len(QUALIFIED) + 1):
        yield from itertools.combinations(QUALIFIED, n)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default=None)
    p.add_argument("--out", required=True)
    p.add_argument("--repeat", type=int, default=20)
    a = p.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    target = select_device(a.device)
    ctx, queue = target.context, target.queue
    src = kernel_source(__file__, "qualifiers.cl")
    rng = np.random.default_rng(14)
    rows = []
    programs = {}
    for marked in variants():
        opts = [f"-DQ{c}=restrict" for c in marked] + ["-DQY=restrict", "-DX_WORDS=8192"]
        prg = cl.Program(ctx, src).build(options=opts)
        tag = "restrict_" + ("_".join(marked) if marked else "none")
        ptx = prg.get_info(cl.program_info.BINARIES)[0]
        (out / f"{tag}.ptx").write_bytes(ptx)
        text = ptx.decode(errors="replace")
        for kernel in ("mv_naive", "mv_local_whole"):
            parts = text.split(f".entry {kernel}")
            body = parts[1].split(".entry")[0] if len(parts) > 1 else None
            nc = None if body is None else len(re.findall(r"ld\.global\.nc", body))
            plain = None if body is None else len(re.findall(r"ld\.global\.(?!nc)", body))
            programs[tag, kernel] = (marked, cl.Kernel(prg, kernel), nc, plain)
    mf = cl.mem_flags
    for m, k in SIZES:
        A = rng.standard_normal((m, k), dtype=np.float32)
        x = rng.standard_normal(k, dtype=np.float32)
        ref = A.astype(np.float64) @ x.astype(np.float64)
        tol = float(1e-6 * k * np.abs(A).max() * np.abs(x).max() * 4)
        dA = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=A)
        dx = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
        dy = cl.Buffer(ctx, mf.WRITE_ONLY, 4 * m)
        args = (dA, dx, dy, np.int32(m), np.int32(k))
        for (tag, kernel), (marked, kern, nc, plain) in programs.items():
            kern.set_args(*args)
            times = timed_launches(queue, kern, m, a.repeat)
            y = np.empty(m, np.float32)
            cl.enqueue_copy(queue, y, dy).wait()
            err = float(np.abs(y - ref).max())
            if not err <= tol:
                raise SystemExit(f"{tag} {kernel} {m}x{k}: max error {err:.3g} > {tol:.3g}")
            q = np.percentile(times, [25, 50, 75])
            rows.append({"restrict": list(marked), "kernel": kernel, "m": m, "k": k,
                         "ld_global_nc": nc, "ld_global": plain, "times_s": times,
                         "median_s": float(q[1]), "iqr_s": float(q[2] - q[0]),
                         "max_error": err, "tolerance": tol})
            print(f"{tag:18s} {kernel:15s} {m:6d}x{k:<5d} nc={nc} plain={plain} "
                  f"{q[1] * 1e3:.4f} ms (iqr {(q[2] - q[0]) * 1e3:.4f})", flush=True)
    (out / "qualifiers.json").write_text(json.dumps(
        {"device": target.name, "repeat": a.repeat, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
