"""Nsight Compute counters of both kernels of ``gemm-split-k`` (the CUDA build) on the H200.

``gemm-split-k`` is a :class:`~tiletraffic.simulator.ir.sequence.KernelSequence`: kernel 1
``gemm_split_k_slices`` (``gemm-warp-tiled`` over S slices of K) writes ``C_partial[S][M][N]``,
kernel 2 ``gemm_split_k_reduce`` adds the slices into C with float4. The local-memory counter
check (``experiments/h200/local_counters/``) launches single kernels only; this driver
launches each case's two kernels in order in one CUDA process, ``C_partial`` a device buffer
between them, under one Nsight Compute run, so that ncu reports each kernel's counters on
its own (one profiled result per launch, told apart by launch order and kernel name).

Per case of :data:`CASES`: the CUDA build of each kernel (NVRTC through CuPy ``RawModule``
of :func:`experiments.h200.cuda.cuda_source`, as ``validation.driver --ncu-driver`` builds
one kernel), inputs from ``simulator.engine.data_inputs.random_inputs`` (a generator seeded by the
case id), C and ``C_partial`` filled with the unwritten NaN before the launches, kernel 1
then kernel 2, C checked against float64 numpy (``simulator.engine.tolerance.check_result``, K-scaled
tolerance) and ``C_partial``'s never-written elements counted. ncu (``--clock-control none
--cache-control all``, ``--section SourceCounters`` where it works, the metrics of
:data:`experiments.h200.local_counters.driver.METRICS`: global and local requests, sectors,
wavefronts, bank conflicts) records every ``gemm_split_k_*`` launch; its raw page is joined
to the launches in launch order, each record's kernel name checked.

Files: ``OUT/split_k_counters.json`` (rewritten after each stage) and ``OUT/code.tar.gz``
(the CUDA sources, ncu's log, raw and source pages, the ``.ncu-rep``). The table against
the model: :mod:`experiments.h200.split_k.counters_table`.

Device call (nvidia-h200, one), from the repository root after the device preamble of
``experiments/README.md`` (expected 1 to 1.5 minutes: CuPy and three NVRTC builds, one ncu
run of six short launches, two imports of its report; ``--deadline-s`` has every file
written by 210 s, ``timeout`` ends it at 240 s)::

    mkdir -p $OUT/skc && PYTHONUNBUFFERED=1 timeout 240 python3 -m \
        experiments.h200.split_k.counters --out $OUT/skc --deadline-s 210 \
        > $OUT/skc/driver.log 2>&1; echo "rc=$?" >> $OUT/skc/driver.log

Rehearsal without a GPU (``--dry-run-local``): the same cases, sources and checks, each
kernel executed by the simulator instead of CUDA (values, about 25 s), no ncu; with
``--nvrtc LIBNVRTC`` (``libnvrtc.so.13`` of the ``nvidia-cuda-nvrtc==13.0.88`` wheel, as
:mod:`experiments.h200.local_counters.offline_sass`; its folder on ``LD_LIBRARY_PATH`` for
the builtins library) each CUDA source is also compiled for ``sm_90``, and with
``--cuobjdump BIN`` (``nvdisasm`` on ``PATH``) its local-memory instructions counted::

    LD_LIBRARY_PATH=/tmp/cudatools/nvidia/cu13/lib PATH=/tmp/cudatools3/nvidia/cu13/bin:$PATH \
    python -m experiments.h200.split_k.counters --out /tmp/skc --dry-run-local \
        --nvrtc /tmp/cudatools/nvidia/cu13/lib/libnvrtc.so.13 \
        --cuobjdump /tmp/cudatools2/nvidia/cu13/bin/cuobjdump
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
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
"""The repository root: the working directory of the child process ncu runs."""

FAMILY = "gemm-split-k"

CASES = (
    (128, 4096, 1024, 16, {"wg_rows": 8, "tm": 8, "tn": 4, "bk": 32, "wn": 32, "splits": 4}),
    (64, 2048, 512, 16, {"wg_rows": 8, "tm": 8, "tn": 8, "bk": 16, "wn": 32, "splits": 3}),
    (100, 1000, 516, 16, {"wg_rows": 8, "tm": 8, "tn": 4, "bk": 32, "wn": 32, "splits": 2}),
)
"""(M, K, N, tile, options): the shape of split-K's use (M = 128, few blocks of C) with the
8×4, BK 32 kernel at S = 4; the 8×8, BK 16 kernel at S = 3 (43, 43 and 42 K steps per
slice); and a shape of no size a multiple of its tile (blocks of 64×64: M = 100 and N = 516
leave partial blocks, K = 1000 a partial last K step of 8; 129 float4 columns of C give the
reduction a partial work-group and a sub-group of one work-item)."""

KERNEL_REGEX = "regex:^gemm_split_k_"
"""ncu's kernel filter: both kernels, nothing CuPy launches of its own."""

