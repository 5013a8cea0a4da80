"""Validate every schedule on the NVIDIA H200 in one device call (issue #4, item 6).

What one run does, in this order, writing everything under ``--out`` (the device's $OUT):

1. device facts: ``nvidia-smi`` (name, driver, clocks, memory), ``ncu --version``, versions
   of numpy, pyopencl, CuPy, torch, the exact command line;
2. OpenCL through our own code (:func:`gpu.runtime.checked_run.run_on_device`: result checked
   against float64 numpy before its time counts) for the issue-4 cases: gemm-naive and
   gemm-tiled with B = 8, 16, 32 at N = 1024 and 4096; matvec-naive, matvec-local and
   matvec-local-whole at M = K = 4096 and 16384 (matvec-local-whole needs 64 KiB of local
   memory at K = 16384 and is refused; the refusal is recorded); gemm-naive and gemm-tiled
   with B = 16 at N = 3072, 3328, 3584, 3840, 5120 (around the size where B outgrows the
   L2: the DRAM model's threshold); then a probe of why
   B = 32 (1024 work-items) is refused on NVIDIA's OpenCL: the driver's kernel work-group
   limits, launch bounds in the PTX, registers (``-cl-nv-verbose``), and a launch at the
   full work-group size with our limit check bypassed, checked against numpy;
3. hardware counters of the same cases: the SAME OpenCL C source compiled as CUDA
   (:func:`experiments.h200.cuda.cuda_source`, CuPy ``RawModule``), launched once per case with the same
   grid and block by this script in ``--ncu-driver`` mode under ONE Nsight Compute run
   (``ncu --clock-control none --cache-control all --kernel-name regex:^(gemm|matvec)_
   --metrics ...``), each result checked against numpy; ncu's raw CSV becomes one JSON
   record per case (every metric with its unit);
4. cuBLAS FP32 reference through torch (TF32 off): ``a @ b`` at N = 1024 and 4096, CUDA
   events, 3 warm-ups, 20 timed;
5. the full report sweep: ``analysis.report.build.make_report(device="nvidia", out_root=OUT,
   quick=False, repeat=10)`` -> ``OUT/nvidia-h200/`` (report.md, results.json, PNGs). Its
   simulations (CPU only, deterministic) are computed beforehand in parallel processes and
   handed to make_report through ``analysis.report.build.simulate_point`` (same function, same
   arguments, same results; ``--serial-simulation`` turns this off).

Outputs (at most 8 files, the limit of what a device call brings back):
``OUT/h200_raw.json`` (everything of 1-4; rewritten after every stage, so a run stopped
early still leaves what it did), ``OUT/command.txt``, ``OUT/nvidia-h200/`` (5 files) and
``OUT/extras.tar.gz`` (ncu's CSV and logs, ``ncu --query-metrics``, ``nvidia-smi -q``,
the driver's JSON, this script's log). An error in one case is recorded and the run goes on.

Device call, from the repository root after the device preamble of ``experiments/README.md``
(it installs pyopencl and tiletraffic and registers NVIDIA's OpenCL driver)::

    PYTHONUNBUFFERED=1 timeout 580 python3 -m experiments.h200.validation.driver --out $OUT

Local rehearsal of the OpenCL part (PoCL, small sizes, no CUDA / ncu / torch)::

    python -m experiments.h200.validation.driver --out /tmp/h200-dry --dry-run-local

Data: ``reports/nvidia-h200/`` (issue-4 run) and ``reports/nvidia-h200/holdout/``
(``--holdout``), each with the ``command.txt`` that produced it.
"""
from __future__ import annotations

import argparse
import csv
import datetime as _dt
import json
import logging
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback
import zlib
from pathlib import Path

from experiments.h200.ncu import parse_ncu_raw_csv

REPO = Path(__file__).resolve().parents[3]
"""The repository root: the working directory of the Nsight Compute child process, which
runs this module (``python -m experiments.h200.validation.driver --ncu-driver``)."""

log = logging.getLogger("h200_validation")

# ------------------------------------------------------------------------------ the cases
GEMM_SIZES = (1024, 4096)
GEMM_TILES = (8, 16, 32)
MATVEC_SIZES = (4096, 16384)
MATVEC_FAMILIES = ("matvec-naive", "matvec-local", "matvec-local-whole")
MATVEC_TILE = 256
L2_SWEEP_SIZES = (3072, 3328, 3584, 3840, 5120)
"""gemm-naive and gemm-tiled, B = 16, around the size where B (N x N floats) outgrows the
50 MB L2 (N ~ 3620): tests the DRAM model's reuse-distance threshold (simulator/model/dram.py)."""
L2_SWEEP_TILE = 16
# held-out sizes, predicted before they were measured (experiments/h200/holdout/predictions.py
# writes reports/nvidia-h200/holdout/predictions.json; committed before the device run)
HOLDOUT_GEMM_SIZES = (2048, 6144)
HOLDOUT_MATVEC_SIZES = (8192,)
LOCAL_GEMM_SIZES = (64, 130)  # dry run: one multiple of every tile, one not
LOCAL_MATVEC_SIZES = (512, 1000)

