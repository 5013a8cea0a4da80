"""The row-stride family on the NVIDIA H200 in one device call (issue #14, item 3, gap 1):
matvec-naive M = 4096 at K = 4096..4128 and gemm-naive / gemm-tiled at M = N = K = 3200 and
3201 (:mod:`experiments.h200.strides.cases`).

What one run does, writing everything under ``--out`` (the device's $OUT):

1. device facts: ``nvidia-smi`` (name, driver, clocks), versions, the command line, and the
   ``created_utc`` of the committed predictions (``--predictions``, written by
   :mod:`experiments.h200.strides.predict` before this run) with their SHA-256;
2. every case through OpenCL with tiletraffic's own run path (``tiletraffic.run`` =
   ``gpu.runtime.checked_run.run_on_device``): generated kernel built, 2 warm-up and ``--repeat``
   timed launches (OpenCL profiling events), every distinct output checked against float64
   numpy before its time counts; median, min, max and the spread (max - min) / median. The
   cases run in an interleaved order (K = 4096, 4128, 4097, 4127, ...) so that a drift of
   the clock over the run does not masquerade as a stride effect; the whole matvec family is
   then timed a second time (``--passes``), so each stride has two medians a minute apart.
   A build error, refused launch or wrong result is recorded with its message and the run
   goes on; cases still waiting after ``--budget-s`` seconds are recorded as skipped.

Outputs: ``OUT/strides_raw.json`` (rewritten atomically after every case) and
``OUT/command.txt``. About 60-90 s on an H200 (33 matvec strides x 2 passes at ~0.5 ms x 22
launches, four GEMMs at 10-40 ms x 22 launches, one NVIDIA JIT build per case).

Device call, from the repository root after the device preamble of ``experiments/README.md``::

    PYTHONUNBUFFERED=1 timeout 300 python3 -m experiments.h200.strides.driver --out $OUT

Local rehearsal on PoCL (the tiny cases of ``cases.QUICK``)::

    python -m experiments.h200.strides.driver --quick --out /tmp/strides-quick
"""
from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import platform
import shlex
import subprocess
import sys
import time
import traceback
import warnings
from pathlib import Path

from tiletraffic.analysis.files import atomic_write_text

from experiments.h200.strides import cases as C

PREDICTIONS = Path("reports/nvidia-h200/strides/predictions.json")


def facts() -> dict:
    """Versions, time and ``nvidia-smi`` (recorded, never fatal)."""
    out = {"python": sys.version, "platform": platform.platform(),
           "utc": _dt.datetime.now(_dt.timezone.utc).isoformat()}
    for mod in ("numpy", "pyopencl"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception as e:
            out[mod] = f"unavailable: {e}"
    try:
        out["nvidia_smi"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm,"
             "clocks.mem,memory.total,power.limit", "--format=csv"],
            capture_output=True, text=True, timeout=30).stdout
    except Exception as e:
        out["nvidia_smi"] = f"unavailable: {e}"
    return out


def predictions_stamp(path: Path) -> dict:
    """``created_utc`` and SHA-256 of the predictions file, or why there is none."""
    try:
        data = path.read_bytes()
        return {"path": str(path), "sha256": hashlib.sha256(data).hexdigest(),
                "created_utc": json.loads(data).get("created_utc")}
    except (OSError, ValueError) as e:
        return {"path": str(path), "error": f"{type(e).__name__}: {e}"}


def interleaved(cases: tuple) -> list:
    """Outermost first: 0, n-1, 1, n-2, ... (neighbouring strides far apart in time)."""
    order, lo, hi = [], 0, len(cases) - 1
    while lo <= hi:
        order.append(cases[lo])
        if hi != lo:
            order.append(cases[hi])
        lo, hi = lo + 1, hi - 1
    return order


