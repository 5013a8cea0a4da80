"""Build, validate, launch and time a :class:`~gpu.kernel.GeneratedKernel`; check its result.

Typical use::

    target = select_device()                      # PYOPENCL_CTX, else GPU, else PoCL CPU
    result = run_kernel(target, kernel, {"A": a, "B": b, "C": np.empty((m, n), np.float32)},
                        {"M": m, "K": k, "N": n})
    ref, abs_prod = reference_product(a, b)
    check_result(result.outputs["C"], ref, k, abs_prod).raise_if_bad("C")

Device choice lives in :mod:`gpu.device` and is re-exported here.
Times are seconds, taken from OpenCL profiling events (``CL_PROFILING_COMMAND_END -
CL_PROFILING_COMMAND_START``), so they cover the kernel execution only, not the
Python launch overhead or transfers.
"""
from __future__ import annotations

import math
import re
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyopencl as cl

from tiletraffic.gpu.device import (  # re-exported: gpu.runtime is the one import most callers need
    POCL_INSTALL_HINT,
    DeviceError,
    DeviceInfo,
    DeviceLimits,
    Target,
    TiletrafficGpuError,
    list_devices,
    select_device,
)
from tiletraffic.gpu.kernel import GeneratedKernel

__all__ = [
    "POCL_INSTALL_HINT", "DeviceError", "DeviceInfo", "DeviceLimits", "Target", "TiletrafficGpuError",
    "list_devices", "select_device", "KernelBuildError", "LaunchConfigError", "LaunchError",
    "ResultMismatchError", "BuildResult", "build_program", "check_launch_limits", "RunResult",
    "run_kernel", "CheckResult", "check_result", "reference_product", "MIN_REPEAT", "UNIT_ROUNDOFF_F32",
]

MIN_REPEAT = 10
"""Fewest timed launches :func:`run_kernel` accepts."""

UNIT_ROUNDOFF_F32 = 2.0**-24
"""Unit roundoff u of IEEE binary32 (round to nearest)."""

_FLT_MIN = float(np.finfo(np.float32).tiny)  # 2**-126, smallest normal float32


class KernelBuildError(TiletrafficGpuError):
    """``clBuildProgram`` failed, or the program lacks the named kernel.

    Attributes:
        log: the compiler's build log (as reported through pyopencl).
    """

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


class LaunchConfigError(TiletrafficGpuError, ValueError):
    """The launch geometry or local memory does not fit the device or kernel; nothing was launched."""


class LaunchError(TiletrafficGpuError):
    """OpenCL reported an error while creating buffers, launching or reading back."""


class ResultMismatchError(TiletrafficGpuError):
    """A kernel output differs from the float64 reference by more than the tolerance."""


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


