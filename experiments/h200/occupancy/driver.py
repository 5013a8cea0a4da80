"""How the time of one generated GEMM kernel on the H200 changes with the work-groups resident
per compute unit (R), the kernel, its registers and its accesses unchanged.

Lever: local (shared) memory. The generated source gets a padding array ``tt_pad`` of
``pad_bytes`` (:func:`pad_bytes`) so that static + pad + the 1 KiB reserved per work-group
let only R work-groups fit in the 228 KiB of a compute unit. The kernel never uses it: it is
touched under ``if (K < 0)``, a runtime argument the compiler cannot fold (a condition on
``get_local_id`` could be folded, its range being known), and is allocated at launch either
way. Two builds of the same edited source:

* ``cuda``: NVRTC (CuPy ``RawModule``) behind :mod:`experiments.h200.cuda`'s prelude, the pad
  an ``extern __shared__`` array sized at launch. ``cudaFuncAttributeMaxDynamicSharedMemory
  Size`` lifts the 48 KiB default to 227 KiB, so R = 1, 2, 3, 4 can all be forced; the
  shared-memory carveout is set to 100 % (228 KiB shared, the smallest L1) for every R, so
  the L1 size does not change with R (one extra row, ``carveout -1``, is the driver's own
  choice at natural R). The CUDA occupancy calculator's R and the R measured by one timeline
  launch (``experiments.h200.cuda.timeline_source``: most work-groups running at once on one SM) are
  recorded next to the forced R; the timeline build has registers of its own (nvcc 13.0,
  sm_90: 80 instead of 64 for rb-16-default), so its calculator R is recorded too.
* ``opencl``: NVIDIA's OpenCL driver, the pad a ``__local float *tt_pad`` argument set with
  ``cl.LocalMemory``. OpenCL caps a work-group's local memory at CL_DEVICE_LOCAL_MEM_SIZE
  (48 KiB on the H200) and offers no opt-in, so only R = 4 (and the natural R) is reachable;
  smaller R are recorded as infeasible. The driver picks the carveout here.

Per (case, build, R): registers (plain and padded build), natural and forced R, 2 warm-ups
then ``--repeat`` timed launches (median, min, max), the result checked against float64
numpy (K-scaled tolerance, :mod:`simulator.engine.tolerance`). ``OUT/raw.json`` is rewritten
atomically after each case. The model's predictions need no GPU (``--predict-only``).

Device (after the device preamble of ``experiments/README.md``)::

    PYTHONUNBUFFERED=1 timeout 200 python3 -m experiments.h200.occupancy.driver --out $OUT

Rehearsal on PoCL (N = 128, OpenCL only): ``--quick --device pocl``. Predictions:
``--predict-only --out DIR`` (reads DIR/raw.json's registers where there, writes
DIR/predictions.json).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import shlex
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

CASES = [("rb-16-8x8-bk8", "gemm-register-blocked", 16, {"tm": 8, "tn": 8, "bk": 8}),
         ("prefetch-16-8x8-bk8", "gemm-prefetch", 16, {"tm": 8, "tn": 8, "bk": 8}),
         ("vec-32x8-8x4-bk16", "gemm-vectorized", 32, {"wg_rows": 8, "tm": 8, "tn": 4, "bk": 16}),
         ("vec-16-8x8-bk16", "gemm-vectorized", 16, {"tm": 8, "tn": 8, "bk": 16}),
         ("rb-16-default", "gemm-register-blocked", 16, {})]
"""(label, family, tile, options) of the cases, built at M = K = N."""
FORCED_R = (1, 2, 3, 4)
CUDA_MAX_SHARED_PER_BLOCK = 232448
"""227 KiB: the opt-in maximum of shared memory per block on sm_90 (CUDA Programming Guide,
"Technical Specifications per Compute Capability")."""
CALIBRATED = "reports/nvidia-h200/preregistered2/h200-calibrated.toml"
MAX_DYNAMIC_SHARED, CARVEOUT = 8, 9  # CUfunction_attribute values (cuda.h)
PAD_GRANULE = 256


def pad_bytes(r: int, static_bytes: int, per_cu_bytes: int, reserved_bytes: int,
              max_per_group_bytes: int) -> int | None:
    """Padding (bytes) that leaves exactly ``r`` work-groups per compute unit by local memory:
    T = static + pad + reserved must satisfy per_cu / (r + 1) < T <= per_cu / r, and
    static + pad <= max_per_group_bytes. Returns the middle of the allowed pad range, rounded
    down to 256 bytes (kept inside the range), so allocation granularity cannot tip it; None
    when the range is empty (e.g. r = 1 under OpenCL's 48 KiB). Raises ValueError for r < 1."""
    if r < 1:
        raise ValueError(f"r = {r}: at least 1 work-group per compute unit")
    lo = max(per_cu_bytes // (r + 1) - reserved_bytes - static_bytes + 1, 0)
    hi = min(per_cu_bytes // r - reserved_bytes, max_per_group_bytes) - static_bytes
    if lo > hi:
        return None
    return min(max((lo + hi) // 2 // PAD_GRANULE * PAD_GRANULE, lo), hi)


def _split(source: str, int_arg: str) -> tuple[str, str, str]:
    if source.count(")\n{") != 1 or f"const int {int_arg}" not in source.split(")\n{")[0]:
        raise ValueError(f"unexpected kernel shape (one body, int argument {int_arg!r})")
    head, body = source.split(")\n{", 1)
    return head, body, f"\n    if ({int_arg} < 0) tt_pad[0] = 0.0f;"


def opencl_pad_source(source: str, int_arg: str = "K") -> str:
    """``source`` with a last argument ``__local float *restrict tt_pad``, touched once under
    ``if (int_arg < 0)``. Raises ValueError if the kernel is not one body with that int."""
    head, body, touch = _split(source, int_arg)
    return head + ", __local float *restrict tt_pad)\n{" + touch + body


def cuda_pad_source(source: str, int_arg: str = "K") -> str:
    """``source`` (to follow the CUDA prelude) with ``extern __shared__ float tt_pad[]`` (the
    launch's dynamic shared memory) first in the body, touched as in :func:`opencl_pad_source`."""
    head, body, touch = _split(source, int_arg)
    return head + ")\n{\n    extern __shared__ float tt_pad[];" + touch + body


def schedule(family, tile, options, n):
    import tiletraffic
    return tiletraffic.build(family, m=n, k=n, n=n, tile=tile, **options)


def sweep(rec: dict, dm, cap: int, specs, natural_pad: int, measure) -> dict:
    """``rec["rows"]``: per ``(forced R or None for natural, extra fields)`` of ``specs`` the
    pad, then ``measure(pad, row)`` (times, check) or why it was skipped or failed."""
    from experiments.h200.validation.driver import error_text
    natural, static = rec["natural_r"], rec["static_local_bytes"]
    for r, extra in specs:
        row = {"forced_r": r, **extra}
        rec["rows"].append(row)
        if r is not None and natural and r > natural:
            row["skipped"] = f"above the natural R = {natural}"
            continue
        row["pad_bytes"] = natural_pad if r is None else pad_bytes(
            r, static, dm.local_mem_bytes_per_cu, dm.local_mem_reserved_bytes_per_work_group, cap)
        if row["pad_bytes"] is None:
            row["skipped"] = f"needs more than {cap} bytes of local memory per work-group"
            continue
        try:
            measure(row["pad_bytes"], row)
        except Exception as err:  # noqa: BLE001 - one row's failure stops nothing
            row["error"] = error_text(err)
    return rec


def _stats(times, chk) -> dict:
    return {"median_s": float(np.median(times)), "min_s": float(min(times)),
            "max_s": float(max(times)), "times_s": [float(t) for t in times],
            "check": {"ok": bool(chk.ok), "max_abs_error": float(chk.max_abs_error)}}


def opencl_rows(target, sch, kernel, host, ref, absprod, repeat, dm) -> dict:
    """The OpenCL build: natural R (a 4-byte pad, the smallest local argument) and each
    forced R that fits CL_DEVICE_LOCAL_MEM_SIZE; natural R by the device model's rule with
    the build's registers (NVIDIA's ``-cl-nv-verbose`` log)."""
    import pyopencl as cl

    from tiletraffic.gpu.runtime.launch import (build_kernel, build_options, build_program,
                                                check_result, kernel_resources)

    from experiments.h200.codegen.driver import (kernel_args, opencl_buffers, release,
                                                 timed_launches)
    _, _, plain = build_kernel(target, kernel)
    built = build_program(target, opencl_pad_source(kernel.source),
                          build_options(target, kernel))
    k = cl.Kernel(built.program, kernel.name)
    padded = kernel_resources(target, k, kernel.name, built.log, built.how)
    regs = padded.registers_per_work_item
    static = padded.kernel_local_mem_bytes or sch.local_mem_bytes
    cap = int(target.device.local_mem_size)
    rec = {"registers_plain": plain.registers_per_work_item, "registers": regs,
           "static_local_bytes": static, "max_local_bytes": cap, "rows": [],
           "natural_r": dm.resident_work_groups_per_cu(kernel.work_group_items, static, regs)}
    bufs, res, dres, _ = opencl_buffers(target, host, ref.size)

    def measure(pad, row):
        cl.enqueue_copy(target.queue, dres, np.full(ref.size, np.nan, np.float32)).wait()
        k.set_args(*kernel_args(sch, kernel, bufs, dres), cl.LocalMemory(pad))
        times = timed_launches(target, k, kernel, 2 + repeat)[2:]
        cl.enqueue_copy(target.queue, res, dres).wait()
        row.update(_stats(times, check_result(res.reshape(ref.shape), ref,
                                              sch.param_values["K"], absprod)))
    sweep(rec, dm, cap, [(r, {}) for r in (None,) + FORCED_R], 4, measure)
    release(*bufs.values(), dres)
    return rec


def cuda_rows(sch, kernel, host, ref, absprod, repeat, dm) -> dict:
    """The CUDA build: natural R at the driver's carveout and at 100 %, each forced R at
    100 %; natural R by CUDA's occupancy calculator (pad 0, carveout 100 %)."""
    import cupy as cp
    from cupy.cuda import driver

    from experiments.h200.cuda import cuda_source, launch_geometry, timeline_source
    from tiletraffic.gpu.runtime.launch import check_result

    from experiments.h200.codegen.driver import resident_per_sm
    grid, block = launch_geometry(kernel)
    threads, groups = int(np.prod(block)), int(np.prod(grid))
    padded_k = replace(kernel, source=cuda_pad_source(kernel.source))
    plain = cp.RawModule(code=cuda_source(kernel)).get_function(kernel.name)
    fn = cp.RawModule(code=cuda_source(padded_k)).get_function(kernel.name)
    tl_src, tl_name = timeline_source(padded_k)
    tl_fn = cp.RawModule(code=tl_src).get_function(tl_name)
    static = int(fn.shared_size_bytes)
    ptrs = [getattr(f, "kernel", f).ptr for f in (fn, tl_fn)]

    def attribute(key, value):
        for p in ptrs:
            driver.funcSetAttribute(p, key, value)

    def occupancy(pad, i=0):
        return int(driver.occupancyMaxActiveBlocksPerMultiprocessor(ptrs[i], threads, pad))
    attribute(MAX_DYNAMIC_SHARED, CUDA_MAX_SHARED_PER_BLOCK - static)
    attribute(CARVEOUT, 100)
    ins = {n: cp.asarray(np.ascontiguousarray(v).reshape(-1)) for n, v in host.items()}
    out = cp.full(ref.size, cp.nan, dtype=cp.float32)
    args = tuple(np.int32(sch.param_values[a.name]) if a.kind == "int" else
                 out if a.kind == "global_out" else ins[a.name] for a in kernel.args)
    tl = cp.zeros(3 * groups, dtype=cp.uint64)
    rec = {"registers_plain": int(plain.num_regs), "registers": int(fn.num_regs),
           "timeline_registers": int(tl_fn.num_regs), "static_local_bytes": static,
           "natural_r": occupancy(0), "rows": []}

    def measure(pad, row):
        attribute(CARVEOUT, row["carveout"])
        row["occupancy_calculator_r"] = occupancy(pad)
        row["timeline_occupancy_calculator_r"] = occupancy(pad, 1)
        out.fill(cp.nan)
        times = []
        for _ in range(2 + repeat):
            e0, e1 = cp.cuda.Event(), cp.cuda.Event()
            e0.record()
            fn(grid, block, args, shared_mem=pad)
            e1.record()
            e1.synchronize()
            times.append(cp.cuda.get_elapsed_time(e0, e1) * 1e-3)
        row.update(_stats(times[2:], check_result(cp.asnumpy(out).reshape(ref.shape), ref,
                                                  sch.param_values["K"], absprod)))
        tl_fn(grid, block, args + (tl,), shared_mem=pad)
        t = cp.asnumpy(tl).reshape(groups, 3).astype(np.int64)
        t0 = t[:, 0].min()
        row["timeline"] = resident_per_sm(t[:, 0] - t0, t[:, 1] - t0, t[:, 2])
    specs = [(None, {"carveout": -1}), (None, {"carveout": 100})] + \
        [(r, {"carveout": 100}) for r in FORCED_R]
    sweep(rec, dm, CUDA_MAX_SHARED_PER_BLOCK, specs, 0, measure)
    del ins, out, tl
    cp.get_default_memory_pool().free_all_blocks()
    return rec


def predict(out: Path, n: int) -> dict:
    """Model of every case on the calibrated H200 model (no GPU), with the OpenCL build's
    registers from ``out/raw.json`` where it has them (else the CUDA build's, else none)."""
    import tiletraffic
    raw = out / "raw.json"
    cases = {c["label"]: c for c in json.loads(raw.read_text())["cases"]} if raw.exists() else {}
    preds = []
    for label, family, tile, options in CASES:
        c = cases.get(label, {})
        regs = next((c[b]["registers"] for b in ("opencl", "cuda")
                     if isinstance(c.get(b), dict) and c[b].get("registers")), None)
        p = tiletraffic.model(schedule(family, tile, options, c.get("n", n)), CALIBRATED,
                              registers_per_work_item=regs).prediction
        preds.append({"label": label, "n": c.get("n", n), "registers": regs,
                      "predicted_time_s": p.predicted_time_s,
                      "resident_work_groups_per_cu": p.resident_work_groups_per_cu})
        print(preds[-1], flush=True)
    return {"device_model": CALIBRATED, "cases": preds}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--budget-s", type=float, default=140.0,
                    help="start no case once this much wall time (with the last case's) is used")
    ap.add_argument("--quick", action="store_true", help="N = 128 (a PoCL rehearsal)")
    ap.add_argument("--device", default="nvidia", help="OpenCL device (select_device spec)")
    ap.add_argument("--predict-only", action="store_true", help="write predictions.json, no GPU")
    args = ap.parse_args(argv)
    from tiletraffic.analysis.files import atomic_write_text
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    n = 128 if args.quick else args.n
    if args.predict_only:
        atomic_write_text(out / "predictions.json", json.dumps(predict(out, n), indent=1))
        return 0
    os.environ.setdefault("PYOPENCL_NO_CACHE", "1")  # cached programs come without ptxas log
    import tiletraffic
    from tiletraffic.gpu.devices.device import select_device
    from tiletraffic.gpu.runtime.launch import reference_product
    from tiletraffic.simulator.engine.data_inputs import random_inputs

    from experiments.h200.validation.driver import error_text
    dm = tiletraffic.device_model("nvidia-h200")
    t_start = time.perf_counter()
    target = select_device(args.device)
    try:
        import cupy as cp
        cp.cuda.runtime.getDeviceCount()
        cuda_skip = None
    except Exception as err:  # noqa: BLE001 - no CuPy or no CUDA GPU here
        cuda_skip = f"CUDA build skipped: {error_text(err)[:200]}"
        print(cuda_skip, flush=True)
    data = {"meta": {"created_utc": _dt.datetime.now(_dt.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ"), "command": shlex.join([sys.executable] + sys.argv),
        "opencl_device": target.info.describe(), "n": n, "repeat": args.repeat,
        "cuda_skipped": cuda_skip}, "cases": []}
    rng = np.random.default_rng(20261205)
    inputs = None  # one A, B (and float64 product) for every case: all are N x N x N
    last_s = 0.0
    for label, family, tile, options in CASES:
        used = time.perf_counter() - t_start
        if used + last_s > args.budget_s:
            data["meta"]["stopped"] = f"budget: {used:.0f} s used, last case {last_s:.0f} s"
            print(data["meta"]["stopped"], flush=True)
            break
        t0 = time.perf_counter()
        rec: dict = {"label": label, "family": family, "tile": tile, "options": options, "n": n}
        try:
            sch = schedule(family, tile, options, n)
            kernel = tiletraffic.generate(sch)
            if inputs is None:
                host = random_inputs(sch, rng)
                inputs = (host, *reference_product(host["A"], host["B"]))
            host, ref, absprod = inputs
            for build, fn in (("opencl", lambda: opencl_rows(target, sch, kernel, host, ref,
                                                             absprod, args.repeat, dm)),
                              ("cuda", None if cuda_skip else lambda: cuda_rows(
                                  sch, kernel, host, ref, absprod, args.repeat, dm))):
                try:
                    rec[build] = {"skipped": cuda_skip} if fn is None else fn()
                except Exception as err:  # noqa: BLE001 - one build's failure stops nothing
                    rec[build] = {"error": error_text(err)}
        except Exception as err:  # noqa: BLE001
            rec["error"] = error_text(err)
        last_s = rec["wall_s"] = time.perf_counter() - t0
        data["cases"].append(rec)
        atomic_write_text(out / "raw.json", json.dumps(data, indent=1))
        for build in ("opencl", "cuda"):
            b = rec.get(build, {})
            print(label, build, "regs", b.get("registers"), "natural R", b.get("natural_r"),
                  " ".join(f"R{w.get('forced_r') or 'nat'}:{w['median_s'] * 1e3:.3f}ms"
                           f"{'' if w['check']['ok'] else '!BAD'}"
                           for w in b.get("rows", []) if "median_s" in w),
                  b.get("error", b.get("skipped", ""))[:300], flush=True)
        print(f"{label}: {last_s:.1f} s", rec.get("error", ""), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
