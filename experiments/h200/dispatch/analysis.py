"""The measured work-group dispatch of the H200 and what it explains about DRAM reads.

Reads ``<report dir>/dispatch/`` (written by :mod:`experiments.h200.dispatch.driver`, see its
``command.txt``): ``timelines.npz`` (start and end of every work-group of a launch, from
``%globaltimer``), ``h200_dispatch.json.gz``, ``h200_dispatch_lsu.json.gz`` and
``ncu_full.tar.gz`` (Nsight Compute's full set as CSV). Renders the validation report's
section "Work-group dispatch, measured": whether the work-groups run in waves or start one by
one, the DRAM model driven by the measured timelines
(:func:`simulator.model.dram.dram_reads_timeline`) next to the counters, the L2 partition
counters, and the load-queue stalls of the naive B = 32 kernel.
"""
from __future__ import annotations

import tarfile
from pathlib import Path

import numpy as np

from tiletraffic.simulator.model.device_model import DEVICE_MODELS
from tiletraffic.simulator.model.dram import dram_reads_timeline
from tiletraffic.simulator.ir.nodes import FLOAT_BYTES
from tiletraffic.simulator.model.queueing import drain_time_s

from experiments.h200.hardware import CaseComparison
from experiments.h200.ncu import parse_ncu_raw_csv

from experiments.h200.data import load_json, read_json

PARTITION_METRICS = (
    ("lts__t_sectors_srcunit_tex_op_read.sum", "L2 sectors read for the SMs"),
    ("lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum", "  of which missed in the SMs' L2 partition"),
    ("lts__t_sectors_srcunit_ltcfabric.sum", "sectors asked of the other partition"),
    ("lts__t_sectors_srcunit_ltcfabric_lookup_miss.sum", "  of which missed there too"),
    ("dram__sectors_read.sum", "DRAM sectors read"),
)
STALL_METRICS = ("lg_throttle", "long_scoreboard", "not_selected", "dispatch_stall",
                 "mio_throttle", "barrier")


def _case_key(family: str, n: int, tile: int) -> str:
    return f"{family}-N{n}-T{tile}"


def load_dispatch(directory: Path) -> dict | None:
    """The measured dispatch data of a report directory, or None when it has none."""
    d = Path(directory) / "dispatch"
    if not (d / "h200_dispatch.json.gz").exists() or not (d / "timelines.npz").exists():
        return None
    out = {"record": read_json(d / "h200_dispatch.json.gz"),
           "timelines": dict(np.load(d / "timelines.npz"))}
    lsu = load_json(d / "h200_dispatch_lsu.json.gz")
    if lsu is not None:
        out["lsu"] = lsu.get("lsu_rate")
    if (d / "ncu_full.tar.gz").exists():
        with tarfile.open(d / "ncu_full.tar.gz") as tar:
            try:
                member = tar.extractfile("raw.csv")
            except KeyError:  # an archive without Nsight's raw page: no counter tables
                member = None
            records = parse_ncu_raw_csv(member.read().decode()) if member else []
        if records:
            cases = out["record"].get("ncu_full", {}).get("cases", [])
            out["ncu_full"] = {c["id"]: r["metrics"] for c, r in zip(cases, records)}
    return out


def _value(metrics: dict, metric: str) -> float | None:
    value = metrics.get(metric, {}).get("value")
    return float(value) if isinstance(value, (int, float)) else None


