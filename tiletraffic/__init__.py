"""tiletraffic: count, predict and measure the memory traffic of matrix kernels.

The library surface in one place. A *schedule* (`Schedule`, the IR of
`tiletraffic.simulator.ir.nodes`) describes one OpenCL kernel: its NDRange, work-group
size, global and local arrays and its body; a `KernelSequence` is several launched
in order (`gemm-split-k`: partial products, then their sum). Every function here takes
either:

>>> import tiletraffic as tt
>>> sch = tt.build("gemm-tiled", m=64, k=64, n=64, tile=16)
>>> tt.simulate(sch, compute_values=False).counts.global_load_elems
16384
>>> tt.closed_form(sch)["global_load_elems"]
16384

- `build` a named schedule family (`gemm-naive`, `gemm-tiled`, `matvec-*`), demo
  or known-faulty variant; or write your own with the IR (`Schedule`, `For`,
  `GlobalArray`, ...; the tutorial (docs/tutorial.md) builds a rectangular-tile GEMM in
  `examples/rect_tile_gemm.py`) and load it with `build("file.py:function", m=..)`
  (`tiletraffic.frontend.user_schedule`);
- `simulate` it (exact counts, optional values), `check` it for hazards,
  `model` its memory system and time on a device model (`device_model`);
- `explain` it: one web page drawing its tiles over time, reuse, coalescing, banks,
  hazards and time terms;
- `generate` its OpenCL C, `run` it on an OpenCL device (PoCL without a GPU),
  `closed_form` its counts (a `ClosedForm`: at its sizes, and as piecewise
  quasi-polynomials of the sizes derived from the IR for any affine kernel, yours too);
- `tune` a GEMM: rank a declared parameter space by the model, measure the best;
  `tune_kernel` the macros of your own OpenCL kernel the same way;
- `from_opencl`: an OpenCL C kernel of yours as a schedule (or
  `build("kernel.toml")` with a launch file); `from_cuda` the same for a CUDA kernel,
  which `run` runs as its generated OpenCL C and `run_cuda` from its own source on an
  NVIDIA GPU (NVRTC through CuPy); `from_glsl`: a GLSL compute shader of yours,
  dispatched as `vkCmdDispatch` (or `build("shader.toml")`).
- `validate` the model on a device (every family, predicted against measured), with
  predictions pre-registered by `write_predictions`;
- `crosscheck` it against Oclgrind, `report` the main job's report of a device,
  `calibrate` a device model (`device_model_of` a device without one: the nearest
  built-in model with its datasheet's and queried values), and list the OpenCL `devices`: each does what the command of
  the same name does.

`import tiletraffic` and `import tiletraffic.simulator` load numpy only; pyopencl is
imported when `run` (or `tiletraffic.gpu.runtime.launch`) is first used.
"""
from __future__ import annotations

from pathlib import Path as _Path

del annotations   # the compiler directive above stays; the name is no part of the API

# Installed (pip install . or -e .), the subpackages come from the top-level folders through
# setuptools' package-dir. Imported straight from a checkout (PYTHONPATH=checkout, as on a
# machine where nothing can be installed), find them beside this folder.
_SOURCE_TREE = _Path(__file__).resolve().parent.parent
if (_SOURCE_TREE / "simulator" / "ir" / "nodes.py").is_file() and \
        (_SOURCE_TREE / "pyproject.toml").is_file():
    __path__.append(str(_SOURCE_TREE))  # noqa: F821 (the package's own __path__)

from tiletraffic.simulator.engine.limits import (GENERIC_GPU, UNLIMITED, DeviceLimits,
                                                 LimitError)
from tiletraffic.simulator.model.device_model import (DEVICE_MODELS, DeviceModel,
                                                      DeviceModelError, device_model)
