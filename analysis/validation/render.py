"""``validation.md`` and its figure, drawn only from a ``validation.json`` dict
(:mod:`analysis.validation.run`); every sentence's figures are computed from that data."""
from __future__ import annotations

import os
from pathlib import Path
from statistics import median

from tiletraffic.simulator.model.prediction import bound_name
from tiletraffic.analysis.report import plots
from tiletraffic.analysis.files import atomic_write_text
from tiletraffic.analysis.validation.cases import Case
from tiletraffic.analysis.validation.compare import Summary
from tiletraffic.analysis.validation.results import load, model_describes, summary_of

FIGURE = "predicted_vs_measured.png"
MAX_LISTED_PAIRS = 10
"""Mis-ordered pairs listed (largest measured ratio first); the rest are counted."""

QUIET, NOISY = 0.01, 0.05
"""A device's timings are called quiet when the median case's relative spread is below
QUIET, noisy at NOISY or more, moderately noisy in between."""


def _ms(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds * 1e3:.4g}"


def _cell(text: str) -> str:
    """``text`` safe inside a markdown table cell (``|`` escaped)."""
    return text.replace("|", "\\|")


def _share(x: float) -> str:
    """A fraction as a percentage: two significant digits below 10 %, whole percent above."""
    return f"{x * 100:.0f}%" if x >= 0.1 else f"{x * 100:.2g}%"


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x * 100:+.1f}%"


def noise_sentence(summary: Summary, device_name: str) -> str | None:
    """How noisy the device's timings were, from the measured spreads (``None``: nothing
    measured): the median and worst relative launch IQR, and, with two rounds or more, the
    median and worst relative difference between the rounds' medians."""
    measured = [r for r in summary.results if r.measured is not None]
    if not measured:
        return None
    iqr = sorted(measured, key=lambda r: r.measured.relative_iqr)
    mid = median(r.measured.relative_spread for r in measured)
    word = "quiet" if mid < QUIET else ("noisy" if mid >= NOISY else "moderately noisy")
    worst = iqr[-1]
    text = (f"Timings on {device_name} were {word}: the interquartile range of a case's launch "
            f"times was {_share(median(r.measured.relative_iqr for r in measured))} of its "
            f"median for the median case (worst {_share(worst.measured.relative_iqr)}, "
            f"{worst.case.label}, {worst.case.problem})")
    rounds = [r for r in measured if r.measured.round_range_s is not None]
    if rounds:
        far = max(rounds, key=lambda r: r.measured.relative_round_range)
        text += (f", and the {len(far.measured.round_medians_s)} rounds' medians of a case "
                 f"differed by {_share(median(r.measured.relative_round_range for r in rounds))}"
                 f" (median case; worst {_share(far.measured.relative_round_range)}, "
                 f"{far.case.label}, {far.case.problem})")
    skipped = len(summary.pairs) - len(summary.qualifying_pairs)
    text += (f". At that spread {skipped} of {len(summary.pairs)} pairs of cases were too close "
             f"to rank (their times differ by less than {summary.limits['ranking']:g}x the larger "
             "spread).")
    return text


