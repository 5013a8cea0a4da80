"""Speed of the path every command takes by default: ``tiletraffic simulate`` of each built-in
GEMM family and of each OpenCL example's launch file at N = 1024 and 4096, beside full
execution (every work-group, the whole K loop, values off) timed at a small N.

For each case and N, printed side by side in one run:

- ``command s``: the wall time of ``tiletraffic simulate CASE`` at that N, as a user runs it
  (a fresh process: Python's start and the imports included, about half a second);
- ``counts s``: the counts alone in this process
  (:func:`tiletraffic.simulator.engine.fast_path.count_launch`, the default path of a launch
  this large) and how they were taken (``classes``: one work-group per class; ``+K``: the K
  loop's counts extrapolated from three short K);
- ``full@n s``: full execution in this process at the small N (``--small``), the path a
  launch file took before; ``full@N est s``: that time scaled by the work (work-item loop
  steps) to N, the time full execution would take; ``ratio``: ``counts s`` / ``full@N est
  s``.

Every fast count is compared with full execution at the small N (the same counts or the
script stops), and the counts at N = 4096 of the launch files with closed forms are checked
against them (mm_tiled: 2·N³/TS loads).

Then ``check gemm-tiled`` at N = 1024 as it ran before (every work-group with values) and as
it runs now (every work-group, values off: the same hazards), side by side.

    python benchmarks/bench_fast_path.py [--sizes 1024 4096] [--small 256] [--no-check]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "opencl"

FAMILIES = ("gemm-naive", "gemm-tiled", "gemm-vectorized", "gemm-register-blocked",
            "gemm-prefetch", "gemm-warp-tiled")


def launch_sizes(name: str, n: int) -> dict[str, int]:
    """The sizes of the launch file ``name`` at N = ``n`` (every size of a GEMM or a
    transpose n, a matrix-vector product n x n, a reduction of n·n elements)."""
    return {"mm_tiled": {"N": n}, "mm_helper": {"M": n, "K": n, "N": n},
            "mm_reg2x2": {"M": n, "K": n, "N": n}, "matvec_chunked": {"M": n, "K": n},
            "transpose_padded": {"N": n}, "reduce_local": {"n": n * n}}[name]


def cases() -> list[str]:
    return [*FAMILIES, *(str(p.relative_to(ROOT)) for p in sorted(EXAMPLES.glob("*.toml")))]


def build(case: str, n: int):
    import tiletraffic as tt

    if case.endswith(".toml"):
        return tt.build(str(ROOT / case), set=launch_sizes(Path(case).stem, n))
    return tt.build(case, n, n, n)


def argv(case: str, n: int) -> list[str]:
    if case.endswith(".toml"):
        sets = [a for key, v in launch_sizes(Path(case).stem, n).items()
                for a in ("--set", f"{key}={v}")]
        return ["simulate", case, *sets]
    return ["simulate", case, "--m", str(n), "--k", str(n), "--n", str(n)]


def command_s(args: list[str]) -> float:
    """Wall time of ``tiletraffic ARGS`` in a fresh process (stdout discarded)."""
    code = "import sys; from tiletraffic.analysis.cli import main; sys.argv = " \
           f"['tiletraffic'] + {args!r}; main()"
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"tiletraffic {' '.join(args)} failed: {done.stderr.strip()}")
    return took


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def how(counted) -> str:
    return ("classes" if counted.by_classes else "every work-group") + \
        ("+K" if counted.by_classes and counted.k_extrapolated else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--small", type=int, default=256)
    parser.add_argument("--no-check", action="store_true")
    args = parser.parse_args()

    from tiletraffic.simulator.engine.accelerators import Accelerators
    from tiletraffic.simulator.engine.budget import work_item_steps
    from tiletraffic.simulator.engine.fast_path import count_launch

    full_path = Accelerators()   # every work-group, the whole K loop
    print(f"{'case':42s} {'N':>5s} {'command s':>10s} {'counts s':>9s} {'path':>9s} "
          f"{'full@' + str(args.small) + ' s':>10s} {'full@N est s':>13s} {'ratio':>8s}")
    for case in cases():
        small = build(case, args.small)
        full, full_s = timed(lambda: count_launch(small, accelerators=full_path))
        fast_small = count_launch(small)
        if fast_small.counts != full.counts:
            raise SystemExit(f"{case} at N = {args.small}: the fast path's counts differ "
                             "from full execution's")
        for n in args.sizes:
            sch = build(case, n)
            counted, counts_s = timed(lambda: count_launch(sch))
            if case.endswith("mm_tiled.toml"):
                assert counted.counts.global_load_elems == 2 * n ** 3 // 16
            scaled = full_s * work_item_steps(sch) / work_item_steps(small)
            print(f"{case:42s} {n:5d} {command_s(argv(case, n)):10.2f} {counts_s:9.2f} "
                  f"{how(counted):>9s} {full_s:10.2f} {scaled:13.1f} "
                  f"{counts_s / scaled:8.4f}", flush=True)
    if not args.no_check:
        check_side_by_side()


def check_side_by_side(n: int = 1024) -> None:
    """``check gemm-tiled`` at ``n``: every work-group with values (as before) and without
    (as now), the same hazards."""
    import numpy as np

    import tiletraffic as tt
    from tiletraffic.simulator.engine.data_inputs import random_inputs
    from tiletraffic.simulator.model.sequence_run import simulate

    sch = tt.build("gemm-tiled", n, n, n)
    inputs = random_inputs(sch, np.random.default_rng(1))
    before, before_s = timed(lambda: simulate(sch, inputs, hazards="report",
                                              limits=None).hazards)
    now, now_s = timed(lambda: tt.check(sch))
    assert [h.__dict__ for h in before] == [h.__dict__ for h in now]
    print(f"\ncheck gemm-tiled {n}³: every work-group with values {before_s:.2f} s, "
          f"without (now) {now_s:.2f} s, ratio {now_s / before_s:.3f}; command now "
          f"{command_s(['check', 'gemm-tiled', '--m', str(n), '--k', str(n), '--n', str(n)]):.2f}"
          " s")


if __name__ == "__main__":
    main()