from tiletraffic.simulator.engine.simulation import InputError, SimulationResult
from tiletraffic.simulator.ir.sequence import KernelSequence
from tiletraffic.simulator.model.sequence_run import ModelledSequence, SequenceResult, simulate
from tiletraffic.simulator.observers.hazards import Hazard, HazardError
from tiletraffic.simulator.ir.nodes import (Accumulate, Assign, Barrier, Const, DeclareFloat,
                                            DeclarePrivateArray, For, GlobalArray, If, Let,
                                            LocalArray, Param, PrivateArray, Return, Schedule,
                                            Var, accumulate_elem, assign_elem, FCall, FNeg,
                                            IntLoad, IntSelect, Select, block, int_select, ceil_div, exp, fabs, fmax, fmin,
                                            global_id, group_id, local_id, minimum, select,
                                            sqrt, store, vload, vstore)
from tiletraffic.simulator.kernels.families import FAMILIES, SEQUENCE_FAMILIES, ScheduleError
from tiletraffic.simulator.engine.accelerators import Accelerators, NotApplicable
from tiletraffic.simulator.model.launch import ModelledLaunch
from tiletraffic.simulator.model.prediction import TrafficPrediction

from tiletraffic.analysis.api import package_version as _package_version
from tiletraffic.analysis.api.schedules import (build, closed_form, from_cuda, from_glsl,
                                                from_opencl, generate)
from tiletraffic.analysis.api.closed_forms import ClosedForm
from tiletraffic.analysis.api.tuning import tune, tune_kernel
from tiletraffic.analysis.api.simulation import check, crosscheck, explain, model
from tiletraffic.analysis.api.device import (calibrate, device_model_of, devices, report, run,
                                             run_cuda)
from tiletraffic.simulator.model.datasheet import DATASHEETS, Datasheet, load_datasheet
from tiletraffic.analysis.api.validation import validate, validation_cases, write_predictions

__version__ = _package_version()


def __getattr__(name: str):
    """`AmbiguousDeviceWarning` (warned when a `device` text matches several OpenCL
    devices), imported from `tiletraffic.gpu.devices.device` on first use so that importing
    tiletraffic does not load pyopencl."""
    if name == "AmbiguousDeviceWarning":
        from tiletraffic.gpu.devices.device import AmbiguousDeviceWarning

        return AmbiguousDeviceWarning
    raise AttributeError(f"module 'tiletraffic' has no attribute {name!r}")


__all__ = [
    "build", "from_opencl", "from_cuda", "from_glsl", "simulate", "check", "model", "explain",
    "generate", "run", "run_cuda",
    "closed_form", "ClosedForm", "crosscheck", "devices", "report", "tune", "tune_kernel",
    "calibrate", "device_model_of", "Datasheet", "DATASHEETS", "load_datasheet",
    "validate", "write_predictions", "validation_cases",
    "Schedule", "GlobalArray", "LocalArray", "Param", "Var", "Const", "For", "If", "Let",
    "Barrier", "Return", "DeclareFloat", "Assign", "Accumulate", "store", "block",
    "ceil_div", "minimum", "global_id", "local_id", "group_id",
    "vload", "vstore", "PrivateArray", "DeclarePrivateArray", "assign_elem", "accumulate_elem",
    "FCall", "FNeg", "Select", "fmax", "fmin", "fabs", "sqrt", "exp", "select",
    "IntSelect", "int_select", "IntLoad",
    "DeviceModel", "DEVICE_MODELS", "device_model", "DeviceModelError", "DeviceLimits",
    "GENERIC_GPU", "UNLIMITED",
    "FAMILIES", "SEQUENCE_FAMILIES", "KernelSequence", "SimulationResult", "SequenceResult",
    "ModelledLaunch", "ModelledSequence", "TrafficPrediction", "Hazard",
    "ScheduleError", "LimitError", "InputError", "HazardError", "AmbiguousDeviceWarning",
    "Accelerators", "NotApplicable",
    "__version__",
]


def __dir__() -> list[str]:
    """The public names (`__all__`) and the module's own dunder attributes: what `dir()`
    and completion offer, without the imported subpackages and helpers."""
    return sorted({*__all__, "__doc__", "__file__", "__name__", "__path__", "__spec__"})
