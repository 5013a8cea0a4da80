"""``tiletraffic report``: sweep, simulate, run on a device, write
``tiletraffic-reports/<device>/``.

For each point of the sweep the schedule is simulated (exact counts, checked against the
closed forms) and run as OpenCL on the device (result checked against numpy before its time
counts). Everything lands in ``results.json``; :func:`render` turns that JSON into
``report.md`` and PNG figures, so a report can be re-rendered without the device.

Files are written atomically (:mod:`analysis.files`). An earlier ``results.json`` is
never lost: it is moved to ``history/results-<its timestamp>.json`` first. One run at a time
writes a report folder: a second run into the same folder waits for the first to finish
(:class:`analysis.files.FolderLock`), then moves the first's ``results.json`` to
``history/``.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import shlex
import sys
from dataclasses import asdict, dataclass, replace
from importlib import metadata
from pathlib import Path

from tqdm import tqdm

from tiletraffic.simulator.kernels import families as schedules
from tiletraffic.simulator.engine.limits import DeviceLimits, LimitError
from tiletraffic.simulator.engine.accelerators import Accelerators
from tiletraffic.simulator.engine.simulation import simulate

from tiletraffic.simulator.kernels import closed_forms as closed_form
from tiletraffic.analysis.files import (FolderLock, SweepInterrupted, archive_previous, held,
                                        atomic_write_text, ensure_writable, read_json_object)
from tiletraffic.analysis.report.machine_load import LoadMeter
from tiletraffic.analysis.report import DEFAULT_OUT_ROOT
from tiletraffic.analysis.report.text import VALIDATION_DIR

COUNT_SIZES = {False: (64, 128, 256, 512, 1024), True: (64, 128, 256)}
"""Square N of the counted sweep (simulator only), full and ``--quick``."""
COUNT_TILES = {False: (4, 8, 16, 32), True: (4, 8, 16)}
"""Tile widths B of the sweep, full and ``--quick``."""
MEASURED_SIZES = {
    "quick": ((64, 128), (100, 100, 100), (96, 160, 64), 1024),
    "cpu": ((64, 128, 256), (200, 200, 200), (384, 256, 192), 4096),
    "gpu": ((512, 1024, 2048, 4096), (1000, 1000, 1000), (3072, 2048, 1536), 8192),
}
"""Case list (``analysis.validation.default_case_list_name``: ``--quick``, a CPU, a GPU) ->
(square N run on the device, a non-multiple M×K×N, a rectangular M×K×N, matrix-vector
M = K), chosen per kind of device as ``tiletraffic validate`` chooses its sizes: a CPU times
GEMMs up to 256³ (a 512³ tiled GEMM takes up to 1.5 s per launch on PoCL), a GPU from 512³
to 4096³."""
ROUNDS = 2
"""Rounds over the measured cases (the second in reverse order), as ``tiletraffic
validate`` runs them: the difference of the rounds' medians is part of the spread."""
REFERENCE_TILE = 16
"""Tile width of the non-multiple, rectangular and naive-series cases (naive: 16×16
work-groups)."""


@dataclass(frozen=True)
class SweepPoint:
    """One (schedule, sizes, tile) case of the sweep; ``group`` names its role, ``measure``
    whether it also runs on the device (else it is counted by the simulator only)."""

    family: str
    m: int
    k: int
    n: int | None
    tile: int
    group: str
    measure: bool = False

    def build(self):
        return schedules.build(self.family, self.m, self.k, self.n, self.tile)

    @property
    def key(self) -> tuple:
        return (self.family, self.m, self.k, self.n, self.tile)


