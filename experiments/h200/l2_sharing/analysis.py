"""How much of matrix B the H200's L2 shares between the work-groups that read it.

Reads ``<report dir>/l2_sharing/`` (written by :mod:`experiments.h200.l2_sharing.driver`, see
its ``command.txt``): every ``h200_l2_sharing*.json.gz`` (one per device call; their stage keys
do not overlap) and every ``*.npz`` (work-group timelines and per-warp progress). Renders the
validation report's section "L2 sharing, measured": the L2's re-read curve from
microbenchmarks next to the device model's, the DRAM reads of GEMM slices with one to many
waves of work-groups against the timeline-driven model
(:func:`simulator.model.dram.dram_reads_timeline`), the one-operand variants, and the
per-warp progress through K.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from tiletraffic.simulator.model.dram import dram_reads_timeline, miss_probability
from tiletraffic.simulator.ir.nodes import FLOAT_BYTES

from experiments.h200.hardware import modelled_launch

from experiments.h200.data import read_json

MIB = 2 ** 20
DRAM_READ = "dram__bytes_read.sum"
STAGGER_BYTES = 16 * MIB  # what every staggered or placed reader reads
STAGGER_STEP_BYTES = 64 * 1024  # one paced step


def load_l2_sharing(directory: Path) -> dict | None:
    """The raw L2-sharing data of a report directory, or None when it has none.

    Returns ``{"record": merged stage records, "meta": {JSON name (without ``.gz``): meta},
    "arrays": {npz file stem: {array name: array}}, "problems": [text]}`` (the timelines
    and the progress run share case ids, so their arrays stay apart; ``problems`` lists
    stages a run reported as failed, and later the stages left out as incomplete).

    Raises:
        ValueError: two files hold the same stage.
    """
    d = Path(directory) / "l2_sharing"
    files = sorted(d.glob("h200_l2_sharing*.json.gz"))
    if not files:
        return None
    record: dict = {}
    meta: dict = {}
    source: dict[str, str] = {}
    problems: list[str] = []
    for f in files:
        rec, name = read_json(f), f.name.removesuffix(".gz")
        meta[name] = rec.get("meta", {})
        for stage, err in rec.get("stage_errors", {}).items():
            problems.append(f"`{stage}` failed in {name}: {err.strip().splitlines()[-1]}")
        for k, v in rec.items():
            if k in ("meta", "stage_wall_s", "stage_errors"):
                continue
            if k in record:
                raise ValueError(f"stage {k!r} is in both {source[k]} and {name}")
            record[k], source[k] = v, name
    arrays = {f.stem: dict(np.load(f)) for f in sorted(d.glob("*.npz"))}
    return {"record": record, "meta": meta, "arrays": arrays, "problems": problems}


def _pairs(data: dict, stage_name: str, plan_key: str) -> list[tuple[dict, dict]]:
    """(plan entry, Nsight record) of a stage, paired in launch order, or nothing (with a
    line in ``data["problems"]``) when ncu failed or the counts differ."""
    stage = data["record"].get(stage_name)
    if not stage:
        return []
    plans, recs = stage.get(plan_key) or [], stage.get("records") or []
    if stage.get("rc") != 0 or not recs or len(plans) != len(recs):
        data.setdefault("problems", []).append(
            f"`{stage_name}`: ncu exit status {stage.get('rc')}, {len(recs)} profiled "
            f"kernels for {len(plans)} launches; left out")
        return []
    return list(zip(plans, recs, strict=True))


def _dram(rec: dict) -> float:
    return float(rec["metrics"][DRAM_READ]["value"])


def _duration_s(rec: dict) -> float:
    return rec["metrics"]["gpu__time_duration.sum"]["value"] * 1e-9


def _latest_us(case: dict) -> float:
    """How far (µs) the last paced reader of a stagger/placed launch finished behind its
    clock (STAGGER_BYTES in steps of STAGGER_STEP_BYTES, one per ``step_ns``)."""
    steps = -(-STAGGER_BYTES // STAGGER_STEP_BYTES)
    return max((e - s - steps * case["step_ns"]) * 1e-3
               for s, e in zip(case["reader_start_ns"], case["reader_end_ns"], strict=True))


def window_rows(data: dict, model) -> list[dict]:
    """Re-read of a 1 MiB probe after streaming other data: measured miss fraction (probe
    read once and twice before) against the device model's miss probability at the same
    reuse distance (probe + data streamed between)."""
    probe = 1 * MIB
    by: dict[float, dict] = {}
    for plan, rec in _pairs(data, "l2_window", "plan"):
        if plan["what"] != "re-read":
            continue
        row = by.setdefault(plan["between_mib"], {"between_mib": plan["between_mib"],
                                                  "distance_mib": plan["between_mib"] + 1})
        row[f"miss_read_{plan['reads']}x"] = _dram(rec) / probe
    out = []
    for between in sorted(by):
        row = by[between]
        row["miss_model"] = miss_probability(row["distance_mib"] * MIB, model.l2_bytes,
                                             model.l2_associativity)
        out.append(row)
    return out


def half_miss_distance_mib(rows: list[dict], key: str = "miss_read_1x") -> float | None:
    """Reuse distance (MiB) at which the measured miss fraction crosses 0.5 (linear
    interpolation between measured points): the L2's effective capacity for this stream."""
    pts = [(r["distance_mib"], r[key]) for r in rows if key in r]
    for (d0, m0), (d1, m1) in zip(pts, pts[1:]):
        if m0 < 0.5 <= m1:
            return d0 + (0.5 - m0) * (d1 - d0) / (m1 - m0)
    return None


