"""``validation.json``, the results of a validation: written, read back, and the comparison
and the model's standing drawn from it (what :mod:`.render` and ``tiletraffic report`` read).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Sequence

from tiletraffic.analysis.files import ResultsFileError, atomic_write_text, read_json_object
from tiletraffic.analysis.validation.targets import Targets
from tiletraffic.analysis.validation import predict as vp
from tiletraffic.analysis.validation.cases import Case
from tiletraffic.analysis.validation.compare import Measured, Summary, compare, measured_time

RESULTS_FILE = "validation.json"


def measured_of(entry: dict | None) -> Measured | None:
    """:class:`Measured` of a ``measurements`` entry; ``None`` when no round finished or any
    round failed (a case with a failed round does not count)."""
    if not entry or not entry.get("rounds"):
        return None
    if any("device_error" in r for r in entry["rounds"]):
        return None
    return measured_time([r["kernel_times_s"] for r in entry["rounds"]])


def model_describes(data: dict) -> tuple[bool, str]:
    """Whether a ``validation.json``'s device model is a model of its device
    (:func:`gpu.devices.device_models.model_describes_device`, recorded when it ran; a file
    without that record: a model calibrated on the device or built in for it, by name, else
    whether the device is a GPU), and why."""
    from tiletraffic.gpu.devices.device_models import built_in_name_for

    model, dev = data["meta"]["device_model"], data["meta"]["device"]
    if "describes_device" in model:
        return bool(model["describes_device"]), model.get("describes_device_why", "")
    name = model["name"].split("calibrated:", 1)[-1]
    known = built_in_name_for(dev["device_name"])
    if name == data["meta"].get("device_slug") or (known and name.startswith(known)):
        return True, f"`{model['name']}` is a model of {dev['device_name']}"
    if dev.get("is_gpu") is False:
        return False, (f"`{model['name']}` describes a GPU, and {dev['device_name']} is not "
                       "one, so its predicted times are another device's")
    return True, ""


def summary_of(data: dict, cases: Sequence[Case] | None = None) -> Summary:
    """The comparison (:func:`analysis.validation.compare.compare`) of a ``validation.json``,
    judged by the targets it recorded (``meta.targets``; the built-in ones without).
    ``cases``: the cases ``data["cases"]`` describes, in its order, where the caller holds
    them (a case read from its dict builds its schedule); default: read from
    ``data["cases"]``."""
    if cases is None:
        cases = [Case.from_dict(c) for c in data["cases"]]
    measured = {c.id: measured_of(data["measurements"].get(c.id)) for c in cases}
    return compare(cases, vp.predicted_seconds(data["predictions"]), measured,
                   Targets.from_dict(data["meta"].get("targets")))


def save(out_dir: Path, data: dict, cases: Sequence[Case] | None = None) -> None:
    """Write ``data`` with its comparison (``summary``) as ``out_dir/validation.json``,
    atomically. ``cases``: as for :func:`summary_of`."""
    data["summary"] = summary_of(data, cases).to_dict()
    atomic_write_text(out_dir / RESULTS_FILE, json.dumps(data, indent=1) + "\n")


REQUIRED = {"meta": dict, "cases": list, "predictions": dict, "measurements": dict}
"""The top-level fields of a ``validation.json`` and their JSON types."""


def load(out_dir: str | os.PathLike) -> dict:
    """The ``validation.json`` of ``out_dir``, with its top-level fields (:data:`REQUIRED`)
    present and of their types.

    Raises:
        FileNotFoundError: none there.
        ResultsFileError: not JSON, or a top-level field missing or of another type.
    """
    path = Path(out_dir) / RESULTS_FILE
    data = read_json_object(path, "a validation results file")
    for key, kind in REQUIRED.items():
        if not isinstance(data.get(key), kind):
            raise ResultsFileError(
                f"{path}: not a validation results file (field {key!r} "
                f"{'missing' if key not in data else 'is not a JSON ' + ('object' if kind is dict else 'list')}"
                "; tiletraffic validate writes them)")
    return data
