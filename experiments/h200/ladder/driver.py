"""The GEMM ladder on the NVIDIA H200 in one device call (issue #13, item 5, partial):
naive -> tiled -> register-blocked -> vectorized -> prefetch, plus a few hand-picked
parameter choices of the register-blocked families (:mod:`experiments.h200.ladder.cases`),
at N = 1024, 4096, 8192 (square M = K = N).

What one run does, writing everything under ``--out`` (the device's $OUT):

1. device facts: ``nvidia-smi`` (name, driver, clocks), versions of numpy, pyopencl,
   torch, the command line;
2. cuBLAS FP32 reference through torch (``torch.backends.cuda.matmul.allow_tf32 = False``,
   also ``torch.backends.cudnn.allow_tf32 = False``): ``a @ b`` at each N, CUDA events,
   3 warm-ups then ``--repeat`` timed launches;
3. every case through OpenCL with tiletraffic's own run path
   (``tiletraffic.run(schedule, device=...)`` = ``gpu.runtime.checked_run.run_on_device``):
   generated kernel built, 2 warm-up and ``--repeat`` timed launches (OpenCL profiling
   events), every distinct output checked against float64 numpy before its time counts.
   A build error, refused launch or wrong result is recorded with its message and the run
   goes on. Cases still waiting when ``--budget-s`` seconds have passed are recorded as
   skipped.

Outputs: ``OUT/ladder_raw.json`` (rewritten after every case) and ``OUT/command.txt``.
The model's predictions are not computed here (they need no GPU): see
:mod:`experiments.h200.ladder.predict`.

Device call, from the repository root after the device preamble of ``experiments/README.md``::

    PYTHONUNBUFFERED=1 timeout 560 python3 -m experiments.h200.ladder.driver --out $OUT

Local rehearsal on PoCL (tiny sizes, no torch/CUDA)::

    python -m experiments.h200.ladder.driver --out /tmp/ladder-dry --dry-run-local
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import platform
import shlex
import statistics
import subprocess
import sys
import time
import traceback
import warnings
from pathlib import Path

from experiments.h200.ladder import cases as C


def _facts() -> dict:
    facts = {"python": sys.version, "platform": platform.platform(),
             "utc": _dt.datetime.now(_dt.timezone.utc).isoformat()}
    for mod in ("numpy", "pyopencl", "torch"):
        try:
            facts[mod] = __import__(mod).__version__
        except Exception as e:  # recorded, not fatal
            facts[mod] = f"unavailable: {e}"
    try:
        facts["nvidia_smi"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm,"
             "clocks.mem,memory.total,power.limit", "--format=csv"],
            capture_output=True, text=True, timeout=30).stdout
    except Exception as e:
        facts["nvidia_smi"] = f"unavailable: {e}"
    return facts


def cublas_fp32(n: int, repeat: int) -> dict:
    """Median/min/max seconds of torch ``a @ b`` (N×N float32, TF32 off), CUDA events."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(n, n, device="cuda", dtype=torch.float32, generator=g)
    b = torch.randn(n, n, device="cuda", dtype=torch.float32, generator=g)
    for _ in range(3):
        c = a @ b
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        c = a @ b
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / 1e3)
    # a spot check of cuBLAS itself against float64 on a few rows
    ref = (a[:64].double() @ b.double())
    err = float((c[:64].double() - ref).abs().max())
    del a, b, c, ref
    torch.cuda.empty_cache()
    return {"n": n, "times_s": times, "median_s": statistics.median(times),
            "min_s": min(times), "max_s": max(times),
            "tflops": 2 * n ** 3 / statistics.median(times) / 1e12,
            "allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            "max_abs_error_first_64_rows": err, "torch_cuda": torch.version.cuda}


def add_timing_options(p: argparse.ArgumentParser, sizes, budget_s: float) -> None:
    """The options every timing driver takes: --out, --sizes, --repeat, --rounds, --device,
    --budget-s and --labels."""
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--sizes", type=int, nargs="+", default=list(sizes))
    p.add_argument("--repeat", type=int, default=20, help="timed launches per case (>= 10)")
    p.add_argument("--rounds", type=int, default=2, help="passes over every case")
    p.add_argument("--device", default="NVIDIA", help="OpenCL device (tiletraffic.run)")
    p.add_argument("--budget-s", type=float, default=budget_s,
                   help="skip the cases still waiting after this many seconds")
    p.add_argument("--labels", nargs="+", default=None, help="only these case labels")


def chosen_cases(p: argparse.ArgumentParser, a, cases) -> list:
    """The cases named by ``a.labels`` (all without it); an unknown label or a --repeat
    below 10 is a usage error of ``p``."""
    if a.repeat < 10:
        p.error(f"--repeat {a.repeat}: at least 10 timed launches are needed")
    known = [c[0] for c in cases]
    if a.labels and (unknown := [x for x in a.labels if x not in known]):
        p.error(f"--labels: unknown {unknown}; known: {known}")
    return [c for c in cases if not a.labels or c[0] in a.labels]


def begin_run(module: str, argv, a, filename: str):
    """The raw record of a timing driver's run (its command line, the device facts, sizes,
    repeat and rounds; empty ``cublas`` and ``cases``), its atomic saver to
    ``a.out / filename`` and the start time: ``(raw, save, start)``."""
    a.out.mkdir(parents=True, exist_ok=True)
    command = shlex.join([sys.executable, "-m", module,
                          *(argv if argv is not None else sys.argv[1:])])
    start = time.perf_counter()
    raw = {"command": command, "facts": _facts(), "sizes": a.sizes, "repeat": a.repeat,
           "rounds": a.rounds, "cublas": [], "cases": []}
    return raw, raw_saver(raw, a.out / filename, start), start


def raw_saver(raw: dict, path: Path, start: float):
    """A function that writes ``raw`` (with ``elapsed_s`` since ``start``) to ``path``
    atomically, as every driver does after each case."""
    from tiletraffic.analysis.files import atomic_write_text

    def save() -> None:
        raw["elapsed_s"] = time.perf_counter() - start
        atomic_write_text(path, json.dumps(raw, indent=1))
    return save


def cublas_reference(raw: dict, sizes, repeat: int, when: str, save) -> None:
    """cuBLAS FP32 (:func:`cublas_fp32`) at each size into ``raw["cublas"]`` (an error
    recorded, never raised), marked ``when`` ("before"/"after" the kernels), then ``save()``."""
    for n in sizes:
        try:
            rec = cublas_fp32(n, repeat)
        except Exception as e:  # noqa: BLE001 - the reference's failure never stops a run
            rec = {"n": n, "error": f"{type(e).__name__}: {e}"}
        rec["when"] = when
        raw["cublas"].append(rec)
        print("cublas", when, n, rec.get("median_s"), flush=True)
    save()


def timed_rounds(raw: dict, cases, sizes, rounds: int, start: float, budget_s: float,
                 run, save) -> None:
    """``rounds`` passes over every case at every size, ``run(case, n)`` giving each record
    (a case still waiting after ``budget_s`` seconds since ``start`` is recorded skipped);
    each record into ``raw["cases"]`` with its round, printed, and ``save()`` after it."""
    for rnd in range(rounds):
        for n in sizes:
            for case in cases:
                if time.perf_counter() - start > budget_s:
                    rec = {"label": case[0], "family": case[1], "n": n, "status": "skipped",
                           "checked": False, "error": f"budget of {budget_s} s spent"}
                else:
                    rec = run(case, n)
                rec["round"] = rnd
                raw["cases"].append(rec)
                print(rnd, n, rec["label"], rec["status"], rec.get("median_s"),
                      (rec.get("run") or {}).get("registers_per_work_item"),
                      rec.get("error", "")[:300], round(time.perf_counter() - start, 1),
                      flush=True)
                save()


def run_case(case, n: int, device, repeat: int) -> dict:
    import tiletraffic

    label, family, tile, options = case
    rec = {"label": label, "family": family, "tile": tile, "options": options, "n": n}
    t0 = time.perf_counter()
    try:
        s = C.build(case, n)
        rec["extra"] = dict(s.extra) if getattr(s, "extra", None) else None
        dr = tiletraffic.run(s, device, repeat=repeat, warmup=2, seed=n)
        d = dr.to_dict()
        d.pop("output_digests", None)
        rec.update(status="ok", checked=bool(dr.check.ok), run=d,
                   median_s=dr.run.median_s, min_s=dr.run.min_s, max_s=dr.run.max_s,
                   tflops=2 * n ** 3 / dr.run.median_s / 1e12)
    except Exception as e:
        rec.update(status="error", checked=False, error_type=type(e).__name__,
                   error=str(e)[:4000], traceback=traceback.format_exc()[-4000:])
    rec["wall_s"] = time.perf_counter() - t0
    return rec


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--sizes", type=int, nargs="+", default=list(C.SIZES))
    p.add_argument("--repeat", type=int, default=20, help="timed launches per case (>= 10)")
    p.add_argument("--device", default="NVIDIA", help="OpenCL device (tiletraffic.run)")
    p.add_argument("--budget-s", type=float, default=480.0,
                   help="skip the cases still waiting after this many seconds")
    p.add_argument("--dry-run-local", action="store_true",
                   help="PoCL rehearsal: sizes 128, 256, repeat 10, no torch")
    p.add_argument("--labels", nargs="+", default=None,
                   help="only these case labels (experiments/h200/ladder/cases.py)")
    p.add_argument("--cublas-only", action="store_true",
                   help="only the cuBLAS FP32 reference at --sizes (next to a tuning run)")
    a = p.parse_args(argv)
    if a.dry_run_local:
        a.sizes, a.repeat, a.device = [128, 256], 10, None
    if a.repeat < 10:
        p.error(f"--repeat {a.repeat}: at least 10 timed launches are needed")
    known = [c[0] for c in C.CASES]
    if a.labels and (unknown := [x for x in a.labels if x not in known]):
        p.error(f"--labels: unknown {unknown}; known: {known}")
    cases = [c for c in C.CASES if not a.labels or c[0] in a.labels]
    warnings.simplefilter("ignore")
    a.out.mkdir(parents=True, exist_ok=True)
    command = shlex.join([sys.executable, "-m", "experiments.h200.ladder.driver",
                          *(argv if argv is not None else sys.argv[1:])])
    (a.out / "command.txt").write_text(command + "\n")
    start = time.perf_counter()
    raw = {"command": command, "facts": _facts(), "sizes": a.sizes, "repeat": a.repeat,
           "cublas": [], "cases": []}
    path = a.out / "ladder_raw.json"

    def save():
        raw["elapsed_s"] = time.perf_counter() - start
        path.write_text(json.dumps(raw, indent=1))

    save()
    if not a.dry_run_local:
        for n in a.sizes:
            try:
                raw["cublas"].append(cublas_fp32(n, a.repeat))
            except Exception as e:
                raw["cublas"].append({"n": n, "error": f"{type(e).__name__}: {e}"})
            print("cublas", n, raw["cublas"][-1].get("median_s"), flush=True)
        save()
    for n in ([] if a.cublas_only else a.sizes):
        for case in cases:
            if time.perf_counter() - start > a.budget_s:
                raw["cases"].append({"label": case[0], "family": case[1], "n": n,
                                     "status": "skipped", "checked": False,
                                     "error": f"budget of {a.budget_s} s spent"})
            else:
                raw["cases"].append(run_case(case, n, a.device, a.repeat))
            r = raw["cases"][-1]
            print(n, r["label"], r["status"], r.get("median_s"), r.get("error", "")[:200],
                  round(time.perf_counter() - start, 1), flush=True)
            save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