CURVE_ASSOCIATIVITIES = (8, 16, 32, 64, 128)


def fit_l2_curve(rows: list[dict], key: str = "miss_read_1x") -> tuple[int, int] | None:
    """The (L2 bytes, associativity) of :func:`simulator.model.dram.miss_probability` closest
    (least squares) to the measured re-read curve: L2 sizes 30..50 MiB in 1 MiB steps,
    associativities :data:`CURVE_ASSOCIATIVITIES`. A description of the microbenchmark, not
    of the hardware's organisation."""
    pts = [(r["distance_mib"] * MIB, r[key]) for r in rows if key in r]
    if len(pts) < 3:
        return None
    best = None
    for size_mib in range(30, 51):
        for ways in CURVE_ASSOCIATIVITIES:
            err = sum((miss_probability(d, size_mib * MIB, ways) - m) ** 2 for d, m in pts)
            if best is None or err < best[0]:
                best = (err, size_mib * MIB, ways)
    return best[1], best[2]


def measured_curve_rows(cases, model, curve: tuple[int, int] | None) -> list[dict]:
    """The validation cases beyond L2 predicted again with the L2 replaced by the fitted
    re-read curve (steady-state dispatch as before), next to the counter."""
    if curve is None:
        return []
    fitted = replace(model, l2_bytes=curve[0], l2_associativity=curve[1])
    out = []
    for c in cases:
        p = c.launch.prediction
        measured = c.counters.get(DRAM_READ)
        if c.n is None or not measured or p.methods.get("dram_read_bytes") == "dram: compulsory":
            continue
        again = modelled_launch(c.family, c.m, c.k, c.n, c.tile, fitted).prediction
        out.append({"case": c.case_id, "measured": measured, "predicted": p.dram_read_bytes,
                    "predicted_measured_curve": again.dram_read_bytes})
    return out


def reread_rows(data: dict) -> list[dict]:
    """Second pass over S bytes read just before: miss fraction per order of the re-read."""
    by: dict[int, dict] = {}
    for plan, rec in _pairs(data, "l2_reread", "plan"):
        if plan["pass"] == 2:
            row = by.setdefault(plan["size_mib"], {"size_mib": plan["size_mib"]})
            row[plan["sequence"]] = _dram(rec) / (plan["size_mib"] * MIB)
    return [by[s] for s in sorted(by)]


def policy_summary(data: dict, capacity_mib: float | None = None) -> dict | None:
    """The replacement probe (``l2_policy``): the re-reads whose old data (read twice, so
    re-referenced), probe and streamed data together exceed ``capacity_mib`` (the re-read
    curve's 50% point), the only ones that can tell LRU from a policy protecting
    re-referenced lines."""
    pairs = _pairs(data, "l2_policy", "plan")
    if not pairs or capacity_mib is None:
        return None
    rereads = [(plan, _dram(rec) / MIB) for plan, rec in pairs if plan["what"] == "re-read"]
    return {"re_reads": len(rereads), "max_miss": max(m for _, m in rereads),
            "telling": [{"old_mib": p["old_mib"], "between_mib": p["between_mib"],
                         "miss": m} for p, m in rereads
                        if p["old_reads"] == 2 and p["probe_reads"] == 1
                        and p["old_mib"] + 1 + p["between_mib"] > capacity_mib]}


STAGGER_BACKGROUND = {0: "none", 2: "stores streaming 512 MiB",
                      3: "reads of 8 MiB kept in L2"}


def stagger_rows(data: dict, stage_name: str = "stagger_paced") -> list[dict]:
    """Staggered readers of the same 16 MiB: their DRAM reads in units of the 16 MiB (1: one
    fill shared by all, G: none shared) per background on the other SMs, and how late the
    last paced reader finished against its clock (µs; paced runs only). Background 1
    (streaming reads) is left out: its own DRAM reads are not counted exactly enough to
    subtract (its background-only control differs from its bytes by about 0.3 of the
    16 MiB)."""
    out = []
    for case, rec in _pairs(data, stage_name, "driver"):
        bg = case["background"]
        if case["readers"] == 0 or bg not in STAGGER_BACKGROUND:
            continue
        resident = 8 * MIB if bg == 3 else 0  # the background's own first pass
        row = {"readers": case["readers"], "delay_us": case["delay_us"],
               "background": STAGGER_BACKGROUND[bg],
               "background_bytes_per_s": case["background_bytes"] / _duration_s(rec),
               "reads_of_data": (_dram(rec) - resident) / STAGGER_BYTES}
        if case.get("step_ns"):
            row["latest_us"] = _latest_us(case)
        out.append(row)
    return out


def sm_partitions(data: dict) -> dict | None:
    """Which L2 partition each SM uses (``smmap``): a 1 MiB probe read on SM 0 and re-read on
    SM s misses in SM s's own partition for about half its sectors (the half whose home is
    SM 0's partition, of which SM s's partition holds no copy) exactly when the two SMs are
    in different partitions. Returns ``{"same": [SM ids], "other": [SM ids],
    "miss_fraction": [per SM]}``."""
    pairs = _pairs(data, "smmap", "driver")
    if not pairs:
        return None
    miss = [rec["metrics"]["lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum"]["value"] * 32
            / MIB for _, rec in pairs]
    sms = [case["sm"] for case, _ in pairs]
    return {"same": [s for s, m in zip(sms, miss, strict=True) if m < 0.25],
            "other": [s for s, m in zip(sms, miss, strict=True) if m >= 0.25],
            "miss_fraction": miss}


