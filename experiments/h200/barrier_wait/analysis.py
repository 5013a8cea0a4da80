"""How long a tiled work-group waits per K-tile (``reports/nvidia-h200/barrier_wait``,
written by :mod:`experiments.h200.barrier_wait.driver`): the "barriers" bullet of
``validation.md``'s "Why tiling is not 16 times faster here"."""
from __future__ import annotations

from pathlib import Path

from experiments.h200.hardware import CaseComparison

from experiments.h200.data import load_json


def load_barrier_wait(directory: str | Path) -> dict | None:
    """``barrier_wait/h200_barrier_wait.json.gz`` of a report directory, or None."""
    return load_json(Path(directory) / "barrier_wait" / "h200_barrier_wait.json.gz")


def barrier_lines(tiled: CaseComparison, t_tiled: float, barrier_wait: dict | None
                   ) -> list[str]:
    """The "barriers" bullet: the model's tile cycle (mean value analysis) against the
    measured wait and compute per K-tile (``barrier_wait/``), where available."""
    tp = tiled.launch.prediction
    exposed = tp.time_terms_s["barrier_latency_s"]
    lines = (f"- **Barriers expose memory latency, but other work-groups hide most of it.** "
             "Every K-tile waits at a barrier for its slowest global load; while it waits, "
             f"the other {tp.resident_work_groups_per_cu - 1} work-groups resident on the "
             "compute unit keep the L1 pipeline busy. The model (mean value analysis of the "
             f"resident work-groups sharing that pipeline) therefore exposes only "
             f"{exposed * 1e3:.2f} ms of the predicted {tp.predicted_time_s * 1e3:.2f} ms "
             f"(and {tp.time_terms_s['tail_s'] * 1e3:.2f} ms for the tail, when a compute "
             "unit's last work-groups run with fewer companions); "
             f"the OpenCL build takes {t_tiled * 1e3:.2f} ms (the prediction is "
             f"{(tp.predicted_time_s / t_tiled - 1) * 100:+.1f}% off).")
    rec = next((c for c in (barrier_wait or {}).get("cases", [])
                if c.get("id") == tiled.case_id and "wait_ns_per_tile" in c), None)
    if rec:
        tiles = rec["tiles_per_work_group"]
        per_cu = tp.work_groups_per_cu
        busy = tp.time_terms_s[tp.bound + "_s"] + exposed   # steady state: no tail
        model_cycle = busy / (per_cu * tiles) * min(tp.resident_work_groups_per_cu, per_cu)
        wait, comp = rec["wait_ns_per_tile"]["mean"], rec["compute_ns_per_tile"]["mean"]
        loop = tiles * (wait + comp) * 1e-9
        lines += (f" Measured inside the OpenCL build (`barrier_wait/`), a K-tile costs a "
                  f"work-group {wait:.0f} ns from its first global load to the releasing "
                  f"barrier and {comp:.0f} ns from there to the second barrier, "
                  f"{wait + comp:.0f} ns in all, against the model's {model_cycle * 1e9:.0f} "
                  "ns per work-group and tile. So the model's error in the kernel time lies "
                  "outside the tile loop: a work-group lasts "
                  f"{rec['work_group_ns']['mean'] / 1e3:.0f} µs on average, "
                  f"{(rec['work_group_ns']['mean'] * 1e-9 / loop - 1) * 100:.1f}% more than "
                  f"its {tiles} tiles, in its start and end, which the model does not "
                  "charge.")
    return [lines]
