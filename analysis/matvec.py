"""Matrix-vector k-steps on the H200: the section of ``validation.md`` that shows why the
ranking of the matvec schedules is not predicted.

Reads ``matvec/h200_matvec.json`` (written on the device by ``benchmarks/h200_matvec.py``:
the three matvec schedules over a grid of M and K, OpenCL times and Nsight Compute counters
of the CUDA build) and puts the time model's predictions beside it. Nothing here needs a GPU.
"""
from __future__ import annotations

import json
from pathlib import Path

from simulator.device_model import DeviceModel

from .hardware import modelled_launch
from .ncu import metric_value

NAIVE, LOCAL, WHOLE = "matvec-naive", "matvec-local", "matvec-local-whole"
DATA_PIPE = "l1tex__data_pipe_lsu_wavefronts.sum"
DURATION = "gpu__time_duration.sum"
LONG_SCOREBOARD = "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"


def load_matvec(directory: str | Path) -> dict | None:
    """``matvec/h200_matvec.json`` of a report directory, or None if it has none."""
    path = Path(directory) / "matvec" / "h200_matvec.json"
    return json.loads(path.read_text()) if path.exists() else None


def matvec_rows(data: dict, model: DeviceModel) -> list[dict]:
    """One row per (M, K): per schedule the OpenCL median (s; None when it failed its check
    or did not run), the model's prediction (s, ``model``), Nsight's duration of the CUDA
    build (s), its L1 data-pipe wavefronts per SM (one work-group per SM) and its
    long-scoreboard stall per issued instruction."""
    runs = {r["id"]: r for r in data.get("opencl", []) if isinstance(r, dict)}
    counted = {r["id"]: r for r in data.get("counters", {}).get("records", [])}
    sizes: dict[tuple[int, int], dict] = {}
    for case_id, run in runs.items():
        m, k, family = run["m"], run["k"], run["schedule"]
        row = sizes.setdefault((m, k), {"m": m, "k": k, "work_groups": m // run["tile"],
                                        "a_fits_l2": m * k * 4 <= model.l2_bytes,
                                        "schedules": {}})
        ok = run.get("run", {}).get("check", {}).get("ok")
        rec = counted.get(case_id)
        launch = modelled_launch(family, m, k, None, run["tile"], model)
        pipe = metric_value(rec, DATA_PIPE)
        row["schedules"][family] = {
            "opencl_s": run["run"]["median_s"] if ok else None,
            "predicted_s": launch.prediction.predicted_time_s,
            "cuda_s": (metric_value(rec, DURATION) or 0) * 1e-9 or None,
            "data_pipe_wavefronts_per_sm": pipe / row["work_groups"] if pipe else None,
            "long_scoreboard": metric_value(rec, LONG_SCOREBOARD)}
    return [sizes[key] for key in sorted(sizes, key=lambda mk: (mk[0] != 4096, mk))]


def _ratio(row: dict, key: str, other: str = WHOLE) -> float | None:
    s = row["schedules"]
    a, b = s.get(NAIVE, {}).get(key), s.get(other, {}).get(key)
    return a / b if a and b else None


def _cell(s: dict | None) -> str:
    if not s or not s.get("opencl_s"):
        return "—"
    return (f"{s['opencl_s'] * 1e3:.3f} ms "
            f"({(s['predicted_s'] / s['opencl_s'] - 1) * 100:+.0f}%)")


def _fmt(x: float | None) -> str:
    return f"{x:.2f}" if x else "—"


