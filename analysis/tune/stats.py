"""The tuner's verdict on its model: regret, rank correlation and resolvable pairs, and the
text table of a tuning (``tiletraffic tune``).

Definitions (all over the *measured* candidates whose result was checked, never over the
unmeasured rest of the space, so the regret is a lower bound of the model's true regret):

- measured time and spread of a candidate: as ``tiletraffic validate`` has them
  (:func:`analysis.validation.compare.measured_time`): the median of every timed launch of every
  round, and the larger of their interquartile range and the difference between the
  rounds' medians (the ``±`` of the table);
- the model's pick: the candidate with the smallest predicted time among those measured
  (normally predicted rank 1; a higher-ranked candidate that failed is named);
- regret: ``median(pick) / median(best)``, the best being the smallest measured median,
  as a ratio and as ``(ratio - 1) · 100 %``; within the target ``tune-regret``
  (:mod:`analysis.validation.targets`, built in 10 %) when the ratio is at most 1 + that limit;
- a pair of measured candidates is *resolvable* when their medians differ by more than the
  target ``ranking`` (built in 2) times the larger of their spreads; only resolvable pairs
  count as ranking claims
  (concordant: the model orders them as measured; discordant: the other way; tied: the
  model predicts equal times);
- Spearman's rank correlation of predicted and measured times over every measured
  candidate (average ranks for ties; ``None`` below two candidates or for constant times);
- ``recheck`` and ``estimate_pick`` (:func:`analysis.tune.recheck.summary`): what the
  recheck with the compiled registers did, and the pick of the estimate-based ranking with
  its regret when it was measured.
"""
from __future__ import annotations

import itertools

import numpy as np

from tiletraffic.analysis.tune import recheck as tuning_recheck
from tiletraffic.analysis.validation.targets import Targets

SHOWN = 10
"""The table shows the candidates ranked 1 to SHOWN by the model, measured or not, and every
measured one."""


def _average_ranks(values) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(1, len(values) + 1)
    for v in np.unique(values):
        same = values == v
        ranks[same] = ranks[same].mean()
    return ranks


def spearman(x, y) -> float | None:
    """Spearman's rank correlation of ``x`` and ``y`` (Pearson's of their average ranks);
    ``None`` for fewer than two values or when either is constant."""
    if len(x) < 2:
        return None
    rx, ry = _average_ranks(x), _average_ranks(y)
    if np.all(rx == rx[0]) or np.all(ry == ry[0]):
        return None
    return float(np.corrcoef(rx, ry)[0, 1])