KERNEL_REGEX = "regex:^(gemm|matvec)_"
"""ncu --kernel-name filter: the generated kernels' names are gemm_* and matvec_*."""

METRICS_CORE = (  # seen answering on the H200 before the first run
    "smsp__inst_executed_op_global_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sector_hit_rate.pct",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "lts__t_sector_hit_rate.pct",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "smsp__inst_executed_op_shared_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "gpu__time_duration.sum",
)
METRICS_STORE = (
    "smsp__inst_executed_op_global_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "smsp__inst_executed_op_shared_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
)
METRICS_CACHE_MODEL = (
    "lts__t_sectors_op_read.sum",
    "lts__t_sectors_op_write.sum",
    "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum",
    "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "dram__sectors_read.sum",
    "smsp__inst_executed.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "sm__cycles_elapsed.avg.per_second",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_warps",
    "launch__occupancy_limit_blocks",
    "launch__waves_per_multiprocessor",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
)
METRICS = METRICS_CORE + METRICS_STORE + METRICS_CACHE_MODEL


def case_list(local: bool, holdout: bool = False) -> list[dict]:
    """The issue-4 cases (or, with ``holdout``, the held-out sizes: every GEMM schedule and
    tile at HOLDOUT_GEMM_SIZES, every matrix-vector schedule at HOLDOUT_MATVEC_SIZES) as
    plain dicts (family, m, k, n, tile, id)."""
    if holdout:
        local = False
    gemm_sizes, matvec_sizes = ((LOCAL_GEMM_SIZES, LOCAL_MATVEC_SIZES) if local
                                else (HOLDOUT_GEMM_SIZES, HOLDOUT_MATVEC_SIZES) if holdout
                                else (GEMM_SIZES, MATVEC_SIZES))
    cases = []
    for n in gemm_sizes:
        for family in ("gemm-naive", "gemm-tiled"):
            for b in GEMM_TILES:
                cases.append({"family": family, "m": n, "k": n, "n": n, "tile": b})
    for s in matvec_sizes:
        for family in MATVEC_FAMILIES:
            cases.append({"family": family, "m": s, "k": s, "n": None, "tile": MATVEC_TILE})
    for n in (() if local or holdout else L2_SWEEP_SIZES):
        for family in ("gemm-naive", "gemm-tiled"):
            cases.append({"family": family, "m": n, "k": n, "n": n, "tile": L2_SWEEP_TILE})
    for c in cases:
        c["id"] = case_id(c)
    return cases


def case_id(c: dict) -> str:
    n = "" if c["n"] is None else f"-N{c['n']}"
    options = "".join(f"-{k}{v}" for k, v in sorted((c.get("options") or {}).items()))
    return f"{c['family']}-M{c['m']}-K{c['k']}{n}-T{c['tile']}{options}"


def build_case(c: dict):
    """The schedule of a case dict; ``options`` (if any) are the family's options, e.g.
    ``tm``, ``tn``, ``bk``, ``wg_rows`` of the register-blocked GEMMs."""
    from tiletraffic.simulator.kernels.families import build
    return build(c["family"], c["m"], c["k"], c["n"], c["tile"], **(c.get("options") or {}))


def geometry(c: dict) -> dict:
    """NDRange / CUDA grid and block of a case, plus its closed-form counts."""
    from tiletraffic.simulator.kernels import closed_forms as closed_form
    from tiletraffic.gpu.codegen.generate import generate
    from experiments.h200.cuda import launch_geometry
    sch = build_case(c)
    kernel = generate(sch)
    grid, block = launch_geometry(kernel)
    return {"kernel_name": kernel.name, "ndrange": list(sch.global_size),
            "work_group": list(sch.local_size), "grid": list(grid), "block": list(block),
            "local_mem_bytes": sch.local_mem_bytes, "closed_form": closed_form.counts(sch)}


# ------------------------------------------------------------------------------ helpers
class Recorder:
    """The raw JSON, rewritten atomically after every stage."""

    def __init__(self, path: Path, data: dict):
        self.path, self.data = path, data

    def save(self) -> None:
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.data, indent=1, default=str))
        os.replace(tmp, self.path)


def run_cmd(argv: list[str], timeout: float, **kw) -> dict:
    """Run a command; never raises: returns rc, stdout, stderr, wall_s (rc None if absent)."""
    t0 = time.perf_counter()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)
        return {"argv": argv, "rc": done.returncode, "stdout": done.stdout,
                "stderr": done.stderr, "wall_s": time.perf_counter() - t0}
    except FileNotFoundError as err:
        return {"argv": argv, "rc": None, "stdout": "", "stderr": str(err),
                "wall_s": time.perf_counter() - t0}
    except subprocess.TimeoutExpired as err:
        def text(b):
            return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")
        return {"argv": argv, "rc": "timeout", "stdout": text(err.stdout),
                "stderr": text(err.stderr), "wall_s": time.perf_counter() - t0}


def archive_extras(out: Path, extras: Path) -> None:
    """Store the folder ``extras`` (logs, build files, Nsight reports) as
    ``out/extras.tar.gz``, under the name ``extras``."""
    with tarfile.open(out / "extras.tar.gz", "w:gz") as tar:
        tar.add(extras, arcname="extras")