CHILD_OUT = "child.json"

DEADLINE = [float("inf")]
"""``time.monotonic()`` by which every stage must be done (``--deadline-s``)."""


def _left(margin_s: float = 5.0) -> float:
    return DEADLINE[0] - time.monotonic() - margin_s


def _error(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}"


# ------------------------------------------------------------------------------ cases
def case_dict(m: int, k: int, n: int, tile: int, options: dict) -> dict:
    """A case as the H200 drivers write them (``family``, sizes, ``tile``, ``options``,
    ``id``), plus ``kernels``: per kernel in launch order its ``kernel_name``, ``family``,
    CUDA ``grid`` and ``block``."""
    from tiletraffic.gpu.codegen.generate import generate
    from experiments.h200.cuda import launch_geometry

    from experiments.h200.validation.driver import build_case, case_id

    c = {"family": FAMILY, "m": m, "k": k, "n": n, "tile": tile, "options": dict(options)}
    c["id"] = case_id(c)
    kernels = []
    for i, sch in enumerate(build_case(c).kernels):
        grid, block = launch_geometry(generate(sch))
        kernels.append({"index": i, "kernel_name": sch.kernel_name, "family": sch.family,
                        "grid": list(grid), "block": list(block),
                        "local_mem_bytes": sch.local_mem_bytes})
    c["kernels"] = kernels
    return c


def cases() -> list[dict]:
    """:data:`CASES` as case dicts (:func:`case_dict`)."""
    return [case_dict(*c) for c in CASES]


def cuda_sources(case: dict) -> list[str]:
    """The CUDA source of each kernel of ``case``, in launch order (ASCII: a non-ASCII
    character of a comment as ``?``, which NVRTC may refuse)."""
    from tiletraffic.gpu.codegen.generate import generate
    from experiments.h200.cuda import cuda_source

    from experiments.h200.validation.driver import build_case

    return [cuda_source(generate(sch)).encode("ascii", "replace").decode()
            for sch in build_case(case).kernels]


# ------------------------------------------------------------------------------ launches
class CudaLauncher:
    """Buffers on the GPU (CuPy), each kernel compiled by NVRTC and launched with the
    grid and block of :func:`experiments.h200.cuda.launch_geometry`."""

    name = "cuda"

    def __init__(self):
        import cupy as cp
        self.cp = cp
        self.modules: dict = {}     # source -> RawModule
        self.functions: dict = {}   # source -> its kernel, loaded

    def compile(self, sch, source: str) -> dict:
        """Build (cached by source) and load kernel ``sch``; its CUDA function attributes."""
        if source not in self.modules:
            self.modules[source] = self.cp.RawModule(code=source)
        fn = self.modules[source].get_function(sch.kernel_name)   # compiles, loads here
        attrs = {}
        for name in ("num_regs", "shared_size_bytes", "local_size_bytes",
                     "max_threads_per_block"):
            try:
                attrs[name] = int(getattr(fn, name))
            except Exception:  # noqa: BLE001 - attribute missing in this CuPy
                pass
        self.functions[source] = fn
        return attrs

    def buffers(self, arrays: dict) -> dict:
        return {name: self.cp.asarray(a.reshape(-1)) for name, a in arrays.items()}

    def launch(self, sch, source: str, buffers: dict) -> None:
        import numpy as np

        from tiletraffic.gpu.codegen.generate import generate
        from experiments.h200.cuda import launch_geometry

        kernel = generate(sch)
        p = sch.param_values
        args = tuple(np.int32(p[a.name]) if a.kind == "int" else buffers[a.name]
                     for a in kernel.args)
        grid, block = launch_geometry(kernel)
        self.functions[source](grid, block, args)
        self.cp.cuda.runtime.deviceSynchronize()

    def read(self, buffers: dict, name: str):
        return self.cp.asnumpy(buffers[name])


