"""Which form of matvec-naive's source makes it slower than calibrate's strided_read_xglobal
on the H200? (issue #14's ranking misses)

``strided_read_xglobal`` (x from global memory) reads the addresses of matvec-naive at
M = K = 4096 in 0.557 ms (``experiments.h200.matvec.xprobe``), as fast as matvec-local-whole,
while the generated matvec-naive takes 0.624 ms; ``restrict`` is not the difference
(``experiments.h200.matvec.qualifiers``: every subset 0.622-0.624 ms, and every build loads
A and x through ``ld.global.nc``). ``codeform.cl`` has matvec-naive in the forms that differ
(int index ``row * K + k``, a row pointer, no ``reqd_work_group_size``, unsigned index, the
microbenchmark's source) and matvec-local-whole as generated and as the microbenchmark; each
is timed at the validate sizes, one unaligned and one all-SM size, results checked against
float64, and its PTX (NVIDIA's OpenCL binary) assembled by ``ptxas -arch=sm_90`` and
disassembled by ``cuobjdump -sass`` where the tools are found, with the main loop's
global loads and FFMAs counted.

Run on the device after the preamble of ``experiments/README.md`` (the second line reads
the machine code the driver's JIT wrote to its cache during the first)::

    CUDA_CACHE_PATH=/tmp/jit CUDA_CACHE_DISABLE=0 \
        python3 -m experiments.h200.matvec.codeform --device NVIDIA --out $OUT/codeform
    python3 -m experiments.h200.matvec.codeform --read-jit-cache /tmp/jit --out $OUT/codeform
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyopencl as cl

from experiments.h200.dispatch.driver import find_tool
from experiments.h200.kernels import kernel_source
from tiletraffic.gpu.device import select_device

SIZES = ((4096, 4096), (8192, 8192), (4096, 4097), (33792, 4096))
"""(M, K): validate's two matvec sizes, one unaligned row stride, one work-group per SM."""
KERNELS = ("naive_generated", "naive_row_pointer", "naive_no_reqd", "naive_unsigned",
           "naive_microbench", "local_whole_generated", "local_whole_microbench")


def sass_loop_counts(sass: str, kernel: str) -> dict | None:
    """Global loads, local loads and FFMAs of ``kernel``'s longest backward-branch loop in
    ``cuobjdump -sass`` text (None where the kernel is not found)."""
    parts = sass.split(f"Function : {kernel}")
    if len(parts) < 2:
        return None
    lines = parts[1].split("Function :")[0].splitlines()
    addr = {}
    for i, line in enumerate(lines):
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/", line)
        if m:
            addr[int(m.group(1), 16)] = i
    best = None
    for i, line in enumerate(lines):
        m = re.search(r"BRA (0x[0-9a-f]+)", line)
        if not m or int(m.group(1), 16) not in addr or addr[int(m.group(1), 16)] >= i:
            continue
        loop = lines[addr[int(m.group(1), 16)]:i + 1]
        counts = {"instructions": sum("/*" in x and ";" in x for x in loop),
                  "ldg": sum("LDG" in x for x in loop), "lds": sum("LDS" in x for x in loop),
                  "ffma": sum("FFMA" in x for x in loop)}
        if best is None or counts["instructions"] > best["instructions"]:
            best = counts
    return best


def assemble(ptx_path: Path, tools: dict) -> str | None:
    """``ptxas -arch=sm_90`` then ``cuobjdump -sass`` of one PTX file (None without the
    tools or on failure; the SASS is written beside the PTX)."""
    if not all(tools.values()):
        return None
    cubin = ptx_path.with_suffix(".cubin")
    done = subprocess.run([tools["ptxas"], "-arch=sm_90", str(ptx_path), "-o", str(cubin)],
                          capture_output=True, text=True, timeout=120)
    if done.returncode:
        print("ptxas failed:", done.stderr[-1000:], flush=True)
        return None
    done = subprocess.run([tools["cuobjdump"], "-sass", str(cubin)], capture_output=True,
                          text=True, timeout=120)
    cubin.unlink()
    if done.returncode:
        print("cuobjdump failed:", done.stderr[-1000:], flush=True)
        return None
    ptx_path.with_suffix(".sass").write_text(done.stdout)
    return done.stdout