def default_sweep(quick: bool, list_name: str | None = None) -> list[SweepPoint]:
    """The counted grid (square N from 64 to 1024, quick: to 256, × tiles 4..32, quick:
    4..16, naive and tiled) and the measured cases of the case list ``list_name`` (default:
    ``quick`` with ``quick``, else ``cpu``): naive and tiled at its square sizes, one
    non-multiple and one rectangular GEMM, and the matrix-vector schedules
    (:data:`MEASURED_SIZES`). A point in both is one point, measured.

    Raises:
        KeyError: an unknown ``list_name``.
    """
    list_name = list_name or ("quick" if quick else "cpu")
    squares, odd, rect, mv = MEASURED_SIZES[list_name]
    tiles = COUNT_TILES[quick]
    points: dict[tuple, SweepPoint] = {}

    def add(point: SweepPoint) -> None:
        old = points.get(point.key)
        points[point.key] = replace(point, measure=point.measure or bool(old and old.measure))

    for n in sorted(set(COUNT_SIZES[quick]) | set(squares)):
        for b in tiles:
            for f in schedules.GEMM_FAMILIES:
                add(SweepPoint(f, n, n, n, b, "square", n in squares))
    for f in schedules.GEMM_FAMILIES:
        add(SweepPoint(f, *odd, REFERENCE_TILE, "non-multiple", True))
        add(SweepPoint(f, *rect, REFERENCE_TILE, "rectangular", True))
    for f in schedules.MATVEC_FAMILIES:
        add(SweepPoint(f, mv, mv, None, 256, "matvec", True))
    return list(points.values())


def _software() -> dict:
    versions = {"python": platform.python_version(), "platform": platform.platform()}
    for pkg in ("tiletraffic", "numpy", "pyopencl", "pocl-binary-distribution", "matplotlib"):
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = None
    try:
        import subprocess
        versions["git_commit"] = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
            cwd=Path(__file__).parent, timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        versions["git_commit"] = None
    return versions


def simulate_point(point: SweepPoint, limits: DeviceLimits) -> dict:
    """Exact counts of one point (counts only) and whether they equal the closed forms."""
    sch = point.build()
    counts = simulate(sch, compute_values=False, limits=limits,
                      accelerators=Accelerators(work_group_classes=True)).counts.to_dict()
    return {"counts": counts, "closed_form_agrees": counts == closed_form.counts(sch),
            "work_group": list(sch.local_size), "ndrange": list(sch.global_size),
            "local_mem_bytes": sch.local_mem_bytes}


