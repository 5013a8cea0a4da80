"""Model predictions for the ladder's cases, computed without a GPU (on the development
machine): ``tiletraffic.model(schedule, "nvidia-h200").prediction.predicted_time_s`` for
every case of :mod:`experiments.h200.ladder.cases` at the sizes given, written to a JSON
file after each case (a run stopped early keeps what it finished), with the seconds the
model took.

    python -m experiments.h200.ladder.predict --out reports/nvidia-h200/ladder/predictions.json \
        --sizes 1024 4096

``--registers-from RAW...``: the compiled kernels' registers per work-item as earlier
ladder runs recorded them (``run.registers_per_work_item``, from the ``-cl-nv-verbose``
build log: a fact of the build, not a time), so that occupancy uses them instead of the
schedule's estimate; a case with none at its size takes its label's count at another size,
else the estimate (``registers_source`` says which).
"""
from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

from experiments.h200.data import read_json
from experiments.h200.ladder import cases as C


def compiled_registers(raw_paths) -> dict[tuple[str, int], int]:
    """(label, N) -> registers per work-item of the ladder runs in ``raw_paths``
    (ladder_raw.json(.gz)); later files win."""
    out = {}
    for path in raw_paths:
        for c in read_json(Path(path))["cases"]:
            regs = (c.get("run") or {}).get("registers_per_work_item")
            if regs:
                out[(c["label"], c["n"])] = int(regs)
    return out


def registers_for(known: dict[tuple[str, int], int], label: str, n: int
                  ) -> tuple[int | None, str]:
    """The compiled count of (label, n), else of label at the nearest other size, else None
    (the model estimates); with where it came from."""
    if (label, n) in known:
        return known[(label, n)], f"compiled (N = {n})"
    other = sorted((abs(m - n), m) for (lab, m) in known if lab == label)
    if other:
        m = other[0][1]
        return known[(label, m)], f"compiled (N = {m})"
    return None, "estimated"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--sizes", type=int, nargs="+", default=list(C.SIZES))
    p.add_argument("--labels", nargs="*", default=None, help="only these case labels")
    p.add_argument("--device-model", default="nvidia-h200", help="NAME or FILE")
    p.add_argument("--registers-from", nargs="*", default=[], type=Path,
                   help="ladder_raw.json(.gz) files whose compiled registers to use")
    a = p.parse_args(argv)
    known = compiled_registers(a.registers_from)
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
            regs, regs_source = registers_for(known, case[0], n) if known else (None, None)
            m = tiletraffic.model(s, a.device_model, registers_per_work_item=regs)
            done.append({"label": case[0], "family": case[1], "tile": case[2],
                         "options": case[3], "n": n, "device_model": str(a.device_model),
                         "predicted_time_s": m.prediction.predicted_time_s,
                         "model_seconds": time.perf_counter() - t0})
            if known:
                done[-1].update(registers_per_work_item=m.prediction.registers_per_work_item,
                                registers_source=regs_source if regs else "estimated")
            a.out.write_text(json.dumps(done, indent=1))
            print(case[0], n, done[-1]["predicted_time_s"], round(done[-1]["model_seconds"], 1),
                  flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
