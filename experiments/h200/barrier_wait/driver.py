"""How long a tiled work-group waits per K-tile on the H200: the delay the time model's mean
value analysis needs (``DeviceModel.memory_latency_s``), measured inside the OpenCL build.

The generated ``gemm-tiled`` kernel, built by NVIDIA's OpenCL driver with three reads of the
SM's cycle counter (``%clock64``, inline PTX) per K-tile in work-item (0, 0): at the top of
the tile loop (before its global loads), after the first barrier (the tile is in local
memory) and after the second (every work-item has used it). Per work-group the sums over
its tiles of *wait* (top -> first barrier: the global loads' latency, the stores to local
memory and the wait for the work-group's slowest sub-group) and *compute* (first -> second
barrier) go to a buffer with the work-group's cycles and ``%globaltimer`` nanoseconds from
start to end (their ratio is the SM clock during the run). Results are checked against a
float64 product; the instrumented kernel's time is recorded next to the plain one's.

The instrumentation is spliced into the generated kernel (:func:`instrumented_source`), so the
kernel stays the one :mod:`tiletraffic.gpu.codegen.generate` generates.

Run on the device, from the repository root after the device preamble of
``experiments/README.md`` (the recorded run: ``reports/nvidia-h200/barrier_wait/command.txt``)::

    python3 -m experiments.h200.barrier_wait.driver --out $OUT
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

from experiments.h200.codegen.driver import (kernel_args, opencl_buffers, release,
                                             timed_launches)
from experiments.h200.validation.driver import build_case, case_id, error_text

CASES = [(n, b) for n in (1024, 4096) for b in (8, 16, 32)]
"""(N, B) of the gemm-tiled launches measured."""

LOOP_HEAD = "for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {"
BARRIER = "barrier(CLK_LOCAL_MEM_FENCE);"
CLOCK = 'asm volatile("mov.u64 %0, %%clock64;" : "=l"({}));'
TIMER = 'asm volatile("mov.u64 %0, %%globaltimer;" : "=l"({}));'


def instrumented_source(source: str) -> str:
    """``source`` (the generated gemm-tiled kernel) with the per-tile cycle counts and a
    ``__global ulong *tt_out`` argument (6 values per work-group: wait, compute, tiles,
    cycles, ns, SM). Raises ValueError if the kernel does not have the expected shape."""
    if source.count(LOOP_HEAD) != 1 or source.count(BARRIER) != 2 or \
            source.count(")\n{") != 1 or not source.rstrip().endswith("}"):
        raise ValueError("unexpected gemm-tiled source shape")
    head, body = source.split(")\n{", 1)
    body = body.rstrip()[:-1]
    start = ("\n    ulong tt_wait = 0, tt_comp = 0, tt_tiles = 0, tt_a, tt_b, tt_c, tt_s, tt_e, "
             "tt_n0, tt_n1;\n    " + CLOCK.format("tt_s") + "\n    " + TIMER.format("tt_n0"))
    body = body.replace(LOOP_HEAD, LOOP_HEAD + "\n        " + CLOCK.format("tt_a"))
    first, second = body.split(BARRIER, 1)
    second = second.replace(BARRIER, BARRIER + "\n        " + CLOCK.format("tt_c")
                            + "\n        tt_comp += tt_c - tt_b; ++tt_tiles;")
    body = (first + BARRIER + "\n        " + CLOCK.format("tt_b")
            + "\n        tt_wait += tt_b - tt_a;" + second)
    end = ("    " + CLOCK.format("tt_e") + "\n    " + TIMER.format("tt_n1") + "\n"
           "    if (get_local_id(0) == 0 && get_local_id(1) == 0) {\n"
           "        uint tt_sm;\n"
           '        asm volatile("mov.u32 %0, %%smid;" : "=r"(tt_sm));\n'
           "        const size_t g = get_group_id(1) * get_num_groups(0) + get_group_id(0);\n"
           "        tt_out[6 * g] = tt_wait; tt_out[6 * g + 1] = tt_comp;\n"
           "        tt_out[6 * g + 2] = tt_tiles; tt_out[6 * g + 3] = tt_e - tt_s;\n"
           "        tt_out[6 * g + 4] = tt_n1 - tt_n0; tt_out[6 * g + 5] = tt_sm;\n"
           "    }\n}\n")
    return head + ", __global ulong *restrict tt_out)\n{" + start + body + end


def measure(target, n: int, tile: int, repeat: int, rng) -> dict:
    import pyopencl as cl

    from tiletraffic.gpu.runtime.checked_run import run_on_device
    from tiletraffic.gpu.runtime.launch import build_program, check_result, reference_product
    from tiletraffic.simulator.engine.data_inputs import random_inputs

    c = {"family": "gemm-tiled", "m": n, "k": n, "n": n, "tile": tile}
    rec: dict = {"id": case_id(c), "n": n, "tile": tile}
    sch = build_case(c)
    kernel = generate(sch)
    plain = run_on_device(target, sch, repeat=repeat, rng=rng).to_dict()
    rec["plain"] = {k: plain[k] for k in ("median_s", "min_s", "max_s", "check")}
    src = instrumented_source(kernel.source)
    k = cl.Kernel(build_program(target, src).program, kernel.name)
    host = random_inputs(sch, rng)
    ref, absprod = reference_product(host["A"], host["B"])
    groups = (n // tile) ** 2
    out = np.zeros(6 * groups, dtype=np.uint64)
    bufs, res, dres, dout = opencl_buffers(target, host, ref.size, out)
    k.set_args(*kernel_args(sch, kernel, bufs, dres), dout)
    times = timed_launches(target, k, kernel, 3)
    cl.enqueue_copy(target.queue, res, dres).wait()
    cl.enqueue_copy(target.queue, out, dout).wait()
    chk = check_result(res.reshape(ref.shape), ref, n, absprod)
    v = out.reshape(groups, 6).astype(np.float64)
    hz = v[:, 3].sum() / v[:, 4].sum() * 1e9
    tiles = v[:, 2]
    rec["instrumented"] = {"event_s": times, "check": {"ok": chk.ok,
                                                        "max_abs_error": chk.max_abs_error}}
    rec["sm_clock_hz"] = hz
    per_tile_wait_ns = v[:, 0] / tiles / hz * 1e9
    per_tile_comp_ns = v[:, 1] / tiles / hz * 1e9
    rec["tiles_per_work_group"] = int(tiles[0])
    rec["wait_ns_per_tile"] = {"mean": float(per_tile_wait_ns.mean()),
                               "p10": float(np.percentile(per_tile_wait_ns, 10)),
                               "p50": float(np.median(per_tile_wait_ns)),
                               "p90": float(np.percentile(per_tile_wait_ns, 90))}
    rec["compute_ns_per_tile"] = {"mean": float(per_tile_comp_ns.mean()),
                                  "p50": float(np.median(per_tile_comp_ns))}
    rec["work_group_ns"] = {"mean": float(v[:, 4].mean()), "p50": float(np.median(v[:, 4]))}
    release(*bufs.values(), dres, dout)
    return rec


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args(argv)
    from tiletraffic.gpu.devices.device import select_device

    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    target = select_device("nvidia")
    data: dict = {"meta": {"created_utc": _dt.datetime.now(_dt.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ"), "command": shlex.join([sys.executable] + sys.argv),
        "opencl_device": target.info.describe()}, "cases": []}
    rng = np.random.default_rng(15)
    path = out / "h200_barrier_wait.json"
    for n, tile in CASES:
        t0 = time.perf_counter()
        try:
            rec = measure(target, n, tile, args.repeat, rng)
        except Exception as err:  # noqa: BLE001 - one case's failure never stops the run
            rec = {"id": f"gemm-tiled-N{n}-T{tile}", "error": error_text(err)}
        rec["wall_s"] = time.perf_counter() - t0
        data["cases"].append(rec)
        print(json.dumps({k: rec.get(k) for k in ("id", "wait_ns_per_tile",
                                                   "compute_ns_per_tile", "sm_clock_hz",
                                                   "error")}), flush=True)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
