"""Device models by name: the built-in ones and a user's model files.

The built-in models are TOML files shipped with the package
(``simulator/model/device_models/<name>.toml``: :data:`DEVICE_MODELS`); a user's model is a file of
the same shape (:mod:`simulator.model.device_model_file`; ``--device-model FILE``;
``tiletraffic device-model NAME`` prints one to start from). ``gpu.devices.device_models`` fills
one from OpenCL device queries where OpenCL exposes a value. The model's values and their
checks: :mod:`simulator.model.device_model_schema` (re-exported here).
"""
from __future__ import annotations

import os
from importlib import resources

from tiletraffic.simulator.model.device_model_file import (load_device_model,
                                                           parse_device_model,
                                                           read_device_model, to_toml)
from tiletraffic.simulator.model.device_model_schema import (ADDED_FIELDS, FULLY_ASSOCIATIVE,
                                                             SOURCE_KINDS, VALUE_FIELDS,
                                                             DeviceModel, DeviceModelError,
                                                             GuessedValueWarning, ValueSource,
                                                             bad_kind, check_value,
                                                             unknown_value)

BUILT_IN = ("nvidia-h200", "nvidia-h200-calibrated", "nvidia-h200-cuda", "generic-gpu")
"""Names of the models shipped in ``simulator/model/device_models/``."""


def built_in_file(name: str):
    """The packaged TOML file of the built-in model ``name`` (a Traversable; ``.read_text()``)."""
    return resources.files(__package__).joinpath("device_models", f"{name}.toml")


def _load_built_in(name: str) -> DeviceModel:
    model = read_device_model(built_in_file(name).read_text(encoding="utf-8"),
                              f"simulator/model/device_models/{name}.toml")
    if model.name != name:
        raise DeviceModelError(f"simulator/model/device_models/{name}.toml names itself "
                               f"{model.name!r}")
    return model


DEVICE_MODELS: dict[str, DeviceModel] = {name: _load_built_in(name) for name in BUILT_IN}
"""The built-in models by name."""

NVIDIA_H200 = DEVICE_MODELS["nvidia-h200"]
"""The H200 running the OpenCL build (what ``tiletraffic`` launches): scalar local loads."""

NVIDIA_H200_CUDA = DEVICE_MODELS["nvidia-h200-cuda"]
"""The same H200 running the CUDA build of the same source (NVRTC; what the Nsight Compute
counters were read from): 128-bit local loads."""

NVIDIA_H200_CALIBRATED = DEVICE_MODELS["nvidia-h200-calibrated"]
"""The H200 running the OpenCL build, with the values ``tiletraffic calibrate`` measured on
an H200 (bandwidths, FMA and issue rates, latencies, strided and barrier costs) in place of
the documented peaks; every other value is ``nvidia-h200``'s. The model to predict H200
times with."""

GENERIC_GPU_MODEL = DEVICE_MODELS["generic-gpu"]
"""A mid-range GPU with NVIDIA's granularities (32-wide sub-groups, 32-byte sectors, 32
banks); every size and rate is a guess and warns."""


class UnknownDeviceModel(DeviceModelError, KeyError):
    """A device model that is neither a built-in name nor an existing file: a
    :class:`DeviceModelError` (a ValueError) and, for callers that look a name up, a
    KeyError; its message is the plain sentence (not quoted as a KeyError's is)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def device_model(name_or_path: str | os.PathLike | DeviceModel) -> DeviceModel:
    """The built-in model called ``name_or_path``, else the model in that file.

    A :class:`DeviceModel` is returned as it is.

    Raises:
        UnknownDeviceModel (a DeviceModelError and a KeyError): neither a built-in name nor
            an existing file (the message names it and lists the built-in models).
        DeviceModelError: the file is not a valid model (see :func:`load_device_model`), or
            ``name_or_path`` is neither a text, a path nor a DeviceModel.
    """
    if isinstance(name_or_path, DeviceModel):
        return name_or_path
    if not isinstance(name_or_path, (str, os.PathLike)):
        raise DeviceModelError(f"a device model is a built-in name ({', '.join(DEVICE_MODELS)}), "
                               f"the path of a model file or a DeviceModel (got a value of "
                               f"type {type(name_or_path).__name__})")
    if str(name_or_path) in DEVICE_MODELS:
        return DEVICE_MODELS[str(name_or_path)]
    if os.path.isfile(name_or_path):
        return load_device_model(name_or_path)
    raise UnknownDeviceModel(f"unknown device model \"{name_or_path}\": neither a built-in "
                             f"model nor a file; built-in: {', '.join(DEVICE_MODELS)}")

