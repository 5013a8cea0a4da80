"""Which form of matvec-naive's source makes it slower than calibrate's strided_read_xglobal
on the H200? (issue #14's ranking misses)

``strided_read_xglobal`` (x from global memory) reads the addresses of matvec-naive at
M = K = 4096 in 0.557 ms (``experiments.h200.matvec.xprobe``), as fast as matvec-local-whole,
while the generated matvec-naive takes 0.624 ms; ``restrict`` is not the difference
(``experiments.h200.matvec.qualifiers``: every subset 0.622-0.624 ms, and every build loads
A and x through ``ld.global.nc``). ``codeform.cl`` has matvec-naive in the forms that differ (int index ``row * K + k``, a row
pointer, no ``reqd_work_group_size``, unsigned index, the microbenchmark's source, the 16 or
8 loads of a row's k-steps written before their FMAs) and matvec-local-whole as generated and
as the microbenchmark; matvec-local runs as :mod:`tiletraffic.gpu.codegen.generate` writes it. Each is
built per K (local-whole's ``X_WORDS`` = K, as generated) and timed at the validate sizes,
one unaligned and one all-SM size, its result checked with
:func:`tiletraffic.simulator.engine.tolerance.check_result`. The machine code that ran is the
driver JIT's, read from its cache by a second invocation (``--read-jit-cache``): main-loop
counts in ``jit.json``, the loop's loads in issue order by :func:`loop_sequence`. The first
size's PTX (NVIDIA's OpenCL binary) is also assembled offline by ``ptxas -arch=sm_90``
(``ptxas_main_loops``: not the code that ran; e.g. ptxas merges local-whole's local loads
four at a time, the JIT does not).

Run on the device after the preamble of ``experiments/README.md`` (the second line reads
the machine code the driver's JIT wrote to its cache during the first)::

    CUDA_CACHE_PATH=/tmp/jit CUDA_CACHE_DISABLE=0 \
        python3 -m experiments.h200.matvec.codeform --device NVIDIA --out $OUT/codeform
    python3 -m experiments.h200.matvec.codeform --read-jit-cache /tmp/jit --out $OUT/codeform
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyopencl as cl

from experiments.h200.codegen.driver import assemble as assemble_ptx
from experiments.h200.dispatch.driver import find_tool
from experiments.h200.kernels import kernel_source
from experiments.h200.matvec.sass import function_text, main_loop
from tiletraffic.gpu.devices.device import select_device

SIZES = ((4096, 4096), (8192, 8192), (4096, 4097), (33792, 4096))
"""(M, K): validate's two matvec sizes, one unaligned row stride, one work-group per SM."""
KERNELS = ("naive_generated", "naive_row_pointer", "naive_no_reqd", "naive_unsigned",
           "naive_microbench", "naive_a_first16", "naive_a_first8", "local_whole_generated",
           "local_whole_microbench")
"""The kernels of ``codeform.cl``."""
GENERATED = ("matvec-local",)
"""Schedules run as :mod:`tiletraffic.gpu.codegen.generate` writes them, beside the file's kernels
(their kernel names with ``_`` for ``-``)."""


def _main_loop(sass: str, kernel: str):
    """:func:`experiments.h200.matvec.sass.main_loop` of function ``kernel`` (exact name),
    or None where the function or a loop with an FFMA is not there."""
    text = function_text(sass, kernel)
    if text is None:
        return None
    try:
        return main_loop(text)
    except ValueError:
        return None


def sass_loop_counts(sass: str, kernel: str) -> dict | None:
    """Instructions, global loads (``LDG``, not ``LDGSTS``), local loads (``LDS``, not
    ``LDSM``), local stores (``STS``), barriers (``BAR``) and FFMAs of one trip of
    ``kernel``'s main loop in ``cuobjdump -sass`` text (the innermost loop with the most
    FFMAs, :func:`experiments.h200.matvec.sass.main_loop`); None without one."""
    loop = _main_loop(sass, kernel)
    if loop is None:
        return None
    return {"instructions": loop.instructions, "ldg": loop.global_loads,
            "lds": loop.local_loads, "sts": loop.local_stores, "bar": loop.barriers,
            "ffma": loop.fmas}


