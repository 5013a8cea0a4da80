"""The GEMM ladder on the H200 in one report (issue #13, item 5): a pre-registered round's
measured times, TFLOP/s, % of cuBLAS FP32 in the same call and the committed predictions with
their errors (:mod:`experiments.h200.ladder.round_table`), the step-to-step speedups with the
seeds' claims checked against them, and the requests and sectors of the CUDA build of the
same source under Nsight Compute against the simulator's
(:mod:`experiments.h200.ladder.counters_table`). No GPU: everything from committed data.

    python -m experiments.h200.ladder.report reports/nvidia-h200/preregistered6 \\
        --counters reports/nvidia-h200/ladder/counters \\
        --out reports/nvidia-h200/preregistered6/ladder_report.md

The round folder holds ``ladder_predictions.json.gz`` and one or more ``ladder*/`` folders
of raw data (``ladder_raw.json(.gz)``: the first is the main call, later ones measured the
cases it skipped); a case measured in two calls counts once, from the first.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from experiments.h200.data import load_json, read_json

from experiments.h200.ladder import round_table

STEPS = (("naive", "tiled", "local-memory tiles (B = 16)"),
         ("tiled", "register-blocked", "register blocks (4x4 per work-item)"),
         ("register-blocked", "vectorized", "float4 loads"),
         ("vectorized", "prefetch", "double-buffered tiles (prefetch)"),
         ("register-blocked", "prefetch", "prefetch against its own base (scalar 4x4)"))
"""(from, to, what the step adds): the ladder's steps as the issue orders them."""

SEED_CLAIMS = (("tiling through local memory", "naive", "tiled", 5.0, 10.0),
               ("the whole ladder (best case of the round)", "naive", None, 5.0, 10.0))
"""(claim, base, case or None for the best, low, high): the seeds' "speedup typically 5-10x"
for tiling, checked as stated and for the whole ladder."""


def _folders(round_dir: Path) -> list[Path]:
    """The round's ``ladder*/`` folders, the main call's (``ladder/``) first."""
    return sorted((p for p in round_dir.glob("ladder*") if p.is_dir()),
                  key=lambda p: (p.name != "ladder", p.name))


def raws(round_dir: Path) -> list[dict]:
    """The round's ladder raw data, main call first."""
    return [round_table._raw(p) for p in _folders(round_dir)]


def measured(calls: list[dict]) -> dict[tuple[str, int], tuple[float, float]]:
    """(label, N) -> (median s, cuBLAS median s of the same call); first call wins."""
    out = {}
    for raw in calls:
        cublas = {c["n"]: c.get("median_s") for c in raw["cublas"]}
        for c in raw["cases"]:
            key = (c["label"], c["n"])
            if c.get("median_s") and key not in out:
                out[key] = (c["median_s"], cublas.get(c["n"]))
    return out


def speedups(times: dict[tuple[str, int], tuple[float, float]]) -> str:
    sizes = sorted({n for _, n in times})
    head = "| step | " + " | ".join(f"N = {n}" for n in sizes) + " |"
    lines = [head, "|---|" + "---:|" * len(sizes)]
    for a, b, what in STEPS:
        cells = [f"{times[(a, n)][0] / times[(b, n)][0]:.2f}x"
                 if (a, n) in times and (b, n) in times else "" for n in sizes]
        lines.append(f"| {a} -> {b}: {what} | " + " | ".join(cells) + " |")
    lines += ["", "The seeds' claims (speedup over the naive kernel):", ""]
    for claim, base, case, low, high in SEED_CLAIMS:
        parts = []
        for n in sizes:
            if (base, n) not in times:
                continue
            if case is None:
                label, t = min(((lab, v[0]) for (lab, m), v in times.items() if m == n),
                               key=lambda x: x[1])
            elif (case, n) in times:
                label, t = case, times[(case, n)][0]
            else:
                continue
            ratio = times[(base, n)][0] / t
            verdict = "inside" if low <= ratio <= high else "outside"
            parts.append(f"N = {n}: {ratio:.1f}x ({label}; {verdict} {low:g}-{high:g}x)")
        lines.append(f"- {claim}: " + "; ".join(parts))
    return "\n".join(lines)


def counters(folder: Path) -> str:
    from experiments.h200.ladder import counters_table

    raw = (load_json(folder / "ladder_counters.json.gz")
           or load_json(folder / "ladder_counters.json"))
    entries = counters_table.comparisons(raw)
    keep = ("global load requests", "global load sectors", "global store sectors",
            "local load wavefronts", "local load bank conflicts")
    lines = ["| step (N = 1024) | " + " | ".join(keep) + " |",
             "|---|" + "---|" * len(keep)]
    exact = [r for e in entries for r in e["rows"] if r["target"] == "exact"]
    for e in entries:
        rows = {r["quantity"]: r for r in e["rows"]}
        cells = []
        for q in keep:
            r = rows.get(q)
            cells.append("" if r is None else (
                f"{r['measured']:,.0f}" if r["predicted"] == r["measured"] else
                f"**{r['predicted']:,.0f} vs {r['measured']:,.0f}**"))
        lines.append(f"| {e['label']} | " + " | ".join(cells) + " |")
    lines += ["", f"Exact-target quantities (the global instructions, requests and sectors) "
              f"equal to Nsight Compute: {sum(1 for r in exact if r['met'])} of {len(exact)}. "
              "A cell shows the count both give; a bold cell the simulator's against "
              "Nsight's. The local-memory counts are not exact targets where the CUDA "
              "build's compiler merges or splits local loads differently from the OpenCL "
              "build the simulator's model follows (`experiments/h200/ladder/"
              "local_findings.md`)."]
    return "\n".join(lines)


def _shown(path: Path) -> str:
    """``path`` relative to the repository when it lies in it (the same text from any cwd)."""
    root = Path(__file__).resolve().parents[3]
    try:
        return str(path.resolve().relative_to(root))
    except ValueError:
        return str(path)


def report(round_dir: Path, counters_dir: Path | None) -> str:
    predictions = read_json(round_dir / "ladder_predictions.json.gz")
    calls = raws(round_dir)
    parts = [f"# The GEMM ladder on the NVIDIA H200 ({_shown(round_dir)})", "",
             "Rendered by `python -m experiments.h200.ladder.report` from the committed raw "
             "data; the predictions (`ladder_predictions.json.gz`) were committed before the "
             "measuring calls (`command.txt`).", ""]
    for raw, folder in zip(calls, _folders(round_dir), strict=True):
        parts += [f"## Measured and predicted: `{folder.name}/`", "",
                  round_table.table(raw, predictions), ""]
    parts += ["## Speedups of each step (medians; from the calls above)", "",
              speedups(measured(calls)), ""]
    if counters_dir is not None:
        parts += [f"## Nsight Compute counters of the CUDA build (`{_shown(counters_dir)}`)", "",
                  counters(counters_dir), ""]
    return "\n".join(parts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("round", type=Path, help="a pre-registered round's folder")
    ap.add_argument("--counters", type=Path, default=None,
                    help="folder of ladder_counters.json(.gz)")
    ap.add_argument("--out", type=Path, default=None, help="write here (default: print)")
    a = ap.parse_args(argv)
    text = report(a.round, a.counters)
    if a.out is None:
        print(text, end="")
    else:
        from tiletraffic.analysis.files import atomic_write_text
        atomic_write_text(a.out, text)
        print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
