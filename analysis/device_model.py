"""The one place a device model is resolved, for every command and library function.

A device model is given as a built-in model's name (``DEVICE_MODELS``), the path of a model
file (TOML), or a ``DeviceModel``; when none is given, a command takes the model of the
OpenCL device it measures (its queried values completed from a built-in model) or a default
name. :func:`resolve_device_model` turns any of these into a ``DeviceModel``;
:func:`default_model_name` is the name a validation of a device defaults to.

``gpu`` (pyopencl) is imported only where an OpenCL device's model is asked for.
"""
from __future__ import annotations

import os

from tiletraffic.simulator.model.device_model import DeviceModel, device_model

DEFAULT_MODEL = "nvidia-h200"
"""The device model when no device is measured and none is named (``tiletraffic model``,
``explain``, a tuning without a device)."""

VALIDATION_FALLBACK = "generic-gpu"
"""The model a validation of a device defaults to when it has no built-in model of its own
and none is near it (``gpu.devices.nearest_model.nearest_built_in``)."""


def resolve_device_model(spec: str | os.PathLike | DeviceModel | None, *,
                         device_info=None, default: str | None = None,
                         datasheet=None) -> DeviceModel:
    """The device model ``spec`` names. Where ``spec`` is None: the model of the OpenCL
    device ``device_info`` when given (a ``gpu.devices.device.DeviceInfo``:
    ``gpu.devices.device_models.model_from_opencl``; for a device without a built-in model,
    the nearest one with the values of ``datasheet``, a ``simulator.model.datasheet.
    Datasheet``, and of the queries in place of its own), else the built-in model
    ``default`` when given (:data:`DEFAULT_MODEL` for a command that measures nothing).

    Args:
        spec: a built-in model's name, the path of a model file, or a ``DeviceModel``
            (returned as it is).

    Raises:
        UnknownDeviceModel (a DeviceModelError and a KeyError): neither a built-in name nor
            an existing file; the message names it and lists the built-in models.
        DeviceModelError: a malformed model file, or ``spec`` of another type (None
            included, where neither ``device_info`` nor ``default`` is given).
    """
    if spec is None and device_info is not None:
        from tiletraffic.gpu.devices.device_models import model_from_opencl

        return model_from_opencl(device_info, datasheet=datasheet)
    if spec is None and default is not None:
        return device_model(default)
    return device_model(spec)


def default_model_name(device_info, datasheet=None) -> str | DeviceModel:
    """The model a validation of the OpenCL device ``device_info`` defaults to: its built-in
    model by name (``gpu.devices.device_models.KNOWN_NAMES``; its file is hashed), else the
    nearest built-in model transferred to it (a ``DeviceModel`` named after the device, the
    note in its ``description``: ``gpu.devices.nearest_model.nearest_model``, with
    ``datasheet``'s values when given), else :data:`VALIDATION_FALLBACK` (every value a
    guess) when no built-in model is near."""
    from tiletraffic.gpu.devices.device_models import built_in_name_for
    from tiletraffic.gpu.devices.nearest_model import nearest_built_in, nearest_model
    from tiletraffic.simulator.model.datasheet import datasheet_for

    known = built_in_name_for(device_info.device_name)
    if known:
        return known
    sheet = datasheet or datasheet_for(device_info.device_name)
    if nearest_built_in(device_info, sheet)[0] is None:
        return VALIDATION_FALLBACK
    return nearest_model(device_info, datasheet=sheet)