def make_report(device: str | None = None, out_root: str | os.PathLike = DEFAULT_OUT_ROOT,
                quick: bool = False, repeat: int = 10, progress: bool = True,
                validation: bool = True, device_model: str | os.PathLike | None = None,
                targets=None, datasheet=None) -> Path:
    """Count the sweep in the simulator, run its measured cases on ``device`` and write
    ``<out_root>/<device-slug>[-quick]/``; then, where the device model is a model of this
    device (``gpu.devices.device_models.model_describes_device``), validate it there
    (``tiletraffic validate`` with the device's case list, or ``quick``:
    :func:`analysis.validation.run.validate_device`) into ``validate/``. ``report.md``
    includes that section, or, for another device's model, says which model it would be and
    why its times do not apply. ``report.html`` beside it links explain pages (``explain/``)
    of naive and tiled GEMM and of a matrix-vector pair. A ``predictions.json`` already in ``validate/``
    (``tiletraffic validate --predict-only``, committed: the pre-registration) is measured
    against instead of running the model. ``device_model``: the model to validate (default:
    the predictions file's, else the device's built-in one, else the nearest built-in one
    transferred to it, else ``generic-gpu``);
    ``validation=False`` leaves the model out. ``targets``: the limits the validation is
    judged by (a file or ``Targets``, :mod:`analysis.validation.targets`; default the built-in ones).
    ``datasheet``: for a device without a built-in model, its datasheet (a
    ``simulator.model.datasheet.Datasheet``) for the default model.

    The measured cases (:data:`MEASURED_SIZES` of the device's kind) run in :data:`ROUNDS`
    rounds of 2 warm-up and ``repeat`` timed launches, every launch's output checked against
    float64 numpy before its time counts, as ``validate`` runs its cases.

    Returns the report directory.

    Every finished case is written to ``results.json`` at once (atomically; the previous
    ``results.json`` is first moved to ``history/``), so an interrupted sweep keeps them;
    likewise ``validate/validation.json``. ``meta.machine_load`` records the CPU time other
    processes used while the cases were timed (:mod:`analysis.report.machine_load`).

    One run at a time writes a report folder: a run whose folder another run is writing
    waits until that one has finished (saying so on stderr with ``progress``), so both
    runs' results are kept, the earlier in ``history/``.

    Raises:
        gpu.devices.device.DeviceError: no device, or none matching ``device``.
        ValueError: ``repeat`` outside 10 to 10000 (:mod:`tiletraffic.gpu.runtime.launch_counts`);
            a ``validate/predictions.json`` that is malformed or for other cases or another
            model (checked before the sweep).
        KeyError, DeviceModelError: an unknown or malformed ``device_model``.
        TargetsError (a ValueError): a malformed targets file (checked before the sweep).
        OSError: the output directory cannot be written (checked before the sweep starts).
        SweepInterrupted: Ctrl-C during the sweep or the validation (finished cases saved and
            rendered; ``analysis.validation.run.ValidationInterrupted`` for the latter).
    """
    from tiletraffic.gpu.devices.device import select_device
    from tiletraffic.gpu.runtime.launch_counts import check_launch_counts

    from tiletraffic.analysis.validation.targets import load as load_targets

    check_launch_counts(repeat)
    judged_by = load_targets(targets)
    target = select_device(device)
    info = target.info
    if info.is_simulator:
        import warnings
        warnings.warn(f"{info.device_name} is a simulator: its kernel times say nothing about "
                      "hardware", RuntimeWarning, stacklevel=2)
    out_dir = Path(out_root) / (target.slug + ("-quick" if quick else ""))
    ensure_writable(out_dir)
    say = (lambda line: print(line, file=sys.stderr, flush=True)) if progress else None
    with held(FolderLock(out_dir), f"a report in {out_dir}", say):
        _report_into(out_dir, target, judged_by, quick=quick, repeat=repeat,
                     progress=progress, validation=validation, device=device,
                     device_model=device_model, datasheet=datasheet)
    return out_dir


def _report_into(out_dir: Path, target, judged_by, *, quick: bool, repeat: int,
                 progress: bool, validation: bool, device, device_model,
                 datasheet=None) -> None:
    """:func:`make_report`'s work once ``out_dir`` is this run's."""
    from tiletraffic.analysis.validation.cases import default_case_list_name

    info = target.info
    list_name = default_case_list_name(quick, info.is_gpu)
    sweep = default_sweep(quick, list_name)
    predictions = _registered_predictions(out_dir / VALIDATION_DIR, quick, info) \
        if validation else None
    model = _model_verdict(info, device_model, predictions, datasheet) if validation else None
    data = _document(target, sweep, list_name, model, device=device, quick=quick,
                     repeat=repeat)
    archive_previous(out_dir / "results.json")
    _run_sweep(data, target, sweep, out_dir, repeat, progress)
    data["meta"]["complete"] = True
    _save(out_dir, data)
    if model and model["describes_device"]:   # the model against this device, its own
        from tiletraffic.analysis.validation.run import ValidationOptions

        _validate_there(target, out_dir, ValidationOptions(
            model=device_model, quick=quick, out_dir=out_dir / VALIDATION_DIR, repeat=repeat,
            progress=progress, command=data["meta"]["command"],
            predictions_file=predictions, targets=judged_by, datasheet=datasheet))
    _observe_explain_pages(out_dir)
    render(out_dir)


