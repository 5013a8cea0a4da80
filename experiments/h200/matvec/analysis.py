"""Matrix-vector k-steps on the H200: the section of ``validation.md`` that shows why the
ranking of the matvec schedules is not predicted.

Reads ``matvec/h200_matvec.json.gz`` (written on the device by
:mod:`experiments.h200.matvec.driver`:
the three matvec schedules over a grid of M and K, OpenCL times and Nsight Compute counters
of the CUDA build) and puts the time model's predictions beside it. Nothing here needs a GPU.
"""
from __future__ import annotations

import math
from pathlib import Path

from tiletraffic.simulator.model.device_model import DeviceModel

from experiments.h200.hardware import modelled_launch
from experiments.h200.ncu import metric_value

from experiments.h200.data import load_json
from experiments.h200.matvec.sass import LoopIssue, loops_in_archive

FLOAT_BYTES = 4
NAIVE, LOCAL, WHOLE = "matvec-naive", "matvec-local", "matvec-local-whole"
DATA_PIPE = "l1tex__data_pipe_lsu_wavefronts.sum"
DURATION = "gpu__time_duration.sum"
LONG_SCOREBOARD = "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"


def load_matvec(directory: str | Path) -> dict | None:
    """``matvec/h200_matvec.json.gz`` of a report directory, or None if it has none."""
    return load_json(Path(directory) / "matvec" / "h200_matvec.json.gz")


def load_busy_sms(directory: str | Path) -> dict | None:
    """``matvec/busy_sms/h200_matvec.json.gz`` (``matvec.driver --busy-sms``), or None."""
    return load_json(Path(directory) / "matvec" / "busy_sms" / "h200_matvec.json.gz")


def busy_sms_rows(data: dict | None, model: DeviceModel) -> list[dict]:
    """One row per number of work-groups of the ``--busy-sms`` sweep (the same work each):
    per schedule the checked OpenCL median (s, None if it failed its check or did not run)
    and, in the rows with the fewest and the most work-groups only (the model is slow and
    its time per work-group does not change with their number when each has an SM to
    itself), the model's time (s) of matvec-naive and matvec-local-whole."""
    if data is None:
        return []
    rows: dict[int, dict] = {}
    for run in data.get("opencl", []):
        if not isinstance(run, dict) or "run" not in run:
            continue
        groups = run["m"] // run["tile"]
        row = rows.setdefault(groups, {"work_groups": groups, "m": run["m"], "k": run["k"],
                                       "tile": run["tile"], "opencl_s": {},
                                       "predicted_s": {}})
        ok = run["run"].get("check", {}).get("ok")
        row["opencl_s"][run["schedule"]] = run["run"]["median_s"] if ok else None
    out = [rows[g] for g in sorted(rows)]
    for row in {id(r): r for r in out[:1] + out[-1:]}.values():
        for family in (NAIVE, WHOLE):
            launch = modelled_launch(family, row["m"], row["k"], None, row["tile"], model)
            row["predicted_s"][family] = launch.prediction.predicted_time_s
    return out


