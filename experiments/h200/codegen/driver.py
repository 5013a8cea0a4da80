"""The same generated kernel source from two compilers on the H200: NVIDIA's OpenCL driver
and NVRTC (the CUDA build the hardware counters come from).

Why: the OpenCL event times of the tiled kernels are 14-22% longer than Nsight's durations
of the CUDA build of the same source (``reports/nvidia-h200/validation.md``), while the naive
kernels agree within 4%. Counters exist only for the CUDA build, so whether the two builds
run the same machine code was not known. Stages (one JSON key each in
``OUT/h200_codegen.json``, rewritten atomically after each):

1. ``code``: per schedule and tile, the OpenCL driver's PTX (``CL_PROGRAM_BINARIES``) and the
   CUDA build's PTX (NVRTC, ``-arch=compute_90``), each assembled by ``ptxas -arch=sm_90``
   and disassembled by ``cuobjdump -sass``; the texts go to ``OUT/code/``, static counts of
   the main instructions (LDS, LDS.128, STS, LDG, FFMA, BAR, all) into the JSON.
2. ``times``: per case, side by side, the median of 10 launches after 2 warm-ups of: the
   OpenCL build (OpenCL profiling events, :func:`gpu.runtime.checked_run.run_on_device`); the CUDA
   build (CuPy events); the OpenCL driver's PTX loaded through CUDA (``cupy.RawModule`` from
   the PTX file). Every result is checked against a float64 product
   (:func:`gpu.runtime.launch.check_result`).
3. ``counters``: Nsight Compute (the counter stage and metrics of ``h200_validation.py``)
   over the OpenCL driver's PTX loaded through CUDA, for the issue-4 cases: the OpenCL
   code's instructions, local-memory wavefronts and duration, read by the same counters as
   the CUDA build's in ``reports/nvidia-h200/h200_raw.json``.

Run on the device, from the repository root after the device preamble of
``experiments/README.md`` (the recorded runs: ``reports/nvidia-h200/codegen/command.txt`` and
``reports/nvidia-h200/l1_pipe/command.txt``)::

    python3 -m experiments.h200.codegen.driver --out $OUT
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

import numpy as np

from tiletraffic.gpu.codegen.generate import generate
from experiments.h200.cuda import cuda_source, launch_geometry

from experiments.h200.dispatch.driver import find_tool
from experiments.h200.kernels import kernel_source
from experiments.h200.validation import driver as validation
from experiments.h200.validation.driver import (GEMM_TILES, L2_SWEEP_SIZES, MATVEC_FAMILIES,
                                                MATVEC_TILE, build_case, case_id, case_list,
                                                counters_stage, error_text)

REPO = Path(__file__).resolve().parents[3]
"""The repository root: the working directory of the child processes (``-m`` modules)."""

KERNELS = ([(f, b) for f in ("gemm-naive", "gemm-tiled") for b in GEMM_TILES]
           + [(f, MATVEC_TILE) for f in MATVEC_FAMILIES])
"""(schedule, tile) pairs: the machine code depends on them, not on the sizes (runtime
arguments)."""

SASS_OPS = ("LDS", "LDS.64", "LDS.128", "STS", "LDG", "STG", "FFMA", "BAR", "IMAD", "IADD3",
            "LEA", "ISETP", "BRA")
"""Opcodes counted in each disassembly (with their width suffix where they have one)."""

ENVREG = re.compile(r"(mov\.[bu]32\s+%r\d+,\s*)%envreg\d+;")
"""NVIDIA's OpenCL PTX reads the NDRange's global offset from environment registers
(``mov.u32`` or, in the ladder's kernels, ``mov.b32``: the ladder's local_codegen run of
2026-12-01 found ``mov.b32 %r96, %envreg1;`` missed by the first pattern); under CUDA they
are not set, so a loaded copy with them replaced by 0 is tried when the copy as built does
not check."""


PTX_UNSAFE = ("matvec-local-whole",)
"""Its OpenCL PTX, loaded through CUDA, made an illegal memory access in the first run
(2026-11-30 05:31 UTC), which ends the CUDA context: not loaded through CUDA since."""


def times_cases() -> list[dict]:
    """The issue-4 cases without the L2 sweep, then the held-out sizes."""
    return ([c for c in case_list(False) if c["m"] not in L2_SWEEP_SIZES]
            + case_list(False, holdout=True))


def sass_counts(sass: str) -> dict:
    """Static count of each opcode in SASS_OPS, and of all instructions."""
    ops = Counter()
    total = 0
    for line in sass.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
        if not m:
            continue
        total += 1
        op = m.group(1)
        base = op.split(".")[0]
        width = next((w for w in (".128", ".64") if f"{base}{w}" in SASS_OPS and w in op), "")
        ops[base + width] += 1
    return {"all": total, **{op: ops.get(op, 0) for op in SASS_OPS}}


def assemble(ptx_path: Path, tools: dict) -> dict:
    """ptxas -arch=sm_90 then cuobjdump -sass; the SASS text is written next to the PTX."""
    rec: dict = {}
    cubin = ptx_path.with_suffix(".cubin")
    done = subprocess.run([tools["ptxas"], "-arch=sm_90", "-v", str(ptx_path), "-o", str(cubin)],
                          capture_output=True, text=True, timeout=120)
    rec["ptxas_log"] = (done.stdout + done.stderr)[-2000:]
    if done.returncode != 0:
        rec["error"] = "ptxas failed"
        return rec
    done = subprocess.run([tools["cuobjdump"], "-sass", str(cubin)], capture_output=True,
                          text=True, timeout=120)
    if done.returncode != 0:
        rec["error"] = "cuobjdump failed: " + done.stderr[-1000:]
        return rec
    ptx_path.with_suffix(".sass").write_text(done.stdout)
    cubin.unlink()
    rec["sass_counts"] = sass_counts(done.stdout)
    return rec


def code_stage(out: Path, target) -> dict:
    import pyopencl as cl
    from cupy_backends.cuda.libs import nvrtc

    from tiletraffic.gpu.runtime.launch import build_program

    tools = {t: find_tool(t) for t in ("ptxas", "cuobjdump")}
    result: dict = {"tools": tools, "kernels": []}
    folder = out / "code"
    folder.mkdir(parents=True, exist_ok=True)
    for family, tile in KERNELS:
        name = f"{family}-T{tile}"
        rec: dict = {"id": name, "family": family, "tile": tile}
        result["kernels"].append(rec)
        try:
            kernel = generate(build_case({"family": family, "m": 1024, "k": 1024,
                                          "n": None if family.startswith("matvec") else 1024,
                                          "tile": tile}))
            built = build_program(target, kernel.source)
            ptx = built.program.get_info(cl.program_info.BINARIES)[0].decode().rstrip("\0")
            (folder / f"{name}.opencl.ptx").write_text(ptx)
            rec["opencl_envreg"] = len(ENVREG.findall(ptx))
            src = cuda_source(kernel).encode("ascii", "replace").decode()
            prog = nvrtc.createProgram(src, f"{name}.cu", [], [])
            nvrtc.compileProgram(prog, ["-arch=compute_90"])
            cptx = nvrtc.getPTX(prog)
            (folder / f"{name}.cuda.ptx").write_text(
                cptx.decode() if isinstance(cptx, bytes) else cptx)
            if all(tools.values()):
                for build in ("opencl", "cuda"):
                    rec[build] = assemble(folder / f"{name}.{build}.ptx", tools)
        except Exception as err:  # noqa: BLE001 - one kernel's failure never stops the run
            rec["error"] = error_text(err)
        print(name, {b: rec.get(b, {}).get("sass_counts") for b in ("opencl", "cuda")},
              flush=True)
    return result


def cuda_times(module, kernel, sch, ins: dict, ref, absprod, repeat: int) -> dict:
    """Median CuPy-event time of ``repeat`` launches after 2 warm-ups, result checked."""
    import cupy as cp

    from tiletraffic.gpu.runtime.launch import check_result

    fn = module.get_function(kernel.name)
    p = sch.param_values
    out = cp.full(ref.size, cp.nan, dtype=cp.float32)
    args = tuple(np.int32(p[a.name]) if a.kind == "int" else out if a.kind == "global_out"
                 else ins[a.name] for a in kernel.args)
    grid, block = launch_geometry(kernel)
    for _ in range(2):
        fn(grid, block, args)
    cp.cuda.runtime.deviceSynchronize()
    out.fill(cp.nan)
    fn(grid, block, args)
    cp.cuda.runtime.deviceSynchronize()
    chk = check_result(cp.asnumpy(out).reshape(ref.shape), ref, sch.param_values["K"], absprod)
    times = []
    for _ in range(repeat):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record()
        fn(grid, block, args)
        e1.record()
        e1.synchronize()
        times.append(cp.cuda.get_elapsed_time(e0, e1) * 1e-3)
    return {"median_s": float(np.median(times)), "min_s": min(times), "max_s": max(times),
            "check": {"ok": chk.ok, "max_abs_error": chk.max_abs_error,
                      "nan_count": chk.nan_count}}


def ptx_module(ptx_path: Path, patched: bool):
    """CuPy module from the OpenCL driver's PTX (envreg reads replaced by 0 if ``patched``)."""
    import cupy as cp
    if not patched:
        return cp.RawModule(path=str(ptx_path))
    path = ptx_path.with_name(ptx_path.stem + ".envreg0.ptx")
    path.write_text(ENVREG.sub(r"\g<1>0;", ptx_path.read_text()))
    return cp.RawModule(path=str(path))


