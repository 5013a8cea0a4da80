"""Markdown text, figures and terminal summary of a report, drawn only from a
``results.json`` dict (:mod:`analysis.report.build`)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from statistics import median

from tiletraffic.analysis.report import plots
from tiletraffic.analysis.report.machine_load import TimingVerdict, timing_verdict
from tiletraffic.simulator.kernels.closed_forms import textbook_per_tile_reads
from tiletraffic.analysis.validation.compare import Measured, measured_time

VALIDATION_DIR = "validate"
"""The report's ``tiletraffic validate`` folder (``analysis.report.build.VALIDATION_DIR``)."""

PER_TILE_SOURCE = ("each of a naive tile's B² work-items reads a row of A and a column of B "
                   "(2N elements); a tiled work-group loads N/B tiles of A and of B, B² "
                   "elements each (Kirk and Hwu, *Programming Massively Parallel "
                   "Processors*, ch. 5)")
"""Where the per-tile forms B²·2N and 2NB come from: the derivation, and a public source."""


MEASURED_TABLE_HEADS = {"gemm": "| case | M×K×N | B |",
                        "matvec": "| case | M×K | work-group size |"}
"""The first columns of the measured tables: a GEMM's B is its tile width (a B×B
work-group), a matrix-vector product's column its work-group size in work-items (against
matvec-naive of the same work-group size)."""


def _key(e: dict) -> tuple:
    return (e["family"], e["m"], e["k"], e["n"], e["tile"])


def measured(e: dict | None) -> Measured | None:
    """Median and spread of a result's timed launches over its rounds (``device_runs``; a
    single ``device_run`` is one round); ``None``: not measured or a round failed."""
    if not e or "device_error" in e:
        return None
    runs = e.get("device_runs") or ([e["device_run"]] if "device_run" in e else [])
    return measured_time([r["kernel_times_s"] for r in runs]) if runs else None


@dataclass(frozen=True)
class Speedup:
    """Measured naive time over the optimized one, with the range the spreads allow:
    ``low`` = (naive − spread) / (tiled + spread), ``high`` = (naive + spread) /
    (tiled − spread), ``inf`` when the tiled spread reaches its median."""

    label: str
    group: str
    cut: float
    value: float
    low: float
    high: float
    tile: int
    n: int | None


def speedups(results: list[dict]) -> list[Speedup]:
    """Every measured (naive, optimized) pair of one size: GEMM tiled against naive of the
    same B×B work-group, the matrix-vector local-memory schedules against matvec-naive."""
    by_key = {_key(e): e for e in results}
    out = []
    for e in results:
        if e["family"] == "gemm-tiled":
            base = by_key.get(("gemm-naive",) + _key(e)[1:])
        elif e["family"] in ("matvec-local", "matvec-local-whole"):
            base = by_key.get(("matvec-naive",) + _key(e)[1:])
        else:
            continue
        mo, mb = measured(e), measured(base)
        if mo is None or mb is None or "counts" not in e or "counts" not in base:
            continue
        cut = base["counts"]["global_load_elems"] / e["counts"]["global_load_elems"]
        high = ((mb.median_s + mb.spread_s) / (mo.median_s - mo.spread_s)
                if mo.median_s > mo.spread_s else math.inf)
        out.append(Speedup(_case_label(e), e["group"], cut, mb.median_s / mo.median_s,
                           max(mb.median_s - mb.spread_s, 0.0) / (mo.median_s + mo.spread_s),
                           high, e["tile"], e["n"]))
    return out


def speedup_range(p: Speedup) -> str:
    """``low–high`` of a speedup, two decimals; ``∞`` where the optimized kernel's spread
    reaches its median, ``0`` where the baseline's spread reaches its median (the range
    bounds nothing on that side)."""
    low = "0" if p.low == 0 else f"{p.low:.2f}"
    return low + "–" + ("∞" if math.isinf(p.high) else f"{p.high:.2f}")


def best_beyond_spread(pairs: list[Speedup]) -> Speedup | None:
    """The largest speedup among the pairs faster beyond their spread (``low`` > 1), or
    ``None`` where no pair is: a speedup whose range reaches 1 names no winner."""
    wins = [p for p in pairs if p.low > 1]
    return max(wins, key=lambda p: p.value) if wins else None


def _shape(e: dict) -> str:
    return f"{e['m']}×{e['k']}" + (f"×{e['n']}" if e["n"] else "")