def jit_sass(cache: Path, out: Path) -> dict | None:
    """Main-loop counts of each kernel in the machine code NVIDIA's OpenCL driver JIT-compiled
    (its compute cache ``cache``: ELF images cut by the codegen experiment's ``elf_images``,
    disassembled by ``cuobjdump -sass``, written to ``out/jit.N.sass``)."""
    from experiments.h200.codegen.driver import elf_images

    tool = find_tool("cuobjdump") if cache.is_dir() else None
    if tool is None:
        print(f"no JIT SASS: {cache} is not a folder, or no cuobjdump", flush=True)
        return None
    found: dict = {}
    images = [img for f in sorted(cache.rglob("*")) if f.is_file()
              for img in elf_images(f.read_bytes())]
    for i, img in enumerate(images):
        cubin = out / f"jit.{i}.cubin"
        cubin.write_bytes(img)
        done = subprocess.run([tool, "-sass", str(cubin)], capture_output=True, text=True,
                              timeout=60)
        cubin.unlink()
        if done.returncode or not done.stdout.strip():
            continue
        (out / f"jit.{i}.sass").write_text(done.stdout)
        for k in KERNELS:
            counts = sass_loop_counts(done.stdout, k)
            if counts is not None:
                found[k] = counts
    return found


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default=None)
    p.add_argument("--out", required=True)
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--read-jit-cache", default=None, metavar="DIR",
                   help="only read the machine code of an earlier run's JIT from its "
                   "CUDA_CACHE_PATH DIR (run it with CUDA_CACHE_DISABLE=0) into OUT/jit.json")
    a = p.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    if a.read_jit_cache:
        jit = jit_sass(Path(a.read_jit_cache), out)
        for k in KERNELS:
            print(f"{k:24s} driver JIT main loop {(jit or {}).get(k)}", flush=True)
        (out / "jit.json").write_text(json.dumps(jit, indent=1))
        return 0
    target = select_device(a.device)
    ctx, queue = target.context, target.queue
    prg = cl.Program(ctx, kernel_source(__file__, "codeform.cl")).build(
        options=["-DX_WORDS=8192"])
    ptx_path = out / "codeform.ptx"
    ptx_path.write_bytes(prg.get_info(cl.program_info.BINARIES)[0].rstrip(b"\0"))
    nvidia = "NVIDIA" in target.info.platform_name.upper()
    sass = assemble(ptx_path, {t: find_tool(t) for t in ("ptxas", "cuobjdump")}) if nvidia else None
    loops = {k: (sass_loop_counts(sass, k) if sass else None) for k in KERNELS}
    for k in KERNELS:
        print(f"{k:24s} main loop {loops[k]}", flush=True)
    kernels = {k: cl.Kernel(prg, k) for k in KERNELS}
    rng = np.random.default_rng(14)
    mf = cl.mem_flags
    rows = []
    for m, k in SIZES:
        A = rng.standard_normal((m, k), dtype=np.float32)
        x = rng.standard_normal(k, dtype=np.float32)
        ref = A.astype(np.float64) @ x.astype(np.float64)
        tol = float(1e-6 * k * np.abs(A).max() * np.abs(x).max() * 4)
        dA = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=A)
        dx = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
        dy = cl.Buffer(ctx, mf.WRITE_ONLY, 4 * m)
        for name, kern in kernels.items():
            kern.set_args(dA, dx, dy, np.int32(m), np.int32(k))
            times = []
            for i in range(a.repeat + 2):
                ev = cl.enqueue_nd_range_kernel(queue, kern, (m,), (256,))
                ev.wait()
                if i >= 2:
                    times.append((ev.profile.end - ev.profile.start) * 1e-9)
            y = np.empty(m, np.float32)
            cl.enqueue_copy(queue, y, dy).wait()
            err = float(np.abs(y - ref).max())
            if not err <= tol:
                raise SystemExit(f"{name} {m}x{k}: max error {err:.3g} > {tol:.3g}")
            q = np.percentile(times, [25, 50, 75])
            rows.append({"kernel": name, "m": m, "k": k, "times_s": times,
                         "median_s": float(q[1]), "iqr_s": float(q[2] - q[0]),
                         "max_error": err, "tolerance": tol})
            print(f"{name:24s} {m:6d}x{k:<5d} {q[1] * 1e3:.4f} ms "
                  f"(iqr {(q[2] - q[0]) * 1e3:.4f})", flush=True)
    (out / "codeform.json").write_text(json.dumps(
        {"device": target.name, "repeat": a.repeat, "main_loops": loops, "rows": rows},
        indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
