"""Markdown text and figures of a report, drawn only from a ``results.json`` dict."""
from __future__ import annotations

from pathlib import Path
from statistics import median

from . import plots
from .closed_form import textbook_per_tile_reads

VALIDATION_DIR = "validate"
"""The report's ``tiletraffic validate`` folder (``analysis.report.VALIDATION_DIR``)."""


def _key(e: dict) -> tuple:
    return (e["family"], e["m"], e["k"], e["n"], e["tile"])


def _ms(e: dict | None) -> str:
    if e is None:
        return "—"
    if "device_run" in e:
        r = e["device_run"]
        return f"{r['median_s'] * 1e3:.3f} ({r['min_s'] * 1e3:.3f}–{r['max_s'] * 1e3:.3f})"
    if "device_error" in e:
        return "error"
    return "skipped"


def _time(e: dict | None) -> float | None:
    return e["device_run"]["median_s"] if e and "device_run" in e else None


def _fmt(x: float | None, spec: str = ".2f") -> str:
    return "—" if x is None else format(x, spec)


def _timing_words(results: list[dict]) -> str:
    """How the report's times were taken, from each run's ``timing`` field."""
    runs = [e["device_run"] for e in results if "device_run" in e]
    host = sum(r.get("timing") == "host" for r in runs)
    if not host:
        return "timed with OpenCL profiling events"
    return (f"timed with OpenCL profiling events ({host} of {len(runs)} cases by host wall "
            "time, launch overhead included: the device gave no profiling information)")


def speedup_against_cut(cut: list[float], speedup: list[float],
                        has_validation: bool = False) -> list[str]:
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
    where = ("the next section compares them with this device" if has_validation else
             "`tiletraffic validate` compares them with this device")
    return [text + ". A global-load count leaves out caches, barriers and local-memory "
            f"copies; the model's predicted times include them: {where}.", ""]


def speedup_against_n(square: list[dict], by_key: dict) -> list[str]:
    """Per tile width of the square GEMMs: where tiling paid off (speedup above 1) from the
    smallest to the largest N, computed from the measured times."""
    tiles = sorted({e["tile"] for e in square if e["family"] == "gemm-tiled"})
    parts = []
    for b in tiles:
        row = []
        for e in sorted((e for e in square if e["family"] == "gemm-tiled" and e["tile"] == b),
                        key=lambda e: e["n"]):
            naive = by_key.get(("gemm-naive",) + _key(e)[1:])
            tn, tt = _time(naive), _time(e)
            if tn and tt:
                row.append((e["n"], tn / tt))
        if len(row) >= 2:
            won = [n for n, sp in row if sp > 1]
            parts.append(f"B = {b}: {row[0][1]:.2f}× at N = {row[0][0]} to {row[-1][1]:.2f}× "
                         f"at N = {row[-1][0]}, faster than naive at "
                         + (f"N = {', '.join(map(str, won))}" if won else "no N"))
    if not parts:
        return []
    return ["Speedup of the tiled kernel against N, per tile width: " + "; ".join(parts) + ".",
            ""]