def _case_label(e: dict) -> str:
    if e["family"] == "gemm-tiled":
        size = f"N={e['n']}" if e["group"] == "square" else f"{e['group']} {_shape(e)}"
        return f"GEMM {size} B={e['tile']}"
    return f"{e['family']} {_shape(e)}"


def _ms(m: Measured | None, e: dict | None) -> str:
    if m is not None:
        return f"{m.median_s * 1e3:.3f} ± {m.spread_s * 1e3:.3f}"
    if e and "device_error" in e:
        return "error"
    return "—"


def _timing_words(results: list[dict]) -> str:
    """How the report's times were taken, from each run's ``timing`` field."""
    runs = [r for e in results
            for r in (e.get("device_runs") or ([e["device_run"]] if "device_run" in e else []))]
    host = sum(r.get("timing") == "host" for r in runs)
    if not host:
        return "timed with OpenCL profiling events"
    return (f"timed with OpenCL profiling events ({host} of {len(runs)} runs by host wall "
            "time, launch overhead included: the device gave no profiling information)")


def speedup_against_cut(cut: list[float], speedup: list[float]) -> list[str]:
    """Sentences on how the measured speedups follow the cut in global loads, from the data:
    speedup as a share of the cut (median, range), and in how many pairs of cases with
    different cuts the larger cut went with the larger speedup."""
    share = sorted(s / c for s, c in zip(speedup, cut))
    pairs = [(i, j) for i in range(len(cut)) for j in range(i + 1, len(cut)) if cut[i] != cut[j]]
    agree = sum((cut[i] - cut[j]) * (speedup[i] - speedup[j]) > 0 for i, j in pairs)
    text = (f"The measured speedup was {median(share) * 100:.0f}% of the cut in global loads "
            f"for the median case ({share[0] * 100:.0f}% to {share[-1] * 100:.0f}%)")
    if pairs:
        text += (f"; of {len(pairs)} pairs of cases with different cuts, the larger cut went "
                 f"with the larger speedup in {agree}")
    return [text + ". A global-load count leaves out caches, barriers and local-memory "
            "copies; a device model's predicted times include them.", ""]


def speedup_against_n(pairs: list[Speedup]) -> list[str]:
    """Per tile width of the square GEMMs: where tiling paid off (speedup above 1, counting
    only speedups whose whole range lies above 1) from the smallest to the largest N."""
    parts = []
    for b in sorted({p.tile for p in pairs if p.group == "square"}):
        row = sorted((p for p in pairs if p.group == "square" and p.tile == b),
                     key=lambda p: p.n)
        if len(row) >= 2:
            won = [p.n for p in row if p.low > 1]
            parts.append(f"B = {b}: {row[0].value:.2f}× at N = {row[0].n} to "
                         f"{row[-1].value:.2f}× at N = {row[-1].n}, faster than naive beyond "
                         "the spread at " + (f"N = {', '.join(map(str, won))}" if won
                                             else "no N"))
    if not parts:
        return []
    return ["Speedup of the tiled kernel against N, per tile width: " + "; ".join(parts) + ".",
            ""]