def section(data: dict, image: str | None, heading: str = "##",
            raw_data: str = "validation.json") -> list[str]:
    """The markdown lines of the validation section; ``image``: the figure's path relative
    to the markdown file (``None``: no figure); ``raw_data``: ``validation.json``'s path
    relative to it."""
    meta = data["meta"]
    s = summary_of(data)
    dev = meta["device"]["device_name"]
    model = meta["device_model"]
    pf = meta.get("predictions_file")
    lines = [f"{heading} The model against {dev}: every schedule, predicted and measured", ""]
    if pf:
        made = pf.get("tiletraffic") or {}
        lines += [f"Predictions **pre-registered** in `{pf['path']}` (sha256 "
                  f"`{pf['sha256'][:12]}`), written {pf.get('created_utc')} by tiletraffic "
                  f"commit `{(made.get('git_commit') or 'unknown')[:12]}`"
                  + (" (uncommitted changes)" if made.get("git_dirty") else "")
                  + f"; this measurement {meta['created_utc']}.", ""]
    else:
        lines += [f"Predictions computed in this run ({meta['created_utc']}), before the "
                  "first kernel ran; not pre-registered (write them first with `tiletraffic "
                  "validate --predict-only` for that).", ""]
    lines += [
        f"Device model `{model['name']}` ({model['source']}, sha256 `{model['sha256'][:12]}`); "
        f"case list {meta.get('case_list') or 'of the user'}; command `{meta.get('command')}`. "
        f"Each case: {meta['rounds']} round(s) of {meta['warmup']} warm-up and "
        f"{meta['repeat']} timed launches ({_timing(data)}), every distinct output "
        "checked against float64 numpy before its time counts; time = median of all timed "
        "launches; spread = the larger of their interquartile range and the range of the "
        f"rounds' medians. Raw data: `{raw_data}`.", ""]
    if meta.get("complete") is False:
        lines += [f"**Interrupted:** {meta.get('case_runs_done')} of "
                  f"{meta.get('case_runs_total')} case runs finished.", ""]
    describes, why = model_describes(data)
    if describes:
        lines += ["| target | asked | reached | |", "|---|---|---|---|"]
        lines += [f"| {t.name} | {_cell(t.asked)} | {_cell(t.figure)} | **{t.verdict}** |"
                  for t in s.targets]
    else:
        lines += [f"**Not a model of this device.** {why}. The errors below say how far "
                  "that device's times are from this one's, not how good the model is, and "
                  "no target is judged against them. To judge the model here, calibrate one "
                  "for this device (`tiletraffic calibrate --out my-model.toml`) and pass it "
                  "with `--device-model my-model.toml`."]
    lines.append("")
    noise = noise_sentence(s, dev)
    if noise:
        lines += [noise, ""]
    if image:
        lines += [f"![predicted vs measured]({image})", "",
                  "Error bars: ± the case's spread; open markers: the smaller problem of a "
                  "schedule, filled: the larger"
                  + ("; dashed: the ±15% and ±35% time targets." if describes else "."), ""]
    lines += ["| problem | schedule | measured ms | spread ms (IQR; rounds) | predicted ms | "
              "time error | bound |", "|---|---|---|---|---|---|---|"]
    for r in s.results:
        p = data["predictions"].get(r.case.id, {})
        m = r.measured
        spread = "—" if m is None else (
            f"{_ms(m.spread_s)} ({_ms(m.iqr_s)}; "
            + ("—" if m.round_range_s is None else _ms(m.round_range_s)) + ")")
        lines.append(f"| {r.case.problem} | {r.case.label} | {_ms(m and m.median_s)} | "
                     f"{spread} | {_ms(r.predicted_s)} | {_pct(r.time_error)} | "
                     f"{bound_name(p['bound']) if p.get('bound') else '—'} |")
    lines.append("")
    if s.speedups:
        lines += [f"Speedups over the naive schedule of the same problem (target: within "
                  f"{s.limits['speedup-error']:.0%}):", "",
                  "| problem | schedule | measured | predicted | error |", "|---|---|---|---|---|"]
        lines += [f"| {x.case.problem} | {x.case.label} vs {x.baseline.label} | "
                  f"{x.measured:.2f}x | {x.predicted:.2f}x | {_pct(x.error)} |"
                  for x in s.speedups]
        lines.append("")
    wrong = [p for p in s.qualifying_pairs if not p.right]
    lines += [f"Ranking: {s.pairs_right} of {len(s.qualifying_pairs)} pairs whose measured "
              f"times differ by more than {s.limits['ranking']:g}x their spread are in the "
              "model's order" + (":" if wrong else "."), ""]
    if wrong:
        worst = sorted(wrong, key=lambda p: p.measured_ratio, reverse=True)
        lines += [f"- {p.faster.case.problem}: {p.faster.case.label} measured "
                  f"{p.measured_ratio:.3f}x as fast as {p.slower.case.label}, the model "
                  f"{p.predicted_ratio:.3f}x" for p in worst[:MAX_LISTED_PAIRS]]
        if len(worst) > MAX_LISTED_PAIRS:
            lines.append(f"- and {len(worst) - MAX_LISTED_PAIRS} more with smaller measured "
                         "ratios (`summary.misordered_pairs` in validation.json)")
        lines.append("")
    problems = list(_failures(data))
    if problems:
        lines += ["Cases left out of the comparison:", ""]
        lines += [f"- {c}: {e}" for c, e in problems]
        lines.append("")
    lines += _guess_lines(data)
    lines += _register_lines(data)
    return lines


