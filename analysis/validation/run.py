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

from tiletraffic.analysis.device_model import default_model_name
from tiletraffic.analysis.files import FolderLock, SweepInterrupted, archive_previous, held
from tiletraffic.analysis.report import DEFAULT_OUT_ROOT
from tiletraffic.analysis.validation.targets import load as load_targets
from tiletraffic.analysis.validation import predict as vp
from tiletraffic.analysis.validation.cases import (Case, CaseError, case_list,
                                                   case_list_folder, case_list_label,
                                                   check_unique, default_case_list_name,
                                                   list_options)
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
    """What :func:`validate_device` wrote: the folder, the JSON document and its comparison."""

    out_dir: Path
    data: dict
    summary: Summary


@dataclass(frozen=True)
class ValidationOptions:
    """What a validation runs, how and where it writes it; built once by the command, the
    library's ``validate`` or the report, and passed to :func:`validate_device`.

    Attributes:
        model: the device model (a built-in name, a file, a ``DeviceModel``); default: with
            ``predictions_file`` the file's, else the device's built-in model
            (:func:`analysis.device_model.default_model_name`).
        cases: the case list; default: with ``predictions_file`` the file's, else the
            built-in list for ``quick`` and the device's type
            (``analysis.validation.default_case_list_name``).
        quick: the tiny ``quick`` list (with ``predictions_file``: must be the file's list).
        case_list_name: a built-in list by name (``analysis.validation.CASE_SIZES``; with
            ``predictions_file``: must be the file's list).
        dtype, batch, shared_b: options of the built-in list (the one named, ``quick``'s
            or the device's default): every case stored as ``dtype`` (``"float16"``: half
            storage), every GEMM case a batch of ``batch`` products (``shared_b``: one B
            for the batch); :func:`analysis.validation.cases.case_list`. Refused with
            ``cases`` (each case carries its own) and with a ``predictions_file`` but no
            list (the file's cases are measured).
        predictions_file: compare with this pre-registered file instead of running the model.
        out_dir: where to write; default :func:`default_out_dir`.
        repeat, warmup: timed (10 to 10000) and untimed (1 to 1000) launches per case and
            round (:mod:`tiletraffic.gpu.runtime.launch_counts`).
        rounds: times the whole case set is run (2 gives the run-to-run spread).
        progress: progress bars on stderr (None: on a terminal only).
        command: the command line ``validation.json`` records.
        targets: the limits judged by (``analysis.validation.targets``: a file, a ``Targets``;
            default the built-in ones), recorded in ``validation.json``.
        datasheet: for a device without a built-in model, its datasheet (a
            ``simulator.model.datasheet.Datasheet``) for the default model
            (:func:`analysis.device_model.default_model_name`).

    Raises:
        ValueError: ``repeat``, ``warmup`` or ``rounds`` outside their limits, when built;
            a bad ``dtype``, ``batch`` or ``shared_b``, or one given with ``cases`` or with
            a ``predictions_file`` alone (``CaseError``, a ValueError).
    """

    model: str | os.PathLike | DeviceModel | None = None
    cases: Sequence[Case] | None = None
    quick: bool = False
    case_list_name: str | None = None
    predictions_file: str | os.PathLike | None = None
    out_dir: str | os.PathLike | None = None
    repeat: int = 10
    rounds: int = 2
    warmup: int = 2
    progress: bool | None = None
    command: str | None = None
    targets: object = None
    datasheet: object = None
    dtype: str | None = None
    batch: int | None = None
    shared_b: bool = False

    def __post_init__(self):
        from tiletraffic.gpu.runtime.launch_counts import check_launch_counts

        check_launch_counts(self.repeat, self.warmup, self.rounds)
        if list_options(**self.case_list_options):
            where = "with your own cases (each case carries its own)" \
                if self.cases is not None else \
                "with a predictions file and no case list (the file's cases are measured)" \
                if self.predictions_file is not None and not self.quick \
                and self.case_list_name is None else None
            if where:
                raise CaseError(f"dtype, batch and shared_b apply to a built-in case list, "
                                f"not {where}")

    @property
    def case_list_options(self) -> dict:
        """``dtype``, ``batch`` and ``shared_b`` as keywords of ``case_list``."""
        return {"dtype": self.dtype, "batch": self.batch, "shared_b": self.shared_b}


@dataclass(frozen=True)
class _Plan:
    """The cases a validation measures, the list's name, the predictions file read (or
    None) and the device model with its identity."""

    cases: Sequence[Case]
    list_name: str | None
    predictions: object
    model: DeviceModel
    identity: object