class SimulatorLauncher:
    """The rehearsal's stand-in for CUDA: each kernel executed by the simulator with values
    (``simulator.engine.simulation.simulate``), the buffers numpy arrays kept flat as on the GPU."""

    name = "simulator"

    def compile(self, sch, source: str) -> dict:
        return {}

    def buffers(self, arrays: dict) -> dict:
        return {name: a.reshape(-1).copy() for name, a in arrays.items()}

    def launch(self, sch, source: str, buffers: dict) -> None:
        from tiletraffic.simulator.engine.simulation import simulate

        p = sch.param_values
        shape = {a.name: tuple(p[s] for s in a.shape) for a in sch.arrays}
        inputs = {a.name: buffers[a.name].reshape(shape[a.name])
                  for a in sch.arrays if a.is_input}
        result = simulate(sch, inputs, limits=None)
        for a in sch.arrays:
            if a.is_output:
                buffers[a.name][:] = result.outputs[a.name].reshape(-1)

    def read(self, buffers: dict, name: str):
        return buffers[name]


def run_cases(case_list: list[dict], launcher, out_path: Path | None = None) -> list[dict]:
    """Launch every case's kernels in order and check C; one entry per case: ``id``,
    ``launches`` (per kernel: ``kernel_name``, ``launch_index`` counting every launch of
    the run from 0, ``cuda_function``), ``check`` (``ok``, ``max_error_over_tolerance``,
    ``nan_count``, ``unwritten_count`` of C) and ``c_partial_unwritten``, or ``error``.
    Everything is compiled before the first launch. ``out_path``: rewritten after each
    case (what ncu's child leaves for its parent)."""
    import numpy as np

    from tiletraffic.simulator.engine.reference import reference
    from tiletraffic.simulator.engine.data_inputs import random_inputs
    from tiletraffic.simulator.ir.sequence import buffers_of
    from tiletraffic.simulator.engine.tolerance import check_result
    from tiletraffic.simulator.engine.unwritten import UNWRITTEN_BITS, unwritten_fill

    from experiments.h200.validation.driver import build_case

    entries, built = [], {}
    for c in case_list:
        e = {"id": c["id"], "launcher": launcher.name}
        entries.append(e)
        try:
            seq = build_case(c)
            sources = cuda_sources(c)
            t0 = time.perf_counter()
            e["launches"] = [{"kernel_name": sch.kernel_name,
                              "cuda_function": launcher.compile(sch, src)}
                             for sch, src in zip(seq.kernels, sources)]
            e["compile_s"] = time.perf_counter() - t0
            built[c["id"]] = (seq, sources)
        except Exception as err:  # noqa: BLE001 - recorded, the other cases go on
            e["error"] = "compile/load: " + _error(err)
    launch = 0
    for c, e in zip(case_list, entries):
        if c["id"] not in built:
            continue
        seq, sources = built[c["id"]]
        try:
            rng = np.random.default_rng(zlib.crc32(c["id"].encode()))
            host = random_inputs(seq, rng)
            ref = reference(seq, host)
            p = seq.param_values
            arrays = {a.name: (np.ascontiguousarray(host[a.name]) if a.is_input
                               else unwritten_fill(tuple(p[s] for s in a.shape)))
                      for a in buffers_of(seq)}
            dev = launcher.buffers(arrays)
            for sch, src, rec in zip(seq.kernels, sources, e["launches"]):
                rec["launch_index"] = launch   # before the launch: ncu counts a failed one
                launch += 1
                launcher.launch(sch, src, dev)
            out = np.asarray(launcher.read(dev, ref.output)).reshape(ref.value.shape)
            check = check_result(out, ref.value, ref.k, ref.abs_product)
            e["check"] = {"ok": bool(check.ok),
                          "max_error_over_tolerance": float(check.error_over_tolerance),
                          "nan_count": int(check.nan_count),
                          "unwritten_count": int(check.unwritten_count), "k": int(ref.k)}
            partial = np.asarray(launcher.read(dev, "C_partial"), dtype=np.float32)
            e["c_partial_unwritten"] = int((partial.view(np.uint32) == UNWRITTEN_BITS).sum())
            del dev
        except Exception as err:  # noqa: BLE001
            e["error"] = "launch/check: " + _error(err)
        print("case", e["id"], e.get("check"), e.get("error", ""), flush=True)
        if out_path is not None:
            out_path.write_text(json.dumps(entries, indent=1))
    if out_path is not None:
        out_path.write_text(json.dumps(entries, indent=1))
    return entries