def error_text(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}"


def versions() -> dict:
    from importlib import metadata
    out = {"python": platform.python_version(), "platform": platform.platform()}
    for pkg in ("numpy", "pyopencl", "cupy-cuda13x", "cupy-cuda12x", "torch", "jinja2",
                "matplotlib", "pocl-binary-distribution"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


# ------------------------------------------------------------------------------ stage 1
SMI_FIELDS = ("name", "driver_version", "pci.bus_id", "memory.total", "clocks.sm",
              "clocks.mem", "clocks.max.sm", "clocks.max.mem", "clocks.applications.graphics",
              "clocks.applications.memory", "power.limit", "temperature.gpu",
              "persistence_mode", "compute_mode", "mig.mode.current")


def device_facts(extras: Path) -> dict:
    facts: dict = {"versions": versions()}
    q = run_cmd(["nvidia-smi", "--query-gpu=" + ",".join(SMI_FIELDS),
                 "--format=csv,noheader"], 30)
    if q["rc"] == 0 and q["stdout"].strip():
        values = next(csv.reader([q["stdout"].strip().splitlines()[0]]))
        facts["nvidia_smi"] = dict(zip(SMI_FIELDS, (v.strip() for v in values)))
    else:
        facts["nvidia_smi_error"] = (q["stderr"] or q["stdout"])[-2000:]
    full = run_cmd(["nvidia-smi", "-q"], 30)
    if full["rc"] == 0:
        (extras / "nvidia-smi-q.txt").write_text(full["stdout"])
        summary = {}
        for key in ("Product Name", "Driver Version", "CUDA Version", "Product Architecture",
                    "VBIOS Version", "Performance State"):
            m = re.search(rf"^\s*{re.escape(key)}\s*:\s*(.+)$", full["stdout"], re.M)
            if m:
                summary[key] = m.group(1).strip()
        for section in ("Clocks", "Applications Clocks", "Max Clocks", "FB Memory Usage"):
            m = re.search(rf"^(\s*){re.escape(section)}\s*\n((?:\1\s+.+\n)+)", full["stdout"],
                          re.M)
            if m:
                summary[section] = {k.strip(): v.strip() for k, v in
                                    (line.split(":", 1) for line in m.group(2).splitlines()
                                     if ":" in line)}
        facts["nvidia_smi_q_summary"] = summary
    ncu = shutil.which("ncu")
    facts["ncu_path"] = ncu
    if ncu:
        v = run_cmd([ncu, "--version"], 60)
        facts["ncu_version"] = (v["stdout"] or v["stderr"]).strip()
    nvcc = run_cmd(["nvcc", "--version"], 30)
    if nvcc["rc"] == 0:
        facts["nvcc_version"] = nvcc["stdout"].strip().splitlines()[-1]
    facts["cpu_count"] = os.cpu_count()
    facts["hostname"] = platform.node()
    facts["ocl_icd_vendors"] = os.environ.get("OCL_ICD_VENDORS")
    icd_dir = Path("/etc/OpenCL/vendors")
    if icd_dir.is_dir():
        facts["etc_opencl_vendors"] = {p.name: p.read_text().strip()
                                       for p in sorted(icd_dir.glob("*.icd"))}
    try:
        from tiletraffic.gpu.devices.device import list_devices
        facts["opencl_devices"] = [d.describe() for d in list_devices()]
    except Exception as err:  # noqa: BLE001 - recorded, run goes on
        facts["opencl_devices_error"] = error_text(err)
    return facts


# ------------------------------------------------------------------------------ stage 2
def opencl_cases(device: str, cases: list[dict], repeat: int) -> list[dict]:
    """run_on_device for each case; every error recorded, none raised."""
    import numpy as np

    from tiletraffic.gpu.runtime.checked_run import run_on_device
    from tiletraffic.gpu.codegen.generate import generate
    from tiletraffic.gpu.devices.device import select_device
    from tiletraffic.gpu.runtime.launch import build_program

    target = select_device(device)
    log.info("OpenCL device: %s", target.info.describe())
    rng = np.random.default_rng(20240604)
    out = []
    for c in cases:
        rec = {"id": c["id"], "schedule": c["family"], "m": c["m"], "k": c["k"], "n": c["n"],
               "tile": c["tile"], "device": target.info.device_name}
        t0 = time.perf_counter()
        try:
            rec.update(geometry(c))
            sch = build_case(c)
            try:
                built = build_program(target, generate(sch).source)
                rec["build"] = {"time_s": built.build_time_s, "log": built.log,
                                "how": built.how}
            except Exception as err:  # noqa: BLE001 - run_on_device reports it again
                rec["build_error"] = error_text(err)
            run = run_on_device(target, sch, repeat=repeat, rng=rng).to_dict()
            rec["run"] = run
            log.info("  %-40s median %9.3f ms  (min %.3f, max %.3f)  check %s", c["id"],
                     run["median_s"] * 1e3, run["min_s"] * 1e3, run["max_s"] * 1e3,
                     "ok" if run["check"]["ok"] else "BAD")
        except Exception as err:  # noqa: BLE001 - one case's error never stops the run
            rec["error"] = error_text(err)
            log.info("  %-40s refused/failed: %s", c["id"], rec["error"][:300])
        rec["wall_s"] = time.perf_counter() - t0
        out.append(rec)
    return out



def opencl_work_group_probe(device: str, tiles=(16, 32), n: int = 256) -> list[dict]:
    """Why a B×B work-group is refused: build variants of the generated GEMM kernels and ask
    the driver for the kernel's limits, its PTX launch bounds, its registers (NVIDIA's
    ``-cl-nv-verbose``), and whether a launch at the full work-group size works when our
    own limit check (gpu.runtime.launch.check_launch_limits) is bypassed. Results are checked
    against numpy; nothing here is timed."""
    import numpy as np
    import pyopencl as cl

    from tiletraffic.gpu.codegen.generate import generate
    from tiletraffic.gpu.devices.device import select_device
    from tiletraffic.gpu.runtime.launch import check_result, reference_product

    target = select_device(device)
    ctx, queue, dev = target.context, target.queue, target.device
    kinfo = cl.kernel_work_group_info
    out = []
    rng = np.random.default_rng(7)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    ref, absprod = reference_product(a, b)
    for family in ("gemm-naive", "gemm-tiled"):
        for tile in tiles:
            kernel = generate(build_case({"family": family, "m": n, "k": n, "n": n,
                                          "tile": tile}))
            no_reqd = re.sub(r"__attribute__\(\(reqd_work_group_size\([^)]*\)\)\)\s*", "",
                             kernel.source)
            variants = [("as generated", kernel.source, []),
                        ("-cl-nv-verbose", kernel.source, ["-cl-nv-verbose"]),
                        ("-cl-nv-maxrregcount=32", kernel.source, ["-cl-nv-maxrregcount=32"]),
                        ("reqd_work_group_size removed", no_reqd, [])]
            is_nvidia = "nvidia" in target.info.platform_name.lower()
            for label, src, opts in variants:
                if not is_nvidia and label.startswith("-cl-nv"):
                    continue
                rec = {"schedule": family, "tile": tile, "n": n, "variant": label,
                       "options": opts}
                try:
                    prg = cl.Program(ctx, src).build(options=opts)
                    rec["build_log"] = prg.get_build_info(dev, cl.program_build_info.LOG)[-3000:]
                    k = cl.Kernel(prg, kernel.name)
                    for key in ("WORK_GROUP_SIZE", "COMPILE_WORK_GROUP_SIZE",
                                "PREFERRED_WORK_GROUP_SIZE_MULTIPLE", "LOCAL_MEM_SIZE",
                                "PRIVATE_MEM_SIZE"):
                        try:
                            v = k.get_work_group_info(getattr(kinfo, key), dev)
                            rec[key] = list(v) if isinstance(v, (list, tuple)) else int(v)
                        except Exception as err:  # noqa: BLE001
                            rec[key] = error_text(err)
                    try:
                        binary = prg.get_info(cl.program_info.BINARIES)[0]
                        text = binary.decode(errors="replace")
                        rec["ptx_directives"] = [line.strip() for line in text.splitlines()
                                                 if re.search(r"\.(reqntid|maxntid|minnctapersm|"
                                                              r"maxnreg|target|version)\b", line)][:12]
                    except Exception as err:  # noqa: BLE001
                        rec["binary_error"] = error_text(err)
                    mf = cl.mem_flags
                    da = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
                    db = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=b)
                    c = np.full((n, n), np.nan, dtype=np.float32)
                    dc = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=c)
                    k.set_args(da, db, dc, np.int32(n), np.int32(n), np.int32(n))
                    try:
                        cl.enqueue_nd_range_kernel(queue, k, kernel.global_size,
                                                   kernel.local_size).wait()
                        cl.enqueue_copy(queue, c, dc).wait()
                        chk = check_result(c, ref, n, absprod)
                        rec["launch_at_full_size"] = {"ok": chk.ok,
                                                      "max_abs_error": chk.max_abs_error,
                                                      "nan_count": chk.nan_count}
                    except cl.Error as err:
                        rec["launch_at_full_size"] = {"error": error_text(err)}
                    for buf in (da, db, dc):
                        buf.release()
                except Exception as err:  # noqa: BLE001
                    rec["error"] = error_text(err)
                log.info("  probe %s B=%d %-30s WORK_GROUP_SIZE %s launch %s", family, tile,
                         label, rec.get("WORK_GROUP_SIZE"),
                         rec.get("launch_at_full_size", rec.get("error")))
                out.append(rec)
    return out


