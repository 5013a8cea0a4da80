"""Build, validate, launch and time a :class:`~gpu.codegen.kernel.GeneratedKernel`; check its result.

Typical use::

    target = select_device()                      # PYOPENCL_CTX, else GPU, else PoCL CPU
    result = run_kernel(target, kernel, {"A": a, "B": b, "C": np.empty((m, n), np.float32)},
                        {"M": m, "K": k, "N": n})
    ref, abs_prod = reference_product(a, b)
    check_result(result.outputs["C"], ref, k, abs_prod).raise_if_bad("C")

Device choice lives in :mod:`gpu.devices.device`, the tolerance in :mod:`simulator.engine.tolerance`; both
are re-exported here.
Times are seconds, taken from OpenCL profiling events (``CL_PROFILING_COMMAND_END -
CL_PROFILING_COMMAND_START``), so they cover the kernel execution only, not the
Python launch overhead or transfers. Where the device gives no profiling information, host
wall times are taken instead, with a :class:`ProfilingUnavailableWarning` that says so.
Every launch's output is read back and fingerprinted (outside the timed interval), so a
wrong launch anywhere is caught, not only the last (see :func:`run_kernel`).
"""
from __future__ import annotations

import dataclasses
import re
import time
import warnings
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import pyopencl as cl

from tiletraffic.gpu.devices.device import (POCL_INSTALL_HINT, DeviceError,
                                            ProfilingUnavailableWarning, DeviceInfo,
                                            DeviceLimits, Target, TiletrafficGpuError,
                                            list_devices, select_device)
from tiletraffic.gpu.runtime import guard_zones as guard
from tiletraffic.gpu.codegen.kernel import GeneratedKernel
from tiletraffic.gpu.runtime.ptx import PtxError, with_directives
from tiletraffic.gpu.devices.kernel_resources import (NV_VERBOSE, BuildLogError,
                                                      KernelResources, is_nvidia_platform,
                                                      parse_ptxas_log)
from tiletraffic.simulator.engine import tolerance as _tolerance
from tiletraffic.simulator.engine.limits import launch_limit_problems
from tiletraffic.simulator.engine.reference import reference_product  # re-exported
from tiletraffic.simulator.engine.tolerance import (PROBABILISTIC_LAMBDA, UNIT_ROUNDOFF_F32,
                                                    error_factor)
from tiletraffic.simulator.ir.nodes import ndrange_problems
from tiletraffic.simulator.engine.unwritten import unwritten_fill

from tiletraffic.gpu.runtime.launch_counts import MIN_REPEAT, check_launch_counts  # their limits

__all__ = [
    "POCL_INSTALL_HINT", "DeviceError", "DeviceInfo", "DeviceLimits", "Target", "TiletrafficGpuError",
    "list_devices", "select_device", "KernelBuildError", "LaunchConfigError",
    "RegisterBudgetError", "check_register_budget", "LaunchError",
    "ResultMismatchError", "BuildResult", "build_program", "check_launch_limits", "RunResult",
    "run_kernel", "CheckResult", "check_result", "reference_product", "MIN_REPEAT", "UNIT_ROUNDOFF_F32",
    "LAUNCH_INDEX_ARG", "ProfilingUnavailableWarning", "queue_has_profiling",
    "PROBABILISTIC_LAMBDA", "error_factor", "KernelResources", "build_options",
    "kernel_resources",
]


class KernelBuildError(TiletrafficGpuError):
    """``clBuildProgram`` failed, or the program lacks the named kernel.

    Attributes:
        log: the compiler's build log (as reported through pyopencl).
    """

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


class RegisterBudgetError(TiletrafficGpuError, ValueError):
    """A register budget (``max_registers``) asked of a platform that offers none."""


class LaunchConfigError(TiletrafficGpuError, ValueError):
    """The launch geometry or local memory does not fit the device or kernel; nothing was launched."""


class LaunchError(TiletrafficGpuError):
    """OpenCL reported an error while creating buffers, launching or reading back."""


# ---------------------------------------------------------------- build cache


@dataclass(frozen=True)
class BuildResult:
    """A built program.

    Attributes:
        program: the built ``pyopencl.Program``.
        build_time_s: wall time of this build call in seconds; 0.0 on a cache hit.
        cached: True when the program came from the target's in-memory cache.
        log: the compiler's build log ("" when the compiler printed nothing).
        how: pyopencl's description of the build (e.g. ``"cache retrieval"``
            when pyopencl's on-disk binary cache supplied it), or "".
    """

    program: Any
    build_time_s: float
    cached: bool
    log: str = ""
    how: str = ""


