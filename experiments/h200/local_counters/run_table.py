"""The device call of :mod:`.driver` against the model: one row per counted case and build.

Measured: ``reports/nvidia-h200/local_counters/run/local_counters_run.tar.gz`` (the driver's
``lc/local_counters.json`` as it came back): the CUDA build's records of stage ``ncu``, the
OpenCL driver's own machine code of stages ``ncu_opencl`` and ``ncu_opencl_each`` (a record
with counters and a passed result check; the others are listed as not measured, with why).

Modelled: ``simulator.model.launch.model_launch`` of today's schedule of each case with
``nvidia-h200-cuda`` (CUDA build) or ``nvidia-h200`` (OpenCL build). The modelled figures are
written once to ``run/model.json`` (``--write-model``, minutes: 1000³ GEMMs) and read from
there by the table, so that the table's check stays fast; the check recomputes a small case
to keep that file honest.

Compared per row: global load requests, load sectors and store sectors, local load and
store instructions (exact targets); local load and store wavefronts of the L1 unit
(``l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st}``) and of the instructions
(``smsp__sass_l1tex_...``), within 1%; local load and store bank conflicts of the L1 unit
(``l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}``), exact.

    python -m experiments.h200.local_counters.run_table --write-model
    python -m experiments.h200.local_counters.run_table > reports/nvidia-h200/local_counters/table.md

(``--run reports/nvidia-h200/local_counters/run`` for the first call.)
"""
from __future__ import annotations

import argparse
import io
import json
import os
import tarfile
import warnings
from pathlib import Path

RUNS = Path(__file__).resolve().parents[3] / "reports" / "nvidia-h200" / "local_counters"
RUN = RUNS / "run4"
"""The device call the committed ``table.md`` analyses (``run/``, ``run2/``, ``run3/``: the
earlier calls, each with its table against the model of its day beside it)."""
ARCHIVE = RUN / "local_counters_run.tar.gz"
MODEL_FILE = RUN / "model.json"

