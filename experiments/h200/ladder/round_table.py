"""A pre-registered round's ladder table (markdown): each case's measured median (this
round and, for reference, an earlier round's), % of cuBLAS FP32 in the same call, TFLOP/s,
the prediction committed before the run and its error, and how many are within a bound.

    python -m experiments.h200.ladder.round_table reports/nvidia-h200/preregistered4/ladder \
        reports/nvidia-h200/preregistered4/ladder_predictions.json.gz \
        --earlier reports/nvidia-h200/preregistered2/round3/ladder/ladder_raw.json.gz
"""
from __future__ import annotations

import argparse
from pathlib import Path

from experiments.h200.data import read_json


def _raw(path: Path) -> dict:
    if path.is_dir():
        for name in ("ladder_raw.json", "ladder_raw.json.gz"):
            if (path / name).exists():
                return read_json(path / name)
        raise FileNotFoundError(f"no ladder_raw.json(.gz) in {path}")
    return read_json(path)


def table(raw: dict, predictions: list, earlier: dict | None = None,
          within: float = 0.20) -> str:
    """The markdown table and a last line: predicted within ``within`` of measured, of the
    measured cases, and the worst error."""
    pred = {(p["label"], p["n"]): p["predicted_time_s"] for p in predictions}
    before = {(c["label"], c["n"]): c.get("median_s") for c in (earlier or {}).get("cases", ())}
    cublas = {c["n"]: c["median_s"] for c in raw["cublas"]}
    lines = ["| N | step | measured ms | earlier round ms | % of cuBLAS FP32 (same call) | "
             "TFLOP/s | predicted ms | error |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    errors = []
    for c in raw["cases"]:
        key = (c["label"], c["n"])
        t, p, b = c.get("median_s"), pred.get(key), before.get(key)
        old = f"{b * 1e3:.3f}" if b else ""
        if not t:
            lines.append(f"| {c['n']} | {c['label']} | not run ({c.get('status')}) | {old} "
                         f"|  |  | {p * 1e3:.3f} |  |" if p else "")
            continue
        err = (p - t) / t if p else None
        if err is not None:
            errors.append((abs(err), err, c["label"], c["n"]))
        lines.append(f"| {c['n']} | {c['label']} | {t * 1e3:.3f} | {old} | "
                     f"{cublas[c['n']] / t:.0%} | {2 * c['n'] ** 3 / t / 1e12:.1f} | "
                     f"{p * 1e3:.3f} | {err:+.1%} |" if p else "")
    ok = sum(e[0] <= within for e in errors)
    worst = max(errors) if errors else None
    lines += ["", "cuBLAS FP32 (TF32 off) in the same call, ms: " + ", ".join(
        f"N = {n}: {t * 1e3:.3f}" for n, t in cublas.items()), ""]
    if worst:
        lines.append(f"Predicted within {within:.0%}: {ok} of {len(errors)} measured; worst "
                     f"{worst[1]:+.1%} ({worst[2]}, N = {worst[3]}).")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("raw", type=Path, help="ladder_raw.json(.gz) or its folder")
    ap.add_argument("predictions", type=Path)
    ap.add_argument("--earlier", type=Path, default=None, help="an earlier round's raw data")
    a = ap.parse_args(argv)
    print(table(_raw(a.raw), read_json(a.predictions),
                _raw(a.earlier) if a.earlier else None))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