def _log_from_error(err: Exception) -> str:
    """The compiler log inside pyopencl's BUILD_PROGRAM_FAILURE message (whole message if unparsable)."""
    text = str(err)
    found = re.search(r"Build on [^\n]*:\n\n(.*?)\n\n\(options:", text, flags=re.DOTALL)
    return found.group(1).strip() if found else text


def build_program(target: Target, source: str, options: tuple[str, ...] | list[str] = (),
                  max_registers: int | None = None) -> BuildResult:
    """Build ``source`` with ``options`` for ``target``, memoized per target (= per context).

    A second call with the same ``(source, options, max_registers)`` on the same target
    returns the cached program with ``cached=True`` and ``build_time_s == 0.0``.

    ``max_registers``: a register budget per work-item. NVIDIA's OpenCL compiler takes none
    among its options, so the program is built from source, its PTX (the driver's program
    binary) gets ``.maxnreg max_registers`` on every kernel entry (:mod:`gpu.runtime.ptx`) and is
    built again from that PTX with the same options (``build_time_s`` covers both builds).

    Raises:
        KernelBuildError: the build failed; ``.log`` holds the compiler's log.
        RegisterBudgetError: ``max_registers`` on a platform other than NVIDIA's OpenCL.
    """
    key = (source, tuple(options)) if max_registers is None else \
        (source, tuple(options), max_registers)
    hit = target.program_cache.get(key)
    if hit is not None:
        return BuildResult(hit.program, 0.0, True, hit.log, hit.how)
    if max_registers is not None:
        check_register_budget(target, max_registers)
    start = time.perf_counter()
    program = _build(target, cl.Program(target.context, source), options)
    how = ""
    if max_registers is not None:
        ptx = program.get_info(cl.program_info.BINARIES)[0].decode(errors="replace")
        try:
            for name in program.get_info(cl.program_info.KERNEL_NAMES).split(";"):
                if name:
                    ptx = with_directives(ptx, name, (f".maxnreg {max_registers}",))
        except PtxError as err:
            raise KernelBuildError(f"register budget on {target.name}: {err}") from err
        program = _build(target, cl.Program(target.context, [target.device], [ptx.encode()]),
                         options)
        how = f"from its PTX with .maxnreg {max_registers}"
    elapsed = time.perf_counter() - start
    try:
        log = program.get_build_info(target.device, cl.program_build_info.LOG).strip()
    except cl.Error:
        log = ""
    if not how:
        info = getattr(program, "_build_duration_info", None)  # pyopencl internal, best effort
        how = info[0] if isinstance(info, tuple) and info and isinstance(info[0], str) else ""
    result = BuildResult(program, elapsed, False, log, how)
    target.program_cache[key] = result
    return result


def check_register_budget(target: Target, max_registers: int,
                          name: str = "max_registers =") -> None:
    """Refuse a register budget on a platform that takes none.

    Raises:
        RegisterBudgetError: ``target`` is not on NVIDIA's OpenCL platform (the message
            names the budget as ``name`` and its value, and the platform).
    """
    if not is_nvidia_platform(target.info.platform_name):
        raise RegisterBudgetError(
            f"{name} {max_registers}: {target.info.platform_name} offers no register budget "
            "(NVIDIA's OpenCL only, through the PTX .maxnreg directive)")


def _build(target: Target, program, options):
    """``program.build(options)``; a failure as :class:`KernelBuildError` with its log."""
    try:
        return program.build(options=list(options))
    except cl.Error as err:
        log = _log_from_error(err)
        raise KernelBuildError(f"OpenCL build failed on {target.name}:\n{log}", log) from err


# ---------------------------------------------------------------- launch checks


def _sizes(sizes: tuple[int, ...]) -> str:
    return " x ".join(str(s) for s in sizes)