# ------------------------------------------------------------------------------ ncu
def join(case_list: list[dict], entries: list[dict], raw: list[dict]) -> list[dict]:
    """One record per case and kernel: ``id`` (the case's), ``kernel`` (index in the
    sequence), ``kernel_name``, the case's ``check`` and ``c_partial_unwritten``, and the
    ``metrics`` (and ncu's ``ncu`` info) of the profiled result of its launch (ncu's
    results sorted by ID are the launches in order), or ``error``: no launch, no result,
    or a result of another kernel name."""
    by_id = {e["id"]: e for e in entries}
    results = sorted(raw, key=lambda r: r["info"].get("ID", 0)
                     if isinstance(r["info"].get("ID"), int) else 0)
    records = []
    for c in case_list:
        e = by_id.get(c["id"], {"error": "not run by the child"})
        launches = e.get("launches") or [{} for _ in c["kernels"]]
        for kernel, launch in zip(c["kernels"], launches):
            rec = {"id": c["id"], "kernel": kernel["index"], "kernel_name": kernel["kernel_name"],
                   "family": kernel["family"], "grid": kernel["grid"], "block": kernel["block"]}
            for key in ("check", "c_partial_unwritten", "error"):
                if key in e:
                    rec[key] = e[key]
            for key in ("launch_index", "cuda_function"):
                if key in launch:
                    rec[key] = launch[key]
            i = launch.get("launch_index")
            if i is None:
                rec.setdefault("error", "not launched")
            elif i >= len(results):
                rec.setdefault("error", f"no ncu result for launch {i}")
            else:
                name = str(results[i]["info"].get("Kernel Name", ""))
                if kernel["kernel_name"] not in name:
                    rec["error"] = (f"ncu result {i} is kernel {name!r}, expected "
                                    f"{kernel['kernel_name']!r}")
                else:
                    rec["ncu"], rec["metrics"] = results[i]["info"], results[i]["metrics"]
            records.append(rec)
    return records


def _tool(name: str) -> str | None:
    from experiments.h200.dispatch.driver import find_tool
    return shutil.which(name) if os.environ.get("TT_TOOLS_ON_PATH_ONLY") else find_tool(name)