def _document(target, sweep: list[SweepPoint], list_name: str, model: dict | None, *,
              device, quick: bool, repeat: int) -> dict:
    """``results.json`` before any case: its ``meta`` (the command, the sweep's counts, the
    device, the software, the model's verdict) and no results."""
    return {
        "meta": {
            "created_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "command": "tiletraffic " + " ".join(shlex.quote(a) for a in sys.argv[1:])
            if Path(sys.argv[0]).name in ("tiletraffic", "__main__.py") else
            f"make_report(device={device!r}, quick={quick}, repeat={repeat})",
            "quick": quick, "repeat": repeat, "warmup": WARMUP, "rounds": ROUNDS,
            "case_list": list_name,
            "device": {k: (list(v) if isinstance(v, tuple) else v)
                       for k, v in asdict(target.info).items()},
            "device_slug": target.slug,
            "software": _software(),
            "model": model,
            "complete": False, "cases_total": len(sweep),
            "measured_total": sum(p.measure for p in sweep),
        },
        "results": [],
    }


def _save(out_dir: Path, data: dict) -> None:
    atomic_write_text(out_dir / "results.json", json.dumps(data, indent=1))


def _run_sweep(data: dict, target, sweep: list[SweepPoint], out_dir: Path, repeat: int,
               progress: bool) -> None:
    """Count every point of ``sweep`` in the simulator, then run the measured ones on the
    device in :data:`ROUNDS` rounds (the second in reverse), saving ``results.json`` after
    each; on Ctrl-C what finished is saved and rendered and :class:`SweepInterrupted`
    raised."""
    results, info = data["results"], target.info
    runs_done = 0
    try:
        for point in tqdm(sweep, desc="count in the simulator", unit="case",
                          disable=not progress, file=sys.stderr):
            results.append(_count_case(point, info.limits))
        _save(out_dir, data)
        runs = [e for e in results if e["measure"] and "counts" in e]
        order = [runs if r % 2 == 0 else runs[::-1] for r in range(ROUNDS)]
        checks: dict = {}  # a case's check before launch, made in its first round
        meter = LoadMeter()  # other processes' CPU time while the cases are timed
        with tqdm(total=ROUNDS * len(runs), desc=f"run on {info.device_name}", unit="run",
                  disable=not progress, file=sys.stderr) as bar:
            for r, todo in enumerate(order):
                for entry in todo:
                    _measure_case(entry, target, repeat, r, checks)
                    data["meta"]["machine_load"] = meter.now()
                    runs_done += 1
                    _save(out_dir, data)   # every finished run is on disk: none is lost
                    bar.update(1)
    except KeyboardInterrupt:
        if results:
            _save(out_dir, data)
            render(out_dir)
        raise SweepInterrupted(out_dir, runs_done,
                               ROUNDS * data["meta"]["measured_total"]) from None


def _validate_there(target, out_dir: Path, options) -> None:
    """Validate the device model on ``target`` into the report's ``validate/`` folder
    (``options``: ``analysis.validation.run.ValidationOptions``); on Ctrl-C the report is
    rendered with what finished before the interruption is raised."""
    from tiletraffic.analysis.validation.run import ValidationInterrupted, validate_device

    try:
        validate_device(target, options)
    except ValidationInterrupted:
        render(out_dir)
        raise


def _model_verdict(info, device_model, predictions: Path | None, datasheet=None) -> dict:
    """Which device model the report would validate (``device_model``, else the predictions
    file's, else the device's default: for a device without a built-in model, the nearest
    one transferred to it) and whether it describes this device (``transferred``: a
    built-in model of another device transferred to this one, ``description`` its note)."""
    from tiletraffic.gpu.devices.device_models import model_describes_device
    from tiletraffic.analysis.device_model import default_model_name
    from tiletraffic.analysis.validation.predict import read_predictions, resolve_model

    spec = device_model
    if spec is None and predictions is not None:
        from tiletraffic.analysis.validation.predict import model_of

        obj, identity = model_of(read_predictions(predictions), None)
    else:
        obj, identity = resolve_model(spec if spec is not None
                                      else default_model_name(info, datasheet))
    describes, why = model_describes_device(obj, info)
    return {**identity.to_dict(), "describes_device": describes, "why": why,
            "description": obj.description,
            "transferred": describes and obj.name.split("calibrated:")[-1] == info.slug}