def check_launch_limits(
    kernel: GeneratedKernel,
    limits: DeviceLimits,
    kernel_max_work_group_size: int | None = None,
    required_local_size: tuple[int, ...] | None = None,
) -> None:
    """Refuse a launch that OpenCL would reject or that could not run, before launching it.

    Checks: 1 to len(max_work_item_sizes) dimensions, ``global_size`` and
    ``local_size`` of equal length; every ``global_size[d]`` a positive multiple
    of ``local_size[d] >= 1`` (:func:`simulator.ir.nodes.ndrange_problems`, the check
    every :class:`~simulator.ir.nodes.Schedule` passes at construction); and, with the
    simulator's own check (:func:`simulator.engine.limits.launch_limit_problems`, the same
    messages), ``local_size[d] <= limits.max_work_item_sizes[d]``;
    work-items per work-group ``<= limits.max_work_group_size`` and
    ``<= kernel_max_work_group_size`` (``CL_KERNEL_WORK_GROUP_SIZE``: registers and
    local memory of the compiled kernel may lower it; when the kernel was compiled for
    exactly this size with ``reqd_work_group_size``, a lower reported maximum only warns,
    since NVIDIA's driver reports 256 for kernels it runs at 1024); ``kernel.local_mem_bytes <=
    limits.local_mem_bytes``; and ``local_size`` equal to the kernel's
    ``reqd_work_group_size`` attribute when given (``required_local_size``,
    ``CL_KERNEL_COMPILE_WORK_GROUP_SIZE``; all zeros means none).

    Raises:
        LaunchConfigError: listing every violated limit, each with both numbers.
    """
    gsize, lsize = tuple(kernel.global_size), tuple(kernel.local_size)
    dims = len(limits.max_work_item_sizes)
    # the NDRange check the simulator's Schedule makes too (same words)
    problems: list[str] = ndrange_problems(gsize, lsize)
    if len(lsize) > dims:
        problems.append(f"{len(lsize)} NDRange dimensions, the device has {dims}")
    items = kernel.work_group_items
    compiled_for_it = (required_local_size is not None and
                       tuple(required_local_size) == lsize + (1,) * (3 - len(lsize)))
    if kernel_max_work_group_size is not None and compiled_for_it and \
            kernel_max_work_group_size < items <= limits.max_work_group_size:
        # The compiler accepted reqd_work_group_size for exactly this size, so the
        # reported maximum is advisory. NVIDIA's OpenCL driver reports 256 for every
        # kernel, yet runs 32 x 32 work-groups of kernels compiled for them (checked on
        # the H200: reports/nvidia-h200/h200_raw.json.gz, opencl_work_group_probe). The
        # result is still checked against numpy before any time counts.
        warnings.warn(
            f"{kernel.name}: work-group of {items} work-items exceeds the "
            f"CL_KERNEL_WORK_GROUP_SIZE of {kernel_max_work_group_size} reported on "
            f"{limits.name}, but the kernel was compiled for exactly {_sizes(lsize)} "
            "(reqd_work_group_size): launching", RuntimeWarning, stacklevel=2)
        kernel_max_work_group_size = None
    problems += launch_limit_problems(lsize, kernel.local_mem_bytes, limits,
                                      kernel_max_work_group_size)
    if required_local_size is not None and any(required_local_size):
        padded = lsize + (1,) * (len(required_local_size) - len(lsize))
        if padded != tuple(required_local_size):
            problems.append(
                f"local size ({_sizes(lsize)}) differs from the kernel's reqd_work_group_size "
                f"({_sizes(tuple(required_local_size))})"
            )
    if problems:
        raise LaunchConfigError(f"cannot launch {kernel.name!r}: " + "; ".join(problems))


# ---------------------------------------------------------------- launch and time


