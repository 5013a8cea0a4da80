"""The errors of running a GLSL compute shader through Vulkan.

Every one is a :class:`gpu.devices.device.TiletrafficGpuError`, as every failed device run is,
and its message is one line.
"""
from __future__ import annotations

from tiletraffic.gpu.devices.device import TiletrafficGpuError


class VulkanUnavailable(TiletrafficGpuError):
    """Nothing here can run a shader through Vulkan: no Vulkan loader (``libvulkan.so.1``), no
    Python binding (the ``vulkan`` package), no physical device with a compute queue that
    writes timestamps, or no ``glslangValidator`` to compile GLSL to SPIR-V. The caller runs
    the schedule's generated OpenCL C instead and says so."""


class GlslCompileError(TiletrafficGpuError, ValueError):
    """``glslangValidator`` rejected the shader.

    Attributes:
        log: the compiler's whole output (its error lines).
    """

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


class VulkanError(TiletrafficGpuError):
    """A Vulkan call failed (creating the pipeline from the SPIR-V, allocating memory,
    submitting, waiting); the message names the call and Vulkan's result."""