def placed_rows(data: dict, stage_name: str = "placed") -> list[dict]:
    """Paced readers placed on SMs of one L2 partition or alternating between the two
    (``placed``: no background; ``placed_loaded``: the other SMs streaming stores): reads of
    the 16 MiB per placement, readers and delay, and (loaded) how late the last reader
    finished against its clock (µs) and the background's store rate."""
    out = []
    for case, rec in _pairs(data, stage_name, "driver"):
        row = {"placement": case["placement"], "readers": case["readers"],
               "delay_us": case["delay_us"], "reader_sm": case["reader_sm"],
               "reads_of_data": _dram(rec) / STAGGER_BYTES}
        if case.get("background"):
            row["latest_us"] = _latest_us(case)
            row["background_bytes_per_s"] = case["background_bytes"] / _duration_s(rec)
        out.append(row)
    return out


def _ranges(ids: list[int]) -> str:
    out, start = [], None
    for i, s in enumerate(ids):
        if start is None:
            start = s
        if i + 1 == len(ids) or ids[i + 1] != s + 1:
            out.append(f"{start}–{s}" if s > start else f"{s}")
            start = None
    return ", ".join(out)


def retention_us(row: dict, half_miss_mib: float | None) -> float | None:
    """How long a sector stays in L2 for an LRU cache of the measured size, filled at the
    slice's rate (own-partition lookup misses x 32 B per second): the reuse-distance limit
    expressed as a time."""
    if half_miss_mib is None or not row.get("l2_fill_bytes_per_s"):
        return None
    return half_miss_mib * MIB / row["l2_fill_bytes_per_s"] * 1e6


def _slice_cases(data: dict):
    """(case, Nsight record, timeline record or None, that stage's timeline arrays) of every
    GEMM slice, each Nsight record checked against its case's launch grid.

    Raises:
        ValueError: a record's grid differs from its case's (records and cases out of step).
    """
    rec = data["record"]
    for key, tkey, npz in (("slices", "slices_timelines", "slices_timelines"),
                           ("slices_2", "slices_2_timelines", "slices2_timelines")):
        stage = rec.get(key)
        if not stage:
            continue
        timelines = {t["id"]: t for t in rec.get(tkey, [])}
        grids = {d["id"]: d.get("grid") for d in stage.get("driver", [])}
        for case, ncu in _pairs(data, key, "cases"):
            grid = ncu["info"].get("Grid Size", "")
            expect = grids.get(case["id"])
            if expect and grid and grid.strip("()").replace(" ", "") != ",".join(
                    map(str, expect)):
                raise ValueError(f"{key}: Nsight record of grid {grid} paired with "
                                 f"{case['id']} (grid {expect})")
            yield case, ncu, timelines.get(case["id"]), data["arrays"].get(npz, {})


def max_running(start: np.ndarray, end: np.ndarray) -> int:
    """Most work-groups running at once in a timeline (at some work-group's start)."""
    s, e = np.sort(start), np.sort(end)
    started = np.arange(1, len(s) + 1)
    ended = np.searchsorted(e, s, side="right")
    return int((started - ended).max())


def slice_rows(data: dict, model, samples: int = 60) -> list[dict]:
    """DRAM reads of each slice in units of matrix B, per wave, against the lock-step and
    the timeline-driven estimates of the device model."""
    out = []
    for case, ncu, tl, arrays in _slice_cases(data):
        m, k, n, tile = case["m"], case["k"], case["n"], case["tile"]
        b_bytes = k * n * FLOAT_BYTES
        launch = modelled_launch(case["family"], m, k, n, tile, model)
        duration = _duration_s(ncu)
        row = {"case": case["id"], "family": case["family"], "m": m, "k": k, "n": n,
               "tile": tile, "rows_of_work_groups": m // tile,
               "b_reads_measured": _dram(ncu) / b_bytes,
               "b_reads_lockstep": launch.prediction.dram_read_bytes_lockstep / b_bytes,
               "b_reads_steady_state": launch.prediction.dram_read_bytes / b_bytes,
               "duration_s": duration,
               "l2_fill_bytes_per_s": ncu["metrics"][
                   "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum"]["value"] * 32
               / duration}
        if tl and "summary" in tl and f"{case['id']}__start_ns" in arrays:
            start = arrays[f"{case['id']}__start_ns"].astype(float) * 1e-9
            end = arrays[f"{case['id']}__end_ns"].astype(float) * 1e-9
            row["work_groups"] = len(start)
            row["running_at_once"] = max_running(start, end)
            row["waves"] = len(start) / row["running_at_once"]
            row["b_reads_timeline"] = dram_reads_timeline(
                launch.buffers, m * n * FLOAT_BYTES, tl["grid"][0], start, end,
                model.l2_bytes, model.l2_associativity, samples=samples)[0] / b_bytes
        out.append(row)
    return out


def variant_rows(data: dict) -> list[dict]:
    """The one-operand naive variants: DRAM reads in units of the operand they read."""
    out = []
    for v, rec in _pairs(data, "variants", "driver"):
        operand = "B" if v["kernel"] == "naive_b_only" else "A"
        size = (v["k"] * v["n"] if operand == "B" else v["m"] * v["k"]) * FLOAT_BYTES
        out.append({"kernel": v["kernel"], "operand": operand, "m": v["m"], "k": v["k"],
                    "n": v["n"], "tile": v["tile"], "check_ok": v["check_ok"],
                    "operand_reads_measured": _dram(rec) / size,
                    "duration_s": _duration_s(rec)})
    return out


