"""Refuse, before launching, a kernel launch that OpenCL would reject or that could not run
on the device: NDRange shape, work-group size, local memory and ``reqd_work_group_size``
(:func:`check_launch_limits`)."""
from __future__ import annotations

import warnings

from tiletraffic.gpu.codegen.kernel import GeneratedKernel
from tiletraffic.gpu.devices.device import DeviceLimits, TiletrafficGpuError
from tiletraffic.simulator.engine.limits import launch_limit_problems
from tiletraffic.simulator.ir.nodes import ndrange_problems

__all__ = ["LaunchConfigError", "check_launch_limits", "sizes_text"]


class LaunchConfigError(TiletrafficGpuError, ValueError):
    """The launch geometry or local memory does not fit the device or kernel; nothing was launched."""


def sizes_text(sizes: tuple[int, ...]) -> str:
    """``(32, 8)`` -> ``"32 x 8"``."""
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
        # kernel, yet runs 32 x 32 work-groups of kernels compiled for them. The
        # result is still checked against numpy before any time counts.
        warnings.warn(
            f"{kernel.name}: work-group of {items} work-items exceeds the "
            f"CL_KERNEL_WORK_GROUP_SIZE of {kernel_max_work_group_size} reported on "
            f"{limits.name}, but the kernel was compiled for exactly {sizes_text(lsize)} "
            "(reqd_work_group_size): launching", RuntimeWarning, stacklevel=2)
        kernel_max_work_group_size = None
    problems += launch_limit_problems(lsize, kernel.local_mem_bytes, limits,
                                      kernel_max_work_group_size)
    if required_local_size is not None and any(required_local_size):
        padded = lsize + (1,) * (len(required_local_size) - len(lsize))
        if padded != tuple(required_local_size):
            problems.append(
                f"local size ({sizes_text(lsize)}) differs from the kernel's reqd_work_group_size "
                f"({sizes_text(tuple(required_local_size))})"
            )
    if problems:
        raise LaunchConfigError(f"cannot launch {kernel.name!r}: " + "; ".join(problems))
