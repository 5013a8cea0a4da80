"""Every measured H200 kernel the time model is judged by, read from the committed data: the
warp-tiled GEMMs (the warp-tiled study and ``tiletraffic tune`` at the five target shapes),
the 22 cases of the pre-registered validation and the GEMM ladder of round 8.

A case is a dict: ``group`` (``warp-tiled``, ``validation``, ``ladder``), ``label``,
``family``, ``m``, ``k``, ``n`` (None for matrix-vector), ``tile``, ``options``,
``registers`` (the compiled kernel's registers per work-item, or None: the model estimates),
``measured_s`` and ``source`` (the committed file it was read from).
"""
from __future__ import annotations

import statistics
from pathlib import Path

from experiments.h200.data import REPORT, read_json

WARP_TILED = REPORT / "warp_tiled"
TUNE_FIVE = WARP_TILED / "tune_five"
VALIDATION = REPORT / "preregistered8" / "validate" / "validation.json.gz"
LADDER = REPORT / "preregistered8" / "ladder" / "ladder_raw.json.gz"
LADDER_REGISTERS = REPORT / "preregistered8" / "registers" / "registers.json"


def _rel(path: Path) -> str:
    return str(path.relative_to(REPORT.parents[1]))


def tune_five_cases(folder: Path = TUNE_FIVE) -> list[dict]:
    """The measured candidates of ``tiletraffic tune`` at the five shapes (a shape from the
    last call that has its results file, as :mod:`experiments.h200.warp_tiled.tune_table`
    reads them): the median of its launches, the registers its compiled build reported
    (the tune's recheck)."""
    from experiments.h200.warp_tiled.tune_table import shapes

    out = []
    for (m, k, n), call in sorted(shapes(folder).items()):
        path = call / f"tune-{m}-{k}-{n}.json.gz"
        tune = read_json(path)
        registers = {p["label"]: ((p.get("recheck") or {}).get("resources") or {})
                     .get("registers_per_work_item") for p in tune["predictions"]}
        for x in tune["measurements"]:
            if x.get("status") != "ok":
                continue
            params = dict(x["params"])
            tile = params.pop("tile")
            out.append({"group": "warp-tiled", "label": x["label"], "family": x["family"],
                        "m": m, "k": k, "n": n, "tile": tile, "options": params,
                        "registers": registers.get(x["label"]), "measured_s": x["median_s"],
                        "source": _rel(path)})
    return out


def warp_study_cases(folder: Path = WARP_TILED) -> list[dict]:
    """The warp-tiled kernels of the warp-tiled study at 4096 and 8192 (the faster of its
    rounds' medians and the registers its build reported, as
    :func:`experiments.h200.warp_tiled.analysis.times` reads them); its gemm-vectorized
    baseline is left out (not warp-tiled)."""
    from experiments.h200.warp_tiled import cases as W
    from experiments.h200.warp_tiled.analysis import times

    path = folder / "warp_tiled_raw.json.gz"
    by_label = {c[0]: c for c in W.CASES}
    out = []
    for (n, label), e in sorted(times(read_json(path)).items()):
        _, family, tile, options = by_label[label]
        if family != "gemm-warp-tiled":
            continue
        out.append({"group": "warp-tiled", "label": label, "family": family, "m": n, "k": n,
                    "n": n, "tile": tile, "options": dict(options),
                    "registers": e["registers"], "measured_s": e["best_s"],
                    "source": _rel(path)})
    return out


def validation_cases(path: Path = VALIDATION) -> list[dict]:
    """The 22 cases of round 8's ``tiletraffic validate`` (registers as its case list gave
    them; time: the median of every timed launch, as validate computes it)."""
    from tiletraffic.analysis.validation.cases import Case
    from tiletraffic.analysis.validation.results import measured_of

    data = read_json(path)
    out = []
    for raw in data["cases"]:
        case = Case.from_dict(raw)
        measured = measured_of(data["measurements"].get(case.id))
        if measured is None:
            continue
        out.append({"group": "validation", "label": f"{case.problem}: {case.label}",
                    "family": case.family, "m": case.m, "k": case.k, "n": case.n,
                    "tile": case.tile, "options": dict(case.options),
                    "registers": case.registers, "measured_s": measured.median_s,
                    "source": _rel(path)})
    return out


def ladder_cases(path: Path = LADDER, registers_path: Path = LADDER_REGISTERS) -> list[dict]:
    """Round 8's measured ladder steps with the registers of round 8's builds (as
    ``experiments.h200.ladder.predict --registers-from`` gave them)."""
    from experiments.h200.ladder import cases as L
    from experiments.h200.ladder.predict import compiled_registers, registers_for

    known = compiled_registers([registers_path])
    by_label = {c[0]: c for c in L.CASES}
    out = []
    for c in read_json(path)["cases"]:
        if c.get("status") != "ok" or not c.get("median_s"):
            continue
        _, family, tile, options = by_label[c["label"]]
        n = c["n"]
        out.append({"group": "ladder", "label": f"{n}: {c['label']}", "family": family,
                    "m": n, "k": n, "n": n, "tile": tile, "options": dict(options),
                    "registers": registers_for(known, c["label"], n)[0],
                    "measured_s": c["median_s"], "source": _rel(path)})
    return out


def all_cases() -> list[dict]:
    """Every case: the warp-tiled kernels (tune at five shapes, then the study), the
    validation, the ladder."""
    return tune_five_cases() + warp_study_cases() + validation_cases() + ladder_cases()


def summary(errors: list[float]) -> dict:
    """Median and worst |error| and the signed worst, of predicted / measured - 1."""
    mags = sorted(abs(e) for e in errors)
    worst = max(errors, key=abs)
    return {"cases": len(errors), "median_abs": statistics.median(mags),
            "worst_abs": mags[-1], "worst": worst,
            "within_20pct": sum(m <= 0.20 for m in mags)}