def busy_figures(rows: list[dict]) -> dict:
    """The figures the busy-SMs text states, from complete rows (every schedule timed, in
    sweep order): ``naive_s`` (matvec-naive's times), ``naive_slowest_s``, ``flat`` (the last
    row index within 1% of the slowest), ``naive_drop`` (the last row below the slowest, a
    fraction of it), ``local_spread`` (the larger relative spread of matvec-local's and
    matvec-local-whole's times), ``crossing`` (the first pair of adjacent work-group counts
    between which matvec-naive over matvec-local crosses 1, or None), ``naive_over_whole``
    (per row), ``modelled`` (the end rows with both predictions) and
    ``model_same_at_ends`` (the predictions equal at both ends)."""
    def ratio(r: dict, a: str, b: str) -> float:
        return r["opencl_s"][a] / r["opencl_s"][b]

    def change(family: str) -> float:
        times = [r["opencl_s"][family] for r in rows]
        return (max(times) - min(times)) / max(times)

    first, last = rows[0], rows[-1]
    naive = [r["opencl_s"][NAIVE] for r in rows]
    slowest = max(naive)
    cross = [(a["work_groups"], b["work_groups"]) for a, b in zip(rows, rows[1:])
             if (ratio(a, NAIVE, LOCAL) - 1) * (ratio(b, NAIVE, LOCAL) - 1) < 0]
    modelled = [r for r in (first, last) if len(r["predicted_s"]) == 2]
    return {"naive_s": naive, "naive_slowest_s": slowest,
            "flat": next((i for i, t in enumerate(naive) if t < 0.99 * slowest),
                         len(rows)) - 1,
            "naive_drop": (slowest - naive[-1]) / slowest,
            "local_spread": max(change(LOCAL), change(WHOLE)),
            "crossing": cross[0] if cross else None,
            "naive_over_whole": [ratio(r, NAIVE, WHOLE) for r in rows],
            "modelled": modelled,
            "model_same_at_ends": len(modelled) == 2 and all(
                abs(first["predicted_s"][f] / last["predicted_s"][f] - 1) < 1e-6
                for f in (NAIVE, WHOLE))}


def _busy_lines(rows: list[dict], created: str, l2_bytes: int, followed: bool = False
                ) -> list[str]:
    """The busy-SMs table and what it shows (nothing without two complete rows);
    ``followed``: the "Other SMs busy with other work" paragraph comes next."""
    complete = [r for r in rows if all(r["opencl_s"].get(f) for f in (NAIVE, LOCAL, WHOLE))]
    if len(complete) < 2:
        return []
    left_out = len(rows) - len(complete)
    rows = complete

    def ratio(r: dict, a: str, b: str) -> float:
        return r["opencl_s"][a] / r["opencl_s"][b]

    def ms(r: dict, family: str, key: str = "opencl_s") -> str:
        return f"{r[key][family] * 1e3:.3f} ms"

    first, last = rows[0], rows[-1]
    lines = ["", f"**Busy SMs.** The same work per work-group (K = {first['k']:,}, "
             f"{first['tile']} rows each; A is "
             f"{first['m'] * first['k'] * FLOAT_BYTES / 2**20:.0f} MiB and more, larger than "
             f"the {l2_bytes / 2**20:.0f} MiB L2) with ever more work-groups, "
             f"{first['work_groups']} to {last['work_groups']}: one per SM if spread as the "
             "64-work-group launches of \"Two builds of one source\" were (placement not "
             "recorded here). `experiments/h200/matvec/driver.py --busy-sms`, one device call on "
             f"{created[:16].replace('T', ' ')} UTC, `matvec/busy_sms/command.txt`; OpenCL "
             "medians, every result checked"
             + (f" ({left_out} rows with a failed check left out)" if left_out else "")
             + ":", "",
             "| work-groups | matvec-naive | matvec-local | matvec-local-whole | naive / whole "
             "| naive / local |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['work_groups']} | {ms(r, NAIVE)} | {ms(r, LOCAL)} | {ms(r, WHOLE)} "
                     f"| {ratio(r, NAIVE, WHOLE):.3f} | {ratio(r, NAIVE, LOCAL):.3f} |")
    fig = busy_figures(rows)
    naive, slowest, flat = fig["naive_s"], fig["naive_slowest_s"], fig["flat"]
    cross, whole = fig["crossing"], fig["naive_over_whole"]
    modelled, same = fig["modelled"], fig["model_same_at_ends"]
    text = (f"matvec-naive takes {min(naive[:flat + 1]) * 1e3:.3f}–{slowest * 1e3:.3f} ms up "
            f"to {rows[max(flat, 0)]['work_groups']} busy SMs (within 1% of its slowest), "
            f"then falls to {ms(last, NAIVE)} at {last['work_groups']}, "
            f"{fig['naive_drop']:.1%} below its slowest, while matvec-local's "
            f"and matvec-local-whole's times change by at most "
            f"{fig['local_spread']:.1%} over the sweep (matvec-local-whole's "
            f"from {ms(first, WHOLE)} to {ms(last, WHOLE)})")
    if cross:
        text += (f"; matvec-naive overtakes matvec-local between {cross[0]} and "
                 f"{cross[1]} busy SMs")
    text += (f". Against matvec-local-whole it is slower in every row, by "
             f"{(min(whole) - 1) * 100:.1f}% to {(max(whole) - 1) * 100:.1f}%.")
    if modelled:
        model = modelled[0]["predicted_s"]
        errors = [(model[f] - r["opencl_s"][f]) / r["opencl_s"][f]
                  for r in (rows if same else modelled) for f in (NAIVE, WHOLE)]
        text += (f" The model gives matvec-naive {ms(modelled[0], NAIVE, 'predicted_s')} and "
                 f"matvec-local-whole {ms(modelled[0], WHOLE, 'predicted_s')} at "
                 + " and at ".join(f"{r['work_groups']}" for r in modelled)
                 + " busy SMs (modelled at the two ends of the sweep)"
                 + (", the same at both, so the same in every row: " if same else ": ")
                 + f"{min(errors) * 100:+.0f}% to {max(errors) * 100:+.0f}% off the measured "
                 + ("times of this table." if same else "times of those rows."))
    text += (" So matvec-naive's order against matvec-local, and its margin over "
             "matvec-local-whole, depend on how many SMs are busy, and no term of the model "
             "changes with that for the same work per work-group. Its loads in flight per "
             "warp are a property of its machine code, the same in every row, and "
             "matvec-local, with as few sectors per row of A in flight, does not speed up"
             + ("; what the other SMs do that matters: \"Other SMs busy with other work\", "
                "next." if followed else "; why a matvec-naive SM runs faster when more of "
                "the others are busy was not measured."))
    return [*lines, "", text]