def progress_rows(data: dict) -> list[dict]:
    """Per-warp progress through K: how far apart the warps of a work-group are, how far a
    work-group's progress departs from a straight line between its start and end (largest
    departure over its slots, as a fraction of its run; 99th percentile and maximum over
    work-groups), and how far apart in time work-groups of consecutive rows with the same
    columns pass the same k. "Within one wave" is a heuristic: gaps shorter than half the
    median work-group time."""
    out = []
    arrays = data["arrays"].get("progress", {})
    for rec in data["record"].get("progress", []):
        cid = rec["id"]
        if "error" in rec or f"{cid}__progress_ns" not in arrays:
            continue
        prog = arrays[f"{cid}__progress_ns"].astype(float) * 1e-3  # (groups, warps, slots) µs
        start = arrays[f"{cid}__start_ns"].astype(float) * 1e-3
        end = arrays[f"{cid}__end_ns"].astype(float) * 1e-3
        groups, _, slots = prog.shape
        warp_spread = prog.max(1) - prog.min(1)
        mean = prog.mean(1)  # (groups, slots): the work-group's time at each slot
        frac = (mean - start[:, None]) / (end - start)[:, None]
        departure = np.abs(frac - np.arange(slots) / slots).max(1)  # per work-group
        g0 = rec["grid"][0]
        rows = groups // g0
        t = np.sort(mean[:rows * g0].reshape(rows, g0, slots), axis=0)
        gaps = np.diff(t, axis=0).ravel()
        same_wave = gaps[gaps < 0.5 * float(np.median(end - start))]
        out.append({"case": cid, "check_ok": rec.get("check_ok"),
                    "warp_spread_us_p50": float(np.percentile(warp_spread, 50)),
                    "warp_spread_us_p99": float(np.percentile(warp_spread, 99)),
                    "progress_departure_p99": float(np.percentile(departure, 99)),
                    "progress_departure_max": float(departure.max()),
                    "row_gap_us_p50": float(np.percentile(same_wave, 50)) if same_wave.size
                    else None,
                    "row_gap_us_p90": float(np.percentile(same_wave, 90)) if same_wave.size
                    else None})
    return out


