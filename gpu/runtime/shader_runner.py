"""Which runner launches a GLSL schedule on ``run``: the shader itself through Vulkan where
a Vulkan runner is available, else the schedule's OpenCL C translation on the OpenCL
device, with a one-line note.

A Vulkan runner is offered by the package :data:`VULKAN_MODULE` through its function
``shader_runner()``, which returns None where it cannot run (no Vulkan device, no
SPIR-V compiler) or a function with the signature and result of
:func:`tiletraffic.gpu.runtime.checked_run.run_on_device`::

    runner(target, schedule, *, repeat, warmup, rng, reference_fn, inputs, unchecked,
           launch_check) -> CheckedRun

which compiles ``schedule.extra["glsl"]`` (the shader's path and text, its work-group
counts, specialization constants, bindings, push constants and uniforms, as
:mod:`tiletraffic.frontend.glsl.launch` describes them) to SPIR-V, dispatches it, checks
every dispatch against the reference and times it. A shader that names something with a
word GLSL reserves (``output``) is read with a warning but rejected by the SPIR-V
compiler; :func:`tiletraffic.frontend.glsl.syntax.compilable` gives its text with those
names changed.
"""
from __future__ import annotations

import importlib
import warnings
from typing import Callable

VULKAN_MODULE = "tiletraffic.gpu.vulkan"
"""The package whose ``shader_runner()`` gives the Vulkan runner."""


def is_shader(schedule) -> bool:
    """Whether ``schedule`` came from a GLSL shader (its ``extra`` holds ``glsl``)."""
    return "glsl" in getattr(schedule, "extra", {})


def vulkan_runner() -> Callable | None:
    """The Vulkan runner (see the module docstring), or None where none is available."""
    try:
        module = importlib.import_module(VULKAN_MODULE)
    except ImportError:
        return None
    find = getattr(module, "shader_runner", None)
    return find() if callable(find) else None


def fallback_note(schedule) -> str:
    """The one-line note for a GLSL schedule run as its OpenCL C translation."""
    path = schedule.extra["glsl"]["path"]
    return (f"note: no Vulkan runner is available: running {path} as its OpenCL C "
            "translation on the OpenCL device")


class TranslationRunWarning(UserWarning):
    """A GLSL schedule is run as its OpenCL C translation: no Vulkan runner is
    available."""


def runner_for(schedule, run_on_device: Callable) -> Callable:
    """The function that runs ``schedule``: the Vulkan runner for a GLSL schedule where
    one is available, else ``run_on_device`` (for a GLSL schedule with a
    :class:`TranslationRunWarning` that says so)."""
    if not is_shader(schedule):
        return run_on_device
    runner = vulkan_runner()
    if runner is None:
        warnings.warn(fallback_note(schedule).removeprefix("note: "), TranslationRunWarning,
                      stacklevel=2)
        return run_on_device
    return runner
