"""The time model's error on every committed H200 measurement, with the built-in and the
calibrated device model, re-predicted by today's model (no GPU).

    python -m experiments.h200.model_error.table [--cache DIR] [--json OUT] [--terms]

Cases (:mod:`.cases`): the 35 measured gemm-warp-tiled kernels (19 of ``tiletraffic tune``
at five shapes, 16 of the warp-tiled study at 4096 and 8192), the 22 cases of round 8's
pre-registered validation, round 8's 24 ladder steps; each with the registers its compiled
build reported. Each schedule is simulated once per device model's observers and the
observation kept in ``--cache`` (pickles, default ``/tmp/tiletraffic-model-error``; a key
names the schedule, the observers' device-model values and a digest of the simulator's
source outside the time model, so a change to counting re-simulates), then
:func:`simulator.model.prediction.predict` runs for each model. A cold run takes about a minute
on two cores; a warm one seconds.

Prints one markdown table per group (measured, each model's prediction, error, binding
term; with ``--terms`` the calibrated model's terms, resident sub-groups per scheduler and
waves) and the summary: median and worst |predicted / measured - 1| per group and model.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import warnings
from pathlib import Path

from experiments.h200.data import REPORT
from experiments.h200.model_error import cases as C

CALIBRATED = REPORT / "preregistered6" / "h200-calibrated.toml"
MODELS = (("built-in", "nvidia-h200"), ("calibrated", str(CALIBRATED)))
"""(column name, device model): the built-in H200 model and round 6's calibration (the one
docs/h200.md says to use for H200 predictions)."""

OBSERVER_VALUES = ("sub_group_size", "sector_bytes", "line_bytes", "local_banks", "bank_bytes",
                   "local_vector_words", "local_vector_min_wavefronts",
                   "l1_sharing_work_groups", "max_work_group_size",
                   "local_mem_bytes_per_work_group")
"""The device-model values an observation depends on (:func:`simulator.model.observation.
observe_launch` and its limits); the time model's values are read by ``predict`` only."""

TIME_MODEL_FILES = ("prediction.py", "queueing.py", "device_model.py", "device_model_file.py",
                    "device_model_schema.py", "issue_rates.py", "issue_term.py")
"""Simulator modules that do not change an observation (left out of the cache key)."""


def source_digest() -> str:
    import tiletraffic.simulator as sim

    root = Path(sim.__file__).parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        if path.name not in TIME_MODEL_FILES:
            h.update(path.relative_to(root).as_posix().encode() + path.read_bytes())
    return h.hexdigest()[:16]


def _schedule(case: dict):
    import tiletraffic

    return tiletraffic.build(case["family"], m=case["m"], k=case["k"], n=case["n"],
                             tile=case["tile"], **case["options"])


def observation(case: dict, model, cache: Path, digest: str):
    """The :class:`simulator.model.observation.LaunchObservation` of ``case`` on ``model``'s
    observers, from ``cache`` or simulated (and stored there)."""
    from tiletraffic.simulator.model.launch import observe_for_model

    key = json.dumps([case["family"], case["m"], case["k"], case["n"], case["tile"],
                      sorted(case["options"].items()),
                      [getattr(model, v) for v in OBSERVER_VALUES], digest])
    path = cache / (hashlib.sha256(key.encode()).hexdigest()[:24] + ".pkl")
    if path.exists():
        return pickle.loads(path.read_bytes())
    seen = observe_for_model(_schedule(case), model)
    seen.footprint.weights = None
    cache.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(pickle.dumps(seen))
    tmp.replace(path)
    return seen