def loop_sequence(sass: str, kernel: str) -> list[str] | None:
    """The global loads (``REG+OFFSET``), local loads (``S``) and FFMAs (``F``) of
    ``kernel``'s main loop in issue order (:attr:`experiments.h200.matvec.sass.LoopIssue.
    sequence`); None without one."""
    loop = _main_loop(sass, kernel)
    return None if loop is None else list(loop.sequence)


def assemble(ptx_path: Path, tools: dict) -> str | None:
    """The SASS text of one PTX file by the codegen experiment's ``assemble`` (``ptxas
    -arch=sm_90``, ``cuobjdump -sass``; written beside the PTX); None without the tools or
    on failure."""
    if not all(tools.values()):
        return None
    rec = assemble_ptx(ptx_path, tools)
    if "error" in rec:
        print(f"{ptx_path.name}: {rec['error']}: {rec.get('ptxas_log', '')[-1000:]}",
              flush=True)
        return None
    return ptx_path.with_suffix(".sass").read_text()


def all_kernel_names() -> tuple[str, ...]:
    """The file's kernels and the generated ones (:data:`GENERATED`)."""
    return KERNELS + tuple(g.replace("-", "_") for g in GENERATED)


def loops_of_images(sass_by_image: dict[int, str], names: tuple[str, ...]) -> dict:
    """``{"loops": {kernel: [{"image": i, **sass_loop_counts} of each image that has it]},
    "missing": [kernels in no image]}`` for ``names`` over disassemblies keyed by image
    number (no GPU: the committed ``jit.N.sass`` files give the committed ``jit.json``)."""
    found: dict = {}
    for i, text in sorted(sass_by_image.items()):
        for k in names:
            counts = sass_loop_counts(text, k)
            if counts is not None:
                found.setdefault(k, []).append({"image": i, **counts})
    return {"loops": found, "missing": [k for k in names if k not in found]}


def jit_sass(cache: Path, out: Path, names: tuple[str, ...] | None = None) -> dict | None:
    """:func:`loops_of_images` of the machine code NVIDIA's OpenCL driver JIT-compiled (its
    compute cache ``cache``: ELF images cut by the codegen experiment's ``elf_images``,
    disassembled by ``cuobjdump -sass``, written to ``out/jit.N.sass``; one build per K, so
    a kernel can be in several images) for ``names`` (default: :func:`all_kernel_names`);
    None without the cache or the tool."""
    from experiments.h200.codegen.driver import elf_images

    tool = find_tool("cuobjdump") if cache.is_dir() else None
    if tool is None:
        print(f"no JIT SASS: {cache} is not a folder, or no cuobjdump", flush=True)
        return None
    texts = {}
    images = [img for f in sorted(cache.rglob("*")) if f.is_file()
              for img in elf_images(f.read_bytes())]
    for i, img in enumerate(images):
        cubin = out / f"jit.{i}.cubin"
        cubin.write_bytes(img)
        done = subprocess.run([tool, "-sass", str(cubin)], capture_output=True, text=True,
                              timeout=60)
        cubin.unlink()
        if done.returncode or not done.stdout.strip():
            print(f"image {i}: cuobjdump failed: {done.stderr[-300:]}", flush=True)
            continue
        (out / f"jit.{i}.sass").write_text(done.stdout)
        texts[i] = done.stdout
    return loops_of_images(texts, names or all_kernel_names())


def add_read_jit_cache(parser, what: str) -> None:
    """The drivers' ``--read-jit-cache CACHE`` option (a :class:`~pathlib.Path`, default
    None): a second invocation that only reads ``what`` from the driver cache an earlier run
    left (:func:`write_jit_sass`)."""
    parser.add_argument("--read-jit-cache", type=Path, default=None, metavar="CACHE",
                        help=f"only read {what} from an earlier run's CUDA_CACHE_PATH CACHE "
                        "(that run with CUDA_CACHE_DISABLE=0) into the --out folder "
                        "(jit.json, jit.N.sass)")


def write_jit_sass(cache: Path, out: Path, names: tuple[str, ...]) -> int:
    """:func:`jit_sass` of ``names`` written to ``out/jit.json`` (and printed): exit status
    0, or 1 where there is no cache or a kernel is in no image (named)."""
    out.mkdir(parents=True, exist_ok=True)
    jit = jit_sass(cache, out, names)
    for k in names:
        print(f"{k:24s} driver JIT main loop {((jit or {}).get('loops') or {}).get(k)}",
              flush=True)
    (out / "jit.json").write_text(json.dumps(jit, indent=1))
    if jit is None or jit["missing"]:
        print(f"kernels in no JIT image: {None if jit is None else jit['missing']}", flush=True)
        return 1
    return 0


