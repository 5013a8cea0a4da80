"""When each work-group ran on the H200, what the compiler made of the loops, and the load
latencies: the measurements behind the DRAM and time models' open questions (issue #4).

One device call (the ``device`` tool; carry nothing: only CuPy and numpy are used, both
installed there) does, writing under ``--out``:

1. **work-group timelines**: every case's generated OpenCL C is compiled as CUDA with
   :func:`experiments.h200.cuda.timeline_source` (the kernel unchanged, plus ``%globaltimer`` and
   ``%smid`` read by work-item 0 of each work-group before and after it); one warm-up
   launch, one recorded launch, result checked against a float64 product (cuBLAS FP64 via
   CuPy). Start, end (ns from the first start) and compute unit of every work-group go to
   ``timelines.npz`` (arrays ``<case>__start_ns``, ``__end_ns``, ``__cu``; uint32/uint16);
   summaries (waves, spread of start times per dispatch row, work-group duration
   percentiles) to ``h200_dispatch.json``.
2. **compiled code**: the plain CUDA build of each kernel (:func:`experiments.h200.cuda.cuda_source`,
   NVRTC, sm_90) as PTX and, where ``nvdisasm``/``cuobjdump`` is found (CUDA toolkit, or
   the copies Triton ships), SASS. (In the recorded run nvdisasm refused the cubin that
   CuPy's NVRTC binding returned, "invalid ELF file"; the SASS with per-instruction
   counters is in stage 3's ``source_sass.csv`` instead: the naive loop is unrolled 16
   times, 32 ``LDG.E.CONSTANT`` per trip.)
3. **Nsight Compute, full set** (``ncu --set full``, source counters, SASS) of a few GEMM
   kernels through ``experiments.h200.validation.driver --ncu-driver`` (same CUDA build, same
   launch, checked): warp stall reasons, L1/shared wavefronts per SASS instruction; the
   details and source pages as CSV in ``ncu_full.tar.gz``.
4. **load latency** (pointer chase, one thread, Jia et al. 2018, "Dissecting the NVIDIA
   Volta GPU architecture via microbenchmarking", section 3): ``clock64`` cycles and
   ``%globaltimer`` ns per dependent 4-byte load over a random cyclic permutation of 128-byte
   lines, for footprints from 16 KiB (L1) to 1 GiB (DRAM) (``chase.cu``).
5. **L1-resident load rate** (``--stages lsu_rate``, ``ldg_rate.cu``): global load
   instructions per cycle per SM for four access patterns.

Run on the device, from the repository root after the device preamble of
``experiments/README.md`` (the recorded runs: ``reports/nvidia-h200/dispatch/command.txt``)::

    PYTHONUNBUFFERED=1 timeout 500 python3 -m experiments.h200.dispatch.driver --out $OUT

Local rehearsal of the bookkeeping without a GPU: ``--dry-run-local`` (builds the sources,
summarises a synthetic timeline).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import glob
import json
import os
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np

from tiletraffic.gpu.codegen.generate import generate
from experiments.h200.cuda import cuda_source, launch_geometry, timeline_source
from tiletraffic.simulator.kernels.families import build

from experiments.h200.kernels import kernel_source
from experiments.h200.validation.driver import NCU_DRIVER_MODULE, REPO

TIMELINE_CASES = (
    *(("gemm-naive", n, 16) for n in (3072, 3840, 4096, 5120)),
    *(("gemm-tiled", n, 16) for n in (3072, 3840, 4096, 5120)),
    *((f, 4096, b) for f in ("gemm-naive", "gemm-tiled") for b in (8, 32)),
    ("gemm-naive", 1024, 32), ("gemm-tiled", 1024, 16),
    ("matvec-naive", 16384, 256), ("matvec-local", 16384, 256),
)
SASS_CASES = tuple((f, 1024, b) for f in ("gemm-naive", "gemm-tiled") for b in (8, 16, 32)) + (
    ("matvec-naive", 4096, 256), ("matvec-local", 4096, 256))
CHASE_FOOTPRINTS_BYTES = tuple(2 ** p for p in range(14, 31))  # 16 KiB .. 1 GiB
CHASE_STEPS = 4096


def schedule_of(family: str, n: int, tile: int):
    if family.startswith("matvec"):
        return build(family, n, n, None, tile)
    return build(family, n, n, n, tile)


def case_id(family: str, n: int, tile: int) -> str:
    return f"{family}-N{n}-T{tile}"


def summarise(start_ns: np.ndarray, end_ns: np.ndarray, cu: np.ndarray, groups_0: int) -> dict:
    """Waves and phase spread of one launch's work-groups (linear id = dispatch order).

    ``row_start_spread_ns``: for each row of work-groups (``groups_0`` consecutive ids,
    which share matrix B's columns with the rows before and after), max - min of its start
    times; percentiles over the rows. ``concurrent``: work-groups running at the median
    start time.
    """
    dur = end_ns.astype(np.int64) - start_ns.astype(np.int64)
    rows = len(start_ns) // groups_0
    row_spread = (start_ns[:rows * groups_0].reshape(rows, groups_0).max(1).astype(np.int64)
                  - start_ns[:rows * groups_0].reshape(rows, groups_0).min(1))
    t_mid = np.median(start_ns)
    concurrent = int(((start_ns <= t_mid) & (end_ns > t_mid)).sum())
    order = np.argsort(start_ns, kind="stable")
    inversions = int((np.diff(order) < 0).sum())
    pct = (5, 25, 50, 75, 95)
    return {
        "work_groups": int(len(start_ns)), "groups_0": int(groups_0),
        "compute_units_used": int(len(np.unique(cu))),
        "span_ns": int(end_ns.max() - start_ns.min()),
        "duration_ns_percentiles": dict(zip(map(str, pct), np.percentile(dur, pct).tolist())),
        "row_start_spread_ns_percentiles": dict(zip(map(str, pct),
                                                    np.percentile(row_spread, pct).tolist())),
        "concurrent_at_median_start": concurrent,
        "dispatch_order_inversions": inversions,
    }


def timeline_launch(family: str, m: int, k: int, n: int | None, tile: int, cid: str,
                    seed: int, source=timeline_source, prepare=None
                    ) -> tuple[dict, dict[str, np.ndarray]]:
    """One launch of a case built with :func:`experiments.h200.cuda.timeline_source` (after a warm-up
    launch), checked against a float64 product (cuBLAS FP64). Returns its record and the
    arrays ``<cid>__start_ns``, ``__end_ns`` (ns from the first start), ``__cu`` (SM).
    ``n`` is None for matrix-vector. Errors go into the record (``error``), never raised.

    Instrumented builds: ``source(kernel)`` gives (CUDA source, entry point) in place of
    :func:`experiments.h200.cuda.timeline_source`; ``prepare(module, grid, block)``, called before the
    launches, returns ``finish(origin_ns)``, called after them, whose dict of arrays joins
    the returned ones (``origin_ns``: the first start, in ``%globaltimer`` ns)."""
    import cupy as cp

    rec: dict = {"id": cid, "family": family, "m": m, "k": k, "n": n, "tile": tile}
    arrays: dict[str, np.ndarray] = {}
    t0 = time.perf_counter()
    try:
        sch = build(family, m, k, n, tile)
        kernel = generate(sch)
        src, entry = source(kernel)
        src = src.encode("ascii", "replace").decode()  # comments' "×" -> "?"
        module = cp.RawModule(code=src)
        fn = module.get_function(entry)
        grid, block = launch_geometry(kernel)
        groups = grid[0] * grid[1] * grid[2]
        finish = prepare(module, grid, block) if prepare else None
        rng = np.random.default_rng(seed)
        p = sch.param_values
        a = cp.asarray(rng.standard_normal((m, k), dtype=np.float32))
        if n is not None:
            b = cp.asarray(rng.standard_normal((k, n), dtype=np.float32))
            out_arr = cp.full((m, n), cp.nan, dtype=cp.float32)
            ins = {"A": a, "B": b}
        else:
            b = cp.asarray(rng.standard_normal(k, dtype=np.float32))
            out_arr = cp.full(m, cp.nan, dtype=cp.float32)
            ins = {"A": a, "x": b}
        ref = a.astype(cp.float64) @ b.astype(cp.float64)
        tl = cp.zeros(3 * groups, dtype=cp.uint64)
        args = []
        for arg in kernel.args:
            if arg.kind == "int":
                args.append(np.int32(p[arg.name]))
            elif arg.kind == "global_out":
                args.append(out_arr)
            else:
                args.append(ins[arg.name])
        args.append(tl)
        fn(grid, block, tuple(args))  # warm-up
        cp.cuda.runtime.deviceSynchronize()
        out_arr.fill(cp.nan)
        ev0, ev1 = cp.cuda.Event(), cp.cuda.Event()
        ev0.record()
        fn(grid, block, tuple(args))
        ev1.record()
        ev1.synchronize()
        rec["event_ms"] = cp.cuda.get_elapsed_time(ev0, ev1)
        err = float(cp.abs(out_arr.astype(cp.float64) - ref).max())
        tol = 1e-5 * k * float(cp.abs(ref).max()) + 1e-6
        rec["check"] = {"max_abs_error": err, "tolerance": tol, "ok": bool(err <= tol),
                        "nan_count": int(cp.isnan(out_arr).sum())}
        t = cp.asnumpy(tl).reshape(groups, 3)
        start = t[:, 0].astype(np.int64)
        origin = int(start.min())
        s = (start - origin).astype(np.uint32)
        e = (t[:, 1].astype(np.int64) - origin).astype(np.uint32)
        c = t[:, 2].astype(np.uint16)
        arrays[f"{cid}__start_ns"], arrays[f"{cid}__end_ns"], arrays[f"{cid}__cu"] = s, e, c
        if finish:
            arrays.update(finish(origin))
        rec["grid"], rec["block"] = list(grid), list(block)
        rec["summary"] = summarise(s, e, c, grid[0])
        print(f"{cid:28s} {rec['event_ms']:8.3f} ms  check {rec['check']['ok']}  "
              f"CUs {rec['summary']['compute_units_used']}  "
              f"conc {rec['summary']['concurrent_at_median_start']}", flush=True)
        del a, b, out_arr, ref, ins, tl
        cp.get_default_memory_pool().free_all_blocks()
    except Exception as err:  # noqa: BLE001 - recorded, next case
        rec["error"] = f"{type(err).__name__}: {err}"
        rec["traceback"] = traceback.format_exc()[-3000:]
        print(cid, "ERROR", rec["error"][:500], flush=True)
    rec["wall_s"] = time.perf_counter() - t0
    return rec, arrays


def timelines(out: Path, record: dict, save) -> None:
    arrays: dict[str, np.ndarray] = {}
    record["timelines"] = []
    for family, n, tile in TIMELINE_CASES:
        rec, got = timeline_launch(family, n, n, None if family.startswith("matvec") else n,
                                   tile, case_id(family, n, tile), seed=n * 100 + tile)
        record["timelines"].append(rec)
        arrays.update(got)
        write_npz(out, "timelines", arrays)
        save()


def write_npz(out: Path, name: str, arrays: dict[str, np.ndarray]) -> None:
    """``out/name.npz``, written atomically (through ``name.tmp.npz``)."""
    tmp = out / f"{name}.tmp.npz"
    np.savez_compressed(tmp, **arrays)
    os.replace(tmp, out / f"{name}.npz")


def find_tool(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    pats = [f"/usr/local/cuda*/bin/{name}", f"/opt/**/triton/backends/nvidia/bin/{name}",
            f"/usr/**/triton/backends/nvidia/bin/{name}", f"/opt/**/nvidia/cuda_nvcc/bin/{name}",
            f"/opt/**/bin/{name}"]
    for pat in pats:
        hits = sorted(glob.glob(pat, recursive=True))
        if hits:
            return hits[0]
    return None


def compiled_code(record: dict, save) -> None:
    from cupy_backends.cuda.libs import nvrtc

    tools = {t: find_tool(t) for t in ("nvdisasm", "cuobjdump", "ptxas")}
    record["tools"] = tools
    record["compiled"] = []
    for family, n, tile in SASS_CASES:
        cid = case_id(family, n, tile)
        rec: dict = {"id": cid}
        record["compiled"].append(rec)
        try:
            src = cuda_source(generate(schedule_of(family, n, tile)))
            src = src.encode("ascii", "replace").decode()
            for arch, kind in (("compute_90", "ptx"), ("sm_90", "cubin")):
                prog = nvrtc.createProgram(src, f"{cid}.cu", [], [])
                try:
                    nvrtc.compileProgram(prog, [f"-arch={arch}"])
                except Exception as err:  # noqa: BLE001
                    rec[f"{kind}_error"] = f"{err}: {nvrtc.getProgramLog(prog)}"
                    continue
                if kind == "ptx":
                    ptx = nvrtc.getPTX(prog)
                    rec["ptx"] = ptx.decode() if isinstance(ptx, bytes) else ptx
                else:
                    cubin = nvrtc.getCUBIN(prog)
                    path = Path(f"/tmp/{cid}.cubin")
                    path.write_bytes(cubin)
                    for tool, argv in (("nvdisasm", ["-c", "-g"]), ("cuobjdump", ["-sass"])):
                        if tools.get(tool):
                            done = subprocess.run([tools[tool], *argv, str(path)],
                                                  capture_output=True, text=True, timeout=60)
                            if done.returncode == 0 and done.stdout.strip():
                                rec["sass"], rec["sass_tool"] = done.stdout, tool
                                break
                            rec[f"{tool}_error"] = done.stderr[-2000:]
            print(cid, "ptx" if "ptx" in rec else "-", rec.get("sass_tool", "no sass"),
                  flush=True)
        except Exception as err:  # noqa: BLE001
            rec["error"] = f"{type(err).__name__}: {err}"
            print(cid, "ERROR", rec["error"][:300], flush=True)
        save()


CHASE_SRC = kernel_source(__file__, "chase.cu")


def latency(record: dict, save) -> None:
    import cupy as cp

    fn = cp.RawModule(code=CHASE_SRC).get_function("chase")
    rng = np.random.default_rng(7)
    record["latency"] = []
    for footprint in CHASE_FOOTPRINTS_BYTES:
        lines = footprint // 128
        perm = rng.permutation(lines)
        nxt = np.zeros(footprint // 4, dtype=np.uint32)
        # a random cycle through the lines: line perm[i] points to perm[i+1] (word 0 of each)
        nxt[perm * 32] = np.roll(perm, -1) * 32
        d = cp.asarray(nxt)
        res = cp.zeros(3, dtype=cp.uint64)
        steps = CHASE_STEPS
        fn((1,), (1,), (d, np.int32(steps), res))
        cp.cuda.runtime.deviceSynchronize()
        r = cp.asnumpy(res)
        rec = {"footprint_bytes": footprint, "steps": steps,
               "cycles_per_load": float(r[0]) / steps, "ns_per_load": float(r[1]) / steps}
        record["latency"].append(rec)
        print(f"chase {footprint / 1024:10.0f} KiB  {rec['cycles_per_load']:7.1f} cycles  "
              f"{rec['ns_per_load']:7.1f} ns", flush=True)
        del d
        cp.get_default_memory_pool().free_all_blocks()
    save()


NCU_FULL_CASES = tuple(("gemm-naive", 1024, b) for b in (8, 16, 32)) + tuple(
    ("gemm-tiled", 1024, b) for b in (16, 32)) + (("gemm-naive", 4096, 16),
                                                 ("gemm-tiled", 4096, 16))


def ncu_full(out: Path, record: dict, save) -> None:
    import tarfile
    import tempfile

    ncu = find_tool("ncu") or "/usr/local/cuda/bin/ncu"
    tmp = Path(tempfile.mkdtemp())
    cases = [{"family": f, "m": n, "k": n, "n": n, "tile": b, "id": case_id(f, n, b)}
             for f, n, b in NCU_FULL_CASES]
    (tmp / "cases.json").write_text(json.dumps(cases))
    rep = tmp / "full"
    argv = [ncu, "--clock-control", "none", "--set", "full", "--target-processes", "all",
            "--kernel-name", "regex:^(gemm|matvec)_", "--export", str(rep), "--force-overwrite",
            sys.executable, "-m", NCU_DRIVER_MODULE, "--ncu-driver",
            str(tmp / "cases.json"), "--driver-out", str(tmp / "driver.json")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=REPO)
    record["ncu_full"] = {"argv": argv, "rc": done.returncode, "stdout": done.stdout[-4000:],
                          "stderr": done.stderr[-4000:], "cases": cases}
    if (tmp / "driver.json").exists():
        record["ncu_full"]["driver"] = json.loads((tmp / "driver.json").read_text())
    save()
    pages = {"details.csv": ["--page", "details", "--csv", "--print-units", "base"],
             "raw.csv": ["--page", "raw", "--csv", "--print-units", "base"],
             "source_sass.csv": ["--page", "source", "--csv", "--print-source", "sass"]}
    with tarfile.open(out / "ncu_full.tar.gz", "w:gz") as tar:
        for name, extra in pages.items():
            got = subprocess.run([ncu, "--import", f"{rep}.ncu-rep", *extra],
                                 capture_output=True, text=True, timeout=300)
            (tmp / name).write_text(got.stdout + ("\n# stderr:\n" + got.stderr
                                                  if got.returncode else ""))
            record["ncu_full"][f"{name}_rc"] = got.returncode
            tar.add(tmp / name, arcname=name)
    save()


LSU_SRC = kernel_source(__file__, "ldg_rate.cu")
LSU_MODES = {0: "1 line / 4 sectors", 1: "1 sector, broadcast", 2: "2 lines", 3: "4 lines"}


def lsu_rate(record: dict, save) -> None:
    """Global load instructions per cycle per compute unit when every load hits L1.

    Each warp issues 16 independent ``LDG`` per loop trip from a 32 KiB array (L1-resident
    after the first trip), 64 warps per compute unit, 4 waves; the four access patterns
    differ in lines (L1 data wavefronts) per instruction. Rate = warp instructions /
    (event time x SM clock x compute units); the SM clock is read from the device
    attributes (``cudaDevAttrClockRate``).
    """
    import cupy as cp

    fn = cp.RawModule(code=LSU_SRC).get_function("ldg_rate")
    dev = cp.cuda.Device()
    cus = dev.attributes["MultiProcessorCount"]
    clock_hz = dev.attributes["ClockRate"] * 1e3
    src = cp.asarray(np.random.default_rng(3).standard_normal(8192, dtype=np.float32))
    iters = 2048
    record["lsu_rate"] = {"compute_units": cus, "clock_hz": clock_hz, "iters": iters,
                          "runs": []}
    for block in (256, 1024):
        grid = cus * (2048 // block) * 4
        out_arr = cp.zeros(grid * block, dtype=cp.float32)
        for mode, label in LSU_MODES.items():
            args = (src, out_arr, np.int32(iters), np.int32(mode))
            fn((grid,), (block,), args)
            cp.cuda.runtime.deviceSynchronize()
            times = []
            for _ in range(5):
                e0, e1 = cp.cuda.Event(), cp.cuda.Event()
                e0.record()
                fn((grid,), (block,), args)
                e1.record()
                e1.synchronize()
                times.append(cp.cuda.get_elapsed_time(e0, e1) * 1e-3)
            t = float(np.median(times))
            instr = grid * block // 32 * iters * 16
            rate = instr / (t * clock_hz * cus)
            rec = {"block": block, "grid": grid, "mode": mode, "pattern": label,
                   "median_s": t, "warp_load_instructions": instr,
                   "instructions_per_cycle_per_cu": rate}
            record["lsu_rate"]["runs"].append(rec)
            print(f"ldg block {block:5d} {label:22s} {t * 1e3:8.3f} ms  "
                  f"{rate:6.3f} instr/cycle/CU", flush=True)
    save()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="output folder (the device's $OUT)")
    ap.add_argument("--dry-run-local", action="store_true",
                    help="no GPU: build the sources and summarise a synthetic timeline")
    ap.add_argument("--stages", nargs="+", default=["timelines", "compiled_code", "ncu_full",
                                                     "latency", "lsu_rate"],
                    choices=["timelines", "compiled_code", "ncu_full", "latency", "lsu_rate"],
                    help="stages to run, in this order (default: all)")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    record: dict = {"meta": {"created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(),
                             "argv": sys.argv, "python": sys.version}}
    path = args.out / "h200_dispatch.json"

    def save() -> None:
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(record, indent=1))
        os.replace(tmp, path)

    if args.dry_run_local:
        for family, n, tile in TIMELINE_CASES[:2] + SASS_CASES:
            timeline_source(generate(schedule_of(family, min(n, 256), tile)))
        rng = np.random.default_rng(0)
        s = np.sort(rng.integers(0, 10 ** 6, 4096)).astype(np.uint32)
        record["dry_run_summary"] = summarise(s, s + 1000, (np.arange(4096) % 132).astype(
            np.uint16), 64)
        save()
        print(json.dumps(record["dry_run_summary"], indent=1))
        return 0
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm",
                          "--format=csv,noheader"], capture_output=True, text=True)
    record["meta"]["nvidia_smi"] = smi.stdout.strip()
    ap_stages = {"timelines": timelines, "compiled_code": compiled_code,
                 "ncu_full": ncu_full, "latency": latency, "lsu_rate": lsu_rate}
    for stage in (ap_stages[name] for name in args.stages):
        t0 = time.perf_counter()
        try:
            if stage in (timelines, ncu_full):
                stage(args.out, record, save)
            else:
                stage(record, save)
        except Exception as err:  # noqa: BLE001 - recorded, next stage
            record.setdefault("stage_errors", {})[stage.__name__] = traceback.format_exc()
            print(stage.__name__, "FAILED", err, flush=True)
        record.setdefault("stage_wall_s", {})[stage.__name__] = time.perf_counter() - t0
        save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
