"""What a matrix-vector work-item's k-step costs on the H200, by schedule, row stride and
number of busy SMs: the three generated matvec schedules (``matvec-naive`` reads x from
global memory at every k, ``matvec-local`` stages x through local memory in chunks of 256,
``matvec-local-whole`` stages all of x once) over a grid of M (M / 256 work-groups, one per
SM) and K (the row stride of A, K x 4 bytes).

The issue-4 run measured matvec-naive 12% slower than matvec-local-whole at N = 4096 and
8192 but the two builds of x cost the same L1 wavefronts in the time model; at N = 16384
matvec-naive was faster than matvec-local. This script separates the candidates: the row
stride (K), the number of SMs at work (M), and the schedule.

Stages (one device call; ``reports/nvidia-h200/matvec/command.txt``):

1. ``opencl``: every case through NVIDIA's OpenCL driver (``validation.driver.opencl_cases``:
   results checked against a float64 reference, median of ``--repeat`` event-timed
   launches).
2. ``counters``: the CUDA build of the same source under one Nsight Compute run
   (``validation.driver.counters_stage``) with the L1 pipeline's counters added: all data-pipe
   wavefronts, the tag stage's output wavefronts, requests into the L1, fills from L2, and
   the warps' stall reasons.

With ``--busy-sms`` the grid is M = 256 x (8 .. 132) work-groups at K = 12288 instead: the
same work per SM with ever more SMs busy (matvec-naive over matvec-local-whole was 1.13 at 16
work-groups and 1.04 at 132 in the M x K grid).

Run on the device, from the repository root after the device preamble of
``experiments/README.md`` (the recorded runs: ``reports/nvidia-h200/matvec/command.txt``,
``matvec/busy_sms/command.txt``, ``matvec/busy_sms_clocks/command.txt``)::

    python3 -m experiments.h200.matvec.driver --out $OUT
    python3 -m experiments.h200.matvec.driver --busy-sms --skip counters --out $OUT/busy_sms
    python3 -m experiments.h200.matvec.driver --busy-sms --skip opencl \
        --extra-metric lts__cycles_elapsed.avg.per_second --out $OUT/busy_sms_clocks
"""
from __future__ import annotations

import argparse
import datetime as _dt
import logging
import shlex
import sys
import tempfile
import time
from pathlib import Path

from experiments.h200.validation import driver as validation

log = logging.getLogger("h200_matvec")

FAMILIES = ("matvec-naive", "matvec-local", "matvec-local-whole")
TILE = 256
STRIDES_K = (2048, 4096, 4352, 8192, 8448, 12288, 16384)
"""K at M = 4096 (16 work-groups): powers of two and two that are not (17 and 33 x 256)."""
SMS_M = (1024, 16384, 33792)
"""M at K = 4096: 4, 64 and 132 work-groups (one per SM, every SM at 33792)."""
LOCAL_WHOLE_MAX_K = 12288
"""matvec-local-whole keeps all of x in local memory: K x 4 bytes <= 48 KiB."""
BUSY_SMS = (8, 12, 16, 20, 24, 32, 40, 48, 64, 96, 132)
"""``--busy-sms``: work-groups (one per SM) at K = 12288, the same work per SM; A is
M x 48 KiB, 96 MiB and more, so it comes from DRAM in every launch."""

EXTRA_METRICS = (
    "l1tex__data_pipe_lsu_wavefronts.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "l1tex__t_output_wavefronts_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__lsuin_requests.sum",
    "l1tex__m_xbar2l1tex_read_sectors.sum",
    "l1tex__lsu_writeback_active.sum",
    "l1tex__t_set_accesses_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_set_conflicts_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_global_op_ld.sum",
    "sm__cycles_elapsed.avg",
    "l1tex__cycles_active.avg",
    *(f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio"
      for r in ("long_scoreboard", "lg_throttle", "mio_throttle", "short_scoreboard",
                "barrier", "not_selected", "wait", "selected", "math_pipe_throttle",
                "dispatch_stall", "no_instruction", "drain", "membar", "tex_throttle")),
)


def cases(busy_sms: bool = False) -> list[dict]:
    """The (family, M, K) grid as validation.driver case dicts; with ``busy_sms``, the
    :data:`BUSY_SMS` sweep instead."""
    out = []
    grid = [(4096, k) for k in STRIDES_K] + [(m, 4096) for m in SMS_M]
    if busy_sms:
        grid = [(TILE * g, LOCAL_WHOLE_MAX_K) for g in BUSY_SMS]
    for m, k in grid:
        for family in FAMILIES:
            if family == "matvec-local-whole" and k > LOCAL_WHOLE_MAX_K:
                continue
            c = {"family": family, "m": m, "k": k, "n": None, "tile": TILE}
            c["id"] = validation.case_id(c)
            out.append(c)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--device", default="nvidia")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--ncu-timeout-s", type=float, default=240.0)
    ap.add_argument("--skip", action="append", default=[], choices=["opencl", "counters"])
    ap.add_argument("--extra-metric", action="append", default=[],
                    help="one more Nsight Compute metric for the counters stage (repeatable)")
    ap.add_argument("--busy-sms", action="store_true",
                    help="run the BUSY_SMS sweep (K = 12288, 8 to 132 work-groups) instead "
                         "of the M x K grid")
    args = ap.parse_args(argv)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    extras = Path(tempfile.mkdtemp(prefix="tt_matvec_"))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s",
                        datefmt="%H:%M:%S", handlers=[logging.StreamHandler(sys.stderr),
                                                      logging.FileHandler(extras / "log.txt")])
    command = shlex.join([sys.executable] + sys.argv)
    grid = cases(args.busy_sms)
    raw = validation.Recorder(out / "h200_matvec.json", {
        "meta": {"created_utc": _dt.datetime.now(_dt.timezone.utc).strftime(
                     "%Y-%m-%dT%H:%M:%SZ"),
                 "command": command, "opencl_device": args.device, "repeat": args.repeat,
                 "cases": [c["id"] for c in grid]},
        "stage_wall_s": {}})
    validation.METRICS = validation.METRICS + tuple(
        m for m in (*EXTRA_METRICS, *args.extra_metric) if m not in validation.METRICS)
    stages = [("opencl", validation.opencl_cases, (args.device, grid, args.repeat)),
              ("counters", validation.counters_stage, (grid, extras, args.ncu_timeout_s))]
    for name, fn, a in stages:
        if name in args.skip:
            continue
        t0 = time.perf_counter()
        log.info("== %s", name)
        try:
            raw.data[name] = fn(*a)
        except Exception as err:  # noqa: BLE001 - a stage's failure never stops the run
            raw.data[name] = {"error": validation.error_text(err)}
            log.info("   %s failed: %s", name, raw.data[name]["error"])
        raw.data["stage_wall_s"][name] = time.perf_counter() - t0
        raw.save()
    validation.archive_extras(out, extras)
    return 0


if __name__ == "__main__":
    sys.exit(main())