def summarize(doc: dict) -> dict:
    """The summary of a tuning document (:mod:`analysis.tune.tuner`'s JSON): counts, the model's
    pick, the best measured, regret, rank correlation and pairs (module docstring)."""
    limits = Targets.from_dict(doc["meta"].get("targets"))
    predictions = doc.get("predictions", [])
    measured = [r for r in doc.get("measurements", []) if r["status"] == "ok"]
    failed = [r for r in doc.get("measurements", []) if r["status"] == "failed"]
    rejected = doc.get("rejected", [])
    by_stage: dict[str, int] = {}
    by_reason: dict[str, int] = {}
    for r in rejected:
        by_stage[r["stage"]] = by_stage.get(r["stage"], 0) + 1
        for reason in r.get("whys", r["reasons"]):
            by_reason[reason] = by_reason.get(reason, 0) + 1
    modelled = [p for p in predictions if p.get("predicted_time_s") is not None]
    out = {"candidates": doc["meta"].get("space_candidates"),
           "rejected": len(rejected), "rejected_by_stage": by_stage,
           "rejected_by_reason": dict(sorted(by_reason.items(), key=lambda kv: -kv[1])),
           "valid": doc.get("valid_candidates", len(predictions)), "modelled": len(modelled),
           "measured_ok": len(measured), "measured_failed": len(failed),
           "pick": None, "best": None, "failed_above_pick": [],
           "regret_ratio": None, "regret_pct": None,
           "regret_target": limits["tune-regret"], "within_regret_target": None,
           "pick_is_best": None, "pick_resolvable_from_best": None,
           "spearman_rho": None, "pairs": None, "discordant_pairs": [],
           "scope": _scope(len(measured), len(modelled),
                           doc.get("valid_candidates", len(predictions)))}
    if not measured:
        out.update(tuning_recheck.summary(doc, measured, None))
        return out
    ranked = sorted(measured, key=lambda r: r["predicted_rank"])
    pick = ranked[0]
    best = min(measured, key=lambda r: (r["median_s"], r["predicted_rank"]))
    out["failed_above_pick"] = [r["label"] for r in failed
                                if r["predicted_rank"] < pick["predicted_rank"]]
    out["pick"] = _who(pick)
    out["best"] = _who(best)
    ratio = pick["median_s"] / best["median_s"]
    out.update(regret_ratio=ratio, regret_pct=(ratio - 1) * 100,
               within_regret_target=(ratio <= 1 + limits["tune-regret"]
                                     if doc["meta"].get("model_describes_device") is not False
                                     else None),   # another device's model: no verdict
               pick_is_best=pick["label"] == best["label"],
               pick_resolvable_from_best=_resolvable(pick, best, limits["ranking"]))
    out["spearman_rho"] = spearman([r["predicted_time_s"] for r in measured],
                                   [r["median_s"] for r in measured])
    pairs = {"total": 0, "resolvable": 0, "concordant": 0, "discordant": 0,
             "model_ties": 0}
    for a, b in itertools.combinations(ranked, 2):
        pairs["total"] += 1
        if not _resolvable(a, b, limits["ranking"]):
            continue
        pairs["resolvable"] += 1
        dp = a["predicted_time_s"] - b["predicted_time_s"]
        dm = a["median_s"] - b["median_s"]
        if dp == 0:
            pairs["model_ties"] += 1
        elif (dp > 0) == (dm > 0):
            pairs["concordant"] += 1
        else:
            pairs["discordant"] += 1
            faster, slower = (a, b) if dm < 0 else (b, a)
            out["discordant_pairs"].append({"measured_faster": faster["label"],
                                            "measured_slower": slower["label"],
                                            "ratio": slower["median_s"] / faster["median_s"]})
    out["pairs"] = pairs
    out.update(tuning_recheck.summary(doc, measured, best))
    return out


LATE_STAGES = {"model": "refused by the model", "build": "failed to build on the device",
               "recheck": "refused by the model with their compiled registers"}
"""The stages that reject a candidate after screening (it was valid), and how
:func:`failure` says them."""


def failure(doc: dict) -> str | None:
    """Why a finished tuning has no result (a failed run: the command exits 1), in one line;
    None when it has one. No result: every valid candidate was rejected after screening
    (:data:`LATE_STAGES`: the model refused it or its build on the device failed), or
    candidates were measured and none of them ran."""
    runs = doc.get("measurements", [])
    if not doc.get("predictions"):
        late = [r for r in doc.get("rejected", []) if r["stage"] in LATE_STAGES]
        if not late:
            return None
        counts = {stage: sum(r["stage"] == stage for r in late) for stage in LATE_STAGES}
        said = ", ".join(f"{count} {LATE_STAGES[stage]}" for stage, count in counts.items()
                         if count)
        whole = f"all {len(late)} valid candidates were" if len(late) > 1 else \
            "the one valid candidate was"
        return (f"no candidate left: {whole} rejected ({said}); first {late[0]['label']}: "
                + _short(late[0]["reasons"][0]))
    if runs and not any(r["status"] == "ok" for r in runs):
        first = runs[0]
        return (f"none of the {len(runs)} measured candidates ran ("
                + _short(f"{first.get('stage', '')}: {first.get('error', '')}") + ")")
    return None