def _register_lines(data: dict) -> list[str]:
    """The cases whose case file gave the compiled registers (``registers = N``): how many
    ran with that count, and each that ran with another (its prediction used the file's
    count, so its occupancy may be wrong), naming both counts."""
    given = [(Case.from_dict(c).id, c["registers"]) for c in data["cases"] if "registers" in c]
    if not given:
        return []
    agree, differ, unknown = [], [], []
    for cid, regs in given:
        built = {r.get("registers_per_work_item")
                 for r in data["measurements"].get(cid, {}).get("rounds", [])
                 if "device_error" not in r}
        if not built or built == {None}:
            unknown.append(cid)
        elif built == {regs}:
            agree.append(cid)
        else:
            differ.append((cid, regs, sorted(b for b in built if b is not None)))
    lines = [f"{len(given)} case(s) were predicted with the registers per work-item their "
             f"case file gave (`registers`): {len(agree)} ran with that count"
             + (f", {len(unknown)} on a device that reports none" if unknown else "")
             + (f", {len(differ)} with another (their predictions used the file's count):"
                if differ else "."), ""]
    if differ:
        lines += [f"- {cid}: the case file gave {regs}, the built kernel had "
                  f"{', '.join(map(str, built))}" for cid, regs, built in differ]
        lines.append("")
    return lines


REGISTER_ESTIMATE = "registers per work-item estimated"
OUTSIDE_THE_MODEL = "outside the model"


def _guess_lines(data: dict) -> list[str]:
    """What the predictions rest on that was not measured: the device model's guessed values,
    then how many cases had their registers estimated from the schedule and how many the
    model declared outside what it predicts (one example of each), rather than one list of
    every case's warning."""
    per_case = [(cid, [g.split(": ", 1)[-1] for g in p.get("guessed_values", ())])
                for cid, p in data["predictions"].items()]
    values = sorted({g.split(" is a guess")[0] for _, gs in per_case for g in gs
                     if not g.startswith((REGISTER_ESTIMATE, OUTSIDE_THE_MODEL))})
    lines = []
    if values:
        lines += [f"The device model guessed {len(values)} value(s) (`tiletraffic calibrate` "
                  "measures most of them on this device): " + ", ".join(values) + ".", ""]
    for prefix, what in ((REGISTER_ESTIMATE, "had their registers per work-item estimated "
                          "from the schedule (a guess: the predictions were made without "
                          "compiling)"),
                         (OUTSIDE_THE_MODEL, "were declared outside what the model predicts")):
        hits = [(cid, g) for cid, gs in per_case for g in gs if g.startswith(prefix)]
        if hits:
            cases = sorted({cid for cid, _ in hits})
            lines += [f"{len(cases)} case(s) {what}; e.g. {hits[0][0]}: {hits[0][1]}", ""]
    return lines


def _timing(data: dict) -> str:
    """How the launches were timed, from each round's ``timing`` field."""
    runs = [r for m in data["measurements"].values() for r in m.get("rounds", ())
            if "timing" in r]
    host = sum(r["timing"] == "host" for r in runs)
    if not host:
        return "OpenCL profiling events"
    return (f"OpenCL profiling events; {host} of {len(runs)} case runs by host wall time, "
            "launch overhead included, where the device gave no profiling information")


def ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th``, ... ``11th``, ``21st``."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _failures(data: dict):
    """(case id, why) of every case without a prediction and every failed round."""
    for c in data["cases"]:
        cid = Case.from_dict(c).id
        p = data["predictions"].get(cid, {})
        if "error" in p:
            yield cid, f"no prediction ({p['error']})"
        for r in data["measurements"].get(cid, {}).get("rounds", []):
            if "device_error" in r:
                yield cid, f"{ordinal(r['round'] + 1)} round: {r['device_error']}"


def figure(data: dict, path: Path) -> bool:
    """Draw predicted against measured time (error bars: spread); ``False``: nothing to draw."""
    s = summary_of(data)
    rows = [r for r in s.results if r.time_error is not None]
    if not rows:
        return False
    plots.predicted_vs_measured([r.case.label for r in rows], [r.case.problem for r in rows],
                                [r.measured.median_s for r in rows],
                                [r.measured.spread_s for r in rows],
                                [r.predicted_s for r in rows], path,
                                f"{data['meta']['device']['device_name']}, model "
                                f"{data['meta']['device_model']['name']}",
                                bands=model_describes(data)[0])
    return True


def render(out_dir: str | os.PathLike) -> Path:
    """(Re)write ``validation.md`` and its figure from ``out_dir/validation.json``.

    Raises:
        FileNotFoundError: no ``validation.json`` in ``out_dir``.
    """
    out_dir = Path(out_dir)
    data = load(out_dir)
    drawn = figure(data, out_dir / FIGURE)
    text = ["# Validation: the model's predicted times against the device", ""]
    text += section(data, FIGURE if drawn else None)
    atomic_write_text(out_dir / "validation.md", "\n".join(text))
    return out_dir / "validation.md"
