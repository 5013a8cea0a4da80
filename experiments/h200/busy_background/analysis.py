"""Other SMs busy with other work: the part of ``validation.md``'s matrix-vector section that
reads ``matvec/busy_background/`` (:mod:`experiments.h200.busy_background.driver`).

There, 16 matvec work-groups run on 16 SMs while a second CUDA kernel keeps the other 116
busy counting cycles, reading an L2-resident buffer or streaming from DRAM; it tells whether
matvec-naive's speed-up with more busy SMs (``matvec/busy_sms/``) comes from the number of
SMs at work or from what they do. Nothing here needs a GPU.
"""
from __future__ import annotations

from pathlib import Path

from experiments.h200.ncu import metric_value

from experiments.h200.data import load_json, read_json

CLOCKS = (("sm__cycles_elapsed.avg.per_second", "the SMs"),
          ("lts__cycles_elapsed.avg.per_second", "the L2"),
          ("dram__cycles_elapsed.avg.per_second", "DRAM"),
          ("gpc__cycles_elapsed.avg.per_second", "the GPCs"),
          ("sys__cycles_elapsed.avg.per_second", "the system (sys)"))
"""Nsight Compute's clock rates per launch (cycles elapsed per second of the unit)."""

FAMILIES = ("matvec-naive", "matvec-local", "matvec-local-whole")
BACKGROUNDS = (
    ("alone_unpadded", "nothing (no unused shared memory)"),
    ("none", "nothing"),
    ("spin", "arithmetic only (no memory traffic)"),
    ("l2", "read an 8 MiB buffer (L2 hits)"),
    ("dram", "stream a 4 GiB buffer (DRAM)"))


def load_busy_background(directory: str | Path) -> list[dict]:
    """One dict per run (``matvec/busy_background/*/h200_busy_background.json.gz``, sorted by
    start time, then K; folders ``callN-kK``: device call N, K): ``name`` (the folder),
    ``k``, ``created_utc`` and ``times[(family, work_groups, background)]`` = the checked
    median (s); results that failed their check are left out. Empty if the directory has
    none."""
    runs = []
    pattern = "matvec/busy_background/*/h200_busy_background.json.gz"
    for path in Path(directory).glob(pattern):
        data = read_json(path)
        times, ks = {}, set()
        for case in data.get("cases", []):
            ks.add(case["k"])
            for background, t in case.get("times", {}).items():
                if t.get("check", {}).get("ok"):
                    times[(case["family"], case["work_groups"], background)] = t["median_s"]
        if times and len(ks) == 1:
            runs.append({"name": path.parent.name, "k": ks.pop(), "times": times,
                         "created_utc": data.get("meta", {}).get("created_utc", "?")})
    return sorted(runs, key=lambda r: (r["created_utc"], r["k"]))


def load_clocks(directory: str | Path) -> dict | None:
    """``matvec/busy_sms_clocks/h200_matvec.json.gz`` (the busy-SMs sweep under Nsight with the
    clock rates) reduced to: ``naive_s`` = {work-groups: Nsight's duration of matvec-naive
    (s)}, ``naive_sm_cycles`` = {work-groups: its SM cycles (``sm__cycles_elapsed.avg``)}
    and ``clocks_hz`` = {unit: (lowest, highest) rate over every checked launch}; None
    without the file or a checked launch."""
    data = load_json(Path(directory) / "matvec" / "busy_sms_clocks" / "h200_matvec.json.gz")
    if data is None:
        return None
    counters = data.get("counters", {})
    ok = {d["id"] for d in counters.get("driver", []) if d.get("check", {}).get("ok")}
    records = [r for r in counters.get("records", []) if r["id"] in ok]

    def naive_by_work_groups(metric: str) -> dict[int, float]:
        return {r["m"] // r["tile"]: v for r in records
                if r["schedule"] == "matvec-naive" and (v := metric_value(r, metric))}

    naive = {g: ns * 1e-9 for g, ns in naive_by_work_groups("gpu__time_duration.sum").items()}
    cycles = naive_by_work_groups("sm__cycles_elapsed.avg")
    clocks = {}
    for metric, unit in CLOCKS:
        rates = [v for r in records if (v := metric_value(r, metric))]
        if rates:
            clocks[unit] = (min(rates), max(rates))
    if not (naive and clocks):
        return None
    return {"naive_s": naive, "naive_sm_cycles": cycles, "clocks_hz": clocks}


