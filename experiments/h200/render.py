"""``validation.md``, ``validation.json`` and the roofline chart of an H200 report directory,
rendered from its committed raw data alone (no GPU needed)::

    python -m experiments.h200.render reports/nvidia-h200
    python -m experiments.h200.render reports/nvidia-h200/holdout

The render is deterministic: both commands rewrite the committed files byte for byte. Each
section comes from the analysis module of its question (``experiments/h200/<question>/
analysis.py``); the sections a directory has no data for are left out.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tiletraffic.analysis.report import plots
from experiments.h200.hardware import compare, counter_model_for, rankings, speedups
from tiletraffic.analysis.files import atomic_write_text

from experiments.h200.barrier_wait.analysis import load_barrier_wait
from experiments.h200.busy_background.analysis import (busy_background_lines,
                                                       load_busy_background, load_clocks)
from experiments.h200.codegen.analysis import codegen_section, load_codegen
from experiments.h200.dispatch.analysis import (dispatch_section, load_dispatch, tail_lines,
                                                tail_rows)
from experiments.h200.holdout.analysis import preregistered_check, preregistered_lines
from experiments.h200.l1_pipe.analysis import l1_pipe_section, load_l1_pipe
from experiments.h200.l2_sharing.analysis import l2_sharing_section, load_l2_sharing
from experiments.h200.preregistered.analysis import section as preregistered_section
from experiments.h200.matvec.analysis import (busy_sms_rows, load_busy_sms, load_matvec,
                                              load_matvec_loops, matvec_section)
from experiments.h200.validation.analysis import (discordant_text, dram_section,
                                                  explanation_section, load_raw, model_for,
                                                  num, pct, targets_table, unshared_l2_errors,
                                                  value_rows)


def render_hardware(directory: str | Path) -> Path:
    """Write ``validation.md``, ``validation.json`` and ``roofline.png`` into ``directory``
    from its ``h200_raw.json.gz``; returns the path of ``validation.md``.

    Raises:
        FileNotFoundError: no ``h200_raw.json.gz``.
    """
    directory = Path(directory)
    raw = load_raw(directory)
    model = model_for(raw)
    cases = compare(raw, model)
    speed, ranks = speedups(cases), rankings(cases)
    data = {"device_model": model.name, "guessed_values": list(model.guessed),
            "cases": [{"case": c.case_id, "rows": c.rows(),
                       "predicted_time_s": c.launch.prediction.predicted_time_s,
                       "time_terms_s": c.launch.prediction.time_terms_s,
                       "methods": c.launch.prediction.methods,
                       "opencl_median_s": c.measured_time_s,
                       "ncu_duration_s": c.counter_time_s} for c in cases],
            "speedups": speed, "rankings": ranks}
    dispatch = load_dispatch(directory)
    data["tail"] = tail_rows(dispatch, cases)
    dispatch_lines, data["dispatch"] = dispatch_section(dispatch, cases, model,
                                                        appendix=tail_lines(data["tail"]))
    sharing_lines, data["l2_sharing"] = l2_sharing_section(load_l2_sharing(directory), cases,
                                                           model)
    codegen_lines, data["codegen"] = codegen_section(load_codegen(directory), model)
    matvec = load_matvec(directory)
    busy = load_busy_sms(directory)
    data["matvec_busy_sms"] = busy_sms_rows(busy, model)
    background, clocks = load_busy_background(directory), load_clocks(directory)
    data["matvec_busy_background"] = [
        {**r, "times": [[*key, t] for key, t in r["times"].items()]} for r in background]
    data["matvec_busy_sms_clocks"] = clocks
    matvec_lines, data["matvec"] = matvec_section(
        matvec, model, load_matvec_loops(directory), data["matvec_busy_sms"],
        (busy or {}).get("meta", {}).get("created_utc", "?"),
        busy_background_lines(background, clocks))
    parent_matvec = not matvec_lines and (directory.parent / "matvec").is_dir() \
        and (directory.parent / "validation.md").exists()
    pipe_lines, data["l1_pipe"] = l1_pipe_section(load_l1_pipe(directory, matvec), model)
    pre = preregistered_check(directory, cases)
    if pre is not None:
        data["preregistered"] = pre
    atomic_write_text(directory / "validation.json", json.dumps(data, indent=1, default=str))
    points = []
    for c in cases:
        t = c.measured_time_s or c.counter_time_s
        dram = c.counters.get("dram__bytes_read.sum", 0) + c.counters.get("dram__bytes_write.sum", 0)
        p = c.launch.prediction
        points.append((f"{c.family} B={c.tile} {c.m}", c.launch.counts.flop,
                       p.arithmetic_intensity_flop_per_byte, c.launch.counts.flop / p.predicted_time_s,
                       c.launch.counts.flop / max(dram, 1), c.launch.counts.flop / t if t else None))
    cublas = [(s["n"], 2 * s["n"] ** 3 / s["median_s"]) for s in raw.get("cublas", {}).get("sizes", [])
              if s.get("median_s")]
    plots.roofline(points, model.dram_bytes_per_s, model.fp32_flop_per_s, cublas,
                   directory / "roofline.png")
    meta = raw.get("meta", {})
    holdout = meta.get("case_set") == "holdout"
    lines = [
        f"# tiletraffic: predictions against the {model.name} hardware", "",
        f"Rendered by `python -m experiments.h200.render {directory}` from `h200_raw.json.gz`, "
        "which "
        f"`{meta.get('command', 'benchmarks/h200_validation.py')}` wrote on the device on "
        f"{meta.get('created_utc', '?')} (see `command.txt`). Hardware counters: Nsight "
        "Compute on the same generated kernel source built as CUDA (`gpu/cuda.py`); times: "
        "OpenCL profiling events (median of 10 launches after warm-up, results checked "
        "against numpy first) and, where OpenCL refused the launch, Nsight Compute's "
        "`gpu__time_duration`. Predictions: `simulator.traffic_model.model_launch` with the "
        f"`{model.name}` device model (the OpenCL build) for the OpenCL times, speedups and "
        f"rankings, and with `{counter_model_for(model).name}`"
        " (the build the counters were read from) for the counters and Nsight's durations. "
        "Machine-readable: `validation.json`.", "",
        *preregistered_lines(pre, meta.get("created_utc")),
        "## Targets", "", *targets_table(cases, speed, ranks, holdout),
        "", "The time, speedup and ranking predictions use values chosen with the H200 "
        "measurements in view (see \"What the model guesses\"): they are not independent "
        "tests. Nor are the L2→L1 sectors (work-group pairs sharing an L1), the DRAM reads "
        "beyond the L2 (its associativity) and the local-load wavefronts (two per 128-bit "
        "load), each of which uses one value chosen or read with these data; the global "
        "load instructions, requests and sectors and the local-load instructions use none.",
        "",
        "## Every case", "",
        "Textbook count: global load elements (the seeds' count). `predicted` comes from the "
        "simulator and the model, `measured` from the counter named; the error is "
        "(predicted − measured) / measured.", ""]
    for c in cases:
        p = c.launch.prediction
        lines += [f"### {c.family} M={c.m} K={c.k}" + (f" N={c.n}" if c.n else "") +
                  f", B={c.tile}", "",
                  f"Textbook global loads {c.launch.counts.global_load_elems:,}; predicted "
                  f"bound: {p.bound}; methods: " +
                  "; ".join(f"{k}: {v}" for k, v in p.methods.items()) + ".", "",
                  "| quantity | predicted | measured | error | counter |", "|---|---|---|---|---|"]
        for r in c.rows():
            ok = {True: " ✓", False: " ✗", None: ""}[r["met"]]
            lines.append(f"| {r['quantity']} | {num(r['predicted'])} | {num(r['measured'])} "
                         f"| {pct(r['relative_error'])}{ok} | `{r['metric']}` |")
        if c.counter_time_s:
            pc = c.counted.prediction.predicted_time_s
            lines.append(f"| kernel time, Nsight (s) | {pc:.4g} | "
                         f"{c.counter_time_s:.4g} | "
                         f"{pct((pc - c.counter_time_s) / c.counter_time_s)} "
                         f"| `gpu__time_duration.sum` ({c.counted.prediction.device_model}) |")
        lines.append("")
    lines += ["## Speedup over the naive schedule", "",
              "| case | versus | predicted | measured | error |", "|---|---|---|---|---|"]
    for s in speed:
        lines.append(f"| {s['case']} | {s['versus']} | {s['predicted']:.2f}× | "
                     f"{s['measured']:.2f}× | {pct(s['relative_error'])} "
                     f"{'✓' if s['met'] else '✗'} |")
    every_opencl = all(c.measured_time_s for c in cases)
    lines += ["", "## Ranking (fastest first; OpenCL medians"
              + ("" if every_opencl else ", Nsight durations where OpenCL has none") + ")", ""]
    for r in ranks:
        kind, m, k, n = r["size"]
        size = f"{kind} M={m} K={k}" + (f" N={n}" if n else "")
        lines += [f"- {size}: {'same order' if r['match'] else 'order differs'}",
                  f"  - predicted: {', '.join(r['predicted'])}",
                  f"  - measured:  {', '.join(r['measured'])}"]
        lines += [f"  - {discordant_text(d)}" for d in r.get("discordant", [])]
        if kind == "matvec" and r.get("discordant") and (matvec_lines or parent_matvec):
            lines.append("  - Why the model cannot order these: \"Matrix-vector k-steps, "
                         "measured\"" + (" in `../validation.md`" if not matvec_lines
                                           else "") + ".")
    lines += ["", "## Roofline", "", "![roofline](roofline.png)", "",
              "Each kernel at its arithmetic intensity (FLOP per DRAM byte) and throughput: "
              "open markers predicted, filled markers measured (DRAM bytes from "
              "`dram__bytes_read.sum` + `dram__bytes_write.sum`, time measured); the lines "
              "are the DRAM bandwidth and FP32 ceilings of the device model."
              + (" cuBLAS FP32 (TF32 off) is drawn for reference." if cublas else
                 " (This run did not time cuBLAS.)"), "",
              *explanation_section(cases, load_barrier_wait(directory))]
    if cublas:
        best = min((c for c in cases if c.family == "gemm-tiled" and c.m == 4096),
                   key=lambda c: c.measured_time_s or c.counter_time_s or 1e9, default=None)
        ref = dict(cublas).get(4096)
        if best and ref and best.counter_time_s:
            ours = best.launch.counts.flop / (best.measured_time_s or best.counter_time_s)
            cuda = best.launch.counts.flop / best.counter_time_s
            lines += [f"cuBLAS FP32 reaches {ref / 1e12:.1f} TFLOP/s at N = 4096; the best "
                      f"schedule here (gemm-tiled B={best.tile}) {ours / 1e12:.2f} TFLOP/s in "
                      f"the OpenCL build, {ours / ref * 100:.0f}% of it ({cuda / 1e12:.2f} "
                      f"TFLOP/s, {cuda / ref * 100:.0f}%, in the CUDA build under Nsight).", ""]
    which = ("the main run (`reports/nvidia-h200`) in view, not these held-out cases, "
             "which were predicted before they were measured (see Pre-registered)" if holdout
             else "these measurements in view, so the predictions that use it are not "
             "independent of them")
    unshared = unshared_l2_errors(cases)
    if not holdout:
        lines += preregistered_section(Path(directory))
    lines += ["## What the model guesses", "",
              "Values of the device model that are not documented (guessed: each is warned "
              "about whenever it is used) or that were read off these measurements, and "
              "what each one feeds:", "",
              "| name | value | how it was set | used for |", "|---|---|---|---|",
              *value_rows(model, which, unshared), "",
              "The time model itself changed after the main run (`reports/nvidia-h200`) "
              "and the held-out run (`reports/nvidia-h200/holdout`) had both been measured: "
              "the OpenCL build's scalar local loads (read off its machine code, \"Two "
              "builds of one source\"), the exposed barrier latency by mean value analysis "
              "instead of latency / resident work-groups, later the tail (`tail_s`: a "
              "compute unit's last work-groups run with fewer companions) and the request "
              "ceiling from 0.75 to 0.76, all with the same data in view. So no time, "
              "speedup or ranking here is an independent test"
              + (" (the time predictions made before this run are in `predictions.json`, "
                 "compared in Pre-registered)" if holdout else "")
              + ". The global load instructions, requests and sectors and the local-load "
              "instructions use no value chosen or read with these data.", "",
              *codegen_lines, *pipe_lines, *matvec_lines, *dram_section(cases, model, holdout),
              *dispatch_lines, *sharing_lines]
    atomic_write_text(directory / "validation.md", "\n".join(lines))
    return directory / "validation.md"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Render validation.md, validation.json and "
                                 "roofline.png of an H200 report directory from its raw data.")
    ap.add_argument("directory", type=Path, nargs="+",
                    help="a directory holding h200_raw.json.gz (e.g. reports/nvidia-h200)")
    args = ap.parse_args(argv)
    for directory in args.directory:
        if not (directory / "h200_raw.json.gz").exists():
            print(f"error: {directory} has no h200_raw.json.gz (the validation driver's raw "
                  "data, compressed: python -m experiments.h200.data compress DIR)",
                  file=sys.stderr)
            return 2
    for directory in args.directory:
        print(f"rendered {render_hardware(directory)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
