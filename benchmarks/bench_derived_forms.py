"""Time to derive the closed forms (isl + Barvinok) of every built-in family and every example
launch file, against the bound a derivation is given (``DERIVE_SECONDS``).

For each schedule, printed side by side in one run: the seconds ``derive`` took in this
process, the bound, their ratio (below 1: within it), how many counters were derived and
which were not (and why, shortened), with the machine's load average. Families run at
64³ (matrix-vector 64 x 64) in float32; launch files at their own sizes; extra launch files
(a corpus kernel, say) may be named.

    python benchmarks/bench_derived_forms.py [--files PATH.toml ...] [--no-examples]
"""
from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

import tiletraffic as tt
from tiletraffic.analysis.api.closed_forms import derive
from tiletraffic.simulator.model import derived_counts

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*/*.toml"))


def _schedules(files: list[Path], examples: bool):
    for family in tt.FAMILIES:
        sizes = dict(m=64, k=64) if family.startswith("matvec") else dict(m=64, k=64, n=64)
        yield family, lambda family=family, sizes=sizes: tt.build(family, **sizes)
    for path in (EXAMPLES if examples else []) + files:
        yield str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path), \
            lambda path=path: tt.build(str(path))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", nargs="*", type=Path, default=[],
                        help="more launch files (e.g. a corpus kernel's)")
    parser.add_argument("--no-examples", action="store_true")
    args = parser.parse_args()
    bound = derived_counts.DERIVE_SECONDS
    print(f"{os.cpu_count()} cores; derivation bound {bound:g} s per kernel")
    print(f"{'schedule':48s} {'derive s':>9s} {'bound':>6s} {'ratio':>6s} {'load':>5s}  "
          "derived / not derived")
    for name, make in _schedules([p.resolve() for p in args.files], not args.no_examples):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # guessed values, reserved words
            schedule = make()
            started = time.perf_counter()
            derived = derive(schedule)
            seconds = time.perf_counter() - started
        missing = "; ".join(f"{k}: {why[:60]}" for k, why in derived.not_derived.items())
        print(f"{name:48s} {seconds:9.2f} {bound:6g} {seconds / bound:6.2f} "
              f"{os.getloadavg()[0]:5.1f}  {len(derived.forms)} / {missing or 'none'}")


if __name__ == "__main__":
    main()
