"""The pairs of the half-storage and batched-GEMM call, predicted and measured.

Pairs (each a speedup, the first time over the second):

- ``float32 / float16``: one schedule at one shape in float32 storage over the same in
  float16 storage (matrix-vector at the LLM shapes, GEMM at 1024³ and 4096³);
- ``one at a time / batched``: ``batch`` launches of one product (``batch`` times the
  single product's median time) over one batched launch of all of them.

With only ``--predictions`` the predicted speedups are written (what is committed before
the call); with ``--validate`` (the folder ``tiletraffic validate --predictions`` wrote)
the measured ones beside them, and with ``--cublas`` (``cublas.py``'s JSON) cuBLAS's
times and speedups of the same pairs.

    python3 -m experiments.h200.half_batched.analysis \\
        --predictions experiments/h200/half_batched/predicted/predictions.json \\
        [--validate OUT/validate --cublas OUT/cublas.json] --out FILE.md
"""
from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path


def _key(case: dict) -> tuple:
    family = case["family"] + (f" vec={case['vec']}" if case.get("vec", 1) != 1 else "")
    return (family, case["m"], case["k"], case.get("n"), case.get("batch", 1),
            case.get("dtype", "float32"))


def _ids(doc: dict) -> dict[tuple, str]:
    """Case key -> case id, in the order of the document's cases."""
    return {_key(c): i for c, i in zip(doc["cases"], doc["predictions"])}


def predicted_times(doc: dict) -> dict[tuple, float]:
    """Case key -> predicted seconds."""
    return {k: doc["predictions"][i]["predicted_time_s"] for k, i in _ids(doc).items()}


def measured_times(validation: dict) -> dict[tuple, float]:
    """Case key -> median over rounds of each round's median seconds (cases that failed
    are left out)."""
    out = {}
    for case in validation["cases"]:
        case_id = next((i for i in validation["measurements"]
                        if _key(_case_of(i)) == _key(case)), None)
        rounds = validation["measurements"].get(case_id, {}).get("rounds", []) \
            if case_id else []
        medians = [r["median_s"] for r in rounds if r.get("median_s")]
        if medians:
            out[_key(case)] = statistics.median(medians)
    return out


def _case_of(case_id: str) -> dict:
    """The case dict of an id (``family m=.. k=.. [n=..] tile=.. key=value ...``)."""
    family, *fields = case_id.split(" ")
    out: dict = {"family": family}
    for field in fields:
        key, value = field.split("=", 1)
        out[key] = int(value) if value.lstrip("-").isdigit() else value
    return out


def pairs(times: dict[tuple, float]) -> list[tuple[str, float]]:
    """(pair name, speedup) of every pair whose two times are known."""
    out = []
    for key, t in sorted(times.items(), key=lambda kv: str(kv[0])):
        family, m, k, n, batch, dtype = key
        shape = f"{m}x{k}" + (f"x{n}" if n else "")
        if dtype == "float16" and batch == 1:
            slow = times.get((family, m, k, n, 1, "float32"))
            if slow:
                out.append((f"{family} {shape}: float32 / float16", slow / t))
        if batch > 1:
            one = times.get((family, m, k, n, 1, dtype))
            if one:
                out.append((f"{family} {batch} x {shape} {dtype}: one at a time / batched",
                            batch * one / t))
    return out


def cublas_pairs(doc: dict) -> list[tuple[str, float, float, float]]:
    """(pair, slower ms, faster ms, speedup) of cuBLAS's cases."""
    by = {(c["op"], c.get("batch", 1), c["m"], c["k"], c.get("n"), c["dtype"]): c["median_ms"]
          for c in doc["cases"]}
    out = []
    for (op, batch, m, k, n, dtype), t in sorted(by.items(), key=str):
        shape = f"{m}x{k}" + (f"x{n}" if n else "")
        if op in ("mv", "matmul") and dtype == "float16" and batch == 1:
            slow = by.get((op, 1, m, k, n, "float32"))
            if slow:
                out.append((f"torch.{op} {shape}: float32 / float16", slow, t, slow / t))
        if op == "bmm":
            loop = by.get(("matmul x batch", batch, m, k, n, dtype))
            if loop:
                out.append((f"torch {batch} x {shape} {dtype}: matmul loop / bmm", loop, t,
                            loop / t))
    return out


def render(pred: dict, measured: dict | None, cublas: dict | None) -> str:
    """The markdown table(s)."""
    ptimes = predicted_times(pred)
    mtimes = measured_times(measured) if measured else {}
    lines = [f"# Half storage and batched GEMMs: predicted{' and measured' if measured else ''}",
             "", f"Predictions: {pred['device_model']['name']}, tiletraffic "
             f"{str(pred.get('tiletraffic', {}).get('git_commit'))[:12]}", ""]
    if measured:
        lines += [f"Measured on: {measured['meta']['device'].get('device_name')}", ""]
    lines += ["| pair | predicted speedup | measured speedup | model error |",
              "|---|---|---|---|"]
    measured_pairs = dict(pairs(mtimes))
    for name, p in pairs(ptimes):
        got = measured_pairs.get(name)
        err = f"{(p - got) / got:+.1%}" if got else ""
        lines.append(f"| {name} | {p:.2f} | {got:.2f} | {err} |" if got else
                     f"| {name} | {p:.2f} | | |")
    lines += ["", "| case | predicted ms | measured ms |", "|---|---|---|"]
    for key, t in ptimes.items():
        got = mtimes.get(key)
        lines.append(f"| {' '.join(str(v) for v in key if v is not None)} | {t * 1e3:.4f} | "
                     + (f"{got * 1e3:.4f} |" if got else " |"))
    if cublas:
        lines += ["", f"cuBLAS through torch {cublas['torch']} on {cublas['device']} "
                  f"(TF32 off, float16 GEMMs accumulating in float32)", "",
                  "| pair | slower ms | faster ms | speedup |", "|---|---|---|---|"]
        lines += [f"| {n} | {a:.4f} | {b:.4f} | {s:.2f} |" for n, a, b, s in cublas_pairs(cublas)]
        lines += ["", "| cuBLAS case | median ms |", "|---|---|"]
        lines += [f"| {c['op']} {c.get('batch', '')} {c['m']}x{c['k']}"
                  f"{'x' + str(c['n']) if c.get('n') else ''} {c['dtype']} | "
                  f"{c['median_ms']:.4f} |" for c in cublas["cases"]]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--predictions", required=True)
    parser.add_argument("--validate", default=None, help="validate's --out folder")
    parser.add_argument("--cublas", default=None)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    pred = json.loads(Path(args.predictions).read_text())
    measured = None
    if args.validate and (Path(args.validate) / "validation.json").exists():
        measured = json.loads((Path(args.validate) / "validation.json").read_text())
    cublas = json.loads(Path(args.cublas).read_text()) \
        if args.cublas and Path(args.cublas).exists() else None
    text = render(pred, measured, cublas)
    Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
