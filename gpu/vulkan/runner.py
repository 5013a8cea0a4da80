"""``run`` of a GLSL schedule as the shader itself: compiled to SPIR-V, dispatched through
Vulkan, every dispatch checked against the reference and timed with timestamp queries.

:func:`shader_runner` is what :mod:`gpu.runtime.shader_runner` asks for: :func:`run_shader`
where a Vulkan device and ``glslangValidator`` exist, else None (``run`` then launches the
schedule's OpenCL C translation and says so).

The schedule is a GLSL launch's (``schedule.extra["glsl"]``: the shader's path, its
work-group counts, specialization constants by name, bindings as ``(name, set, binding,
element, access)`` and push constants by name). Each binding's buffer holds its array's
float32 elements (C order); inputs are drawn as for an OpenCL launch
(:func:`simulator.engine.data_inputs.random_inputs`), outputs start as the unwritten-NaN fill so
an element no dispatch writes is found. Push-constant and uniform-block members are laid out
at the offsets the compiled SPIR-V gives them, with the schedule's values by name.
"""
from __future__ import annotations

import os
import re
import time
import warnings
import zlib
from pathlib import Path

import numpy as np

from tiletraffic.gpu.runtime.checked_run import (DeviceRun, UnsafeLaunchError,
                                                  check_references, run_on_device)
from tiletraffic.gpu.runtime.launch import CheckResult
from tiletraffic.gpu.runtime.launch_counts import check_launch_counts
from tiletraffic.gpu.runtime.run_result import RunResult
from tiletraffic.gpu.runtime.shader_runner import TranslationRunWarning
from tiletraffic.gpu.vulkan.compile import compile_glsl, glslang_validator
from tiletraffic.gpu.vulkan.device import open_device
from tiletraffic.gpu.vulkan.dispatch import dispatch
from tiletraffic.gpu.vulkan.errors import GlslCompileError, VulkanUnavailable
from tiletraffic.gpu.vulkan.spirv import interface
from tiletraffic.frontend.glsl.syntax import compilable
from tiletraffic.simulator.engine.launch_check import check_launch as check_before_launch
from tiletraffic.simulator.engine.reference import references
from tiletraffic.simulator.engine.data_inputs import random_inputs
from tiletraffic.simulator.engine.unwritten import unwritten_fill
from tiletraffic.simulator.ir.nodes import Schedule

TIMING = "timestamps"
"""``RunResult.timing`` of a Vulkan run: ``vkCmdWriteTimestamp`` around each dispatch."""


class ShaderFallbackWarning(TranslationRunWarning):
    """The shader could not be compiled for Vulkan as written: its OpenCL C translation ran
    on the OpenCL device instead."""


_PACK = {"uint": np.uint32, "int": np.int32, "float": np.float32, "uint64": np.uint64,
         "int64": np.int64, "double": np.float64}


OFF_ENV = "TILETRAFFIC_VULKAN"
"""The environment variable that, set to ``off`` (or ``0``), keeps ``run`` from Vulkan: a GLSL
schedule then runs as its OpenCL C translation (to time both on one device)."""


def shader_runner():
    """:func:`run_shader` where a Vulkan device and ``glslangValidator`` exist and
    ``TILETRAFFIC_VULKAN`` is not ``off``, else None."""
    return run_shader if unavailable_reason() is None else None


def unavailable_reason() -> str | None:
    """None where :func:`shader_runner` offers a runner, else why not (one line)."""
    if os.environ.get(OFF_ENV, "").strip().lower() in ("off", "0", "no", "false"):
        return f"{OFF_ENV}={os.environ[OFF_ENV]} turns the Vulkan runner off"
    try:
        glslang_validator()
        open_device()
    except VulkanUnavailable as err:
        return str(err)
    return None


def _block(members, values: dict, what: str) -> bytes:
    """A block's bytes: each ``(name, offset, kind)`` member's value packed at its offset."""
    data = bytearray()
    for name, offset, kind in members:
        if kind not in _PACK:
            raise ValueError(f"{what} member {name}: a {kind} member is not supported "
                             "(scalars of 32 or 64 bits only)")
        if name not in values:
            raise ValueError(f"{what} member {name}: no value for it in the schedule "
                             f"(it has {', '.join(sorted(values)) or 'none'})")
        raw = np.array(values[name]).astype(_PACK[kind]).tobytes()
        data.extend(b"\0" * (offset + len(raw) - len(data)))
        data[offset:offset + len(raw)] = raw
    data.extend(b"\0" * (-len(data) % 4))
    return bytes(data)


def _specialization(glsl: dict, shader) -> dict:
    """``constant_id -> value`` of every specialization constant the launch sets, typed as
    the shader declares it."""
    out = {}
    for name, value in glsl.get("specialization", {}).items():
        if name not in shader.spec_names:
            raise ValueError(f"specialization constant {name}: the compiled shader has none "
                             f"of that name (it has {', '.join(shader.spec_names) or 'none'})")
        cid, kind = shader.spec_names[name]
        out[cid] = (bool(value) if kind == "bool" else
                    _PACK.get(kind, np.float32)(value))
    return out


