"""What if the model credited a prefetching kernel with hiding its loads' latency? (round 8,
no GPU.)

The time model (:mod:`tiletraffic.simulator.model.prediction`) charges every barrier interval
that loads from global memory one memory latency, overlapped only by the other resident
work-groups (a closed queueing network solved by mean value analysis). A prefetching
kernel issues its loads before the interval's work and uses them after it, so its own work
overlaps them too. This script re-solves that network with the delay of population n
reduced by a fraction ``f`` of the customer's own residence time at the busy resource
(``max(0, latency - f * residence(n))``) and prints gemm-prefetch's predictions against
round 8's ladder measurements (4x4 and 8x8 at N = 1024 and 4096), with their compiled
registers, for f = 0 (the model), 0.5, 0.9, 1; ``--per demand`` reduces it by f times the
work-group's demand per interval instead.

    python -m experiments.h200.ladder.overlap_whatif \
        --device-model reports/nvidia-h200/preregistered6/h200-calibrated.toml

Not a model change: it showed that crediting the latency as hidden over-corrects
(findings.md, "gemm-prefetch that prefetches").
"""
from __future__ import annotations

import argparse
import math
import warnings
from unittest import mock

ROUND = "preregistered8"
OPTIONS = {"prefetch": {}, "prefetch 8x8 bk8": {"tm": 8, "tn": 8, "bk": 8}}


def measured_cases() -> list[tuple[str, dict, int, int, float]]:
    """(ladder label, options, compiled registers, N, measured seconds) of round 8's
    gemm-prefetch cases, from the committed data: the registers from its compile-only call
    (registers/registers.json), the times from its ladder (ladder/ladder_raw.json.gz)."""
    from experiments.h200.data import REPORT, read_json

    from experiments.h200.ladder.predict import compiled_registers, registers_for

    folder = REPORT / ROUND
    regs = compiled_registers([folder / "registers" / "registers.json"])
    raw = read_json(folder / "ladder" / "ladder_raw.json.gz")
    return [(c["label"], OPTIONS[c["label"]], registers_for(regs, c["label"], c["n"])[0],
             c["n"], c["median_s"])
            for c in raw["cases"] if c["label"] in OPTIONS and c.get("median_s")]


def overlapped_throughputs(overlap: float, per: str = "residence"):
    """:func:`queueing.closed_network_throughputs` with the delay reduced by
    ``overlap`` x the customer's residence time at the queue (``per="residence"``) or x its
    demand per interval (``per="demand"``, the work-group's own work alone)."""
    def throughputs(customers: int, demand_s: float, delay_s: float) -> list[float]:
        queue, out = 0.0, []
        for n in range(1, customers + 1):
            residence = demand_s * (1 + queue)
            own = residence if per == "residence" else demand_s
            delay = max(0.0, delay_s - overlap * own)
            x = n / (residence + delay) if residence + delay > 0 else math.inf
            queue = x * residence
            out.append(x)
        return out
    return throughputs


def predicted(options: dict, n: int, registers: int, overlap: float, per: str,
              device_model: str):
    """The model's prediction of gemm-prefetch at M = N = K = ``n`` with ``options`` and
    ``registers`` per work-item, its network solved by :func:`overlapped_throughputs`."""
    import tiletraffic
    from tiletraffic.simulator.model import queueing

    with mock.patch.object(queueing, "closed_network_throughputs",
                           overlapped_throughputs(overlap, per)):
        s = tiletraffic.build("gemm-prefetch", m=n, k=n, n=n, **options)
        return tiletraffic.model(s, device_model, registers_per_work_item=registers).prediction


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device-model", required=True)
    p.add_argument("--per", choices=("residence", "demand"), default="residence",
                   help="what the overlap fraction multiplies (default: residence time)")
    a = p.parse_args(argv)
    print("| overlap f | case | N | predicted ms | measured ms | error | barrier latency ms |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    warnings.simplefilter("ignore")
    cases = measured_cases()
    for f in (0.0, 0.5, 0.9, 1.0):
        for label, options, registers, n, seconds in cases:
            pr = predicted(options, n, registers, f, a.per, a.device_model)
            print(f"| {f} | {label} | {n} | {pr.predicted_time_s * 1e3:.4f} | "
                  f"{seconds * 1e3:.4f} | {pr.predicted_time_s / seconds - 1:+.1%} | "
                  f"{pr.time_terms_s['barrier_latency_s'] * 1e3:.4f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
