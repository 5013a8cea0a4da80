"""A GLSL compute shader's launch file -> its schedule.

Format (every path relative to the launch file)::

    source = "gemm_tiled.comp"      # the GLSL compute shader (.comp, .glsl)
    language = "glsl"               # optional where the source ends in .comp or .glsl
    [sizes]                         # names usable below; each overridable: --set N=2048
    N = 1024
    [launch]
    workgroups = ["N // 16", "N // 16", 1]   # work-groups per dimension, as vkCmdDispatch
    [specialization]                # optional: specialization constants by name
    TS = 16                         # (tune's --param TS=8,16,32 sets them too)
    [push_constants]                # every push-constant and uniform member by name
    N = "N"
    [bindings]                      # every buffer by name (row-major float32 elements)
    A = { shape = ["N", "N"], access = "in" }
    C = { shape = ["N", "N"], access = "out" }
    [reference]                     # optional, as for OpenCL C launch files
    function = "references.py:matmul"
    terms = "N"

A buffer's name is its array's (``buffer MatrixA { float A[]; };`` is ``A``), or the block's
instance name where it has one. Expressions may also use the shader's integer ``#define``
values and constants (``TILE_SIZE``), specialization constants at the launch's values.

``extra["glsl"]`` (what a Vulkan runner dispatches): ``path`` and ``text`` of the shader;
``workgroups`` (x, y, z) and ``local_size`` (x, y, z); ``specialization``: name ->
(constant_id, value); ``bindings``: (name, set, binding, element type, access) in (set,
binding) order, each shaped as the schedule's array of that name; ``scalars``: member name
-> (``int``/``uint``/``float``, value); ``scalar_blocks``: (``push_constant`` or
``uniform``, set, binding, member names in order); ``constants``: the shader's integer
constants and ``#define`` values (name -> value, specialization constants at the launch's
values), the names the launch file's expressions may use besides its own.

The shader is checked with ``glslangValidator`` where it is installed
(:mod:`~tiletraffic.frontend.glsl.syntax`), translated into OpenCL C
(:mod:`~tiletraffic.frontend.glsl.translate`) and read by the OpenCL C front end. The
schedule's ``extra["opencl"]`` holds that OpenCL C (what ``run`` launches where no Vulkan
runner is available, and what ``crosscheck`` gives Oclgrind), ``extra["glsl"]`` the shader
and its dispatch.

Errors: :class:`~tiletraffic.frontend.launch_file.LaunchFileError` naming the file and the
field (``gemm.toml: bindings.C: ...``),
:class:`~tiletraffic.frontend.glsl.syntax.GlslError` naming the shader's file:line:column.
"""
from __future__ import annotations

import dataclasses
import math
from math import prod
from pathlib import Path

from tiletraffic.frontend.glsl import syntax
from tiletraffic.frontend.glsl.translate import Translator
from tiletraffic.frontend.launch_sizes import not_positive
from tiletraffic.frontend.opencl.translate import FrontendError, parse_kernel
from tiletraffic.frontend.reference_terms import reference_terms
from tiletraffic.frontend.shown_names import SHOWN_NAMES
from tiletraffic.simulator.ir.nodes import Schedule, ScheduleError

SUFFIXES = (".comp", ".glsl")
"""Source suffixes that make a launch file's language GLSL without ``language``."""

TOP_KEYS = ("source", "language", "sizes", "launch", "specialization", "push_constants",
            "bindings", "reference")
LAUNCH_KEYS = ("workgroups",)
TABLES = ("sizes", "specialization", "push_constants", "bindings")


def is_glsl(data: dict) -> bool:
    """Whether a launch file's tables describe a GLSL shader: ``language = "glsl"``, or no
    language and a source ending in .comp or .glsl."""
    language = data.get("language")
    if language is not None:
        return isinstance(language, str) and language.lower() == "glsl"
    source = data.get("source")
    return isinstance(source, str) and source.lower().endswith(SUFFIXES)


def kernel_name(path: Path, text: bytes | None = None) -> str:
    """The OpenCL C kernel's name for the shader at ``path`` (``text``: its bytes, read
    from ``path`` where None): its file name as an identifier (``gemm-tiled.comp`` ->
    ``gemm_tiled``), with ``_shader`` added where the shader uses that name itself."""
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in Path(path).stem)
    name = name if name and not name[0].isdigit() else f"shader_{name}"
    try:
        text = Path(path).read_bytes() if text is None else text
    except OSError:
        return name
    used = {n.text.decode() for n in syntax.identifiers(syntax.parse(text).root_node)}
    while name in used:
        name += "_shader"
    return name