# ------------------------------------------------------------------------------ stage 3
def ncu_driver(cases_path: Path, out_path: Path) -> int:
    """Run under ncu: compile every case as CUDA (or load its ``ptx_path``, PTX from another
    compiler, when the case has one), launch each once, check against numpy.

    Writes ``out_path`` (JSON): one entry per case in launch order (``launch_index``) or
    with ``error``; ncu's profiled kernels appear in the same order.
    """
    import cupy as cp
    import numpy as np

    from tiletraffic.gpu.codegen.generate import generate
    from experiments.h200.cuda import cuda_source, launch_geometry
    from tiletraffic.simulator.engine.reference import error_over_tolerance
    from tiletraffic.simulator.engine.reference import reference
    from tiletraffic.simulator.engine.data_inputs import random_inputs

    cases = json.loads(cases_path.read_text())
    entries = []
    functions = {}
    modules = {}
    # compile everything first, so that compilation never sits between profiled launches
    for c in cases:
        e = {"id": c["id"]}
        entries.append(e)
        try:
            sch = build_case(c)
            kernel = generate(sch)
            t0 = time.perf_counter()
            if c.get("ptx_path"):  # other machine code for the same source (codegen/driver.py)
                if c["ptx_path"] not in modules:
                    modules[c["ptx_path"]] = cp.RawModule(path=c["ptx_path"])
                fn = modules[c["ptx_path"]].get_function(kernel.name)
                e["compile_s"] = time.perf_counter() - t0
                e["ptx_path"] = c["ptx_path"]
                functions[c["id"]] = (sch, kernel, fn)
                continue
            src = cuda_source(kernel)
            if src not in modules:
                modules[src] = cp.RawModule(code=src)
            try:
                fn = modules[src].get_function(kernel.name)  # compiles (NVRTC), loads here
            except Exception as err:  # noqa: BLE001
                if src.isascii():
                    raise
                # fallback, recorded: the comment's non-ASCII characters (e.g. "×") as "?"
                e["first_compile_error"] = error_text(err)
                src = src.encode("ascii", "replace").decode()
                modules[src] = cp.RawModule(code=src)
                fn = modules[src].get_function(kernel.name)
                e["compiled_ascii_fallback"] = True
            e["compile_s"] = time.perf_counter() - t0
            attrs = {}
            for name in ("num_regs", "shared_size_bytes", "local_size_bytes",
                         "const_size_bytes", "max_threads_per_block", "ptx_version",
                         "binary_version"):
                try:
                    attrs[name] = int(getattr(fn, name))
                except Exception:  # noqa: BLE001 - attribute missing in this CuPy
                    pass
            e["cuda_function"] = attrs
            functions[c["id"]] = (sch, kernel, fn)
        except Exception as err:  # noqa: BLE001
            e["error"] = "compile/load: " + error_text(err)
    data: dict = {}  # (kind, m, k, n) -> (host inputs, device inputs, reference)
    launch = 0
    for c, e in zip(cases, entries):
        if c["id"] not in functions:
            continue
        sch, kernel, fn = functions[c["id"]]
        key = ("gemm" if c["n"] is not None else "matvec", c["m"], c["k"], c["n"])
        try:
            if key not in data:
                for old in list(data):  # free the previous size first
                    del data[old]
                cp.get_default_memory_pool().free_all_blocks()
                rng = np.random.default_rng(zlib.crc32(repr(key).encode()))
                host = random_inputs(sch, rng)
                dev = {name: cp.asarray(np.ascontiguousarray(a).reshape(-1))
                       for name, a in host.items()}
                data[key] = (host, dev, None)
            host, dev, ref = data[key]
            out_arr = next(a for a in sch.arrays if a.role == "out")
            size = 1
            for s in out_arr.shape:
                size *= sch.param_values[s]
            out = cp.asarray(np.full(size, np.nan, dtype=np.float32))  # memcpy, no kernel
            args = []
            for a in kernel.args:
                if a.kind == "int":
                    args.append(np.int32(sch.param_values[a.name]))
                elif a.kind == "global_out":
                    args.append(out)
                else:
                    args.append(dev[a.name])
            grid, block = launch_geometry(kernel)
            e.update(grid=list(grid), block=list(block), launch_index=launch)
            fn(grid, block, tuple(args))
            launch += 1
            cp.cuda.runtime.deviceSynchronize()
            result = cp.asnumpy(out)
            if ref is None:
                ref = reference(sch, host)
                data[key] = (host, dev, ref)
            ratio = error_over_tolerance(result.reshape(ref.value.shape), ref)
            e["check"] = {"ok": bool(ratio <= 1.0), "max_error_over_tolerance": ratio,
                          "nan_count": int(np.isnan(result).sum())}
            del out
        except Exception as err:  # noqa: BLE001
            e["error"] = "launch/check: " + error_text(err)
        out_path.write_text(json.dumps(entries, indent=1))
    out_path.write_text(json.dumps(entries, indent=1))
    return 0


