"""Device models from OpenCL device queries, completed from the documented table.

OpenCL exposes some of what the memory-system model needs (compute units, local memory,
work-group limits, global memory cache size and line) but not the rest (sectors, banks, L1
size, bandwidths). :func:`model_from_opencl` takes every value OpenCL reports and the rest
from the table entry of a known device (matched by name) or, failing that, from the generic
GPU model, whose values are guesses and warn (:class:`GuessedValueWarning`).
"""
from __future__ import annotations

from dataclasses import replace

from tiletraffic.gpu.device import DeviceInfo
from tiletraffic.simulator.device_model import DEVICE_MODELS, GENERIC_GPU_MODEL, DeviceModel

KNOWN_NAMES = {"h200": "nvidia-h200"}
"""Substring of an OpenCL device name -> table entry of :data:`DEVICE_MODELS`."""


def model_from_opencl(info: DeviceInfo, global_cache_bytes: int | None = None) -> DeviceModel:
    """A :class:`DeviceModel` for the OpenCL device ``info``.

    Queried values (``CL_DEVICE_MAX_COMPUTE_UNITS``, ``CL_DEVICE_LOCAL_MEM_SIZE``,
    ``CL_DEVICE_MAX_WORK_GROUP_SIZE``, and ``CL_DEVICE_GLOBAL_MEM_CACHE_SIZE`` as the L2 size
    when given) replace the table's and are no longer counted as guesses.
    """
    base = GENERIC_GPU_MODEL
    for part, name in KNOWN_NAMES.items():
        if part in info.device_name.lower():
            base = DEVICE_MODELS[name]
    queried = {"compute_units": info.compute_units,
               "local_mem_bytes_per_work_group": info.local_mem_bytes,
               "max_work_group_size": info.max_work_group_size}
    if global_cache_bytes:
        queried["l2_bytes"] = global_cache_bytes
    guessed = tuple(g for g in base.guessed if g not in queried)
    name = base.name if base is not GENERIC_GPU_MODEL else f"opencl:{info.slug}"
    return replace(base, name=name, guessed=guessed, **queried)
