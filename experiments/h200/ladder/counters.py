"""Nsight Compute counters of the GEMM ladder's CUDA build (issue #13 item 5, target
"requests and sectors of every new schedule equal Nsight's counters exactly").

Nsight Compute profiles no OpenCL kernel, so the SAME generated OpenCL C of every ladder
case (:mod:`experiments.h200.ladder.cases`) is compiled as CUDA behind
:mod:`experiments.h200.cuda`'s prelude and launched once under one ``ncu`` run, through the
validation driver's counter stage (:func:`experiments.h200.validation.driver.counters_stage`:
the metrics of ``METRICS``, ``--cache-control all --clock-control none``, every result
checked against float64 numpy). The comparison with the model needs no GPU:
:mod:`experiments.h200.ladder.counters_table`.

Device call, from the repository root after the device preamble of ``experiments/README.md``::

    PYTHONUNBUFFERED=1 timeout 300 python3 -m experiments.h200.ladder.counters --out $OUT

Writes ``OUT/ladder_counters.json`` (one record per case: geometry, CUDA function
attributes incl. registers, the check, the metrics) and ``OUT/counters_extras/`` (ncu logs).
"""
from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

from experiments.h200.ladder import cases as C

SIZES = (1024,)
"""Counts are exact at any size; 1024 keeps the ncu replay short (about 40 passes a kernel)."""


STALL_REASONS = ("barrier", "branch_resolving", "dispatch_stall", "drain", "imc_miss",
                 "lg_throttle", "long_scoreboard", "math_pipe_throttle", "membar",
                 "mio_throttle", "misc", "no_instruction", "not_selected", "selected",
                 "short_scoreboard", "sleeping", "tex_throttle", "wait")
STALL_METRICS = (("smsp__issue_active.avg.pct_of_peak_sustained_active",
                  "smsp__warps_active.avg.per_cycle_active",
                  "smsp__warps_eligible.avg.per_cycle_active",
                  "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
                  "sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_active",
                  "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
                  "smsp__inst_executed_pipe_lsu.sum", "smsp__inst_executed_pipe_fma.sum",
                  "smsp__inst_executed_pipe_alu.sum", "smsp__inst_executed_pipe_uniform.sum")
                 + tuple(f"smsp__warps_issue_stalled_{r}.sum" for r in STALL_REASONS))
"""``--stalls``: where the sub-groups' cycles go (Nsight Compute's WarpStateStats counters,
summed over the sub-partitions) and how busy the issue slots and pipes are."""


def case_dicts(sizes=SIZES) -> list[dict]:
    """The ladder's cases (LADDER + HAND_TUNED) as the validation driver's case dicts."""
    from experiments.h200.validation.driver import case_id
    out = []
    for n in sizes:
        for label, family, tile, options in C.CASES:
            c = {"label": label, "family": family, "m": n, "k": n, "n": n, "tile": tile,
                 "options": dict(options)}
            c["id"] = case_id(c)
            out.append(c)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    p.add_argument("--timeout-s", type=float, default=240.0, help="for the whole ncu run")
    p.add_argument("--labels", nargs="*", default=None, help="only these case labels")
    p.add_argument("--stalls", action="store_true",
                   help="also the warp-state metrics: issue activity, each stall reason, "
                        "pipe utilisation and achieved occupancy (STALL_METRICS)")
    a = p.parse_args(argv)
    from experiments.h200.validation.driver import counters_stage
    a.out.mkdir(parents=True, exist_ok=True)
    extras = a.out / "counters_extras"
    extras.mkdir(exist_ok=True)
    command = shlex.join([sys.executable, "-m", "experiments.h200.ladder.counters",
                          *(argv if argv is not None else sys.argv[1:])])
    cases = [c for c in case_dicts(a.sizes) if not a.labels or c["label"] in a.labels]
    t0 = time.perf_counter()
    result = counters_stage(cases, extras, a.timeout_s, STALL_METRICS if a.stalls else ())
    result["command"] = command
    result["cases"] = cases
    result["wall_s"] = time.perf_counter() - t0
    tmp = a.out / "ladder_counters.json.tmp"
    tmp.write_text(json.dumps(result, indent=1))
    tmp.replace(a.out / "ladder_counters.json")
    ok = sum(1 for r in result.get("records", []) if r.get("metrics"))
    print(f"ladder counters: {ok} of {len(cases)} cases counted in {result['wall_s']:.0f} s;"
          f" error: {result.get('error')}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