def schedule(launch, buffer_argument) -> Schedule:
    """The schedule of a GLSL launch file (``launch``: a read
    :class:`~tiletraffic.frontend.launch_file.LaunchFile`; ``buffer_argument(launch,
    where, raw)``: a binding's table as a checked
    :class:`~tiletraffic.frontend.opencl.declarations.BufferArg`).

    Raises:
        LaunchFileError: a field is wrong (named): a binding or push constant the shader
            lacks or one left out, a bad shape, workgroups that are not 1 to 3 positive
            integers.
        GlslError: the reference compiler rejects the shader, or a construct is not
            modelled (file:line:column).
        FrontendError: the generated kernel is outside the OpenCL C front end's subset
            (file:line:column of the shader).
    """
    data, path = launch.data, launch.source_path
    try:
        text = path.read_bytes()
    except OSError as err:
        raise launch.error("source", f"{path} cannot be read ({err})") from None
    syntax.validate(path, text)
    specialization = {name: launch.number(f"specialization.{name}", raw)
                      for name, raw in data.get("specialization", {}).items()}
    specialization.update(launch.params)   # tuned parameters: specialization constants
    raw_bindings = data.get("bindings", {})
    def shader_names():
        for name, value in translator.shader.constants.items():
            if isinstance(value, int) and name not in launch.names:
                launch.macros[name] = value

    def length(name):
        """A binding's floats (for ``.length()``), None where the launch gives no shape."""
        raw = raw_bindings.get(name)
        if not isinstance(raw, dict) or not isinstance(raw.get("shape"), list):
            return None
        shader_names()
        return prod(launch.value(f"bindings.{name}.shape[{d}]", s)
                    for d, s in enumerate(raw["shape"]))

    kernel = kernel_name(path, text)
    translator = Translator(path, text, kernel, specialization, length)
    try:
        source, shader = translator.run()
    except syntax.GlslError as err:
        if "not a specialization constant" in str(err):
            tuned = sorted(set(launch.params) & set(str(err).split(": ")[1].split(", ")))
            raise launch.error(f"--param {tuned[0]}" if tuned else "specialization",
                               str(err)) from None
        raise
    shader_names()
    workgroups = _workgroups(launch)
    local = list(shader.local_size)
    dims = max([1] + [d + 1 for d in range(3) if local[d] > 1 or workgroups[d] > 1])
    lsize = tuple(local[:dims])
    gsize = tuple(w * x for w, x in zip(workgroups[:dims], lsize))
    args = _arguments(launch, shader, buffer_argument)
    try:
        sch = parse_kernel(source, kernel, gsize, lsize, args, sizes=launch.names,
                           path=str(path), display_names=shader.written)
    except syntax.GlslError:
        raise
    except FrontendError as err:
        if err.arg is not None:
            table = "bindings" if err.arg in raw_bindings else "push_constants"
            field = f".{err.field}" if err.field else ""
            raise launch.error(f"{table}.{err.arg}{field}", str(err)) from None
        raise
    except ScheduleError as err:
        raise launch.error("launch.workgroups", str(err)) from None
    opencl = dict(sch.extra["opencl"], launch_file=str(launch.path),
                  sizes=dict(launch.sizes), params=dict(launch.params))
    glsl = {"path": str(path), "text": text.decode("utf-8", errors="replace"),
            "workgroups": tuple(workgroups), "local_size": tuple(shader.local_size),
            "specialization": {n: (cid, specialization.get(n, d))
                               for n, (cid, d) in shader.specialization.items()},
            "bindings": tuple(dataclasses.astuple(b) for b in shader.bindings),
            "scalars": {n: (kind, args[shader.c_names.get(n, n)])
                        for n, kind in shader.scalars.items()},
            "scalar_blocks": tuple(shader.scalar_blocks),
            "constants": {n: v for n, v in shader.constants.items()
                          if isinstance(v, int) and not isinstance(v, bool)}}
    extra = {"opencl": opencl, "glsl": glsl, **reference_terms(launch, data)}
    if shader.written:
        extra[SHOWN_NAMES] = dict(shader.written)
    return dataclasses.replace(sch, family=f"glsl:{kernel}", extra=extra,
                               description=f"{path.name} (GLSL)")


def _workgroups(launch) -> list[int]:
    raw = launch.data.get("launch", {}).get("workgroups")
    if not isinstance(raw, list) or not 1 <= len(raw) <= 3:
        raise launch.error("launch.workgroups", "a list of 1 to 3 integers or expressions "
                                                "(work-groups per dimension, as vkCmdDispatch)")
    counts = [launch.value(f"launch.workgroups[{d}]", r) for d, r in enumerate(raw)]
    for d, v in enumerate(counts):
        if v < 1:
            raise launch.error(*not_positive(launch, f"launch.workgroups[{d}]", raw[d], v))
    return counts + [1] * (3 - len(counts))


def _arguments(launch, shader, buffer_argument) -> dict:
    """The kernel's arguments by their C names: each binding's description and each push
    constant's (or uniform's) value, every one checked present and known."""
    bindings = launch.data.get("bindings", {})
    scalars = launch.data.get("push_constants", {})
    known = {b.name for b in shader.bindings}
    for name in bindings:
        if name not in known:
            raise launch.error(f"bindings.{name}", f"the shader has no buffer {name}; its "
                               f"buffers: {', '.join(sorted(known)) or 'none'}")
    for name in scalars:
        if name not in shader.scalars:
            raise launch.error(f"push_constants.{name}", f"the shader has no push constant "
                               f"or uniform {name}; it has "
                               f"{', '.join(shader.scalars) or 'none'}")
    args = {}
    for b in shader.bindings:
        if b.name not in bindings:
            raise launch.error("bindings", f"{b.name} (set {b.set}, binding {b.binding}) is "
                                           "missing: give its shape and access")
        raw = bindings[b.name]
        if not isinstance(raw, dict):
            raise launch.error(f"bindings.{b.name}", "must be a table: { shape = [...], "
                                                     "access = \"in\" }")
        args[shader.c_names.get(b.name, b.name)] = buffer_argument(
            launch, f"bindings.{b.name}", raw)
    for name, kind in shader.scalars.items():
        if name not in scalars:
            raise launch.error("push_constants", f"{name} ({kind}) is missing: give its "
                                                 "value")
        value = launch.number(f"push_constants.{name}", scalars[name])
        args[shader.c_names.get(name, name)] = value
    for c_name, (name, kind) in shader.converted.items():   # uint(pc.M) of a float
        value = float(args[shader.c_names.get(name, name)])
        if not math.isfinite(value) or (kind == "uint" and value <= -1) or \
                not -2**31 <= value < 2**32:
            raise launch.error(f"push_constants.{name}", f"{value} converted to {kind} by the "
                                                         "shader is outside its range")
        args[c_name] = int(value)      # conversion truncates toward zero
    return args