@dataclass(frozen=True)
class RunResult:
    """Outputs and timings of one :func:`run_kernel` call.

    Attributes:
        outputs: ``global_out`` / ``global_inout`` argument name -> float32 array of the
            last launch, shaped like the array passed in; elements the kernel never wrote
            hold the NaN ``simulator.engine.unwritten.UNWRITTEN_BITS``.
        kernel_name, schedule_name: from the kernel.
        build_time_s: seconds spent building (0.0 when ``build_cached``).
        build_cached: the program came from the target's program cache.
        kernel_times_s: execution time of each timed launch in seconds
            (``repeat`` values; warm-up launches excluded).
        median_s, min_s, max_s: statistics of ``kernel_times_s``.
        device_slug, device_name: the device it ran on.
        global_size, local_size: the NDRange launched (work-items).
        warmup: number of untimed launches before the timed ones.
        timing: ``"profiling"`` (OpenCL profiling events: kernel execution only) or
            ``"host"`` (wall time around launch and wait, launch overhead included; used,
            with a warning, where the device gives no profiling information).
        output_digests: CRC-32 of the outputs' bytes after each launch, warm-up included.
        distinct_outputs: different outputs among the launches (1 for a deterministic
            kernel; more means the kernel is nondeterministic).
        checked_launches: launches (0-based, warm-up included) whose outputs went through
            ``check_output``: the first, the last, and the first of every other distinct
            output.
        resources: registers, spills and memory of the compiled kernel as the driver
            reports them (:func:`kernel_resources`); registers ``None`` where it does not.
            For a sequence of kernels: the first kernel's (``kernel_resources``: each's);
            ``kernel_name`` the names joined by ``+``, ``global_size``/``local_size`` the
            first kernel's.
    """

    outputs: dict[str, np.ndarray]
    kernel_name: str
    schedule_name: str
    build_time_s: float
    build_cached: bool
    kernel_times_s: tuple[float, ...]
    median_s: float
    min_s: float
    max_s: float
    device_slug: str
    device_name: str
    global_size: tuple[int, ...]
    local_size: tuple[int, ...]
    warmup: int
    timing: str = "profiling"
    output_digests: tuple[int, ...] = ()
    distinct_outputs: int = 1
    checked_launches: tuple[int, ...] = ()
    resources: KernelResources | None = None
    kernel_resources: tuple[KernelResources | None, ...] = ()
    """Each kernel's resources, in launch order (one entry for one kernel)."""
    stores_outside: dict[str, int] | None = None
    """With ``guard_zones``: buffer name -> words the first launch stored into the zones
    around it (:mod:`gpu.runtime.guard_zones`; empty: none); None without guard zones."""

    @property
    def registers_per_work_item(self) -> int | None:
        """Registers per work-item of the compiled kernel where the driver reports them
        (NVIDIA: its ``-cl-nv-verbose`` build log), else None."""
        return self.resources.registers_per_work_item if self.resources else None

    def as_dict(self) -> dict:
        """JSON-ready summary (everything except ``outputs``)."""
        return {
            "kernel_name": self.kernel_name, "schedule_name": self.schedule_name,
            "build_time_s": self.build_time_s, "build_cached": self.build_cached,
            "kernel_times_s": list(self.kernel_times_s), "median_s": self.median_s,
            "min_s": self.min_s, "max_s": self.max_s, "device_slug": self.device_slug,
            "device_name": self.device_name, "global_size": list(self.global_size),
            "local_size": list(self.local_size), "warmup": self.warmup, "timing": self.timing,
            "output_digests": list(self.output_digests),
            "distinct_outputs": self.distinct_outputs,
            "checked_launches": list(self.checked_launches),
            "registers_per_work_item": self.registers_per_work_item,
            "kernel_resources": self.resources.to_dict() if self.resources else None,
            **({"registers_per_kernel": list(self.registers_per_kernel)}
               if len(self.kernel_resources) > 1 else {}),
            **({"stores_outside": dict(self.stores_outside)}
               if self.stores_outside is not None else {}),
        }

    @property
    def registers_per_kernel(self) -> tuple[int | None, ...]:
        """Registers per work-item of each kernel, in launch order."""
        return tuple(r.registers_per_work_item if r else None
                     for r in self.kernel_resources or (self.resources,))


LAUNCH_INDEX_ARG = "launch_index"
"""An ``int`` kernel argument of this name receives the number of the launch (0 for the
first warm-up launch) instead of a fixed value: a test hook for kernels whose result changes
between launches (``simulator.kernels.demos.zeros_in_one_launch``)."""

OUTPUT_KINDS = ("global_out", "global_inout")
"""Kernel argument kinds whose buffers are read back."""


def _check_arguments(kernel: GeneratedKernel, arrays: dict, scalars: dict) -> None:
    kinds = {a.name: a.kind for a in kernel.args}
    bad = [f"{a.name} ({a.kind})" for a in kernel.args
           if a.kind not in ("global_in", *OUTPUT_KINDS, "int")]
    if bad:
        raise ValueError(f"{kernel.name}: unknown argument kind for {', '.join(bad)}")
    want_arrays = {n for n, k in kinds.items() if k != "int"}
    want_scalars = {n for n, k in kinds.items() if k == "int"}
    for what, given, wanted in (("arrays", arrays, want_arrays), ("scalars", scalars, want_scalars)):
        missing, extra = wanted - set(given), set(given) - wanted
        if missing or extra:
            raise ValueError(
                f"{kernel.name}: {what} must be exactly {sorted(wanted)}; "
                f"missing {sorted(missing)}, unexpected {sorted(extra)}"
            )
    for name, array in arrays.items():
        if not isinstance(array, np.ndarray) or array.dtype != np.float32:
            got = array.dtype if isinstance(array, np.ndarray) else type(array).__name__
            raise TypeError(f"{kernel.name}: array {name!r} must be a numpy float32 array, got {got}")
        if not array.flags.c_contiguous:
            raise ValueError(f"{kernel.name}: array {name!r} must be C-contiguous (row-major); "
                             "pass np.ascontiguousarray(...)")
        if array.size == 0:
            raise ValueError(f"{kernel.name}: array {name!r} is empty; OpenCL buffers cannot be empty")
    for name, value in scalars.items():
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{kernel.name}: scalar {name!r} must be an int, got {type(value).__name__}")
        if not -(2**31) <= int(value) < 2**31:
            raise ValueError(f"{kernel.name}: scalar {name!r} = {value} does not fit a 32-bit int")


