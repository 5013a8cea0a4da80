"""Datasheets: a device's documented sizes and rates, read from a TOML file (never run).

A datasheet describes one GPU (or a few of one product line) by what its vendor publishes:
compute units, clock, memory bandwidth, L2 size, FP32 rate. It is what a device without a
built-in model has in place of one: the nearest built-in model
(``gpu.devices.device_models.nearest_model``) takes the datasheet's values in place of its
own documented ones, and scales the ones its own device measured by the two datasheets'
ratio. The shipped datasheets are ``simulator/model/datasheets/<name>.toml``
(:data:`DATASHEETS`); a user's is a file of the same shape::

    name = "my-gpu"                               # this datasheet's name
    vendor = "NVIDIA"                             # NVIDIA | AMD | Intel | Apple | ARM | ...
    architecture = "Hopper"                       # optional: the vendor's architecture name
    compute_capability = "9.0"                    # optional (NVIDIA): "major.minor"
    sub_group_size = 32                           # optional: the hardware's SIMD width
    devices = ["H100 80GB HBM3"]                  # parts of the OpenCL device names it fits
    models = ["nvidia-h200"]                      # optional: built-in models of this device
    [references]
    DS = "My GPU datasheet (2024), p. 3"
    [values.dram_bytes_per_s]                     # any device-model value
    value = 3.35e12
    ref = "DS"                                    # a key of [references]
    note = "3.35 TB/s"                            # optional

Every value is ``documented`` (its source is the cited document).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Mapping

from tiletraffic.simulator.model import device_model_schema as dm
from tiletraffic.simulator.model.device_model_file import file_text, toml_data
from tiletraffic.simulator.model.file_values import shown

SHIPPED = ("nvidia-h200-sxm", "nvidia-h100-sxm5-80gb", "nvidia-h100-pcie-80gb",
           "nvidia-a100-sxm4-80gb", "nvidia-a100-40gb")
"""Names of the datasheets shipped in ``simulator/model/datasheets/``."""

_KEYS = ("name", "description", "vendor", "architecture", "compute_capability",
         "sub_group_size", "devices", "models", "references", "values")
_ENTRY_KEYS = ("value", "ref", "note")


@dataclass(frozen=True)
class Datasheet:
    """One device's documented values.

    Attributes:
        name: the datasheet's name; ``origin``: its file.
        vendor: the GPU's vendor as written (matched case-insensitively).
        architecture: the vendor's architecture name, ``""`` when not given.
        compute_capability: NVIDIA's ``(major, minor)``, ``None`` when not given.
        sub_group_size: the hardware's SIMD width (NVIDIA's warp, AMD's wavefront), ``None``
            when not given.
        devices: parts of the OpenCL device names (``CL_DEVICE_NAME``) this sheet fits.
        models: the built-in device models of this device (empty for other devices).
        references: key -> citation.
        values: device-model field -> (value, ``ValueSource("documented", ref, note)``).
    """

    name: str
    origin: str
    vendor: str
    architecture: str = ""
    compute_capability: tuple[int, int] | None = None
    sub_group_size: int | None = None
    devices: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    references: Mapping[str, str] = field(default_factory=dict)
    values: Mapping[str, tuple[Any, dm.ValueSource]] = field(default_factory=dict)
    description: str = ""

    def fits(self, device_name: str) -> bool:
        """Whether one of :attr:`devices` is part of ``device_name`` (case-insensitive)."""
        return any(part.lower() in device_name.lower() for part in self.devices)

    def family(self) -> str:
        """``"NVIDIA Hopper, compute capability 9.0"``: vendor, architecture, capability."""
        cc = (f"compute capability {self.compute_capability[0]}.{self.compute_capability[1]}"
              if self.compute_capability else "")
        return ", ".join(filter(None, (f"{self.vendor} {self.architecture}".strip(), cc)))


def _capability(text: Any, problems: list[str]) -> tuple[int, int] | None:
    """``"9.0"`` -> ``(9, 0)``; a problem appended for anything else."""
    if text is None:
        return None
    parts = text.split(".") if isinstance(text, str) else []
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        problems.append(f'compute_capability must be "major.minor" (e.g. "9.0"), got '
                        f"{shown(text)}")
        return None
    return int(parts[0]), int(parts[1])


def _names(data: Mapping, key: str, problems: list[str], required: bool) -> tuple[str, ...]:
    got = data.get(key, None if required else [])
    if not isinstance(got, list) or not all(isinstance(x, str) and x.strip() for x in got) \
            or (required and not got):
        problems.append(f"{key} must be a {'non-empty ' if required else ''}list of "
                        f"non-empty strings, got {shown(got)}")
        return ()
    return tuple(got)


def _entries(values: Any, references: Mapping[str, str], problems: list[str]) -> dict:
    """The ``[values.*]`` tables -> field -> (value, documented source)."""
    if not isinstance(values, dict) or not values:
        problems.append("missing table [values] (at least one value)" if values is None else
                        f"values must be a non-empty table, got {shown(values)}")
        return {}
    out = {}
    for key, entry in values.items():
        if key not in dm.VALUE_FIELDS:
            problems.append(dm.unknown_value(key))
            continue
        if not isinstance(entry, dict) or "value" not in entry or "ref" not in entry:
            problems.append(f"values.{key} must be a table with value and ref")
            continue
        dm.check_fields(entry, _ENTRY_KEYS, problems, f"values.{key}: ")
        if entry["ref"] not in references:
            problems.append(f"values.{key}: ref {shown(entry['ref'])} is not a key of "
                            f"[references] (known: {', '.join(references) or 'none'})")
        note = entry.get("note", "")
        if not isinstance(note, str):
            problems.append(f"values.{key}: note must be a string, got {shown(note)}")
            note = ""
        value = dm.check_value(key, entry["value"], problems)
        out[key] = (value, dm.ValueSource("documented", str(entry["ref"]), note))
    return out


def parse_datasheet(data: Mapping[str, Any], origin: str) -> Datasheet:
    """A :class:`Datasheet` from the parsed TOML ``data`` (shape: the module docstring).

    Raises:
        DeviceModelError: naming ``origin`` and every problem: an unknown or missing field,
            a value of the wrong type or sign, a ``ref`` not in ``[references]``.
    """
    problems: list[str] = []
    dm.check_fields(data, _KEYS, problems)
    for key in ("name", "vendor"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            problems.append(f"{key} must be a non-empty string, got {shown(data.get(key))}")
    for key in ("architecture", "description"):
        if not isinstance(data.get(key, ""), str):
            problems.append(f"{key} must be a string, got {shown(data[key])}")
    width = data.get("sub_group_size")
    if width is not None and (not isinstance(width, int) or isinstance(width, bool)
                              or not 1 <= width <= 128):
        problems.append(f"sub_group_size must be an integer of 1 to 128, got {shown(width)}")
    references = dm.read_references(data, problems)
    sheet = Datasheet(
        name=str(data.get("name")), origin=origin, vendor=str(data.get("vendor")),
        architecture=str(data.get("architecture", "")),
        compute_capability=_capability(data.get("compute_capability"), problems),
        sub_group_size=width, devices=_names(data, "devices", problems, True),
        models=_names(data, "models", problems, False), references=dict(references),
        values=_entries(data.get("values"), references, problems),
        description=str(data.get("description", "")))
    if problems:
        raise dm.DeviceModelError(f"datasheet file {origin}: " + "; ".join(problems))
    return sheet


def read_datasheet(text: str, origin: str) -> Datasheet:
    """The datasheet in the TOML ``text``.

    Raises:
        DeviceModelError: not TOML, or not a valid datasheet (:func:`parse_datasheet`).
    """
    return parse_datasheet(toml_data(text, "datasheet", origin), origin)


def load_datasheet(path: str | os.PathLike) -> Datasheet:
    """The datasheet in the file ``path`` (TOML, parsed, never run).

    Raises:
        DeviceModelError: the file cannot be read, is not TOML or not a valid datasheet.
    """
    return read_datasheet(file_text(path, "datasheet"), str(path))


def _shipped(name: str) -> Datasheet:
    text = resources.files(__package__).joinpath("datasheets", f"{name}.toml")
    return read_datasheet(text.read_text(encoding="utf-8"),
                          f"simulator/model/datasheets/{name}.toml")


DATASHEETS: dict[str, Datasheet] = {name: _shipped(name) for name in SHIPPED}
"""The shipped datasheets by name."""


def datasheet_for(device_name: str, extra: tuple[Datasheet, ...] = ()) -> Datasheet | None:
    """The first datasheet of ``extra``, then of :data:`DATASHEETS`, that fits the OpenCL
    device name ``device_name`` (:meth:`Datasheet.fits`), or None."""
    return next((s for s in (*extra, *DATASHEETS.values()) if s.fits(device_name)), None)


def datasheet_of_model(model_name: str) -> Datasheet | None:
    """The shipped datasheet of the device the built-in model ``model_name`` describes
    (its :attr:`Datasheet.models`), or None."""
    return next((s for s in DATASHEETS.values() if model_name in s.models), None)
