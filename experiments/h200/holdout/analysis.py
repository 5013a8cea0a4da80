"""Pre-registered predictions of the held-out H200 run (``reports/nvidia-h200/holdout``):
``predictions.json`` (written by :mod:`experiments.h200.holdout.predictions` and committed
before the device run) against the predictions rendered now, and the "Pre-registered"
section of that run's ``validation.md``."""
from __future__ import annotations

from pathlib import Path

from experiments.h200.hardware import CaseComparison, speedups

from experiments.h200.data import load_json


PREREGISTERED_KEYS = ("global_load_sectors", "l2_read_sectors", "dram_read_bytes",
                      "predicted_time_s")


def preregistered_check(directory: Path, cases: list[CaseComparison]) -> dict | None:
    """Compare ``predictions.json`` (written before the device run by
    :mod:`experiments.h200.holdout.predictions`) with the predictions rendered now: which
    cases it covers and which values changed since (relative difference above 1e-9)."""
    pre = load_json(Path(directory) / "predictions.json")
    if pre is None:
        return None
    changed, changed_keys, covered = [], set(), 0
    for c in cases:
        old = pre.get("cases", {}).get(c.case_id)
        if old is None:
            continue
        covered += 1
        now = c.launch.to_dict()
        for key in PREREGISTERED_KEYS:
            a, b = old.get(key), now.get(key)
            if a is None or b is None or abs(a - b) > 1e-9 * max(abs(a), abs(b), 1e-30):
                changed_keys.add(key)
                changed.append(f"{c.case_id} {key}: {a:.4g} then, {b:.4g} now"
                               if a is not None and b is not None else
                               f"{c.case_id} {key}: {a} then, {b} now")
    measured = {c.case_id: c.measured_time_s for c in cases}
    speed = [(s["case"], pre["speedups"][s["case"]], s["measured"]) for s in speedups(cases)
             if s["case"] in pre.get("speedups", {}) and s["measured"]]
    ranks = [(label, order, sorted(order, key=lambda i: measured[i]))
             for label, order in pre.get("rankings", {}).items()
             if all(measured.get(i) for i in order)]
    return {"created_utc": pre.get("created_utc"), "code_commit": pre.get("code_commit"),
            "cases": len(cases), "covered": covered, "changed": changed,
            "only_times_changed": changed_keys <= {"predicted_time_s"},
            "speedups_met": sum(abs(p / m - 1) <= 0.30 for _, p, m in speed),
            "speedups": len(speed),
            "rankings_matched": sum(order == meas for _, order, meas in ranks),
            "rankings": len(ranks)}


def preregistered_lines(check: dict | None, measured_utc: str | None) -> list[str]:
    if check is None:
        return []
    same = (f"identical to them for all {check['covered']} cases" if not check["changed"]
            else f"different from them in {len(check['changed'])} values (the model changed "
            "since; first ten: " + "; ".join(check["changed"][:10]) + "). Scored with the "
            f"pre-registered values themselves: speedups within 30% {check['speedups_met']}/"
            f"{check['speedups']}, rankings {check['rankings_matched']}/{check['rankings']}"
            + (" (only the predicted times changed since; the counts, L2→L1 and DRAM "
               "predictions below are the pre-registered ones)"
               if check["only_times_changed"] else ""))
    return ["## Pre-registered", "",
            f"`predictions.json` holds the predictions for these {check['covered']} of "
            f"{check['cases']} cases as `experiments/h200/holdout/predictions.py` (then "
            f"`benchmarks/h200_holdout_predictions.py`) wrote them on "
            f"{check['created_utc']} from a working tree at commit "
            f"`{(check['code_commit'] or '?')[:7]}` (its recorded `code_commit`), "
            f"before the device run ({measured_utc}). The predictions in this report are "
            f"{same}.", ""]
