"""The L1 data pipe on the H200: the section of ``validation.md`` that compares the time
model's busiest resource, the L1 wavefronts, with Nsight Compute's count of them.

Reads ``l1_pipe/h200_codegen.json.gz`` (``experiments.h200.codegen.driver --l1-pipe-metrics
--more-cubin-cases``: the OpenCL driver's own cubins launched through CUDA under Nsight) and
``matvec/h200_matvec.json.gz`` (the CUDA build of the matrix-vector grid), and models each case
with the device model of the build measured. Nothing here needs a GPU.
"""
from __future__ import annotations

from pathlib import Path

from tiletraffic.simulator.model.device_model import DeviceModel

from experiments.h200.hardware import counter_model_for, modelled_launch
from experiments.h200.ncu import metric_value

from experiments.h200.data import load_json
from experiments.h200.matvec.analysis import load_matvec

DATA_PIPE = "l1tex__data_pipe_lsu_wavefronts.sum"
DURATION = "gpu__time_duration.sum"


def load_l1_pipe(directory: str | Path, matvec: dict | None = None) -> dict | None:
    """The Nsight records with the L1 data-pipe counter of a report directory
    (``l1_pipe/`` and ``matvec/``), or None if it has neither. ``matvec``: the directory's
    matvec data if already loaded (:func:`experiments.h200.matvec.analysis.load_matvec`)."""
    out = {}

    def part(data: dict, stage: str) -> dict:
        return {"meta": data.get("meta", {}),
                "records": data.get(stage, {}).get("records", [])}

    if matvec is None:
        matvec = load_matvec(directory)
    if matvec is not None:
        out["cuda"] = part(matvec, "counters")
    folder = Path(directory) / "l1_pipe"
    for key, path in (("opencl", folder / "h200_codegen.json.gz"),
                      ("holdout", folder / "holdout" / "h200_codegen.json.gz")):
        data = load_json(path)
        if data is not None:
            out[key] = part(data, "counters_cubin")
    pre = load_json(folder / "holdout" / "predictions.json")
    if "holdout" in out and pre is not None:
        out["holdout"]["predictions"] = pre
    return out or None


def holdout_rows(data: dict) -> list[dict]:
    """The pre-registered L1 wavefronts (``l1_pipe/holdout/predictions.json``) against
    Nsight's count in the run made after they were committed."""
    part = data.get("holdout") or {}
    records = {r["id"]: r for r in part.get("records", [])}
    rows = []
    for c in part.get("predictions", {}).get("cases", []):
        n = "" if c["family"].startswith("matvec") else f"-N{c['n']}"
        case = f"{c['family']}-M{c['n']}-K{c['n']}{n}-T{c['tile']}"
        rec = records.get(case + "-opencl-cubin")
        ok = rec and rec.get("check", {}).get("ok") and metric_value(rec, DATA_PIPE)
        measured = float(metric_value(rec, DATA_PIPE)) if ok else None
        rows.append({"case": case, "predicted": c["l1_wavefronts"],
                     "barrier_part": c["barrier_wavefronts"], "measured": measured,
                     "relative_error": c["l1_wavefronts"] / measured - 1 if measured else None})
    return rows



def l1_pipe_rows(data: dict, model: DeviceModel) -> list[dict]:
    """Per measured launch: the model's L1 wavefronts (``model`` for the OpenCL driver's
    cubins, :func:`counter_model_for` for the CUDA build), the part of them charged for
    barriers, Nsight's data-pipe wavefronts, and the busiest SM's share of the time the data
    pipe was busy (its wavefronts / (duration x clock))."""
    rows = []
    for build, build_model in (("opencl", model), ("cuda", counter_model_for(model))):
        for rec in (data.get(build) or {}).get("records", []):
            measured, duration = metric_value(rec, DATA_PIPE), metric_value(rec, DURATION)
            if not measured or not duration or not rec.get("check", {}).get("ok", True):
                continue
            measured, duration = float(measured), float(duration)
            launch = modelled_launch(rec["schedule"], rec["m"], rec["k"], rec.get("n"),
                                     rec["tile"], build_model)
            p = launch.prediction
            barrier = build_model.barrier_wavefronts_per_work_group * launch.counts.barriers
            share = p.work_groups_per_cu / launch.counts.work_groups
            rows.append({"case": rec["id"].removesuffix("-opencl-cubin"), "build": build,
                         "device_model": build_model.name,
                         "predicted": p.l1_wavefronts, "barrier_part": barrier,
                         "measured": measured,
                         "relative_error": p.l1_wavefronts / measured - 1,
                         "relative_error_without_barriers":
                             (p.l1_wavefronts - barrier) / measured - 1,
                         "busy": measured * share / (duration * 1e-9 * build_model.clock_hz),
                         "bound": p.bound,
                         "time_s": duration * 1e-9, "predicted_time_s": p.predicted_time_s})
    return rows


def _busy_span(rows: list[dict], bound: str) -> str:
    busy = [r["busy"] for r in rows if r.get("bound") == bound]
    return f"{min(busy):.0%}–{max(busy):.0%}" if busy else "none here"