_UNKNOWN_METRIC = re.compile(r"(?:Failed to find metric|[Uu]nknown metric|[Ii]nvalid metric)"
                             r"\s*(?:regex:)?\^?([A-Za-z0-9_]+)")
"""ncu's refusal, e.g. ``==ERROR== Failed to find metric regex:^foo__bar\\.(sum|avg|...)$``:
group 1 is the base name (the part before the first dot)."""


NCU_DRIVER_MODULE = "experiments.h200.validation.driver"
"""The module Nsight Compute runs (``--ncu-driver``), also for the other drivers' counters."""


def counters_stage(cases: list[dict], extras: Path, timeout_s: float,
                   extra_metrics: tuple[str, ...] = ()) -> dict:
    """Stage 3: one ncu run over the driver (METRICS, then ``extra_metrics``); retried
    without metrics ncu does not know."""
    ncu = shutil.which("ncu")
    wanted = tuple(METRICS) + tuple(m for m in extra_metrics if m not in METRICS)
    result: dict = {"metrics_requested": list(wanted), "kernel_filter": KERNEL_REGEX,
                    "metrics_unknown": [], "attempts": []}
    if not ncu:
        result["error"] = "ncu not on PATH"
        return result
    t_end = time.monotonic() + timeout_s
    work = Path(tempfile.mkdtemp(prefix="tt_ncu_"))
    cases_path = work / "cases.json"
    cases_path.write_text(json.dumps(cases))
    # names ncu knows on this GPU: drop a metric whose base name is missing (launch__ metrics
    # are launch attributes, not listed there, and are kept)
    query = run_cmd([ncu, "--query-metrics", "--csv"], 90)
    (extras / "ncu-query-metrics.txt").write_text(query["stdout"] + query["stderr"])
    known = query["stdout"] if query["rc"] == 0 else ""
    metrics = list(wanted)
    if "gpu__time_duration" in known:  # the listing looks sane; core metrics are never dropped
        for m in list(metrics):
            base = m.split(".")[0]
            if (m not in METRICS_CORE and not m.startswith("launch__")
                    and not re.search(rf"\b{re.escape(base)}\b", known)):
                metrics.remove(m)
                result["metrics_unknown"].append({"metric": m, "why": "not in --query-metrics"})
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(REPO)) if p)
    env["PYTHONUNBUFFERED"] = "1"
    for attempt in range(4):
        left = t_end - time.monotonic()
        if left < 20:
            result.setdefault("error", "no time left for ncu")
            break
        driver_out = work / "driver.json"
        rep = work / "counters"
        argv = [ncu, "--clock-control", "none", "--cache-control", "all",
                "--target-processes", "all", "--kernel-name", KERNEL_REGEX,
                "--metrics", ",".join(metrics), "--export", str(rep), "--force-overwrite",
                sys.executable, "-m", NCU_DRIVER_MODULE, "--ncu-driver", str(cases_path),
                "--driver-out", str(driver_out)]
        log.info("ncu attempt %d: %d metrics, %.0f s left", attempt + 1, len(metrics), left)
        done = run_cmd(argv, left, env=env, cwd=str(REPO))
        (extras / f"ncu-run-{attempt + 1}.log").write_text(
            "$ " + shlex.join(argv) + "\n--- stdout\n" + done["stdout"] + "\n--- stderr\n"
            + done["stderr"])
        result["attempts"].append({"argv": argv, "rc": done["rc"], "wall_s": done["wall_s"],
                                   "tail": (done["stdout"] + done["stderr"])[-3000:]})
        bases = set(_UNKNOWN_METRIC.findall(done["stdout"] + done["stderr"]))
        unknown = [m for m in metrics if m.split(".")[0] in bases]
        if unknown and done["rc"] != 0:
            for m in unknown:
                metrics.remove(m)
                result["metrics_unknown"].append({"metric": m, "why": "ncu refused it"})
            continue
        if driver_out.exists():
            result["driver"] = json.loads(driver_out.read_text())
            shutil.copy(driver_out, extras / "ncu-driver.json")
        rep_file = rep.with_suffix(".ncu-rep")
        if rep_file.exists():
            imp = run_cmd([ncu, "--import", str(rep_file), "--page", "raw", "--csv",
                           "--print-units", "base"], 120)
            if imp["rc"] != 0:  # an older ncu without --print-units
                imp = run_cmd([ncu, "--import", str(rep_file), "--page", "raw", "--csv"], 120)
            (extras / "ncu-raw.csv").write_text(imp["stdout"])
            if imp["stderr"].strip():
                (extras / "ncu-import.stderr.txt").write_text(imp["stderr"])
            result["records_raw"] = parse_ncu_raw_csv(imp["stdout"])
        if done["rc"] != 0:
            result["error"] = f"ncu exited with {done['rc']}"
        break
    result["metrics_used"] = metrics
    result["records"] = join_counters(cases, result.get("driver", []),
                                      result.pop("records_raw", []))
    shutil.rmtree(work, ignore_errors=True)
    return result


