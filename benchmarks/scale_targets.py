"""The scale targets of the default path, each measured in one run: its time, its target
and their ratio (below 1 meets it), with the machine's load average beside every figure.

- ``counts``: the exact counts of the path ``simulate`` takes
  (:func:`tiletraffic.simulator.engine.fast_path.count_launch`) at N = 4096 and 8192
  (M = N = K; a matrix-vector product N x N, a reduction of N·N elements) within 2 s, for
  every built-in GEMM family (gemm-split-k included) and every OpenCL example launch file;
  ``path`` says how they were taken (``classes``: one work-group per class; ``+K``: the K
  loop's counts from three short K) and ``closed form`` whether they equal the closed forms
  where the schedule has them;
- ``oclgrind``: the same counts as Oclgrind's (``crosscheck``'s run: the kernel on Oclgrind
  with its instruction counter, in a worker process whose CPU time is counted) at N = 128
  and 256, at least 1000 times faster: the speed-up in wall time and in CPU time (the
  fast path's time the best of three calls, each on a schedule built afresh);
- ``check``: ``tiletraffic.check`` (every hazard kind of every work-group: races in local
  and global memory, uninitialised reads, out-of-bounds, barrier divergence) of every GEMM
  family at 1024³ within 10 s; ``path`` says how: ``classes`` where the launch was proved
  clean on its work-group classes (:mod:`tiletraffic.simulator.engine.class_check`: the
  representatives and extreme members of every class, and every work-group executing only
  its outputs' accesses), else ``every work-group``;
- ``launch check``: the check before launch
  (:func:`tiletraffic.simulator.engine.launch_check.check_launch`: one representative
  work-group per class of identical traffic and its extreme members, the edges among them,
  hazards at the real K,
  the sum length from three short K) of every GEMM family at 4096³ within 5 s.

Each row has the wall time and this process's CPU time: on a machine shared with other
work the wall time grows with the load, the CPU time much less (an idle core's time is
about the CPU time). ``ratio`` is the wall time over the target, ``cpu ratio`` the CPU
time's.

    python benchmarks/scale_targets.py [--only counts oclgrind check launch-check]
        [--oclgrind-sizes 128 256]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "opencl"
GEMM_FAMILIES = ("gemm-naive", "gemm-tiled", "gemm-vectorized", "gemm-register-blocked",
                 "gemm-prefetch", "gemm-warp-tiled", "gemm-split-k")
OCLGRIND_CASES = ("gemm-tiled", "examples/opencl/mm_tiled.toml")
OCLGRIND_KEYS = ("global_load_elems", "global_store_elems", "local_load_elems",
                 "local_store_elems", "barriers")


def launch_sizes(name: str, n: int) -> dict[str, int]:
    """The sizes of the example launch file ``name`` at N = ``n``."""
    return {"mm_tiled": {"N": n}, "mm_helper": {"M": n, "K": n, "N": n},
            "mm_reg2x2": {"M": n, "K": n, "N": n}, "matvec_chunked": {"M": n, "K": n},
            "transpose_padded": {"N": n}, "reduce_local": {"n": n * n}}[name]


def build(case: str, n: int):
    import tiletraffic as tt

    if case.endswith(".toml"):
        return tt.build(str(ROOT / case), set=launch_sizes(Path(case).stem, n))
    return tt.build(case, n, n, n)


def measured(fn):
    """``(value, wall s, CPU s, load average)`` of ``fn()``."""
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return value, time.perf_counter() - wall, time.process_time() - cpu, os.getloadavg()[0]


def row(target: str, case: str, n, wall: float, cpu: float, limit: float, how: str,
        load: float) -> None:
    print(f"{target:12s} {case:36s} {n!s:>5s} {wall:8.2f} {cpu:8.2f} {limit:7.1f} "
          f"{wall / limit:6.2f} {cpu / limit:6.2f}  {load:5.1f}  {how}", flush=True)


def counts_target(sizes=(4096, 8192)) -> None:
    from tiletraffic.analysis.api.schedules import closed_form, closed_form_differences
    from tiletraffic.simulator.engine.fast_path import count_launch

    cases = [*GEMM_FAMILIES, *(str(p.relative_to(ROOT)) for p in sorted(EXAMPLES.glob("*.toml")))]
    for case in cases:
        for n in sizes:
            sch = build(case, n)
            counted, wall, cpu, load = measured(lambda: count_launch(sch))
            path = ("classes" if counted.by_classes else "every work-group") + \
                ("+K" if counted.by_classes and counted.k_extrapolated else "")
            formula = closed_form(sch)
            agrees = "-" if formula is None else \
                "agrees" if not closed_form_differences(formula, counted.counts.to_dict()) \
                else "DIFFERS"
            row("counts", case, n, wall, cpu, 2.0, f"{path}; closed form {agrees}", load)


def oclgrind_target(sizes=(128, 256)) -> None:
    import resource

    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_counts
    from tiletraffic.simulator.engine.fast_path import count_launch

    def children_cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    for case in OCLGRIND_CASES:
        for n in sizes:
            sch = build(case, n)
            before = children_cpu()
            ocl, ocl_wall, _, ocl_load = measured(lambda: oclgrind_counts(sch, timeout_s=3600))
            ocl_cpu = children_cpu() - before   # Oclgrind runs in a worker process
            # the fast path: the best of three (one call takes milliseconds, well inside the
            # noise of a shared machine), each on a fresh schedule (no probe cached)
            fresh = [build(case, n) for _ in range(3)]
            runs = [measured(lambda: count_launch(one)) for one in fresh]
            counted, wall, cpu, load = min(runs, key=lambda r: r[1])
            ours, theirs = counted.counts.to_dict(), ocl.to_dict()
            equal = all(ours[k] == theirs[k] for k in OCLGRIND_KEYS)
            print(f"{'oclgrind':12s} {case:36s} {n:5d} {wall:8.3f} {cpu:8.3f}  Oclgrind "
                  f"{ocl_wall:.1f} s wall, {ocl_cpu:.1f} s CPU (load {ocl_load:.1f}): "
                  f"{ocl_wall / wall:.0f}x faster in wall time, {ocl_cpu / max(cpu, 1e-3):.0f}x "
                  f"in CPU time (target 1000x); counts {'equal' if equal else 'DIFFER'}  "
                  f"load {load:.1f}", flush=True)


def check_target(n: int = 1024) -> None:
    import tiletraffic as tt
    from tiletraffic.simulator.engine.accelerators.class_safety import (classes_problem,
                                                                        translation_problem)
    from tiletraffic.simulator.engine.class_check import worth_classes
    from tiletraffic.simulator.ir.sequence import is_sequence

    for family in GEMM_FAMILIES:
        sch = tt.build(family, n, n, n)
        hazards, wall, cpu, load = measured(lambda: tt.check(sch))
        kernels = sch.kernels if is_sequence(sch) else (sch,)
        by_classes = worth_classes(sch) and not hazards and all(
            classes_problem(k) is None and translation_problem(k) is None for k in kernels)
        row("check", family, n, wall, cpu, 10.0,
            f"{'classes' if by_classes else 'every work-group'}; {len(hazards)} hazard(s)",
            load)


def launch_check_target(n: int = 4096) -> None:
    import tiletraffic as tt
    from tiletraffic.simulator.engine.launch_check import check_launch

    for family in GEMM_FAMILIES:
        sch = tt.build(family, n, n, n)
        checked, wall, cpu, load = measured(lambda: check_launch(sch))
        row("launch check", family, n, wall, cpu, 5.0,
            f"{checked.scope.split(' (')[0]}; sum length {checked.sum_length}; "
            f"{'clean' if not checked.hazards else checked.hazards}", load)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", default=["counts", "oclgrind", "check",
                                                      "launch-check"])
    parser.add_argument("--oclgrind-sizes", type=int, nargs="+", default=[128, 256])
    args = parser.parse_args()
    print(f"{len(os.sched_getaffinity(0))} cores; python {sys.version.split()[0]}")
    print(f"{'target':12s} {'case':36s} {'N':>5s} {'wall s':>8s} {'cpu s':>8s} "
          f"{'target':>7s} {'ratio':>6s} {'cpu':>6s}  {'load':>5s}  how")
    if "counts" in args.only:
        counts_target()
    if "check" in args.only:
        check_target()
    if "launch-check" in args.only:
        launch_check_target()
    if "oclgrind" in args.only:
        oclgrind_target(args.oclgrind_sizes)


if __name__ == "__main__":
    main()
