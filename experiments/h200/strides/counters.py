"""The stride family's L1 counters on the H200: the CUDA build of the same source under Nsight
Compute, with the L1 pipeline's counters of ``experiments/h200/matvec/driver.py`` (data-pipe
and tag-stage wavefronts, set and bank conflicts, fills from L2, stall reasons).

Asked (round 6, ``findings.md``): gemm-naive runs 9% faster at M = N = K = 3201 than at 3200
while the model charges the 64-B runs of B that straddle two lines a wavefront more (+16%):
does the H200's L1 count that extra wavefront, and what does the aligned case pay instead?
And for matvec-naive, how do the tag stage's set conflicts and the data banks' conflicts
change with the stride class (K = 4096, 4097, 4104, 4112)?

Run on the device, from the repository root after the device preamble of
``experiments/README.md``::

    python3 -m experiments.h200.strides.counters --out $OUT/counters
"""
from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
import time
from pathlib import Path

from experiments.h200.matvec.driver import EXTRA_METRICS
from tiletraffic.analysis.validation.predict import utc_now
from experiments.h200.validation import driver as validation

GEMMS = tuple((family, n) for n in (3200, 3201) for family in ("gemm-naive", "gemm-tiled"))
MATVEC_K = (4096, 4097, 4104, 4112)


def cases() -> list[dict]:
    """The counted launches as validation.driver case dicts (GEMM B = 16; matvec-naive
    M = 4096, work-group 256, as in :mod:`experiments.h200.strides.cases`)."""
    out = [{"family": f, "m": n, "k": n, "n": n, "tile": 16} for f, n in GEMMS]
    out += [{"family": "matvec-naive", "m": 4096, "k": k, "n": None, "tile": 256}
            for k in MATVEC_K]
    for c in out:
        c["id"] = validation.case_id(c)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--ncu-timeout-s", type=float, default=240.0)
    args = ap.parse_args(argv)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    extras = Path(tempfile.mkdtemp(prefix="tt_strides_counters_"))
    grid = cases()
    raw = validation.Recorder(out / "strides_counters.json", {
        "meta": {"created_utc": utc_now(),
                 "command": shlex.join([sys.executable] + sys.argv),
                 "cases": [c["id"] for c in grid]}})
    t0 = time.perf_counter()
    try:
        raw.data["counters"] = validation.counters_stage(grid, extras, args.ncu_timeout_s,
                                                         EXTRA_METRICS)
    except Exception as err:  # noqa: BLE001 - recorded, the file is still written
        raw.data["counters"] = {"error": validation.error_text(err)}
    raw.data["counters_wall_s"] = time.perf_counter() - t0
    raw.save()
    validation.archive_extras(out, extras)
    return 0


if __name__ == "__main__":
    sys.exit(main())
