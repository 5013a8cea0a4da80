"""The model's predictions of a case list, and the predictions file that pre-registers them.

``tiletraffic validate --predict-only --device-model FILE --out predictions.json`` writes,
without a device, a JSON file (:data:`FORMAT`) holding:

- ``cases``: the case list (``Case.to_dict`` of each, in order);
- ``device_model``: its ``name``, where it came from (``source``: a built-in name or the
  file's path as given) and ``sha256``, the SHA-256 of the model file's bytes (of the
  packaged TOML for a built-in name; of ``to_toml(model)`` for a model given as an object);
- ``predictions``: case id -> ``predicted_time_s``, ``bound``, ``time_terms_s`` (the
  model's ``TrafficPrediction``; the sum is ``predicted_time_s``), ``guessed_values`` (the
  model's warnings), or ``error`` where the model refused the case;
- ``tiletraffic``: version, ``git_commit`` and ``git_dirty`` of the checkout when it is one
  (``None`` otherwise), and ``created_utc``, the time of writing.

``tiletraffic validate --predictions FILE`` then measures exactly the file's cases and
compares them with the file's predictions (the model is not run again), after refusing
(:class:`PredictionsMismatch`) a device model whose hash differs or a case list given on the
command line that differs from the file's. Committed before the measurement, the file is
the pre-registration: its git history dates the predictions.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import subprocess
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

from tiletraffic.simulator.engine.limits import LimitError
from tiletraffic.simulator.model.device_model import (DEVICE_MODELS, DeviceModel,
                                                      built_in_file, to_toml)
from tiletraffic.simulator.observers.hazards import HazardError

from tiletraffic.analysis.device_model import resolve_device_model
from tiletraffic.analysis.files import archive_previous, atomic_write_text
from tiletraffic.analysis.validation.cases import Case, CaseError, check_unique

FORMAT = "tiletraffic-validation-predictions"
VERSION = 1


class PredictionsError(ValueError):
    """A predictions file cannot be read or is malformed (the message names the file)."""


class PredictionsMismatch(ValueError):
    """The cases or the device model of a run differ from those of its predictions file."""


@dataclass(frozen=True)
class ModelIdentity:
    """Which device model: ``name`` (the model's own), ``source`` (a built-in name, a file
    path, or ``"object"``) and ``sha256`` of its file's bytes (see the module docstring)."""

    name: str
    source: str
    sha256: str

    def to_dict(self) -> dict:
        return {"name": self.name, "source": self.source, "sha256": self.sha256}


def resolve_model(spec: str | os.PathLike | DeviceModel) -> tuple[DeviceModel, ModelIdentity]:
    """The model ``spec`` names (:func:`analysis.device_model.resolve_device_model`) and its
    identity.

    Raises:
        KeyError: neither a built-in name nor a file. DeviceModelError: a malformed file.
    """
    model = resolve_device_model(spec)
    if isinstance(spec, DeviceModel):
        data, source = to_toml(spec).encode("utf-8"), "object"
    elif str(spec) in DEVICE_MODELS:
        data, source = built_in_file(str(spec)).read_bytes(), str(spec)
    else:
        data, source = Path(spec).read_bytes(), str(spec)
    return model, ModelIdentity(model.name, source, hashlib.sha256(data).hexdigest())


def predict_case(case: Case, model: DeviceModel) -> dict:
    """The model's prediction of one case: ``predicted_time_s``, ``bound``, ``time_terms_s``,
    ``guessed_values``; or ``{"error": ...}`` when the model refuses it (limits, hazards, an
    unreadable instructions file of the case)."""
    from tiletraffic.simulator.model.sequence_run import model_sequence

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            schedule = case.build()
            counted = None
            if case.instructions is not None:
                from tiletraffic.simulator.model.instructions import read_instructions
                counted = read_instructions(case.instructions)
            p = model_sequence(schedule, model, registers_per_work_item=case.registers,
                               instructions=counted).prediction
        except (LimitError, HazardError, ValueError) as err:
            return {"error": f"{type(err).__name__}: {err}"}
    return {"predicted_time_s": p.predicted_time_s, "bound": p.bound,
            "time_terms_s": dict(p.time_terms_s),
            "guessed_values": sorted({str(w.message) for w in caught})}


