"""Local-memory counters of both NVIDIA builds of every schedule family, per instruction.

Device call (one), from the repository root after the device preamble of
``experiments/README.md``::

    PYTHONUNBUFFERED=1 timeout 400 python3 -m experiments.h200.local_counters.driver \\
        --out $OUT --deadline-s 380

Stages (one key each of ``OUT/local_counters.json``, rewritten atomically after each; a
stage's failure is recorded and never stops the others), all through
:mod:`experiments.h200.ladder.local_codegen`:

1. ``code``: per configuration of :mod:`.cases` (counted and machine-code-only), the CUDA
   build's PTX (NVRTC of :func:`experiments.h200.cuda.cuda_source`) assembled by ptxas and
   disassembled by cuobjdump; the OpenCL driver's PTX, and its copy without the
   environment-register reads (the NDRange offsets, which CUDA leaves unset).
2. ``jit``: the machine code NVIDIA's OpenCL driver runs (its JIT, read from the CUDA compute
   cache of a child process), of the source and of that copy, disassembled.
3. ``ncu``: one Nsight Compute run (``--clock-control none --cache-control all``, the
   SourceCounters section and :data:`METRICS`) over every counted case's CUDA build, each
   result checked against float64 numpy; the source page's local-memory instructions
   (executions, wavefronts, ideal and excessive wavefronts per SASS instruction).
4. ``ncu_opencl``: the same over the OpenCL driver's own machine code of stage 2 (the
   copy's), loaded through CUDA: the OpenCL build's counters; cases a failed launch left
   uncounted again one ncu run each (``ncu_opencl_each``) while time is left.

Files: ``OUT/local_counters.json`` and ``OUT/code.tar.gz`` (sources, PTX, SASS, cubins, ncu
logs and source pages).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import shlex
import shutil
import sys
import tarfile
import tempfile
import time
import traceback
from pathlib import Path

from experiments.h200.ladder import local_codegen as LC
from experiments.h200.local_counters import cases as C

METRICS = LC.METRICS + (
    "smsp__inst_executed_op_global_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
    "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "smsp__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
    "l1tex__data_pipe_lsu_wavefronts.sum",
    "launch__occupancy_limit_shared_mem",
    "launch__waves_per_multiprocessor",
)
"""Local loads and stores (L1 totals and the per-instruction ``smsp__sass_`` sums), global
requests and sectors of loads and stores, the L1 data pipe's totals."""


def _error(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--opencl-device", default="nvidia",
                    help="select_device spec of the OpenCL build (pocl for a rehearsal)")
    ap.add_argument("--ncu-timeout-s", type=float, default=150.0, help="per ncu run")
    ap.add_argument("--deadline-s", type=float, default=380.0,
                    help="every stage done by then (seconds after the start)")
    args = ap.parse_args(argv)
    LC.DEADLINE[0] = time.monotonic() + args.deadline_s
    from tiletraffic.gpu.devices.device import select_device

    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="tt_local_counters_"))
    code = work / "code"
    code.mkdir()
    configs, counted = C.code_cases(), C.counted_cases()
    data: dict = {"meta": {
        "created_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": shlex.join([sys.executable, "-m", "experiments.h200.local_counters.driver",
                               *(argv if argv is not None else sys.argv[1:])]),
        "configs": configs, "cases": counted, "metrics": list(METRICS)}, "stage_wall_s": {}}
    path = out / "local_counters.json"

    def save() -> None:
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(path)

    def stage(name, fn, *a, **kw):
        t0 = time.perf_counter()
        try:
            data[name] = fn(*a, **kw)
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
    stage("code", LC.code_stage, code, target, configs, assemble_opencl=False)
    stage("jit", LC.jit_stage, code, args.opencl_device, configs)
    cuda = [{**c, "build": "cuda"} for c in counted]
    stage("ncu", LC.ncu_stage, cuda, code, "cuda", args.ncu_timeout_s, METRICS)
    opencl = []
    for c in counted:
        for cid in (c["config"] + "-envreg0", c["config"]):
            cubin = code / f"{cid}.opencl-jit.0.cubin"
            if cubin.exists():
                opencl.append({**c, "id": c["id"] + "-opencl-jit", "build": "opencl-driver-jit",
                               "envreg0": cid != c["config"], "ptx_path": str(cubin)})
                break
    stage("ncu_opencl", LC.ncu_stage, opencl, code, "opencl", args.ncu_timeout_s, METRICS)
    # a launch that fails ends the CUDA context and with it the cases after it: those
    # again, one ncu run each, while time is left
    done = {r["id"] for r in data["ncu_opencl"].get("records", []) if r.get("metrics")}
    missing = [c for c in opencl if c["id"] not in done]
    if missing and LC._left(60.0) > 0:
        stage("ncu_opencl_each", LC.ncu_each, missing, code, "opencl-each", 30.0, METRICS)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