def queue_has_profiling(queue) -> bool:
    """True when ``queue`` was created with ``CL_QUEUE_PROFILING_ENABLE``."""
    try:
        props = queue.get_info(cl.command_queue_info.PROPERTIES)
    except (cl.Error, AttributeError):
        return False
    return bool(props & cl.command_queue_properties.PROFILING_ENABLE)


def _digest(outputs: dict[str, np.ndarray]) -> int:
    crc = 0
    for name in sorted(outputs):
        crc = zlib.crc32(memoryview(outputs[name]).cast("B"), crc)
    return crc


def _describe_launch(launch: int, warmup: int, total: int) -> str:
    if launch < warmup:
        return f"launch {launch + 1} of {total} (warm-up {launch + 1} of {warmup})"
    return (f"launch {launch + 1} of {total} (timed launch {launch - warmup + 1} of "
            f"{total - warmup})")


def build_kernel(target: Target, kernel: GeneratedKernel):
    """Build ``kernel`` on ``target`` with :func:`build_options` (into the target's program
    cache) and read what the driver reports of it: ``(cl.Kernel, BuildResult,
    KernelResources)``; nothing is launched.

    Raises:
        KernelBuildError: the build failed or the program lacks the kernel.
    """
    built = build_program(target, kernel.source, build_options(target, kernel),
                          kernel.max_registers)
    try:
        cl_kernel = cl.Kernel(built.program, kernel.name)
    except cl.Error as err:
        raise KernelBuildError(f"the program has no kernel named {kernel.name!r}: {err}",
                               built.log) from err
    return cl_kernel, built, kernel_resources(target, cl_kernel, kernel.name, built.log,
                                              built.how)


