"""A tuning's results document around its candidates: its ``meta`` (:func:`tuning_meta`)
and the earlier results file at the same path, reused by a resumed tuning (its problem,
space, model and, where it measured, device and launch counts the same) or moved to
``history/`` beside it (:func:`previous`)."""
from __future__ import annotations

import datetime as _dt
import hashlib
from pathlib import Path

from tiletraffic.analysis.files import ResultsFileError, archive_previous, read_json_object
from tiletraffic.analysis.tune import results_file as tuning_file
from tiletraffic.analysis.tune.options import TuneError, TuneOptions

FORMAT = 2
"""Version of the JSON document's layout (2: the recheck's ``recheck`` and per-prediction
fields, :mod:`analysis.tune.recheck`; a format-1 file resumes as one without them)."""
RESUME_KEYS = ("operation", "m", "n", "k", "batch", "shared_b", "dtype", "space_sha256",
               "device_model_sha256")
MEASURE_KEYS = ("device_slug", "repeat", "warmup", "rounds", "seed")
RESUME_WORDS = {"operation": "the operation", "m": "--m", "n": "--n", "k": "--k",
                "batch": "--batch", "shared_b": "--shared-b", "dtype": "--dtype",
                "space_sha256": "the space file (--space)",
                "device_model_sha256": "the device model (--device-model)",
                "device_slug": "the device (--device)", "repeat": "--repeat",
                "warmup": "--warmup", "rounds": "--rounds", "seed": "--seed"}
"""How a refused --resume names each of :data:`RESUME_KEYS` and :data:`MEASURE_KEYS`: the
option that sets it."""


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _resumable(path: Path) -> dict:
    """The tuning document in ``path``, every field a resumed tuning reuses there and of
    its type (:mod:`analysis.tune.results_file`).

    Raises:
        TuneError: it cannot be read, is not a JSON object or a field is missing or of
            another type; one line naming the file and the field.
    """
    again = "give another --out or drop --resume"
    try:
        old = read_json_object(path, "a tuning file")
    except ResultsFileError as err:
        raise TuneError(f"cannot resume from {err}; {again}") from None
    except OSError as err:
        raise TuneError(f"{path}: cannot resume from it ({err.strerror or err}); "
                        f"{again}") from None
    problem = tuning_file.problem(old)
    if problem is not None:
        raise TuneError(f"{path}: cannot resume from it ({problem}); {again}")
    return old


def _said(value) -> str:
    """A recorded option's value as a message says it (none: not given)."""
    return "none" if value is None else str(value)


def previous(path: Path | None, resume: bool, meta: dict, log) -> dict | None:
    """Reuse (``resume``) or move away an existing output file; the reused document (its
    fields checked: :func:`_resumable`)."""
    if path is None or not path.exists():
        if resume and path is not None:
            log(f"note: {path} does not exist yet: starting afresh")
        return None
    if resume:
        old = _resumable(path)
        old_meta = old["meta"]
        if meta["seed"] is None:  # the seed the earlier measurements were drawn with
            meta["seed"] = old_meta.get("seed")
        keys = RESUME_KEYS + (MEASURE_KEYS if old.get("measurements") else ())
        differ = [f"{RESUME_WORDS[key]} differs" if key.endswith("_sha256") else
                  f"{RESUME_WORDS[key]} was {_said(old_meta.get(key))}, "
                  f"now {_said(meta.get(key))}" for key in keys if old_meta.get(key) != meta.get(key)]
        if differ:
            raise TuneError(f"{path} holds another tuning ({'; '.join(differ)}): it cannot "
                            "be resumed; give another --out or drop --resume (the old file "
                            "is then moved to history/)")
        return old
    moved = archive_previous(path)
    log(f"note: the earlier results in {path} were moved to {moved}")
    meta["previous_results_moved_to"] = str(moved)
    return None


def tuning_meta(options: TuneOptions, space, model, limits, target, judged_by,
                cluster: dict | None = None) -> dict:
    """The ``meta`` of a tuning document: problem, software, space, model, limits, device,
    the options (top, measure_all, repeat, warmup, rounds, seed, jobs, recheck) and the
    targets ``judged_by``; measuring, whether the model describes the device; on a cluster
    (``cluster``: its description, :meth:`analysis.tune.cluster.Cluster.describe`), the
    cluster."""
    from importlib import metadata

    from tiletraffic.simulator.model.device_model import to_toml

    try:
        version = metadata.version("tiletraffic")
    except metadata.PackageNotFoundError:
        version = None
    o = options
    meta = {
        "format": FORMAT, "operation": "gemm", "m": o.m, "n": o.n, "k": o.k,
        **({"batch": o.batch, "shared_b": o.shared_b} if o.batch != 1 else {}),
        **({"dtype": o.dtype} if o.dtype != "float32" else {}),
        "created_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": o.described_command(), "tiletraffic": version,
        "space": space.path, "space_sha256": space.sha256, "space_candidates": space.size,
        "device_model": model.name, "device_model_sha256": _digest(to_toml(model)),
        "device_model_guessed": list(model.guessed),
        "limits": {"name": limits.name, "max_work_group_size": limits.max_work_group_size,
                   "max_work_item_sizes": list(limits.max_work_item_sizes),
                   "local_mem_bytes": limits.local_mem_bytes},
        "device": None if target is None else {
            "id": target.info.id, "name": target.info.device_name,
            "platform": target.info.platform_name, "is_simulator": target.info.is_simulator,
            "driver_version": target.info.driver_version},
        "device_slug": None if target is None else target.slug,
        "top": o.top, "measure_all": o.measure_all, "repeat": o.repeat, "warmup": o.warmup,
        "rounds": o.rounds, "seed": o.seed, "jobs": o.jobs, "recheck": o.recheck,
        "targets": judged_by.to_dict(),
    }
    if target is not None:
        from tiletraffic.gpu.devices.device_models import model_fit_meta
        meta.update(model_fit_meta(model, target.info))
    if cluster is not None:
        meta["cluster"] = cluster
    return meta
