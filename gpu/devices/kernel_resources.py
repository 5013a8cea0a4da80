"""Registers, spills and memory of a compiled kernel, where the OpenCL driver reports them.

Two sources:

* ``CL_KERNEL_PRIVATE_MEM_SIZE`` and ``CL_KERNEL_LOCAL_MEM_SIZE`` (``clGetKernelWorkGroupInfo``,
  every OpenCL driver): bytes of private and local memory per work-item and per work-group.
  Neither gives registers.
* NVIDIA's OpenCL driver only: a build with ``-cl-nv-verbose`` puts the output of its PTX
  assembler (``ptxas -v``) in the build log. For each kernel it prints (for example, for
  ``gemm_tiled``)::

      ptxas info    : Compiling entry function 'gemm_tiled' for 'sm_90a'
      ptxas info    : Function properties for gemm_tiled
      ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
      ptxas info    : Used 31 registers, used 1 barriers, 2052 bytes smem

  "Used N registers" is the registers per work-item (thread); the ``Function properties``
  line the per-thread stack frame and register spills (bytes stored to and loaded from
  local memory); ``smem`` the static shared (OpenCL local) memory per work-group; further
  items (``cmem[n]``, constant banks; ``lmem``) may follow on the "Used" line, as ptxas
  prints them (``Used 63 registers, 4+0 bytes lmem, 64 bytes cmem[0]``).

Elsewhere (PoCL, Oclgrind, other vendors) registers and spills are not reported:
:attr:`KernelResources.registers_per_work_item` is ``None``, never a guess.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass

NV_VERBOSE = "-cl-nv-verbose"
"""NVIDIA's OpenCL build option that puts ptxas' resource usage in the build log."""

_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_PROPERTIES = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, "
                         r"(\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(.*)$")
_SMEM = re.compile(r"(\d+) bytes smem")


class BuildLogError(ValueError):
    """A ptxas resource line that does not read as ptxas prints it (the message quotes it)."""


@dataclass(frozen=True)
class KernelResources:
    """What the driver reports of one compiled kernel; ``None``: not reported.

    Attributes:
        registers_per_work_item: 32-bit registers per work-item (NVIDIA build log).
        spill_store_bytes, spill_load_bytes: bytes of registers spilled to and reloaded
            from local (off-chip) memory per work-item (NVIDIA build log).
        stack_frame_bytes: per-work-item stack frame (NVIDIA build log).
        local_mem_bytes: static local (shared) memory per work-group from the build log
            (``smem``; 0 when the line names none).
        private_mem_bytes: ``CL_KERNEL_PRIVATE_MEM_SIZE`` (bytes per work-item).
        kernel_local_mem_bytes: ``CL_KERNEL_LOCAL_MEM_SIZE`` (bytes per work-group).
        source: where the register figures come from (``"-cl-nv-verbose build log"``), or
            why they are unknown.
    """

    registers_per_work_item: int | None = None
    spill_store_bytes: int | None = None
    spill_load_bytes: int | None = None
    stack_frame_bytes: int | None = None
    local_mem_bytes: int | None = None
    private_mem_bytes: int | None = None
    kernel_local_mem_bytes: int | None = None
    source: str = "not reported by this OpenCL driver"

    def to_dict(self) -> dict:
        """JSON-ready: every attribute (``None`` for what was not reported)."""
        return asdict(self)

    def describe(self) -> str:
        """One line for ``tiletraffic run``: registers and spills, or why unknown."""
        if self.registers_per_work_item is None:
            private = "" if self.private_mem_bytes is None else \
                f"; CL_KERNEL_PRIVATE_MEM_SIZE {self.private_mem_bytes} bytes"
            return f"registers per work-item: unknown ({self.source}){private}"
        return (f"registers per work-item: {self.registers_per_work_item}, spills "
                f"{self.spill_store_bytes} bytes stored / {self.spill_load_bytes} loaded, "
                f"stack frame {self.stack_frame_bytes} bytes, local memory "
                f"{self.local_mem_bytes} bytes per work-group ({self.source})")


def parse_ptxas_log(log: str, kernel_name: str) -> KernelResources | None:
    """The ptxas resource usage of ``kernel_name`` in an NVIDIA ``-cl-nv-verbose`` build
    log (format: this module's docstring), or ``None`` when the log has no
    ``Used N registers`` line for that kernel (a driver that printed none).

    A log naming one kernel's "Used" line without a ``Compiling entry function`` line
    before it is taken as that kernel's (older drivers print no entry line).

    Raises:
        BuildLogError: the kernel's entry is there but its lines are not as ptxas prints
            them (quotes the line).
    """
    current: str | None = None
    found: dict = {}
    used_lines = 0
    for line in log.splitlines():
        if (entry := _ENTRY.search(line)) is not None:
            current = entry.group(1)
            continue
        if current not in (None, kernel_name):
            continue
        if (props := _PROPERTIES.search(line)) is not None:
            found.update(stack_frame_bytes=int(props.group(1)),
                         spill_store_bytes=int(props.group(2)),
                         spill_load_bytes=int(props.group(3)))
        elif "bytes stack frame" in line:
            raise BuildLogError(f"unreadable ptxas line for {kernel_name}: {line.strip()!r}")
        elif (used := _USED.search(line)) is not None:
            used_lines += 1
            rest = used.group(2)
            smem = _SMEM.search(rest)
            found.update(registers_per_work_item=int(used.group(1)),
                         local_mem_bytes=int(smem.group(1)) if smem else 0)
            if current is None:
                break
        elif "registers" in line and "Used" in line:
            raise BuildLogError(f"unreadable ptxas line for {kernel_name}: {line.strip()!r}")
    if "registers_per_work_item" not in found:
        return None
    found.setdefault("stack_frame_bytes", None)
    found.setdefault("spill_store_bytes", None)
    found.setdefault("spill_load_bytes", None)
    return KernelResources(**found, source=f"{NV_VERBOSE} build log")


def is_nvidia_platform(platform_name: str) -> bool:
    """True for NVIDIA's own OpenCL platform (``"NVIDIA CUDA"``), whose compiler takes
    :data:`NV_VERBOSE`; PoCL's CUDA device is not it."""
    return "nvidia" in platform_name.lower() and "portable" not in platform_name.lower()
