"""On the device: tune the course-style tiled GEMM of examples/opencl/mm_tiled.cl (its macros
TS and WPT) through its launch file, measuring every valid candidate so that the regret of
the model's pick is measured against the best of the whole space, not only of its top.

    python -m experiments.h200.opencl_tune.driver --out DIR [--n 1024] [--device NVIDIA]

Writes DIR/tune.json (the tuner's results document) and DIR/command.txt.
"""
from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
LAUNCH = ROOT / "examples" / "opencl" / "mm_tiled.toml"
PARAMS = {"TS": [8, 16, 32], "WPT": [1, 2, 4, 8]}
CONSTRAINTS = ["TS % WPT == 0"]


def main(argv=None) -> int:
    from tiletraffic.analysis.tune.launch import table, tune_launch

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--device", default="NVIDIA")
    ap.add_argument("--device-model", default="nvidia-h200")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "unknown (no .git on the device)"
    (out / "command.txt").write_text(
        "python -m experiments.h200.opencl_tune.driver " + " ".join(argv or sys.argv[1:])
        + f"\nhost: {platform.node()}  python {platform.python_version()}  tiletraffic "
          f"checkout {commit}\n")
    combos = 1
    for v in PARAMS.values():
        combos *= len(v)
    doc = tune_launch(LAUNCH, PARAMS, CONSTRAINTS, sets={"N": args.n}, device=args.device,
                      device_model=args.device_model, top=combos, rounds=args.rounds,
                      out=out / "tune.json", seed=20261201, log=print,
                      command="python -m experiments.h200.opencl_tune.driver")
    print(table(doc))
    print(json.dumps(doc["summary"], indent=1)[:2000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
