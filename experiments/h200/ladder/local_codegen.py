"""The local-memory instructions of the GEMM ladder's two builds on the H200, per machine
instruction: which local loads each compiler merges into 64- and 128-bit ``LDS``, and how
many wavefronts and bank conflicts each of those instructions takes.

Why: the ladder's Nsight counters (``reports/nvidia-h200/ladder/counters/``, the CUDA
build) differ from the ``nvidia-h200-cuda`` model in the local loads of the register-blocked
and vectorized GEMMs (instructions 12.58M measured against 16.78M modelled for TM = TN = 4,
wavefronts of the float4 loads 3 to 5 per instruction against 2 to 3), while global
requests and sectors are exact. Totals cannot say which instruction differs; Nsight's
per-instruction source counters can (``experiments/h200/ladder/local_findings.md``).

Stages, one JSON key each in ``OUT/local_codegen.json`` (rewritten atomically after each;
a stage's failure is recorded and never stops the others):

1. ``code``: per ladder case at N = 1024 (:mod:`experiments.h200.ladder.cases`), the OpenCL
   driver's PTX (``CL_PROGRAM_BINARIES``) and the CUDA build's PTX (NVRTC,
   ``-arch=compute_90``, the source of :func:`experiments.h200.cuda.cuda_source`), each
   assembled by ``ptxas -arch=sm_90`` and disassembled by ``cuobjdump -sass``; static counts
   of every ``LDS*``/``STS*`` width (:func:`local_sass_counts`).
2. ``jit``: the machine code NVIDIA's OpenCL driver really runs (its JIT of that PTX, read
   from the CUDA compute cache of a child process, as ``codegen/jit_probe.py`` does), its
   ``LDS*``/``STS*`` counts.
3. ``ncu``: one Nsight Compute run (``--section SourceCounters`` plus the local-memory
   metrics of :data:`METRICS`, ``--cache-control all --clock-control none``) over the
   validation driver's ``--ncu-driver`` mode launching the CUDA build of every case (NVRTC,
   as ``ladder.counters`` did), every result checked against float64. The source page
   (``--page source --csv --print-source sass``) gives per SASS instruction its executions,
   "L1 Conflicts Shared N-Way" (wavefronts per execution) and the L1 shared wavefronts,
   ideal and excessive: the local-memory rows are kept in the JSON
   (:func:`local_source_rows`).
4. ``ncu_opencl_jit``: the same, one ncu run per case (a launch failure ends a CUDA
   context), over the OpenCL driver's own cubins of stage 2 loaded through CUDA: the OpenCL
   build's local wavefronts and conflicts. The OpenCL PTX reads the NDRange offsets from
   environment registers, which CUDA leaves unset (the ladder's kernels then fail to
   launch, 2026-12-01 07:51 UTC): stage 1 writes a copy with those reads replaced by 0
   (``*.opencl.envreg0.ptx``), stage 2 hands it back to the OpenCL driver as a program
   binary, and its JIT of that copy is the one launched.
5. ``ncu_opencl_ptx``: likewise over that copy compiled by the CUDA driver's JIT (the
   OpenCL PTX, not the OpenCL driver's machine code).

Files: ``OUT/local_codegen.json`` and ``OUT/code.tar.gz`` (every PTX, SASS, cubin, ncu
source page and log). Run on the device from the repository root after the device preamble
of ``experiments/README.md`` (the command: ``/work/notes/localcounts_command.txt``)::

    PYTHONUNBUFFERED=1 timeout 230 python3 -m experiments.h200.ladder.local_codegen --out $OUT

Rehearsal without CUDA (PoCL): ``TT_TOOLS_ON_PATH_ONLY=1`` (look for ptxas, cuobjdump and
ncu on PATH only: the device's search globs all of /opt) with ``--opencl-device pocl`` runs
what it can and records the rest as errors.
"""
from __future__ import annotations

import argparse
import csv
import datetime as _dt
import io
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

from experiments.h200.ladder.counters import case_dicts

REPO = Path(__file__).resolve().parents[3]
"""The repository root: the working directory of the child processes (``-m`` modules)."""