def _short(text: str, most: int = 300) -> str:
    """``text`` on one line, cut to ``most`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= most else text[:most - 3] + "..."


def _who(r: dict) -> dict:
    return {"label": r["label"], "predicted_rank": r["predicted_rank"],
            "predicted_time_s": r["predicted_time_s"], "median_s": r["median_s"],
            "spread_s": r["spread_s"]}


def _resolvable(a: dict, b: dict, spread_factor: float) -> bool:
    return abs(a["median_s"] - b["median_s"]) > spread_factor * max(a["spread_s"],
                                                                     b["spread_s"])


def _scope(measured: int, modelled: int, valid: int) -> str:
    rest = valid - measured
    return (f"regret over the {measured} measured of {valid} valid candidates"
            + (f"; the {rest} not measured could hold a faster one" if rest > 0 else "")
            + ("" if modelled == valid else f" ({valid - modelled} not modelled)"))


def _ms(seconds) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.4f}"


def measured_rank_note(meta: dict) -> str | None:
    """The one-line note of a tuning whose ``meta`` says (:func:`gpu.devices.device_models.model_fit_meta`) that its
    model does not describe the device measured; ``None`` otherwise."""
    if meta.get("model_describes_device") is not False:
        return None
    return (f"note: {meta['model_why']}: the measured times, not the predicted ones, rank the "
            "candidates measured")


def table(doc: dict) -> str:
    """The tuning as text: the measured candidates in predicted order (rank, family,
    parameters, predicted ms, measured median ms ± spread, GFLOP/s, check), the rejections
    by reason, and the model's regret with its scope."""
    meta, summary = doc["meta"], doc.get("summary") or summarize(doc)
    lines = [f"tune gemm M={meta['m']} N={meta['n']} K={meta['k']}: "
             f"{summary['candidates']} candidates in {meta['space']}, "
             f"{summary['rejected']} rejected, {summary['valid']} valid, "
             f"{summary['modelled']} modelled on {meta['device_model']}"
             + (f", {summary['measured_ok'] + summary['measured_failed']} measured on "
                f"{meta['device']['name']}" if meta.get("device") else ", none measured")
             + (" (INTERRUPTED: what had finished)" if doc.get("status") == "interrupted"
                else "")]
    if (note := measured_rank_note(meta)) is not None:
        lines.append(note)
    measured = {r["label"] for r in doc.get("measurements", [])}
    rows = sorted(doc.get("measurements", []) + [
        p for p in doc.get("predictions", [])
        if p.get("predicted_rank", SHOWN + 1) <= SHOWN and p["label"] not in measured],
        key=lambda r: r["predicted_rank"])
    extra = tuning_recheck.columns(doc)
    if rows:
        width = max([34] + [len(_params(r)) for r in rows])
        head = (f"{'rank':>4s}  " + (extra[0] + " " if extra else "")
                + f"{'family':22s} {'parameters':{width}s} {'predicted ms':>12s} "
                f"{'measured ms':>21s} {'GFLOP/s':>9s}  check")
        lines += ["", head]
        for r in rows:
            params = _params(r)
            if "status" not in r:
                meas, rate, check = "not measured", "-", "-"
            elif r["status"] == "incomplete":
                meas, rate = f"{len(r['rounds'])} round(s) only", "-"
                check = "ok so far" if all(x["check"]["ok"] for x in r["rounds"]) else "-"
            elif r["status"] == "ok":
                meas = f"{r['median_s'] * 1e3:.4f} ± {r['spread_s'] * 1e3:.4f}"
                check = f"ok (err/tol {r['check']['error_over_tolerance']:.2f})"
                rate = f"{r['gflop_per_s']:.1f}"
            else:
                meas, rate = "failed", "-"
                check = f"{r['stage']}: {r['error_type']}: {r['error']}"[:120]
            lines.append(f"{r['predicted_rank']:>4d}  "
                         + (extra[1](r["label"]) + " " if extra else "")
                         + f"{r['family']:22s} {params:{width}s} "
                         f"{_ms(r['predicted_time_s']):>12s} {meas:>21s} {rate:>9s}  {check}")
    warned = [p for p in doc.get("predictions", []) if p.get("model_warnings")]
    if warned:
        first = warned[0]["model_warnings"][0]
        lines += ["", f"the model warned about {len(warned)} of {summary['modelled']} "
                      f"candidates (all in the JSON: model_warnings), e.g. {warned[0]['label']}: "
                      + (first if len(first) <= 160 else first[:157] + "...")]
    if summary["rejected"]:
        lines += ["", f"rejected before launch: {summary['rejected']} ("
                  + ", ".join(f"{v} {k}" for k, v in summary["rejected_by_stage"].items()) + ")"
                  + ("; a candidate counts under every rule it breaks"
                     if sum(summary["rejected_by_reason"].values()) > summary["rejected"]
                     else "")]
        example = {}
        for r in doc.get("rejected", []):
            for why, reason in zip(r.get("whys", r["reasons"]), r["reasons"]):
                example.setdefault(why, (r["label"], reason))
        for why, count in summary["rejected_by_reason"].items():
            lines.append(f"  {count:5d}  {why}")
            label, reason = example[why]
            if reason != why:
                lines.append(f"         e.g. {label}: {reason}")
    recheck = tuning_recheck.lines(summary)
    if recheck:
        lines += [""] + recheck
    if summary["pick"] is None:
        lines += ["", "no measured candidate: no regret (" + summary["scope"] + ")"]
        return "\n".join(lines) + "\n"
    pick, best = summary["pick"], summary["best"]
    lines += ["", f"model's pick: {pick['label']} (predicted rank {pick['predicted_rank']}), "
                  f"{pick['median_s'] * 1e3:.4f} ms"]
    if summary["failed_above_pick"]:
        lines.append("  (ranked above it but failed: " + ", ".join(summary["failed_above_pick"])
                     + ")")
    lines.append(f"best measured: {best['label']} (predicted rank {best['predicted_rank']}), "
                 f"{best['median_s'] * 1e3:.4f} ms")
    verdict = ("the pick is the best" if summary["pick_is_best"] else
               "the pick is within the spread of the best" if
               not summary["pick_resolvable_from_best"] else
               "the pick is resolvably slower than the best")
    within = _within(summary)
    target = f"{summary.get('regret_target', 0.10):.0%} of the best (target tune-regret)"
    lines.append(f"regret: {summary['regret_ratio']:.3f}x ({summary['regret_pct']:+.1f}%), "
                 + (f"no verdict against {target}: the model is not this device's"
                    if within is None else ("within " if within else "NOT within ") + target)
                 + f"; {verdict}")
    pairs, rho = summary["pairs"], summary["spearman_rho"]
    lines.append("rank correlation (Spearman) of predicted and measured times: "
                 + ("-" if rho is None else f"{rho:+.2f}")
                 + f"; of {pairs['total']} pairs, {pairs['resolvable']} "
                   f"{'differs' if pairs['resolvable'] == 1 else 'differ'} by more than "
                   f"twice their spread: {pairs['concordant']} ordered right by the model, "
                   f"{pairs['discordant']} wrong" + (f", {pairs['model_ties']} tied by it"
                                                    if pairs["model_ties"] else ""))
    for d in summary["discordant_pairs"][:5]:
        lines.append(f"  wrong: {d['measured_faster']} is {d['ratio']:.2f}x faster than "
                     f"{d['measured_slower']}")
    lines.append(summary["scope"])
    return "\n".join(lines) + "\n"


def _params(row: dict) -> str:
    """A candidate's parameters as ``name=value`` words."""
    return " ".join(f"{k}={v}" for k, v in row["params"].items())


def _within(summary: dict) -> bool | None:
    """Whether the pick met the regret target (summaries written before the target was
    named recorded it as ``within_10pct``); None where there is no verdict (the model is
    another device's)."""
    if "within_regret_target" in summary:
        within = summary["within_regret_target"]
        return None if within is None else bool(within)
    return bool(summary.get("within_10pct"))
