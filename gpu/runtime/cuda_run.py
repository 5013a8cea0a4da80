"""Run a CUDA kernel's own source on an NVIDIA GPU: compiled by NVRTC through CuPy (the
optional extra ``pip install -e ".[cuda]"``), launched with the launch file's grid, block,
dynamic shared memory and template arguments, every launch's output checked against the
float64 reference with the tolerance of the counted sum length, and timed with CUDA events.

Only the file's device code is compiled (host functions such as ``main`` are blanked by the
front end, keeping line numbers); ``nvrtc_include/`` beside this module answers the system
headers such files include (``<cstdio>``, ``<cassert>``, ...) for NVRTC, and the CUDA
toolkit's include folders (:func:`cuda_toolkit_include_folders`) come last, for the toolkit
headers CuPy's own folder lacks. Where CuPy or an NVIDIA GPU is missing, :func:`nvrtc_problem` says so in one line, and ``run`` launches the
schedule's generated OpenCL C instead.

Errors: :class:`~tiletraffic.gpu.devices.device.TiletrafficGpuError` for a failed
compilation or launch, :class:`~tiletraffic.gpu.runtime.launch.ResultMismatchError` for a
result outside its tolerance (naming the launch).
"""
from __future__ import annotations

import statistics
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tiletraffic.gpu.devices.device import TiletrafficGpuError
from tiletraffic.gpu.runtime.launch import ResultMismatchError, check_result
from tiletraffic.simulator.engine.reference import references
from tiletraffic.simulator.engine.data_inputs import random_inputs
from tiletraffic.simulator.ir.nodes import Schedule

NVRTC_INCLUDE = Path(__file__).with_name("nvrtc_include")
"""The system headers NVRTC is given for a CUDA file's includes."""

CUDA_INCLUDE_VARIABLE = "TILETRAFFIC_CUDA_INCLUDE"
"""The environment variable naming the CUDA toolkit include folders NVRTC is given
(separated by ``os.pathsep``), instead of those :func:`cuda_toolkit_include_folders` finds."""

TOOLKIT_HEADER = "cuda_runtime_api.h"
"""A header every CUDA toolkit include folder holds: a folder found without it is skipped."""


def cuda_toolkit_include_folders(environ=None) -> tuple[Path, ...]:
    """The CUDA toolkit include folders NVRTC is given after every other include folder,
    where it finds the toolkit headers that CuPy's own include folder lacks (CUDA 13's
    wheels hold ``mma.h`` but not the ``crt/mma.h`` it includes).

    ``environ`` (default ``os.environ``): where ``TILETRAFFIC_CUDA_INCLUDE`` is set, the
    folders it names, in its order; else each of ``$CUDA_PATH/include``,
    ``$CUDA_HOME/include``, ``/usr/local/cuda/include`` and the ``include`` folders of the
    installed NVIDIA CUDA wheels (``site-packages/nvidia/*/include``) that holds
    ``cuda_runtime_api.h``, without repeats; none found: ``()``.

    Raises:
        TiletrafficGpuError: ``TILETRAFFIC_CUDA_INCLUDE`` names a path that is not a folder.
    """
    environ = os.environ if environ is None else environ
    named = environ.get(CUDA_INCLUDE_VARIABLE)
    if named:
        folders = tuple(Path(f) for f in named.split(os.pathsep) if f)
        for folder in folders:
            if not folder.is_dir():
                raise TiletrafficGpuError(f"{CUDA_INCLUDE_VARIABLE} names {folder}, which is "
                                          "not a folder (the CUDA toolkit's include folder, "
                                          "the one holding crt/, is expected)")
        return folders
    candidates = [Path(environ[v]) / "include" for v in ("CUDA_PATH", "CUDA_HOME")
                  if environ.get(v)]
    candidates.append(Path("/usr/local/cuda/include"))
    candidates += nvidia_wheel_include_folders()
    found = []
    for folder in candidates:
        if (folder / TOOLKIT_HEADER).is_file() and folder.resolve() not in found:
            found.append(folder.resolve())
    return tuple(found)


def nvidia_wheel_include_folders() -> list[Path]:
    """The ``include`` folders of the installed NVIDIA wheels (``nvidia/*/include`` of the
    ``nvidia`` namespace package), sorted; none: ``[]``."""
    import importlib.util
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return []
    roots = list(spec.submodule_search_locations or []) if spec else []
    return sorted(p for root in roots for p in Path(root).glob("*/include") if p.is_dir())


def is_cuda_schedule(schedule) -> bool:
    """Whether ``schedule`` was read from a CUDA source (its ``extra["cuda"]``)."""
    return "cuda" in (getattr(schedule, "extra", None) or {})


def nvrtc_problem() -> str | None:
    """Why a CUDA source cannot be compiled and launched here (CuPy is not installed, or no
    NVIDIA GPU is visible), one line; ``None`` where it can."""
    try:
        import cupy
    except ImportError:
        return "CuPy is not installed (pip install -e \".[cuda]\")"
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no NVIDIA GPU is visible"
    except Exception as err:    # CUDA's runtime raises its own error types
        return f"no NVIDIA GPU is usable ({err})"
    return None