def build_program(target: Target, source: str, options: tuple[str, ...] | list[str] = ()) -> BuildResult:
    """Build ``source`` with ``options`` for ``target``, memoized per target (= per context).

    A second call with the same ``(source, options)`` on the same target returns
    the cached program with ``cached=True`` and ``build_time_s == 0.0``.

    Raises:
        KernelBuildError: the build failed; ``.log`` holds the compiler's log.
    """
    key = (source, tuple(options))
    hit = target.program_cache.get(key)
    if hit is not None:
        return BuildResult(hit.program, 0.0, True, hit.log, hit.how)
    start = time.perf_counter()
    try:
        program = cl.Program(target.context, source).build(options=list(options))
    except cl.Error as err:
        log = _log_from_error(err)
        raise KernelBuildError(f"OpenCL build failed on {target.name}:\n{log}", log) from err
    elapsed = time.perf_counter() - start
    try:
        log = program.get_build_info(target.device, cl.program_build_info.LOG).strip()
    except cl.Error:
        log = ""
    info = getattr(program, "_build_duration_info", None)  # pyopencl internal, best effort
    how = info[0] if isinstance(info, tuple) and info and isinstance(info[0], str) else ""
    result = BuildResult(program, elapsed, False, log, how)
    target.program_cache[key] = result
    return result


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
    of ``local_size[d] >= 1``; ``local_size[d] <= limits.max_work_item_sizes[d]``;
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
    problems: list[str] = []
    gsize, lsize = tuple(kernel.global_size), tuple(kernel.local_size)
    dims = len(limits.max_work_item_sizes)
    if not 1 <= len(lsize) <= dims or len(gsize) != len(lsize):
        problems.append(
            f"global size ({_sizes(gsize)}) and local size ({_sizes(lsize)}) must have the same "
            f"number of dimensions, 1 to {dims}"
        )
    for d, (g, l) in enumerate(zip(gsize, lsize)):
        if l < 1:
            problems.append(f"local_size[{d}] = {l} must be at least 1")
        elif g < 1 or g % l:
            up = max(1, -(-g // l)) * l
            problems.append(
                f"global_size[{d}] = {g} is not a positive multiple of local_size[{d}] = {l} "
                f"(round it up to {up} and guard the extra work-items)"
            )
    for d, l in enumerate(lsize[:dims]):
        if l > limits.max_work_item_sizes[d]:
            problems.append(
                f"local_size[{d}] = {l} exceeds the device maximum work-item size of "
                f"{limits.max_work_item_sizes[d]} in dimension {d} ({limits.name})"
            )
    items = kernel.work_group_items
    if items > limits.max_work_group_size:
        problems.append(
            f"work-group of {items} work-items ({_sizes(lsize)}) exceeds the device maximum of "
            f"{limits.max_work_group_size} ({limits.name})"
        )
    elif kernel_max_work_group_size is not None and items > kernel_max_work_group_size:
        compiled_for_it = (required_local_size is not None and
                           tuple(required_local_size) == lsize + (1,) * (3 - len(lsize)))
        if compiled_for_it:
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
        else:
            problems.append(
                f"work-group of {items} work-items ({_sizes(lsize)}) exceeds this kernel's "
                f"maximum of {kernel_max_work_group_size} on {limits.name} "
                "(CL_KERNEL_WORK_GROUP_SIZE)"
            )
    if kernel.local_mem_bytes > limits.local_mem_bytes:
        problems.append(
            f"kernel declares {kernel.local_mem_bytes} bytes of local memory, more than the device's "
            f"{limits.local_mem_bytes} bytes ({limits.name})"
        )
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
        outputs: ``global_out`` argument name -> float32 array, shaped like the
            array passed in; elements the kernel never wrote are NaN.
        kernel_name, schedule_name: from the kernel.
        build_time_s: seconds spent building (0.0 when ``build_cached``).
        build_cached: the program came from the target's program cache.
        kernel_times_s: execution time of each timed launch in seconds
            (``repeat`` values; warm-up launches excluded).
        median_s, min_s, max_s: statistics of ``kernel_times_s``.
        device_slug, device_name: the device it ran on.
        global_size, local_size: the NDRange launched (work-items).
        warmup: number of untimed launches before the timed ones.
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

    def as_dict(self) -> dict:
        """JSON-ready summary (everything except ``outputs``)."""
        return {
            "kernel_name": self.kernel_name, "schedule_name": self.schedule_name,
            "build_time_s": self.build_time_s, "build_cached": self.build_cached,
            "kernel_times_s": list(self.kernel_times_s), "median_s": self.median_s,
            "min_s": self.min_s, "max_s": self.max_s, "device_slug": self.device_slug,
            "device_name": self.device_name, "global_size": list(self.global_size),
            "local_size": list(self.local_size), "warmup": self.warmup,
        }


def _check_arguments(kernel: GeneratedKernel, arrays: dict, scalars: dict) -> None:
    kinds = {a.name: a.kind for a in kernel.args}
    bad = [f"{a.name} ({a.kind})" for a in kernel.args if a.kind not in ("global_in", "global_out", "int")]
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


def run_kernel(
    target: Target,
    kernel: GeneratedKernel,
    arrays: dict[str, np.ndarray],
    scalars: dict[str, int],
    repeat: int = MIN_REPEAT,
    warmup: int = 2,
) -> RunResult:
    """Build (cached), validate, launch ``warmup + repeat`` times, time, read back.

    Args:
        target: from :func:`select_device`.
        kernel: the kernel and its NDRange.
        arrays: one float32 C-contiguous (row-major) array per ``global_in`` and
            ``global_out`` argument. Inputs are copied to the device; an output's
            array gives only its shape (contents ignored): its buffer is filled
            with NaN once, before the first launch, so unwritten elements show.
        scalars: one int (32-bit) per ``int`` argument.
        repeat: timed launches, at least :data:`MIN_REPEAT`.
        warmup: untimed launches first, at least 1 (the first launch includes
            just-in-time compilation and is never reported).

    Returns:
        RunResult with the outputs after all launches and per-launch times in
        seconds from OpenCL profiling events.

    Raises:
        ValueError: ``repeat`` or ``warmup`` too small, missing/unexpected
            arguments, non-contiguous or empty arrays, scalars out of range.
        TypeError: an array is not float32 or a scalar is not an int.
        KernelBuildError: the build failed or the kernel name is not in the source.
        LaunchConfigError: the launch does not fit device or kernel limits
            (see :func:`check_launch_limits`); nothing was launched.
        LaunchError: OpenCL failed during buffer creation, launch or read-back;
            no timing is returned.
    """
    if repeat < MIN_REPEAT:
        raise ValueError(f"repeat must be at least {MIN_REPEAT} timed launches, got {repeat}")
    if warmup < 1:
        raise ValueError(f"warmup must be at least 1 (the first launch includes JIT), got {warmup}")
    _check_arguments(kernel, arrays, scalars)

    built = build_program(target, kernel.source, kernel.build_options)
    try:
        cl_kernel = cl.Kernel(built.program, kernel.name)
    except cl.Error as err:
        raise KernelBuildError(f"the program has no kernel named {kernel.name!r}: {err}", built.log) from err
    info = cl.kernel_work_group_info
    kernel_max = int(cl_kernel.get_work_group_info(info.WORK_GROUP_SIZE, target.device))
    try:
        required = tuple(int(s) for s in cl_kernel.get_work_group_info(info.COMPILE_WORK_GROUP_SIZE, target.device))
    except cl.Error:
        required = None
    check_launch_limits(kernel, target.limits, kernel_max, required)
    if cl_kernel.num_args != len(kernel.args):
        raise LaunchConfigError(
            f"kernel {kernel.name!r} takes {cl_kernel.num_args} arguments but the GeneratedKernel lists "
            f"{len(kernel.args)}"
        )

    where = f"kernel {kernel.name!r} (global {_sizes(kernel.global_size)}, local {_sizes(kernel.local_size)}) " \
            f"on {target.name}"
    mf = cl.mem_flags
    buffers: dict[str, Any] = {}
    times: list[float] = []
    outputs: dict[str, np.ndarray] = {}
    try:
        for arg in kernel.args:
            if arg.kind == "global_in":
                buffers[arg.name] = cl.Buffer(target.context, mf.READ_ONLY | mf.COPY_HOST_PTR,
                                              hostbuf=arrays[arg.name])
            elif arg.kind == "global_out":
                nan = np.full(arrays[arg.name].shape, np.nan, dtype=np.float32)
                buffers[arg.name] = cl.Buffer(target.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=nan)
        cl_kernel.set_args(*[
            buffers[a.name] if a.kind != "int" else np.int32(scalars[a.name]) for a in kernel.args
        ])
        for launch in range(warmup + repeat):
            event = cl.enqueue_nd_range_kernel(target.queue, cl_kernel, kernel.global_size, kernel.local_size)
            event.wait()
            if launch >= warmup:
                times.append((event.profile.end - event.profile.start) * 1e-9)
        for arg in kernel.args:
            if arg.kind == "global_out":
                out = np.empty(arrays[arg.name].shape, dtype=np.float32)
                cl.enqueue_copy(target.queue, out, buffers[arg.name]).wait()
                outputs[arg.name] = out
    except cl.Error as err:
        raise LaunchError(f"OpenCL error running {where}: {err}") from err
    finally:
        for buffer in buffers.values():
            buffer.release()

    return RunResult(
        outputs=outputs,
        kernel_name=kernel.name,
        schedule_name=kernel.schedule_name,
        build_time_s=built.build_time_s,
        build_cached=built.cached,
        kernel_times_s=tuple(times),
        median_s=float(np.median(times)),
        min_s=min(times),
        max_s=max(times),
        device_slug=target.slug,
        device_name=target.name,
        global_size=tuple(kernel.global_size),
        local_size=tuple(kernel.local_size),
        warmup=warmup,
    )


# ---------------------------------------------------------------- result check


@dataclass(frozen=True)
class CheckResult:
    """Comparison of a float32 kernel output with its float64 reference.

    Attributes:
        ok: every element finite and within its tolerance.
        max_abs_error: largest |actual - reference| (inf if any element is NaN/inf).
        max_allowed: largest per-element tolerance.
        worst_index: index (tuple) of the element with the largest error/tolerance
            ratio, None for empty arrays.
        worst_value, worst_reference, worst_tolerance: at ``worst_index``.
        nan_count: NaN elements in ``actual`` (never written by the kernel).
        mismatch_count: elements outside their tolerance (NaNs included).
        k: dot-product length the tolerance was scaled to.
        gamma_k: the relative error factor used, :func:`error_factor` of ``k``.
    """

    ok: bool
    max_abs_error: float
    max_allowed: float
    worst_index: tuple[int, ...] | None
    worst_value: float
    worst_reference: float
    worst_tolerance: float
    nan_count: int
    mismatch_count: int
    k: int
    gamma_k: float

    @property
    def error_over_tolerance(self) -> float:
        """Largest |error| / tolerance over all elements (<= 1 passes; inf for NaN)."""
        if self.worst_index is None:
            return 0.0
        if not np.isfinite(self.worst_value):
            return float("inf")
        err = abs(self.worst_value - self.worst_reference)
        return err / self.worst_tolerance if self.worst_tolerance else (0.0 if err == 0 else
                                                                        float("inf"))

    def message(self, name: str = "output") -> str:
        """Human-readable verdict naming the worst element."""
        where = f"{name}[{', '.join(str(i) for i in self.worst_index)}]" if self.worst_index else name
        return (
            f"{where} = {self.worst_value!r}, reference {self.worst_reference!r}, "
            f"|error| {abs(self.worst_value - self.worst_reference):.3g} vs tolerance {self.worst_tolerance:.3g} "
            f"({self.gamma_k:.3g}*(|A|@|B|) + floor, K = {self.k}); {self.mismatch_count} element(s) out of tolerance, "
            f"{self.nan_count} NaN (unwritten)"
        )

    def raise_if_bad(self, name: str = "output") -> None:
        """Raise :class:`ResultMismatchError` unless ``ok``."""
        if not self.ok:
            raise ResultMismatchError(self.message(name))


PROBABILISTIC_LAMBDA = 8.0
"""lambda of the probabilistic error bound used by :func:`check_result`."""


def error_factor(k: int) -> float:
    """Relative error factor of a float32 dot product of length ``k``:
    ``min(2*gamma_k, gamma~_k(lambda=8))`` (see :func:`check_result`)."""
    u = UNIT_ROUNDOFF_F32
    ku = k * u
    worst = 2.0 * ku / (1.0 - ku)
    probable = math.expm1(PROBABILISTIC_LAMBDA * math.sqrt(k) * u + k * u * u / (1.0 - u))
    return min(worst, probable)


def check_result(
    actual: np.ndarray, reference_f64: np.ndarray, k: int, abs_inputs_product: np.ndarray
) -> CheckResult:
    """Compare a float32 dot-product result with its float64 reference, tolerance scaled to K.

    Each element is a length-``k`` dot product computed in float32. The worst-case
    bound (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed.,
    eq. 3.5) is ``|fl(x.y) - x.y| <= gamma_k * (|x|.|y|)``, ``gamma_k = k*u/(1-k*u)``,
    ``u = 2**-24``; it grows like K and, at K = 16384, lets a dropped term pass
    unseen. The tolerance therefore uses the probabilistic bound of Higham and Mary
    (SIAM J. Sci. Comput. 41(5), 2019, Theorem 2.4):
    ``gamma~_k = exp(lambda*sqrt(k)*u + k*u**2/(1-u)) - 1`` with lambda = 8, which holds
    for each element with probability at least ``1 - 2k*exp(-lambda**2*(1-u)**2/2)``
    (better than 1 - 1e-9 for k < 2**24). Tolerance:
    ``min(2*gamma_k, gamma~_k) * abs_inputs_product + 2*k*FLT_MIN``; the absolute floor
    covers subnormals flushed to zero (FLT_MIN = 2**-126 per operation).

    Args:
        actual: kernel output (float32), any shape.
        reference_f64: exact-input float64 result, same shape (e.g. ``A64 @ B64``).
        k: dot-product length (the inner dimension K), ``0 <= k < 2**24``.
        abs_inputs_product: ``|A| @ |B|`` (or ``|A| @ |x|``) in float64, same shape.

    Raises:
        ValueError: shapes differ, ``k`` out of range, or the reference is not finite.
    """
    actual = np.asarray(actual)
    ref = np.asarray(reference_f64, dtype=np.float64)
    absprod = np.asarray(abs_inputs_product, dtype=np.float64)
    if actual.shape != ref.shape or absprod.shape != ref.shape:
        raise ValueError(
            f"shapes differ: actual {actual.shape}, reference {ref.shape}, abs_inputs_product {absprod.shape}"
        )
    if not 0 <= k < 2**24:
        raise ValueError(f"k = {k} out of range: the bound needs k * 2**-24 < 1")
    if not (np.all(np.isfinite(ref)) and np.all(np.isfinite(absprod))):
        raise ValueError("the reference or abs_inputs_product contains NaN or inf")
    gamma = error_factor(k)
    tol = gamma * absprod + 2.0 * k * _FLT_MIN
    values = actual.astype(np.float64)
    err = np.where(np.isfinite(values), np.abs(values - ref), np.inf)
    bad = ~(err <= tol)
    if err.size == 0:
        return CheckResult(True, 0.0, 0.0, None, 0.0, 0.0, 0.0, 0, 0, k, gamma)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(err == 0, 0.0, err / tol)  # tol == 0 with err > 0 -> inf
    flat = int(np.argmax(ratio))
    worst = tuple(int(i) for i in np.unravel_index(flat, err.shape))
    return CheckResult(
        ok=not bool(bad.any()),
        max_abs_error=float(err.max()),
        max_allowed=float(tol.max()),
        worst_index=worst,
        worst_value=float(values[worst]),
        worst_reference=float(ref[worst]),
        worst_tolerance=float(tol[worst]),
        nan_count=int(np.isnan(values).sum()),
        mismatch_count=int(bad.sum()),
        k=k,
        gamma_k=gamma,
    )


def reference_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float64 reference ``a @ b`` and ``|a| @ |b|`` for :func:`check_result`.

    ``a`` is (M, K), ``b`` is (K, N) or (K,); both converted to float64 exactly.
    """
    a64, b64 = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a64 @ b64, np.abs(a64) @ np.abs(b64)
