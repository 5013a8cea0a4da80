"""``tiletraffic validate``: every case of a case list run on an OpenCL device, checked, timed
and compared with the model's predictions (definitions: :mod:`analysis.validation.compare.compare`).

Order of work: the predictions first (the model's, or a predictions file's, checked against
the cases and the device model: :mod:`analysis.validation.predict`), saved before any
kernel runs; then ``rounds`` rounds, each running every case once (odd rounds in reverse
order) through :func:`gpu.runtime.checked_run.run_on_device`: ``warmup`` untimed and ``repeat``
timed launches, the output of the first, the last and every distinct launch checked against
float64 numpy, so no time of a wrong result counts. After every case of every round the whole
result is written to ``validation.json`` (atomically: :mod:`analysis.files`), so an
interrupted run keeps every finished case; the ``validation.json`` of an earlier run is moved
to ``history/`` first. Finally ``validation.md`` and its figure (:mod:`analysis.validation.render`).
"""
from __future__ import annotations

import os
import secrets
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from tiletraffic.simulator.model.device_model import DeviceModel

from tiletraffic.analysis.files import SweepInterrupted, archive_previous
from tiletraffic.analysis.validation.targets import load as load_targets
from tiletraffic.analysis.validation import predict as vp
from tiletraffic.analysis.validation.cases import (Case, case_list, check_unique,
                                                   default_case_list_name)
from tiletraffic.analysis.validation.compare import Summary
from tiletraffic.analysis.validation.results import RESULTS_FILE, save, summary_of


class ValidationInterrupted(SweepInterrupted):
    """Ctrl-C during the device runs; every finished case is saved (``validation.json``,
    and ``validation.md`` rendered from it). A :class:`analysis.files.SweepInterrupted`,
    as ``tiletraffic report`` runs a validation after its sweep."""

    def __init__(self, out_dir: Path, done: int, total: int):
        self.out_dir, self.done, self.total = out_dir, done, total
        RuntimeError.__init__(
            self, f"validation interrupted after {done} of {total} case runs; the finished "
            f"ones are saved in {out_dir / RESULTS_FILE}"
            + (f" and {out_dir / 'validation.md'}" if done else ""))


@dataclass(frozen=True)
class ValidationRun:
    """What :func:`run_validation` wrote: the folder, the JSON document and its comparison."""

    out_dir: Path
    data: dict
    summary: Summary


def default_model_spec(info) -> str:
    """The built-in model of a known device (``gpu.devices.device_models.KNOWN_NAMES``, matched
    in the OpenCL device name), else ``generic-gpu`` (every value a guess)."""
    from tiletraffic.gpu.devices.device_models import built_in_name_for

    return built_in_name_for(info.device_name) or "generic-gpu"


def default_out_dir(slug: str, list_name: str | None, root: str | os.PathLike = "reports"
                    ) -> Path:
    """``<root>/<device slug>[-quick]/validate``: beside ``tiletraffic report``'s folder of
    the same device, which includes it."""
    return Path(root) / (slug + ("-quick" if list_name == "quick" else "")) / "validate"