N = 1024
"""The ladder counters' size: machine code does not depend on it (runtime arguments)."""

METRICS = (
    "smsp__inst_executed_op_shared_ld.sum",
    "smsp__inst_executed_op_shared_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "smsp__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "smsp__inst_executed_op_global_ld.sum",
    "smsp__inst_executed.sum",
    "gpu__time_duration.sum",
    "launch__registers_per_thread",
)
"""Local-memory totals (the validation run's names, plus the ``smsp__sass_`` per-instruction
sums where ncu knows them: dropped if ``--query-metrics`` does not list them)."""

KERNEL_REGEX = "regex:^(gemm|matvec)_"

DEADLINE = [float("inf")]
"""``time.monotonic()`` by which every stage must be done (``--deadline-s`` after the start):
each ncu run and import gets at most what is left, so that the files come back."""


def _left(margin_s: float = 5.0) -> float:
    return DEADLINE[0] - time.monotonic() - margin_s

SASS_LINE = re.compile(r"\s*(?:/\*[0-9a-f]{4,}\*/\s+)?(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)\s*(.*)")
"""A disassembly line: optional cuobjdump address comment, optional predicate, opcode,
operands (cuobjdump ``/*0a10*/  @P0 LDS.128 R4, [R2+0x10] ;``, or ncu's source page)."""


def local_sass_counts(sass: str) -> dict:
    """Static count of each local-memory opcode (``LDS``, ``LDS.64``, ``LDS.128``, ``LDS.U8``
    ..., ``STS``..., ``LDSM``) in a cuobjdump disassembly, plus ``all`` instructions.
    Lines that are not instructions (headers, ``.L_x`` labels) are skipped."""
    ops: Counter = Counter()
    total = 0
    for line in sass.splitlines():
        if not re.match(r"\s*/\*[0-9a-f]{4,}\*/", line):
            continue
        m = SASS_LINE.match(line)
        if not m:
            continue
        total += 1
        if m.group(1).split(".")[0] in ("LDS", "STS", "LDSM"):
            ops[m.group(1)] += 1
    return {"all": total, **dict(sorted(ops.items()))}


def local_source_rows(text: str) -> list[dict]:
    """The local-memory instructions of an ncu ``--page source --csv --print-source sass``
    page: one dict per ``LDS*``/``STS*`` row, in kernel order: ``kernel`` (index of the
    profiled kernel in the page, from 0), ``name``, ``address``, ``sass`` (the instruction),
    ``executed`` (warp-level executions), ``nway`` ("L1 Conflicts Shared N-Way": wavefronts
    per execution), ``access_bits`` ("Access Size"), and every other column whose name
    mentions Shared or Wavefront, as text. Raises ValueError for a page with no kernel."""
    rows = list(csv.reader(io.StringIO(text)))
    out: list[dict] = []
    kernel, name, header = -1, None, None
    for r in rows:
        if not r:
            continue
        if r[0] == "Kernel Name":
            kernel += 1
            name, header = (r[1] if len(r) > 1 else ""), None
            continue
        if r[0] == "Address":
            header = r
            continue
        if header is None or len(r) < 2:
            continue
        m = SASS_LINE.match(r[1])
        if not m or m.group(1).split(".")[0] not in ("LDS", "STS", "LDSM"):
            continue
        d = dict(zip(header, r))
        rec = {"kernel": kernel, "name": name, "address": r[0], "sass": r[1].strip(),
               "executed": _num(d.get("Instructions Executed")),
               "nway": _num(d.get("L1 Conflicts Shared N-Way")),
               "access_bits": _num(d.get("Access Size"))}
        rec.update({k: v for k, v in d.items()
                    if ("Shared" in k or "Wavefront" in k) and k != "L1 Conflicts Shared N-Way"})
        out.append(rec)
    if kernel < 0:
        raise ValueError("no 'Kernel Name' row in the ncu source page")
    return out


def _num(text):
    if text is None:
        return None
    t = str(text).replace(",", "").strip()
    try:
        return int(t)
    except ValueError:
        try:
            return float(t)
        except ValueError:
            return None


def _error(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}"