def run_kernel(
    target: Target,
    kernel: GeneratedKernel | Sequence[GeneratedKernel],
    arrays: dict[str, np.ndarray],
    scalars: dict[str, int],
    repeat: int = MIN_REPEAT,
    warmup: int = 2,
    check_output: Callable[[int, dict[str, np.ndarray]], None] | None = None,
    outputs: Sequence[str] | None = None,
    guard_zones: bool = False,
) -> RunResult:
    """Build (cached), validate, launch ``warmup + repeat`` times, time, check every launch.

    ``kernel`` is one kernel or a sequence of kernels (:mod:`simulator.ir.sequence`: split-K's
    two), launched in order on the target's in-order queue as one *launch*: they share the
    buffers of ``arrays`` by argument name (a buffer one kernel writes, another reads), and
    a launch's time runs from the first kernel's start to the last one's end.

    Every launch starts from the same state: before each one, the buffers some kernel
    writes are filled with the NaN ``simulator.engine.unwritten.UNWRITTEN_BITS`` (so an element a
    launch does not write shows as unwritten, whatever earlier launches left), or get their
    input back where the first kernel using them reads them (``global_inout``). After each
    launch the ``outputs`` are read back and their bytes' CRC-32 recorded
    (``output_digests``), outside the timed interval. ``check_output`` sees the outputs of
    the first launch, of the last, and of every launch whose output differs from all before
    it; it raises to refuse them. So a wrong launch anywhere -- a middle one that writes
    zeros -- is caught unless its CRC-32 equals a checked one (probability 2**-32), and no
    time of a wrong result is returned. Outputs that differ between launches but all pass
    ``check_output`` are reported (``distinct_outputs`` > 1, and a ``RuntimeWarning``): the
    kernel is nondeterministic.

    Args:
        target: from :func:`select_device`.
        kernel: the kernel and its NDRange, or the kernels in launch order.
        arrays: one float32 C-contiguous (row-major) array per ``global_in``,
            ``global_inout`` and ``global_out`` argument (of any kernel). Inputs are copied
            to the device; an output's array gives only its shape (contents ignored).
        scalars: one int (32-bit) per ``int`` argument; an argument named
            :data:`LAUNCH_INDEX_ARG` gets the launch number instead at each launch.
        repeat: timed launches, :data:`~tiletraffic.gpu.runtime.launch_counts.MIN_REPEAT` to
            :data:`~tiletraffic.gpu.runtime.launch_counts.MAX_REPEAT`.
        warmup: untimed launches first, at least 1 (the first launch includes
            just-in-time compilation and is never reported).
        check_output: ``check_output(launch, outputs)`` (launch 0-based, warm-up
            included; outputs by argument name, float32, shaped like ``arrays``); raises
            to refuse the launch's result. Without it, outputs that differ between launches
            raise :class:`ResultMismatchError` (nothing can tell which one is right).
        outputs: the written buffers to read back and fingerprint (default: every
            ``global_out``/``global_inout`` argument; a sequence passes its own outputs,
            leaving out its scratch buffers).
        guard_zones: give every buffer a zone before and after it (:mod:`gpu.runtime.guard_zones`)
            and count the first launch's stores into them (``stores_outside``; a refused
            result's message names them): for a launch the check found unsafe.

    Returns:
        RunResult with the outputs of the last launch and per-launch times in seconds from
        OpenCL profiling events; where the device gives no profiling information, host
        wall times with a :class:`ProfilingUnavailableWarning` (``timing == "host"``).

    Raises:
        ValueError: ``repeat`` or ``warmup`` too small, missing/unexpected
            arguments, non-contiguous or empty arrays, scalars out of range.
        TypeError: an array is not float32 or a scalar is not an int.
        KernelBuildError: the build failed or the kernel name is not in the source.
        LaunchConfigError: the launch does not fit device or kernel limits
            (see :func:`check_launch_limits`); nothing was launched.
        LaunchError: OpenCL failed during buffer creation, launch or read-back;
            no timing is returned.
        ResultMismatchError: outputs differ between launches and no ``check_output`` was
            given (what ``check_output`` raises passes through unchanged).
    """
    check_launch_counts(repeat, warmup)   # gpu.runtime.launch_counts: the limits of both
    kernels = [kernel] if isinstance(kernel, GeneratedKernel) else list(kernel)
    if not kernels:
        raise ValueError("run_kernel needs at least one kernel")
    for k in kernels:
        _check_arguments(k, {a.name: arrays[a.name] for a in k.args
                             if a.kind != "int" and a.name in arrays},
                         {a.name: scalars[a.name] for a in k.args
                          if a.kind == "int" and a.name in scalars})
    used = {a.name for k in kernels for a in k.args}
    extra = sorted((set(arrays) | set(scalars)) - used)
    if extra:
        raise ValueError(f"{'+'.join(k.name for k in kernels)}: unexpected arguments {extra}")

    built_kernels = []
    for k in kernels:
        cl_kernel, built, resources = build_kernel(target, k)
        info = cl.kernel_work_group_info
        kernel_max = int(cl_kernel.get_work_group_info(info.WORK_GROUP_SIZE, target.device))
        try:
            required = tuple(int(s) for s in cl_kernel.get_work_group_info(
                info.COMPILE_WORK_GROUP_SIZE, target.device))
        except cl.Error:
            required = None
        check_launch_limits(k, target.limits, kernel_max, required)
        if cl_kernel.num_args != len(k.args):
            raise LaunchConfigError(
                f"kernel {k.name!r} takes {cl_kernel.num_args} arguments but the "
                f"GeneratedKernel lists {len(k.args)}")
        built_kernels.append((k, cl_kernel, built, resources))

    first = kernels[0]
    name = "+".join(k.name for k in kernels)
    where = (f"kernel {first.name!r} (global {_sizes(first.global_size)}, local "
             f"{_sizes(first.local_size)}) on {target.name}" if len(kernels) == 1 else
             f"kernels {name!r} on {target.name}")
    total = warmup + repeat
    profiling = queue_has_profiling(target.queue)
    if not profiling:
        _warn_no_profiling(target, "its command queue was created without "
                                   "CL_QUEUE_PROFILING_ENABLE")
    kinds: dict[str, str] = {}
    for k in kernels:           # a buffer's kind: as the first kernel using it sees it
        for a in k.args:
            if a.kind != "int":
                kinds.setdefault(a.name, a.kind)
    written = [n for n in kinds if any(a.name == n and a.kind in OUTPUT_KINDS
                                       for k in kernels for a in k.args)]
    outs = list(outputs) if outputs is not None else written
    unknown = sorted(set(outs) - set(written))
    if unknown:
        raise ValueError(f"{name}: outputs {unknown} are not written by any kernel")
    fills = {n: (unwritten_fill(arrays[n].shape) if kinds[n] == "global_out" else arrays[n])
             for n in written}
    mf = cl.mem_flags
    buffers: dict[str, Any] = {}
    times: list[float] = []
    host_times: list[float] = []
    digests: list[int] = []
    checked: list[int] = []
    results: dict[str, np.ndarray] = {}
    guarded: dict[str, guard.GuardedBuffer] = {}
    outside: dict[str, int] | None = None
    align = _base_align_bytes(target) if guard_zones else 1
    try:
        for n, kind in kinds.items():
            if guard_zones:
                guarded[n] = guard.allocate(cl, target.context, target.queue,
                                            arrays[n].nbytes, align,
                                            None if n in written else arrays[n])
                buffers[n] = guarded[n].buffer
            elif n not in written:
                buffers[n] = cl.Buffer(target.context, mf.READ_ONLY | mf.COPY_HOST_PTR,
                                       hostbuf=arrays[n])
            else:
                buffers[n] = cl.Buffer(target.context, mf.READ_WRITE, size=arrays[n].nbytes)
        launch_args = []
        for k, cl_kernel, _, _ in built_kernels:
            cl_kernel.set_args(*[buffers[a.name] if a.kind != "int"
                                 else np.int32(scalars[a.name]) for a in k.args])
            launch_args.append(next((i for i, a in enumerate(k.args)
                                     if a.kind == "int" and a.name == LAUNCH_INDEX_ARG), None))
        for launch in range(total):
            for n in written:
                cl.enqueue_copy(target.queue, buffers[n], fills[n])
            for (k, cl_kernel, _, _), index in zip(built_kernels, launch_args):
                if index is not None:
                    cl_kernel.set_arg(index, np.int32(launch))
            target.queue.finish()
            start = time.perf_counter()
            events = [cl.enqueue_nd_range_kernel(target.queue, cl_kernel, k.global_size,
                                                 k.local_size)
                      for k, cl_kernel, _, _ in built_kernels]
            events[-1].wait()
            host_s = time.perf_counter() - start
            if launch >= warmup:
                host_times.append(host_s)
                if profiling:
                    try:
                        times.append((events[-1].profile.end - events[0].profile.start)
                                     * 1e-9)
                    except cl.Error as err:  # e.g. PROFILING_INFO_NOT_AVAILABLE
                        profiling = False
                        _warn_no_profiling(target, f"reading a launch's profiling times "
                                                   f"failed ({err})")
            results = {}
            for n in outs:
                out = np.empty(arrays[n].shape, dtype=np.float32)
                cl.enqueue_copy(target.queue, out, buffers[n]).wait()
                results[n] = out
            if guard_zones and launch == 0:
                outside = guard.stores_outside(cl, target.queue, guarded)
            digest = _digest(results)
            new = digest not in digests
            digests.append(digest)
            if launch in (0, total - 1) or new:
                checked.append(launch)
                if check_output is not None:
                    try:
                        check_output(launch, results)
                    except ResultMismatchError as err:
                        if outside is None:
                            raise
                        raise ResultMismatchError(f"{err}; {guard.describe(outside)}",
                                                  launch=err.launch, check=err.check) from None
                elif new and launch > 0:
                    raise ResultMismatchError(
                        f"{where}: the output of {_describe_launch(launch, warmup, total)} "
                        f"differs from that of launch 1 (CRC-32 {digest:08x} vs "
                        f"{digests[0]:08x}); pass check_output to check each distinct output",
                        launch=launch)
    except cl.Error as err:
        raise LaunchError(f"OpenCL error running {where}: {err}") from err
    finally:
        for n, buffer in buffers.items():
            (guarded[n] if n in guarded else buffer).release()

    if not profiling:
        times = host_times  # one clock for every launch
    distinct = len(set(digests))
    if distinct > 1:
        warnings.warn(
            f"{where}: the outputs differ between launches ({distinct} distinct outputs in "
            f"{total} launches, each within tolerance): the kernel is nondeterministic",
            RuntimeWarning, stacklevel=2)
    builds = [b for _, _, b, _ in built_kernels]
    return RunResult(
        outputs=results,
        kernel_name=name,
        schedule_name=first.schedule_name,
        build_time_s=sum(b.build_time_s for b in builds),
        build_cached=all(b.cached for b in builds),
        kernel_times_s=tuple(times),
        median_s=float(np.median(times)),
        min_s=min(times),
        max_s=max(times),
        device_slug=target.slug,
        device_name=target.name,
        global_size=tuple(first.global_size),
        local_size=tuple(first.local_size),
        warmup=warmup,
        timing="profiling" if profiling else "host",
        output_digests=tuple(digests),
        distinct_outputs=distinct,
        checked_launches=tuple(checked),
        resources=built_kernels[0][3],
        kernel_resources=tuple(r for _, _, _, r in built_kernels),
        stores_outside=outside,
    )


