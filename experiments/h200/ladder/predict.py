"""Model predictions for the ladder's cases, computed without a GPU (on the development
machine): ``tiletraffic.model(schedule, "nvidia-h200").prediction.predicted_time_s`` for
every case of :mod:`experiments.h200.ladder.cases` at the sizes given, written to a JSON
file after each case (a run stopped early keeps what it finished), with the seconds the
model took.

    python -m experiments.h200.ladder.predict --out reports/nvidia-h200/ladder/predictions.json \
        --sizes 1024 4096
"""
from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

from . import cases as C


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--sizes", type=int, nargs="+", default=list(C.SIZES))
    p.add_argument("--labels", nargs="*", default=None, help="only these case labels")
    p.add_argument("--device-model", default="nvidia-h200", help="NAME or FILE")
    a = p.parse_args(argv)
    import tiletraffic

    warnings.simplefilter("ignore")
    done = json.loads(a.out.read_text()) if a.out.exists() else []
    have = {(d["label"], d["n"]) for d in done}
    for n in a.sizes:
        for case in C.CASES:
            if (a.labels and case[0] not in a.labels) or (case[0], n) in have:
                continue
            t0 = time.perf_counter()
            s = C.build(case, n)
            m = tiletraffic.model(s, a.device_model)
            done.append({"label": case[0], "family": case[1], "tile": case[2],
                         "options": case[3], "n": n, "device_model": str(a.device_model),
                         "predicted_time_s": m.prediction.predicted_time_s,
                         "model_seconds": time.perf_counter() - t0})
            a.out.write_text(json.dumps(done, indent=1))
            print(case[0], n, done[-1]["predicted_time_s"], round(done[-1]["model_seconds"], 1),
                  flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
