"""Build, validate, launch and time a :class:`~gpu.codegen.kernel.GeneratedKernel`; check its result.

Typical use::

    target = select_device()                      # PYOPENCL_CTX, else GPU, else PoCL CPU
    result = run_kernel(target, kernel, {"A": a, "B": b, "C": np.empty((m, n), np.float32)},
                        {"M": m, "K": k, "N": n})
    ref, abs_prod = reference_product(a, b)
    check_result(result.outputs["C"], ref, k, abs_prod).raise_if_bad("C")

Device choice lives in :mod:`gpu.devices.device`, the tolerance in :mod:`simulator.engine.tolerance`,
the launch limits in :mod:`gpu.runtime.launch_limits` and the result type in
:mod:`gpu.runtime.run_result`; all are re-exported here.
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
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np
import pyopencl as cl

from tiletraffic.gpu.devices.device import (POCL_INSTALL_HINT, DeviceError,
                                            ProfilingUnavailableWarning, DeviceInfo,
                                            DeviceLimits, Target, TiletrafficGpuError,
                                            list_devices, select_device)
from tiletraffic.gpu.runtime import guard_zones as guard
from tiletraffic.gpu.codegen.kernel import (ALL_KINDS, BUFFER_KINDS, LOCAL_KIND, NULL_KIND,
                                            INT_SCALAR_TYPES, INT_VECTOR_KINDS, SCALAR_KINDS,
                                            check_int_vector, int_vector,
                                            GeneratedKernel, KernelArg)
from tiletraffic.gpu.runtime.launch_limits import (LaunchConfigError, check_launch_limits,
                                                   sizes_text)
from tiletraffic.gpu.runtime.compiler_output import compiler_summary_held
from tiletraffic.gpu.runtime.ptx import PtxError, with_directives
from tiletraffic.gpu.runtime.run_result import RunResult
from tiletraffic.gpu.devices.kernel_resources import (NV_VERBOSE, BuildLogError,
                                                      KernelResources, is_nvidia_platform,
                                                      parse_ptxas_log)
from tiletraffic.simulator.engine import tolerance as _tolerance
from tiletraffic.simulator.engine.reference import reference_product  # re-exported
from tiletraffic.simulator.engine.tolerance import (PROBABILISTIC_LAMBDA, UNIT_ROUNDOFF_F32,
                                                    error_factor)
from tiletraffic.simulator.engine.unwritten import unwritten_fill, widened

from tiletraffic.gpu.runtime.launch_counts import MIN_REPEAT, check_launch_counts  # their limits

__all__ = [
    "POCL_INSTALL_HINT", "DeviceError", "DeviceInfo", "DeviceLimits", "Target", "TiletrafficGpuError",
    "list_devices", "select_device", "KernelBuildError", "LaunchConfigError",
    "RegisterBudgetError", "check_register_budget", "LaunchError",
    "ResultMismatchError", "BuildResult", "build_program", "check_launch_limits", "RunResult",
    "run_kernel", "CheckResult", "check_result", "reference_product", "MIN_REPEAT", "UNIT_ROUNDOFF_F32",
    "LAUNCH_INDEX_ARG", "ProfilingUnavailableWarning", "queue_has_profiling",
    "PROBABILISTIC_LAMBDA", "error_factor", "KernelResources", "build_options", "kernel_resources",
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
        with compiler_summary_held():   # clang's "1 warning generated." (the log keeps it)
            return program.build(options=list(options))
    except cl.Error as err:
        log = _log_from_error(err)
        raise KernelBuildError(f"OpenCL build failed on {target.name}:\n{log}", log) from err


# ---------------------------------------------------------------- launch and time


LAUNCH_INDEX_ARG = "launch_index"
"""An ``int`` kernel argument of this name receives the number of the launch (0 for the
first warm-up launch) instead of a fixed value: a test hook for kernels whose result changes
between launches (``simulator.kernels.demos.zeros_in_one_launch``)."""

OUTPUT_KINDS = ("global_out", "global_inout")
"""Kernel argument kinds whose buffers are read back."""


def _check_arguments(kernel: GeneratedKernel, arrays: dict, scalars: dict) -> None:
    kinds = {a.name: a.kind for a in kernel.args}
    bad = [f"{a.name} ({a.kind})" for a in kernel.args if a.kind not in ALL_KINDS or
           (a.kind == LOCAL_KIND and not (isinstance(a.local_bytes, int) and a.local_bytes > 0))]
    if bad:
        raise ValueError(f"{kernel.name}: unknown argument kind (or a local argument of no "
                         f"bytes) for {', '.join(bad)}")
    want_arrays = {n for n, k in kinds.items() if k in BUFFER_KINDS}
    want_scalars = {n for n, k in kinds.items() if k in SCALAR_KINDS}
    for what, given, wanted in (("arrays", arrays, want_arrays), ("scalars", scalars, want_scalars)):
        missing, extra = wanted - set(given), set(given) - wanted
        if missing or extra:
            raise ValueError(
                f"{kernel.name}: {what} must be exactly {sorted(wanted)}; "
                f"missing {sorted(missing)}, unexpected {sorted(extra)}"
            )
    for name, array in arrays.items():
        if not isinstance(array, np.ndarray) or array.dtype not in (np.float32, np.float16):
            got = array.dtype if isinstance(array, np.ndarray) else type(array).__name__
            raise TypeError(f"{kernel.name}: array {name!r} must be a numpy float32 (or float16) array, got {got}")
        if not array.flags.c_contiguous:
            raise ValueError(f"{kernel.name}: array {name!r} must be C-contiguous (row-major); "
                             "pass np.ascontiguousarray(...)")
        if array.size == 0:
            raise ValueError(f"{kernel.name}: array {name!r} is empty; OpenCL buffers cannot be empty")
    for name, value in scalars.items():
        if kinds[name] in INT_VECTOR_KINDS:
            check_int_vector(kernel.name, name, kinds[name], value)
            continue
        number = (int, np.integer, float, np.floating) if kinds[name] == "float" else \
            (int, np.integer)
        if isinstance(value, bool) or not isinstance(value, number):
            what = "a number" if kinds[name] == "float" else "an int"
            raise TypeError(f"{kernel.name}: scalar {name!r} must be {what}, got "
                            f"{type(value).__name__}")
        if kinds[name] == "float":
            continue
        bits = {"long": 64, "char": 8, "short": 16}.get(kinds[name], 32)
        if not -(2**(bits - 1)) <= int(value) < 2**(bits - 1):
            raise ValueError(f"{kernel.name}: scalar {name!r} = {value} does not fit a "
                             f"{bits}-bit int")


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


class _BuiltKernel(NamedTuple):
    """One kernel of a launch, built: the kernel, its ``cl.Kernel``, the build and what the
    driver reports of it."""

    kernel: GeneratedKernel
    cl_kernel: Any
    built: BuildResult
    resources: KernelResources


@dataclass(frozen=True)
class _Buffers:
    """The buffers of one :func:`run_kernel` call.

    Attributes:
        kinds: every buffer argument -> its kind, as the first kernel using it sees it.
        written: the buffers some kernel writes, in ``kinds`` order.
        outs: the buffers read back and fingerprinted after each launch.
        fills: each written buffer's contents before every launch (the unwritten NaN for a
            ``global_out``, the input for a ``global_inout``).
        align: base-address alignment of guard zones in bytes (1 without them).
    """

    kinds: dict[str, str]
    written: list[str]
    outs: list[str]
    fills: dict[str, np.ndarray]
    align: int


@dataclass
class _Launches:
    """What the launches of one :func:`run_kernel` call recorded, launch by launch.

    Attributes:
        profiling: profiling-event times are still being taken.
        times, host_times: profiling and host times of the timed launches (seconds).
        digests: CRC-32 of the outputs after each launch, warm-up included.
        checked: launches whose outputs went through ``check_output``.
        results: the outputs of the last launch read back.
        outside: with guard zones, the words the first launch stored into them per buffer.
    """

    profiling: bool
    times: list[float] = dataclasses.field(default_factory=list)
    host_times: list[float] = dataclasses.field(default_factory=list)
    digests: list[int] = dataclasses.field(default_factory=list)
    checked: list[int] = dataclasses.field(default_factory=list)
    results: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    outside: dict[str, int] | None = None


def _check_call(kernels: list[GeneratedKernel], arrays: dict[str, np.ndarray],
                scalars: dict[str, int]) -> None:
    """Refuse a call without kernels, or with arguments that do not fit them.

    Raises:
        ValueError: no kernel, an unknown argument kind, a missing or unexpected
            argument, a non-contiguous or empty array, a scalar out of its kind's range
            (int32, int64).
        TypeError: an array is not float32, or a scalar not a number of its kind.
    """
    if not kernels:
        raise ValueError("run_kernel needs at least one kernel")
    for k in kernels:
        _check_arguments(k, {a.name: arrays[a.name] for a in k.args
                             if a.kind in BUFFER_KINDS and a.name in arrays},
                         {a.name: scalars[a.name] for a in k.args
                          if a.kind in SCALAR_KINDS and a.name in scalars})
    used = {a.name for k in kernels for a in k.args if a.kind not in (LOCAL_KIND, NULL_KIND)}
    extra = sorted((set(arrays) | set(scalars)) - used)
    if extra:
        raise ValueError(f"{'+'.join(k.name for k in kernels)}: unexpected arguments {extra}")


def _build_for_launch(target: Target, kernel: GeneratedKernel) -> _BuiltKernel:
    """Build ``kernel`` (:func:`build_kernel`) and check its launch against the device's and
    the compiled kernel's limits.

    Raises:
        KernelBuildError: the build failed or the program lacks the kernel.
        LaunchConfigError: the launch does not fit (:func:`check_launch_limits`), or the
            compiled kernel takes another number of arguments than ``kernel.args``.
    """
    cl_kernel, built, resources = build_kernel(target, kernel)
    info = cl.kernel_work_group_info
    kernel_max = int(cl_kernel.get_work_group_info(info.WORK_GROUP_SIZE, target.device))
    try:
        required = tuple(int(s) for s in cl_kernel.get_work_group_info(
            info.COMPILE_WORK_GROUP_SIZE, target.device))
    except cl.Error:
        required = None
    check_launch_limits(kernel, target.limits, kernel_max, required)
    if cl_kernel.num_args != len(kernel.args):
        raise LaunchConfigError(
            f"kernel {kernel.name!r} takes {cl_kernel.num_args} arguments but the "
            f"GeneratedKernel lists {len(kernel.args)}")
    return _BuiltKernel(kernel, cl_kernel, built, resources)


def _where(target: Target, kernels: list[GeneratedKernel]) -> str:
    """The launch as messages name it: the kernel with its NDRange, or the kernels."""
    first = kernels[0]
    if len(kernels) == 1:
        return (f"kernel {first.name!r} (global {sizes_text(first.global_size)}, local "
                f"{sizes_text(first.local_size)}) on {target.name}")
    return f"kernels {'+'.join(k.name for k in kernels)!r} on {target.name}"


def _plan_buffers(target: Target, kernels: list[GeneratedKernel],
                  arrays: dict[str, np.ndarray], outputs: Sequence[str] | None,
                  guard_zones: bool) -> _Buffers:
    """The buffers of the launch, which are written and read back, and their fills.

    Raises:
        ValueError: ``outputs`` names a buffer no kernel writes.
    """
    kinds: dict[str, str] = {}
    for k in kernels:           # a buffer's kind: as the first kernel using it sees it
        for a in k.args:
            if a.kind in BUFFER_KINDS:
                kinds.setdefault(a.name, a.kind)
    written = [n for n in kinds if any(a.name == n and a.kind in OUTPUT_KINDS
                                       for k in kernels for a in k.args)]
    outs = list(outputs) if outputs is not None else written
    unknown = sorted(set(outs) - set(written))
    if unknown:
        raise ValueError(f"{'+'.join(k.name for k in kernels)}: outputs {unknown} are not "
                         "written by any kernel")
    fills = {n: (unwritten_fill(arrays[n].shape, arrays[n].dtype) if kinds[n] == "global_out"
                 else arrays[n]) for n in written}
    align = _base_align_bytes(target) if guard_zones else 1
    return _Buffers(kinds, written, outs, fills, align)


def _allocate(target: Target, arrays: dict[str, np.ndarray], plan: _Buffers,
              guard_zones: bool, buffers: dict[str, Any],
              guarded: dict[str, guard.GuardedBuffer]) -> None:
    """Create the device buffers into ``buffers`` (and ``guarded``, with guard zones), one
    at a time, so that the caller releases those made before a failure."""
    mf = cl.mem_flags
    for n in plan.kinds:
        if guard_zones:
            guarded[n] = guard.allocate(cl, target.context, target.queue,
                                        arrays[n].nbytes, plan.align,
                                        None if n in plan.written else arrays[n])
            buffers[n] = guarded[n].buffer
        elif n not in plan.written:
            buffers[n] = cl.Buffer(target.context, mf.READ_ONLY | mf.COPY_HOST_PTR,
                                   hostbuf=arrays[n])
        else:
            buffers[n] = cl.Buffer(target.context, mf.READ_WRITE, size=arrays[n].nbytes)


def _set_arguments(built_kernels: list[_BuiltKernel], buffers: dict[str, Any],
                   scalars: dict[str, int]) -> list[int | None]:
    """Set every kernel's arguments; return the position of each kernel's
    :data:`LAUNCH_INDEX_ARG` argument (None where it has none)."""
    launch_args = []
    for k, cl_kernel, _, _ in built_kernels:
        cl_kernel.set_args(*[_argument(a, buffers, scalars) for a in k.args])
        launch_args.append(next((i for i, a in enumerate(k.args)
                                 if a.kind == "int" and a.name == LAUNCH_INDEX_ARG), None))
    return launch_args


def _argument(a: KernelArg, buffers: dict[str, Any], scalars: dict):
    """What ``clSetKernelArg`` gets for ``a``: its buffer, its value as an int32, int64 or float32,
    or ``local_bytes`` of local memory (no pointer), or ``None`` (a NULL pointer)."""
    if a.kind in INT_SCALAR_TYPES:
        return INT_SCALAR_TYPES[a.kind](scalars[a.name])
    if a.kind == "float":
        return np.float32(scalars[a.name])
    if a.kind in INT_VECTOR_KINDS:
        return int_vector(a.kind, scalars[a.name])
    if a.kind == LOCAL_KIND:
        return cl.LocalMemory(a.local_bytes)
    if a.kind == NULL_KIND:
        return None
    return buffers[a.name]


def _launch_once(target: Target, built_kernels: list[_BuiltKernel], plan: _Buffers,
                 buffers: dict[str, Any], launch_args: list[int | None],
                 launch: int) -> tuple[list, float]:
    """Refill the written buffers, pass the launch number, run the kernels in order and
    wait for the last; return their events and the host seconds from enqueue to end."""
    for n in plan.written:
        cl.enqueue_copy(target.queue, buffers[n], plan.fills[n])
    for (k, cl_kernel, _, _), index in zip(built_kernels, launch_args):
        if index is not None:
            cl_kernel.set_arg(index, np.int32(launch))
    target.queue.finish()
    start = time.perf_counter()
    events = [cl.enqueue_nd_range_kernel(target.queue, cl_kernel, k.global_size,
                                         k.local_size)
              for k, cl_kernel, _, _ in built_kernels]
    events[-1].wait()
    return events, time.perf_counter() - start


def _record_time(target: Target, state: _Launches, events: list, host_s: float) -> None:
    """Record a timed launch: its host time, and its profiling time (first kernel's start
    to last kernel's end) while profiling works; the first failure to read one ends the
    profiling times, with a :class:`ProfilingUnavailableWarning`."""
    state.host_times.append(host_s)
    if state.profiling:
        try:
            state.times.append((events[-1].profile.end - events[0].profile.start) * 1e-9)
        except cl.Error as err:  # e.g. PROFILING_INFO_NOT_AVAILABLE
            state.profiling = False
            # attributed to run_kernel's caller: through _launch_all and run_kernel
            _warn_no_profiling(target, f"reading a launch's profiling times failed ({err})",
                               stacklevel=5)


def _read_back(target: Target, arrays: dict[str, np.ndarray], plan: _Buffers,
               buffers: dict[str, Any]) -> dict[str, np.ndarray]:
    """The ``outs`` buffers copied to float32 arrays shaped like ``arrays`` (halves widened)."""
    results = {}
    for n in plan.outs:
        out = np.empty(arrays[n].shape, dtype=arrays[n].dtype)
        cl.enqueue_copy(target.queue, out, buffers[n]).wait()
        results[n] = widened(out)
    return results


def _check_launch(state: _Launches, launch: int, warmup: int, total: int, where: str,
                  check_output: Callable[[int, dict[str, np.ndarray]], None] | None) -> None:
    """Fingerprint the launch's outputs; check the first, the last and every new one.

    Raises:
        ResultMismatchError: what ``check_output`` raised (with guard zones, naming the
            stores outside the buffers); without ``check_output``, an output that differs
            from the first launch's.
    """
    digest = _digest(state.results)
    new = digest not in state.digests
    state.digests.append(digest)
    if not (launch in (0, total - 1) or new):
        return
    state.checked.append(launch)
    if check_output is not None:
        try:
            check_output(launch, state.results)
        except ResultMismatchError as err:
            if state.outside is None:
                raise
            raise ResultMismatchError(f"{err}; {guard.describe(state.outside)}",
                                      launch=err.launch, check=err.check) from None
    elif new and launch > 0:
        raise ResultMismatchError(
            f"{where}: the output of {_describe_launch(launch, warmup, total)} "
            f"differs from that of launch 1 (CRC-32 {digest:08x} vs "
            f"{state.digests[0]:08x}); pass check_output to check each distinct output",
            launch=launch)


def _launch_all(target: Target, built_kernels: list[_BuiltKernel], plan: _Buffers,
                state: _Launches, arrays: dict[str, np.ndarray], scalars: dict[str, int],
                warmup: int, total: int, where: str,
                check_output: Callable[[int, dict[str, np.ndarray]], None] | None,
                guard_zones: bool) -> None:
    """Allocate the buffers, run ``total`` launches (the first ``warmup`` untimed), read
    back, fingerprint and check each into ``state``; release the buffers in every case.

    Raises:
        LaunchError: OpenCL failed while creating buffers, launching or reading back.
        ResultMismatchError: as :func:`_check_launch`.
    """
    buffers: dict[str, Any] = {}
    guarded: dict[str, guard.GuardedBuffer] = {}
    try:
        _allocate(target, arrays, plan, guard_zones, buffers, guarded)
        launch_args = _set_arguments(built_kernels, buffers, scalars)
        for launch in range(total):
            events, host_s = _launch_once(target, built_kernels, plan, buffers, launch_args,
                                          launch)
            if launch >= warmup:
                _record_time(target, state, events, host_s)
            state.results = _read_back(target, arrays, plan, buffers)
            if guard_zones and launch == 0:
                state.outside = guard.stores_outside(cl, target.queue, guarded)
            _check_launch(state, launch, warmup, total, where, check_output)
    except cl.Error as err:
        raise LaunchError(f"OpenCL error running {where}: {err}") from err
    finally:
        for n, buffer in buffers.items():
            (guarded[n] if n in guarded else buffer).release()


def _run_result(target: Target, built_kernels: list[_BuiltKernel], state: _Launches,
                times: list[float], warmup: int) -> RunResult:
    """The :class:`RunResult` of the launches recorded in ``state``, timed by ``times``."""
    first = built_kernels[0].kernel
    builds = [b for _, _, b, _ in built_kernels]
    return RunResult(
        outputs=state.results,
        kernel_name="+".join(b.kernel.name for b in built_kernels),
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
        timing="profiling" if state.profiling else "host",
        output_digests=tuple(state.digests),
        distinct_outputs=len(set(state.digests)),
        checked_launches=tuple(state.checked),
        resources=built_kernels[0].resources,
        kernel_resources=tuple(b.resources for b in built_kernels),
        stores_outside=state.outside,
    )


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
        scalars: one int (32-bit) per ``int`` argument, one number (passed as float32) per
            ``float`` argument; an ``int`` argument named :data:`LAUNCH_INDEX_ARG` gets the
            launch number instead at each launch. A ``local`` argument takes no value: its
            ``local_bytes`` of local memory are set at launch.
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
        TypeError: an array is not float32, an ``int`` scalar not an int or a ``float`` one
            not a number.
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
    _check_call(kernels, arrays, scalars)
    built_kernels = [_build_for_launch(target, k) for k in kernels]
    where = _where(target, kernels)
    total = warmup + repeat
    state = _Launches(profiling=queue_has_profiling(target.queue))
    if not state.profiling:
        _warn_no_profiling(target, "its command queue was created without "
                                   "CL_QUEUE_PROFILING_ENABLE")
    plan = _plan_buffers(target, kernels, arrays, outputs, guard_zones)
    _launch_all(target, built_kernels, plan, state, arrays, scalars, warmup, total, where,
                check_output, guard_zones)
    times = state.times if state.profiling else state.host_times  # one clock for every launch
    distinct = len(set(state.digests))
    if distinct > 1:
        warnings.warn(
            f"{where}: the outputs differ between launches ({distinct} distinct outputs in "
            f"{total} launches, each within tolerance): the kernel is nondeterministic",
            RuntimeWarning, stacklevel=2)
    return _run_result(target, built_kernels, state, times, warmup)


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


def _warn_no_profiling(target: Target, why: str, stacklevel: int = 3) -> None:
    """Warn that the kernel times are host wall times; ``stacklevel`` as ``warnings.warn``
    counts it from here (3: the caller of this function's caller)."""
    warnings.warn(
        f"OpenCL profiling is unavailable on {target.name}: {why}. Kernel times are host "
        "wall times around each launch and its wait (launch overhead included), not "
        "profiling-event times", ProfilingUnavailableWarning, stacklevel=stacklevel)


# ---------------------------------------------------------------- result check


class ResultMismatchError(TiletrafficGpuError, _tolerance.ResultMismatchError):
    """A kernel output differs from the float64 reference by more than the tolerance."""


@dataclass(frozen=True)
class CheckResult(_tolerance.CheckResult):
    """:class:`simulator.engine.tolerance.CheckResult` whose ``raise_if_bad`` raises this module's
    :class:`ResultMismatchError` (a :class:`TiletrafficGpuError`)."""

    mismatch_error = ResultMismatchError


def check_result(
    actual: np.ndarray, reference_f64: np.ndarray, k: int, abs_inputs_product: np.ndarray,
    error_bound: np.ndarray | None = None, stored_half: bool = False,
) -> CheckResult:
    """:func:`simulator.engine.tolerance.check_result` (the one tolerance: each element's
    running error bound where ``error_bound`` is given, else scaled to ``k``; ``stored_half``:
    a half output's rounding added), as a :class:`CheckResult` of this module.

    Raises:
        ValueError: shapes differ, ``k`` out of range, the reference is not finite, or
            ``error_bound`` is not a non-negative array of the reference's shape.
    """
    return _tolerance.check_result(actual, reference_f64, k, abs_inputs_product,
                                   result_type=CheckResult, error_bound=error_bound, stored_half=stored_half)