def _counted_sections(results: list[dict], by_key: dict, out_dir: Path) -> list[str]:
    """(a) global reads against N, (b) reads per output tile against B."""
    square = [e for e in results if e["group"] == "square" and "counts" in e]
    sizes = sorted({e["n"] for e in square})
    tiles = sorted({e["tile"] for e in square})
    lines = ["## Global reads against N (whole GEMM, M = N = K; simulator)", ""]
    series = {}
    naive = [(n, by_key.get(("gemm-naive", n, n, n, 16))) for n in sizes]
    naive = [(n, e["counts"]["global_load_elems"]) for n, e in naive if e and "counts" in e]
    if len(naive) >= 2:
        series["naive (16×16 work-groups)"] = ([n for n, _ in naive], [v for _, v in naive])
    for b in tiles:
        pts = [(n, by_key.get(("gemm-tiled", n, n, n, b))) for n in sizes]
        pts = [(n, e["counts"]["global_load_elems"]) for n, e in pts if e and "counts" in e]
        if len(pts) >= 2:
            series[f"tiled B={b}"] = ([n for n, _ in pts], [v for _, v in pts])
    if series:
        slopes = plots.loglog_with_fits(series, "N", "global loads (elements)",
                                        "Global reads to compute C = A·B, N×N",
                                        out_dir / "reads_vs_n.png")
        lines += ["![global reads vs N](reads_vs_n.png)", "",
                  "Fitted log-log slopes (expected: 3 for both, since a naive work-item reads "
                  "2N elements for each of N² outputs and tiling divides that by B without "
                  "changing the exponent):", ""]
        lines += [f"- {label}: **{s:.3f}**" for label, s in slopes.items()]
        lines += ["", "| N | naive loads | " + " | ".join(f"tiled B={b}" for b in tiles)
                  + " | naive / tiled |", "|" + "---|" * (len(tiles) + 3)]
        for n in sizes:
            e = by_key.get(("gemm-naive", n, n, n, 16))
            nv = e["counts"]["global_load_elems"] if e and "counts" in e else None
            row = [str(n), str(nv) if nv else "—"]
            ratios = []
            for b in tiles:
                t = by_key.get(("gemm-tiled", n, n, n, b))
                tv = t["counts"]["global_load_elems"] if t and "counts" in t else None
                row.append(str(tv) if tv else "—")
                if nv and tv:
                    ratios.append(f"{nv / tv:g}")
            lines.append("| " + " | ".join(row) + f" | {', '.join(ratios)} |")
        lines.append("")
    n_fix = max((n for n in sizes if sum(1 for b in tiles if ("gemm-tiled", n, n, n, b)
                                         in by_key) >= 2), default=None)
    if not n_fix:
        return lines
    lines += [f"## Global reads per output tile against B (N = {n_fix}; simulator)", ""]
    per_tile = {}
    for fam, label in (("gemm-naive", "naive (B×B work-group)"), ("gemm-tiled", "tiled")):
        pts = [(b, by_key.get((fam, n_fix, n_fix, n_fix, b))) for b in tiles]
        pts = [(b, e["counts"]["global_load_elems_per_tile"]) for b, e in pts
               if e and "counts" in e]
        if len(pts) >= 2:
            per_tile[label] = ([b for b, _ in pts], [v for _, v in pts])
    exps = plots.loglog_with_fits(per_tile, "tile width B", "global loads per B×B output tile",
                                  f"Reads per output tile, N = {n_fix}",
                                  out_dir / "reads_per_tile_vs_b.png")
    lines += ["![reads per tile vs B](reads_per_tile_vs_b.png)", "",
              f"Fitted exponents (expected: naive B²·2N → 2, tiled 2NB → 1; {PER_TILE_SOURCE}):",
              ""]
    lines += [f"- {label}: **{p:.3f}**" for label, p in exps.items()]
    lines += ["", "| B | naive per tile | B²·2N | tiled per tile | 2NB |",
              "|---|---|---|---|---|"]
    for b in tiles:
        nv = by_key.get(("gemm-naive", n_fix, n_fix, n_fix, b))
        tv = by_key.get(("gemm-tiled", n_fix, n_fix, n_fix, b))
        lines.append(
            f"| {b} | {nv['counts']['global_load_elems_per_tile'] if nv and 'counts' in nv else '—'}"
            f" | {textbook_per_tile_reads('gemm-naive', n_fix, b)}"
            f" | {tv['counts']['global_load_elems_per_tile'] if tv and 'counts' in tv else '—'}"
            f" | {textbook_per_tile_reads('gemm-tiled', n_fix, b)} |")
    lines.append("")
    return lines