TOOLS: dict = {}
"""ptxas, cuobjdump, ncu: found once (the device's search globs /opt and /usr)."""


def _tools() -> dict:
    if not TOOLS:
        from experiments.h200.dispatch.driver import find_tool
        look = shutil.which if os.environ.get("TT_TOOLS_ON_PATH_ONLY") else find_tool
        TOOLS.update({t: look(t) for t in ("ptxas", "cuobjdump", "ncu")})
    return TOOLS


def assemble(ptx: Path, tools: dict) -> dict:
    """ptxas -arch=sm_90 -v, cuobjdump -sass; the SASS next to the PTX (``.sass``)."""
    rec: dict = {}
    cubin = ptx.with_suffix(".cubin")
    done = subprocess.run([tools["ptxas"], "-arch=sm_90", "-v", str(ptx), "-o", str(cubin)],
                          capture_output=True, text=True, timeout=120)
    rec["ptxas_log"] = (done.stdout + done.stderr)[-1500:]
    if done.returncode != 0:
        rec["error"] = "ptxas failed"
        return rec
    return {**rec, **disassemble(cubin, tools, keep=False)}


def disassemble(cubin: Path, tools: dict, keep: bool = True) -> dict:
    done = subprocess.run([tools["cuobjdump"], "-sass", str(cubin)], capture_output=True,
                          text=True, timeout=120)
    if done.returncode != 0 or not done.stdout.strip():
        return {"error": "cuobjdump failed: " + done.stderr[-800:]}
    cubin.with_suffix(".sass").write_text(done.stdout)
    if not keep:
        cubin.unlink()
    return {"sass_counts": local_sass_counts(done.stdout)}


def code_stage(folder: Path, target, cases: list[dict], assemble_opencl: bool = True) -> dict:
    """Stage 1: both builds' PTX, assembled and disassembled into ``folder`` (see the
    module docstring); ``assemble_opencl`` False keeps the OpenCL PTX (and its copy without
    environment-register reads) but does not assemble it with ptxas."""
    from tiletraffic.gpu.codegen.generate import generate
    from experiments.h200.cuda import cuda_source
    from tiletraffic.gpu.runtime.launch import build_program

    from experiments.h200.codegen.driver import ENVREG
    from experiments.h200.validation.driver import build_case

    tools = _tools()
    result: dict = {"tools": tools, "kernels": []}
    for c in cases:
        rec: dict = {"id": c["id"], "label": c.get("label", c["id"])}
        result["kernels"].append(rec)
        kernel = generate(build_case(c))
        (folder / f"{c['id']}.cl").write_text(kernel.source)
        try:
            import pyopencl as cl
            built = build_program(target, kernel.source)
            blob = built.program.get_info(cl.program_info.BINARIES)[0]
            ptx = blob.decode("utf-8", "replace").rstrip("\0")
            if ".entry" not in ptx:
                raise ValueError(f"the OpenCL binary is not PTX ({len(blob)} bytes, device "
                                 f"{target.info.describe()})")
            (folder / f"{c['id']}.opencl.ptx").write_text(ptx)
            rec["opencl_envreg"] = len(ENVREG.findall(ptx))
            (folder / f"{c['id']}.opencl.envreg0.ptx").write_text(ENVREG.sub(r"\g<1>0;", ptx))
            if assemble_opencl and tools["ptxas"] and tools["cuobjdump"]:
                rec["opencl"] = assemble(folder / f"{c['id']}.opencl.ptx", tools)
        except Exception as err:  # noqa: BLE001 - one build's failure never stops the run
            rec["opencl_error"] = _error(err)
        try:
            from cupy_backends.cuda.libs import nvrtc
            src = cuda_source(kernel).encode("ascii", "replace").decode()
            prog = nvrtc.createProgram(src, f"{c['id']}.cu", [], [])
            nvrtc.compileProgram(prog, ["-arch=compute_90"])
            cptx = nvrtc.getPTX(prog)
            (folder / f"{c['id']}.cuda.ptx").write_text(
                cptx.decode() if isinstance(cptx, bytes) else cptx)
            if tools["ptxas"] and tools["cuobjdump"]:
                rec["cuda"] = assemble(folder / f"{c['id']}.cuda.ptx", tools)
        except Exception as err:  # noqa: BLE001
            rec["cuda_error"] = _error(err)
        print("code", c["id"], {b: rec.get(b, {}).get("sass_counts") for b in ("opencl", "cuda")},
              rec.get("opencl_error", ""), rec.get("cuda_error", ""), flush=True)
    return result


