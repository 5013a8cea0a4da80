"""The ladder's predictions with and without the register-limited occupancy and the issue
ceiling (issue #13 item 3), against the committed measurements
(``reports/nvidia-h200/ladder/ladder_raw.json.gz``). No GPU.

The simulation (counts, memory-system counts, footprints, barrier intervals) is the slow
part; it is run once per case and size and kept in ``--cache`` (pickles), then
:func:`simulator.model.prediction.predict` is called for each variant:

* ``before``: no register limit, no issue ceiling (the ``model_predictions*.json`` of
  :mod:`experiments.h200.ladder.predict`: the script checks that it reproduces them);
* ``registers``: the register estimate of :mod:`simulator.model.registers` (a guess);
* ``issue``: the issue ceiling (``issue_s``) only;
* ``both``: registers and issue, what ``tiletraffic.model`` now predicts;
* ``measured``: both, with the registers the H200's OpenCL compiler reported for the case
  (``reports/nvidia-h200/registers/build_logs.txt``, ptxas lines of a ``-cl-nv-verbose``
  build, :func:`measured_registers`);
* ``R=<n>``: both, with n registers per work-item for every register-blocked case (for
  the sensitivity table only).

"Without the issue ceiling" is computed with ``warp_instructions_per_cycle_per_sub_partition``
set to 1e12 (issue_s ~ 0), not by another code path.

    python -m experiments.h200.ladder.repredict --sizes 1024 4096 --cache /tmp/ladder_counts \
        --out reports/nvidia-h200/ladder/model_repredictions.json
"""
from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
import warnings
from dataclasses import replace
from pathlib import Path

from experiments.h200.data import REPORT, read_json

from experiments.h200.ladder import cases as C

NO_ISSUE = 1e12


def simulated(case, n: int, cache: Path, model) -> dict:
    """The inputs of predict() for ``case`` at ``n`` (cached in ``cache``): the observation
    of :func:`tiletraffic.simulator.model.observation.observe_launch` (full K loop), as a dict."""
    from tiletraffic.simulator.model.observation import observe_launch

    path = cache / f"{case[0].replace(' ', '_')}_{n}.pkl"
    if path.exists():
        return pickle.loads(path.read_bytes())
    t0 = time.perf_counter()
    seen = observe_launch(C.build(case, n), model)
    footprint = seen.footprint
    footprint.weights = None
    data = {"case": case, "n": n, "counts": seen.counts, "memory": seen.memory,
            "footprint": footprint, "phases": seen.load_phases, "offsets": seen.offsets}
    cache.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(data))
    print(f"simulated {case[0]} N = {n} in {time.perf_counter() - t0:.0f} s", file=sys.stderr,
          flush=True)
    return data


def measured_registers(path: Path | None = None) -> dict[str, int]:
    """Case label -> registers per work-item in ``reports/nvidia-h200/registers/
    build_logs.txt`` (the probe's output: each case's label, then its ptxas lines; the
    first line of each is cut by the probe), read with :func:`gpu.devices.kernel_resources.
    parse_ptxas_log`."""
    from tiletraffic.gpu.devices.kernel_resources import parse_ptxas_log

    path = path or REPORT / "registers" / "build_logs.txt"
    labels = sorted((c[0] for c in C.CASES), key=len, reverse=True)
    sections: dict[str, list[str]] = {}
    current = None
    for line in path.read_text().splitlines():
        head = next((lab for lab in labels if line.startswith(lab + " ")), None)
        if head is not None and not line.startswith("ptxas"):
            current = head
            sections[current] = []
        elif current is not None:
            sections[current].append(line)
    kernels = {c[0]: c[1].replace("-", "_") for c in C.CASES}
    out = {}
    for label, lines in sections.items():
        found = parse_ptxas_log("\n".join(lines), kernels[label])
        if found is not None:
            out[label] = found.registers_per_work_item
    return out


def variants(data: dict, model, fixed_registers=(), measured: int | None = None
             ) -> dict[str, float]:
    """Predicted seconds of one case for each variant of the module docstring."""
    from tiletraffic.simulator.model.registers import estimate_registers
    from tiletraffic.simulator.model.observation import LaunchObservation
    from tiletraffic.simulator.model.prediction import predict

    s = C.build(data["case"], data["n"])
    estimate = estimate_registers(s, model.max_registers_per_work_item)
    regs = estimate.registers_per_work_item if estimate else None
    no_issue = replace(model, warp_instructions_per_cycle_per_sub_partition=NO_ISSUE)
    seen = LaunchObservation(s, data["counts"], data["memory"], data["footprint"],
                             data["phases"], data["offsets"])
    out = {"registers_estimate": regs,
           "before": predict(seen, no_issue).predicted_time_s,
           "registers": predict(seen, no_issue, regs).predicted_time_s,
           "issue": predict(seen, model).predicted_time_s}
    both = predict(seen, model, regs)
    out.update(both=both.predicted_time_s, both_bound=both.bound,
               both_resident=both.resident_work_groups_per_cu)
    if measured is not None:
        got = predict(seen, model, measured)
        out.update(measured_registers=measured, measured=got.predicted_time_s,
                   measured_bound=got.bound,
                   measured_resident=got.resident_work_groups_per_cu)
    for r in fixed_registers:
        if estimate is not None:
            out[f"R={r}"] = predict(seen, model, r).predicted_time_s
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[1024])
    p.add_argument("--cache", type=Path, required=True)
    p.add_argument("--labels", nargs="*", default=None)
    p.add_argument("--registers", type=int, nargs="*", default=[64, 128, 168])
    p.add_argument("--out", type=Path, default=None, help="write the rows as JSON")
    p.add_argument("--cached-only", action="store_true",
                   help="skip the cases not simulated yet (no pickle in --cache)")
    a = p.parse_args(argv)
    from tiletraffic.simulator.model.device_model import NVIDIA_H200

    warnings.simplefilter("ignore")
    raw = read_json(REPORT / "ladder" / "ladder_raw.json.gz")
    measured = {(r["label"], r["n"]): r["median_s"] for r in raw["cases"]
                if r["status"] == "ok"}
    committed = {}
    for path in sorted((REPORT / "ladder").glob("model_predictions*.json*")):
        committed.update({(d["label"], d["n"]): d["predicted_time_s"] for d in read_json(path)})
    registers = measured_registers()
    rows = []
    for n in a.sizes:
        for case in C.CASES:
            if a.labels and case[0] not in a.labels:
                continue
            if a.cached_only and not (a.cache / f"{case[0].replace(' ', '_')}_{n}.pkl").exists():
                continue
            v = variants(simulated(case, n, a.cache, NVIDIA_H200), NVIDIA_H200, a.registers,
                         registers.get(case[0]))
            t = measured[(case[0], n)]
            row = {"label": case[0], "n": n, "measured_s": t,
                   "committed_prediction_s": committed.get((case[0], n)), **v}
            rows.append(row)
            err = {k: (v[k] - t) / t for k in v if k in ("before", "registers", "issue", "both",
                                                          "measured") or k.startswith("R=")}
            print(f"{case[0]:28s} N={n:5d} R~{v['registers_estimate']} "
                  f"R={v.get('measured_registers')} "
                  f"resident={v['both_resident']} bound={v['both_bound']:8s} measured "
                  f"{t * 1e3:8.3f} ms  " + "  ".join(f"{k} {e:+.0%}" for k, e in err.items()),
                  flush=True)
    if a.out:
        a.out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
