"""The table of ``tiletraffic tune`` at the five shapes of the GEMM targets against cuBLAS
FP32 in the same device call, from the committed data (no GPU).

    python -m experiments.h200.warp_tiled.tune_table reports/nvidia-h200/warp_tiled/tune_five

FOLDER holds one subfolder per device call (``call1``, ...), each with ``tune-M-K-N.json.gz``
(the tune results file) and ``cublas_before/after.json.gz`` (:mod:`.cublas_shapes`). A shape
is taken from the last call that has its tune file (a resumed tune continues the file of an
earlier call), cuBLAS from that same call: the faster of its before and after medians.
Prints, per shape, every measured candidate (median, the model's predicted time and its
error, % of cuBLAS), then the summary: the model's pick, the best measured, the regret, and
the model's error over every measured candidate (median and worst magnitude).
"""
from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from experiments.h200.data import read_json


def shapes(folder: Path) -> dict[tuple[int, int, int], Path]:
    """(m, k, n) -> the call folder whose tune file of that shape is the latest."""
    out: dict[tuple[int, int, int], Path] = {}
    for call in sorted(p for p in folder.iterdir() if p.is_dir()):
        for f in call.glob("tune-*.json.gz"):
            m, k, n = (int(x) for x in f.name[len("tune-"):-len(".json.gz")].split("-"))
            out[(m, k, n)] = call
    return out


def cublas_s(call: Path, shape: tuple[int, int, int]) -> float:
    """The faster cuBLAS median of the call's before and after runs at ``shape``."""
    medians = []
    for when in ("before", "after"):
        for row in read_json(call / f"cublas_{when}.json.gz"):
            if (row["m"], row["k"], row["n"]) == shape:
                medians.append(statistics.median(row["times_s"]))
    return min(medians)


def rows(folder: Path) -> list[dict]:
    out = []
    for shape, call in sorted(shapes(folder).items(), key=lambda kv: -kv[0][0] * kv[0][2]):
        m, k, n = shape
        tune = read_json(call / f"tune-{m}-{k}-{n}.json.gz")
        ref = cublas_s(call, shape)
        measured = [x for x in tune["measurements"] if x.get("status") == "ok"]
        pick = min(tune["predictions"], key=lambda p: p["predicted_rank"])
        by_label = {x["label"]: x for x in measured}
        best = min(measured, key=lambda x: x["median_s"])
        out.append({
            "shape": shape, "call": call.name, "cublas_s": ref, "status": tune["status"],
            "valid": len(tune["predictions"]),
            "measured": [{"label": x["label"], "rank": x["predicted_rank"],
                          "median_s": x["median_s"], "predicted_s": x["predicted_time_s"],
                          "error": x["predicted_time_s"] / x["median_s"] - 1,
                          "pct": 100 * ref / x["median_s"]} for x in measured],
            "not_measured": [x["label"] for x in tune["measurements"]
                             if x.get("status") != "ok"],
            "pick": pick["label"], "pick_s": by_label.get(pick["label"], {}).get("median_s"),
            "best": best["label"], "best_s": best["median_s"]})
    return out


def markdown(table: list[dict]) -> str:
    lines = ["| M, K, N | cuBLAS ms | candidate (model rank) | ms | % of cuBLAS | predicted ms "
             "| model error |", "|---|---|---|---|---|---|---|"]
    errors = []
    for r in table:
        shape = ", ".join(str(x) for x in r["shape"])
        for x in sorted(r["measured"], key=lambda x: x["rank"]):
            errors.append(abs(x["error"]))
            lines.append(f"| {shape} | {r['cublas_s'] * 1e3:.4f} | {x['label']} ({x['rank']}) | "
                         f"{x['median_s'] * 1e3:.4f} | {x['pct']:.1f}% | "
                         f"{x['predicted_s'] * 1e3:.4f} | {100 * x['error']:+.1f}% |")
        for label in r["not_measured"]:
            lines.append(f"| {shape} | {r['cublas_s'] * 1e3:.4f} | {label} | not measured "
                         f"(the call's time ran out) | | | |")
    lines += ["", "| M, K, N | call | model's pick: % of cuBLAS | best measured: % of cuBLAS "
              "| regret |", "|---|---|---|---|---|"]
    for r in table:
        shape = ", ".join(str(x) for x in r["shape"])
        pick = (f"{100 * r['cublas_s'] / r['pick_s']:.1f}%" if r["pick_s"] else "not measured")
        regret = (f"{100 * (r['pick_s'] / r['best_s'] - 1):+.1f}%" if r["pick_s"] else "-")
        lines.append(f"| {shape} | {r['call']} | {pick} | "
                     f"{100 * r['cublas_s'] / r['best_s']:.1f}% | {regret} |")
    errors.sort()
    lines += ["", f"Model error over the {len(errors)} measured candidates: median "
              f"{100 * statistics.median(errors):.1f}%, worst {100 * errors[-1]:.1f}% "
              "(|predicted / measured - 1|)."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    print(markdown(rows(ap.parse_args(argv).folder)), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