def _measured_section(meta: dict, results: list[dict], by_key: dict, out_dir: Path,
                      device_name: str) -> list[str]:
    """(c) the cut in global loads against the measured speedup, with spreads."""
    rounds = meta.get("rounds", 1)
    lines = [f"## Cut in global loads vs measured speedup on {device_name}", "",
             "Cut in loads (counted by the simulator): global loads of the naive schedule "
             "divided by those of the optimized one (the naive GEMM uses the same B×B "
             "work-group). Measured: median time of naive divided by median time of the "
             f"optimized one, over {_rounds(rounds)} of {meta['repeat']} timed launches each "
             "(sizes chosen for this device"
             + (f": the `{meta['case_list']}` sizes of `tiletraffic validate`" if
                meta.get("case_list") else "") + "). A speedup below 1 means the optimized "
             "kernel was slower; that is a measurement, not a failure.", "",
             "Times: median ± spread in ms, the spread being the larger of the launches' "
             "interquartile range and the difference between the rounds' medians; the "
             "speedup's range is what those spreads allow.", ""]
    pairs = speedups(results)
    by_label = {p.label: p for p in pairs}
    rows = {"gemm": [], "matvec": []}
    for e in results:
        if e["family"] not in ("gemm-tiled", "matvec-local", "matvec-local-whole"):
            continue
        base_family = "gemm-naive" if e["family"] == "gemm-tiled" else "matvec-naive"
        base = by_key.get((base_family,) + _key(e)[1:])
        if base is None or not (measured(e) or "device_error" in e or "device_error" in base):
            continue
        p = by_label.get(_case_label(e))
        case = e["group"] if e["family"] == "gemm-tiled" else f"{e['family']} vs matvec-naive"
        speed = "—" if p is None else f"{p.value:.2f} ({speedup_range(p)})"
        cut = "—" if p is None else f"{p.cut:.2f}"
        rows["gemm" if e["family"] == "gemm-tiled" else "matvec"].append(
            f"| {case} | {_shape(e)} | {e['tile']} | {cut} | "
            f"{_ms(measured(base), base)} | {_ms(measured(e), e)} | {speed} |")
    for kind, head in MEASURED_TABLE_HEADS.items():
        if rows[kind] or (kind == "gemm" and not rows["matvec"]):
            lines += [head + " naive loads / optimized loads | naive ms | optimized ms | "
                      "measured speedup (range) |", "|---|---|---|---|---|---|---|",
                      *rows[kind], ""]
    if not pairs:
        return lines
    plots.speedup_vs_cut(cut_series(pairs), out_dir / "ratio_vs_speedup.png", device_name)
    lines += ["![cut in loads vs measured speedup](ratio_vs_speedup.png)", ""]
    square = [p for p in pairs if p.group == "square"]
    if len({p.n for p in square}) >= 2:
        by_tile = {}
        for p in sorted(square, key=lambda p: p.n):
            by_tile.setdefault(f"tiled B={p.tile}", []).append(p)
        plots.speedup_vs_n({label: ([p.n for p in ps], [p.value for p in ps],
                                    [p.low for p in ps], [p.high for p in ps])
                            for label, ps in by_tile.items()},
                           out_dir / "speedup_vs_n.png", device_name)
        lines += ["![measured speedup vs N](speedup_vs_n.png)", ""]
    values = [p.value for p in pairs]
    faster = sum(1 for p in pairs if p.low > 1)
    slower = [p.label for p in pairs if p.high < 1]
    best = best_beyond_spread(pairs)
    lines += [f"Tiling cut global loads by {min(p.cut for p in pairs):.2f}× to "
              f"{max(p.cut for p in pairs):.2f}×. Measured speedups ranged from "
              f"{min(values):.2f}× to {max(values):.2f}× (median {median(values):.2f}×); the "
              f"optimized kernel was faster beyond the spread in {faster} of {len(pairs)} "
              f"cases and slower beyond it in {len(slower)}"
              + (f" ({', '.join(slower)})" if slower else "") + ". "
              + (f"Of those faster beyond the spread it won most at {best.label}: "
                 f"{best.value:.2f}× against a {best.cut:.2f}× cut in loads."
                 if best else "No case was faster beyond the spread, so none is named "
                 "the best."), ""]
    lines += speedup_against_cut([p.cut for p in pairs], values)
    lines += speedup_against_n(pairs)
    if meta["device"].get("is_gpu") is False:
        lines += [
            "This device is a CPU: local memory is ordinary cached memory, and every "
            "barrier makes the OpenCL compiler split the work-group's work-item loop; a "
            "GPU run (`tiletraffic report --device <gpu>`) shows tiling where local "
            "memory is a separate on-chip store.", ""]
    return lines


def cut_series(pairs: list[Speedup]) -> dict[str, tuple[list, list, list, list]]:
    """The pairs of the cut-against-speedup figure in its legend's series: the square GEMMs
    one series per N (their cut is B), every other case its own."""
    series: dict[str, tuple[list, list, list, list]] = {}
    for p in sorted(pairs, key=lambda p: (p.group != "square", p.n or 0, p.cut)):
        label = f"square GEMM N={p.n}" if p.group == "square" else p.label
        for column, value in zip(series.setdefault(label, ([], [], [], [])),
                                 (p.cut, p.value, p.low, p.high)):
            column.append(value)
    return series


def timing_of(data: dict) -> TimingVerdict:
    """Whether the report's times are to be trusted: the machine's load while they were
    taken (``meta.machine_load``) and the spreads of its measured cases."""
    spreads = [m.spread_s / m.median_s for m in map(measured, data["results"])
               if m is not None and m.median_s > 0]
    return timing_verdict(data["meta"].get("machine_load"), spreads)