def timeline_rows(dispatch: dict, cases: list[CaseComparison], model,
                  samples: int = 150) -> list[dict]:
    """One row per measured timeline of a GEMM case that the validation also has: waves or
    steady starts, and DRAM reads from the timeline with the whole L2 and with one L2
    partition (half of it) against the counter and the predictions."""
    by_key = {_case_key(c.family, c.m, c.tile): c for c in cases if c.n is not None}
    out = []
    for rec in dispatch["record"].get("timelines", []):
        c = by_key.get(rec["id"])
        if (c is None or "summary" not in rec
                or c.launch.prediction.methods.get("dram_read_bytes") == "dram: compulsory"):
            continue  # everything fits in L2: nothing for the dispatch to change
        start = dispatch["timelines"][f"{rec['id']}__start_ns"].astype(float) * 1e-9
        end = dispatch["timelines"][f"{rec['id']}__end_ns"].astype(float) * 1e-9
        s = rec["summary"]
        duration = float(np.median(end - start))
        steady_spread = s["groups_0"] / s["concurrent_at_median_start"] * duration
        spread = s["row_start_spread_ns_percentiles"]["50"] * 1e-9
        p = c.launch.prediction
        outputs = c.m * c.n * FLOAT_BYTES  # C
        row = {"case": c.case_id, "work_groups": s["work_groups"],
               "running_at_once": s["concurrent_at_median_start"],
               "work_group_time_s": duration, "row_start_spread_s": spread,
               "row_start_spread_steady_s": steady_spread,
               "spread_ratio": spread / steady_spread,
               "dram_measured": c.counters.get("dram__bytes_read.sum"),
               "dram_predicted": p.dram_read_bytes, "dram_lockstep": p.dram_read_bytes_lockstep}
        for label, l2 in (("dram_timeline_l2", model.l2_bytes),
                          ("dram_timeline_partition", model.l2_bytes // 2)):
            row[label] = dram_reads_timeline(c.launch.buffers, outputs, s["groups_0"], start,
                                             end, l2, model.l2_associativity,
                                             samples=samples)[0]
        out.append(row)
    return out


def _err(p: float, m: float | None) -> str:
    return f"{(p - m) / m * 100:+.0f}%" if m else "—"


def dispatch_section(dispatch: dict | None, cases: list[CaseComparison], model,
                     samples: int = 150, appendix: list[str] | None = None
                     ) -> tuple[list[str], list[dict]]:
    """Markdown lines of the section, and its rows for ``validation.json`` (empty when the
    directory has no ``dispatch/``); ``appendix`` (e.g. :func:`tail_lines`) ends it."""
    if dispatch is None:
        return [], []
    rows = timeline_rows(dispatch, cases, model, samples)
    meta = dispatch["record"].get("meta", {})
    lines = [
        "## Work-group dispatch, measured", "",
        "`experiments/h200/dispatch/driver.py` (one device call on "
        f"{meta.get('created_utc', '?')[:16].replace('T', ' ')} UTC, `dispatch/command.txt`) "
        "ran the same generated kernels built as CUDA with two `%globaltimer` reads and a "
        "`%smid` read per work-group (`gpu.cuda.timeline_source`): when every work-group "
        "started and ended, and on which SM (`dispatch/timelines.npz`). A *row* of "
        "work-groups is all work-groups with the same `get_group_id(1)`: they read the same "
        "rows of A, and between them every column of B, which the next row reads again. "
        "The *row start spread* is the time between the first and the last start in a row "
        "(median over the rows). Steady-state dispatch (work-groups start one by one as "
        "others end, what the DRAM prediction assumes) would spread a row over (work-groups "
        "per row) / (running at once) × (work-group time); lock-step waves (the other "
        "estimate above) over nothing. The ratio says which the hardware did.", "",
        "| case | work-groups | running at once | work-group time | row start spread, "
        "measured | steady-state would be | ratio |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['case']} | {r['work_groups']:,} | {r['running_at_once']:,} | "
                     f"{r['work_group_time_s'] * 1e6:.0f} µs | "
                     f"{r['row_start_spread_s'] * 1e6:.0f} µs | "
                     f"{r['row_start_spread_steady_s'] * 1e6:.0f} µs | {r['spread_ratio']:.2f} |")
    lines += [
        "", "The DRAM model driven by these measured timelines "
        "(`simulator.dram_model.dram_reads_timeline`: each work-group reads its stripes of A "
        "and B at a constant rate from its start to its end; the reuse distance of a re-read "
        "is the distinct data all work-groups touched since the previous touch; 16-way L2, "
        f"{samples} sampled re-reads per buffer), with the whole L2 and with one of its two "
        "partitions, next to the counter and the predictions of the sections above. These "
        "timeline figures use the measured run, so they are explanations, not predictions.",
        "", "| case | measured | predicted (steady-state) | lock-step | timeline, 50 MiB L2 "
        "| timeline, 25 MiB (one partition) |", "|---|---|---|---|---|---|"]
    for r in rows:
        m = r["dram_measured"]
        cells = [f"{r[k] / 1e9:.2f} GB ({_err(r[k], m)})" for k in
                 ("dram_predicted", "dram_lockstep", "dram_timeline_l2",
                  "dram_timeline_partition")]
        lines.append(f"| {r['case']} | {m / 1e9:.2f} GB | " + " | ".join(cells) + " |")
    lines += ["", *_findings(rows), *_partition_lines(dispatch), *_stall_lines(dispatch)]
    lines += [*appendix] if appendix else [""]
    return lines, rows


def tail_rows(dispatch: dict | None, cases: list[CaseComparison]) -> list[dict]:
    """Per measured timeline of a kernel with barriers whose SMs get more work-groups than
    they hold: the drain of each SM (its last work-group's start to its last end; median,
    10th and 90th percentile over the SMs) against :func:`simulator.model.queueing.drain_time_s`
    of the build the timelines were measured on (the CUDA build: ``counted``)."""
    if dispatch is None:
        return []
    by_key = {_case_key(c.family, c.m, c.tile): c for c in cases if c.n is not None}
    out = []
    for rec in dispatch["record"].get("timelines", []):
        c = by_key.get(rec["id"])
        key = f"{rec['id']}__start_ns"
        if c is None or key not in dispatch["timelines"]:
            continue
        p = c.counted.prediction
        resident = min(p.resident_work_groups_per_cu, p.work_groups_per_cu)
        if p.barrier_intervals_per_cu <= 0 or p.work_groups_per_cu <= resident:
            continue
        start = dispatch["timelines"][key].astype(np.int64)
        end = dispatch["timelines"][f"{rec['id']}__end_ns"].astype(np.int64)
        unit = dispatch["timelines"][f"{rec['id']}__cu"]
        drains, tails = [], []
        for u in np.unique(unit):
            s, e = start[unit == u], end[unit == u]
            last = s.max()
            drains.append(e.max() - last)
            # the measured tail: the drain less the time the work still left at the last
            # start would take at the unit's completion rate before it
            running = (s <= last) & (e > last)
            left = ((e[running] - last) / (e[running] - s[running])).sum()
            done = int((e <= last).sum())
            if done and last > s.min():
                tails.append(e.max() - last - left / (done / (last - s.min())))
        drains = np.array(drains) * 1e-9
        model = drain_time_s(p.time_terms_s[p.bound + "_s"], p.barrier_intervals_per_cu,
                             p.work_groups_per_cu, resident,
                             DEVICE_MODELS[p.device_model].memory_latency_s)
        out.append({"case": c.case_id, "work_groups_per_cu": p.work_groups_per_cu,
                    "resident": resident, "drain_measured_s": float(np.median(drains)),
                    "drain_measured_p10_s": float(np.percentile(drains, 10)),
                    "drain_measured_p90_s": float(np.percentile(drains, 90)),
                    "drain_model_s": model, "tail_s": p.time_terms_s["tail_s"],
                    "tail_measured_s": float(np.median(tails)) * 1e-9 if tails else None,
                    "device_model": p.device_model})
    return out


def tail_lines(rows: list[dict]) -> list[str]:
    """Markdown for :func:`tail_rows` (nothing without rows)."""
    if not rows:
        return []
    errs = [r["drain_model_s"] / r["drain_measured_s"] - 1 for r in rows]
    model = rows[0]["device_model"]
    lines = [
        "### The tail of a launch", "",
        "When an SM gets more work-groups than it holds at once, its last ones run with fewer "
        "companions and hide less of each other's latency. The time model charges this tail "
        "(`tail_s`, `simulator.queueing.tail_latency_s`; only kernels with barriers "
        "have one, since only they have latency in the model) assuming that when an SM's "
        "last work-group starts, its resident work-groups are spread evenly over their work "
        "and end one by one, each stage at the mean value analysis' throughput of those left. "
        "Below, the drain that assumption implies (from an SM's last work-group start to the "
        "SM's last end) is set against the same timelines (median over the SMs, 10th–90th "
        f"percentile), with model `{model}`, the build the timelines were measured on; then "
        "the tail the prediction charges beyond the steady state against a measured estimate "
        "of it (per SM: drain − W / r, W the work-groups' remaining fractions summed at "
        "the SM's last start, r the work-groups it completed per unit time before then; "
        "median over the SMs):", "",
        "| case | work-groups per SM (model) | resident | drain, measured | drain, model "
        "| error | tail charged | tail, measured estimate |", "|---|---|---|---|---|---|---|---|"]
    for r, e in zip(rows, errs):
        measured = r.get("tail_measured_s")
        lines.append(
            f"| {r['case']} | {r['work_groups_per_cu']:,} | {r['resident']} | "
            f"{r['drain_measured_s'] * 1e6:.0f} µs ({r['drain_measured_p10_s'] * 1e6:.0f}–"
            f"{r['drain_measured_p90_s'] * 1e6:.0f}) | {r['drain_model_s'] * 1e6:.0f} µs | "
            f"{e * 100:+.0f}% | {r['tail_s'] * 1e6:.0f} µs | "
            + (f"{measured * 1e6:.0f} µs |" if measured is not None else "— |"))
    pairs = [(r["case"], r["tail_s"] / r["tail_measured_s"]) for r in rows
             if r.get("tail_measured_s")]
    off = [f"{case} ({ratio:.1f}×)" for case, ratio in pairs if not 0.67 <= ratio <= 1.5]
    lines += ["", f"The model's drain is {min(errs) * 100:+.0f}% to {max(errs) * 100:+.0f}% "
              "off the measured one; the tail it charges is within a factor 1.5 of the "
              f"measured estimate in {len(pairs) - len(off)} of {len(pairs)} cases"
              + (f", not in {', '.join(off)}" if off else "")
              + ". The tail term came into the model after these timelines had been measured "
              "(it has no value of its own: it reuses the mean value analysis' demand and "
              "`memory_latency_s`), so none of this is an independent test.", ""]
    return lines


def _findings(rows: list[dict]) -> list[str]:
    def ratios(family: str) -> str:
        v = [r["spread_ratio"] for r in rows if r["case"].startswith(family)]
        return f"{min(v):.2f}–{max(v):.2f}" if v else "—"

    part = [r for r in rows if r["case"].startswith("gemm-tiled")]
    close = [r["case"] for r in part if r["dram_measured"] and
             abs(r["dram_timeline_partition"] - r["dram_measured"]) <= 0.25 * r["dram_measured"]]
    naive = [r for r in rows if r["case"].startswith("gemm-naive")]
    under = [r for r in naive if r["dram_measured"]
             and max(r["dram_timeline_l2"], r["dram_timeline_partition"]) < 0.75 * r["dram_measured"]]

    def name(r: dict) -> str:
        return r["case"].replace("gemm-naive-", "")

    return [
        "- **Naive work-groups start in waves, tiled ones one by one.** A row of naive "
        f"work-groups starts within {ratios('gemm-naive')} of the steady-state spread, a row "
        f"of tiled ones within {ratios('gemm-tiled')} of it: the naive kernels' work-groups "
        "on one SM end together and are replaced together, the tiled kernels' (with "
        "barriers) drift apart after the first wave. The prediction assumes steady-state "
        "dispatch for every kernel.",
        "- **With the measured timeline and one L2 partition (25 MiB)** the tiled kernels' "
        f"DRAM reads are within 25% in {len(close)} of {len(part)} cases beyond L2 "
        f"({', '.join(close) or 'none'}); at N = 3072 the measurement lies between the "
        "estimates for one partition and for the whole L2. The H200's L2 is two partitions; "
        "an SM's request that misses in its own partition asks the other one (`ltcfabric` "
        "counters below), so data read from both halves of the GPU can occupy both "
        "partitions.",
        f"- **Some naive kernels read more than either timeline estimate**: "
        f"{', '.join(name(r) for r in under) or 'none'} (both estimates more than 25% "
        "below the counter). Their work-groups run in waves, which should let the "
        "concurrent readers of a B column share each L2 fill, yet the counters show more "
        "DRAM reads. Why is the subject of the next section, \"L2 sharing, measured\" "
        "(the warps of a work-group do not drift apart; the L2 keeps simple streams like "
        "an LRU cache). At N = 3072 the two estimates bracket the counter, and B = 32 lies "
        "between them too.", ""]


def _partition_lines(dispatch: dict) -> list[str]:
    full = dispatch.get("ncu_full") or {}
    keys = [k for k in ("gemm-naive-N4096-T16", "gemm-tiled-N4096-T16") if k in full]
    if not keys:
        return []
    lines = ["L2 partition counters (Nsight Compute full set, `dispatch/ncu_full.tar.gz`), "
             "N = 4096, B = 16:", "", "| counter | " + " | ".join(keys) + " |",
             "|---|" + "---|" * len(keys)]
    for metric, label in PARTITION_METRICS:
        vals = [_value(full[k], metric) for k in keys]
        lines.append(f"| {label} (`{metric}`) | " +
                     " | ".join("—" if v is None else f"{v:,.0f}" for v in vals) + " |")
    naive, tiled = (full[k] for k in keys) if len(keys) == 2 else (None, None)
    if naive and tiled:
        def balance(row):
            own = _value(row, PARTITION_METRICS[1][0])
            asked = _value(row, PARTITION_METRICS[2][0])
            there = _value(row, PARTITION_METRICS[3][0])
            return (own - asked + there) / 1e6, _value(row, PARTITION_METRICS[4][0]) / 1e6
        (n1, n2), (t1, t2) = balance(naive), balance(tiled)
        lines += ["", "Misses in the SMs' own partition, less those passed to the other "
                  "partition, plus the other partition's misses: "
                  f"{n1:.1f} M sectors (naive) and {t1:.1f} M (tiled), against "
                  f"{n2:.1f} M and {t2:.1f} M DRAM sectors read: a sector comes from DRAM only "
                  "when the partition that owns its address misses. (These counters are from "
                  "the dispatch call's own Nsight run, so its DRAM reads, "
                  f"{n2 * 32e6 / 1e9:.2f} and {t2 * 32e6 / 1e9:.2f} GB, differ slightly from the "
                  "validation run's in the tables above.)"]
    return lines + [""]


def _stall_lines(dispatch: dict) -> list[str]:
    full = dispatch.get("ncu_full") or {}
    keys = [k for k in ("gemm-naive-N1024-T8", "gemm-naive-N1024-T16", "gemm-naive-N1024-T32",
                        "gemm-tiled-N1024-T16") if k in full]
    if not keys:
        return []
    lines = ["Why the naive B = 32 kernel is slower than its L1 wavefronts alone predict (it "
             "was 23–26% slower than that at N = 1024 and 4096, which swapped it with the "
             "tiled B = 16 kernel at N = 4096 before the time model got the L1 request "
             "ceiling `l1_requests_per_cycle_per_cu` read off these counters; profiled at "
             "N = 1024 because a full Nsight set replays each kernel some 40 times): warp "
             "stall reasons, cycles per issued instruction "
             "(`smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio`), and the "
             "L1's use (% of its peak of one request and one data wavefront per cycle per "
             "SM):", "",
             "| | " + " | ".join(keys) + " |", "|---|" + "---|" * len(keys)]
    for reason in STALL_METRICS:
        metric = f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio"
        vals = [_value(full[k], metric) for k in keys]
        lines.append(f"| stalled: {reason} | " +
                     " | ".join("—" if v is None else f"{v:.1f}" for v in vals) + " |")
    for metric, label in (("l1tex__lsuin_requests.avg.pct_of_peak_sustained_elapsed",
                           "L1 requests in"),
                          ("l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed",
                           "L1 data wavefronts")):
        vals = [_value(full[k], metric) for k in keys]
        lines.append(f"| {label}, % of peak | " +
                     " | ".join("—" if v is None else f"{v:.0f}" for v in vals) + " |")
    lines += ["", "The naive B = 32 kernel's warps wait mostly for room in the load queue "
              "(`lg_throttle`) while the L1 runs below its request and wavefront peaks: 31 "
              "of the 32 warps of a work-group ask for the same line of B at each k, and "
              "wait for it in the queue while it comes from L2. The time model has no term "
              "for a full load queue."]
    lsu = dispatch.get("lsu")
    if lsu:
        rates = {}
        for r in lsu["runs"]:
            rates.setdefault(r["pattern"], []).append(r["instructions_per_cycle_per_cu"])
        lines.append("A microbenchmark of L1-resident loads (`dispatch/h200_dispatch_lsu.json.gz`), "
                     "in global load instructions per cycle per SM: " +
                     "; ".join(f"{k}: {min(v):.3f}–{max(v):.3f}" for k, v in rates.items())
                     + ". Four-line loads run at one L1 wavefront per cycle, as the model "
                     "assumes; one- and two-line loads stay below the naive B = 32 kernel's "
                     "0.73 per cycle (its `l1tex__lsuin_requests` at 73% of one request per "
                     "cycle, the table above). That benchmark is "
                     "not understood either, and no model value was taken from it.")
    return lines + [""]