@dataclass(frozen=True)
class CudaRun:
    """A checked, timed run of a CUDA source.

    Attributes:
        kernel: the kernel's name as compiled (``sgemm<32, 8>`` for a template).
        device: the GPU's name.
        grid, block: the launch (x first); shared_bytes: its dynamic shared memory.
        times_s: the time of each timed launch (CUDA events), in seconds.
        checks: the result check of each output, of the last launch.
    """

    kernel: str
    device: str
    grid: tuple
    block: tuple
    shared_bytes: int
    times_s: tuple
    checks: dict

    @property
    def median_s(self) -> float:
        return statistics.median(self.times_s)

    def to_dict(self) -> dict:
        return {"kernel": self.kernel, "device": self.device, "grid": list(self.grid),
                "block": list(self.block), "shared_bytes": self.shared_bytes,
                "times_s": list(self.times_s), "median_s": self.median_s,
                "checks": {k: bool(v.ok) for k, v in self.checks.items()}}


def kernel_expression(cuda: dict) -> str:
    """The name NVRTC looks the kernel up by: its name, with its template arguments
    (``sgemm<32, 8, true>``) for a template."""
    values = cuda.get("template") or {}
    if not values:
        return cuda["kernel"]
    return f"{cuda['kernel']}<{', '.join(template_argument(v) for v in values.values())}>"