def times_stage(out: Path, target, cases: list[dict], repeat: int) -> dict:
    import cupy as cp

    from tiletraffic.gpu.runtime.checked_run import run_on_device
    from tiletraffic.simulator.engine.data_inputs import random_inputs

    result: dict = {"repeat": repeat, "cases": [], "ptx_variant": {}}
    folder = out / "code"
    rng = np.random.default_rng(20261130)
    modules: dict = {}
    for c in cases:
        rec: dict = {"id": c["id"]}
        result["cases"].append(rec)
        name = f"{c['family']}-T{c['tile']}"
        try:
            sch = build_case(c)
            kernel = generate(sch)
            run = run_on_device(target, sch, repeat=repeat, rng=rng).to_dict()
            rec["opencl"] = {k: run[k] for k in ("median_s", "min_s", "max_s", "check")}
            host = random_inputs(sch, rng)
            ins = {k: cp.asarray(np.ascontiguousarray(v).reshape(-1)) for k, v in host.items()}
            a64 = cp.asarray(host["A"], dtype=cp.float64)
            b64 = cp.asarray(host["B" if "B" in host else "x"], dtype=cp.float64)
            ref = cp.asnumpy(a64 @ b64)
            absprod = cp.asnumpy(cp.abs(a64) @ cp.abs(b64))
            del a64, b64
            src = cuda_source(kernel).encode("ascii", "replace").decode()
            if src not in modules:
                modules[src] = cp.RawModule(code=src)
            rec["cuda"] = cuda_times(modules[src], kernel, sch, ins, ref, absprod, repeat)
            ptx = folder / f"{name}.opencl.ptx"
            variants = ([] if c["family"] in PTX_UNSAFE
                        else [result["ptx_variant"][name]] if name in result["ptx_variant"]
                        else [False, True])
            for patched in variants:
                try:
                    key = (name, patched)
                    if key not in modules:
                        modules[key] = ptx_module(ptx, patched)
                    t = cuda_times(modules[key], kernel, sch, ins, ref, absprod, repeat)
                except Exception as err:  # noqa: BLE001
                    rec.setdefault("opencl_ptx_errors", []).append(
                        {"envreg_patched": patched, "error": error_text(err)})
                    continue
                t["envreg_patched"] = patched
                if t["check"]["ok"]:
                    rec["opencl_ptx"] = t
                    result["ptx_variant"][name] = patched
                    break
                rec.setdefault("opencl_ptx_errors", []).append(
                    {"envreg_patched": patched, "error": "check failed", "run": t})
            del ins
            cp.get_default_memory_pool().free_all_blocks()
        except Exception as err:  # noqa: BLE001
            rec["error"] = error_text(err)
        print(f"{c['id']:40s} " + "  ".join(
            f"{b} {rec[b]['median_s'] * 1e3:9.4f} ms {'ok' if rec[b]['check']['ok'] else 'BAD'}"
            for b in ("opencl", "cuda", "opencl_ptx") if b in rec), rec.get("error", ""),
            flush=True)
    return result


