"""Does a matvec-naive SM run faster when the other SMs are busy, whatever they do?

``experiments.h200.matvec.driver --busy-sms`` found matvec-naive 8.8% faster per SM with 132 SMs busy than
with 8 to 32 (the same work per work-group), the local schedules not. This script keeps the
number of matvec work-groups fixed and busies the *other* SMs with an unrelated CUDA kernel
(``background.cu``) on a second stream, launched right after the matvec kernel:

- ``none``: the matvec kernel alone;
- ``spin``: the background only counts cycles (``clock64``), no memory traffic;
- ``l2``: the background reads an 8 MiB buffer over and over (it stays in L2);
- ``dram``: the background streams through a 4 GiB buffer (DRAM reads).

The matvec kernels are the CUDA build of the generated source (``experiments.h200.cuda.cuda_source``,
NVRTC through CuPy; the same busy-SM effect shows there under Nsight, ``matvec/``), launched
with 160 KiB of dynamic shared memory they do not use, so that no background work-group
(100 KiB each) fits on their SMs: the background takes every other SM (two work-groups
each) and none of theirs. ``none`` is measured both with and without that shared memory (it
shrinks the L1). Times: CuPy events around the matvec launch on its own stream, median of
``--repeat``; every matvec result checked against a float64 product. Writes
``OUT/h200_busy_background.json``.

Run on the device, from the repository root after the device preamble of
``experiments/README.md`` (the recorded runs: ``reports/nvidia-h200/matvec/busy_background/
command.txt``)::

    python3 -m experiments.h200.busy_background.driver --out $OUT
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import shlex
import sys
import time
from pathlib import Path

import numpy as np

from tiletraffic.gpu.codegen.generate import generate
from experiments.h200.cuda import cuda_source, launch_geometry

from experiments.h200.kernels import kernel_source
from experiments.h200.validation.driver import build_case, case_id, error_text

FAMILIES = ("matvec-naive", "matvec-local", "matvec-local-whole")
WORK_GROUPS = (16, 132)
"""Work-groups of 256 rows: 16 with 116 SMs left for the background, and every SM."""
MODES = ("none", "spin", "l2", "dram")
MATVEC_PAD_BYTES = 160 * 1024
"""Unused dynamic shared memory of every matvec launch: with it no background work-group
fits on a matvec SM (228 KiB per SM)."""
BACKGROUND_SMEM_BYTES = 100 * 1024
BACKGROUND_THREADS = 512
BACKGROUND_SECONDS = 0.02
"""How long each background work-group runs (clock64 at the SM clock): longer than any matvec
launch here (at most 2 ms, at K = 12288)."""
L2_BUFFER_BYTES = 8 * 2**20
DRAM_BUFFER_BYTES = 4 * 2**30

BACKGROUND_SOURCE = kernel_source(__file__, "background.cu")


def matvec_case(family: str, m: int, k: int) -> dict:
    c = {"family": family, "m": m, "k": k, "n": None, "tile": 256}
    c["id"] = case_id(c)
    return c


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--k", type=int, default=4096, help="K, the length of x (default 4096)")
    args = ap.parse_args(argv)

    import cupy as cp

    from tiletraffic.gpu.runtime.launch import check_result
    from tiletraffic.simulator.engine.data_inputs import random_inputs

    out_dir = args.out.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    sm_count = cp.cuda.Device().attributes["MultiProcessorCount"]
    clock_hz = cp.cuda.Device().attributes["ClockRate"] * 1e3
    result: dict = {"meta": {
        "created_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": shlex.join([sys.executable] + sys.argv), "repeat": args.repeat,
        "k": args.k, "sm_count": sm_count, "clock_hz": clock_hz, "modes": MODES,
        "matvec_pad_bytes": MATVEC_PAD_BYTES, "background_smem_bytes": BACKGROUND_SMEM_BYTES,
        "background_threads": BACKGROUND_THREADS, "background_seconds": BACKGROUND_SECONDS,
        "l2_buffer_bytes": L2_BUFFER_BYTES, "dram_buffer_bytes": DRAM_BUFFER_BYTES},
        "cases": []}
    path = out_dir / "h200_busy_background.json"

    def save() -> None:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(result, indent=1))
        tmp.replace(path)

    bg = cp.RawModule(code=BACKGROUND_SOURCE).get_function("background")
    bg.max_dynamic_shared_size_bytes = BACKGROUND_SMEM_BYTES
    bg_out = cp.zeros(1, dtype=cp.float32)
    buffers = {"l2": cp.ones(L2_BUFFER_BYTES // 4, dtype=cp.float32),
               "dram": cp.ones(DRAM_BUFFER_BYTES // 4, dtype=cp.float32)}
    cycles = np.int64(BACKGROUND_SECONDS * clock_hz)
    stream_a, stream_b = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    rng = np.random.default_rng(20261130)
    start = time.perf_counter()

    def launch_background(mode: str, groups: int) -> None:
        buf = buffers.get(mode, buffers["l2"])
        with stream_b:
            bg((2 * (sm_count - groups),), (BACKGROUND_THREADS,),
               (np.int32(MODES.index(mode) - 1 if mode != "none" else 0), cycles, buf,
                np.uint64(buf.size), bg_out), shared_mem=BACKGROUND_SMEM_BYTES)

    for m, k in ((256 * g, args.k) for g in WORK_GROUPS):
        for family in FAMILIES:
            c = matvec_case(family, m, k)
            rec: dict = {"id": c["id"], "family": family, "m": m, "k": k, "times": {}}
            result["cases"].append(rec)
            try:
                sch = build_case(c)
                kernel = generate(sch)
                fn = cp.RawModule(code=cuda_source(kernel)).get_function(kernel.name)
                fn.max_dynamic_shared_size_bytes = MATVEC_PAD_BYTES
                host = random_inputs(sch, rng)
                ins = {n: cp.asarray(np.ascontiguousarray(v).reshape(-1))
                       for n, v in host.items()}
                a64, x64 = (cp.asarray(host[n], dtype=cp.float64) for n in ("A", "x"))
                ref, absprod = cp.asnumpy(a64 @ x64), cp.asnumpy(cp.abs(a64) @ cp.abs(x64))
                del a64, x64
                y = cp.full(m, cp.nan, dtype=cp.float32)
                p = sch.param_values
                kargs = tuple(np.int32(p[a.name]) if a.kind == "int" else y
                              if a.kind == "global_out" else ins[a.name] for a in kernel.args)
                grid, block = launch_geometry(kernel)
                groups = grid[0] * grid[1] * grid[2]
                rec["work_groups"] = groups
                modes = ("alone_unpadded", *(MODES if groups < sm_count else ("none",)))
                for mode in modes:
                    pad = 0 if mode == "alone_unpadded" else MATVEC_PAD_BYTES
                    times, ok = [], None
                    for rep in range(args.repeat + 2):
                        cp.cuda.Device().synchronize()
                        y.fill(cp.nan)
                        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
                        with stream_a:
                            e0.record()
                            fn(grid, block, kargs, shared_mem=pad)
                            e1.record()
                        if mode not in ("none", "alone_unpadded"):
                            launch_background(mode, groups)
                        cp.cuda.Device().synchronize()
                        if rep == 0:
                            ok = check_result(cp.asnumpy(y), ref, k, absprod)
                        if rep >= 2:
                            times.append(cp.cuda.get_elapsed_time(e0, e1) * 1e-3)
                    rec["times"][mode] = {
                        "median_s": float(np.median(times)), "min_s": min(times),
                        "max_s": max(times),
                        "check": {"ok": bool(ok.ok), "max_abs_error": float(ok.max_abs_error)}}
                    print(f"{c['id']:38s} {mode:15s} {np.median(times) * 1e3:8.4f} ms "
                          f"{'ok' if ok.ok else 'BAD'}", flush=True)
                del ins
                cp.get_default_memory_pool().free_all_blocks()
            except Exception as err:  # noqa: BLE001 - one case's failure never stops the run
                rec["error"] = error_text(err)
                print(c["id"], "failed:", rec["error"], flush=True)
            save()
    result["meta"]["wall_s"] = time.perf_counter() - start
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