def _base_align_bytes(target: Target) -> int:
    """``CL_DEVICE_MEM_BASE_ADDR_ALIGN`` in bytes (the query gives bits); 128 where the
    query fails (the largest OpenCL type, ``long16``)."""
    try:
        return max(int(target.device.mem_base_addr_align) // 8, 1)
    except cl.Error:
        return 128


def build_options(target: Target, kernel: GeneratedKernel) -> tuple[str, ...]:
    """``kernel.build_options``, plus ``-cl-nv-verbose`` on NVIDIA's OpenCL platform (its
    build log then gives the registers per work-item: :mod:`gpu.devices.kernel_resources`)."""
    options = tuple(kernel.build_options)
    if is_nvidia_platform(target.info.platform_name) and NV_VERBOSE not in options:
        options += (NV_VERBOSE,)
    return options


def kernel_resources(target: Target, cl_kernel, name: str, log: str,
                     how: str = "") -> KernelResources:
    """Registers, spills and memory of the built ``cl_kernel``: ``CL_KERNEL_PRIVATE_MEM_SIZE``
    and ``CL_KERNEL_LOCAL_MEM_SIZE`` (None where the query fails), and on NVIDIA's platform
    the ptxas lines of its build ``log`` (:func:`gpu.devices.kernel_resources.parse_ptxas_log`).
    Elsewhere, or when the log has no such line (a program from pyopencl's binary cache,
    ``how``, comes without one) or an unreadable one, the registers are None, with the
    reason in ``source``; a run never fails for it."""
    info = cl.kernel_work_group_info
    queried = {}
    for key, query in (("private_mem_bytes", "PRIVATE_MEM_SIZE"),
                       ("kernel_local_mem_bytes", "LOCAL_MEM_SIZE")):
        try:
            queried[key] = int(cl_kernel.get_work_group_info(getattr(info, query),
                                                             target.device))
        except (cl.Error, AttributeError):
            queried[key] = None
    if is_nvidia_platform(target.info.platform_name):
        try:
            parsed = parse_ptxas_log(log, name)
        except BuildLogError as err:
            return KernelResources(**queried, source=str(err))
        if parsed is not None:
            source = f"{parsed.source}; built {how}" if how.startswith("from its PTX") \
                else parsed.source
            return dataclasses.replace(parsed, **queried, source=source)
        why = f"NVIDIA's build log has no ptxas 'Used N registers' line for {name}"
        if "cache" in how:
            why += (f" (the program came from pyopencl's binary cache: {how}; "
                    "PYOPENCL_NO_CACHE=1 rebuilds it)")
    else:
        why = (f"not reported by {target.info.platform_name}; only NVIDIA's {NV_VERBOSE} "
               "build log gives them")
    return KernelResources(**queried, source=why)


def _warn_no_profiling(target: Target, why: str) -> None:
    warnings.warn(
        f"OpenCL profiling is unavailable on {target.name}: {why}. Kernel times are host "
        "wall times around each launch and its wait (launch overhead included), not "
        "profiling-event times", ProfilingUnavailableWarning, stacklevel=3)


# ---------------------------------------------------------------- result check


class ResultMismatchError(TiletrafficGpuError, _tolerance.ResultMismatchError):
    """A kernel output differs from the float64 reference by more than the tolerance."""


@dataclass(frozen=True)
class CheckResult(_tolerance.CheckResult):
    """:class:`simulator.engine.tolerance.CheckResult` whose ``raise_if_bad`` raises this module's
    :class:`ResultMismatchError` (a :class:`TiletrafficGpuError`)."""

    mismatch_error = ResultMismatchError


def check_result(
    actual: np.ndarray, reference_f64: np.ndarray, k: int, abs_inputs_product: np.ndarray
) -> CheckResult:
    """:func:`simulator.engine.tolerance.check_result` (the one tolerance, scaled to ``k``), as a
    :class:`CheckResult` of this module.

    Raises:
        ValueError: shapes differ, ``k`` out of range, or the reference is not finite.
    """
    return _tolerance.check_result(actual, reference_f64, k, abs_inputs_product,
                                   result_type=CheckResult)
