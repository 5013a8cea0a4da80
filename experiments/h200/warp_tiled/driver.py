"""gemm-warp-tiled against cuBLAS FP32 on the NVIDIA H200, in one device call.

What one run does, writing everything under ``--out`` (the device's $OUT):

1. device facts (``nvidia-smi``, versions) and the command line (``command.txt``);
2. cuBLAS FP32 through torch (TF32 off), ``a @ b`` at each size, CUDA events, before the
   kernels and again after them (the spread of the reference across the run);
3. every case of :mod:`experiments.h200.warp_tiled.cases` at each size through
   ``tiletraffic.run`` (generated OpenCL C, built by NVIDIA's OpenCL driver, 2 warm-ups,
   ``--repeat`` timed launches with OpenCL profiling events, the output checked against
   float64 numpy before its time counts; the compiled registers per work-item from the
   build log), ``--rounds`` times in case order (the spread of each kernel);
4. with ``--counters``: Nsight Compute's counters of the CUDA build of the same generated
   source for every case at ``--counter-size`` (requests, sectors, shared-memory
   wavefronts and bank conflicts; :func:`experiments.h200.validation.driver.counters_stage`).

Outputs: ``OUT/warp_tiled_raw.json`` (rewritten after every case), ``OUT/command.txt``,
``OUT/counters.json`` and ``OUT/counters_extras.tar.gz`` (ncu logs). The model's
predictions need no GPU: :mod:`experiments.h200.warp_tiled.analysis`.

Device call, from the repository root after the device preamble of ``experiments/README.md``::

    PYTHONUNBUFFERED=1 timeout 540 python3 -m experiments.h200.warp_tiled.driver --out $OUT --counters

Local rehearsal on PoCL (small sizes, no torch, no ncu)::

    python -m experiments.h200.warp_tiled.driver --out /tmp/wt-dry --dry-run-local
"""
from __future__ import annotations

import argparse
import json
import subprocess
import time
import warnings
from pathlib import Path

from experiments.h200.ladder.driver import (begin_run, cublas_reference, run_case,
                                            timed_rounds)

from experiments.h200.warp_tiled import cases as C


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--sizes", type=int, nargs="+", default=list(C.SIZES))
    p.add_argument("--repeat", type=int, default=20, help="timed launches per case (>= 10)")
    p.add_argument("--rounds", type=int, default=2, help="passes over every case")
    p.add_argument("--device", default="NVIDIA", help="OpenCL device (tiletraffic.run)")
    p.add_argument("--budget-s", type=float, default=420.0,
                   help="skip the cases still waiting after this many seconds")
    p.add_argument("--counters", action="store_true", help="Nsight counters of the CUDA build")
    p.add_argument("--counter-size", type=int, default=1024)
    p.add_argument("--labels", nargs="+", default=None, help="only these case labels")
    p.add_argument("--dry-run-local", action="store_true",
                   help="PoCL rehearsal: size 256, repeat 10, one round, no torch, no ncu")
    a = p.parse_args(argv)
    if a.dry_run_local:
        a.sizes, a.repeat, a.rounds, a.device, a.counters = [256], 10, 1, None, False
    if a.repeat < 10:
        p.error(f"--repeat {a.repeat}: at least 10 timed launches are needed")
    known = [c[0] for c in C.CASES]
    if a.labels and (unknown := [x for x in a.labels if x not in known]):
        p.error(f"--labels: unknown {unknown}; known: {known}")
    cases = [c for c in C.CASES if not a.labels or c[0] in a.labels]
    warnings.simplefilter("ignore")
    raw, save, start = begin_run("experiments.h200.warp_tiled.driver", argv, a,
                                 "warp_tiled_raw.json")
    (a.out / "command.txt").write_text(raw["command"] + "\n")

    def reference(when: str):
        if not a.dry_run_local:
            cublas_reference(raw, a.sizes, a.repeat, when, save)

    reference("before")
    timed_rounds(raw, cases, a.sizes, a.rounds, start, a.budget_s,
                 lambda case, n: run_case(case, n, a.device, a.repeat), save)
    reference("after")
    if a.counters:
        from experiments.h200.validation.driver import case_id, counters_stage

        extras = a.out / "counters_extras"
        extras.mkdir(exist_ok=True)
        dicts = []
        for label, family, tile, options in cases:
            n = a.counter_size
            d = {"label": label, "family": family, "m": n, "k": n, "n": n, "tile": tile,
                 "options": dict(options)}
            d["id"] = case_id(d)
            dicts.append(d)
        t0 = time.perf_counter()
        result = counters_stage(dicts, extras, 150.0)
        result["cases"], result["wall_s"] = dicts, time.perf_counter() - t0
        (a.out / "counters.json").write_text(json.dumps(result, indent=1))
        subprocess.run(["tar", "czf", str(a.out / "counters_extras.tar.gz"), "-C",
                        str(a.out), "counters_extras"], check=False)
        subprocess.run(["rm", "-rf", str(extras)], check=False)
        ok = sum(1 for r in result.get("records", []) if r.get("metrics"))
        print(f"counters: {ok} of {len(dicts)} in {result['wall_s']:.0f} s; "
              f"error: {result.get('error')}", flush=True)
    save()
    by = {}
    for r in raw["cases"]:
        if r.get("status") == "ok":
            by.setdefault((r["n"], r["label"]), []).append(r["median_s"])
    for n in a.sizes:
        ref = [c["median_s"] for c in raw["cublas"] if c.get("n") == n and "median_s" in c]
        for label in known:
            if (n, label) in by:
                t = min(by[(n, label)])
                pct = f"{100 * min(ref) / t:5.1f}% of cuBLAS" if ref else ""
                print(f"{n:5d} {label:32s} {t * 1e3:8.3f} ms {pct}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