def _timing_paragraph(data: dict) -> list[str]:
    """report.md's word on the load and the spreads: a warning where the times are not to
    be trusted, the facts otherwise."""
    if not any(measured(e) for e in data["results"]):
        return []
    verdict = timing_of(data)
    if verdict.trusted:
        return [f"**Timing:** {verdict.facts}.", ""]
    unmeasured = ("" if data["meta"].get("machine_load") else
                  "; the machine's load while timing was not measured")
    return [f"**These times are not to be trusted:** {'; '.join(verdict.reasons)}{unmeasured}. "
            "The times and speedups below are what this machine gave at the time, not what "
            "the device does on its own; run the report again on an otherwise idle machine.",
            ""]


def _browser_line(out_dir: Path) -> list[str]:
    """Where report.html and its explain pages are, when they were written."""
    from tiletraffic.analysis.explain.report_pages import EXPLAIN_DIR, PAGES

    if not (out_dir / "report.html").exists():
        return []
    pages = [f"[{title}]({EXPLAIN_DIR}/{family}.html)" for family, title, _ in PAGES
             if (out_dir / EXPLAIN_DIR / f"{family}.html").exists()]
    return ["**In a browser:** [report.html](report.html) shows where each kernel's loads go"
            + (", with an explain page each for " + ", ".join(pages) if pages else "")
            + ".", ""]


def _model_section(meta: dict, out_dir: Path) -> list[str]:
    """(d) the model against the device where the model is the device's own (for a built-in
    model transferred to the device, with its note); otherwise which model it would have
    been and why its times do not apply."""
    model = meta.get("model")
    validation = out_dir / VALIDATION_DIR / "validation.json"
    if model and not model.get("describes_device"):
        dev = meta["device"]["device_name"]
        return ["## The model on this device", "",
                f"{model['why']}. The report therefore compares no predicted time with this "
                "device and judges no target. The counts above do not depend on a model; "
                "sub-group requests, sectors, caches and predicted times of a GPU come from "
                f"`tiletraffic model SCHEDULE --device-model {model['name']}`.", "",
                f"To judge the model on {dev}: `tiletraffic calibrate --out my-model.toml` "
                "measures this device's values, and `tiletraffic report --device-model "
                "my-model.toml` (or `tiletraffic validate --device-model my-model.toml`) then "
                "compares its predictions with this device, targets included.", ""]
    if not validation.exists():
        return []
    from tiletraffic.analysis.validation.results import load
    from tiletraffic.analysis.validation.render import FIGURE, section

    vdata = load(out_dir / VALIDATION_DIR)
    drawn = (out_dir / VALIDATION_DIR / FIGURE).exists()
    lines = section(vdata, f"{VALIDATION_DIR}/{FIGURE}" if drawn else None,
                    raw_data=f"{VALIDATION_DIR}/validation.json")
    if model and model.get("transferred"):     # after the section's heading
        lines[1:1] = ["", f"This device has no built-in model: the model `{model['name']}` "
                      f"is the nearest one transferred to it. {model['description']}"]
    return lines + [f"(Also in [{VALIDATION_DIR}/validation.md]({VALIDATION_DIR}/"
                    "validation.md).)", ""]


def write_report(data: dict, out_dir: Path) -> str:
    """Markdown of the report; writes the PNG figures into ``out_dir`` as a side effect."""
    meta, results = data["meta"], data["results"]
    by_key = {_key(e): e for e in results}
    dev = meta["device"]
    device_name = dev["device_name"]
    rounds = meta.get("rounds", 1)
    lines = [
        f"# tiletraffic report: naive vs tiled GEMM and matrix-vector on {device_name}",
        "",
        f"Produced by `{meta['command']}` on {meta['created_utc']}"
        + (" (quick sweep)" if meta.get("quick") else "") + ". Raw data: `results.json`.",
        "",
        "Every count below was produced by executing the schedule in the simulator and is "
        "checked against its family's hand-written closed forms (the documentation's page "
        "*Closed forms of a kernel's counts*); every time is the "
        f"median of {_rounds(rounds)} of {meta['repeat']} launches {_timing_words(results)}, "
        "after warm-up launches, each launch's result checked against a float64 numpy "
        "reference (tolerance scaled to K) before its time counts.",
        "",
    ]
    if meta.get("complete") is False:
        lines += [f"**Interrupted sweep:** {len(results)} of {meta.get('cases_total', '?')} "
                  "cases finished; the tables and figures show those only.", ""]
    lines += _timing_paragraph(data)
    lines += _browser_line(out_dir)
    if (out_dir / "validation.md").exists():  # a hardware validation beside the report
        lines += ["**Hardware counters against predictions** (requests, sectors, L2 and DRAM "
                  "traffic, time, roofline): [validation.md](validation.md).", ""]
    agree = [e.get("closed_form_agrees") for e in results if "counts" in e]
    lines += [f"**Simulator vs closed forms:** {sum(agree)} of {len(agree)} cases agree exactly "
              "on every counter.", ""]
    lines += _counted_sections(results, by_key, out_dir)
    lines += _measured_section(meta, results, by_key, out_dir, device_name)
    lines += _model_section(meta, out_dir)
    problems = [e for e in results if "device_error" in e or "skipped" in e]
    if problems:
        lines += ["## Cases that did not run", ""]
        lines += [f"- {e['family']} {_shape(e)} B={e['tile']}: "
                  f"{e.get('device_error') or e.get('skipped')}" for e in problems]
        lines.append("")
    lines += ["## Device and software", "", "| | |", "|---|---|"]
    for key in ("device_name", "platform_name", "platform_version", "type", "compute_units",
                "max_work_group_size", "local_mem_bytes", "global_mem_bytes", "driver_version"):
        if key in dev:
            lines.append(f"| {key} | {dev[key]} |")
    for key, value in meta["software"].items():
        lines.append(f"| {key} | {value} |")
    lines.append("")
    return "\n".join(lines)