def matvec_section(data: dict | None, model: DeviceModel) -> tuple[list[str], list[dict]]:
    """Markdown lines of the section and its rows for ``validation.json`` (nothing without
    ``matvec/``)."""
    if data is None:
        return [], []
    rows = matvec_rows(data, model)
    meta = data.get("meta", {})
    model_gap = max((abs(x - 1) for r in rows if (x := _ratio(r, "predicted_s"))), default=0)
    lines = [
        "## Matrix-vector k-steps, measured", "",
        "The model charges matvec-naive (x from global memory at every k) and "
        "matvec-local-whole (x staged once in local memory) the same L1 wavefronts per k, so "
        f"it predicts them within {model_gap:.1%} of each other on this grid; the issue-4 "
        "run measured matvec-naive 12% slower than matvec-local-whole at N = 4096 (and the "
        "held-out run at N = 8192), but at N = 16384 faster than matvec-local. "
        "`benchmarks/h200_matvec.py` (one device call on "
        f"{meta.get('created_utc', '?')[:16].replace('T', ' ')} UTC, `matvec/command.txt`) "
        "ran the three schedules over a grid of K (the row stride of A) at M = 4096 and of "
        "M (M / 256 work-groups, one per SM) at K = 4096, every result checked; Nsight "
        "Compute read the CUDA build's L1 pipeline. Each cell: OpenCL median of repeated "
        "launches (the model's error); *A in L2*: whether matrix A fits in the 50 MiB L2, "
        "where repeated launches find it; then matvec-naive's time over matvec-local-whole's "
        "(over matvec-local's where x does not fit in local memory, marked *) in the OpenCL "
        "runs, under Nsight (the CUDA build, caches flushed before every launch: A comes "
        "from DRAM) and in the model, and over matvec-local's in the OpenCL runs:", "",
        "| M | K | work-groups | A in L2 | matvec-naive | matvec-local | matvec-local-whole "
        "| naive / whole, OpenCL | Nsight | model | naive / local, OpenCL |",
        "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        s = r["schedules"]
        other = WHOLE if WHOLE in s else LOCAL
        mark = "" if other == WHOLE else " *"
        lines.append(
            f"| {r['m']:,} | {r['k']:,} | {r['work_groups']} | "
            f"{'yes' if r['a_fits_l2'] else 'no'} | {_cell(s.get(NAIVE))} | "
            f"{_cell(s.get(LOCAL))} | {_cell(s.get(WHOLE))} | "
            f"{_fmt(_ratio(r, 'opencl_s', other))}{mark} | "
            f"{_fmt(_ratio(r, 'cuda_s', other))}{mark} | "
            f"{_fmt(_ratio(r, 'predicted_s', other))}{mark} | "
            f"{_fmt(_ratio(r, 'opencl_s', LOCAL))} |")
    lines += ["", *_findings(rows), ""]
    return lines, rows


def _findings(rows: list[dict]) -> list[str]:
    pipe, busy = [], []
    for r in rows:
        s = r["schedules"]
        if NAIVE in s and WHOLE in s:
            a, b = s[NAIVE], s[WHOLE]
            if a["data_pipe_wavefronts_per_sm"] and b["data_pipe_wavefronts_per_sm"]:
                pipe.append(a["data_pipe_wavefronts_per_sm"] / b["data_pipe_wavefronts_per_sm"])
        for fam, v in s.items():
            if v["cuda_s"] and v["data_pipe_wavefronts_per_sm"]:
                busy.append((fam, v["data_pipe_wavefronts_per_sm"] / (v["cuda_s"] * 1.98e9)))
    ratios = [(r, _ratio(r, "opencl_s"), _ratio(r, "cuda_s")) for r in rows]
    ratios = [(r, o, c) for r, o, c in ratios if o and c]
    if not (pipe and busy and ratios):
        return []

    def span(values: list[float], fmt: str = "{:.2f}") -> str:
        return fmt.format(min(values)) + "–" + fmt.format(max(values))

    in_l2 = [o for r, o, _ in ratios if r["a_fits_l2"]]
    beyond = [o for r, o, _ in ratios if not r["a_fits_l2"]]
    faster = [r for r in rows if (x := _ratio(r, "opencl_s", LOCAL)) and x < 1]
    worst = max(max(o, c) for _, o, c in ratios)
    return [
        "- **The wavefronts are the same, as the model says.** Nsight counts "
        f"{span(pipe, '{:.3f}')} times as many L1 data-pipe wavefronts "
        "(`l1tex__data_pipe_lsu_wavefronts.sum`) for matvec-naive as for "
        "matvec-local-whole at the same M and K: x from global memory costs one wavefront "
        "per k, as from local memory.",
        "- **The time is not set by them alone.** The data pipe is busy "
        f"{span([b for f, b in busy if f == NAIVE], '{:.0%}')} of Nsight's duration for "
        f"matvec-naive, {span([b for f, b in busy if f == WHOLE], '{:.0%}')} for "
        "matvec-local-whole (wavefronts per SM / (duration × the model's 1.98 GHz)): with "
        "one work-group of 8 warps per SM, matvec-naive's warps leave the pipe idle "
        "longer.",
        "- **matvec-naive loses where A comes from DRAM.** Its time over "
        "matvec-local-whole's is "
        + (f"{span(in_l2)} in the OpenCL runs where A fits in L2 (repeated launches find "
           "it there), " if in_l2 else "")
        + (f"{span(beyond)} where it does not, " if beyond else "")
        + f"and {span([c for _, _, c in ratios])} under Nsight, which flushes the caches "
        "before every launch. Against matvec-local (whose chunks of x cost two barriers "
        "each) matvec-naive is faster in "
        f"{len(faster)} of {len(rows)} cells of this grid. The model, which has no latency "
        "term for a kernel without barriers, predicts 1.00 against matvec-local-whole "
        "everywhere. So the order of matvec-naive against the local schedules, at most "
        f"{(worst - 1) * 100:.0f}% apart here, is not predicted; no model value was taken "
        "from these data."]
