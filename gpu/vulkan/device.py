"""The Vulkan physical device a shader runs on, opened once per process.

:func:`open_device` loads the Vulkan loader through the ``vulkan`` Python binding, creates an
instance, picks a physical device (a discrete GPU before an integrated one, a virtual one,
then a CPU driver such as Mesa's lavapipe; or the first whose name contains ``name``), and a
queue of a family that computes and writes timestamps. Every failure to find one is a
:class:`gpu.vulkan.errors.VulkanUnavailable` with a one-line message.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from tiletraffic.gpu.vulkan.errors import VulkanError, VulkanUnavailable

INSTALL_HINT = "apt-get install libvulkan1 mesa-vulkan-drivers"
_TYPE_RANK = {"DISCRETE_GPU": 0, "INTEGRATED_GPU": 1, "VIRTUAL_GPU": 2, "CPU": 3, "OTHER": 4}
_LOCK = threading.Lock()
_OPEN: dict[str | None, "VulkanDevice"] = {}


def binding():
    """The ``vulkan`` module (the cffi binding), loaded with the system's Vulkan loader.

    Raises:
        VulkanUnavailable: the package is not installed, or ``libvulkan.so.1`` is missing.
    """
    try:
        import vulkan  # the binding dlopens libvulkan.so.1 on import
    except ImportError:
        raise VulkanUnavailable("the Python package 'vulkan' is not installed "
                                "(pip install vulkan)") from None
    except OSError:
        raise VulkanUnavailable(f"no Vulkan loader libvulkan.so.1 ({INSTALL_HINT})") from None
    return vulkan


def _text(vk, value) -> str:
    """A C string field of a Vulkan struct as ``str``."""
    return value if isinstance(value, str) else vk.ffi.string(value).decode("utf-8", "replace")


@dataclass
class VulkanDevice:
    """An opened Vulkan logical device with one compute queue.

    Attributes:
        name: the physical device's name (``VkPhysicalDeviceProperties.deviceName``), e.g.
            ``"NVIDIA H200"`` or ``"llvmpipe (LLVM 15.0.6, 256 bits)"``.
        device_type: ``DISCRETE_GPU``, ``INTEGRATED_GPU``, ``VIRTUAL_GPU``, ``CPU`` or ``OTHER``.
        driver: the driver's version as the vendor numbers it, and the API version
            (``"api 1.3.230, driver 0.0.1"``).
        timestamp_period_ns: nanoseconds per timestamp tick.
        timestamp_valid_bits: bits of a timestamp that count (the rest wraps).
        max_push_constants_bytes, max_workgroup_count, max_workgroup_size,
        max_workgroup_invocations, max_shared_memory_bytes: the device's limits.
        vk: the ``vulkan`` module; ``instance``, ``physical``, ``device``, ``queue``,
            ``queue_family``, ``memory_types`` (``(property flags, heap)`` per type): handles.
    """

    name: str
    device_type: str
    driver: str
    timestamp_period_ns: float
    timestamp_valid_bits: int
    max_push_constants_bytes: int
    max_workgroup_count: tuple[int, int, int]
    max_workgroup_size: tuple[int, int, int]
    max_workgroup_invocations: int
    max_shared_memory_bytes: int
    vk: Any = field(repr=False)
    instance: Any = field(repr=False)
    physical: Any = field(repr=False)
    device: Any = field(repr=False)
    queue: Any = field(repr=False)
    queue_family: int = 0
    memory_types: tuple = field(default=(), repr=False)
    lock: Any = field(default_factory=threading.Lock, repr=False)

    def memory_type(self, type_bits: int, wanted: int, *, fallback: int | None = None) -> int:
        """The first memory type allowed by ``type_bits`` with all ``wanted`` property flags
        (else with ``fallback``'s, when given; 0 takes any).

        Raises:
            VulkanError: none has them.
        """
        for flags in (wanted,) if fallback is None else (wanted, fallback):
            for i, (props, _heap) in enumerate(self.memory_types):
                if type_bits & (1 << i) and props & flags == flags:
                    return i
        raise VulkanError(f"{self.name}: no memory type with properties {wanted:#x}")


def _type_name(vk, value: int) -> str:
    for key in _TYPE_RANK:
        if getattr(vk, f"VK_PHYSICAL_DEVICE_TYPE_{key}", None) == value:
            return key
    return "OTHER"


def _version(vk, v: int) -> str:
    return f"{vk.VK_VERSION_MAJOR(v)}.{vk.VK_VERSION_MINOR(v)}.{vk.VK_VERSION_PATCH(v)}"


def _candidates(vk, instance, name: str | None) -> list:
    """``(rank, physical device, properties, queue family, valid bits)`` of every physical
    device with a queue family that computes and writes timestamps, best first."""
    found = []
    for index, physical in enumerate(vk.vkEnumeratePhysicalDevices(instance)):
        props = vk.vkGetPhysicalDeviceProperties(physical)
        device_name = _text(vk, props.deviceName)
        if name is not None and name.lower() not in device_name.lower():
            continue
        families = vk.vkGetPhysicalDeviceQueueFamilyProperties(physical)
        for family, fp in enumerate(families):
            if fp.queueFlags & vk.VK_QUEUE_COMPUTE_BIT and fp.timestampValidBits > 0:
                rank = _TYPE_RANK[_type_name(vk, props.deviceType)]
                found.append((rank, index, physical, props, family, fp.timestampValidBits))
                break
    found.sort(key=lambda c: c[:2])
    return found


def _create(vk, name: str | None) -> VulkanDevice:
    app = vk.VkApplicationInfo(sType=vk.VK_STRUCTURE_TYPE_APPLICATION_INFO,
                               pApplicationName="tiletraffic", applicationVersion=1,
                               pEngineName="tiletraffic", engineVersion=1,
                               apiVersion=vk.VK_MAKE_VERSION(1, 2, 0))
    try:
        instance = vk.vkCreateInstance(vk.VkInstanceCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, pApplicationInfo=app), None)
    except vk.VkError as err:
        raise VulkanUnavailable(f"no Vulkan driver: vkCreateInstance failed "
                                f"({type(err).__name__}; {INSTALL_HINT})") from None
    found = _candidates(vk, instance, name)
    if not found:
        vk.vkDestroyInstance(instance, None)
        which = f" whose name contains {name!r}" if name is not None else ""
        raise VulkanUnavailable(f"no Vulkan physical device{which} with a compute queue that "
                                f"writes timestamps ({INSTALL_HINT})")
    _rank, _index, physical, props, family, valid_bits = found[0]
    queue_info = vk.VkDeviceQueueCreateInfo(sType=vk.VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                            queueFamilyIndex=family, queueCount=1,
                                            pQueuePriorities=[1.0])
    try:
        device = vk.vkCreateDevice(physical, vk.VkDeviceCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, queueCreateInfoCount=1,
            pQueueCreateInfos=[queue_info]), None)
    except vk.VkError as err:
        raise VulkanUnavailable(f"{_text(vk, props.deviceName)}: vkCreateDevice failed "
                                f"({type(err).__name__})") from None
    memory = vk.vkGetPhysicalDeviceMemoryProperties(physical)
    types = tuple((memory.memoryTypes[i].propertyFlags, memory.memoryTypes[i].heapIndex)
                  for i in range(memory.memoryTypeCount))
    lim = props.limits
    return VulkanDevice(
        name=_text(vk, props.deviceName), device_type=_type_name(vk, props.deviceType),
        driver=f"api {_version(vk, props.apiVersion)}, driver {props.driverVersion:#x}",
        timestamp_period_ns=float(lim.timestampPeriod), timestamp_valid_bits=int(valid_bits),
        max_push_constants_bytes=int(lim.maxPushConstantsSize),
        max_workgroup_count=tuple(int(lim.maxComputeWorkGroupCount[i]) for i in range(3)),
        max_workgroup_size=tuple(int(lim.maxComputeWorkGroupSize[i]) for i in range(3)),
        max_workgroup_invocations=int(lim.maxComputeWorkGroupInvocations),
        max_shared_memory_bytes=int(lim.maxComputeSharedMemorySize),
        vk=vk, instance=instance, physical=physical, device=device,
        queue=vk.vkGetDeviceQueue(device, family, 0), queue_family=family, memory_types=types)


def open_device(name: str | None = None) -> VulkanDevice:
    """The Vulkan device shaders run on, opened on first use and kept for the process.

    Args:
        name: a part of the physical device's name (case-insensitive) to choose it by; None
            takes the best: a discrete GPU, else integrated, virtual, then a CPU driver.

    Raises:
        VulkanUnavailable: no binding, no loader, no driver, or no (matching) physical device
            with a compute queue that writes timestamps (one line).
    """
    with _LOCK:
        if name not in _OPEN:
            _OPEN[name] = _create(binding(), name)
        return _OPEN[name]


def vulkan_available(name: str | None = None) -> str | None:
    """None when a Vulkan device can be opened, else the one-line reason it cannot."""
    try:
        open_device(name)
    except VulkanUnavailable as err:
        return str(err)
    return None
