"""The committed Nsight Compute counters of every family against the model, no GPU needed.

Every committed H200 counter record (:data:`SOURCES`) of a build whose local-memory
instructions are the ones the generated source gives today is compared with
``tiletraffic.model`` of today's schedule: the CUDA build (NVRTC) with ``nvidia-h200-cuda``,
the OpenCL driver's own machine code with ``nvidia-h200``. "Today's instructions" is read
off ``reports/nvidia-h200/local_counters/offline_sass.json.gz``
(:mod:`.offline_sass`): the CUDA build of each configuration's source at the run's commit
has the same local-load instructions (``LDS*`` counts) as today's; for an OpenCL build the
OpenCL C must be the same text. Other records are listed as not comparable, with why.

Compared: global load requests and sectors and global store sectors (exact), local load
instructions (exact), local load wavefronts and bank conflicts of Nsight's L1 unit
(``l1tex__data_*``) and, where the run read them, of the load instructions themselves
(``smsp__sass_*``, the per-instruction counters).

The model's figures are computed once (``--write-model``, minutes: 6144³ GEMMs) into
``reports/nvidia-h200/local_counters/earlier_model.json`` and read from there by the table.

    python -m experiments.h200.local_counters.analysis --write-model
    python -m experiments.h200.local_counters.analysis > reports/nvidia-h200/local_counters/earlier_records.md
"""
from __future__ import annotations

import json
import os
import re
import warnings
from pathlib import Path

from experiments.h200.data import load_json

REPORT = Path(__file__).resolve().parents[3] / "reports" / "nvidia-h200"
MODEL_FILE = REPORT / "local_counters" / "earlier_model.json"

SOURCES = (
    ("h200_raw.json.gz", "601f5fa"),
    ("holdout/h200_raw.json.gz", "7c1c605"),
    ("matvec/h200_matvec.json.gz", "d0a56bb"),
    ("matvec/busy_sms_clocks/h200_matvec.json.gz", "6738ff6"),
    ("codegen/h200_codegen.json.gz", "7cd2126"),
    ("l1_pipe/h200_codegen.json.gz", "6eb196b"),
    ("l1_pipe/holdout/h200_codegen.json.gz", "062ca8f"),
    ("ladder/counters/ladder_counters.json.gz", "031b73b"),
    ("ladder/codegen/local_codegen.json.gz", "e2204b0"),
    ("ladder/codegen2/local_codegen.json.gz", "5a3dce4"),
)
"""(committed file, commit its device call ran) of every run with Nsight records."""

QUANTITIES = (
    # (label, model key, metric, exact target)
    ("global load requests", "global_load_requests",
     "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", True),
    ("global load sectors", "global_load_sectors",
     "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", True),
    ("global store sectors", "global_store_sectors",
     "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", True),
    ("local load instructions", "local_load_requests",
     "smsp__inst_executed_op_shared_ld.sum", True),
    ("local load wavefronts (L1)", "local_load_wavefronts",
     "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", False),
    ("local load conflicts (L1)", "local_load_bank_conflicts",
     "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", False),
    ("local load wavefronts (instructions)", "local_load_wavefronts",
     "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", True),
)
SUFFIX = re.compile(r"-(opencl-cubin|opencl-jit|opencl-ptx|cuda)$")


def _records(node, out: list, cases: dict) -> None:
    if isinstance(node, dict):
        if "id" in node and "family" in node:
            cases[node["id"]] = node
        if isinstance(node.get("metrics"), dict) and "id" in node and node.get("schedule"):
            out.append(node)
            return
        for v in node.values():
            _records(v, out, cases)
    elif isinstance(node, list):
        for v in node:
            _records(v, out, cases)


def _loads(counts: dict) -> dict:
    return {k: v for k, v in counts.items() if k.startswith("LDS")}


def _model(key: tuple, case: dict) -> dict:
    from tiletraffic.simulator.model.device_model import DEVICE_MODELS
    from tiletraffic.simulator.model.launch import model_launch

    from experiments.h200.validation.driver import build_case

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        memory = model_launch(build_case(case), DEVICE_MODELS[key[0]]).memory
    return {attr: int(getattr(memory, attr)) for _, attr, _, _ in QUANTITIES}


def _compiled_config(sass: dict, config: str, k: int) -> str:
    """The offline build of ``config`` for a record at K = ``k``: ``config`` itself, or, for
    a family whose source has K in it (:data:`.cases.CODE_NEEDS_K`, built once per K of the
    check), the build at ``k`` or else the first one (their local instructions are the same
    at every K: only the local array's length differs)."""
    if config in sass["configs"]:
        return config
    per_k = sorted(c for c in sass["configs"] if c.startswith(config + "-K"))
    return f"{config}-K{k}" if f"{config}-K{k}" in per_k else (per_k[0] if per_k else config)


