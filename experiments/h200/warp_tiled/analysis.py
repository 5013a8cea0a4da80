"""Tables of the warp-tiled study from its committed data (no GPU): the kernels' times
against cuBLAS in the same run, the model's predictions with the compiled registers and
their errors, and Nsight Compute's counters of the CUDA build against the model's counts.

    python -m experiments.h200.warp_tiled.analysis reports/nvidia-h200/warp_tiled

Writes ``model.json`` into that folder (the model's prediction and memory counts of every
measured case, with the registers it was given) and prints the tables of ``findings.md``.
"""
from __future__ import annotations

import argparse
import json
import statistics
import warnings
from pathlib import Path

from experiments.h200.data import read_json
from experiments.h200.warp_tiled import cases as C

COUNTERS = (
    ("global load requests", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
     "global_load_requests"),
    ("global load sectors", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
     "global_load_sectors"),
    ("local load requests", "smsp__inst_executed_op_shared_ld.sum", "local_load_requests"),
    ("local load wavefronts", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
     "local_load_wavefronts"),
    ("local load bank conflicts", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
     "local_load_bank_conflicts"),
    ("local store requests", "smsp__inst_executed_op_shared_st.sum", "local_store_requests"),
    ("local store wavefronts", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
     "local_store_wavefronts"),
    ("local store bank conflicts", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
     "local_store_bank_conflicts"),
)
"""(what, Nsight Compute metric, the model's MemoryCounts field)."""


def times(raw: dict) -> dict:
    """(n, label) -> {"medians": [per round], "best_s", "round_spread", "registers"}."""
    out: dict = {}
    for r in raw["cases"]:
        if r.get("status") != "ok" or not r.get("checked"):
            continue
        e = out.setdefault((r["n"], r["label"]), {"medians": [], "registers": None})
        e["medians"].append(r["median_s"])
        e["registers"] = (r.get("run") or {}).get("registers_per_work_item") or e["registers"]
    for e in out.values():
        e["best_s"] = min(e["medians"])
        e["round_spread"] = (max(e["medians"]) - min(e["medians"])) / min(e["medians"])
    return out


def cublas(raw: dict) -> dict:
    """n -> {"before_s", "after_s", "best_s"} (medians of the two reference runs)."""
    out: dict = {}
    for c in raw["cublas"]:
        if "median_s" in c:
            out.setdefault(c["n"], {})[f"{c['when']}_s"] = c["median_s"]
    for v in out.values():
        v["best_s"] = min(x for k, x in v.items() if k.endswith("_s"))
    return out


def predict(case, n: int, registers: int | None) -> dict:
    import tiletraffic

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = tiletraffic.model(C.build(case, n), "nvidia-h200",
                              registers_per_work_item=registers)
    p = r.prediction
    return {"predicted_time_s": p.predicted_time_s, "bound": p.bound,
            "resident_work_groups_per_cu": p.resident_work_groups_per_cu, "waves": p.waves,
            "time_terms_s": p.time_terms_s, "memory": r.memory.to_dict()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    a = ap.parse_args(argv)
    raw = read_json(a.folder / "warp_tiled_raw.json.gz")
    t, ref = times(raw), cublas(raw)
    by_label = {c[0]: c for c in C.CASES}
    model = {"cases": []}
    print("| N | kernel | registers | best ms | spread of rounds | % of cuBLAS | predicted ms"
          " | error |")
    print("|---|---|---|---|---|---|---|---|")
    errors = []
    for (n, label), e in sorted(t.items(), key=lambda kv: (kv[0][0], kv[1]["best_s"])):
        p = predict(by_label[label], n, e["registers"])
        err = p["predicted_time_s"] / e["best_s"] - 1
        if by_label[label][1] == "gemm-warp-tiled":
            errors.append(err)
        model["cases"].append({"n": n, "label": label, "registers": e["registers"],
                               "measured_s": e["best_s"], **p})
        pct = 100 * ref[n]["best_s"] / e["best_s"]
        print(f"| {n} | {label} | {e['registers']} | {e['best_s'] * 1e3:.3f} | "
              f"{100 * e['round_spread']:.2f}% ({len(e['medians'])}) | {pct:.1f}% | "
              f"{p['predicted_time_s'] * 1e3:.3f} | {100 * err:+.1f}% |")
    for n, v in sorted(ref.items()):
        print(f"\ncuBLAS FP32 at {n}: {v.get('before_s', 0) * 1e3:.3f} ms before the kernels, "
              f"{v.get('after_s', 0) * 1e3:.3f} ms after; the % use the faster.")
    if errors:
        mags = sorted(abs(x) for x in errors)
        print(f"\nmodel error over the {len(errors)} measured gemm-warp-tiled kernels: median "
              f"{100 * statistics.median(mags):.1f}%, worst {100 * mags[-1]:.1f}%")
    counters = a.folder / "counters.json.gz"
    if counters.exists():
        cnt = read_json(counters)
        print("\n| kernel (N = 1024) | " + " | ".join(w for w, _, _ in COUNTERS) + " |")
        print("|---|" + "---|" * len(COUNTERS))
        label_of = {c["id"]: c["label"] for c in cnt["cases"]}
        model["counters"] = []
        for rec in cnt.get("records", []):
            if not rec.get("metrics"):
                continue
            label = label_of[rec["id"]]
            regs = rec["cuda_function"]["num_regs"]
            mem = predict(by_label[label], rec["m"], regs)["memory"]
            cells, row = [], {"label": label, "n": rec["m"], "registers": regs}
            for what, metric, field in COUNTERS:
                got = rec["metrics"].get(metric, {}).get("value")
                want = mem[field]
                row[field] = {"nsight": got, "model": want}
                cells.append(f"{got:,.0f}" if got == want else f"**{got:,.0f} / {want:,}**")
            model["counters"].append(row)
            print(f"| {label} | " + " | ".join(cells) + " |")
        print("\n(a bold cell: Nsight / model where they differ)")
    path = a.folder / "model.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(model, indent=1))
    tmp.replace(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