QUANTITIES = (
    # (label, model attribute, Nsight metric, target: "exact" or "1%")
    ("global ld requests", "global_load_requests",
     "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "exact"),
    ("global ld sectors", "global_load_sectors",
     "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "exact"),
    ("global st sectors", "global_store_sectors",
     "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "exact"),
    ("local ld instr.", "local_load_requests", "smsp__inst_executed_op_shared_ld.sum", "exact"),
    ("local ld wavefronts (L1)", "local_load_wavefronts",
     "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "1%"),
    ("local ld wavefronts (instr.)", "local_load_wavefronts",
     "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "1%"),
    ("local ld conflicts (L1)", "local_load_bank_conflicts",
     "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "exact"),
    ("local st instr.", "local_store_requests", "smsp__inst_executed_op_shared_st.sum", "exact"),
    ("local st wavefronts (L1)", "local_store_wavefronts",
     "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum", "1%"),
    ("local st wavefronts (instr.)", "local_store_wavefronts",
     "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_st.sum", "1%"),
    ("local st conflicts (L1)", "local_store_bank_conflicts",
     "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", "exact"),
)
STAGES = (("ncu", "CUDA"), ("ncu_opencl", "OpenCL"), ("ncu_opencl_each", "OpenCL"))
DEVICE_MODEL = {"CUDA": "nvidia-h200-cuda", "OpenCL": "nvidia-h200"}


def load_run(archive: Path = ARCHIVE) -> dict:
    """The driver's ``lc/local_counters.json`` from the committed archive."""
    with tarfile.open(archive, "r:gz") as tar:
        return json.load(tar.extractfile("lc/local_counters.json"))


def measured(data: dict) -> list[dict]:
    """One entry per counted case and build: id (the CUDA id), case, build, the record with
    counters (or None) and why not."""
    cases = {c["id"]: c for c in data["meta"]["cases"]}
    out = {}
    for stage, build in STAGES:
        for rec in (data.get(stage) or {}).get("records", []):
            cid = rec["id"].removesuffix("-opencl-jit")
            if cid not in cases:
                continue
            ok = bool(rec.get("metrics")) and (rec.get("check") or {}).get("ok") is True
            entry = out.setdefault((cid, build), {"id": cid, "case": cases[cid], "build": build,
                                                  "record": None, "why_not": None})
            if ok:
                entry["record"], entry["why_not"] = rec, None
            elif entry["record"] is None:
                entry["why_not"] = rec.get("error") or (
                    "failed result check" if rec.get("check") else "no counters (launch failed)")
    for cid in cases:
        for build in ("CUDA", "OpenCL"):
            out.setdefault((cid, build), {"id": cid, "case": cases[cid], "build": build,
                                          "record": None, "why_not": "no record"})
    return sorted(out.values(), key=lambda e: (e["build"], list(cases).index(e["id"])))


def model_key(case: dict, build: str) -> str:
    return f"{case['id'].removesuffix('-again')}|{DEVICE_MODEL[build]}"


def model_figures(case: dict, build: str) -> dict:
    """The model's figure of every quantity of ``case`` for ``build``."""
    from tiletraffic.simulator.model.device_model import DEVICE_MODELS
    from tiletraffic.simulator.model.launch import model_launch

    from experiments.h200.validation.driver import build_case

    spec = {k: case[k] for k in ("family", "m", "k", "n", "tile", "options")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        memory = model_launch(build_case(spec), DEVICE_MODELS[DEVICE_MODEL[build]]).memory
    return {attr: int(getattr(memory, attr)) for _, attr, _, _ in QUANTITIES}


def write_model(entries: list[dict], path: Path = MODEL_FILE) -> dict:
    """Model every measured entry once (by case and device model), write ``path`` atomically."""
    figures: dict = {}
    for e in entries:
        if e["record"] is not None:
            key = model_key(e["case"], e["build"])
            if key not in figures:
                figures[key] = model_figures(e["case"], e["build"])
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(figures, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)
    return figures


def rows(entries: list[dict], figures: dict) -> list[dict]:
    """Per measured entry: values {label: (model, measured)} and its verdicts."""
    out = []
    for e in entries:
        row = {**e, "values": {}}
        out.append(row)
        if e["record"] is None:
            continue
        model = figures[model_key(e["case"], e["build"])]
        for label, attr, metric, _ in QUANTITIES:
            v = (e["record"]["metrics"].get(metric) or {}).get("value")
            if isinstance(v, (int, float)):
                row["values"][label] = (model[attr], int(v))
    return out


def meets(label: str, pair: tuple) -> bool:
    """Whether (model, measured) meets the quantity's target (exact, or within 1% of the
    measured figure; 0 against 0 is exact)."""
    target = next(t for q, *_, t in QUANTITIES if q == label)
    model, meas = pair
    if target == "exact" or meas == 0:
        return model == meas
    return abs(model - meas) <= 0.01 * meas


L1_PAIRS = (("local ld wavefronts (L1)", "local ld conflicts (L1)"),
            ("local st wavefronts (L1)", "local st conflicts (L1)"))


def l1_excess(row: dict) -> list[str]:
    """The L1-unit labels whose miss is the L1 unit's excess: for loads or stores, Nsight's
    L1 wavefronts exceed the model's by exactly as many as its L1 conflicts exceed the
    model's (the extra wavefronts are all counted as conflicts)."""
    v, out = row["values"], []
    for wf, cf in L1_PAIRS:
        if wf in v and cf in v and not (meets(wf, v[wf]) and meets(cf, v[cf])):
            extra = v[wf][1] - v[wf][0]
            if extra > 0 and extra == v[cf][1] - v[cf][0]:
                out += [wf, cf]
    return out


def verdict(row: dict) -> str:
    """``exact`` (every quantity equal); ``within 1%`` (every target met, some wavefront
    figure not equal); ``L1 excess`` (every target met but the L1 unit's wavefronts and
    conflicts, which exceed the model's by the same number, :func:`l1_excess`); or
    ``off: <labels>`` (the other quantities that miss their target, ``+ L1 excess`` where
    that is there too)."""
    v = row["values"]
    excess = l1_excess(row)
    off = [q for q in v if not meets(q, v[q]) and q not in excess]
    if off:
        return "off: " + ", ".join(off) + (" + L1 excess" if excess else "")
    if excess:
        return "L1 excess"
    return "exact" if all(a == b for a, b in v.values()) else "within 1%"


def _cell(pair) -> str:
    if pair is None:
        return "—"
    a, b = pair
    if a == b:
        return f"{a:,}"
    rel = f" ({(a - b) / b:+.2%})" if b else ""
    return f"{a:,} / {b:,}{rel}"


def markdown(all_rows: list[dict]) -> str:
    done = [r for r in all_rows if r["record"] is not None]
    verdicts = [verdict(r) for r in done]
    n_exact = verdicts.count("exact")
    n_one = verdicts.count("within 1%")
    n_l1 = verdicts.count("L1 excess")
    lines = [
        "# Local-memory counters of the H200 (Nsight Compute) against the model",
        "",
        "Each cell: the model's figure where it equals Nsight's, else model / Nsight "
        "(model − Nsight relative to Nsight). Targets: global requests and sectors, local "
        "instructions and L1 bank conflicts exact; local wavefronts within 1%. CUDA build: "
        "`nvidia-h200-cuda`; OpenCL build (the OpenCL driver's own machine code): `nvidia-h200`.",
        "",
        f"{len(done)} of {len(all_rows)} case-builds measured: {n_exact} exact, {n_one} within "
        f"1% (conflicts exact), {n_l1} within their targets but for the L1 unit's excess "
        f"(L1 wavefronts above the model by exactly the L1 conflicts above it), "
        f"{len(done) - n_exact - n_one - n_l1} off.",
        "",
        "| case | build | " + " | ".join(q for q, *_ in QUANTITIES) + " | verdict |",
        "|---|---|" + "---:|" * len(QUANTITIES) + "---|",
    ]
    for r, vd in zip(done, verdicts):
        lines.append(f"| {r['id']} | {r['build']} | "
                     + " | ".join(_cell(r["values"].get(q)) for q, *_ in QUANTITIES)
                     + f" | {vd} |")
    lines += ["", "Not measured:", ""]
    lines += [f"- {r['id']} ({r['build']}): {r['why_not']}" for r in all_rows
              if r["record"] is None]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write-model", action="store_true",
                    help=f"model every measured case and write {MODEL_FILE.name} (minutes)")
    ap.add_argument("--run", type=Path, default=RUN,
                    help="folder of the device call (its local_counters_run.tar.gz and "
                         "model.json)")
    args = ap.parse_args(argv)
    entries = measured(load_run(args.run / ARCHIVE.name))
    if args.write_model:
        write_model(entries, args.run / MODEL_FILE.name)
        return 0
    figures = json.loads((args.run / MODEL_FILE.name).read_text())
    print(markdown(rows(entries, figures)), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
