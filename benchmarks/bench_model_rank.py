"""Speed of the traffic model as a tuner's ranking function (issue #13 "Speed" target).

Target: "the model ranks 200 candidates at N = 4096 in <= 60 s on 2 cores", i.e.
``tiletraffic.model(schedule, "nvidia-h200")`` of one GEMM candidate at M = N = K = 4096 in
about 0.3 s of one core (a tuner may use 2 processes).

Candidates, like a tuner's: gemm-tiled with tile 8, 16, 32, and gemm-register-blocked,
gemm-vectorized and gemm-prefetch with tile (work-group columns) in {8, 16}, wg_rows in
{8, 16}, tm and tn in {2, 4, 8}, bk in {8, 16, 32}; the ones the builder rejects or that
exceed 1024 work-items or 48 KiB of local memory are skipped; ``--candidates`` of them are
kept (the gemm-tiled ones, then a seeded sample of the rest). Each is modelled in a pool of
``--processes`` processes; printed: the wall time of the whole ranking, the per-case median
and slowest, and the model's top five.

Measured (2 cores shared with other work, load average 1.7-2.0, one run after the other):
200 candidates in 18.8 s (median 0.17 s per case, slowest 0.39 s: target met, ratio 0.31);
a checkout of the code before the blocked loops (``simulator/loop_blocks.py``, commit
31b38b8) took 127.7 s (median 1.04 s, slowest 4.75 s) for the same candidates, with the same
top five and every figure of every candidate identical. After the register-blocked
families' staged tile loads (commit 3344794: straight-line statements, not a loop that
:mod:`simulator.engine.accelerators.loop_blocks` can block), 35.1 s on 2 idle cores (median 0.29 s, slowest
1.27 s; ratio 0.59), 61.9 s beside a full test run.

The model with its loops run iteration by iteration (``Accelerators(loop_blocks=False)``:
:mod:`simulator.engine.accelerators.loop_blocks` off, everything else as now) is timed side by side on
``--unblocked-cases`` cases (the ones with the largest register tiles), in a fresh process
each, with a check that both give identical results. The old path (whole K loop executed,
``k_extrapolation=False``, private loop nests statement by statement,
``private_nests=False``, and no blocked loops) is timed side by side on
``--old-cases`` cases (gemm-tiled with tile 16, then the register-blocked ones the old
path runs fastest: a conservative ratio), in a fresh process each, with a check that both
give identical results. (The probing of work-group classes in one batch, the race
detector's union tests and the memory observer's memory of repeated local accesses and its
one-work-group figures of accesses that do not depend on the work-group, also new, have no
switch; ``--old-checkout DIR`` times a checkout of the code before this work
instead (a checkout of the same tree before this work, e.g. ``git archive 1971542``
unpacked: a later main also differs in the model itself).)

    python benchmarks/bench_model_rank.py [--n 4096] [--candidates 200] [--processes 2]
        [--unblocked-cases 3] [--old-cases 3] [--old-checkout DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor

FAMILIES = ("gemm-register-blocked", "gemm-vectorized", "gemm-prefetch")
LOCAL_LIMIT_BYTES = 48 * 1024
WORK_ITEM_LIMIT = 1024


def candidates(n: int, count: int, seed: int = 0) -> list[tuple[str, dict]]:
    """Tuner-like (family, options) pairs that build at M = N = K = ``n`` and fit."""
    from tiletraffic.simulator.kernels.families import ScheduleError, build

    tiled = [("gemm-tiled", {"tile": t}) for t in (8, 16, 32)]
    rest = []
    for family in FAMILIES:
        for tile in (8, 16):
            for wg_rows in (8, 16):
                for tm in (2, 4, 8):
                    for tn in (2, 4, 8):
                        for bk in (8, 16, 32):
                            rest.append((family, {"tile": tile, "wg_rows": wg_rows, "tm": tm,
                                                  "tn": tn, "bk": bk}))
    fitting = []
    for family, options in tiled + rest:
        try:
            sch = build(family, n, n, n, **options)
        except ScheduleError:
            continue
        if sch.work_group_items > WORK_ITEM_LIMIT or sch.local_mem_bytes > LOCAL_LIMIT_BYTES:
            continue
        fitting.append((family, options))
    first = [c for c in fitting if c[0] == "gemm-tiled"]
    others = [c for c in fitting if c[0] != "gemm-tiled"]
    random.Random(seed).shuffle(others)
    return (first + others)[:count]


def model_one(case: tuple[str, dict, int]) -> tuple[float, float, dict]:
    """(seconds, predicted time s, model figures) of one candidate, modelled here."""
    import tiletraffic as tt

    family, options, n = case
    warnings.simplefilter("ignore")
    sch = tt.build(family, m=n, k=n, n=n, **options)
    t0 = time.perf_counter()
    launch = tt.model(sch, "nvidia-h200")
    return time.perf_counter() - t0, launch.prediction.predicted_time_s, launch.to_dict()


_CHILD = """
import json, sys, time, warnings
warnings.simplefilter("ignore")
import tiletraffic as tt
family, options, n, accelerators = json.loads(sys.argv[1])
sch = tt.build(family, m=n, k=n, n=n, **options)
t0 = time.perf_counter()
if accelerators is None:   # another checkout: its own defaults and environment switches
    launch = tt.model(sch, "nvidia-h200")