OCCUPANCY_CASES = [("gemm-naive", 4096, 16), ("gemm-naive", 4096, 32), ("gemm-tiled", 4096, 8),
                   ("gemm-tiled", 4096, 16), ("gemm-tiled", 4096, 32),
                   ("matvec-local", 16384, 256), ("matvec-naive", 16384, 256)]
"""Cases whose resident work-groups per SM are measured under OpenCL and, for several
shared-memory carveouts, under CUDA."""

CARVEOUTS = (-1, 0, 10, 25, 50, 100)
"""``CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT`` values tried (percent of the
largest shared-memory size; -1: the driver's default, no attribute set)."""

CARVEOUT_ATTRIBUTE = 9
"""``CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT`` (cuda.h, ``CUfunction_attribute``)."""

TIMELINE_ARG = ", __global ulong *restrict tt_timeline)\n{"
TIMELINE_END = kernel_source(__file__, "timeline_end.cl")
"""The end of the timeline instrumentation (``timeline_end.cl``)."""


def opencl_timeline_source(source: str) -> str:
    """The generated OpenCL C with a timeline argument: work-item (0, 0) of each work-group
    reads ``%globaltimer`` first thing and, at the end (after a final barrier in kernels
    that have barriers), again, with ``%smid`` (NVIDIA inline PTX). Work-item (0, 0) never
    takes an early ``return`` at the sizes measured here (multiples of the work-group).
    Raises ValueError if the kernel's shape is not the expected one (one kernel body)."""
    if source.count(")\n{") != 1 or not source.rstrip().endswith("}"):
        raise ValueError("unexpected kernel shape for the timeline instrumentation")
    head, body = source.split(")\n{", 1)
    body = body.rstrip()[:-1]
    if "barrier(" in body:
        body += "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    start = ('\n    ulong tt_t0;\n    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(tt_t0));')
    return head + TIMELINE_ARG + start + body + TIMELINE_END


