"""The result of :func:`gpu.runtime.launch.run_kernel`: outputs of the last launch, the
time of every timed launch (seconds), the output fingerprints and what the driver reports
of the compiled kernels."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tiletraffic.gpu.devices.kernel_resources import KernelResources

__all__ = ["RunResult"]


@dataclass(frozen=True)
class RunResult:
    """Outputs and timings of one :func:`gpu.runtime.launch.run_kernel` call.

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
            reports them (:func:`gpu.runtime.launch.kernel_resources`); registers ``None``
            where it does not.
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