def predict(cases: Iterable[Case], model: DeviceModel,
            step: Callable[[Case], None] | None = None) -> dict[str, dict]:
    """:func:`predict_case` of every case, by case id; ``step(case)`` is called before each
    (a progress bar)."""
    out = {}
    for case in cases:
        if step:
            step(case)
        out[case.id] = predict_case(case, model)
    return out


def predicted_seconds(predictions: dict[str, dict]) -> dict[str, float | None]:
    """Case id -> predicted seconds (``None`` where the model refused the case)."""
    return {cid: p.get("predicted_time_s") for cid, p in predictions.items()}


def provenance() -> dict:
    """``version``, ``git_commit`` (full hash) and ``git_dirty`` (tracked files modified)
    of the tiletraffic checkout this code runs from; ``None`` where it is not a git
    checkout or git is missing."""
    from importlib import metadata

    try:
        version = metadata.version("tiletraffic")
    except metadata.PackageNotFoundError:
        version = None
    here = Path(__file__).resolve().parent

    def git(*args):
        try:
            out = subprocess.run(["git", *args], capture_output=True, text=True, cwd=here,
                                 timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {"version": version, "git_commit": commit,
            "git_dirty": None if status is None else bool(status)}


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def predictions_document(cases: Sequence[Case], identity: ModelIdentity,
                         predictions: dict[str, dict], command: str | None = None,
                         case_list: str | None = None) -> dict:
    """The predictions file's content (module docstring); ``case_list``: the built-in list's
    name (``analysis.validation.CASE_SIZES``) or ``None`` for a list of the user's."""
    return {"format": FORMAT, "version": VERSION, "created_utc": utc_now(),
            "command": command, "case_list": case_list, "tiletraffic": provenance(),
            "device_model": identity.to_dict(),
            "cases": [c.to_dict() for c in cases],
            "predictions": {c.id: predictions[c.id] for c in cases}}


def write_predictions(path: str | os.PathLike, cases: Sequence[Case],
                      model_spec: str | os.PathLike | DeviceModel, *,
                      step: Callable[[Case], None] | None = None,
                      command: str | None = None, case_list: str | None = None) -> dict:
    """Predict ``cases`` on ``model_spec`` and write the predictions file to ``path``
    (atomically; an earlier file there is moved to history/ beside it). Returns the
    document written.

    Raises:
        KeyError, DeviceModelError: as :func:`resolve_model`. OSError: ``path`` cannot be
        written.
    """
    model, identity = resolve_model(model_spec)
    cases = check_unique(cases, "predictions")
    doc = predictions_document(cases, identity, predict(cases, model, step), command,
                               case_list)
    archive_previous(path)   # registered predictions are never lost
    atomic_write_text(path, json.dumps(doc, indent=1) + "\n")
    return doc


@dataclass(frozen=True)
class PredictionsFile:
    """A predictions file read back: its ``cases``, ``identity`` of the model,
    ``predictions`` (case id -> dict), the whole ``document``, ``path`` and the ``sha256``
    of its bytes (recorded with the measurement that used it)."""

    path: Path
    sha256: str
    cases: tuple[Case, ...]
    identity: ModelIdentity
    predictions: dict[str, dict]
    document: dict


def read_predictions(path: str | os.PathLike) -> PredictionsFile:
    """Read and check a predictions file.

    Raises:
        PredictionsError: unreadable, not JSON, another format or version, a missing field,
            a malformed case, or a case without a prediction.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
        doc = json.loads(raw)
    except OSError as err:
        raise PredictionsError(f"{path}: cannot read the predictions file "
                               f"({err.strerror})") from None
    except (ValueError, UnicodeDecodeError) as err:
        raise PredictionsError(f"{path}: not a JSON file ({err})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise PredictionsError(f"{path}: not a tiletraffic predictions file (format "
                               f"{doc.get('format') if isinstance(doc, dict) else None!r}, "
                               f"expected {FORMAT!r}; write one with tiletraffic validate "
                               "--predict-only)")
    if doc.get("version") != VERSION:
        raise PredictionsError(f"{path}: version {doc.get('version')!r}; this tiletraffic "
                               f"reads version {VERSION}")
    try:
        model = doc["device_model"]
        identity = ModelIdentity(str(model["name"]), str(model["source"]),
                                 str(model["sha256"]))
        cases = check_unique([Case.from_dict(c, f"{path}: case {i + 1}")
                              for i, c in enumerate(doc["cases"])], str(path))
        predictions = doc["predictions"]
    except (KeyError, TypeError) as err:
        raise PredictionsError(f"{path}: missing or malformed field {err}") from None
    except CaseError as err:
        raise PredictionsError(str(err)) from None
    missing = [c.id for c in cases if not isinstance(predictions.get(c.id), dict)]
    if missing:
        raise PredictionsError(f"{path}: no prediction for case(s) {', '.join(missing)}")
    return PredictionsFile(path, hashlib.sha256(raw).hexdigest(), cases, identity,
                           predictions, doc)


def check_cases(pf: PredictionsFile, cases: Sequence[Case] | None) -> None:
    """Refuse a case list that differs from the file's (``None``: none given, nothing to
    check).

    Raises:
        PredictionsMismatch: naming the cases only in one of the two lists, or the first
            place where their order differs.
    """
    if cases is None or tuple(cases) == pf.cases:
        return
    mine, theirs = [c.id for c in cases], [c.id for c in pf.cases]
    only_mine = [c for c in mine if c not in theirs]
    only_file = [c for c in theirs if c not in mine]
    detail = (f"{len(only_mine)} case(s) not in the file (first: {only_mine[0]})" if only_mine
              else f"{len(only_file)} case(s) of the file missing (first: {only_file[0]})"
              if only_file else "the same cases in another order")
    raise PredictionsMismatch(f"the case list differs from {pf.path}'s: {detail}; measure "
                              "the file's cases (leave out --quick, --case-list, --cases, "
                              "--dtype and --batch) or write new predictions with "
                              "--predict-only")


def check_model(pf: PredictionsFile, identity: ModelIdentity) -> None:
    """Refuse a device model whose file hash differs from the one the predictions used.

    Raises:
        PredictionsMismatch: naming both models and hashes.
    """
    if identity.sha256 != pf.identity.sha256:
        raise PredictionsMismatch(
            f"device model {identity.name} ({identity.source}, sha256 "
            f"{identity.sha256[:12]}...) is not the one {pf.path} was predicted with: "
            f"{pf.identity.name} ({pf.identity.source}, sha256 {pf.identity.sha256[:12]}...)")


def model_of(pf: PredictionsFile, spec: str | os.PathLike | DeviceModel | None
             ) -> tuple[DeviceModel, ModelIdentity]:
    """The device model to check against ``pf``: ``spec`` when given, else the file's own
    source (a built-in name, or its path if that file exists, as given or relative to the
    predictions file's folder); checked with :func:`check_model`.

    Raises:
        PredictionsMismatch: a hash that differs, or no ``spec`` and the file's model file
            is not there.
    """
    if spec is None:
        source = pf.identity.source
        beside = pf.path.parent / source
        if source not in DEVICE_MODELS and not os.path.isfile(source) and beside.is_file():
            source = str(beside)      # a relative path, from the predictions file's folder
        if source not in DEVICE_MODELS and not os.path.isfile(source):
            raise PredictionsMismatch(
                f"{pf.path} was predicted with the device model file {source!r}, which is "
                f"not there: give it with --device-model FILE (sha256 "
                f"{pf.identity.sha256[:12]}...)")
        spec = source
    model, identity = resolve_model(spec)
    check_model(pf, identity)
    return model, identity