else:
    launch = tt.model(sch, "nvidia-h200", accelerators=tt.Accelerators(**accelerators))
print(json.dumps([time.perf_counter() - t0, launch.to_dict()], default=repr))
"""


def old_path(family: str, options: dict, n: int, checkout: str | None,
             unblocked_only: bool = False) -> tuple[float, dict]:
    """(seconds, figures) of the old path, in a fresh process; ``unblocked_only``: the
    model of today with only its blocked loops off (``Accelerators(loop_blocks=False)``)."""
    env = dict(os.environ)
    cwd = None
    if checkout:   # a checkout from before the accelerators' options: its switches
        env["TILETRAFFIC_LOOP_BLOCKS"] = "0"
        env["PYTHONPATH"] = checkout
        cwd = "/"
        accelerators = None
    elif unblocked_only:
        accelerators = {"work_group_classes": True, "private_nests": True,
                        "loop_blocks": False, "k_extrapolation": True}
    else:
        accelerators = {"work_group_classes": True, "private_nests": False,
                        "loop_blocks": False, "k_extrapolation": False}
    out = subprocess.run([sys.executable, "-c", _CHILD,
                          json.dumps([family, options, n, accelerators])],
                         env=env, cwd=cwd, capture_output=True, text=True, check=True)
    seconds, figures = json.loads(out.stdout.strip().splitlines()[-1])
    return seconds, figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=4096, help="M = N = K (default 4096)")
    ap.add_argument("--candidates", type=int, default=200)
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--old-cases", type=int, default=3,
                    help="cases timed by the old path too (0: none)")
    ap.add_argument("--unblocked-cases", type=int, default=3,
                    help="cases timed with blocked loops off too (0: none)")
    ap.add_argument("--old-checkout", default=None,
                    help="time the old path from this checkout (PYTHONPATH) instead of the "
                         "in-tree switches")
    args = ap.parse_args()
    cases = candidates(args.n, args.candidates)
    print(f"{len(cases)} candidates at M = N = K = {args.n}, {args.processes} processes")
    t0 = time.perf_counter()
    with ProcessPoolExecutor(args.processes) as pool:
        results = list(pool.map(model_one, [(f, o, args.n) for f, o in cases]))
    wall = time.perf_counter() - t0
    seconds = [r[0] for r in results]
    slowest = max(range(len(cases)), key=lambda i: seconds[i])
    print(f"ranking wall time {wall:.1f} s (target 60 s: ratio {wall / 60:.2f}); per case "
          f"median {statistics.median(seconds):.2f} s, mean {statistics.mean(seconds):.2f} s, "
          f"slowest {seconds[slowest]:.2f} s ({cases[slowest][0]} {cases[slowest][1]})")
    order = sorted(range(len(cases)), key=lambda i: results[i][1])
    for rank, i in enumerate(order[:5], start=1):
        print(f"  #{rank} predicted {results[i][1] * 1e3:8.3f} ms  {cases[i][0]} {cases[i][1]}")
    if args.unblocked_cases:
        print("blocked loops off side by side, fresh process each:")
        # the candidates with the largest register tiles and K steps: most loop work
        heavy = sorted((c for c in cases if c[0] != "gemm-tiled"),
                       key=lambda c: (-c[1]["tm"] * c[1]["tn"], -c[1]["bk"],
                                      -c[1]["tile"] * c[1]["wg_rows"], c[0]))
        for family, options in heavy[:args.unblocked_cases]:
            new_s, _, new_figures = model_one((family, options, args.n))
            old_s, old_figures = old_path(family, options, args.n, None, unblocked_only=True)
            same = json.loads(json.dumps(new_figures, default=repr)) == old_figures
            print(f"  {family} {options}: unblocked {old_s:.2f} s, blocked {new_s:.2f} s, "
                  f"ratio {old_s / new_s:.1f}x, results {'identical' if same else 'DIFFER'}")
    if args.old_cases:
        which = "checkout " + args.old_checkout if args.old_checkout else \
            "in-tree switches"
        print(f"old path ({which}) side by side, fresh process each:")
        # gemm-tiled with tile 16, then the register-blocked candidates the old path runs
        # fastest (fewest K steps and private accumulators): a conservative ratio
        tiled = [c for c in cases if c == ("gemm-tiled", {"tile": 16})] or cases[:1]
        blocked = sorted((c for c in cases if c[0] != "gemm-tiled"),
                         key=lambda c: (-c[1]["bk"], c[1]["tm"] * c[1]["tn"],
                                        c[1]["tile"] * c[1]["wg_rows"], c[0]))
        picks = (tiled + blocked)[:args.old_cases]
        for family, options in picks:
            new_s, _, new_figures = model_one((family, options, args.n))
            old_s, old_figures = old_path(family, options, args.n, args.old_checkout)
            same = json.loads(json.dumps(new_figures, default=repr)) == old_figures
            print(f"  {family} {options}: old {old_s:.2f} s, new {new_s:.2f} s, "
                  f"ratio {old_s / new_s:.1f}x, results {'identical' if same else 'DIFFER'}")


if __name__ == "__main__":
    main()
