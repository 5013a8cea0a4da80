"""``tiletraffic report``: sweep, simulate, run on a device, write ``reports/<device>/``.

For each point of the sweep the schedule is simulated (exact counts, checked against the
closed forms) and run as OpenCL on the device (result checked against numpy before its time
counts). Everything lands in ``results.json``; :func:`render` turns that JSON into
``report.md`` and PNG figures, so a report can be re-rendered without the device.

Files are written atomically (:mod:`analysis.files`). An earlier ``results.json`` is
never lost: it is moved to ``history/results-<its timestamp>.json`` first.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import shlex
import sys
import tempfile
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path

from tqdm import tqdm

from tiletraffic.simulator import schedules
from tiletraffic.simulator.device import DeviceLimits, LimitError
from tiletraffic.simulator.engine import simulate

from . import closed_form
from .files import archive_previous, atomic_write_text
from .report_text import VALIDATION_DIR

FULL_SIZES = (64, 128, 256, 512, 1024)
QUICK_SIZES = (64, 128, 256)
FULL_TILES = (4, 8, 16, 32)
QUICK_TILES = (4, 8, 16)
REFERENCE_TILE = 16
"""Tile width of the tiled series in the reads-vs-N figure (naive uses 16×16 work-groups)."""


@dataclass(frozen=True)
class SweepPoint:
    """One (schedule, sizes, tile) case of the sweep; ``group`` names its role."""

    family: str
    m: int
    k: int
    n: int | None
    tile: int
    group: str

    def build(self):
        return schedules.build(self.family, self.m, self.k, self.n, self.tile)


def default_sweep(quick: bool) -> list[SweepPoint]:
    """Square N from 64 to 1024 (quick: to 256) × tiles 4..32 (quick: 4..16), naive and tiled,
    plus a non-multiple case, a rectangular case and the two matrix-vector schedules."""
    sizes, tiles = (QUICK_SIZES, QUICK_TILES) if quick else (FULL_SIZES, FULL_TILES)
    points = [SweepPoint(f, n, n, n, b, "square")
              for n in sizes for b in tiles for f in schedules.GEMM_FAMILIES]
    odd, rect = ((100, 100, 100), (96, 160, 64)) if quick else ((1000, 1000, 1000),
                                                               (768, 512, 384))
    for f in schedules.GEMM_FAMILIES:
        points.append(SweepPoint(f, *odd, REFERENCE_TILE, "non-multiple"))
        points.append(SweepPoint(f, *rect, REFERENCE_TILE, "rectangular"))
    mv = 1024 if quick else 4096
    for f in schedules.MATVEC_FAMILIES:
        points.append(SweepPoint(f, mv, mv, None, 256, "matvec"))
    return points




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
    counts = simulate(sch, compute_values=False, limits=limits).counts.to_dict()
    return {"counts": counts, "closed_form_agrees": counts == closed_form.counts(sch),
            "work_group": list(sch.local_size), "ndrange": list(sch.global_size),
            "local_mem_bytes": sch.local_mem_bytes}


def make_report(device: str | None = None, out_root: str | os.PathLike = "reports",
                quick: bool = False, repeat: int = 10, progress: bool = True,
                validation: bool = True) -> Path:
    """Run the sweep on ``device`` and write ``<out_root>/<device-slug>[-quick]/``, then
    validate the model on the same device (``tiletraffic validate``, the ``quick`` case list
    with ``quick``, else the device's: :func:`analysis.validation_run.run_validation`) into
    its ``validate/`` folder; ``report.md`` includes that section. A ``predictions.json``
    already in that folder (``tiletraffic validate --predict-only``, committed: the
    pre-registration) is measured against instead of running the model. ``validation=False``
    leaves the validation out (the sweep only).

    Returns the report directory.

    Every finished case is written to ``results.json`` at once (atomically; the previous
    ``results.json`` is first moved to ``history/``), so an interrupted sweep keeps them;
    likewise ``validate/validation.json``.

    Raises:
        gpu.device.DeviceError: no device, or none matching ``device``.
        ValueError: ``repeat`` below 10; a ``validate/predictions.json`` that is malformed
            or for other cases or another model (checked before the sweep).
        OSError: the output directory cannot be written (checked before the sweep starts).
        SweepInterrupted: Ctrl-C during the sweep or the validation (finished cases saved and
            rendered; ``analysis.validation_run.ValidationInterrupted`` for the latter).
    """
    from tiletraffic.gpu.device import select_device
    from tiletraffic.gpu.runtime import MIN_REPEAT

    if repeat < MIN_REPEAT:
        raise ValueError(f"repeat = {repeat} is below the minimum of {MIN_REPEAT} timed launches")
    target = select_device(device)
    info = target.info
    if info.is_simulator:
        import warnings
        warnings.warn(f"{info.device_name} is a simulator: its kernel times say nothing about "
                      "hardware", RuntimeWarning, stacklevel=2)
    limits = info.limits
    out_dir = Path(out_root) / (target.slug + ("-quick" if quick else ""))
    ensure_writable(out_dir)
    sweep = default_sweep(quick)
    predictions = _registered_predictions(out_dir / VALIDATION_DIR, quick, info) \
        if validation else None
    data = {
        "meta": {
            "created_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "command": "tiletraffic " + " ".join(shlex.quote(a) for a in sys.argv[1:])
            if Path(sys.argv[0]).name == "tiletraffic" else
            f"make_report(device={device!r}, quick={quick}, repeat={repeat})",
            "quick": quick, "repeat": repeat,
            "device": {k: (list(v) if isinstance(v, tuple) else v)
                       for k, v in asdict(info).items()},
            "device_slug": target.slug,
            "software": _software(),
            "complete": False, "cases_total": len(sweep),
        },
        "results": [],
    }
    results = data["results"]
    archive_previous(out_dir / "results.json", "results")
    try:
        for point in tqdm(sweep, desc=f"sweep on {info.device_name}", unit="case",
                          disable=not progress, file=sys.stderr):
            results.append(_sweep_case(point, target, limits, repeat))
            # every finished case is on disk: an interrupted sweep loses none of them
            atomic_write_text(out_dir / "results.json", json.dumps(data, indent=1))
    except KeyboardInterrupt:
        if results:
            render(out_dir)
        raise SweepInterrupted(out_dir, len(results), len(sweep)) from None
    data["meta"]["complete"] = True
    atomic_write_text(out_dir / "results.json", json.dumps(data, indent=1))
    from .validation_run import ValidationInterrupted, run_validation

    try:  # the model against this device: every schedule family (tiletraffic validate)
        if validation:
            run_validation(target, quick=quick, out_dir=out_dir / VALIDATION_DIR, repeat=repeat,
                           progress=progress, command=data["meta"]["command"],
                           predictions_file=predictions)
    except ValidationInterrupted:
        render(out_dir)
        raise
    render(out_dir)
    return out_dir


def _registered_predictions(validate_dir: Path, quick: bool, info) -> Path | None:
    """``validate_dir/predictions.json`` when there is one (pre-registered predictions the
    report's validation is measured against, instead of running the model), checked against
    the report's case list and the device's default model before the sweep starts.

    Raises:
        analysis.validation_predict.PredictionsError, PredictionsMismatch (ValueErrors): a
            malformed file, or one for other cases than the report's.
    """
    from . import validation_predict as vp
    from .validation import case_list, default_case_list_name

    path = validate_dir / "predictions.json"
    if not path.exists():
        return None
    pf = vp.read_predictions(path)
    vp.check_cases(pf, case_list(default_case_list_name(quick, info.is_gpu)))
    vp.model_of(pf, None)
    return path


class SweepInterrupted(RuntimeError):
    """The sweep was interrupted; the finished cases are saved (``results.json``, and the
    report rendered from them)."""

    def __init__(self, out_dir: Path, done: int, total: int):
        self.out_dir, self.done, self.total = out_dir, done, total
        super().__init__(f"sweep interrupted after {done} of {total} cases; " +
                         (f"the finished cases are saved in {out_dir / 'results.json'} and "
                          f"{out_dir / 'report.md'}" if done else "no case had finished"))


def _sweep_case(point: SweepPoint, target, limits: DeviceLimits, repeat: int) -> dict:
    from tiletraffic.gpu.runtime import TiletrafficGpuError

    from .validate import run_on_device

    entry = asdict(point)
    try:
        entry.update(simulate_point(point, limits))
    except LimitError as err:
        entry["skipped"] = str(err)
        return entry
    try:
        run = run_on_device(target, point.build(), repeat=repeat)
        entry["device_run"] = run.to_dict()
    except TiletrafficGpuError as err:
        entry["device_error"] = f"{type(err).__name__}: {err}"
    return entry


def ensure_writable(out_dir: Path) -> None:
    """Create ``out_dir`` and prove a file can be written there, before any work starts.

    Raises:
        OSError: naming the directory and the reason (permission denied, read-only file
            system, a file in the way, ...).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    fd, probe = tempfile.mkstemp(prefix=".write-test.", dir=out_dir)
    os.close(fd)
    os.remove(probe)


def render(out_dir: str | os.PathLike) -> Path:
    """(Re)write ``report.md`` and the figures from ``out_dir/results.json`` (and the
    validation's ``validate/validation.md`` and figure from its ``validation.json``).

    Raises:
        FileNotFoundError: no ``results.json`` in ``out_dir``.
    """
    from .report_text import write_report

    out_dir = Path(out_dir)
    data = json.loads((out_dir / "results.json").read_text())
    if (out_dir / VALIDATION_DIR / "validation.json").exists():
        from .validation_text import render as render_validation

        render_validation(out_dir / VALIDATION_DIR)
    atomic_write_text(out_dir / "report.md", write_report(data, out_dir))
    return out_dir / "report.md"