def join_counters(cases: list[dict], driver: list[dict], raw: list[dict]) -> list[dict]:
    """One record per case: geometry, the driver's check, the metrics of its launch."""
    by_launch = {}
    for e in driver:
        if "launch_index" in e:
            by_launch[e["launch_index"]] = e
    raw_sorted = sorted(raw, key=lambda r: r["info"].get("ID", 0)
                        if isinstance(r["info"].get("ID"), int) else 0)
    drv = {e["id"]: e for e in driver}
    records = []
    for c in cases:
        rec = {"id": c["id"], "schedule": c["family"], "m": c["m"], "k": c["k"], "n": c["n"],
               "tile": c["tile"]}
        try:
            g = geometry(c)
            rec.update(kernel_name=g["kernel_name"], grid=g["grid"], block=g["block"],
                       local_mem_bytes=g["local_mem_bytes"])
        except Exception as err:  # noqa: BLE001
            rec["error"] = error_text(err)
        e = drv.get(c["id"])
        if e is None:
            rec.setdefault("error", "not run by the driver")
        else:
            for key in ("compile_s", "cuda_function", "check", "error", "launch_index"):
                if key in e:
                    rec[key] = e[key]
            i = e.get("launch_index")
            if i is not None and i < len(raw_sorted):
                r = raw_sorted[i]
                name = str(r["info"].get("Kernel Name", ""))
                if rec.get("kernel_name") and rec["kernel_name"] not in name:
                    rec["error"] = (f"ncu record {i} is kernel {name!r}, expected "
                                    f"{rec['kernel_name']!r}")
                else:
                    rec["ncu"] = r["info"]
                    rec["metrics"] = r["metrics"]
            elif i is not None:
                rec.setdefault("error", f"no ncu record for launch {i}")
        records.append(rec)
    return records