def default_out_dir(slug: str, list_name: str | None,
                    root: str | os.PathLike = DEFAULT_OUT_ROOT) -> Path:
    """``<root>/<device slug>[-quick]/validate``: beside ``tiletraffic report``'s folder of
    the same device, which includes it; a list in half storage or batched
    (``list_name`` ``"quick --dtype float16"``, :func:`analysis.validation.cases.case_list_label`)
    in its own, ``<slug>-quick-float16/validate``."""
    return Path(root) / (slug + case_list_folder(list_name or "")) / "validate"


def run_validation(target, **options) -> ValidationRun:
    """:func:`validate_device` with the fields of :class:`ValidationOptions` given as
    keywords (``run_validation(target, cases=..., rounds=1)``).

    Raises:
        as :class:`ValidationOptions` and :func:`validate_device`.
    """
    return validate_device(target, ValidationOptions(**options))


def validate_device(target, options: ValidationOptions, engine=None) -> ValidationRun:
    """Predict, run, check, time and compare the cases of ``options`` on ``target`` (a
    ``gpu.devices.device.Target``); write ``validation.json`` after every case run, then
    ``validation.md`` (module docstring). ``engine``: where the predictions and the runs
    are made (:mod:`analysis.tune.engine`: on a Ray cluster, ``target`` is the device its
    workers opened); default this process.

    Returns:
        :class:`ValidationRun`.

    Raises:
        TargetsError: a malformed targets file.
        analysis.validation.predict.PredictionsError, PredictionsMismatch: a malformed
            predictions file, or cases / a model that differ from the file's.
        KeyError, DeviceModelError: an unknown or malformed device model.
        OSError: the output folder cannot be written (checked before any work).
        ValidationInterrupted: Ctrl-C (finished cases saved and rendered).
        analysis.tune.cluster.ClusterError: the cluster lost every device worker (finished
            cases saved and rendered).
    """
    from tiletraffic.analysis.files import ensure_writable
    from tiletraffic.analysis.tune.engine import LocalEngine

    engine = engine if engine is not None else LocalEngine()

    plan = _plan(target.info, options)
    out_dir = Path(options.out_dir) if options.out_dir is not None else \
        default_out_dir(target.slug, plan.list_name)
    ensure_writable(out_dir)
    data = _document(target, options, plan)
    if (cluster := engine.describe()) is not None:
        data["meta"]["cluster"] = cluster
    say = (lambda line: print(line, file=sys.stderr, flush=True)) if options.progress else None
    with held(FolderLock(out_dir), f"a validation in {out_dir}", say):
        archive_previous(out_dir / RESULTS_FILE)
        data["predictions"] = _predictions(plan, options.progress, engine)
        save(out_dir, data, plan.cases)
        _measure_rounds((engine, target), data, plan.cases, options, out_dir)
        data["meta"]["complete"] = True
        save(out_dir, data, plan.cases)
        from tiletraffic.analysis.validation.render import render

        render(out_dir)
    return ValidationRun(out_dir, data, summary_of(data, plan.cases))


def _plan(info, options: ValidationOptions) -> _Plan:
    """The cases, the list's name, the predictions file and the model of a validation of
    the device ``info``: the predictions file's (its cases and model checked against those
    given), else those given or the device's defaults."""
    cases, list_name = options.cases, options.case_list_name
    if options.quick:
        list_name = "quick"
    if cases is None and list_name is not None:
        cases = case_list(list_name, **options.case_list_options)
        list_name = case_list_label(list_name, **options.case_list_options)
    if options.predictions_file is not None:
        pf = vp.read_predictions(options.predictions_file)
        vp.check_cases(pf, cases)
        model, identity = vp.model_of(pf, options.model)
        return _Plan(pf.cases, pf.document.get("case_list"), pf, model, identity)
    if cases is None:
        default = default_case_list_name(options.quick, info.is_gpu)
        cases = case_list(default, **options.case_list_options)
        list_name = case_list_label(default, **options.case_list_options)
    cases = check_unique(cases, "validate")
    model, identity = vp.resolve_model(options.model if options.model is not None
                                       else default_model_name(info, options.datasheet))
    return _Plan(cases, list_name, None, model, identity)


