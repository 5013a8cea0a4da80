"""What a broadcast operand x[k] costs beside strided requests from DRAM, by where x lives,
the row stride and the number of busy compute units (issue #14's ranking misses:
matvec-naive against matvec-local / -local-whole).

calibrate's ``strided_read_x`` measures one point of this grid (d = 0, as many work-groups
as rows fit its DRAM buffer); this script measures the grid: ``strided_read`` with each
work-item its own row (no operand), ``strided_read_xglobal`` and ``strided_read_xlocal``
(``tiletraffic.gpu.devices.microbench``), rows 4096 + d words apart (d = 0: one bank, d = 1: 32
banks), over 16, 64 and 132 work-groups of 256 (one per compute unit). Each value is the
cycles of one sub-group's step: the time of n more steps (lengths n and 2n, so the launch
cancels) x the clock / the 8 sub-groups of a work-group, as calibrate computes it.

Run on the device after the preamble of ``experiments/README.md``::

    python3 -m experiments.h200.matvec.xprobe --device NVIDIA --out $OUT/xprobe.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys

from tiletraffic.analysis.calibrate.calibrate import per_step_s
from tiletraffic.gpu.devices import microbench as mb
from tiletraffic.gpu.devices.device import select_device

BASE_WORDS = 4096
OFFSETS_WORDS = (0, 1)
WORK_GROUPS = (16, 64, 132)
KINDS = ("none", "global", "local")


def step_cycles(target, kind: str, stride_words: int, groups: int, n: int, repeat: int,
                clock_hz: float) -> dict:
    """Median seconds at lengths n and 2n and the sub-group cycles of one more step."""
    def run(length: int) -> list[float]:
        if kind == "none":
            return mb.strided_read(target, stride_words, length, groups, repeat, own_rows=True)
        return mb.strided_read_x(target, stride_words, length, groups, repeat, kind)

    short, long = run(n), run(2 * n)
    sub_groups = mb.local_size(target) // 32
    cycles = per_step_s(statistics.median(long), statistics.median(short), n) * clock_hz / sub_groups
    return {"kind": kind, "stride_words": stride_words, "work_groups": groups, "n": n,
            "short_s": short, "long_s": long, "sub_group_cycles_per_step": cycles}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default=None)
    p.add_argument("--out", required=True)
    p.add_argument("--n", type=int, default=2048)
    p.add_argument("--repeat", type=int, default=10)
    a = p.parse_args(argv)
    target = select_device(a.device)
    clock_hz = target.device.max_clock_frequency * 1e6
    rows = []
    for groups in WORK_GROUPS:
        for d in OFFSETS_WORDS:
            for kind in KINDS:
                r = step_cycles(target, kind, BASE_WORDS + d, groups, a.n, a.repeat, clock_hz)
                rows.append(r)
                print(f"{kind:6s} d={d} groups={groups:3d}: "
                      f"{r['sub_group_cycles_per_step']:.2f} cycles/step", flush=True)
    with open(a.out, "w") as f:
        json.dump({"device": target.name, "clock_hz": clock_hz, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