def run_validation(target, *, model: str | os.PathLike | DeviceModel | None = None,
                   cases: Sequence[Case] | None = None, quick: bool = False,
                   case_list_name: str | None = None,
                   predictions_file: str | os.PathLike | None = None,
                   out_dir: str | os.PathLike | None = None, repeat: int = 10,
                   rounds: int = 2, warmup: int = 2, progress: bool | None = None,
                   command: str | None = None, targets=None) -> ValidationRun:
    """Predict, run, check, time and compare the cases on ``target`` (a ``gpu.devices.device.Target``).

    Args:
        model: the device model (a built-in name, a file, a ``DeviceModel``); default: with
            ``predictions_file`` the file's, else :func:`default_model_spec`.
        cases: the case list; default: with ``predictions_file`` the file's, else the
            built-in list for ``quick`` and the device's type
            (``analysis.validation.default_case_list_name``).
        quick: the tiny ``quick`` list (with ``predictions_file``: must be the file's list).
        case_list_name: a built-in list by name (``analysis.validation.CASE_SIZES``; with
            ``predictions_file``: must be the file's list).
        predictions_file: compare with this pre-registered file instead of running the model.
        out_dir: where to write; default :func:`default_out_dir`.
        repeat, warmup: timed (10 to 10000) and untimed (1 to 1000) launches per case and
            round (:mod:`tiletraffic.gpu.runtime.launch_counts`).
        rounds: times the whole case set is run (2 gives the run-to-run spread).
        targets: the limits judged by (``analysis.validation.targets``: a file, a ``Targets``;
            default the built-in ones), recorded in ``validation.json``.

    Returns:
        :class:`ValidationRun`.

    Raises:
        ValueError: ``repeat``, ``warmup`` or ``rounds`` outside their limits
            (:mod:`tiletraffic.gpu.runtime.launch_counts`);
            ``TargetsError``: a malformed targets file.
        analysis.validation.predict.PredictionsError, PredictionsMismatch: a malformed
            predictions file, or cases / a model that differ from the file's.
        KeyError, DeviceModelError: an unknown or malformed device model.
        OSError: ``out_dir`` cannot be written (checked before any work).
        ValidationInterrupted: Ctrl-C (finished cases saved and rendered).
    """
    from tqdm import tqdm

    from tiletraffic.gpu.runtime.launch_counts import check_launch_counts

    from tiletraffic.analysis.files import ensure_writable

    check_launch_counts(repeat, warmup, rounds)
    info = target.info
    pf = None
    if quick:
        case_list_name = "quick"
    if cases is None and case_list_name is not None:
        cases = case_list(case_list_name)
    if predictions_file is not None:
        pf = vp.read_predictions(predictions_file)
        list_name = pf.document.get("case_list")
        vp.check_cases(pf, cases)
        cases = pf.cases
        model_obj, identity = vp.model_of(pf, model)
    else:
        list_name = case_list_name if cases is not None else \
            default_case_list_name(quick, info.is_gpu)
        cases = check_unique(cases if cases is not None else case_list(list_name), "validate")
        model_obj, identity = vp.resolve_model(model if model is not None
                                               else default_model_spec(info))
    out_dir = Path(out_dir) if out_dir is not None else default_out_dir(target.slug, list_name)
    ensure_writable(out_dir)
    from tiletraffic.gpu.devices.device_models import model_describes_device

    describes, why = model_describes_device(model_obj, info)
    limits = load_targets(targets)
    data = {
        "meta": {
            "created_utc": vp.utc_now(), "command": command, "device_slug": target.slug,
            "device": {k: (list(v) if isinstance(v, tuple) else v)
                       for k, v in asdict(info).items()},
            "device_model": {**identity.to_dict(), "describes_device": describes,
                             "describes_device_why": why},
            "case_list": list_name,
            "repeat": repeat, "warmup": warmup, "rounds": rounds,
            "targets": limits.to_dict(),
            "tiletraffic": vp.provenance(),
            "predictions_file": None if pf is None else {
                "path": str(pf.path), "sha256": pf.sha256,
                "created_utc": pf.document.get("created_utc"),
                "tiletraffic": pf.document.get("tiletraffic")},
            "complete": False, "case_runs_total": rounds * len(cases), "case_runs_done": 0,
        },
        "cases": [c.to_dict() for c in cases],
        "predictions": {},
        "measurements": {c.id: {"rounds": []} for c in cases},
    }
    archive_previous(out_dir / RESULTS_FILE)
    if pf is not None:
        data["predictions"] = {c.id: pf.predictions[c.id] for c in cases}
    else:
        with tqdm(total=len(cases), desc=f"model {model_obj.name}", unit="case",
                  disable=None if progress is None else not progress,
                  file=sys.stderr) as bar:
            for c in cases:
                bar.set_postfix_str(c.label, refresh=False)
                data["predictions"][c.id] = vp.predict_case(c, model_obj)
                bar.update(1)
    save(out_dir, data)
    order = [list(cases) if r % 2 == 0 else list(reversed(cases)) for r in range(rounds)]
    checks: dict = {}      # case id -> its check before launch, made in its first round
    try:
        with tqdm(total=rounds * len(cases), desc=f"validate on {info.device_name}",
                  unit="run", disable=None if progress is None else not progress,
                  file=sys.stderr) as bar:
            for r, todo in enumerate(order):
                for case in todo:
                    bar.set_postfix_str(f"{case.label}, {r + 1}/{rounds}", refresh=False)
                    entry = data["measurements"][case.id]
                    entry["rounds"].append(_run_case(target, case, repeat, warmup, r,
                                                     checks))
                    data["meta"]["case_runs_done"] += 1
                    save(out_dir, data)
                    bar.update(1)
    except KeyboardInterrupt:
        from tiletraffic.analysis.validation.render import render

        done = data["meta"]["case_runs_done"]
        if done:
            render(out_dir)
        raise ValidationInterrupted(out_dir, done, rounds * len(cases)) from None
    data["meta"]["complete"] = True
    save(out_dir, data)
    from tiletraffic.analysis.validation.render import render

    render(out_dir)
    return ValidationRun(out_dir, data, summary_of(data))


def _run_case(target, case: Case, repeat: int, warmup: int, round_index: int,
              checks: dict) -> dict:
    """One round of ``case``; ``checks`` (case id -> LaunchCheck) keeps the check before
    launch of its first round for the later ones (the same schedule: the same hazards and
    sum length)."""
    import warnings

    from tiletraffic.gpu.runtime.launch import TiletrafficGpuError

    from tiletraffic.gpu.runtime.checked_run import run_on_device

    seed = secrets.randbits(63)
    out = {"round": round_index, "seed": seed}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            run = run_on_device(target, case.build(), repeat=repeat, warmup=warmup,
                                rng=np.random.default_rng(seed),
                                reference_fn=case.reference_function(),
                                launch_check=checks.get(case.id), reused=case.id in checks)
            out.update(run.to_dict())
            checks[case.id] = run.launch_check
        except TiletrafficGpuError as err:
            out["device_error"] = f"{type(err).__name__}: {err}"
    if caught:
        out["warnings"] = sorted({str(w.message) for w in caught})
    return out