def load_matvec_loops(directory: str | Path) -> dict[str, LoopIssue]:
    """The main k-loop of each matvec kernel in the OpenCL driver's machine code
    (``codegen/code.tar.gz``, :func:`experiments.h200.matvec.sass.loops_in_archive`), keyed
    by schedule;
    empty if the directory has no such archive."""
    path = Path(directory) / "codegen" / "code.tar.gz"
    if not path.exists():
        return {}
    return {name.removesuffix("-T256"): loop for name, loop in loops_in_archive(path).items()
            if name.startswith("matvec-")}


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


def matvec_section(data: dict | None, model: DeviceModel,
                   loops: dict[str, LoopIssue] | None = None,
                   busy: list[dict] | None = None, busy_created: str = "?",
                   background: list[str] | None = None
                   ) -> tuple[list[str], list[dict]]:
    """Markdown lines of the section and its rows for ``validation.json`` (nothing without
    ``matvec/``); ``loops``: :func:`load_matvec_loops`, for the machine-code finding;
    ``busy``: :func:`busy_sms_rows` and the time its run was made, for the busy-SMs
    table; ``background``: the lines of
    :func:`analysis.busy_background.busy_background_lines`, put after it."""
    if data is None:
        return [], []
    rows = matvec_rows(data, model)
    meta = data.get("meta", {})
    model_gap = max((abs(x - 1) for r in rows if (x := _ratio(r, "predicted_s"))), default=0)
    lines = [
        "## Matrix-vector k-steps, measured", "",
        "The model charges matvec-naive (x from global memory at every k) and "
        "matvec-local-whole (x staged once in local memory) the same L1 wavefronts per k, so "
        f"it predicts them within {model_gap:.1%} of each other on this grid; the main "
        "run measured matvec-naive 12% slower than matvec-local-whole at N = 4096 (and the "
        "held-out run at N = 8192), but at N = 16384 faster than matvec-local. "
        "`experiments/h200/matvec/driver.py` (one device call on "
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
    lines += ["", *_findings(rows), *_loop_finding(rows, loops or {}, model.sector_bytes),
              *_busy_lines(busy or [], busy_created, model.l2_bytes, bool(background)),
              *(background or []), ""]
    return lines, rows


def loop_figures(rows: list[dict], loops: dict[str, LoopIssue], sector_bytes: int
                 ) -> dict | None:
    """What the loops in flight are set against: ``k_steps`` = {schedule: k-steps whose
    loads a warp has issued when its first multiply-add waits}, ``k_steps_per_sector``
    (k-steps of one row of A in a sector), ``sectors_per_row`` = {schedule: missing sectors
    per row in flight (rows start sector-aligned here)} and ``rows``, the rows at K = 4096
    where A does not fit in L2, by work-groups. None without the three loops or two rows."""
    if not all(f in loops for f in (NAIVE, LOCAL, WHOLE)):
        return None
    steps = {f: loops[f].k_steps_in_flight for f in (NAIVE, LOCAL, WHOLE)}
    per_sector = sector_bytes // FLOAT_BYTES
    wide = sorted((r for r in rows if r["k"] == 4096 and not r["a_fits_l2"]
                   and all(s.get("opencl_s") for s in r["schedules"].values())
                   and {NAIVE, WHOLE} <= r["schedules"].keys()),
                  key=lambda r: r["work_groups"])
    if len(wide) < 2:
        return None
    return {"k_steps": steps, "k_steps_per_sector": per_sector,
            "sectors_per_row": {f: max(1, math.ceil(steps[f] / per_sector)) for f in steps},
            "rows": wide}


def _loop_finding(rows: list[dict], loops: dict[str, LoopIssue], sector_bytes: int
                  ) -> list[str]:
    """Loads in flight per warp against the times: what the machine code explains."""
    figures = loop_figures(rows, loops, sector_bytes)
    if figures is None:
        return []
    steps, per_sector, misses = figures["k_steps"], figures["k_steps_per_sector"], \
        figures["sectors_per_row"]
    wide = figures["rows"]
    first, last = wide[0], wide[-1]

    def ms(row: dict, family: str) -> str:
        return f"{row['schedules'][family]['opencl_s'] * 1e3:.3f}"

    def span(rows: list[dict], family: str) -> str:
        times = sorted(r["schedules"][family]["opencl_s"] * 1e3 for r in rows)
        return f"{times[0]:.3f}–{times[-1]:.3f}"

    return [
        "- **The machine code keeps fewer loads of A in flight in matvec-naive than in "
        "matvec-local-whole, which does not explain everything.** In the unrolled k-loop of "
        "the OpenCL driver's code (`codegen/code.tar.gz`, counted by `experiments/h200/matvec/sass.py`), a "
        "warp has issued the loads of "
        f"{steps[NAIVE]:g} k-steps when its first multiply-add waits in matvec-naive "
        f"(its first {loops[NAIVE].global_loads_before_first_fma} global loads, of A and of "
        "x), "
        f"{steps[LOCAL]:g} in matvec-local and {steps[WHOLE]:g} in matvec-local-whole. A "
        f"{sector_bytes}-byte sector of a row of A holds {per_sector} k-steps, and each "
        "work-item reads its own row, so one load of A by a warp misses 32 sectors at once, "
        "one per row, every "
        f"{per_sector} k-steps; a warp has at most {misses[NAIVE]} missing sector per row in "
        f"flight in matvec-naive, {misses[LOCAL]} in matvec-local and {misses[WHOLE]} in "
        "matvec-local-whole: the "
        "more in flight, the less memory latency each k exposes (Little's law; Hong and "
        "Kim, ISCA 2009). That fits matvec-local-whole being the fastest "
        "where A comes from DRAM, but not matvec-local (fewer k-steps in flight, and "
        "barriers) beating matvec-naive at "
        f"{first['work_groups']} work-groups, nor matvec-naive's time falling from "
        f"{ms(first, NAIVE)} ms at {first['work_groups']} work-groups to {ms(last, NAIVE)} "
        f"ms at {last['work_groups']} (K = 4,096: the same work per SM) while "
        f"matvec-local-whole's stays at {span(wide, WHOLE)} ms (see Busy SMs). The "
        "model has no term for loads in flight."]


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