def l2_sharing_section(data: dict | None, cases, model, samples: int = 400
                       ) -> tuple[list[str], dict]:
    """Markdown lines of the section and its rows for ``validation.json`` (nothing when the
    report directory has no ``l2_sharing/``). ``cases``: the validation's
    :class:`experiments.h200.hardware.CaseComparison` list (re-predicted with the measured curve);
    ``samples``: Monte Carlo re-reads per buffer of the timeline estimates."""
    if data is None:
        return [], {}
    window, reread = window_rows(data, model), reread_rows(data)
    half = half_miss_distance_mib(window)
    policy, slices = policy_summary(data, half), slice_rows(data, model, samples)
    variants, progress = variant_rows(data), progress_rows(data)
    stagger, free = stagger_rows(data), stagger_rows(data, "stagger")
    partitions = sm_partitions(data)
    placed = placed_rows(data)
    loaded = placed_rows(data, "placed_loaded")
    curve = fit_l2_curve(window)
    again = measured_curve_rows(cases, model, curve)
    rows = {"window": window, "reread": reread, "policy": policy, "slices": slices,
            "variants": variants, "progress": progress, "stagger_paced": stagger,
            "stagger_free_running": free, "half_miss_distance_mib": half,
            "fitted_curve": None if curve is None else {"l2_bytes": curve[0],
                                                        "associativity": curve[1]},
            "predicted_with_measured_curve": again, "sm_partitions": partitions,
            "placed": placed, "placed_loaded": loaded,
            "problems": list(dict.fromkeys(data.get("problems", [])))}
    times = sorted(m.get("created_utc", "?")[11:16] for m in data["meta"].values())
    lines = [
        "## L2 sharing, measured", "",
        "Why do the naive kernels read more from DRAM than the estimates that follow their "
        "measured dispatch (lock-step waves, measured timeline), though less than the "
        "steady-state one? "
        f"`experiments/h200/l2_sharing/driver.py` ({len(times)} kept device calls on "
        f"{next(iter(data['meta'].values())).get('created_utc', '?')[:10]}, "
        f"{', '.join(times)} UTC, device clock; `l2_sharing/command.txt`) measured the L2 "
        "with microbenchmarks (re-read curve, re-read of whole buffers, replacement probe, "
        "staggered readers, which SM uses which L2 partition), the GEMM kernels on slices "
        "of M (one row of work-groups reads B "
        "once; a few rows are one wave; many rows many waves), stripped-down one-operand "
        "copies of the naive kernel, and every warp's progress through K (`%globaltimer` "
        "every 512 iterations). Counters from Nsight Compute; every GEMM and variant result "
        "checked against numpy (the microbenchmarks compute nothing to check).", ""]
    if rows["problems"]:
        lines += ["Left out: " + "; ".join(rows["problems"]) + ".", ""]
    if window:
        lines += [
            "**The L2's re-read curve** (`l2_window`): a 1 MiB probe is read (once or twice), "
            "other data is streamed, the probe is read again; its DRAM reads on the second "
            "read / 1 MiB is the miss fraction at that reuse distance (probe + streamed data). "
            f"The device model's curve ({model.l2_bytes // MIB} MiB, "
            f"{model.l2_associativity}-way, hashed sets) beside it:", "",
            "| streamed between | reuse distance | miss, probe read once | read twice | "
            "device model |", "|---|---|---|---|---|"]
        for r in window:
            lines.append(f"| {r['between_mib']:g} MiB | {r['distance_mib']:g} MiB | "
                         f"{r.get('miss_read_1x', float('nan')):.3f} | "
                         f"{r.get('miss_read_2x', float('nan')):.3f} | {r['miss_model']:.3f} |")
        lines.append("")
    if reread:
        lines += ["Re-reading a whole buffer of S bytes right after reading it (`l2_reread`; "
                  "64 KiB per work-group, 256 work-items each), miss fraction of the second "
                  "pass: in the same order (cyclic: reuse distance S), with the work-groups' "
                  "order reversed, and reversed with every chunk read by two work-groups in "
                  "both passes. About 1,056 such work-groups run at once, so up to about "
                  "66 MiB every chunk of a pass is read at the same time: the reversed "
                  "columns are not a reversed time order and not reuse-distance points; only "
                  "the cyclic column is:", "",
                  "| S | cyclic | reversed | reversed, two readers |", "|---|---|---|---|"]
        for r in reread:
            lines.append(f"| {r['size_mib']} MiB | {r.get('cyclic', float('nan')):.3f} | "
                         f"{r.get('reverse', float('nan')):.3f} | "
                         f"{r.get('dup_reverse', float('nan')):.3f} |")
        lines.append("")
    if stagger:
        delays = sorted({r["delay_us"] for r in stagger})
        lines += ["**Staggered readers** (`stagger_paced`): G work-groups, one per SM, read "
                  "the same 16 MiB in the same order on a clock (one 64 KiB step every 6 µs), "
                  "each a fixed delay behind the one before, so consecutive readers stay that "
                  "far apart; the other SMs run a background until every reader is done. "
                  "The readers' DRAM reads in units of the 16 MiB (1: all share one fill; G: "
                  "none shared), by delay between consecutive readers, with, in parentheses "
                  "where 1 µs or more, how far (µs) the last reader finished behind its clock "
                  "(it could not keep the pace); the background's rate is its own bytes per "
                  "second:", "",
                  "| background (rate) | G | " + " | ".join(f"{d} µs" for d in delays) +
                  " | last reader behind its clock |", "|---|---|" + "---|" * (len(delays) + 1)]
        keys = sorted({(r["background"], r["readers"]) for r in stagger},
                      key=lambda k: (list(STAGGER_BACKGROUND.values()).index(k[0]), k[1]))
        for bg, g in keys:
            sel = {r["delay_us"]: r for r in stagger if r["background"] == bg
                   and r["readers"] == g}
            rate = float(np.median([r["background_bytes_per_s"] for r in sel.values()]))
            late = max(r.get("latest_us", 0.0) for r in sel.values())
            lines.append(f"| {bg}" + (f" ({rate / 1e12:.1f} TB/s)" if rate else "") +
                         f" | {g} | " + " | ".join(_reads_cell(sel[d]) if d in sel else "—"
                                                   for d in delays)
                         + f" | up to {max(late, 0.0):.0f} µs |")
        lines += ["", "(A first version, `stagger`, let the readers run free: later readers "
                  "caught up with the first, so its delays did not hold; its data are kept in "
                  "`h200_l2_sharing_stagger.json.gz` and not used here.)", ""]
    if partitions:
        mid = partitions["miss_fraction"]
        low, high = [m for m in mid if m < 0.25], [m for m in mid if m >= 0.25]
        lines += ["**SMs and L2 partitions** (`smmap`): a 1 MiB probe read on SM 0, then "
                  "re-read on SM s; the fraction of its sectors that miss in SM s's own L2 "
                  f"partition is at most {max(low, default=0):.3f} for "
                  f"{len(partitions['same'])} SMs (SM 0's partition: "
                  f"{_ranges(partitions['same'])}) and "
                  f"{min(high, default=0):.3f}–{max(high, default=0):.3f} for the other "
                  f"{len(partitions['other'])} ({_ranges(partitions['other'])}): the "
                  "half of the probe whose home is the other partition has no copy there."]
        if placed:
            by = {}
            for p in placed:
                by.setdefault(p["placement"], []).append(p["reads_of_data"])
            lines[-1] += (" Paced readers of the same 16 MiB placed on these SMs (`placed`; "
                          "G = " + ", ".join(str(g) for g in sorted({p["readers"] for p in placed}))
                          + ", delays " + ", ".join(f"{d:g}" for d in sorted(
                              {p["delay_us"] for p in placed})) + " µs, no background) read "
                          "it from DRAM " + "; ".join(
                              f"{min(v):.2f}–{max(v):.2f} times on {k}" for k, v in by.items())
                          + ": a fill made for one partition serves the other.")
        if loaded:
            delays = sorted({p["delay_us"] for p in loaded})
            rate = float(np.median([p["background_bytes_per_s"] for p in loaded]))
            lines += ["", f"With the other SMs streaming stores ({rate / 1e12:.1f} TB/s; "
                      "`placed_loaded`, G = 8), reads of the 16 MiB by delay between "
                      "consecutive readers (in parentheses, where 1 µs or more, how far the "
                      "last reader finished behind its clock):", "",
                      "| placement | " + " | ".join(f"{d:g} µs" for d in delays) + " |",
                      "|---|" + "---|" * len(delays)]
            for name in dict.fromkeys(p["placement"] for p in loaded):
                sel = {p["delay_us"]: p for p in loaded if p["placement"] == name}
                lines.append(f"| {name} | " + " | ".join(
                    _reads_cell(sel[d]) if d in sel else "—" for d in delays) + " |")
        lines.append("")
    if slices:
        lines += ["**GEMM slices** (N = 4096 unless named; K = 4096 unless named; caches "
                  "flushed before each kernel; T = tile width B). \"Reads of matrix B\" is "
                  "all DRAM bytes read divided by the size of matrix B (K × N × 4 bytes): 1 "
                  "plus A's small share when every sector comes from DRAM once; \"per "
                  "wave\" divides it by the waves (work-groups / most running at once, from "
                  "the timeline; shown from 1.5 waves on). Beside it the device model's "
                  "estimates for the same slice in the same unit: lock-step waves, "
                  "steady-state dispatch, and the measured timeline (Monte Carlo over "
                  f"{samples} sampled re-reads of each buffer's stripes); \"—\" where a "
                  "slice has no timeline or less than 1.5 waves:", "",
                  "| slice | kernel time | rows of work-groups | waves | reads of matrix B, "
                  "measured | per wave | lock-step | steady-state | timeline |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in slices:
            waves = r.get("waves")
            per_wave = r["b_reads_measured"] / waves if waves and waves >= 1.5 else None
            lines.append(
                f"| {r['case']} | {r['duration_s'] * 1e6:.0f} µs | {r['rows_of_work_groups']} | "
                + ("—" if waves is None else f"{waves:.1f}") + f" | {r['b_reads_measured']:.2f} | "
                + ("—" if per_wave is None else f"{per_wave:.2f}") + " | "
                f"{r['b_reads_lockstep']:.2f} | {r['b_reads_steady_state']:.2f} | "
                + (f"{r['b_reads_timeline']:.2f}" if "b_reads_timeline" in r else "—") + " |")
        lines.append("")
    if variants:
        lines += ["**One operand only** (`naive_b_only`: `acc += B[k*N + col]`; "
                  "`naive_a_only`: `acc += A[row*K + k]`; the naive kernel's work-item "
                  "mapping and loop, K = N = 4096), DRAM bytes read divided by the size of "
                  "that operand:", "",
                  "| kernel | M | tile width | reads of the operand | kernel time |",
                  "|---|---|---|---|---|"]
        for v in variants:
            lines.append(f"| {v['kernel']} | {v['m']} | {v['tile']} | "
                         f"{v['operand_reads_measured']:.2f} | {v['duration_s'] * 1e6:.0f} µs |")
        lines.append("")
    if progress:
        lines += ["**Per-warp progress** (`progress.npz`; the instrumented loop is a "
                  "diagnostic build): spread of the warps of one work-group at the same k, "
                  "the largest departure of a work-group's progress from a straight line "
                  "between its start and end (fraction of its run; 99th percentile and "
                  "maximum over work-groups), and the time between work-groups of "
                  "consecutive rows (same columns of B) passing the same k, over the gaps "
                  "shorter than half a work-group's run (taken as one wave):", "",
                  "| slice | warp spread p50 / p99 | departure p99 / max | same-k gap between "
                  "rows, p50 / p90 |", "|---|---|---|---|"]
        for p in progress:
            gap = ("—" if p["row_gap_us_p50"] is None else
                   f"{p['row_gap_us_p50']:.1f} / {p['row_gap_us_p90']:.1f} µs")
            lines.append(f"| {p['case']} | {p['warp_spread_us_p50']:.2f} / "
                         f"{p['warp_spread_us_p99']:.2f} µs | "
                         f"{p['progress_departure_p99']:.3f} / {p['progress_departure_max']:.3f} "
                         f"| {gap} |")
        lines.append("")
    if again:
        lines += [f"**The validation cases beyond L2 with the measured curve** (fitted: "
                  f"{curve[0] // MIB} MiB, {curve[1]}-way in "
                  "`simulator.dram_model.miss_probability`, least squares over the re-read "
                  "points; everything else as predicted above, steady-state dispatch):", "",
                  "| case | measured | predicted (device model) | with the measured curve |",
                  "|---|---|---|---|"]
        for r in again:
            m = r["measured"]
            lines.append(f"| {r['case']} | {m / 1e9:.2f} GB | {r['predicted'] / 1e9:.2f} GB "
                         f"({(r['predicted'] - m) / m * 100:+.0f}%) | "
                         f"{r['predicted_measured_curve'] / 1e9:.2f} GB "
                         f"({(r['predicted_measured_curve'] - m) / m * 100:+.0f}%) |")
        lines.append("")
    lines += [*_findings(rows), ""]
    return lines, rows


def _reads_cell(row: dict) -> str:
    """A staggered/placed table cell: reads of the data, and in parentheses how far (µs)
    the last reader finished behind its clock where that is 1 µs or more."""
    lag = row.get("latest_us", 0.0)
    return f"{row['reads_of_data']:.2f}" + (f" ({lag:.0f})" if lag >= 1 else "")


def _find(rows: list[dict], **want) -> dict | None:
    return next((r for r in rows if all(r.get(k) == v for k, v in want.items())), None)


def _findings(rows: dict) -> list[str]:
    out = []
    window, half = rows["window"], rows["half_miss_distance_mib"]
    cyclic = {r["size_mib"]: r["cyclic"] for r in rows["reread"] if "cyclic" in r}
    if window and half is not None:
        quiet = [r for r in window
                 if max(r.get("miss_read_1x", 1), r.get("miss_read_2x", 0)) < 0.01]
        at41 = _find(window, distance_mib=41)
        text = ("- **For simple streams the L2 acts as an LRU cache of about "
                f"{half:.0f}–44 MiB.** " if cyclic.get(40, 1) < 0.5 else
                f"- **For simple streams the L2 acts as an LRU cache of about {half:.0f} MiB.** ")
        if quiet:
            text += (f"A probe re-read after up to {max(r['between_mib'] for r in quiet):g} MiB "
                     "of other data is found (miss fraction at most "
                     f"{max(max(r['miss_read_1x'], r.get('miss_read_2x', 0)) for r in quiet):.3f}"
                     ", probe read once or twice); the miss fraction crosses "
                     f"one half at a reuse distance of {half:.0f} MiB. ")
        if cyclic:
            text += ("A whole buffer re-read in the same order misses "
                     + ", ".join(f"{cyclic[s]:.2f} at {s} MiB" for s in sorted(cyclic)
                                 if 32 <= s <= 56) + ": a little more capacity for that "
                     "stream. ")
        if at41 and "miss_read_2x" in at41:
            text += (f"A probe read twice is not kept longer than one read once "
                     f"({at41['miss_read_2x']:.3f} vs {at41['miss_read_1x']:.3f} at 41 MiB). ")
        last = window[-1]
        text += (f"The device model's guessed curve (50 MiB, 16-way) misses "
                 f"{last['miss_model']:.2f} at {last['distance_mib']:g} MiB where the hardware "
                 f"misses {last.get('miss_read_1x', float('nan')):.2f}: it keeps more than "
                 "the hardware beyond about 30 MiB.")
        out.append(text)
    policy = rows["policy"]
    if policy and policy["telling"]:
        out.append(
            "- **No sign of a policy that protects re-referenced lines**: where old data "
            "read twice, the probe and the streamed data together exceed the curve's "
            "midpoint, the probe read once was still found ("
            + "; ".join(f"{t['old_mib']} MiB old, {t['between_mib']} MiB between: miss "
                        f"{t['miss']:.3f}" for t in policy["telling"])
            + f"); the other {policy['re_reads'] - len(policy['telling'])} re-reads of "
            "`l2_policy` (all found, miss at most "
            f"{policy['max_miss']:.3f}) fit in the L2 either way and cannot tell.")
    stagger = rows["stagger_paced"]
    stores = [r for r in stagger if r["background"] == STAGGER_BACKGROUND[2]]
    calm = [r for r in stagger if r["background"] != STAGGER_BACKGROUND[2]]
    if stores and calm:
        g = max(r["readers"] for r in stores)
        line = {r["delay_us"]: r["reads_of_data"] for r in stores if r["readers"] == g}
        rate = float(np.median([r["background_bytes_per_s"] for r in stores]))
        life = half * MIB / rate * 1e6 if half else None
        out.append(
            "- **A sector lives about (L2 capacity) / (rate of new lines).** Readers up to "
            f"{max(r['delay_us'] for r in calm):g} µs apart share one fill (at most "
            f"{max(r['reads_of_data'] for r in calm):.2f} reads) when nothing else fills the "
            f"L2. With the other SMs writing new lines at {rate / 1e12:.1f} TB/s, {g} readers "
            "read the data " + ", ".join(f"{v:.2f}" for _, v in sorted(line.items()))
            + " times at delays of " + ", ".join(f"{d:g}" for d in sorted(line)) + " µs"
            + (f": about half the re-reads miss where the delay reaches {half:.0f} MiB / "
               f"{rate / 1e12:.1f} TB/s = {life:.0f} µs, as an LRU cache of the re-read "
               "curve's size would." if life else "."))
    loaded = rows.get("placed_loaded") or []
    one = {p["delay_us"]: p for p in loaded if p["placement"] == "one partition"}
    alt = {p["delay_us"]: p for p in loaded if p["placement"] == "alternating partitions"}
    kept = [d for d in sorted(set(one) & set(alt))
            if max(one[d]["latest_us"], alt[d]["latest_us"]) < 10]
    if kept:
        out.append(
            "- **Under fill pressure, readers in both partitions lose the shared fill "
            "sooner than readers in one**: at delays where the readers kept their clock ("
            + ", ".join(f"{d:g} µs: {one[d]['reads_of_data']:.2f} in one partition vs "
                        f"{alt[d]['reads_of_data']:.2f} alternating" for d in kept)
            + "), as if data read from both halves of the GPU had less of the L2 to live in "
            "(a copy in each partition).")
    progress = rows["progress"]
    if progress:
        naive = [p for p in progress if p["case"].startswith("gemm-naive")]
        tiled = [p for p in progress if p["case"].startswith("gemm-tiled")]
        text = ("- **Warps do not drift apart**: the warps of a work-group pass the same k "
                f"within {max(p['warp_spread_us_p99'] for p in progress):.2f} µs (99th "
                "percentile, every slice)")
        if naive:
            text += (" and a naive work-group's progress departs from a straight line by at "
                     f"most {max(p['progress_departure_max'] for p in naive):.3f} of its run "
                     f"(99th percentile {max(p['progress_departure_p99'] for p in naive):.3f}): "
                     "the drift candidate of the dispatch section is ruled out, and the "
                     "timeline model's constant-rate assumption holds for the naive kernels")
        if tiled:
            text += (f" (tiled: up to {max(p['progress_departure_max'] for p in tiled):.3f}; "
                     "work-groups of consecutive rows pass the same k up to "
                     f"{max(p['row_gap_us_p90'] or 0 for p in tiled):.0f} µs apart within one "
                     "wave (90th percentile), so they share less even in the first wave)")
        out.append(text + ".")
    slices = rows["slices"]

    def get(family: str, m: int, tile: int, k: int = 4096, n: int = 4096):
        return _find(slices, family=family, m=m, tile=tile, k=k, n=n)
    one = [r for r in (get("gemm-naive", 64, t) for t in (8, 16, 32)) if r]
    later = [(t, m, r) for t in (8, 16, 32) for m in (128, 256, 1024)
             if (r := get("gemm-naive", m, t)) and r.get("waves", 0) >= 1.5]
    if one and later:
        out.append(
            "- **Naive work-groups mostly share the fills of matrix B within the first wave; "
            "with tile width 16 the sharing breaks down from the second wave on.** One wave "
            "(M = 64), reads of matrix B: "
            + ", ".join(f"T = {r['tile']}: {r['b_reads_measured']:.2f}" for r in one)
            + ". Several waves, reads of matrix B per wave: "
            + ", ".join(f"T = {t}, M = {m}: {r['b_reads_measured'] / r['waves']:.2f}"
                        for t, m, r in later)
            + ". The timeline model (every reader of a B sector at its measured time, "
            "constant-rate progress, which the progress table confirms) gives "
            + ", ".join(f"{r['b_reads_timeline'] / r['waves']:.2f}" for t, m, r in later
                        if "b_reads_timeline" in r)
            + " per wave for the same slices." + _retention_text(rows))
    variants = rows["variants"]
    if variants and slices:
        b = {(v["m"], v["tile"]): v for v in variants if v["operand"] == "B"}
        pairs = [(m, t, v, get("gemm-naive", m, t)) for (m, t), v in sorted(b.items())]
        pairs = [(m, t, v, f) for m, t, v, f in pairs if f]
        if pairs:
            out.append(
                "- **Dropping the A load makes each kernel faster and raises its reads of "
                "matrix B** (B-only copy vs full kernel, whose figure includes A's small "
                "share): "
                + "; ".join(f"T = {t}, M = {m}: {v['operand_reads_measured']:.2f} "
                            f"({v['duration_s'] * 1e6:.0f} µs) vs {f['b_reads_measured']:.2f} "
                            f"({f['duration_s'] * 1e6:.0f} µs)" for m, t, v, f in pairs)
                + ". Whether speed is the cause is not shown (among the B-only copies the "
                "fastest, T = 32, reads B least). The A-only copies read their A (1–16 MiB, "
                "far below the L2) once, which says nothing about A inside the GEMM.")
    k2048 = [r for r in slices if r["k"] == 2048 and r.get("waves")]
    n4224 = [r for r in slices if r["n"] == 4224 and r["family"] == "gemm-naive"]
    if k2048 or n4224:
        parts = []
        if n4224:
            parts.append("Aligning waves to rows of work-groups (N = 4224: 4 rows per wave "
                         "exactly) changes nothing (" + ", ".join(
                             f"M = {r['m']}: {r['b_reads_measured']:.2f}" for r in n4224)
                         + " reads of matrix B)")
        if k2048:
            parts.append(("with" if n4224 else "With") + " K = 2048 (matrix B 32 MiB, B and "
                         "A together 34–40 MiB: about the L2's effective size) the reads of "
                         "matrix B "
                         "per wave drop to " + ", ".join(
                             f"{r['b_reads_measured'] / r['waves']:.2f}" for r in k2048)
                         + ", still above every estimate")
        out.append("- " + "; ".join(parts) + ".")
    again = rows["predicted_with_measured_curve"]
    if again:
        def within(key: str, family: str) -> str:
            sel = [r for r in again if r["case"].startswith(family)]
            ok = sum(abs(r[key] - r["measured"]) <= 0.25 * r["measured"] for r in sel)
            return f"{ok} of {len(sel)}"
        out.append(
            "- **Consequence for the prediction**: with the measured curve in place of the "
            "guessed one, the steady-state estimate is within 25% for "
            f"{within('predicted_measured_curve', 'gemm-tiled')} tiled cases beyond L2 "
            f"(guessed curve: {within('predicted', 'gemm-tiled')}) and for "
            f"{within('predicted_measured_curve', 'gemm-naive')} naive ones (guessed: "
            f"{within('predicted', 'gemm-naive')}). The device model keeps the guessed "
            "curve, on which the targets table was scored: the measured one alone does not "
            "make the prediction better, and cannot reach the naive kernels, whose extra reads are "
            "not set by reuse distance or by how long the L2 keeps a sector. Open: what "
            "makes a naive work-group of tile width 16 in the second and later waves fetch a "
            "sector that another fetched microseconds before; not the L2 partitions as "
            "such (without load, readers in both share one fill; under store pressure they "
            "lose it somewhat sooner), so something that comes with the GEMM's load.")
    return ["What these show:", "", *out] if out else []


def _retention_text(rows: dict) -> str:
    r = _find(rows["slices"], case="gemm-naive-M1024-K4096-N4096-T16")
    t = retention_us(r, rows["half_miss_distance_mib"]) if r else None
    gap = _find(rows["progress"], case="gemm-naive-M1024-K4096-N4096-T16")
    if t is None or gap is None or gap["row_gap_us_p90"] is None:
        return ""
    return (f" In the M = 1024 slice the L2 takes in new sectors at "
            f"{r['l2_fill_bytes_per_s'] / 1e9:.0f} GB/s "
            "(`lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum` × 32 B / kernel time), so by "
            f"the staggered-reader result a sector lives about {t:.0f} µs, while the readers "
            f"of one wave pass it {gap['row_gap_us_p90']:.1f} µs apart (90th percentile): "
            "how long the L2 keeps a sector does not explain the extra reads.")
