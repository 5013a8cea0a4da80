"""The time model's error on every committed H200 measurement with the issue term of a
measured ``issue_rates`` table, and with a prefetch credit on the barrier latency (no GPU).

    python -m experiments.h200.model_error.issue_term [--table FILE ...] [--cache DIR]

Cases, observations and the calibrated model as :mod:`.table` (35 warp-tiled kernels, round
8's 22 validation cases and 24 ladder steps, each with its compiled registers; the model
``reports/nvidia-h200/preregistered6/h200-calibrated.toml``). Columns:

* ``today``: the calibrated model as it predicts now (no table);
* ``count``: the table's issue term with a flat table at the model's own measured rate
  (``register_tile``'s 0.85, committed): the instructions the compiled kernel executes (the
  simulator's count + the IR estimate) at the one committed rate, the part of the term
  that needs no new measurement;
* ``table: NAME``: for each ``--table FILE`` (a device model file with an ``issue_rates``
  table, e.g. the ``calibrated.toml`` a device call's ``tiletraffic calibrate`` wrote), the
  committed model with that table put in, nothing else changed;
* ``+ prefetch``: each column's model with the barrier-interval latency of a prefetching
  work-group (``gemm-prefetch``, ``gemm-warp-tiled``: their loads for step t+1 are issued
  before the multiply-adds of step t) shortened by its own busy time per interval,
  ``max(0, latency - demand)``: the overlap the prefetch buys a work-group on its own.

Prints the median and worst |predicted / measured - 1| per group and column.
"""
from __future__ import annotations

import argparse
import statistics
import warnings
from pathlib import Path

from experiments.h200.model_error import cases as C
from experiments.h200.model_error.table import CALIBRATED, observation, source_digest

PREFETCHING = ("gemm-prefetch", "gemm-warp-tiled")
"""Families whose K step issues the next step's global loads before its multiply-adds."""


def flat_table(model):
    """``model`` with an ``issue_rates`` table of its own
    ``warp_instructions_per_cycle_per_sub_partition`` at every point."""
    from tiletraffic.simulator.model.device_model import ValueSource

    rate = model.warp_instructions_per_cycle_per_sub_partition
    table = {"warps_per_scheduler": [1, 8], "local_128": [rate, rate],
             "local_32": [rate, rate]}
    return model.with_values({"issue_rates": (table, ValueSource(
        "guessed", "the model's own issue rate at every point"))})


def with_table_of(model, path: Path):
    """``model`` with the ``issue_rates`` table (and its source) of the model file
    ``path``.

    Raises:
        SystemExit: the file has no table.
    """
    from tiletraffic.simulator.model.device_model import load_device_model

    other = load_device_model(path)
    if other.issue_rates is None:
        raise SystemExit(f"{path}: no issue_rates table")
    return model.with_values({"issue_rates": (other.issue_rates,
                                              other.value_sources["issue_rates"])})


def prefetch_time_s(seen, model, p) -> float:
    """``p``'s predicted time with the prefetch credit (module docstring) where ``seen``'s
    family prefetches, else ``p``'s."""
    from tiletraffic.simulator.model.prediction import ADDED_TIME_TERMS, interval_latency_s
    from tiletraffic.simulator.model.queueing import exposed_latency_s, tail_latency_s

    if seen.schedule.family not in PREFETCHING or p.barrier_intervals_per_cu <= 0:
        return p.predicted_time_s
    busy = p.time_terms_s[p.bound + "_s"]
    intervals = p.barrier_intervals_per_cu
    customers = min(max(1, p.resident_work_groups_per_cu), p.work_groups_per_cu)
    latency = interval_latency_s(model, p.dram_read_bytes, p.l2_read_sectors,
                                 seen.load_phases)
    credited = max(0.0, latency - busy / intervals)
    terms = dict(p.time_terms_s)
    terms["barrier_latency_s"] = exposed_latency_s(busy, intervals, customers, credited)
    terms["tail_s"] = tail_latency_s(busy, intervals, p.work_groups_per_cu, customers,
                                     credited)
    return busy + sum(terms[k] for k in ADDED_TIME_TERMS)


def rows(cases: list[dict], cache: Path, tables: list[Path]) -> tuple[list[str], list[dict]]:
    from tiletraffic.simulator.model.device_model import device_model
    from tiletraffic.simulator.model.prediction import predict

    digest = source_digest()
    today = device_model(str(CALIBRATED))
    models = [("today", today), ("count", flat_table(today))]
    models += [(f"table: {t.parent.name}/{t.name}", with_table_of(today, t)) for t in tables]
    names = [n for n, _ in models] + [f"{n} + prefetch" for n, _ in models]
    out = []
    for case in cases:
        seen = observation(case, today, cache, digest)
        row = {"group": case["group"], "label": case["label"]}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for name, model in models:
                p = predict(seen, model, case["registers"])
                row[name] = p.predicted_time_s / case["measured_s"] - 1
                row[f"{name} + prefetch"] = \
                    prefetch_time_s(seen, model, p) / case["measured_s"] - 1
        out.append(row)
    return names, out


def markdown(names: list[str], table: list[dict]) -> str:
    lines = ["| group (cases) | " + " | ".join(f"{n}: median / worst" for n in names) + " |",
             "|---|" + "---|" * len(names)]
    for group in dict.fromkeys(r["group"] for r in table):
        of = [r for r in table if r["group"] == group]
        cells = [f"{100 * statistics.median(abs(r[n]) for r in of):.1f}% / "
                 f"{100 * max((r[n] for r in of), key=abs):+.1f}%" for n in names]
        lines.append(f"| {group} ({len(of)}) | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", type=Path, default=Path("/tmp/tiletraffic-model-error"))
    ap.add_argument("--table", type=Path, nargs="*", default=[],
                    help="device model files whose issue_rates table to try")
    ap.add_argument("--cases", action="store_true", help="also print every case's errors")
    a = ap.parse_args(argv)
    names, table = rows(C.all_cases(), a.cache, a.table)
    print(markdown(names, table), end="")
    if a.cases:
        print("\n| group | case | " + " | ".join(names) + " |\n|---|---|" + "---|" * len(names))
        for r in table:
            print(f"| {r['group']} | {r['label']} | "
                  + " | ".join(f"{100 * r[n]:+.1f}%" for n in names) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