def _rounds(n: int) -> str:
    return "1 round" if n == 1 else f"{n} rounds"


def summary_lines(data: dict, out_dir: Path) -> list[str]:
    """Five lines for the terminal: what was measured, what the counts show, the measured
    speedups, the model's part, and where the report is (report.md, and report.html with
    its explain pages where they were written); a sixth, after the speedups, where the
    times are not to be trusted (:func:`timing_of`)."""
    meta, results = data["meta"], data["results"]
    device_name = meta["device"]["device_name"]
    counted = [e for e in results if "counts" in e]
    ran = [e for e in results if measured(e) is not None]
    top = max((e["n"] for e in counted if e["group"] == "square"), default=None)
    lines = [f"measured: {len(ran)} cases on {device_name} ({meta.get('rounds', 1)} rounds of "
             f"{meta['repeat']} checked launches each); counted: {len(counted)} cases in the "
             "simulator" + (f", square GEMMs up to N = {top}" if top else "")]
    agree = sum(bool(e.get("closed_form_agrees")) for e in counted)
    cuts = sorted({e["tile"] for e in counted if e["family"] == "gemm-tiled"
                   and e["group"] == "square"})
    lines.append(f"counts: simulator = closed forms in {agree} of {len(counted)} cases; "
                 + (f"B×B tiles cut a GEMM's global loads by B ({cuts[0]}× to {cuts[-1]}×)"
                    if cuts else "no tiled GEMM counted"))
    pairs = speedups(results)
    if pairs:
        best = best_beyond_spread(pairs)
        wins = sum(p.low > 1 for p in pairs)
        lines.append(f"speedup over naive: {min(p.value for p in pairs):.2f}× to "
                     f"{max(p.value for p in pairs):.2f}× (median "
                     f"{median(p.value for p in pairs):.2f}×); "
                     + (f"best {best.label}: {best.value:.2f}× ({speedup_range(best)}); "
                        if best else "")
                     + f"faster beyond the spread in {wins} of {len(pairs)}")
    else:
        lines.append("speedup over naive: no pair measured")
    verdict = timing_of(data)
    if ran and not verdict.trusted:
        lines.append("timing: not to be trusted: " + "; ".join(verdict.reasons))
    model = meta.get("model")
    validation = out_dir / VALIDATION_DIR / "validation.json"
    if model and not model.get("describes_device"):
        lines.append(f"model: no verdicts ({model['why']})")
    elif validation.exists():
        from tiletraffic.analysis.validation.results import load, summary_of

        targets = summary_of(load(out_dir / VALIDATION_DIR)).targets
        lines.append("model " + (model or {}).get("name", "") + ": " + "; ".join(
            f"{t.name} {t.verdict}" for t in targets))
        if (model or {}).get("transferred"):
            lines.append(f"model {model['name']}: {model['description']}")
    else:
        lines.append("model: left out of this report")
    where = f"report: {out_dir / 'report.md'} (figures and raw data beside it)"
    if (out_dir / "report.html").exists():
        where += (f"; in a browser: {out_dir / 'report.html'}, with explain pages of naive "
                  "and tiled GEMM and matrix-vector")
    lines.append(where)
    return lines