def rows(figures: dict | None = None) -> list[dict]:
    """One row per committed record: source, id, build, comparable (or why not), and per
    quantity (model, measured). ``figures``: the model's figures by case key (as
    :data:`MODEL_FILE` holds them); missing ones are modelled and added to it."""

    from experiments.h200.local_counters.cases import config_id
    figures = {} if figures is None else figures
    sass = load_json(REPORT / "local_counters" / "offline_sass.json.gz")
    out = []
    for path, commit in SOURCES:
        data = load_json(REPORT / path)
        if data is None:
            continue
        records, cases = [], {}
        _records(data, records, cases)
        for rec in records:
            build_tag = (SUFFIX.search(rec["id"]) or [None, "cuda"])[1]
            base = SUFFIX.sub("", rec["id"])
            base = base[:-len("-envreg0")] if base.endswith("-envreg0") else base
            options = (cases.get(base) or cases.get(rec["id"]) or {}).get("options") or {}
            config = config_id(rec["schedule"], rec["tile"], options)
            row = {"source": path, "commit": commit, "id": rec["id"], "config": config,
                   "build": "OpenCL" if build_tag in ("opencl-cubin", "opencl-jit") else
                   "CUDA", "why_not": None, "values": {}}
            out.append(row)
            if build_tag == "opencl-ptx":
                row["why_not"] = "OpenCL PTX assembled by CUDA's ptxas: no modelled build"
                continue
            config = _compiled_config(sass, config, rec["k"])
            then = sass["then"].get(commit, {}).get(config)
            now = sass["configs"].get(config)
            if then is None or now is None or "sass_counts" not in then:
                row["why_not"] = "configuration not compiled offline"
                continue
            if row["build"] == "CUDA" and _loads(then["sass_counts"]) != _loads(now["sass_counts"]):
                row["why_not"] = (f"the CUDA build's local loads then {_loads(then['sass_counts'])}"
                                  f", today {_loads(now['sass_counts'])}")
                continue
            if row["build"] == "OpenCL" and not then.get("opencl_source_equal_to_now"):
                row["why_not"] = "the OpenCL C has changed since (its JIT today not read)"
                continue
            if not rec.get("metrics") or (rec.get("check") or {}).get("ok") is False:
                row["why_not"] = "no counters or a failed result check"
                continue
            model = "nvidia-h200-cuda" if row["build"] == "CUDA" else "nvidia-h200"
            key = (model, rec["schedule"], rec["m"], rec["k"], rec.get("n"), rec["tile"],
                   tuple(sorted(options.items())))
            name = repr(key)
            if name not in figures:
                case = {"family": rec["schedule"], "m": rec["m"], "k": rec["k"],
                        "n": rec.get("n"), "tile": rec["tile"], "options": options}
                figures[name] = _model(key, case)
            memory = figures[name]
            for label, attr, metric, _ in QUANTITIES:
                v = (rec["metrics"].get(metric) or {}).get("value")
                if isinstance(v, (int, float)):
                    row["values"][label] = (memory[attr], v)
    return out


def verdict(row: dict) -> str:
    """``exact``; ``L1 excess`` (local wavefronts of the L1 unit above the model by exactly
    its conflicts, the instructions' own wavefronts, where read, exact); or ``differs``."""
    v = row["values"]
    exact = all(v[q][0] == v[q][1] for q, *_ , e in QUANTITIES if e and q in v)
    wf, cf = v.get("local load wavefronts (L1)"), v.get("local load conflicts (L1)")
    if not exact:
        return "differs"
    if wf is None or (wf[0] == wf[1] and cf[0] == cf[1]):
        return "exact"
    if cf[0] == 0 and wf[1] - wf[0] == cf[1] - cf[0]:
        return "L1 excess"
    return "differs"


def markdown(all_rows: list[dict]) -> str:
    done = [r for r in all_rows if not r["why_not"]]
    lines = [f"{len(done)} of {len(all_rows)} committed records compared "
             f"({sum(verdict(r) == 'exact' for r in done)} exact, "
             f"{sum(verdict(r) == 'L1 excess' for r in done)} exact but for the L1 unit's "
             f"excess, {sum(verdict(r) == 'differs' for r in done)} differ).", "",
             "| record | build | global ld requests | global ld sectors | local ld instr. "
             "| local ld wavefronts: model / L1 / instr. | L1 conflicts | verdict |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    fmt = lambda p: "—" if p is None else (f"{p[0]:,}" if p[0] == p[1] else f"{p[0]:,} ≠ {p[1]:,}")
    for r in done:
        v = r["values"]
        wf, sw = v.get("local load wavefronts (L1)"), v.get("local load wavefronts (instructions)")
        wcell = "—" if wf is None else (f"{wf[0]:,} / {wf[1]:,} / "
                                       + ("—" if sw is None else f"{sw[1]:,}"))
        cf = v.get("local load conflicts (L1)")
        lines.append(f"| {r['id']} ({r['source']}) | {r['build']} | "
                     f"{fmt(v.get('global load requests'))} | {fmt(v.get('global load sectors'))} "
                     f"| {fmt(v.get('local load instructions'))} | {wcell} | "
                     f"{'—' if cf is None else f'{cf[0]:,} / {cf[1]:,}'} | {verdict(r)} |")
    lines += ["", "Not compared:", ""]
    lines += [f"- {r['id']} ({r['source']}, {r['build']}): {r['why_not']}"
              for r in all_rows if r["why_not"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write-model", action="store_true",
                    help=f"model every compared record and write {MODEL_FILE.name} (minutes)")
    args = ap.parse_args(argv)
    if args.write_model:
        figures: dict = {}
        rows(figures)
        tmp = MODEL_FILE.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(figures, indent=1, sort_keys=True) + "\n")
        os.replace(tmp, MODEL_FILE)
        return 0
    print(markdown(rows(json.loads(MODEL_FILE.read_text()))), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