def resident_per_sm(start: np.ndarray, end: np.ndarray, sm: np.ndarray) -> dict:
    """Most work-groups running at once on one SM (sweep over start/end events), and the
    number of SMs used."""
    best = 0
    for s in np.unique(sm):
        m = sm == s
        ev = np.concatenate([np.stack([start[m], np.ones(m.sum())], 1),
                             np.stack([end[m], -np.ones(m.sum())], 1)])
        ev = ev[np.lexsort((ev[:, 1], ev[:, 0]))]  # ends before starts at equal times
        best = max(best, int(np.cumsum(ev[:, 1]).max()))
    return {"max_resident_per_sm": best, "sms_used": int(len(np.unique(sm)))}


def _inputs(sch, rng):
    from tiletraffic.gpu.runtime.launch import reference_product
    from tiletraffic.simulator.engine.data_inputs import random_inputs
    host = random_inputs(sch, rng)
    ref, absprod = reference_product(host["A"], host["B" if "B" in host else "x"])
    return host, ref, absprod


def opencl_buffers(target, host: dict, out_size: int, extra: np.ndarray | None = None):
    """Device buffers for one launch: each input of ``host`` read-only, a NaN-filled float32
    output of ``out_size`` elements, and a read-write copy of ``extra`` (an instrumentation
    buffer) if given. Returns (input buffers by name, host output, output buffer, extra
    buffer or None); release them with :func:`release`."""
    import pyopencl as cl
    mf = cl.mem_flags
    bufs = {name: cl.Buffer(target.context, mf.READ_ONLY | mf.COPY_HOST_PTR,
                            hostbuf=np.ascontiguousarray(v)) for name, v in host.items()}
    res = np.full(out_size, np.nan, dtype=np.float32)
    dres = cl.Buffer(target.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=res)
    dextra = None if extra is None else cl.Buffer(
        target.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=extra)
    return bufs, res, dres, dextra


def kernel_args(sch, kernel, bufs: dict, dres) -> list:
    """The generated kernel's arguments in order: ints from the schedule, buffers by name."""
    return [np.int32(sch.param_values[a.name]) if a.kind == "int" else
            dres if a.kind == "global_out" else bufs[a.name] for a in kernel.args]