def _clock_sentence(clocks: dict | None) -> str:
    """What the clock rates of the busy-SMs sweep say (nothing without them)."""
    if not clocks:
        return ""
    naive = clocks["naive_s"]
    few, many = min(naive), max(naive)

    def rate(lo: float, hi: float) -> str:
        return (f"{lo / 1e9:.3f}" if f"{lo / 1e9:.3f}" == f"{hi / 1e9:.3f}"
                else f"{lo / 1e9:.3f}–{hi / 1e9:.3f}") + " GHz"

    rates = ", ".join(f"{unit} {rate(lo, hi)}"
                      for unit, (lo, hi) in clocks["clocks_hz"].items())
    text = (" In the busy-SMs sweep under Nsight (`matvec/busy_sms_clocks/`, the CUDA "
            f"build) matvec-naive takes {naive[few] * 1e3:.3f} ms with {few} work-groups and "
            f"{naive[many] * 1e3:.3f} ms with {many}")
    cycles = clocks.get("naive_sm_cycles", {})
    if few in cycles and many in cycles:
        text += (f", {cycles[few] / 1e6:.3f} and {cycles[many] / 1e6:.3f} million SM cycles "
                 f"({cycles[many] / cycles[few] - 1:+.1%})")
    text += f"; the clock rates of its launches: {rates}"
    if few in cycles and many in cycles:
        fewer = cycles[many] / cycles[few] - 1
        faster = naive[many] / naive[few] - 1
        if abs(fewer - faster) < 0.01:
            return text + (f". Its time falls by {-faster:.1%} and its SM cycles by "
                           f"{-fewer:.1%}: it needs fewer cycles, it does not run on faster "
                           "ones.")
    return text + "."


def _ms(t: float | None) -> str:
    return f"{t * 1e3:.3f} ms" if t else "—"


def _change(run: dict, family: str, background: str, versus: str = "none",
            work_groups: int = 16) -> float | None:
    """``family``'s time with ``background`` (at ``work_groups``) over its time with
    ``versus`` at 16 work-groups, less 1; None if either is missing."""
    a = run["times"].get((family, work_groups, background))
    b = run["times"].get((family, 16, versus))
    return a / b - 1 if a and b else None


def _local_changes(runs: list[dict]) -> list[float]:
    """The local schedules' changes with any background, over ``runs``."""
    return [c for r in runs for f in FAMILIES[1:] for b in ("spin", "l2", "dram")
            if (c := _change(r, f, b)) is not None]


def busy_background_summary(runs: list[dict]) -> dict | None:
    """The changes the text reports, each a relative change of a 16-work-group time with the
    other SMs idle (:func:`_change`): ``naive`` = {background: [matvec-naive's change in
    each run]} for spin, l2 and dram; ``naive_132`` = {run: matvec-naive's change when all
    132 SMs run it}; ``local`` = [the local schedules' changes with any background];
    ``padding`` = {(run, schedule): change from the unused shared memory alone};
    ``compared`` = runs with both an L2 and a 132-work-group change, of which
    ``reproduced`` = those where the L2 background gives at least two thirds of the
    132-work-group speed-up and ``missed`` the others. None where a part is missing."""
    naive = {b: [c for r in runs if (c := _change(r, "matvec-naive", b)) is not None]
             for b in ("spin", "l2", "dram")}
    full = {r["name"]: c for r in runs
            if (c := _change(r, "matvec-naive", "none", work_groups=132)) is not None}
    l2 = {r["name"]: c for r in runs if (c := _change(r, "matvec-naive", "l2")) is not None}
    local = _local_changes(runs)
    padding = {(r["name"], f): c for r in runs for f in FAMILIES
               if (c := _change(r, f, "none", "alone_unpadded")) is not None}
    if not all(naive.values()) or not local or not full:
        return None
    compared = [n for n in full if n in l2]
    reproduced = [n for n in compared if l2[n] <= full[n] * 2 / 3 < 0]
    return {"naive": naive, "naive_132": full, "local": local, "padding": padding,
            "compared": compared, "reproduced": reproduced,
            "missed": [n for n in compared if n not in reproduced]}


