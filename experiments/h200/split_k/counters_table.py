"""The Nsight counters of both kernels of ``gemm-split-k`` (:mod:`.counters`) against the
model: one row per case and kernel.

Measured: the driver's ``split_k_counters.json`` (``.json.gz`` once committed) in ``--run``
(default ``reports/nvidia-h200/split_k/counters/``): the records of stage ``ncu`` that have
counters, the right kernel name and a passed result check of C; the others are listed as not
measured, with why.

Modelled: ``simulator.model.sequence_run.model_sequence`` of today's schedule with
``nvidia-h200-cuda`` (the CUDA build), each kernel's own ``MemoryCounts`` (seconds: computed
here, not stored).

Compared (the quantities of :mod:`experiments.h200.local_counters.run_table`, plus global
store requests): global load and store requests and sectors, local load and store
instructions and L1 bank conflicts exact, local wavefronts (of the L1 unit and of the
instructions) within 1%; the verdicts as there (``exact``, ``within 1%``, ``L1 excess``,
``off: ...``).

After the device call: its ``$OUT/skc`` (``split_k_counters.json``, ``code.tar.gz``,
``driver.log``) copied into ``reports/nvidia-h200/split_k/counters/``, the JSON compressed
(``python -m experiments.h200.data compress reports/nvidia-h200/split_k/counters``), a
``command.txt`` written beside it, then::

    python -m experiments.h200.split_k.counters_table > reports/nvidia-h200/split_k/counters/table.md
"""
from __future__ import annotations

import argparse
import warnings
from pathlib import Path

from experiments.h200.data import REPORT, read_json
from experiments.h200.local_counters import run_table as LC

RUN = REPORT / "split_k" / "counters"
FILE = "split_k_counters.json"
DEVICE_MODEL = "nvidia-h200-cuda"

QUANTITIES = (LC.QUANTITIES[:2] + (
    ("global st requests", "global_store_requests",
     "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", "exact"),) + LC.QUANTITIES[2:])
"""(label, ``MemoryCounts`` attribute, Nsight metric, target "exact" or "1%")."""
TARGET = {label: target for label, _, _, target in QUANTITIES}


def load_run(folder: Path = RUN) -> dict:
    """The driver's JSON in ``folder`` (``.json.gz`` or plain)."""
    gz = folder / (FILE + ".gz")
    return read_json(gz if gz.exists() else folder / FILE)


def measured(data: dict) -> list[dict]:
    """One entry per case and kernel, in launch order: ``id``, ``kernel`` (index),
    ``kernel_name``, ``case``, the ``record`` (or None) and ``why_not``."""
    records = {(r["id"], r["kernel"]): r for r in (data.get("ncu") or {}).get("records", [])}
    stage_error = (data.get("ncu") or {}).get("error") or "no ncu stage"
    out = []
    for case in data["meta"]["cases"]:
        for kernel in case["kernels"]:
            rec = records.get((case["id"], kernel["index"]))
            entry = {"id": case["id"], "kernel": kernel["index"],
                     "kernel_name": kernel["kernel_name"], "case": case, "record": None,
                     "why_not": None}
            if rec is None:
                entry["why_not"] = f"no record ({stage_error})"
            elif not rec.get("metrics"):
                entry["why_not"] = rec.get("error") or "no counters"
            elif (rec.get("check") or {}).get("ok") is not True:
                entry["why_not"] = "failed result check of C: " + str(
                    rec.get("check") or rec.get("error"))
            else:
                entry["record"] = rec
            out.append(entry)
    return out