def _registered_predictions(validate_dir: Path, quick: bool, info) -> Path | None:
    """``validate_dir/predictions.json`` when there is one (pre-registered predictions the
    report's validation is measured against, instead of running the model), checked against
    the report's case list and the device's default model before the sweep starts.

    Raises:
        analysis.validation.predict.PredictionsError, PredictionsMismatch (ValueErrors): a
            malformed file, or one for other cases than the report's.
    """
    from tiletraffic.analysis.validation import predict as vp
    from tiletraffic.analysis.validation.cases import case_list, default_case_list_name

    path = validate_dir / "predictions.json"
    if not path.exists():
        return None
    pf = vp.read_predictions(path)
    vp.check_cases(pf, case_list(default_case_list_name(quick, info.is_gpu)))
    vp.model_of(pf, None)
    return path


WARMUP = 2
"""Untimed launches before each measured run (as ``tiletraffic validate``)."""


def _count_case(point: SweepPoint, limits: DeviceLimits) -> dict:
    entry = asdict(point)
    try:
        entry.update(simulate_point(point, limits))
    except LimitError as err:
        entry["skipped"] = str(err)
    return entry


def _measure_case(entry: dict, target, repeat: int, round_index: int, checks: dict) -> None:
    """One round of ``entry``'s case on the device, appended to ``entry["device_runs"]``
    (a failed round: ``entry["device_error"]``, and later rounds are not run); ``checks``
    (point key -> LaunchCheck) keeps the check before launch of the first round for the
    later ones."""
    import secrets

    import numpy as np

    from tiletraffic.gpu.runtime.launch import TiletrafficGpuError

    from tiletraffic.gpu.runtime.checked_run import run_on_device

    if "device_error" in entry:
        return
    point = SweepPoint(**{k: entry[k] for k in ("family", "m", "k", "n", "tile", "group")})
    seed = secrets.randbits(63)
    try:
        run = run_on_device(target, point.build(), repeat=repeat, warmup=WARMUP,
                            rng=np.random.default_rng(seed),
                            launch_check=checks.get(point.key), reused=point.key in checks)
        checks[point.key] = run.launch_check
        entry.setdefault("device_runs", []).append(
            {"round": round_index, "seed": seed, **run.to_dict()})
    except TiletrafficGpuError as err:
        entry["device_error"] = f"{type(err).__name__}: {err}"


def render(out_dir: str | os.PathLike) -> Path:
    """(Re)write ``report.md`` and the figures from ``out_dir/results.json`` (and the
    validation's ``validate/validation.md`` and figure from its ``validation.json``), and
    ``report.html`` with its explain pages from their documents in ``explain/``.

    Raises:
        FileNotFoundError: no ``results.json`` in ``out_dir``.
        analysis.files.ResultsFileError: it is not JSON or not a JSON object.
    """
    from tiletraffic.analysis.report.text import write_report

    out_dir = Path(out_dir)
    data = read_json_object(out_dir / "results.json", "a results file of tiletraffic report")
    if (out_dir / VALIDATION_DIR / "validation.json").exists():
        from tiletraffic.analysis.validation.render import render as render_validation

        render_validation(out_dir / VALIDATION_DIR)
    _write_explain_pages(out_dir)     # before report.md, which links what it wrote
    atomic_write_text(out_dir / "report.md", write_report(data, out_dir))
    return out_dir / "report.md"


def _write_explain_pages(out_dir: Path) -> None:
    """``report.html`` beside report.md, linking explain pages of naive and tiled GEMM and
    of a matrix-vector pair, from the documents :func:`_observe_explain_pages` wrote
    (:mod:`analysis.explain.report_pages`; nothing where there are none)."""
    from tiletraffic.analysis.explain.report_pages import write_report_html

    write_report_html(out_dir)


def _observe_explain_pages(out_dir: Path) -> None:
    """Simulate the launches of the report's explain pages (``explain/*.json``)."""
    from tiletraffic.analysis.explain.report_pages import observe_pages

    observe_pages(out_dir)
