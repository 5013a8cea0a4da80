"""Time of the check before launch (``simulator.engine.launch_check.check_launch``) of a GEMM
family at M = N = K = size (default gemm-vectorized at 4096, the launch ``tiletraffic run``
checks on representative work-groups), next to the machine's load average (the figure
depends on it).

    PYTHONPATH=. python benchmarks/bench_launch_check.py [--family F] [--size 4096] \
        [--option tm=8 ...] [--repeat 3]

Prints each repetition's wall and CPU time (the check is single-threaded: its CPU time is
what it takes on an idle core) and the medians.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time


def main() -> None:
    import tiletraffic as tt
    from tiletraffic.simulator.engine.launch_check import check_launch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default="gemm-vectorized")
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--option", action="append", default=[], metavar="NAME=INT",
                        help="a family option, e.g. tm=8 (repeatable)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n = args.size
    options = {k: int(v) for k, _, v in (o.partition("=") for o in args.option)}
    sch = tt.build(args.family, m=n, k=n, n=n, **options)
    times, cpus = [], []
    for i in range(args.repeat):
        load = os.getloadavg()
        start, cpu = time.perf_counter(), time.process_time()
        checked = check_launch(sch)
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
        groups = checked.work_groups_checked
        scope = "every work-group" if groups is None else f"{len(groups)} work-groups"
        times.append(elapsed)
        cpus.append(cpu)
        print(f"run {i + 1}: {elapsed:.2f} s wall (reported {checked.time_s:.2f} s), "
              f"{cpu:.2f} s CPU, load average "
              f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {len(os.sched_getaffinity(0))} cores; "
              f"{scope} checked, sum length "
              f"{checked.sum_length} ({checked.sum_length_method}); "
              f"{'clean' if not checked.hazards else checked.hazards}")
    print(f"{args.family} {n}^3 {options or ''}: check before launch median "
          f"{statistics.median(times):.2f} s wall, {statistics.median(cpus):.2f} s CPU (what one idle core takes) over "
          f"{len(times)} runs")


if __name__ == "__main__":
    main()
