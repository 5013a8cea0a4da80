"""The new-cases call's tables from what it brought back (no GPU).

    python -m experiments.h200.model_new_cases.analysis FOLDER \
        [--predictions experiments/h200/model_new_cases/predicted/predictions.json ...]

FOLDER is the call's ``model_new_cases`` folder: ``validate/validation.json[.gz]``,
``tune/tune-M-K-N.json[.gz]`` and ``cublas.json[.gz]`` (``run.sh``). For each predictions
file (default: the committed H200 one), every case's |predicted / measured - 1| and, per
family and over all cases, the median and worst against the targets (8% median, 20%
worst); then per tuned shape the model's pick, the best candidate measured, the regret
and both as % of cuBLAS.
"""
from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from experiments.h200.data import read_json

HERE = Path(__file__).resolve().parent
MEDIAN_TARGET, WORST_TARGET = 0.08, 0.20


def _first(folder: Path, name: str) -> Path:
    for path in (folder / name, folder / f"{name}.gz"):
        if path.exists():
            return path
    raise SystemExit(f"{folder}: no {name} (nor {name}.gz)")


def measured_s(validation: dict) -> dict[str, float]:
    """Case id -> the median of every timed launch (validate's measured time)."""
    from tiletraffic.analysis.validation.results import measured_of

    out = {}
    for case_id, entry in validation["measurements"].items():
        m = measured_of(entry)
        if m is not None:
            out[case_id] = m.median_s
    return out


def errors(predictions: dict, measured: dict[str, float]) -> dict[str, float]:
    """Case id -> predicted / measured - 1, for the cases measured and predicted."""
    return {cid: p["predicted_time_s"] / measured[cid] - 1
            for cid, p in predictions["predictions"].items()
            if cid in measured and p.get("predicted_time_s")}


def _summary(values: list[float]) -> str:
    median = statistics.median(abs(v) for v in values)
    worst = max(values, key=abs)
    met = "met" if median <= MEDIAN_TARGET and abs(worst) <= WORST_TARGET else "not met"
    return f"{100 * median:.1f}% / {100 * worst:+.1f}% ({met})"


def error_table(name: str, errs: dict[str, float]) -> str:
    lines = [f"### {name}", "", "| case | error |", "|---|---|"]
    lines += [f"| {cid} | {100 * e:+.1f}% |" for cid, e in errs.items()]
    by_family: dict[str, list[float]] = {}
    for cid, e in errs.items():
        by_family.setdefault(cid.split()[0], []).append(e)
    lines += ["", "| family (cases) | median / worst |error| |", "|---|---|"]
    lines += [f"| {f} ({len(v)}) | {_summary(v)} |" for f, v in by_family.items()]
    lines.append(f"| all ({len(errs)}) | {_summary(list(errs.values()))} |")
    return "\n".join(lines) + "\n"


def tune_table(folder: Path, cublas: list[dict]) -> str:
    ref = {(r["m"], r["k"], r["n"]): r["median_s"] for r in cublas}
    lines = ["| M, K, N | status | measured / valid | model's pick (% of cuBLAS) | best "
             "measured (% of cuBLAS) | regret |", "|---|---|---|---|---|---|"]
    for path in sorted((folder / "tune").glob("tune-*.json*")):
        m, k, n = (int(x) for x in path.name.split(".")[0][len("tune-"):].split("-"))
        tune = read_json(path)
        ok = [x for x in tune.get("measurements", []) if x.get("status") == "ok"]
        if not ok:
            lines.append(f"| {m}, {k}, {n} | {tune.get('status')} | 0 | - | - | - |")
            continue
        pick = min(ok, key=lambda x: x["predicted_rank"])
        best = min(ok, key=lambda x: x["median_s"])
        c = ref.get((m, k, n))
        pct = (lambda s: f"{100 * c / s:.1f}%") if c else (lambda s: "-")
        lines.append(f"| {m}, {k}, {n} | {tune.get('status')} | {len(ok)} / "
                     f"{len(tune['predictions'])} | {pick['label']} (rank "
                     f"{pick['predicted_rank']}; {pct(pick['median_s'])}) | {best['label']} "
                     f"({pct(best['median_s'])}) | "
                     f"{100 * (pick['median_s'] / best['median_s'] - 1):+.1f}% |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--predictions", type=Path, nargs="*",
                    default=[HERE / "predicted" / "predictions.json"])
    a = ap.parse_args(argv)
    measured = measured_s(read_json(_first(a.folder / "validate", "validation.json")))
    out = [f"## New cases: {len(measured)} measured", ""]
    for path in a.predictions:
        out.append(error_table(path.name, errors(read_json(path), measured)))
    out += ["## tune --top 8", "",
            tune_table(a.folder, read_json(_first(a.folder, "cublas.json")))]
    print("\n".join(out), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