def jit_child(opencl_device: str, cases_path: Path) -> int:
    """Child process (``--jit-child``): build every case through the OpenCL driver in a fresh
    ``CUDA_CACHE_PATH`` and print one JSON line ``{case id: [cache files it added]}``."""
    cache = Path(os.environ["CUDA_CACHE_PATH"])

    def files() -> set[str]:
        return {str(p) for p in cache.rglob("*") if p.is_file()}

    import pyopencl as cl

    from tiletraffic.gpu.codegen.generate import generate
    from tiletraffic.gpu.devices.device import select_device
    from tiletraffic.gpu.runtime.launch import build_program

    from experiments.h200.validation.driver import build_case

    target = select_device(opencl_device)
    seen: dict = {}
    before = files()
    for c in json.loads(cases_path.read_text()):
        kernel = generate(build_case(c))
        cl.Kernel(build_program(target, kernel.source).program, kernel.name)
        now = files()
        seen[c["id"]] = sorted(now - before)
        before = now
        # the same PTX without its environment-register reads (the NDRange offsets, which
        # CUDA leaves unset: the ladder's kernels read them and failed to launch through
        # CUDA), handed back to the OpenCL driver as a program binary: its own JIT of it
        ptx = cases_path.parent / "code" / f"{c['id']}.opencl.envreg0.ptx"
        if ptx.exists():
            try:
                prg = cl.Program(target.context, [target.device], [ptx.read_bytes()]).build()
                cl.Kernel(prg, kernel.name)
            except Exception as err:  # noqa: BLE001 - recorded, the others go on
                seen[c["id"] + "-envreg0-error"] = _error(err)
            now = files()
            seen[c["id"] + "-envreg0"] = sorted(now - before)
            before = now
    print(json.dumps(seen))
    return 0


def jit_stage(folder: Path, opencl_device: str, cases: list[dict]) -> dict:
    """Stage 2: the OpenCL driver's own machine code, from its compute cache, into
    ``folder``."""
    from experiments.h200.codegen.driver import elf_images

    tools = _tools()
    work = folder.parent
    (work / "cases.json").write_text(json.dumps(cases))
    env = {**os.environ, "CUDA_CACHE_PATH": str(work / "cache"), "CUDA_CACHE_DISABLE": "0",
           "CUDA_CACHE_MAXSIZE": str(1 << 30)}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(REPO)) if p)
    done = subprocess.run([sys.executable, "-m", "experiments.h200.ladder.local_codegen",
                           "--jit-child", str(work / "cases.json"), "--opencl-device",
                           opencl_device, "--out", str(work)],
                          capture_output=True, text=True, timeout=120, env=env, cwd=REPO)
    result: dict = {"rc": done.returncode, "stderr": done.stderr[-3000:], "kernels": {}}
    if done.returncode != 0:
        return result
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    for cid, paths in seen.items():
        if cid.endswith("-error"):
            result["kernels"][cid] = paths
            continue
        images = [img for p in paths for img in elf_images(Path(p).read_bytes())]
        rec = result["kernels"][cid] = {"cache_files": len(paths), "elf_images": len(images)}
        for i, img in enumerate(images):
            cubin = folder / f"{cid}.opencl-jit.{i}.cubin"
            cubin.write_bytes(img)
            if tools["cuobjdump"]:
                rec.setdefault("disassembly", []).append(disassemble(cubin, tools))
        print("jit", cid, [d.get("sass_counts") for d in rec.get("disassembly", [])],
              flush=True)
    return result


QUERY: dict = {}
"""``ncu --query-metrics`` of this machine, asked once."""


