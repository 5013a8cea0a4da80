"""The simulator's memory and time estimates (simulator/engine/budget.py) next to measured peaks.

Runs each launch through the command line in a fresh process under ``/usr/bin/time -f
"%M %e"`` and prints peak resident memory and wall time, the estimate and their ratio. The
estimate is meant as an upper envelope of memory (ratio estimate/measured >= 1) and an
order of magnitude for time.

    python benchmarks/bench_budget.py
"""
from __future__ import annotations

import shutil
import subprocess
import sys

import tiletraffic as tt
from tiletraffic.simulator.engine.budget import estimate_simulation

CASES = [
    # (family, m, k, n, tile, values, classes)
    ("gemm-tiled", 1024, 64, 1024, 16, True, False),
    ("gemm-tiled", 1024, 64, 1024, 16, False, False),
    ("gemm-naive", 2048, 8, 2048, 1, False, False),
    ("gemm-tiled", 2000, 2000, 2000, 1, False, True),
    ("gemm-tiled", 4000, 40, 4000, 1, False, True),
    ("matvec-naive", 4_000_000, 4, None, 1, True, False),
    ("gemm-naive", 512, 512, 512, 16, True, False),
    # long loops of one small work-group, run one iteration at a time (barriers)
    ("gemm-tiled", 1, 40000, 1, 16, True, False),
    ("gemm-tiled", 1, 40000, 1, 16, False, True),
    ("gemm-register-blocked", 16, 20000, 16, 16, True, False),
]


def measure(family, m, k, n, tile, values, classes) -> tuple[float, float]:
    cmd = [sys.executable, "-m", "tiletraffic", "simulate", family, "--m", str(m), "--k", str(k),
           "--tile", str(tile), "--no-limits", "--values" if values else "--counts-only"]
    if n is not None:
        cmd += ["--n", str(n)]
    out = subprocess.run(["/usr/bin/time", "-f", "%M %e", *cmd], capture_output=True, text=True,
                         check=True)
    kb, seconds = out.stderr.strip().splitlines()[-1].split()
    return int(kb) * 1024, float(seconds)


def main() -> None:
    if not shutil.which("time") and not __import__("os").path.exists("/usr/bin/time"):
        sys.exit("needs /usr/bin/time (apt-get install time)")
    print(f"{'launch':44s} {'MiB meas':>9s} {'MiB est':>8s} {'ratio':>6s} "
          f"{'s meas':>7s} {'s est':>7s}")
    for case in CASES:
        family, m, k, n, tile, values, classes = case
        sch = tt.build(family, m, k, n, tile)
        est = estimate_simulation(sch, compute_values=values, work_group_classes=classes)
        mem, secs = measure(*case)
        label = f"{family} {m}x{k}x{n} B={tile} {'values' if values else 'counts'}"
        print(f"{label:44s} {mem / 2**20:9.0f} {est.memory_bytes / 2**20:8.0f} "
              f"{est.memory_bytes / mem:6.2f} {secs:7.2f} {est.time_s:7.2f}")


if __name__ == "__main__":
    main()
