"""Block order (``group_rows``) and a register cap for gemm-warp-tiled at 4096³ on the
H200, against cuBLAS FP32 in the same run.

One device call, after the device preamble of ``experiments/README.md``::

    PYTHONUNBUFFERED=1 timeout 400 python3 -m experiments.h200.block_order.driver --out $OUT

What it does: cuBLAS FP32 through torch (TF32 off, CUDA events) before and after; every case
of :mod:`.cases` through ``tiletraffic.run`` (NVIDIA's OpenCL driver, 2 warm-ups,
``--repeat`` timed launches, the output checked against float64 numpy before its time
counts; registers from the build log), ``--rounds`` times. A case's build options (the
register cap) are added to the generated kernel's. Output: ``OUT/block_order_raw.json``,
rewritten after every case. Rehearsal on PoCL: ``--dry-run-local`` (size 256, no torch, no
build options).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import sys
import time
import traceback
import warnings
from pathlib import Path

from experiments.h200.ladder.driver import _facts, cublas_fp32

from . import cases as C


def run_case(case, n: int, device, repeat: int, with_options: bool) -> dict:
    import tiletraffic
    from tiletraffic.gpu import codegen

    label, family, tile, options, build_options = case
    rec = {"label": label, "family": family, "tile": tile, "options": options, "n": n,
           "build_options": list(build_options) if with_options else []}
    real = codegen.generate

    def generate(schedule):
        kernel = real(schedule)
        if with_options and build_options:
            kernel = dataclasses.replace(
                kernel, build_options=tuple(kernel.build_options) + tuple(build_options))
        return kernel

    t0 = time.perf_counter()
    codegen.generate = generate
    try:
        s = tiletraffic.build(family, m=n, k=n, n=n, tile=tile, **options)
        dr = tiletraffic.run(s, device, repeat=repeat, warmup=2, seed=n)
        d = dr.to_dict()
        d.pop("output_digests", None)
        rec.update(status="ok", checked=bool(dr.check.ok), run=d, median_s=dr.run.median_s,
                   min_s=dr.run.min_s, max_s=dr.run.max_s,
                   tflops=2 * n ** 3 / dr.run.median_s / 1e12)
    except Exception as e:  # noqa: BLE001 - one case's failure never stops the run
        rec.update(status="error", checked=False, error_type=type(e).__name__,
                   error=str(e)[:4000], traceback=traceback.format_exc()[-4000:])
    finally:
        codegen.generate = real
    rec["wall_s"] = time.perf_counter() - t0
    return rec


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--sizes", type=int, nargs="+", default=list(C.SIZES))
    p.add_argument("--repeat", type=int, default=20, help="timed launches per case (>= 10)")
    p.add_argument("--rounds", type=int, default=2, help="passes over every case")
    p.add_argument("--device", default="NVIDIA", help="OpenCL device (tiletraffic.run)")
    p.add_argument("--budget-s", type=float, default=330.0,
                   help="skip the cases still waiting after this many seconds")
    p.add_argument("--labels", nargs="+", default=None, help="only these case labels")
    p.add_argument("--dry-run-local", action="store_true",
                   help="PoCL rehearsal: size 256, repeat 10, one round, no torch")
    a = p.parse_args(argv)
    if a.dry_run_local:
        a.sizes, a.repeat, a.rounds, a.device = [256], 10, 1, None
    if a.repeat < 10:
        p.error(f"--repeat {a.repeat}: at least 10 timed launches are needed")
    known = [c[0] for c in C.CASES]
    if a.labels and (unknown := [x for x in a.labels if x not in known]):
        p.error(f"--labels: unknown {unknown}; known: {known}")
    cases = [c for c in C.CASES if not a.labels or c[0] in a.labels]
    warnings.simplefilter("ignore")
    a.out.mkdir(parents=True, exist_ok=True)
    command = shlex.join([sys.executable, "-m", "experiments.h200.block_order.driver",
                          *(argv if argv is not None else sys.argv[1:])])
    start = time.perf_counter()
    raw = {"command": command, "facts": _facts(), "sizes": a.sizes, "repeat": a.repeat,
           "rounds": a.rounds, "cublas": [], "cases": []}
    path = a.out / "block_order_raw.json"

    def save():
        raw["elapsed_s"] = time.perf_counter() - start
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(raw, indent=1))
        tmp.replace(path)

    def reference(when: str):
        if a.dry_run_local:
            return
        for n in a.sizes:
            try:
                rec = cublas_fp32(n, a.repeat)
            except Exception as e:  # noqa: BLE001
                rec = {"n": n, "error": f"{type(e).__name__}: {e}"}
            rec["when"] = when
            raw["cublas"].append(rec)
            print("cublas", when, n, rec.get("median_s"), flush=True)
        save()

    reference("before")
    for rnd in range(a.rounds):
        for n in a.sizes:
            for case in cases:
                if time.perf_counter() - start > a.budget_s:
                    rec = {"label": case[0], "n": n, "status": "skipped", "checked": False,
                           "error": f"budget of {a.budget_s} s spent"}
                else:
                    rec = run_case(case, n, a.device, a.repeat, not a.dry_run_local)
                rec["round"] = rnd
                raw["cases"].append(rec)
                print(rnd, n, rec["label"], rec["status"], rec.get("median_s"),
                      (rec.get("run") or {}).get("registers_per_work_item"),
                      rec.get("error", "")[:300], round(time.perf_counter() - start, 1),
                      flush=True)
                save()
    reference("after")
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