def timed_launches(queue, kern, rows: int, repeat: int) -> list[float]:
    """Seconds of ``repeat`` event-timed launches of ``kern`` over ``rows`` work-items in
    work-groups of 256, after 2 untimed ones."""
    times = []
    for i in range(repeat + 2):
        ev = cl.enqueue_nd_range_kernel(queue, kern, (rows,), (256,))
        ev.wait()
        if i >= 2:
            times.append((ev.profile.end - ev.profile.start) * 1e-9)
    return times


def programs_for(ctx, k: int, m: int) -> dict:
    """Kernel name -> ``cl.Kernel`` of codeform.cl built with X_WORDS = ``k`` and of each
    generated schedule of :data:`GENERATED` at (m, k)."""
    import tiletraffic as tt
    from tiletraffic.gpu.codegen.generate import generate

    prg = cl.Program(ctx, kernel_source(__file__, "codeform.cl")).build(
        options=[f"-DX_WORDS={k}"])
    kernels = {name: cl.Kernel(prg, name) for name in KERNELS}
    for family in GENERATED:
        gen = cl.Program(ctx, generate(tt.build(family, m=m, k=k)).source).build()
        kernels[family.replace("-", "_")] = cl.Kernel(gen, family.replace("-", "_"))
    return kernels, prg


def main(argv: list[str] | None = None) -> int:
    from tiletraffic.simulator.engine.tolerance import check_result

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default=None)
    p.add_argument("--out", required=True)
    p.add_argument("--repeat", type=int, default=20)
    add_read_jit_cache(p, "every kernel's machine code")
    a = p.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    if a.read_jit_cache is not None:
        return write_jit_sass(a.read_jit_cache, out, all_kernel_names())
    target = select_device(a.device)
    ctx, queue = target.context, target.queue
    nvidia = "NVIDIA" in target.info.platform_name.upper()
    rng = np.random.default_rng(14)
    mf = cl.mem_flags
    rows, ptxas_loops = [], None
    for m, k in SIZES:
        kernels, prg = programs_for(ctx, k, m)
        if ptxas_loops is None:  # ptxas's (offline) code of the first size's build
            ptx_path = out / "codeform.ptx"
            ptx_path.write_bytes(prg.get_info(cl.program_info.BINARIES)[0].rstrip(b"\0"))
            sass = assemble(ptx_path, {t: find_tool(t) for t in ("ptxas", "cuobjdump")}) \
                if nvidia else None
            ptxas_loops = {n: (sass_loop_counts(sass, n) if sass else None) for n in KERNELS}
        A = rng.standard_normal((m, k), dtype=np.float32)
        x = rng.standard_normal(k, dtype=np.float32)
        ref = A.astype(np.float64) @ x.astype(np.float64)
        absprod = np.abs(A).astype(np.float64) @ np.abs(x).astype(np.float64)
        dA = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=A)
        dx = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
        dy = cl.Buffer(ctx, mf.WRITE_ONLY, 4 * m)
        for name, kern in kernels.items():
            kern.set_args(dA, dx, dy, np.int32(m), np.int32(k))
            times = timed_launches(queue, kern, m, a.repeat)
            y = np.empty(m, np.float32)
            cl.enqueue_copy(queue, y, dy).wait()
            check = check_result(y, ref, k, absprod)
            if not check.ok:
                raise SystemExit(f"{name} {m}x{k}: result wrong: {check}")
            q = np.percentile(times, [25, 50, 75])
            rows.append({"kernel": name, "m": m, "k": k, "times_s": times,
                         "median_s": float(q[1]), "iqr_s": float(q[2] - q[0]),
                         "max_error": float(check.max_abs_error),
                         "error_over_tolerance": float(check.error_over_tolerance)})
            print(f"{name:24s} {m:6d}x{k:<5d} {q[1] * 1e3:.4f} ms "
                  f"(iqr {(q[2] - q[0]) * 1e3:.4f})", flush=True)
    (out / "codeform.json").write_text(json.dumps(
        {"device": target.name, "repeat": a.repeat, "ptxas_main_loops": ptxas_loops,
         "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