def timed_launches(target, k, kernel, count: int) -> list[float]:
    """``count`` launches of ``k`` one after another, each timed by its profiling event (s)."""
    import pyopencl as cl
    times = []
    for _ in range(count):
        ev = cl.enqueue_nd_range_kernel(target.queue, k, kernel.global_size, kernel.local_size)
        ev.wait()
        times.append((ev.profile.end - ev.profile.start) * 1e-9)
    return times


def release(*buffers) -> None:
    for b in buffers:
        if b is not None:
            b.release()


def opencl_occupancy_stage(target) -> dict:
    import pyopencl as cl

    from tiletraffic.gpu.runtime.launch import build_program, check_result

    out: dict = {"cases": []}
    rng = np.random.default_rng(11)
    for family, n, tile in OCCUPANCY_CASES:
        c = {"family": family, "m": n, "k": n, "n": None if family.startswith("matvec") else n,
             "tile": tile}
        rec: dict = {"id": case_id(c)}
        out["cases"].append(rec)
        try:
            sch = build_case(c)
            kernel = generate(sch)
            src = opencl_timeline_source(kernel.source)
            built = build_program(target, src)
            k = cl.Kernel(built.program, kernel.name)
            host, ref, absprod = _inputs(sch, rng)
            groups = int(np.prod([g // l for g, l in zip(kernel.global_size, kernel.local_size)]))
            tl = np.zeros(3 * groups, dtype=np.uint64)
            bufs, res, dres, dtl = opencl_buffers(target, host, ref.size, tl)
            k.set_args(*kernel_args(sch, kernel, bufs, dres), dtl)
            times = timed_launches(target, k, kernel, 3)
            cl.enqueue_copy(target.queue, res, dres).wait()
            cl.enqueue_copy(target.queue, tl, dtl).wait()
            chk = check_result(res.reshape(ref.shape), ref, sch.param_values["K"], absprod)
            t = tl.reshape(groups, 3).astype(np.int64)
            origin = t[:, 0].min()
            rec.update(resident_per_sm(t[:, 0] - origin, t[:, 1] - origin, t[:, 2]))
            rec["event_s"] = times
            rec["check"] = {"ok": chk.ok, "max_abs_error": chk.max_abs_error}
            release(*bufs.values(), dres, dtl)
        except Exception as err:  # noqa: BLE001
            rec["error"] = error_text(err)
        print("opencl occupancy", rec, flush=True)
    return out


def carveout_stage(out: Path, repeat: int) -> dict:
    """The OpenCL driver's PTX loaded through CUDA, timed at several shared-memory
    carveouts, with the resident work-groups per SM the CUDA occupancy calculator gives."""
    import cupy as cp
    from cupy.cuda import driver

    result: dict = {"carveouts": list(CARVEOUTS), "cases": []}
    rng = np.random.default_rng(12)
    for family, n, tile in OCCUPANCY_CASES:
        c = {"family": family, "m": n, "k": n, "n": None if family.startswith("matvec") else n,
             "tile": tile}
        rec: dict = {"id": case_id(c), "runs": []}
        result["cases"].append(rec)
        try:
            sch = build_case(c)
            kernel = generate(sch)
            host, ref, absprod = _inputs(sch, rng)
            ins = {k: cp.asarray(np.ascontiguousarray(v).reshape(-1)) for k, v in host.items()}
            grid, block = launch_geometry(kernel)
            for carveout in CARVEOUTS:
                module = ptx_module(out / "code" / f"{family}-T{tile}.opencl.ptx", False)
                fn = module.get_function(kernel.name)
                ptr = getattr(fn, "kernel", fn).ptr  # RawKernel wraps a cuda.Function
                if carveout >= 0:
                    driver.funcSetAttribute(ptr, CARVEOUT_ATTRIBUTE, carveout)
                resident = driver.occupancyMaxActiveBlocksPerMultiprocessor(
                    ptr, int(np.prod(block)), 0)
                t = cuda_times(module, kernel, sch, ins, ref, absprod, repeat)
                t.update(carveout=carveout, occupancy_calculator_resident=int(resident))
                rec["runs"].append(t)
                print(rec["id"], carveout, resident, f"{t['median_s'] * 1e3:.3f} ms",
                      t["check"]["ok"], flush=True)
                # the driver hands out the same function for the same PTX again (seen in a
                # run with this stage before "times"): leave it at the default
                driver.funcSetAttribute(ptr, CARVEOUT_ATTRIBUTE, -1)
            del ins
            cp.get_default_memory_pool().free_all_blocks()
        except Exception as err:  # noqa: BLE001
            rec["error"] = error_text(err)
            print(rec["id"], "ERROR", rec["error"][:300], flush=True)
    return result




def elf_images(blob: bytes) -> list[bytes]:
    """ELF64 images inside ``blob`` (a JIT cache entry), each cut at the furthest of its
    section table, program header table and section contents."""
    def u(at: int, size: int) -> int:
        return int.from_bytes(blob[at:at + size], "little")

    images = []
    start = blob.find(b"\x7fELF")
    while start >= 0 and start + 64 <= len(blob):
        end = -1
        if blob[start + 4] == 2:  # ELFCLASS64
            phoff, shoff = u(start + 32, 8), u(start + 40, 8)
            phentsize, phnum = u(start + 54, 2), u(start + 56, 2)
            shentsize, shnum = u(start + 58, 2), u(start + 60, 2)
            end = max(start + shoff + shentsize * shnum, start + phoff + phentsize * phnum)
            if end <= len(blob):
                for i in range(shnum):
                    sh = start + shoff + i * shentsize
                    if u(sh + 4, 4) != 8:  # SHT_NOBITS occupies no bytes
                        end = max(end, start + u(sh + 24, 8) + u(sh + 32, 8))
        if start < end <= len(blob):
            images.append(blob[start:end])
            start = blob.find(b"\x7fELF", end)
        else:
            start = blob.find(b"\x7fELF", start + 4)
    return images


def jit_sass_stage(out: Path) -> dict:
    """The machine code each driver really runs: NVIDIA's OpenCL driver returns only PTX,
    so its JIT result is read from the driver's compute cache (``CUDA_CACHE_PATH``), as is
    the CUDA driver's JIT of the same PTX; each cached ELF is disassembled (cuobjdump)."""
    tools = {t: find_tool(t) for t in ("cuobjdump",)}
    cache = Path(tempfile.mkdtemp(prefix="tt_jit_cache_"))
    env = {**os.environ, "CUDA_CACHE_PATH": str(cache), "CUDA_CACHE_DISABLE": "0",
           "CUDA_CACHE_MAXSIZE": str(1 << 30)}
    done = subprocess.run([sys.executable, "-m", "experiments.h200.codegen.jit_probe",
                           "--code", str(out / "code")], capture_output=True, text=True,
                          timeout=300, env=env, cwd=REPO)
    result: dict = {"rc": done.returncode, "stderr": done.stderr[-3000:], "kernels": {}}
    if done.returncode != 0:
        return result
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    result["cache_files"] = seen
    folder = out / "code"
    for driver_name, by_kernel in seen.items():
        for name, paths in by_kernel.items():
            rec = result["kernels"].setdefault(name, {})
            images = [img for p in paths for img in elf_images(Path(p).read_bytes())]
            rec[driver_name] = {"cache_files": len(paths), "elf_images": len(images)}
            for i, img in enumerate(images):
                cubin = folder / f"{name}.{driver_name}-jit.{i}.cubin"
                cubin.write_bytes(img)
                if tools["cuobjdump"]:
                    d = subprocess.run([tools["cuobjdump"], "-sass", str(cubin)],
                                       capture_output=True, text=True, timeout=60)
                    if d.returncode == 0 and d.stdout.strip():
                        cubin.with_suffix(".sass").write_text(d.stdout)
                        rec[driver_name].setdefault("sass_counts", []).append(
                            sass_counts(d.stdout))
                    else:
                        rec[driver_name].setdefault("errors", []).append(d.stderr[-500:])
            print("jit", driver_name, name, rec[driver_name].get("sass_counts"), flush=True)
    return result


OPTION_SETS = ([], ["-cl-nv-opt-level=3"], ["-cl-mad-enable"], ["-cl-fast-relaxed-math"],
               ["-cl-nv-opt-level=1"], ["-cl-nv-maxrregcount=64"])
"""OpenCL build options tried on the tiled kernels (NVIDIA's -cl-nv-* and standard ones)."""


def opencl_options_stage(target, repeat: int) -> dict:
    """OpenCL event times of the tiled kernels (N = 4096) built with each of OPTION_SETS."""
    import pyopencl as cl

    from tiletraffic.gpu.runtime.launch import check_result

    result: dict = {"option_sets": [list(o) for o in OPTION_SETS], "cases": []}
    rng = np.random.default_rng(13)
    for tile in GEMM_TILES:
        c = {"family": "gemm-tiled", "m": 4096, "k": 4096, "n": 4096, "tile": tile}
        rec: dict = {"id": case_id(c), "runs": []}
        result["cases"].append(rec)
        try:
            sch = build_case(c)
            kernel = generate(sch)
            host, ref, absprod = _inputs(sch, rng)
            bufs, res, dres, _ = opencl_buffers(target, host, ref.size)
            for opts in OPTION_SETS:
                run: dict = {"options": list(opts)}
                rec["runs"].append(run)
                try:
                    prg = cl.Program(target.context, kernel.source).build(options=list(opts))
                    k = cl.Kernel(prg, kernel.name)
                    k.set_args(*kernel_args(sch, kernel, bufs, dres))
                    times = timed_launches(target, k, kernel, 2 + repeat)[2:]
                    cl.enqueue_copy(target.queue, res, dres).wait()
                    chk = check_result(res.reshape(ref.shape), ref, 4096, absprod)
                    run.update(median_s=float(np.median(times)), check_ok=chk.ok)
                except Exception as err:  # noqa: BLE001
                    run["error"] = error_text(err)
                print("options", rec["id"], run, flush=True)
            release(*bufs.values(), dres)
        except Exception as err:  # noqa: BLE001
            rec["error"] = error_text(err)
    return result


CUBIN_CASES = [("gemm-naive", 4096, 16), ("gemm-tiled", 4096, 8), ("gemm-tiled", 4096, 16),
               ("gemm-tiled", 4096, 32), ("matvec-local", 16384, 256)]
CUBIN_CASES_MORE = [("gemm-tiled", 1024, 8), ("gemm-tiled", 1024, 16), ("gemm-tiled", 1024, 32),
                    ("gemm-naive", 1024, 32), ("gemm-naive", 4096, 32), ("gemm-naive", 4096, 8)]
"""Added with ``--more-cubin-cases`` (N = 1024, and the naive kernels the tiled ones are ranked
against)."""
"""Cases whose OpenCL-driver machine code (the cubin from the JIT cache) is launched
through CUDA: timed, checked, and (if the check passes) read by Nsight Compute."""



def opencl_cubin_stage(out: Path, cases: list[tuple[str, int, int]]) -> dict:
    """The OpenCL driver's machine code launched through CUDA (CuPy loads the cubin the
    driver's JIT cached): is the OpenCL time a property of that code or of the OpenCL
    runtime? Child process; the OpenCL build reads its parameters and NDRange offsets from
    its own constant-bank layout, so every result is checked and a failure recorded.
    ``cases``: (schedule, N, tile) triples launched after CUBIN_CASES
    (:mod:`experiments.h200.codegen.cubin_probe`, a child process: an illegal address ends a
    CUDA context)."""
    done = subprocess.run([sys.executable, "-m", "experiments.h200.codegen.cubin_probe",
                           "--code", str(out / "code"), "--cases", json.dumps(cases)],
                          capture_output=True, text=True, timeout=400, cwd=REPO)
    recs = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    for r in recs:
        print("cubin", r.get("id"), r.get("median_s"), r.get("check"), r.get("error", ""),
              flush=True)
    return {"rc": done.returncode, "stderr": done.stderr[-3000:], "cases": recs}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--skip", action="append", default=[],
                    choices=("times", "counters", "counters_ptx", "occupancy", "carveout",
                             "jit_sass", "options", "opencl_cubin"))
    ap.add_argument("--ncu-timeout-s", type=float, default=240.0)
    ap.add_argument("--l1-pipe-metrics", action="store_true",
                    help="add h200_matvec.EXTRA_METRICS (L1 pipeline, stall reasons) to the "
                         "Nsight runs")
    ap.add_argument("--more-cubin-cases", action="store_true",
                    help="launch the OpenCL cubins also for CUBIN_CASES_MORE")
    ap.add_argument("--cubin-cases", type=Path,
                    help="a JSON file of [family, n, tile] triples launched instead of "
                         "CUBIN_CASES_MORE (square sizes), e.g. held-out predictions")
    args = ap.parse_args(argv)
    listed_cases: list[tuple[str, int, int]] = []
    if args.cubin_cases:
        listed = json.loads(args.cubin_cases.read_text())
        cases_in = listed["cases"] if isinstance(listed, dict) else listed
        listed_cases = [(c["family"], c["n"], c["tile"]) if isinstance(c, dict) else tuple(c)
                        for c in cases_in]
    more_cases = listed_cases or (list(CUBIN_CASES_MORE) if args.more_cubin_cases else [])
    if args.l1_pipe_metrics:
        from experiments.h200.matvec.driver import EXTRA_METRICS
        validation.METRICS = validation.METRICS + tuple(
            m for m in EXTRA_METRICS if m not in validation.METRICS)
    from tiletraffic.gpu.devices.device import select_device

    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    command = shlex.join([sys.executable] + sys.argv)
    data: dict = {"meta": {"created_utc": _dt.datetime.now(_dt.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ"), "command": command}, "stage_wall_s": {}}
    path = out / "h200_codegen.json"

    def save() -> None:
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(path)

    target = select_device("nvidia")
    data["meta"]["opencl_device"] = target.info.describe()

    def stage(name, fn, *a):
        t0 = time.perf_counter()
        try:
            data[name] = fn(*a)
        except Exception as err:  # noqa: BLE001 - a stage's failure never stops the run
            data[name] = {"error": error_text(err), "traceback": traceback.format_exc()[-4000:]}
        data["stage_wall_s"][name] = time.perf_counter() - t0
        save()

    stage("code", code_stage, out, target)
    if "jit_sass" not in args.skip:
        stage("jit_sass", jit_sass_stage, out)
    if "options" not in args.skip:
        stage("opencl_options", opencl_options_stage, target, args.repeat)
    if "occupancy" not in args.skip:
        stage("opencl_occupancy", opencl_occupancy_stage, target)
    if "times" not in args.skip:
        stage("times", times_stage, out, target, times_cases(), args.repeat)
    if "counters" not in args.skip and "counters_ptx" not in args.skip:
        variant = data.get("times", {}).get("ptx_variant", {})
        cases = []
        for c in case_list(False):
            if c["m"] in L2_SWEEP_SIZES or c["family"] in PTX_UNSAFE:
                continue
            name = f"{c['family']}-T{c['tile']}"
            ptx = out / "code" / f"{name}.opencl.ptx"
            if variant.get(name):
                ptx = ptx.with_name(ptx.stem + ".envreg0.ptx")
            cases.append({**c, "id": c["id"] + "-opencl-ptx", "ptx_path": str(ptx)})
        extras = Path(tempfile.mkdtemp(prefix="tt_codegen_"))
        stage("counters", counters_stage, cases, extras, args.ncu_timeout_s)
    if "opencl_cubin" not in args.skip and "jit_sass" not in args.skip:
        stage("opencl_cubin", opencl_cubin_stage, out, more_cases)
        ok = [r for r in data["opencl_cubin"].get("cases", [])
              if r.get("check", {}).get("ok")]
        if ok and "counters" not in args.skip:
            listed = [{"family": f, "m": n, "k": n, "n": None if f.startswith("matvec") else n,
                       "tile": t} for f, n, t in CUBIN_CASES + CUBIN_CASES_MORE
                      + listed_cases]
            byid = {case_id(c): {**c, "id": case_id(c)} for c in case_list(False) + listed}
            cubins = [{**byid[r["id"]], "id": r["id"] + "-opencl-cubin", "ptx_path": r["cubin"]}
                      for r in ok if r["id"] in byid]
            stage("counters_cubin", counters_stage, cubins,
                  Path(tempfile.mkdtemp(prefix="tt_codegen_")), args.ncu_timeout_s)
    if "carveout" not in args.skip:  # last: it changes the functions' carveout
        stage("carveout", carveout_stage, out, args.repeat)
    with tarfile.open(out / "code.tar.gz", "w:gz") as tar:  # the device tool returns few files
        tar.add(out / "code", arcname="code")
    shutil.rmtree(out / "code")
    return 0


if __name__ == "__main__":
    sys.exit(main())