def predictions(cases: list[dict], cache: Path, models=MODELS) -> list[dict]:
    """Each case with, per model, its prediction: ``predicted_s``, ``error``, ``bound``,
    the time terms, resident work-groups, sub-groups per scheduler, waves."""
    from tiletraffic.simulator.model.device_model import device_model
    from tiletraffic.simulator.model.prediction import predict

    digest = source_digest()
    loaded = [(name, device_model(spec)) for name, spec in models]
    out = []
    for case in cases:
        row = dict(case)
        for name, model in loaded:
            seen = observation(case, model, cache, digest)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                p = predict(seen, model, case["registers"])
            sub_groups = -(-seen.schedule.work_group_items // model.sub_group_size)
            row[name] = {
                "predicted_s": p.predicted_time_s,
                "error": p.predicted_time_s / case["measured_s"] - 1, "bound": p.bound,
                "terms_s": dict(p.time_terms_s),
                "resident_work_groups_per_cu": p.resident_work_groups_per_cu,
                "sub_groups_per_scheduler": p.resident_work_groups_per_cu * sub_groups
                / model.sub_partitions_per_cu,
                "waves": p.waves, "work_groups_per_cu": p.work_groups_per_cu}
        out.append(row)
    return out


def _subgroup(r: dict) -> str | None:
    """The warp-tiled kernels' two sources, summarized apart as well."""
    if r["group"] != "warp-tiled":
        return None
    return ("warp-tiled: tune at five shapes" if "tune_five" in r["source"]
            else "warp-tiled: the warp-tiled study")


def summaries(rows: list[dict], models=MODELS) -> dict:
    """group (and each warp-tiled source) -> model -> :func:`.cases.summary` of its
    errors."""
    groups: dict[str, dict[str, list[float]]] = {}
    for r in rows:
        for g in (r["group"], _subgroup(r)):
            for name, _ in models:
                if g:
                    groups.setdefault(g, {}).setdefault(name, []).append(r[name]["error"])
    return {g: {name: C.summary(e) for name, e in by.items()} for g, by in groups.items()}


def case_label(r: dict) -> str:
    if r["group"] != "warp-tiled":
        return r["label"]
    o = r["options"]
    shape = f"{r['m']}×{r['k']}×{r['n']}" if len({r["m"], r["k"], r["n"]}) > 1 else f"{r['m']}³"
    return (f"{shape} {o['wg_rows']}×{r['tile']} wi, {o['tm']}×{o['tn']}, bk {o['bk']}, "
            f"wn {o['wn']}")


def markdown(rows: list[dict], terms: bool = False, models=MODELS) -> str:
    names = [n for n, _ in models]
    lines = []
    for group in ("warp-tiled", "validation", "ladder"):
        these = [r for r in rows if r["group"] == group]
        if not these:
            continue
        head = ["case", "regs", "measured ms"] + [f"{n} ms | error | bound" for n in names]
        if terms:
            head += ["fp32 / issue / l1 ms (last model)", "latency + tail ms",
                     "sub-groups per scheduler", "waves"]
        lines += [f"### {group} ({len(these)})", "", "| " + " | ".join(head) + " |",
                  "|" + "---|" * sum(h.count("|") + 1 for h in head)]
        for r in these:
            cells = [case_label(r), str(r["registers"] or "est."), f"{r['measured_s'] * 1e3:.4g}"]
            for n in names:
                p = r[n]
                cells += [f"{p['predicted_s'] * 1e3:.4g}", f"{100 * p['error']:+.1f}%",
                          p["bound"]]
            if terms:
                t, p = r[names[-1]]["terms_s"], r[names[-1]]
                cells += [f"{t['fp32_s'] * 1e3:.3g} / {t['issue_s'] * 1e3:.3g} / "
                          f"{t['l1_s'] * 1e3:.3g}",
                          f"{(t['barrier_latency_s'] + t['tail_s']) * 1e3:.3g}",
                          f"{p['sub_groups_per_scheduler']:g}", f"{p['waves']:.2f}"]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    lines += ["| group | " + " | ".join(f"{n}: median / worst |error|" for n in names) + " |",
              "|---|" + "---|" * len(names)]
    for group, by in summaries(rows, models).items():
        lines.append(f"| {group} ({by[names[0]]['cases']}) | " + " | ".join(
            f"{100 * by[n]['median_abs']:.1f}% / {100 * by[n]['worst']:+.1f}%"
            for n in names) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", type=Path, default=Path("/tmp/tiletraffic-model-error"))
    ap.add_argument("--json", type=Path, default=None, help="write every row as JSON")
    ap.add_argument("--terms", action="store_true", help="add the calibrated model's terms")
    ap.add_argument("--groups", nargs="*", default=None,
                    help="only these groups (warp-tiled, validation, ladder)")
    a = ap.parse_args(argv)
    cases = [c for c in C.all_cases() if not a.groups or c["group"] in a.groups]
    rows = predictions(cases, a.cache)
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))
    print(markdown(rows, a.terms), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