def ncu_stage(case_list: list[dict], folder: Path, timeout_s: float) -> dict:
    """One ncu run over this module's ``--ncu-child`` (SourceCounters and the metrics, then
    without the section if no report came); the raw page joined to the launches
    (:func:`join`), the source page's local-memory rows by profiled result."""
    from experiments.h200.ncu import parse_ncu_raw_csv

    from experiments.h200.ladder.local_codegen import local_source_rows
    from experiments.h200.local_counters.driver import METRICS
    from experiments.h200.validation.driver import run_cmd

    ncu = _tool("ncu")
    result: dict = {"ncu": ncu, "attempts": []}
    if not ncu:
        result["error"] = "ncu not found"
        return result
    work = Path(tempfile.mkdtemp(prefix="tt_split_k_ncu_"))
    (work / "cases.json").write_text(json.dumps(case_list))
    query = run_cmd([ncu, "--query-metrics", "--csv"], max(10.0, min(60.0, _left(60.0))))
    known = query["stdout"] if query["rc"] == 0 else ""
    metrics = [m for m in METRICS if m.startswith("launch__") or not known
               or re.search(rf"\b{re.escape(m.split('.')[0])}\b", known)]
    result["metrics_used"] = metrics
    result["metrics_unknown"] = sorted(set(METRICS) - set(metrics))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(REPO)) if p)
    env["PYTHONUNBUFFERED"] = "1"
    t_end = time.monotonic() + min(timeout_s, _left(40.0))
    rep = work / "split_k"
    child = work / CHILD_OUT
    for sections in (["--section", "SourceCounters"], []):
        left = t_end - time.monotonic()
        if left < 15:
            result["error"] = "no time left for ncu"
            break
        argv = [ncu, "--clock-control", "none", "--cache-control", "all",
                "--target-processes", "all", "--kernel-name", KERNEL_REGEX, *sections,
                "--metrics", ",".join(metrics), "--export", str(rep), "--force-overwrite",
                sys.executable, "-m", "experiments.h200.split_k.counters", "--ncu-child",
                str(work / "cases.json"), "--out", str(work)]
        done = run_cmd(argv, left, env=env, cwd=str(REPO))
        (folder / f"ncu-{len(result['attempts']) + 1}.log").write_text(
            "$ " + shlex.join(argv) + "\n--- stdout\n" + done["stdout"] + "\n--- stderr\n"
            + done["stderr"])
        result["attempts"].append({"argv": argv, "rc": done["rc"], "wall_s": done["wall_s"],
                                   "tail": (done["stdout"] + done["stderr"])[-2000:]})
        print(f"ncu attempt {len(result['attempts'])}: rc {done['rc']}, "
              f"{done['wall_s']:.1f} s", flush=True)
        if rep.with_suffix(".ncu-rep").exists():
            break
    entries = json.loads(child.read_text()) if child.exists() else []
    result["child"] = entries
    raw: list = []
    rep_file = rep.with_suffix(".ncu-rep")
    if rep_file.exists():
        shutil.copy(rep_file, folder / rep_file.name)
        got = run_cmd([ncu, "--import", str(rep_file), "--page", "raw", "--csv",
                       "--print-units", "base"], max(10.0, min(60.0, _left())))
        (folder / "ncu-raw.csv").write_text(got["stdout"])
        raw = parse_ncu_raw_csv(got["stdout"])
        src = run_cmd([ncu, "--import", str(rep_file), "--page", "source", "--csv",
                       "--print-source", "sass"], max(10.0, min(90.0, _left())))
        (folder / "ncu-source.csv").write_text(src["stdout"])
        try:
            by_result: dict = {}
            for r in local_source_rows(src["stdout"]):
                by_result.setdefault(r.pop("kernel"), []).append(r)
            result["source_rows_by_result"] = by_result
        except ValueError as err:
            result["source_error"] = f"{err}; rc {src['rc']}: {src['stderr'][-500:]}"
    result["records"] = join(case_list, entries, raw)
    for rec in result["records"]:
        m = {k.split("__")[1][:48]: v.get("value") for k, v in (rec.get("metrics") or {}).items()
             if "shared" in k or "global" in k}
        print("ncu", rec["id"], rec["kernel_name"], (rec.get("check") or {}).get("ok"),
              rec.get("error", ""), m, flush=True)
    shutil.rmtree(work, ignore_errors=True)
    return result


