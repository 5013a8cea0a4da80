"""Device models from OpenCL device queries, completed from a built-in model.

OpenCL exposes some of what the memory-system model needs (compute units, local memory,
work-group limits, global memory cache size) but not the rest (sectors, banks, L1 size,
bandwidths). :func:`model_from_opencl` takes every value OpenCL reports, marked ``queried``
with its query, and the rest from the built-in model of a known device (matched by name),
else from the nearest built-in model with the device's datasheet values in place of its
documented ones (:mod:`gpu.devices.nearest_model`), else from the generic GPU model, whose
values are guesses and warn (:class:`GuessedValueWarning`).
"""
from __future__ import annotations

from dataclasses import replace

from tiletraffic.gpu.devices.device import DeviceInfo
from tiletraffic.gpu.devices.nearest_model import QUERIES, nearest_model, transferred_model
from tiletraffic.simulator.model.datasheet import Datasheet
from tiletraffic.simulator.model.device_model import (DEVICE_MODELS, GENERIC_GPU_MODEL,
                                                      DeviceModel, ValueSource)

KNOWN_NAMES = {"h200": "nvidia-h200"}
"""Substring of an OpenCL device name -> built-in model of :data:`DEVICE_MODELS`."""

__all__ = ["KNOWN_NAMES", "QUERIES", "built_in_name_for", "model_from_opencl",
           "model_describes_device", "model_fit_meta"]


def built_in_name_for(device_name: str) -> str | None:
    """The built-in model whose ``KNOWN_NAMES`` part is in ``device_name`` (case-insensitive),
    or None."""
    return next((name for part, name in KNOWN_NAMES.items() if part in device_name.lower()),
                None)


def model_from_opencl(info: DeviceInfo, global_cache_bytes: int | None = None,
                      base: DeviceModel | None = None,
                      datasheet: Datasheet | None = None) -> DeviceModel:
    """A :class:`DeviceModel` for the OpenCL device ``info``.

    ``base``: the model to complete; default the built-in model whose name matches the
    device's (``KNOWN_NAMES``), else the nearest built-in model transferred to the device
    (``gpu.devices.nearest_model.nearest_model``: its documented sizes and rates replaced by
    ``datasheet``'s, or those of the shipped datasheet that fits the device's name, and by
    the queried ones), else the generic one; the model's ``description`` then says which
    model it started from and which values were replaced.

    Queried values (``CL_DEVICE_MAX_COMPUTE_UNITS``, ``CL_DEVICE_LOCAL_MEM_SIZE``,
    ``CL_DEVICE_MAX_WORK_GROUP_SIZE``; ``CL_DEVICE_GLOBAL_MEM_CACHE_SIZE`` as the L2 size
    when given, or, for a model not the device's own, answered; ``CL_DEVICE_MAX_CLOCK_
    FREQUENCY`` as the clock, for a model not the device's own) replace the model's, with
    source ``queried``, and are no longer counted as guesses. The device's own built-in
    model and a given ``base`` keep their name (``opencl:<device slug>`` for the generic
    model); a transferred model is named after the device (``info.slug``).

    Raises:
        DeviceModelError: a queried value is not positive (a broken driver).
    """
    known = built_in_name_for(info.device_name)
    if base is None and not known:
        return nearest_model(info, datasheet=datasheet, global_cache_bytes=global_cache_bytes)
    if base is not None:
        name = base.name if base is not GENERIC_GPU_MODEL else f"opencl:{info.slug}"
        return transferred_model(info, base, "given", datasheet, global_cache_bytes, name)
    base = DEVICE_MODELS[known]
    queried = {"compute_units": info.compute_units,
               "local_mem_bytes_per_work_group": info.local_mem_bytes,
               "max_work_group_size": info.max_work_group_size}
    if global_cache_bytes:
        queried["l2_bytes"] = global_cache_bytes
    note = f"{info.device_name} ({info.platform_name}, driver {info.driver_version})"
    model = base.with_values({k: (v, ValueSource("queried", QUERIES[k], note))
                              for k, v in queried.items()}, name=base.name)
    return replace(model, description=f"{info.device_name}: {', '.join(queried)} queried "
                   f"from OpenCL, every other value from its built-in model {base.name}.")


def model_describes_device(model: DeviceModel, info: DeviceInfo) -> tuple[bool, str]:
    """Whether ``model`` is a model of the device ``info`` itself, and a sentence saying why.

    It is when one of its values was measured on this device (``tiletraffic calibrate``: a
    ``measured`` value whose reference names ``info.device_name``) or when it is the built-in
    model of the device's name (:data:`KNOWN_NAMES`, also completed from OpenCL queries or
    calibrated), or when it is the nearest built-in model transferred to the device
    (``gpu.devices.nearest_model``: named after the device, its note in its description,
    also calibrated). Any other model (``generic-gpu``, the queried limits completed from it, or a
    GPU's model on another device) predicts times of the device it describes, not of this
    one: a report then shows no met / not-met verdicts for its times.
    """
    name = model.name.split("calibrated:", 1)[-1]
    measured = [k for k, s in model.value_sources.items() if s.kind == "measured"
                and info.device_name in model.references.get(s.ref, "")]
    if measured:
        return True, (f"`{model.name}`: {len(measured)} of its values were measured on "
                      f"{info.device_name} (tiletraffic calibrate)")
    known = built_in_name_for(info.device_name)
    if known and name.startswith(known):
        return True, f"`{model.name}` is the built-in model of {info.device_name}"
    if name == getattr(info, "slug", None) and "started from the built-in model" in \
            model.description:
        return True, (f"`{model.name}` is a built-in model transferred to this device: "
                      + model.description.split(": ", 1)[-1])
    what = ("it describes a GPU, and this device is not one" if not info.is_gpu else
            "no value of it was measured on this device and it is not this device's "
            "built-in model")
    if name.startswith("opencl:"):
        what = ("it is generic-gpu's GPU model completed with this device's OpenCL limits; "
                + what)
    return False, (f"`{model.name}` is not a model of {info.device_name}: {what}, so its "
                   "predicted times are another device's")


def model_fit_meta(model: DeviceModel, info: DeviceInfo) -> dict:
    """``model_describes_device`` and ``model_why`` (:func:`model_describes_device`) for the
    meta of a result measured on the device ``info``."""
    describes, why = model_describes_device(model, info)
    return {"model_describes_device": describes, "model_why": why}

