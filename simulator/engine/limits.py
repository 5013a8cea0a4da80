"""Device limits the simulator enforces before it executes a schedule.

A schedule that a real device would refuse (too many work-items per work-group, more local
memory than a work-group may have) is refused here too, with both numbers named, so the
simulator never reports traffic for a launch that could not happen.
"""
from __future__ import annotations

from dataclasses import dataclass

from tiletraffic.simulator.ir.nodes import Schedule


class LimitError(ValueError):
    """A schedule exceeds a device limit; the message names the value and the limit."""


@dataclass(frozen=True)
class DeviceLimits:
    """Launch limits of a device: the one type the simulator, the OpenCL runtime
    (``gpu.devices.device.DeviceInfo.limits``) and the reports check launches against.

    Attributes:
        name: device or model name used in messages.
        max_work_group_size: work-items per work-group (``CL_DEVICE_MAX_WORK_GROUP_SIZE``).
        max_work_item_sizes: per-dimension maximum (``CL_DEVICE_MAX_WORK_ITEM_SIZES``).
        local_mem_bytes: local memory available to one work-group (``CL_DEVICE_LOCAL_MEM_SIZE``).
        register_budget: the device's compiler takes a register budget per work-item
            (``Schedule.max_registers``; NVIDIA's OpenCL: ``gpu.runtime.launch.build_program``).
            Limits of no device (a device model's) allow it: nothing is launched.
    """

    name: str
    max_work_group_size: int
    max_work_item_sizes: tuple[int, ...]
    local_mem_bytes: int
    register_budget: bool = True


GENERIC_GPU = DeviceLimits(
    name="generic-gpu",
    max_work_group_size=1024,
    max_work_item_sizes=(1024, 1024, 64),
    local_mem_bytes=48 * 1024,
)
"""Limits shared by current NVIDIA GPUs (1024 work-items per work-group; 48 KiB of statically
declared shared memory per block: CUDA C++ Programming Guide, "Technical Specifications per
Compute Capability"), which NVIDIA's OpenCL driver reports."""

UNLIMITED = DeviceLimits("unlimited", 2**31 - 1, (2**31 - 1,) * 3, 2**62)
"""No limits: for exploring schedules no device could launch."""


def launch_limit_problems(local_size: tuple[int, ...], local_mem_bytes: int,
                          limits: DeviceLimits, kernel_max_work_group_size: int | None = None
                          ) -> list[str]:
    """What a launch of work-groups of ``local_size`` work-items using ``local_mem_bytes`` of
    local memory each exceeds in ``limits`` (empty: nothing), each naming the value and the
    limit: the work-group size against ``max_work_group_size`` and, when given, the compiled
    kernel's maximum (``CL_KERNEL_WORK_GROUP_SIZE``), each dimension against
    ``max_work_item_sizes``, local memory against ``local_mem_bytes``. The one check of
    :func:`check_schedule_limits` and ``gpu.runtime.launch.check_launch_limits``."""
    problems = []
    items = 1
    for size in local_size:
        items *= size
    dims = " x ".join(str(s) for s in local_size)
    if items > limits.max_work_group_size:
        problems.append(f"a work-group of {items} work-items ({dims}) exceeds the maximum "
                        f"work-group size {limits.max_work_group_size} of {limits.name}")
    elif kernel_max_work_group_size is not None and items > kernel_max_work_group_size:
        problems.append(f"a work-group of {items} work-items ({dims}) exceeds this kernel's "
                        f"maximum of {kernel_max_work_group_size} on {limits.name} "
                        "(CL_KERNEL_WORK_GROUP_SIZE)")
    for d, (size, most) in enumerate(zip(local_size, limits.max_work_item_sizes)):
        if size > most:
            problems.append(f"local_size[{d}] = {size} exceeds the maximum work-item size "
                            f"{most} in dimension {d} of {limits.name}")
    if local_mem_bytes > limits.local_mem_bytes:
        problems.append(f"{local_mem_bytes} bytes of local memory per work-group exceed the "
                        f"{limits.local_mem_bytes} bytes of {limits.name}")
    return problems


def check_schedule_limits(schedule: Schedule, limits: DeviceLimits) -> None:
    """Refuse a schedule that ``limits`` would not launch.

    Raises:
        LimitError: work-group size above ``max_work_group_size`` or a dimension above
            ``max_work_item_sizes``, or local memory above ``local_mem_bytes``; the message
            names the schedule and every limit exceeded (:func:`launch_limit_problems`).
    """
    problems = launch_limit_problems(tuple(schedule.local_size), schedule.local_mem_bytes,
                                     limits)
    if problems:
        raise LimitError(f"{schedule.family}: " + "; ".join(problems))


def launch_refusal(schedule, limits: DeviceLimits) -> str | None:
    """The one line refusing a schedule, or a kernel sequence any of whose kernels, a device
    of ``limits`` would not launch (the kernel named, every limit exceeded with its value:
    :func:`launch_limit_problems`); None when every kernel fits."""
    from tiletraffic.simulator.ir.sequence import is_sequence, kernels_of

    for kernel in kernels_of(schedule):
        problems = launch_limit_problems(tuple(kernel.local_size), kernel.local_mem_bytes,
                                         limits)
        if problems:
            name = (f"{schedule.family} kernel {kernel.kernel_name}" if is_sequence(schedule)
                    else kernel.family)
            return f"{name}: " + "; ".join(problems)
    return None