def write_report(data: dict, out_dir: Path) -> str:
    """Markdown of the report; writes the PNG figures into ``out_dir`` as a side effect."""
    meta, results = data["meta"], data["results"]
    by_key = {_key(e): e for e in results}
    dev = meta["device"]
    device_name = dev["device_name"]
    square = [e for e in results if e["group"] == "square" and "counts" in e]
    sizes = sorted({e["n"] for e in square})
    tiles = sorted({e["tile"] for e in square})
    lines = [
        f"# tiletraffic report: naive vs tiled GEMM on {device_name}",
        "",
        f"Produced by `{meta['command']}` on {meta['created_utc']}"
        + (" (quick sweep)" if meta.get("quick") else "") + ". Raw data: `results.json`.",
        "",
        "Every count below was produced by executing the schedule in the simulator and is "
        "checked against the closed forms of `analysis/closed_form.py`; every time is the "
        f"median of {meta['repeat']} launches {_timing_words(results)}, after "
        "warm-up launches and only once the kernel's result matched a float64 numpy "
        "reference (tolerance scaled to K).",
        "",
    ]
    if meta.get("complete") is False:
        lines += [f"**Interrupted sweep:** {len(results)} of {meta.get('cases_total', '?')} "
                  "cases finished; the tables and figures show those only.", ""]
    if (out_dir / "validation.md").exists():  # a hardware validation beside the report
        lines += ["**Hardware counters against predictions** (requests, sectors, L2 and DRAM "
                  "traffic, time, roofline): [validation.md](validation.md).", ""]
    agree = [e.get("closed_form_agrees") for e in results if "counts" in e]
    lines += [f"**Simulator vs closed forms:** {sum(agree)} of {len(agree)} cases agree exactly "
              "on every counter.", ""]

    # (a) global reads against N
    lines += ["## Global reads against N (whole GEMM, M = N = K)", ""]
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
                                        "Global reads to compute C = A·B, N×N", out_dir / "reads_vs_n.png")
        lines += ["![global reads vs N](reads_vs_n.png)", "",
                  "Fitted log-log slopes (textbook: 3 for both; tiling divides by B, it does "
                  "not change the exponent):", ""]
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

    # (b) reads per output tile against B
    n_fix = max((n for n in sizes if sum(1 for b in tiles if ("gemm-tiled", n, n, n, b)
                                         in by_key) >= 2), default=None)
    if n_fix:
        lines += [f"## Global reads per output tile against B (N = {n_fix})", ""]
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
                  "Fitted exponents (textbook, tiling-and-shared-memory §4: naive B²·2N → 2, "
                  "tiled 2NB → 1):", ""]
        lines += [f"- {label}: **{p:.3f}**" for label, p in exps.items()]
        lines += ["", "| B | naive per tile | textbook B²·2N | tiled per tile | textbook 2NB |",
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

    # (c) predicted ratio vs measured speedup
    lines += [f"## Cut in global loads vs measured speedup on {device_name}", "",
              "Cut in loads (counted): global loads of the naive schedule divided by those of "
              "the tiled one "
              "(the naive schedule uses the same B×B work-group). Measured: median time of "
              "naive divided by median time of tiled. A speedup below 1 means tiled was "
              "slower; that is a measurement, not a failure.", "",
              "Times are medians with (min–max) of the timed launches.", "",
              "| case | M×K×N | B | naive loads / tiled loads | naive ms | tiled ms | "
              "measured speedup |", "|---|---|---|---|---|---|---|"]
    labels, predicted, measured = [], [], []
    pairs = [(e, by_key.get(("gemm-naive",) + _key(e)[1:])) for e in results
             if e["family"] == "gemm-tiled"]
    mv = [e for e in results if e["family"] in ("matvec-local", "matvec-local-whole")]
    pairs += [(e, by_key.get(("matvec-naive",) + _key(e)[1:])) for e in mv]
    for tiled_e, naive_e in pairs:
        if naive_e is None:
            continue
        shape = f"{tiled_e['m']}×{tiled_e['k']}×{tiled_e['n'] or 1}"
        ratio = None
        if "counts" in tiled_e and "counts" in naive_e:
            ratio = naive_e["counts"]["global_load_elems"] / tiled_e["counts"]["global_load_elems"]
        tn, tt = _time(naive_e), _time(tiled_e)
        speed = tn / tt if tn and tt else None
        case = tiled_e["group"] if tiled_e["family"] == "gemm-tiled" else \
            f"{tiled_e['family']} vs matvec-naive"
        lines.append(f"| {case} | {shape} | {tiled_e['tile']} | {_fmt(ratio)} | {_ms(naive_e)} | "
                     f"{_ms(tiled_e)} | {_fmt(speed)} |")
        if ratio and speed:
            labels.append(f"{shape} B={tiled_e['tile']}" if tiled_e["family"] == "gemm-tiled"
                          else f"{tiled_e['family']} {shape}")
            predicted.append(ratio)
            measured.append(speed)
    lines.append("")
    if labels:
        plots.ratio_vs_speedup(labels, predicted, measured, out_dir / "ratio_vs_speedup.png",
                               device_name)
        faster = sum(1 for s in measured if s > 1)
        lines += ["![predicted ratio vs measured speedup](ratio_vs_speedup.png)", "",
                  f"Tiling cut global loads by {min(predicted):.2f}× to {max(predicted):.2f}×. "
                  f"Measured speedups ranged from {min(measured):.2f}× to {max(measured):.2f}× "
                  f"(median {median(measured):.2f}×); the tiled kernel was faster in {faster} of "
                  f"{len(measured)} cases.", ""]
        slow = [lab for lab, sp in zip(labels, measured) if sp < 1]
        best = max(range(len(measured)), key=lambda i: measured[i])
        lines += [f"Tiling lost time in {len(slow)} cases ({', '.join(slow) or 'none'}); it "
                  f"won most at {labels[best]}: {measured[best]:.2f}× against a "
                  f"{predicted[best]:.2f}× cut in loads.", ""]
        lines += speedup_against_cut(predicted, measured,
                                     (out_dir / VALIDATION_DIR / "validation.json").exists())
        lines += speedup_against_n([e for e in results if e["group"] == "square"], by_key)
        if dev.get("is_gpu") is False:
            lines += [
                "This device is a CPU: local memory is ordinary cached memory, and every "
                "barrier makes the OpenCL compiler split the work-group's work-item loop; a "
                "GPU run (`tiletraffic report --device <gpu>`) shows tiling where local "
                "memory is a separate on-chip store.", ""]
    validation = out_dir / VALIDATION_DIR / "validation.json"
    if validation.exists():
        from .validation_run import load
        from .validation_text import FIGURE, section

        vdata = load(out_dir / VALIDATION_DIR)
        drawn = (out_dir / VALIDATION_DIR / FIGURE).exists()
        lines += section(vdata, f"{VALIDATION_DIR}/{FIGURE}" if drawn else None,
                         raw_data=f"{VALIDATION_DIR}/validation.json")
        lines += [f"(Also in [{VALIDATION_DIR}/validation.md]({VALIDATION_DIR}/validation.md).)",
                  ""]
    problems = [e for e in results if "device_error" in e or "skipped" in e]
    if problems:
        lines += ["## Cases that did not run", ""]
        lines += [f"- {e['family']} {e['m']}×{e['k']}×{e['n'] or 1} B={e['tile']}: "
                  f"{e.get('device_error') or e.get('skipped')}" for e in problems]
        lines.append("")

    # (d) device and software
    lines += ["## Device and software", "", "| | |", "|---|---|"]
    for key in ("device_name", "platform_name", "platform_version", "type", "compute_units",
                "max_work_group_size", "local_mem_bytes", "global_mem_bytes", "driver_version"):
        if key in dev:
            lines.append(f"| {key} | {dev[key]} |")
    for key, value in meta["software"].items():
        lines.append(f"| {key} | {value} |")
    lines.append("")
    return "\n".join(lines)