def busy_background_lines(runs: list[dict], clocks: dict | None = None) -> list[str]:
    """The table and what it shows (nothing without a run); ``clocks``: :func:`load_clocks`,
    for the clock rates of the busy-SMs sweep."""
    if not runs:
        return []
    lines = ["", "**Other SMs busy with other work.** `experiments/h200/busy_background/driver.py` "
             f"({len(runs)} runs in {len({r['name'].split('-')[0] for r in runs})} "
             "device calls, "
             f"{min(r['created_utc'] for r in runs)[:16].replace('T', ' ')} UTC onwards, "
             "`matvec/busy_background/command.txt`) ran the CUDA build of each schedule with "
             "16 work-groups on 16 SMs while a second kernel on another stream kept the "
             "other 116 SMs busy (two work-groups each; the matvec launches carry unused "
             "shared memory so that no background work-group fits on a matvec SM; placement "
             "not recorded), and with all 132 SMs running the schedule itself (132 "
             "work-groups, with the same unused shared memory). The background is launched "
             "right after the matvec kernel, so the matvec's first microseconds may run "
             "without it, which can only shrink the effects. CuPy-event medians, every result "
             "checked:", "",
             "| run | K | the other SMs | matvec-naive | matvec-local | matvec-local-whole |",
             "|---|---|---|---|---|---|"]
    for run in runs:
        rows = [(label, [run["times"].get((f, 16, b)) for f in FAMILIES])
                for b, label in BACKGROUNDS]
        rows.append(("run the same schedule (132 work-groups)",
                     [run["times"].get((f, 132, "none")) for f in FAMILIES]))
        for label, times in rows:
            if any(times):
                lines.append(f"| {run['name']} | {run['k']:,} | {label} | "
                             + " | ".join(_ms(t) for t in times) + " |")
    s = busy_background_summary(runs)
    if s is None:
        return lines
    changes, full, others, padding = s["naive"], s["naive_132"], s["local"], s["padding"]
    both, reproduced, missed = s["compared"], s["reproduced"], s["missed"]

    def span(values) -> str:
        lo, hi = min(values) * 100, max(values) * 100
        return f"{lo:+.1f}%" if abs(hi - lo) < 0.05 else f"{lo:+.1f}% to {hi:+.1f}%"

    text = ("Against the same launch with the other SMs idle, matvec-naive's time changes by "
            f"{span(full.values())} when the other 116 SMs run matvec-naive too (132 "
            f"work-groups), by {span(changes['l2'])} while they read the 8 MiB buffer, by "
            f"{span(changes['dram'])} while they stream from DRAM and by "
            f"{span(changes['spin'])} while they only do arithmetic. matvec-local's and "
            f"matvec-local-whole's times change by {span(others)} with any of the three "
            "backgrounds. ")
    if reproduced:
        text += (f"So reads of an L2-resident buffer on the other SMs reproduce at least two "
                 f"thirds of matvec-naive's speed-up from 116 more matvec work-groups in "
                 f"{len(reproduced)} of {len(both)} runs"
                 + (f" (not in {', '.join(missed)}, where every background changes every "
                    "schedule's time by "
                    + span(_local_changes([r for r in runs if r["name"] in missed])) + ")"
                    if missed else "")
                 + "; arithmetic alone does not, and a DRAM stream hardly does, although in "
                 "the busy-SMs sweep the other SMs' own traffic is a DRAM stream (their L2 "
                 "reads come from DRAM). The speed-up follows some kind of traffic on the "
                 "other SMs, not their number; which kind, and what it changes for a "
                 "matvec-naive SM, was not measured (neither background's throughput was), "
                 "nor why only matvec-naive is sensitive to it.")
    else:
        text += ("No background reproduces the speed-up matvec-naive gets from 116 more "
                 "matvec work-groups; what does was not measured.")
    text += _clock_sentence(clocks)
    if padding:
        name, family = max(padding, key=lambda key: abs(padding[key]))
        text += (f" The unused shared memory itself changes the 16-work-group times by "
                 f"{span(padding.values())} (the most: {family} in {name}).")
    return [*lines, "", text]