# ------------------------------------------------------------------------------ rehearsal
def offline_code(case_list: list[dict], folder: Path, nvrtc_path: str | None,
                 cuobjdump: str | None) -> dict:
    """Each kernel's CUDA source into ``folder`` (``<case>.<kernel>.cu``); with
    ``nvrtc_path``, compiled for sm_90 by that NVRTC, and with ``cuobjdump`` its
    local-memory instructions counted (no GPU)."""
    result: dict = {"kernels": []}
    nvrtc = None
    if nvrtc_path:
        from experiments.h200.local_counters.offline_sass import Nvrtc
        nvrtc = Nvrtc(nvrtc_path)
        result["nvrtc_version"] = nvrtc.version
    for c in case_list:
        for kernel, src in zip(c["kernels"], cuda_sources(c)):
            name = f"{c['id']}.{kernel['kernel_name']}"
            (folder / f"{name}.cu").write_text(src)
            rec = {"id": c["id"], "kernel_name": kernel["kernel_name"], "source_chars": len(src)}
            if nvrtc is not None:
                try:
                    cubin = folder / f"{name}.cubin"
                    cubin.write_bytes(nvrtc.compile(src, f"{name}.cu"))
                    rec["cubin_bytes"] = cubin.stat().st_size
                    if cuobjdump:
                        from experiments.h200.ladder.local_codegen import local_sass_counts
                        done = subprocess.run([cuobjdump, "-sass", str(cubin)],
                                              capture_output=True, text=True, timeout=120)
                        if done.returncode != 0:   # it runs nvdisasm: on PATH?
                            raise RuntimeError(f"cuobjdump: {done.stderr[-500:]}")
                        cubin.with_suffix(".sass").write_text(done.stdout)
                        rec["sass_counts"] = local_sass_counts(done.stdout)
                except Exception as err:  # noqa: BLE001
                    rec["error"] = _error(err)
            result["kernels"].append(rec)
            print("code", name, {k: v for k, v in rec.items() if k not in ("id", "kernel_name")},
                  flush=True)
    return result


# ------------------------------------------------------------------------------ main
def _commit() -> str | None:
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                              cwd=REPO, timeout=10)
        return (done.stdout.strip() or None) if done.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired):
        return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--deadline-s", type=float, default=210.0,
                    help="every stage done by then (seconds after the start)")
    ap.add_argument("--ncu-timeout-s", type=float, default=160.0, help="the ncu run")
    ap.add_argument("--dry-run-local", action="store_true",
                    help="no GPU: the simulator runs the kernels, no ncu")
    ap.add_argument("--nvrtc", help="--dry-run-local: libnvrtc.so to compile the sources")
    ap.add_argument("--cuobjdump", help="--dry-run-local: cuobjdump to read the cubins")
    ap.add_argument("--ncu-child", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    DEADLINE[0] = time.monotonic() + args.deadline_s
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    if args.ncu_child:
        run_cases(json.loads(args.ncu_child.read_text()), CudaLauncher(), out / CHILD_OUT)
        return 0

    work = Path(tempfile.mkdtemp(prefix="tt_split_k_counters_"))
    code = work / "code"
    code.mkdir()
    case_list = cases()
    from experiments.h200.local_counters.driver import METRICS
    data: dict = {"meta": {
        "created_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": shlex.join([sys.executable, "-m", "experiments.h200.split_k.counters",
                               *(argv if argv is not None else sys.argv[1:])]),
        "git_commit": _commit(), "dry_run_local": args.dry_run_local, "cases": case_list,
        "metrics": list(METRICS)}, "stage_wall_s": {}}
    path = out / "split_k_counters.json"

    def stage(name, fn, *a):
        t0 = time.perf_counter()
        try:
            data[name] = fn(*a)
        except Exception as err:  # noqa: BLE001 - a stage's failure never stops the run
            data[name] = {"error": _error(err), "traceback": traceback.format_exc()[-3000:]}
        data["stage_wall_s"][name] = time.perf_counter() - t0
        print(f"stage {name}: {data['stage_wall_s'][name]:.1f} s", flush=True)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(path)
        tmp = out / "code.tar.gz.tmp"
        with tarfile.open(tmp, "w:gz") as tar:
            tar.add(code, arcname="code")
        tmp.replace(out / "code.tar.gz")

    if args.dry_run_local:
        stage("code", offline_code, case_list, code, args.nvrtc, args.cuobjdump)
        stage("simulated", run_cases, case_list, SimulatorLauncher())
    else:
        stage("code", offline_code, case_list, code, None, None)
        stage("ncu", ncu_stage, case_list, code, args.ncu_timeout_s)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