def _holdout_lines(data: dict) -> list[str]:
    rows = [r for r in holdout_rows(data) if r["measured"]]
    if not rows:
        return []
    meta = data["holdout"]["predictions"].get("meta", {})
    return [
        f"- **Predicted before measured.** For {len(rows)} other launches, none of which "
        "the barrier term was read from (`l1_pipe/holdout/`), the model's wavefronts were "
        f"written to `predictions.json` ({meta.get('created_utc', '?')}, model of commit "
        f"`{meta.get('code_commit', '?')[:7]}`) and committed before the device run "
        f"({data['holdout']['meta'].get('created_utc', '?')}, which also measured the "
        "launches above again). Predicted against measured: "
        + "; ".join(f"{r['case']} {_signed(r['relative_error'])}" for r in rows)
        + f". Over the {len(rows)}: {_span([r['relative_error'] for r in rows])}."]


def _signed(x: float, digits: int = 2) -> str:
    """A signed percentage without a negative zero."""
    return f"{round(x * 100, digits) + 0.0:+.{digits}f}%"


def _span(values: list[float]) -> str:
    return f"{_signed(min(values), 1)} to {_signed(max(values), 1)}"


def l1_pipe_section(data: dict | None, model: DeviceModel) -> tuple[list[str], list[dict]]:
    """Markdown lines of the section and its rows for ``validation.json`` (the held-out
    rows with ``build`` "holdout")."""
    if not data:
        return [], []
    rows = l1_pipe_rows(data, model) + [{**r, "build": "holdout"} for r in holdout_rows(data)]
    opencl = [r for r in rows if r["build"] == "opencl"]
    cuda = [r for r in rows if r["build"] == "cuda"]
    if not opencl:
        return [], rows
    meta = data["opencl"]["meta"]
    lines = [
        "## The L1 data pipe, measured", "",
        "The time model's busiest resource for every kernel here is the L1 data pipe "
        "(`l1` or `l1_requests` bound): one wavefront per line of a global request, per "
        "local-memory wavefront, and two per work-group barrier "
        "(`barrier_wavefronts_per_work_group`). `experiments/h200/codegen/driver.py "
        "--l1-pipe-metrics --more-cubin-cases` (one device call on "
        f"{meta.get('created_utc', '?')[:16].replace('T', ' ')} UTC, `l1_pipe/command.txt`) "
        "launched the OpenCL driver's own machine code (its cubins, through CUDA, every "
        "result checked) under Nsight Compute, which counts every wavefront of the pipe "
        f"(`{DATA_PIPE}`). Predicted with `{opencl[0]['device_model']}` (the OpenCL build); "
        "*without barriers*: the same prediction less the barrier wavefronts; *busy*: the "
        "busiest SM's measured wavefronts / (Nsight's duration × 1.98 GHz); the last two "
        "columns: Nsight's duration and the predicted time.", "",
        "| case | predicted | of which barriers | measured | error | without barriers | busy "
        "| time, Nsight | predicted (error) |", "|---|---|---|---|---|---|---|---|---|"]
    for r in opencl:
        lines.append(
            f"| {r['case']} | {r['predicted']:,.0f} | {r['barrier_part']:,.0f} | "
            f"{r['measured']:,.0f} | {_signed(r['relative_error'])} | "
            f"{_signed(r['relative_error_without_barriers'])} | {r['busy']:.0%} | "
            f"{r['time_s'] * 1e3:#.4g} ms | {r['predicted_time_s'] * 1e3:#.4g} ms "
            f"({_signed(r['predicted_time_s'] / r['time_s'] - 1, 1)}) |")
    barriered = [r for r in opencl if r["barrier_part"]]
    lines += [
        "",
        "- **The count.** Predicted against measured: "
        f"{_span([r['relative_error'] for r in opencl])} "
        f"over these {len(opencl)} launches"
        + (f"; without the barrier term the kernels with barriers would be "
           f"{_span([r['relative_error_without_barriers'] for r in barriered])} off"
           if barriered else "")
        + ". The barrier term was read off these counters (one wavefront on the pipe's "
        "shared-memory side and one on its global side per work-group barrier, "
        "`simulator/device_model.py` [H200-l1-pipe]), so for it this is a derivation, not "
        "an independent test; the rest of the count uses no value from them."
        + (f" The CUDA build of the {len(cuda)} matrix-vector launches of \"Matrix-vector "
           "k-steps, measured\" (its 10 cells × 3 schedules, less the one whose x does not "
           f"fit in local memory; with `{cuda[0]['device_model']}`): "
           f"{_span([r['relative_error'] for r in cuda])}." if cuda else ""),
        *_holdout_lines(data),
        "- **The pipe is not always busy.** The busiest SM's data pipe works "
        f"{min(r['busy'] for r in opencl):.0%}–{max(r['busy'] for r in opencl):.0%} of "
        "the kernel time. Where the model bounds a kernel by the pipe (bound `l1`: "
        f"{_busy_span(opencl, 'l1')} busy), it adds to the pipe's time only the barrier "
        "latency no other work-group hides (mean value analysis) and the tail, so the "
        "kernels with barriers whose pipe idles longer are under-predicted even with the "
        "count right (the last column). The kernels bound by global requests (`l1_requests`, "
        f"{_busy_span(opencl, 'l1_requests')} busy: the naive B = 32 ones) idle the pipe "
        "by the request ceiling instead.", ""]
    return lines, rows