def model_figures(case: dict) -> list[dict]:
    """The model's figure of every quantity, per kernel of ``case`` in launch order."""
    from tiletraffic.simulator.model.device_model import DEVICE_MODELS
    from tiletraffic.simulator.model.sequence_run import model_sequence

    from experiments.h200.validation.driver import build_case

    spec = {k: case[k] for k in ("family", "m", "k", "n", "tile", "options")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        modelled = model_sequence(build_case(spec), DEVICE_MODELS[DEVICE_MODEL])
    return [{attr: int(getattr(k.memory, attr)) for _, attr, _, _ in QUANTITIES}
            for k in modelled.kernels]


def rows(entries: list[dict], figures: dict | None = None) -> list[dict]:
    """Per entry: ``values`` {label: (model, measured)}. ``figures``: case id -> the
    model's figures per kernel (:func:`model_figures`; computed where missing)."""
    figures = {} if figures is None else figures
    out = []
    for e in entries:
        row = {**e, "values": {}}
        out.append(row)
        if e["record"] is None:
            continue
        if e["id"] not in figures:
            figures[e["id"]] = model_figures(e["case"])
        model = figures[e["id"]][e["kernel"]]
        for label, attr, metric, _ in QUANTITIES:
            v = (e["record"]["metrics"].get(metric) or {}).get("value")
            if isinstance(v, (int, float)):
                row["values"][label] = (model[attr], int(v))
    return out


def meets(label: str, pair: tuple) -> bool:
    """(model, measured) within the quantity's target (exact, or 1% of the measured figure;
    0 against 0 exact)."""
    model, meas = pair
    if TARGET[label] == "exact" or meas == 0:
        return model == meas
    return abs(model - meas) <= 0.01 * meas


def verdict(row: dict) -> str:
    """As :func:`experiments.h200.local_counters.run_table.verdict`, over :data:`QUANTITIES`."""
    v = row["values"]
    excess = []
    for wf, cf in LC.L1_PAIRS:
        if wf in v and cf in v and not (meets(wf, v[wf]) and meets(cf, v[cf])):
            extra = v[wf][1] - v[wf][0]
            if extra > 0 and extra == v[cf][1] - v[cf][0]:
                excess += [wf, cf]
    off = [q for q in v if not meets(q, v[q]) and q not in excess]
    if off:
        return "off: " + ", ".join(off) + (" + L1 excess" if excess else "")
    if excess:
        return "L1 excess"
    return "exact" if all(a == b for a, b in v.values()) else "within 1%"


def markdown(all_rows: list[dict], data: dict) -> str:
    done = [r for r in all_rows if r["record"] is not None]
    verdicts = [verdict(r) for r in done]
    meta = data["meta"]
    lines = [
        "# Both kernels of gemm-split-k: Nsight Compute on the H200 against the model",
        "",
        "Kernel 1 `gemm_split_k_slices` (the warp-tiled GEMM over S slices of K into "
        "C_partial[S][M][N]), kernel 2 `gemm_split_k_reduce` (the slices added into C, "
        "float4), launched in order in one CUDA process (the CUDA build, NVRTC), C checked "
        f"against float64; the model `{DEVICE_MODEL}`, each kernel its own launch. Each "
        "cell: the model's figure where it equals Nsight's, else model / Nsight (model − "
        "Nsight relative to Nsight). Targets: global requests and sectors, local "
        "instructions and L1 bank conflicts exact; local wavefronts within 1%.",
        "",
        f"Device call: {meta.get('created_utc')}, commit {meta.get('git_commit') or '?'}. "
        f"{len(done)} of {len(all_rows)} kernels measured: "
        + ", ".join(f"{verdicts.count(x)} {x}" for x in ("exact", "within 1%", "L1 excess"))
        + f", {sum(vd.startswith('off') for vd in verdicts)} off.",
        "",
        "| case | kernel | C check (error / tolerance) | "
        + " | ".join(q for q, *_ in QUANTITIES) + " | verdict |",
        "|---|---|---:|" + "---:|" * len(QUANTITIES) + "---|",
    ]
    for r, vd in zip(done, verdicts):
        check = r["record"]["check"]["max_error_over_tolerance"]
        lines.append(f"| {r['id']} | {r['kernel'] + 1} {r['kernel_name']} | {check:.3g} | "
                     + " | ".join(LC._cell(r["values"].get(q)) for q, *_ in QUANTITIES)
                     + f" | {vd} |")
    missing = [r for r in all_rows if r["record"] is None]
    if missing:
        lines += ["", "Not measured:", ""]
        lines += [f"- {r['id']} kernel {r['kernel'] + 1} {r['kernel_name']}: {r['why_not']}"
                  for r in missing]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, default=RUN,
                    help=f"folder of the device call's {FILE}(.gz)")
    args = ap.parse_args(argv)
    data = load_run(args.run)
    print(markdown(rows(measured(data)), data), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