# ------------------------------------------------------------------------------ stage 4
def cublas_stage(sizes=GEMM_SIZES, warmup: int = 3, timed: int = 20) -> dict:
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    out = {"torch": torch.__version__, "cuda": torch.version.cuda,
           "device": torch.cuda.get_device_name(0),
           "allow_tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
           "allow_tf32_cudnn": torch.backends.cudnn.allow_tf32,
           "float32_matmul_precision": torch.get_float32_matmul_precision(),
           "warmup": warmup, "timed": timed, "sizes": []}
    for n in sizes:
        g = torch.Generator(device="cuda").manual_seed(n)
        a = torch.randn(n, n, device="cuda", dtype=torch.float32, generator=g)
        b = torch.randn(n, n, device="cuda", dtype=torch.float32, generator=g)
        for _ in range(warmup):
            c = a @ b
        torch.cuda.synchronize()
        times = []
        for _ in range(timed):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            c = a @ b
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e-3)
        # one check against float64 on the GPU (a few rows; exact inputs)
        rows = slice(0, 64)
        ref = a[rows].double() @ b.double()
        rel = float(((c[rows].double() - ref).abs().max() / ref.abs().max()).item())
        med = statistics.median(times)
        flop = 2.0 * n ** 3
        out["sizes"].append({"n": n, "median_s": med, "min_s": min(times), "max_s": max(times),
                             "times_s": times, "gflop_per_s_median": flop / med / 1e9,
                             "gflop_per_s_best": flop / min(times) / 1e9,
                             "max_rel_error_vs_float64_first_64_rows": rel})
        log.info("  cuBLAS FP32 N=%d: median %.3f ms = %.1f TFLOP/s (rel. error %.1e)", n,
                 med * 1e3, flop / med / 1e12, rel)
        del a, b, c
    return out


# ------------------------------------------------------------------------------ stage 5
def _simulate_task(point, limits):
    from tiletraffic.analysis.report.build import simulate_point
    from tiletraffic.simulator.engine.limits import LimitError
    try:
        return point, ("ok", simulate_point(point, limits))
    except LimitError as err:
        return point, ("limit", str(err))