def run_case(case, device, repeat: int, seed: int) -> dict:
    """One case: built, launched, timed and checked (``tiletraffic.run``); errors recorded."""
    import tiletraffic

    rec = {"id": C.case_id(case), "family": case[1], "m": case[2], "k": case[3],
           "n": case[4], "tile": case[5],
           "stride_multiple_of_128_bytes": C.stride_multiple_of_line(case)}
    t0 = time.perf_counter()
    try:
        dr = tiletraffic.run(C.build(case), device, repeat=repeat, warmup=2, seed=seed)
        d = dr.to_dict()
        d.pop("output_digests", None)
        med = dr.run.median_s
        rec.update(status="ok", checked=bool(dr.check.ok), run=d, median_s=med,
                   min_s=dr.run.min_s, max_s=dr.run.max_s,
                   spread=(dr.run.max_s - dr.run.min_s) / med if med else None)
    except Exception as e:
        rec.update(status="error", checked=False, error_type=type(e).__name__,
                   error=str(e)[:4000], traceback=traceback.format_exc()[-4000:])
    rec["wall_s"] = time.perf_counter() - t0
    return rec


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--repeat", type=int, default=20, help="timed launches per case (>= 10)")
    p.add_argument("--passes", type=int, default=2, help="times the matvec family is run")
    p.add_argument("--device", default="NVIDIA", help="OpenCL device (tiletraffic.run)")
    p.add_argument("--budget-s", type=float, default=150.0,
                   help="skip the cases still waiting after this many seconds")
    p.add_argument("--predictions", type=Path, default=PREDICTIONS)
    p.add_argument("--quick", action="store_true",
                   help="PoCL rehearsal: the tiny cases, repeat 10, one pass")
    a = p.parse_args(argv)
    if a.quick:
        a.repeat, a.passes, a.device = 10, 1, "Portable"
    if a.repeat < 10:
        p.error(f"--repeat {a.repeat}: at least 10 timed launches are needed")
    if a.passes < 1:
        p.error(f"--passes {a.passes}: at least one pass is needed")
    warnings.simplefilter("ignore")
    a.out.mkdir(parents=True, exist_ok=True)
    command = shlex.join([sys.executable, "-m", "experiments.h200.strides.driver",
                          *(argv if argv is not None else sys.argv[1:])])
    atomic_write_text(a.out / "command.txt", command + "\n")
    family = C.QUICK if a.quick else C.FULL
    matvec = tuple(c for c in family if c[1].startswith("matvec"))
    gemm = tuple(c for c in family if not c[1].startswith("matvec"))
    plan = [(1, c) for c in interleaved(matvec)] + [(1, c) for c in gemm] + \
        [(k, c) for k in range(2, a.passes + 1) for c in interleaved(matvec)[::-1]]
    start = time.perf_counter()
    raw = {"command": command, "facts": facts(), "quick": a.quick, "repeat": a.repeat,
           "passes": a.passes, "predictions": predictions_stamp(a.predictions),
           "cases": []}
    path = a.out / "strides_raw.json"

    def save():
        raw["elapsed_s"] = time.perf_counter() - start
        atomic_write_text(path, json.dumps(raw, indent=1) + "\n")

    save()
    for i, (pass_no, case) in enumerate(plan, start=1):
        if time.perf_counter() - start > a.budget_s:
            rec = {"id": C.case_id(case), "family": case[1], "status": "skipped",
                   "checked": False, "error": f"budget of {a.budget_s} s spent"}
        else:
            rec = run_case(case, a.device, a.repeat, seed=case[3])
        rec["pass"] = pass_no
        raw["cases"].append(rec)
        save()
        med = rec.get("median_s")
        print(f"[{i}/{len(plan)}] pass {pass_no} {rec['id']}: {rec['status']}"
              + (f" {med * 1e3:.4f} ms (spread {rec['spread']:.1%})" if med else "")
              + (f" {rec.get('error', '')[:200]}" if rec["status"] != "ok" else "")
              + f"  [{time.perf_counter() - start:.1f} s]", flush=True)
    bad = [r["id"] for r in raw["cases"] if r["status"] != "ok" or not r["checked"]]
    print(f"done in {time.perf_counter() - start:.1f} s; {len(raw['cases']) - len(bad)} ok, "
          f"{len(bad)} not ({', '.join(bad) or 'none'})", flush=True)
    return 0 if not bad else 1


if __name__ == "__main__":
    raise SystemExit(main())