def _buffers(schedule: Schedule, glsl: dict, shader, inputs: dict) -> tuple[dict, dict]:
    """``(set, binding) -> array`` of every buffer and uniform block, and ``output name ->
    (set, binding)``."""
    p = schedule.param_values
    arrays = {a.name: a for a in schedule.arrays}
    buffers, outputs = {}, {}
    for name, set_, binding, _element, _access in glsl["bindings"]:
        if name not in arrays:
            raise ValueError(f"binding {name} (set {set_}, binding {binding}): the schedule "
                             f"has no array {name}")
        a = arrays[name]
        shape = tuple(p[s] for s in a.shape)
        buffers[(set_, binding)] = (np.ascontiguousarray(inputs[name], np.float32)
                                    if a.is_input else unwritten_fill(shape))
        if a.is_output:
            outputs[name] = (set_, binding)
    for key, members in shader.uniform_members.items():
        block = _block(members, p, f"uniform block (set {key[0]}, binding {key[1]})")
        buffers[key] = np.frombuffer(block + b"\0" * (-len(block) % 16), np.uint8).copy()
    return buffers, outputs


def _slug(name: str) -> str:
    return "vulkan-" + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def run_shader(target, schedule: Schedule, *, repeat: int = 10, warmup: int = 2,
               rng: np.random.Generator | None = None, reference_fn=None,
               inputs: str = "normal", unchecked: bool = False, launch_check=None,
               reused: bool = False) -> DeviceRun:
    """Check, compile, dispatch, time and check the result of a GLSL ``schedule`` through
    Vulkan; arguments and result as :func:`gpu.runtime.checked_run.run_on_device`'s
    (``target``, the OpenCL device, is not used: the shader runs on the Vulkan physical
    device :func:`gpu.vulkan.device.open_device` opens, whose name the result carries).

    Every dispatch's outputs are fingerprinted; the first, the last and every one that
    differs from all before it are checked against the reference. A name the shader gives
    with a word GLSL reserves (``output``, which the front end reads as a name) is renamed
    for the compiler (a buffer's name changes nothing in a dispatch); a shader that
    ``glslangValidator`` rejects all the same runs as its OpenCL C translation on ``target``
    instead (:func:`gpu.runtime.checked_run.run_on_device`), with a
    :class:`ShaderFallbackWarning` that says why.

    Raises:
        ValueError: ``repeat``/``warmup`` out of their limits, a push constant, uniform
            member or specialization constant the schedule gives no value for.
        UnsafeLaunchError: the check before launch found hazards, unless ``unchecked``.
        VulkanUnavailable: no Vulkan device or compiler.
        GlslCompileError, VulkanError: compiling or dispatching failed.
        ResultMismatchError: a dispatch's result differs from the reference beyond tolerance.
    """
    check_launch_counts(repeat, warmup)
    glsl = schedule.extra["glsl"]
    rng = rng or np.random.default_rng()
    checked = launch_check if launch_check is not None else check_before_launch(schedule,
                                                                                 rng=rng)
    if checked.hazards and not unchecked:
        raise UnsafeLaunchError(checked)
    started = time.perf_counter()
    try:
        text = Path(glsl["path"]).read_bytes()
        renamed = compilable(text)   # names GLSL reserves (output) renamed: no effect
        spirv = compile_glsl(None if renamed == text else renamed.decode("utf-8", "replace"),
                             path=glsl["path"])
    except GlslCompileError as err:
        warnings.warn(f"{str(err).rstrip('.')}; running the shader's OpenCL C translation "
                      "on the OpenCL device instead", ShaderFallbackWarning, stacklevel=2)
        return run_on_device(target, schedule, repeat=repeat, warmup=warmup, rng=rng,
                             reference_fn=reference_fn, inputs=inputs, unchecked=unchecked,
                             launch_check=checked, reused=reused)
    build_s = time.perf_counter() - started
    shader = interface(spirv)
    kind = inputs
    drawn = random_inputs(schedule, rng, kind)
    refs = references(schedule, drawn, reference_fn, sum_length=checked.sum_length)
    buffers, outputs = _buffers(schedule, glsl, shader, drawn)
    push = _block(shader.push_members, schedule.param_values, "push-constant block") \
        if shader.push_constants else b""
    total = warmup + repeat
    checks: dict[int, CheckResult] = {}
    worst: dict[int, str] = {}
    digests: list[int] = []
    shapes = {a.name: tuple(schedule.param_values[s] for s in a.shape)
              for a in schedule.arrays}

    def check_dispatch(i: int, out: dict) -> None:
        named = {n: out[key].reshape(shapes[n]) for n, key in outputs.items()}
        digest = zlib.crc32(b"".join(named[n].tobytes() for n in sorted(named)))
        new = digest not in digests
        digests.append(digest)
        if not (new or i == total - 1):
            return
        check_references(refs, named, i, warmup, repeat, schedule.family, checks, worst,
                         unit="dispatch")

    run = dispatch(spirv, buffers, workgroups=glsl["workgroups"], push_constants=push,
                   specialization=_specialization(glsl, shader), repeat=repeat,
                   warmup=warmup, outputs=sorted(set(outputs.values())),
                   check_output=check_dispatch)
    times_s = tuple(t * 1e-9 for t in run.times_ns)
    local = tuple(glsl["local_size"])
    result = RunResult(
        outputs={n: run.outputs[key].reshape(shapes[n]) for n, key in outputs.items()},
        kernel_name=schedule.extra.get("opencl", {}).get("kernel", "main"),
        schedule_name=schedule.family, build_time_s=build_s, build_cached=False,
        kernel_times_s=times_s, median_s=run.median_ns * 1e-9, min_s=min(times_s),
        max_s=max(times_s), device_slug=_slug(run.device), device_name=run.device,
        global_size=tuple(w * s for w, s in zip(glsl["workgroups"], local)),
        local_size=local, warmup=warmup, timing=TIMING, output_digests=tuple(digests),
        distinct_outputs=len(set(digests)), checked_launches=tuple(sorted(checks)))
    return DeviceRun(schedule, result, checks[total - 1], checks, kind, checked,
                     launch_check is not None and reused, tuple(r.output for r in refs),
                     worst[total - 1])