def _document(target, options: ValidationOptions, plan: _Plan) -> dict:
    """``validation.json`` before any prediction or measurement: its ``meta`` (the device,
    the model and whether it describes the device, the counts, the targets, provenance),
    the cases and an empty measurement per case."""
    from tiletraffic.gpu.devices.device_models import model_describes_device

    info, pf, cases = target.info, plan.predictions, plan.cases
    describes, why = model_describes_device(plan.model, info)
    limits = load_targets(options.targets)
    rounds = options.rounds
    return {
        "meta": {
            "created_utc": vp.utc_now(), "command": options.command,
            "device_slug": target.slug,
            "device": {k: (list(v) if isinstance(v, tuple) else v)
                       for k, v in asdict(info).items()},
            "device_model": {**plan.identity.to_dict(), "describes_device": describes,
                             "describes_device_why": why},
            "case_list": plan.list_name,
            "repeat": options.repeat, "warmup": options.warmup, "rounds": rounds,
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


def predict_task(model, case: Case) -> tuple:
    """The model's prediction of ``case``: (its id, the prediction)."""
    return case.id, vp.predict_case(case, model)


def _predictions(plan: _Plan, progress: bool | None, engine) -> dict:
    """Case id -> prediction, in the cases' order: the predictions file's, else the
    model's (``engine``'s: here, or as a cluster's Ray tasks; a progress bar)."""
    from tqdm import tqdm

    if plan.predictions is not None:
        return {c.id: plan.predictions.predictions[c.id] for c in plan.cases}
    out = {}
    with tqdm(total=len(plan.cases), desc=f"model {plan.model.name}", unit="case",
              disable=None if progress is None else not progress, file=sys.stderr) as bar:
        engine.model(predict_task, plan.model, list(plan.cases),
                     lambda case_id, prediction: out.__setitem__(case_id, prediction), bar)
    return {c.id: out[c.id] for c in plan.cases}


def measure_case(target, cache, case: Case, repeat: int, warmup: int,
                 round_index: int) -> dict:
    """One round of ``case`` on a device worker (:func:`_run_case`); ``cache`` (the
    worker's) keeps each case's check before launch."""
    return _run_case(target, case, repeat, warmup, round_index,
                     cache.setdefault("validate", {}))


def _measure_rounds(where, data: dict, cases, options: ValidationOptions,
                    out_dir: Path) -> None:
    """``options.rounds`` rounds of every case (odd rounds in reverse order) on the device
    workers of ``where`` (engine, target): one here, one per device on a cluster, each run
    saved at once; on Ctrl-C what finished is rendered and :class:`ValidationInterrupted`
    raised."""
    from tqdm import tqdm

    from tiletraffic.analysis.tune.cluster import ClusterError
    from tiletraffic.analysis.tune.rounds import Measuring, NoWorkersLeft, RoundPlan, run_rounds

    engine, target = where
    rounds, progress = options.rounds, options.progress
    by_id = {case.id: case for case in cases}
    pool = engine.pool(target)
    workers = {w: pool.describe(w) for w in pool.workers}
    if (cluster := engine.describe()) is not None:
        data["meta"]["cluster"] = cluster

    def on_result(case_id, round_index, result, worker):
        result = {"round": round_index, **result}
        if workers[worker] is not None:
            result = {**result, "worker": workers[worker]}
        data["measurements"][case_id]["rounds"].append(result)
        data["meta"]["case_runs_done"] += 1
        save(out_dir, data, cases)
        bar.update(1)

    def on_restart(case_id, kept, why):
        entry = data["measurements"][case_id]
        data["meta"]["case_runs_done"] -= len(entry["rounds"]) - kept
        entry["rounds"] = entry["rounds"][:kept]
        save(out_dir, data, cases)

    try:
        with tqdm(total=rounds * len(cases), desc=f"validate on {target.info.device_name}",
                  unit="run", disable=None if progress is None else not progress,
                  file=sys.stderr) as bar:
            run_rounds(RoundPlan([c.id for c in cases], rounds, list(workers)), pool, Measuring(
                work=lambda case_id, r: (measure_case, (by_id[case_id], options.repeat,
                                                        options.warmup, r)),
                on_result=on_result, on_restart=on_restart,
                on_worker_death=lambda case_id, why: {"device_error": f"WorkerDied: {why}"},
                log=lambda line: tqdm.write(line, file=sys.stderr)))
    except (KeyboardInterrupt, NoWorkersLeft) as err:
        from tiletraffic.analysis.validation.render import render

        done = data["meta"]["case_runs_done"]
        if done:
            render(out_dir)
        if isinstance(err, NoWorkersLeft):
            raise ClusterError(f"{err}; the finished case runs are saved in "
                               f"{out_dir / RESULTS_FILE}") from None
        raise ValidationInterrupted(out_dir, done, rounds * len(cases)) from None


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