def ncu_stage(cases: list[dict], folder: Path, tag: str, timeout_s: float,
              wanted: tuple[str, ...] = METRICS) -> dict:
    """Stages 3 and 4: one ncu run (SourceCounters + ``wanted`` metrics) over the validation
    driver's ``--ncu-driver`` mode; the raw page joined to the cases, the source page's local
    rows."""
    from experiments.h200.ncu import parse_ncu_raw_csv

    from experiments.h200.validation.driver import (NCU_DRIVER_MODULE, join_counters,
                                                    run_cmd)

    ncu = _tools()["ncu"]
    result: dict = {"cases": [c["id"] for c in cases], "attempts": []}
    if not ncu:
        result["error"] = "ncu not found"
        return result
    work = Path(tempfile.mkdtemp(prefix=f"tt_local_{tag}_"))
    (work / "cases.json").write_text(json.dumps(cases))
    if "known" not in QUERY:
        query = run_cmd([ncu, "--query-metrics", "--csv"], 60)
        QUERY["known"] = query["stdout"] if query["rc"] == 0 else ""
    known = QUERY["known"]
    metrics = [m for m in wanted if m.startswith("launch__") or not known
               or re.search(rf"\b{re.escape(m.split('.')[0])}\b", known)]
    result["metrics_unknown"] = sorted(set(wanted) - set(metrics))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(REPO)) if p)
    env["PYTHONUNBUFFERED"] = "1"
    t_end = time.monotonic() + min(timeout_s, _left(40.0))
    rep = work / tag
    for sections in (["--section", "SourceCounters"], []):
        left = t_end - time.monotonic()
        if left < 15:
            result["error"] = "no time left for ncu"
            break
        argv = [ncu, "--clock-control", "none", "--cache-control", "all",
                "--target-processes", "all", "--kernel-name", KERNEL_REGEX, *sections,
                "--metrics", ",".join(metrics), "--export", str(rep), "--force-overwrite",
                sys.executable, "-m", NCU_DRIVER_MODULE, "--ncu-driver",
                str(work / "cases.json"), "--driver-out", str(work / "driver.json")]
        done = run_cmd(argv, left, env=env, cwd=str(REPO))
        (folder / f"ncu-{tag}.log").write_text(
            "$ " + shlex.join(argv) + "\n--- stdout\n" + done["stdout"] + "\n--- stderr\n"
            + done["stderr"])
        result["attempts"].append({"argv": argv, "rc": done["rc"], "wall_s": done["wall_s"],
                                   "tail": (done["stdout"] + done["stderr"])[-2000:]})
        if rep.with_suffix(".ncu-rep").exists():
            break
    driver = (json.loads((work / "driver.json").read_text())
              if (work / "driver.json").exists() else [])
    raw: list = []
    rep_file = rep.with_suffix(".ncu-rep")
    if rep_file.exists():
        got = run_cmd([ncu, "--import", str(rep_file), "--page", "raw", "--csv",
                       "--print-units", "base"], max(10.0, min(60.0, _left())))
        raw = parse_ncu_raw_csv(got["stdout"])
        src = run_cmd([ncu, "--import", str(rep_file), "--page", "source", "--csv",
                       "--print-source", "sass"], max(10.0, min(120.0, _left())))
        (folder / f"ncu-{tag}-source.csv").write_text(src["stdout"])
        try:
            rows = local_source_rows(src["stdout"])
        except ValueError as err:
            rows = []
            result["source_error"] = f"{err}; rc {src['rc']}: {src['stderr'][-500:]}"
        by_kernel: dict = {}
        for r in rows:
            by_kernel.setdefault(r.pop("kernel"), []).append(r)
        result["source_rows_by_kernel"] = by_kernel
    result["records"] = join_counters(cases, driver, raw)
    for rec in result["records"]:
        counts = {k: v.get("value") for k, v in (rec.get("metrics") or {}).items()}
        print(tag, rec["id"], rec.get("check", {}).get("ok"),
              {k.split("__")[1][:40]: counts[k] for k in counts if "shared" in k}, flush=True)
    shutil.rmtree(work, ignore_errors=True)
    return result


