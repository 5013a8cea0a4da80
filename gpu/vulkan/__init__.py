"""A GLSL compute shader run as itself: compiled to SPIR-V by ``glslangValidator``
(:mod:`gpu.vulkan.compile`) and dispatched through Vulkan (:mod:`gpu.vulkan.dispatch`) on the
physical device :mod:`gpu.vulkan.device` opens, timed with timestamp queries;
:func:`shader_runner` gives ``run`` the runner of a GLSL schedule (:mod:`gpu.vulkan.runner`).

Without a Vulkan loader, driver, device or ``glslangValidator`` every entry point raises
:class:`VulkanUnavailable` (one line), which a caller turns into running the schedule's
generated OpenCL C instead.
"""
from tiletraffic.gpu.vulkan.compile import compile_glsl, glslang_validator
from tiletraffic.gpu.vulkan.device import VulkanDevice, open_device, vulkan_available
from tiletraffic.gpu.vulkan.dispatch import VulkanRun, dispatch
from tiletraffic.gpu.vulkan.errors import GlslCompileError, VulkanError, VulkanUnavailable
from tiletraffic.gpu.vulkan.runner import run_shader, shader_runner, unavailable_reason

__all__ = ["compile_glsl", "glslang_validator", "VulkanDevice", "open_device",
           "vulkan_available", "VulkanRun", "dispatch", "GlslCompileError", "VulkanError",
           "VulkanUnavailable", "run_shader", "shader_runner", "unavailable_reason"]