def presimulate(device: str, quick: bool, workers: int) -> tuple[dict, object, float]:
    """simulate_point for every sweep point, in parallel processes (spawned: no GPU state)."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    from tiletraffic.analysis.report.build import default_sweep
    from tiletraffic.gpu.devices.device import select_device
    from tiletraffic.simulator.engine.limits import DeviceLimits

    info = select_device(device).info
    limits = DeviceLimits(info.device_name, info.max_work_group_size,
                          tuple(info.max_work_item_sizes), info.local_mem_bytes)
    points = sorted(default_sweep(quick), key=lambda p: -(p.m * p.k * (p.n or 1)))
    t0 = time.perf_counter()
    done = {}
    with ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn")) as pool:
        for point, value in pool.map(_simulate_task, points, [limits] * len(points)):
            done[point] = value
    return done, limits, time.perf_counter() - t0


def report_stage(device: str, out: Path, quick: bool, repeat: int, parallel: bool) -> dict:
    import warnings

    import tiletraffic.analysis.report.build as report
    from tiletraffic.simulator.engine.limits import LimitError

    rec: dict = {"device": device, "quick": quick, "repeat": repeat}
    original = report.simulate_point
    if parallel:
        workers = max(1, min(16, (os.cpu_count() or 2)))
        pre, limits, wall = presimulate(device, quick, workers)
        rec["presimulation"] = {"points": len(pre), "workers": workers, "wall_s": wall}
        log.info("  simulated %d sweep points in %.1f s on %d processes", len(pre), wall,
                 workers)

        def simulate_point(point, lim):
            hit = pre.get(point) if lim == limits else None
            if hit is None:
                return original(point, lim)
            kind, value = hit
            if kind == "limit":
                raise LimitError(value)
            return value

        report.simulate_point = simulate_point
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out_dir = report.make_report(device=device, out_root=out, quick=quick,
                                         repeat=repeat, progress=False)
        rec["dir"] = str(out_dir)
        rec["warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught]
        data = json.loads((out_dir / "results.json").read_text())
        rows = data["results"]
        rec["cases"] = len(rows)
        rec["device_errors"] = [f"{e['family']} {e['m']}x{e['k']}x{e['n']} B={e['tile']}: "
                                f"{e.get('device_error') or e.get('skipped')}"
                                for e in rows if "device_error" in e or "skipped" in e]
        rec["closed_form_agrees"] = sum(1 for e in rows if e.get("closed_form_agrees"))
    except Exception as err:  # noqa: BLE001
        rec["error"] = error_text(err)
        rec["traceback"] = traceback.format_exc()[-4000:]
    finally:
        report.simulate_point = original
    rec["make_report_wall_s"] = time.perf_counter() - t0
    return rec


# ------------------------------------------------------------------------------ main
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="output directory (the device's $OUT)")
    ap.add_argument("--device", default="nvidia",
                    help="OpenCL device for stages 2 and 5 (default: nvidia)")
    ap.add_argument("--dry-run-local", action="store_true",
                    help="rehearsal without a GPU: PoCL (unless --device says otherwise), "
                         "small sizes, quick report; skips CUDA, ncu and torch")
    ap.add_argument("--small", action="store_true",
                    help="the small case sizes of the dry run, with every stage still on")
    ap.add_argument("--repeat", type=int, default=10, help="timed launches per case (>= 10)")
    ap.add_argument("--budget-s", type=float, default=540.0,
                    help="wall-clock budget of the whole run; stages are cut to fit")
    ap.add_argument("--ncu-timeout-s", type=float, default=300.0)
    ap.add_argument("--skip", action="append", default=[],
                    choices=["opencl", "counters", "cublas", "report"])
    ap.add_argument("--holdout", action="store_true",
                    help="the held-out sizes (HOLDOUT_*) instead of the issue-4 cases")
    ap.add_argument("--serial-simulation", action="store_true",
                    help="let make_report simulate serially (no parallel pre-simulation)")
    ap.add_argument("--ncu-driver", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--driver-out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.ncu_driver:
        return ncu_driver(args.ncu_driver, args.driver_out)
    if args.out is None:
        ap.error("--out is required")

    t_start = time.monotonic()
    deadline = t_start + args.budget_s
    local = args.dry_run_local
    device = "pocl" if local and args.device == "nvidia" else args.device
    skip = set(args.skip) | ({"counters", "cublas"} if local else set())
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    extras = Path(tempfile.mkdtemp(prefix="tt_extras_"))
    handler = logging.FileHandler(extras / "log.txt")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s",
                        datefmt="%H:%M:%S", handlers=[logging.StreamHandler(sys.stderr),
                                                      handler])
    command = shlex.join([sys.executable] + sys.argv)
    (out / "command.txt").write_text(
        f"# script command line (cwd {os.getcwd()})\n{command}\n")
    cases = case_list(local or args.small, holdout=args.holdout)
    raw = Recorder(out / "h200_raw.json", {
        "meta": {"created_utc": _dt.datetime.now(_dt.timezone.utc).strftime(
                     "%Y-%m-%dT%H:%M:%SZ"),
                 "command": command, "cwd": os.getcwd(), "dry_run_local": local,
                 "opencl_device": device, "repeat": args.repeat,
                 "case_set": "holdout" if args.holdout else "issue4",
                 "cases": [c["id"] for c in cases]},
        "stage_wall_s": {},
    })

    def stage(name: str, fn, *a, **kw):
        t0 = time.perf_counter()
        log.info("== %s (%.0f s left)", name, deadline - time.monotonic())
        try:
            raw.data[name] = fn(*a, **kw)
        except Exception as err:  # noqa: BLE001 - a stage's failure never stops the run
            raw.data[name] = {"error": error_text(err),
                              "traceback": traceback.format_exc()[-4000:]}
            log.info("   %s failed: %s", name, error_text(err))
        raw.data["stage_wall_s"][name] = time.perf_counter() - t0
        log.info("   %s took %.1f s", name, raw.data["stage_wall_s"][name])
        raw.save()

    stage("device_facts", device_facts, extras)
    if "opencl" not in skip:
        stage("opencl_cases", opencl_cases, device, cases, args.repeat)
        stage("opencl_work_group_probe", opencl_work_group_probe, device)
    if "counters" not in skip:
        left = deadline - time.monotonic() - 120  # keep time for cuBLAS and the report
        stage("counters", counters_stage, cases, extras, min(args.ncu_timeout_s, left))
    if "cublas" not in skip:
        stage("cublas", cublas_stage)
    if "report" not in skip:
        if deadline - time.monotonic() < 60:
            raw.data["report"] = {"error": "skipped: budget exhausted"}
        else:
            stage("report", report_stage, device, out, local, args.repeat,
                  not args.serial_simulation)
    raw.data["stage_wall_s"]["total"] = time.monotonic() - t_start
    raw.save()
    log.info("total %.1f s", raw.data["stage_wall_s"]["total"])
    handler.flush()
    archive_extras(out, extras)
    shutil.rmtree(extras, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