def template_argument(value) -> str:
    """A template argument as C++ writes it: ``true``/``false`` for a bool, else its text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


SCALAR_TYPES = {"int": np.int32, "uint": np.uint32, "long": np.int64, "ulong": np.uint64,
                "float": np.float32}
"""The numpy type a scalar kernel argument of each kind is passed as."""


def nvrtc_options(cuda: dict, headers_root: Path | None = None,
                  toolkit_includes=None) -> tuple[str, ...]:
    """NVRTC's options for a schedule's ``extra["cuda"]``: C++17, the system headers of
    :data:`NVRTC_INCLUDE`, the launch's ``-D``/``-U``/``-I`` options and the source's folder,
    then the CUDA toolkit include folders (``toolkit_includes``, default
    :func:`cuda_toolkit_include_folders`), last; with ``headers_root`` (where
    :func:`write_device_headers` wrote the project headers' device text), each include
    folder's copy there first, so that NVRTC reads those.

    Raises:
        TiletrafficGpuError: ``TILETRAFFIC_CUDA_INCLUDE`` names a path that is not a folder.
    """
    includes = [o for o in cuda["build_options"] if o.startswith("-I")]
    parent = Path(cuda["path"]).parent
    if parent.is_dir():
        includes.append(f"-I{parent.resolve()}")
    mirrored = []
    if headers_root is not None:
        for option in includes:
            folder = Path(option[2:].strip()).resolve()
            mirrored.append(f"-I{headers_root / folder.relative_to(folder.anchor)}")
    if toolkit_includes is None:
        toolkit_includes = cuda_toolkit_include_folders()
    return ("-std=c++17", *mirrored, f"-I{NVRTC_INCLUDE}",
            *(o for o in cuda["build_options"] if o.startswith(("-D", "-U"))), *includes,
            *(f"-I{folder}" for folder in toolkit_includes))


def missing_header_note(log: str, toolkit_includes) -> str:
    """What to do where NVRTC's ``log`` says it could not open a header file: the toolkit
    include folders it was given, or that none was found and how to name one; ``""`` for any
    other log."""
    if "cannot open source file" not in log:
        return ""
    if toolkit_includes:
        return ("; the CUDA toolkit include folders given to NVRTC ("
                f"{', '.join(str(f) for f in toolkit_includes)}) do not hold it either: name "
                f"the one that does in {CUDA_INCLUDE_VARIABLE}")
    return (f"; no CUDA toolkit include folder was found (none holding {TOOLKIT_HEADER} in "
            "$CUDA_PATH/include, $CUDA_HOME/include, /usr/local/cuda/include or an NVIDIA "
            f"wheel): name the toolkit's include folder in {CUDA_INCLUDE_VARIABLE}")


def write_device_headers(cuda: dict, root: Path) -> Path | None:
    """Write the device text of the project headers of a schedule's ``extra["cuda"]``
    (``device_headers``: resolved path -> text) under ``root`` at their own paths; the root,
    or None where there are none."""
    headers = cuda.get("device_headers") or {}
    for name, text in headers.items():
        path = Path(name)
        target = root / path.relative_to(path.anchor)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return root if headers else None


def compile_kernel(cuda: dict):
    """The CuPy function of the kernel of a schedule's ``extra["cuda"]``, compiled by NVRTC
    from the source's device text and its project headers' (:mod:`tiletraffic.frontend.cuda.
    device_text`).

    Raises:
        TiletrafficGpuError: NVRTC refuses the source (its log in the message; for a header
            it cannot open, the toolkit include folders it was given), or
            ``TILETRAFFIC_CUDA_INCLUDE`` names a path that is not a folder.
    """
    import tempfile

    import cupy
    name = kernel_expression(cuda)
    toolkit = cuda_toolkit_include_folders()
    with tempfile.TemporaryDirectory(prefix="tiletraffic-nvrtc-") as folder:
        options = nvrtc_options(cuda, write_device_headers(cuda, Path(folder)), toolkit)
        try:
            module = cupy.RawModule(code=cuda["device_source"], options=options,
                                    name_expressions=(name,))
            return module.get_function(name), name
        except Exception as err:     # NVRTC's and the driver's errors
            raise TiletrafficGpuError(f"{cuda['path']}: NVRTC could not compile {name}: "
                                      f"{err}{missing_header_note(str(err), toolkit)}"
                                      ) from None


def run_cuda_source(schedule: Schedule, *, repeat: int = 10, warmup: int = 2,
                    rng: np.random.Generator | None = None, reference_fn=None,
                    inputs: str = "normal", launch_check=None) -> CudaRun:
    """Check the launch in the simulator first (``launch_check``, a
    :class:`~tiletraffic.simulator.engine.launch_check.LaunchCheck` of this schedule, is
    made here when not given), then compile the schedule's own CUDA source with NVRTC,
    launch it ``warmup`` times untimed and ``repeat`` times timed, check the first and last
    launch's outputs against the float64 reference (the tolerance of the launch file's
    ``reference.terms``, else of the sum length the check counted), and return the run.

    Raises:
        ValueError: the schedule was not read from a CUDA source.
        UnsafeLaunchError: the check before launch found hazards (nothing launched).
        TiletrafficGpuError: NVRTC or the launch fails.
        ResultMismatchError: a launch's output is outside its tolerance.
    """
    if not is_cuda_schedule(schedule):
        raise ValueError(f"{schedule.family}: not a schedule read from a CUDA source")
    problem = nvrtc_problem()
    if problem is not None:
        raise TiletrafficGpuError(f"{schedule.family}: its CUDA source cannot be launched "
                                  f"here: {problem}")
    import cupy
    from tiletraffic.gpu.runtime.checked_run import UnsafeLaunchError
    from tiletraffic.simulator.engine.launch_check import check_launch
    cuda = schedule.extra["cuda"]
    rng = rng if rng is not None else np.random.default_rng()
    checked = launch_check if launch_check is not None else check_launch(schedule, rng=rng)
    if checked.hazards:
        raise UnsafeLaunchError(checked)
    host = random_inputs(schedule, rng, inputs)
    refs = references(schedule, {k: v.astype(np.float64) for k, v in host.items()},
                      reference_fn, sum_length=checked.sum_length)
    function, name = compile_kernel(cuda)
    params = dict(schedule.params)
    device = {}
    for a in schedule.arrays:
        shape = [params[s] for s in a.shape]
        device[a.name] = cupy.asarray(host[a.name]) if a.name in host else \
            cupy.full(shape, np.nan, dtype=np.float32)
    args = []
    for arg in cuda["args"]:
        argname, kind = arg[0], arg[1]
        if kind.startswith("global"):
            args.append(device[argname])
        elif kind == "null":
            args.append(np.uint64(0))           # a null pointer argument
        else:
            args.append(SCALAR_TYPES.get(kind, np.float32)(params[argname]))
    grid, block = tuple(cuda["grid"]), tuple(cuda["block"])
    shared = int(cuda.get("shared_bytes") or 0)
    times, checks = [], {}
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    total = warmup + repeat
    for launch in range(total):
        for a in schedule.arrays:     # every launch starts from the same inputs
            if a.is_output and a.name in host:
                device[a.name][...] = cupy.asarray(host[a.name])
        try:
            start.record()
            function(grid, block, tuple(args), shared_mem=shared)
            stop.record()
            stop.synchronize()
        except Exception as err:
            raise TiletrafficGpuError(f"{cuda['path']}: launch {launch + 1} of {name} "
                                      f"failed: {err}") from None
        if launch >= warmup:
            times.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3)
        if launch in (0, total - 1):
            for ref in refs:
                actual = cupy.asnumpy(device[ref.output]).reshape(ref.value.shape)
                check = check_result(actual, ref.value, ref.k, ref.abs_product,
                                     ref.error_bound, ref.stored_half)
                if not check.ok:
                    raise ResultMismatchError(
                        f"{name}: launch {launch + 1}: output {ref.output} differs from the "
                        f"reference beyond its tolerance ({check.max_abs_error:.3g} > "
                        f"{check.max_allowed:.3g})", launch, check)
                checks[ref.output] = check
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    gpu = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return CudaRun(name, gpu, grid, block, shared, tuple(times), checks)


def describe(run: CudaRun) -> str:
    """One line of a CUDA run: kernel, device, launch, median time, check."""
    outputs = ", ".join(f"{k} ok" for k in run.checks)
    return (f"{run.kernel} on {run.device} (its own CUDA source, NVRTC): grid {run.grid}, "
            f"block {run.block}, shared {run.shared_bytes} B: median "
            f"{run.median_s * 1e6:.1f} us over {len(run.times_s)} launches; {outputs}")