def ncu_each(cases: list[dict], folder: Path, tag: str, timeout_s: float,
             wanted: tuple[str, ...] = METRICS) -> dict:
    """:func:`ncu_stage` once per case (tags ``<tag>-<i>``, metrics ``wanted``), while time
    is left: records and ``source_rows_by_case`` (case id -> the local rows of its source
    page)."""
    result: dict = {"runs": [], "records": [], "source_rows_by_case": {}}
    for i, c in enumerate(cases):
        if _left(30.0) < 15:
            result["records"].append({"id": c["id"], "error": "no time left for ncu"})
            continue
        one = ncu_stage([c], folder, f"{tag}-{i}", min(timeout_s, 30.0), wanted)
        rows = one.pop("source_rows_by_kernel", {})
        result["source_rows_by_case"][c["id"]] = rows.get(0, rows.get("0", []))
        result["records"].extend(one.pop("records", []))
        result["runs"].append(one)
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--opencl-device", default="nvidia",
                    help="select_device spec of the OpenCL build (pocl for a rehearsal)")
    ap.add_argument("--ncu-timeout-s", type=float, default=70.0, help="per ncu run")
    ap.add_argument("--deadline-s", type=float, default=215.0,
                    help="every stage done by then (seconds after the start)")
    ap.add_argument("--jit-child", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    DEADLINE[0] = time.monotonic() + args.deadline_s
    if args.jit_child:
        return jit_child(args.opencl_device, args.jit_child)
    from tiletraffic.gpu.devices.device import select_device

    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    # the code texts live outside OUT (the device tool returns at most 8 files) and go to
    # OUT/code.tar.gz after every stage, so a run cut short still returns what it made
    work = Path(tempfile.mkdtemp(prefix="tt_local_codegen_"))
    code = work / "code"
    code.mkdir()
    cases = case_dicts((N,))
    data: dict = {"meta": {"created_utc": _dt.datetime.now(_dt.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ"), "command": shlex.join([sys.executable] + sys.argv),
        "cases": cases}, "stage_wall_s": {}}
    path = out / "local_codegen.json"

    def save() -> None:
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(path)

    def stage(name, fn, *a):
        t0 = time.perf_counter()
        try:
            data[name] = fn(*a)
        except Exception as err:  # noqa: BLE001 - a stage's failure never stops the run
            data[name] = {"error": _error(err), "traceback": traceback.format_exc()[-3000:]}
        data["stage_wall_s"][name] = time.perf_counter() - t0
        print(f"stage {name}: {data['stage_wall_s'][name]:.1f} s", flush=True)
        save()
        tmp = out / "code.tar.gz.tmp"
        with tarfile.open(tmp, "w:gz") as tar:
            tar.add(code, arcname="code")
        tmp.replace(out / "code.tar.gz")

    target = select_device(args.opencl_device)
    data["meta"]["opencl_device"] = target.info.describe()
    stage("code", code_stage, code, target, cases)
    stage("jit", jit_stage, code, args.opencl_device, cases)
    cuda = [{**c, "build": "cuda"} for c in cases]
    ptx = [{**c, "id": c["id"] + "-opencl-ptx", "build": "opencl-ptx-via-cuda-jit",
            "envreg0": True, "ptx_path": str(code / f"{c['id']}.opencl.envreg0.ptx")}
           for c in cases if (code / f"{c['id']}.opencl.envreg0.ptx").exists()]
    stage("ncu", ncu_stage, cuda, code, "cuda", args.ncu_timeout_s)
    jit = []
    for c in cases:
        for cid in (c["id"] + "-envreg0", c["id"]):
            cubin = code / f"{cid}.opencl-jit.0.cubin"
            if cubin.exists():
                jit.append({**c, "id": c["id"] + "-opencl-jit", "build": "opencl-driver-jit",
                            "envreg0": cid != c["id"], "ptx_path": str(cubin)})
                break
    # the OpenCL builds one ncu run each: a launch failure ends a CUDA context, and so the run
    stage("ncu_opencl_jit", ncu_each, jit, code, "opencl-jit", args.ncu_timeout_s)
    stage("ncu_opencl_ptx", ncu_each, ptx, code, "opencl-ptx", args.ncu_timeout_s)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
