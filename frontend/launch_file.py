"""Launch files: the sizes, NDRange and buffer shapes an OpenCL C kernel needs and its
source does not state, in TOML, so that a user's kernel is a SCHEDULE like any other.

Format (every path relative to the launch file)::

    source = "mm_tiled.cl"          # the OpenCL C file (or a list of files built as one
                                    # program, in order, as a host concatenates them)
    drop_include_lines = true       # optional: the host drops each line beginning with
                                    # "#include " from every file, then joins the files
    kernel = "mmul_tiled"           # the __kernel in it
    build_options = "-DTS=16"       # optional: -D/-U/-I options
    [sizes]                         # names usable below; each overridable: --set N=2048
    N = 1024
    [launch]
    global_size = ["N", "N"]        # integers or expressions over [sizes]
    local_size = [16, 16]
    [args]                          # every kernel argument by its name in the source
    N = "N"                         # a scalar: an expression over [sizes]
    alpha = 1.5                     # a float argument: a number or an expression
    A = { shape = ["N", "N"], access = "in" }     # row-major float32; in | out | inout
    C = { shape = ["N", "N"], access = "out" }
    Asub = { shape = ["TS", "TS"] } # a __local pointer argument: elements of its type
    Bsub = { local_bytes = "TS * TS * 4" }        # or bytes, as clSetKernelArg takes them
    bias = { null = true }          # a __global pointer passed as NULL (tests of it are
                                    # constants: bias != NULL is false)
    [reference]                     # optional
    function = "mm_ref.py:reference"   # reference(inputs: dict) -> dict of outputs
    terms = "N"                     # optional: products summed per output element (the
                                    # float tolerance; default: as the simulator counts it)
    inputs = "positive"             # optional: the inputs run draws unless told (normal)

A GLSL compute shader's launch file (``language = "glsl"``, or a ``.comp``/``.glsl``
source) has the dispatch, bindings, push constants and specialization constants instead
of the kernel, build options and arguments (:mod:`frontend.glsl.launch`).

A CUDA kernel (``language = "cuda"``, or a ``.cu``/``.cuh`` source) is launched as CUDA
launches it: ``[launch]`` gives ``grid`` (blocks) and ``block`` (threads per block), x
first, and optionally ``shared_bytes`` (dynamic shared memory for ``extern __shared__``,
bytes), and ``template`` the kernel template's arguments::

    source = "sgemm.cu"
    kernel = "sgemm_tiled"          # a __global__ function or function template
    template = { BM = 32, BK = "TS", USE_X = true }   # integers, expressions, bools, types
    [launch]
    grid = ["N / 32", "N / 32"]
    block = [32, 32]
    shared_bytes = "2 * 32 * 32 * 4"

A tuning parameter (``--param BM=16,32``) that names a template parameter replaces its
value; any other is given to the compiler as ``-DNAME=value``.

Expressions go through :mod:`frontend.expressions` (never ``eval``); a size may use the
sizes above it. Tuning parameters (``tune LAUNCH.toml --param TS=8,16``) are names too,
usable everywhere, and are passed to the compiler as ``-DNAME=value``; ``--set`` replaces
a size's value. Only the reference function's own ``.py`` file is executed.

Errors: :class:`LaunchFileError` (a ``ValueError``), one line naming the file and the
field (``mm.toml: args.C: ...``): an unknown key, an argument the kernel lacks or one left
out, a shape that is not positive, an access that contradicts the source, a bad expression.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tiletraffic.frontend.opencl.clang_ast import integer_literal, split_build_options
from tiletraffic.frontend.opencl.declarations import BUFFER_FIELDS
from tiletraffic.frontend.opencl.translate import (BufferArg, FrontendError,
                                                   WorkGroupSizeError, parse_kernel,
                                                   program_source, program_without_includes)
from tiletraffic.simulator.ir.nodes import Schedule, ScheduleError

from tiletraffic.frontend import expressions
from tiletraffic.frontend.reference_terms import reference_terms
from tiletraffic.frontend.launch_sizes import not_positive
from tiletraffic.frontend.glsl.launch import LAUNCH_KEYS as GLSL_LAUNCH_KEYS
from tiletraffic.frontend.glsl.launch import TABLES as GLSL_TABLES
from tiletraffic.frontend.glsl.launch import TOP_KEYS as GLSL_TOP_KEYS
from tiletraffic.frontend.glsl.launch import is_glsl
from tiletraffic.simulator.model.file_values import shown

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

SUFFIX = ".toml"
TOP_KEYS = ("source", "language", "kernel", "template", "build_options", "drop_include_lines",
            "sizes", "launch", "args", "reference")
LAUNCH_KEYS = ("global_size", "local_size")
CUDA_LAUNCH_KEYS = ("grid", "block", "shared_bytes")
LANGUAGES = ("opencl", "cuda")
CUDA_SUFFIXES = (".cu", ".cuh")
REFERENCE_KEYS = ("function", "terms", "inputs")


class LaunchFileError(ValueError):
    """A launch file that cannot describe a launch (see the module docstring)."""


def source_text(data: bytes) -> str:
    """An OpenCL C file's text: UTF-8, or where its bytes are not UTF-8 (a Latin-1 byte in a
    comment, say), each byte as the Latin-1 character of that value, as a C compiler reads
    a byte it does not interpret. OpenCL C's own tokens are ASCII, so the kernel is the same
    either way."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def is_launch_spec(spec) -> bool:
    """Whether SCHEDULE names a launch file (ends in ``.toml``)."""
    return isinstance(spec, (str, Path)) and str(spec).endswith(SUFFIX)


@dataclass
class LaunchFile:
    """A read launch file: the raw tables with the file they came from.

    ``sizes`` holds the evaluated [sizes] (after ``--set``), ``params`` the tuning
    parameters, both usable as names in every expression."""

    path: Path
    data: dict
    sizes: dict[str, int]
    params: dict[str, int] = field(default_factory=dict)
    macros: dict[str, int] = field(default_factory=dict)

    @property
    def names(self) -> dict[str, int]:
        """Every name an expression may use: the integer ``-D`` macros of build_options,
        the sizes, a CUDA kernel template's integer arguments, the tuning parameters (which
        replace macros and template arguments of the same name)."""
        return {**self.macros, **self.sizes, **self.template_integers(), **self.params}

    def template_integers(self) -> dict[str, int]:
        """The integer arguments of ``template`` (in order, each an expression over the
        macros, the sizes, the template's integers before it and the tuning parameters),
        with a tuning parameter's value where one has the name."""
        from tiletraffic.frontend.cuda.clang_cuda import TYPE_ARGUMENTS
        raw = self.data.get("template", {})
        out: dict[str, int] = {}
        if not isinstance(raw, dict):
            return out
        for name, value in raw.items():
            if name in self.params:
                out[name] = self.params[name]
            elif not isinstance(value, bool) and value not in TYPE_ARGUMENTS:
                out[name] = self.value(f"template.{name}", value,
                                       {**self.macros, **self.sizes, **out, **self.params})
        return out

    @property
    def source_files(self) -> list[Path]:
        """The source files: ``source``, or each file of a list of them."""
        names = self.data["source"]
        return [self.path.parent / n for n in (names if isinstance(names, list) else [names])]

    @property
    def source_path(self) -> Path:
        """The source file; for a list of files, the name of the program they make (the
        names joined by ``+``, in the launch file's folder; no file of that name is read)."""
        files = self.source_files
        if len(files) == 1:
            return files[0]
        return self.path.parent / "+".join(f.name for f in files)

    def source(self) -> str:
        """The OpenCL C text of :attr:`source_path` (:func:`source_text`); for a list of
        files, one program of them in order, as a host that concatenates them builds it:
        a line ``#include "FILE"`` per file (relative to the launch file), so that messages
        name each file's own lines. With ``drop_include_lines = true``, the files' text
        with every line beginning with ``#include `` dropped, joined by newlines, as hosts
        that concatenate sources with such a filter build them
        (:func:`~tiletraffic.frontend.opencl.translate.program_without_includes`).

        Raises:
            OSError: a file cannot be read.
        """
        files = self.source_files
        if self.data.get("drop_include_lines"):
            import os
            return program_without_includes(
                [(Path(os.path.relpath(f, self.path.parent)).as_posix(),
                  source_text(f.read_bytes())) for f in files])
        if len(files) == 1:
            return source_text(files[0].read_bytes())
        return program_source(files, self.path.parent)[0]

    @property
    def kernel(self) -> str:
        """The kernel's name: ``kernel``, or for a GLSL shader its OpenCL C translation's
        (the source's file name as an identifier)."""
        if is_glsl(self.data):
            from tiletraffic.frontend.glsl.launch import kernel_name
            return kernel_name(self.source_path)
        return self.data["kernel"]

    @property
    def language(self) -> str:
        """``cuda`` where the file says so or its source is a ``.cu``/``.cuh`` file, else
        ``opencl``."""
        return self.data.get("language") or \
            ("cuda" if self.source_path.suffix in CUDA_SUFFIXES else "opencl")

    def template(self) -> dict:
        """The kernel template's arguments (``template``), evaluated: a bool as it is, a
        type name of :data:`~tiletraffic.frontend.cuda.clang_cuda.TYPE_ARGUMENTS` as the
        name, anything else an integer expression; a tuning parameter of the same name
        replaces its value."""
        from tiletraffic.frontend.cuda.clang_cuda import TYPE_ARGUMENTS
        raw = self.data.get("template", {})
        integers = self.template_integers()
        return {name: integers.get(name, value) if name not in integers else integers[name]
                for name, value in raw.items()}

    def error(self, where: str, message: str) -> LaunchFileError:
        return LaunchFileError(f"{self.path}: {where}: {message}")

    def value(self, where: str, raw, names: dict | None = None) -> int:
        """An integer or an expression over the names, evaluated to an integer."""
        names = self.names if names is None else names
        if isinstance(raw, bool) or not isinstance(raw, (int, str)):
            raise self.error(where, f"must be an integer or an expression string, not "
                                    f"{shown(raw)}")
        if isinstance(raw, int):
            return raw
        try:
            value = expressions.parse(raw, names, expressions.NUMBER).evaluate(names)
        except expressions.ExpressionError as err:
            raise self.error(where, str(err)) from None
        if isinstance(value, float):
            if not value.is_integer():
                raise self.error(where, f"{raw!r} = {value} is not an integer (use // for "
                                        "integer division)")
            value = int(value)
        return int(value)

    def number(self, where: str, raw) -> int | float:
        """A scalar argument's value: an integer, a float (a TOML float, or an expression
        whose value is not an integer), or an expression over the names evaluated to one
        (an integer where its value is one: ``"N / 2"`` at N = 64 is 32)."""
        if isinstance(raw, float) and not isinstance(raw, bool):
            return raw
        if isinstance(raw, bool) or not isinstance(raw, (int, str)):
            raise self.error(where, f"must be a number or an expression string, not "
                                    f"{shown(raw)}")
        if isinstance(raw, int):
            return raw
        try:
            value = expressions.parse(raw, self.names, expressions.NUMBER).evaluate(self.names)
        except expressions.ExpressionError as err:
            raise self.error(where, str(err)) from None
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value

    def options(self) -> list[str]:
        """build_options as a list (shell quoting, ``-D X`` joined to ``-DX``), checked as
        :func:`tiletraffic.frontend.opencl.clang_ast.split_build_options` checks them; a relative
        ``-I`` folder is taken relative to the launch file's folder (as ``source`` is).

        Raises:
            LaunchFileError: build_options is not a string, or an option is refused
                (``-D``, ``-U`` or ``-I`` with nothing after it, an unknown option, ...).
        """
        opts = self.data.get("build_options", "")
        if not isinstance(opts, str):
            raise self.error("build_options", f"must be a string, not {shown(opts)}")
        try:
            split = split_build_options(opts)
        except FrontendError as err:
            raise self.error("build_options", str(err)) from None
        # an include folder is relative to the launch file, as its source is
        return [f"-I{self.path.parent / o[2:]}" if o.startswith("-I")
                and not Path(o[2:]).is_absolute() else o for o in split]

    def build_options(self) -> list[str]:
        """The compiler options: build_options with each tuning parameter's ``-D``
        replaced (or added)."""
        template = self.data.get("template", {}) if self.language == "cuda" else {}
        params = {k: v for k, v in self.params.items() if k not in template}
        out = [o for o in self.options()
               if not (o.startswith("-D") and o[2:].partition("=")[0] in params)]
        return out + [f"-D{k}={v}" for k, v in params.items()]


def from_tables(path, data: dict) -> LaunchFile:
    """A launch file's tables given as a dict (``data``, as TOML would read them), checked
    as :func:`read` checks a file's; ``path`` stands for the file in messages and its
    folder is where ``source`` is found.

    Raises:
        LaunchFileError: as :func:`read`.
    """
    return _checked(Path(path), data, None, None)


def read(path, overrides: dict | None = None, params: dict | None = None) -> LaunchFile:
    """Read and check the tables of the launch file ``path``.

    Args:
        overrides: ``--set`` values: size name -> integer (each must name a size).
        params: tuning parameters name -> integer (must not repeat a size's name).

    Raises:
        LaunchFileError: the file is missing or not TOML, a key is unknown or missing, a
            size or override is not an integer, an expression is malformed.
    """
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LaunchFileError(f"{path}: no such launch file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise LaunchFileError(f"{path}: cannot be read ({err})") from None
    except tomllib.TOMLDecodeError as err:
        raise LaunchFileError(f"{path}: not valid TOML ({err})") from None
    return _checked(path, data, overrides, params)


def _kind_of_launch_file(data: dict) -> str:
    """``a GLSL``, ``a CUDA`` or ``an OpenCL C``, for messages, from ``data`` as read
    (before its fields are checked)."""
    if is_glsl(data):
        return "a GLSL"
    source = data.get("source")
    cuda = data.get("language") == "cuda" or (
        data.get("language") is None and isinstance(source, str)
        and Path(source).suffix in CUDA_SUFFIXES)
    return "a CUDA" if cuda else "an OpenCL C"


def _checked(path: Path, data: dict, overrides, params) -> LaunchFile:
    """The :class:`LaunchFile` of ``data`` read from ``path``, checked (see :func:`read`)."""
    launch = LaunchFile(path, data, {}, dict(params or {}))
    glsl = is_glsl(data)
    top_keys = GLSL_TOP_KEYS if glsl else TOP_KEYS
    for key in data:
        if key not in top_keys:
            raise launch.error(key, f"unknown key; {_kind_of_launch_file(data)} launch file "
                                    f"has {', '.join(top_keys)}")
    for key in ("source",) if glsl else ("source", "kernel"):
        if key == "source" and not glsl and isinstance(data.get(key), list):
            if not data[key] or not all(isinstance(f, str) and f for f in data[key]):
                raise launch.error(key, "a list of source files must name at least one, "
                                        "each a non-empty string")
            continue
        if not isinstance(data.get(key), str) or not data[key]:
            raise launch.error(key, "missing (a string, or for OpenCL C a list of files "
                                    "built as one program)")
    if not isinstance(data.get("drop_include_lines", False), bool):
        raise launch.error("drop_include_lines", "must be true or false, not "
                                                 f"{shown(data['drop_include_lines'])}")
    if not glsl and data.get("language", "opencl") not in LANGUAGES:
        raise launch.error("language", f"must be {', '.join(LANGUAGES)} or glsl, not "
                                       f"{shown(data['language'])}")
    if not isinstance(data.get("template", {}), dict):
        raise launch.error("template", "must be a table (template = { BM = 64, ... })")
    for key, known in (("launch", GLSL_LAUNCH_KEYS if glsl else
                        LAUNCH_KEYS + CUDA_LAUNCH_KEYS),
                       ("reference", REFERENCE_KEYS)):
        table = data.get(key, {})
        if not isinstance(table, dict):
            raise launch.error(key, "must be a table")
        for k in table:
            if k not in known:
                raise launch.error(f"{key}.{k}", f"unknown key; [{key}] has "
                                                 f"{', '.join(known)}")
    for key in GLSL_TABLES if glsl else ("sizes", "args"):
        if not isinstance(data.get(key, {}), dict):
            raise launch.error(key, "must be a table")
    overrides = dict(overrides or {})
    sizes_raw = data.get("sizes", {})
    for opt in launch.options():     # in order, as the compiler reads them
        name, eq, value = opt[2:].partition("=")
        if opt.startswith("-U"):
            launch.macros.pop(name, None)
        elif opt.startswith("-D"):
            number = integer_literal(value.strip(), signed=True) if eq else 1  # -DX is 1
            if number is not None:        # else not an integer: not a name for expressions
                launch.macros[name] = number
            else:
                launch.macros.pop(name, None)
    for name in list(overrides):
        if name in launch.macros and name not in sizes_raw:
            launch.params[name] = overrides.pop(name)  # --set of a -D macro replaces it
        elif name not in sizes_raw:
            raise launch.error(f"--set {name}", f"not a size of this file; its sizes: "
                                                f"{', '.join(sizes_raw) or 'none'}")
    for name in launch.params:
        if name in sizes_raw:
            raise launch.error(f"--param {name}", "is a size of this file; use --set for it")
    for name, raw in sizes_raw.items():
        if not name.isidentifier():
            raise launch.error(f"sizes.{name}", "a size's name must be an identifier")
        raw = overrides.get(name, raw)
        launch.sizes[name] = launch.value(f"sizes.{name}", raw,
                                          {**launch.macros, **launch.sizes, **launch.params})
    for f in launch.source_files:
        if not f.is_file():
            raise launch.error("source", f"{f} is not a file")
    return launch


def names_read(launch: LaunchFile) -> frozenset[str]:
    """The names the launch file's expressions read ([sizes], [launch], [args] and
    ``reference.terms``); an expression that does not parse reads none here (building
    the schedule reports it)."""
    def table(key):
        value = launch.data.get(key, {})
        return value if isinstance(value, dict) else {}

    raws = list(table("sizes").values())
    for key in LAUNCH_KEYS + CUDA_LAUNCH_KEYS + GLSL_LAUNCH_KEYS:
        value = table("launch").get(key)
        raws += value if isinstance(value, list) else [value]
    raws += list(table("template").values())
    raws += list(table("push_constants").values()) + list(table("specialization").values())
    for raw in [*table("args").values(), *table("bindings").values()]:
        shape = raw.get("shape") if isinstance(raw, dict) else [raw]
        raws += shape if isinstance(shape, list) else []
        if isinstance(raw, dict):
            raws.append(raw.get("local_bytes"))
    raws.append(table("reference").get("terms"))
    used: set[str] = set()
    for raw in raws:
        if isinstance(raw, str):
            try:
                used |= expressions.parse(raw, launch.names).names
            except expressions.ExpressionError:
                pass
    return frozenset(used)


def _shape_entry(launch: LaunchFile, where: str, raw):
    """A shape entry for the front end: the size's name when it is one, else its value."""
    if isinstance(raw, str) and raw.strip() in launch.names:
        return raw.strip()
    value = launch.value(where, raw)
    return value


def _buffer_argument(launch: LaunchFile, where: str, raw: dict) -> BufferArg:
    """A buffer's (or a ``__local`` pointer's) table: its shape, access and local_bytes
    checked where given (the front end says which the source's argument needs)."""
    unknown = sorted(set(raw) - set(BUFFER_FIELDS))
    if unknown:
        raise launch.error(f"{where}.{unknown[0]}", "unknown key; a buffer has shape and "
                                                    "access (an integer buffer data; "
                                                    "a __local pointer shape or "
                                                    "local_bytes; a NULL pointer null = "
                                                    "true)")
    if "null" in raw:
        if raw["null"] is not True:
            raise launch.error(f"{where}.null", "must be true (a pointer passed as NULL), "
                                                f"not {shown(raw['null'])}")
        if len(raw) > 1:
            raise launch.error(f"{where}.null", "stands alone: a pointer passed as NULL has "
                                                "no shape, access or local_bytes")
        return BufferArg((), None, None, True)
    shape = raw.get("shape")
    local_bytes = raw.get("local_bytes")
    if shape is None and local_bytes is None:
        raise launch.error(f"{where}.shape", "missing (a list of sizes)")
    entries = ()
    if shape is not None:
        if not isinstance(shape, list) or not shape:
            raise launch.error(f"{where}.shape", "must be a list of sizes (each a number or "
                               f"an expression string), not {shown(shape)}"
                               + (f'; write shape = ["{shape}"]' if isinstance(shape, str)
                                  else ""))
        entries = tuple(_shape_entry(launch, f"{where}.shape[{d}]", s)
                        for d, s in enumerate(shape))
        for d, e in enumerate(entries):
            v = launch.names[e] if isinstance(e, str) else e
            if v < 1:
                raise launch.error(*not_positive(launch, f"{where}.shape[{d}]", shape[d], v))
    access = raw.get("access")
    if access is not None and access not in ("in", "out", "inout"):
        raise launch.error(f"{where}.access", f"must be one of in, out, inout, not "
                                              f"{shown(access)}")
    if local_bytes is not None:
        local_bytes = launch.value(f"{where}.local_bytes", local_bytes)
    data = None
    if "data" in raw:
        dims = tuple(launch.names[e] if isinstance(e, str) else e for e in entries)
        data = int_buffer_data(launch, f"{where}.data", raw["data"], dims)
    return BufferArg(entries, access, local_bytes, data=data)


def int_buffer_data(launch: LaunchFile, where: str, raw, dims: tuple):
    """The contents of an integer buffer of shape ``dims``, given by ``raw``: ``"FILE.npy"``
    (a numpy array file beside the launch file, read without pickles) or
    ``"FILE.py:FUNCTION"`` (the user's own Python file, executed: ``FUNCTION(sizes)``, with
    the launch's sizes as a dict of name to int, returns the array). Flat, row-major, a
    read-only int64 numpy array.

    Raises:
        LaunchFileError: a file that cannot be read, a function that raises or exits (its
            exception type and message, with the sizes it was given), an array of another
            shape, or values that are not integers in the 32-bit range (one line naming the
            value and the limit).
    """
    import numpy as np
    from tiletraffic.frontend import user_schedule
    if not isinstance(raw, str) or not (raw.endswith(".npy") or ".py:" in raw):
        raise launch.error(where, f"must be \"FILE.npy\" or \"FILE.py:FUNCTION\", not "
                                  f"{shown(raw)}")
    if raw.endswith(".npy"):
        try:
            values = np.load(launch.path.parent / raw, allow_pickle=False)
        except (OSError, ValueError) as err:
            raise launch.error(where, f"cannot read {raw}: {err}") from None
    else:
        file, _, name = raw.rpartition(":")
        try:
            fn = user_schedule.load_function(f"{launch.path.parent / file}:{name}")
        except user_schedule.UserScheduleError as err:
            raise launch.error(where, str(err)) from None
        sizes = dict(launch.names)
        call = f"{raw}({{{', '.join(f'{k}: {v}' for k, v in sizes.items())}}})"
        try:
            values = np.asarray(fn(sizes))
        except SystemExit as err:
            raise launch.error(where, f"{call} {user_schedule.exited(err)} instead of "
                                      "returning the buffer's contents") from None
        except Exception as err:  # noqa: BLE001 - the user's code: one line, not a traceback
            raise launch.error(where, f"{call} raised {type(err).__name__}: {err}") from err
    if values.shape != tuple(dims):
        raise launch.error(where, f"{raw} gives shape {tuple(values.shape)}; the buffer's "
                                  f"shape is {tuple(dims)}")
    if values.dtype.kind not in "iub":
        raise launch.error(where, f"{raw} holds {values.dtype}; an integer buffer needs "
                                  "integers")
    flat = values.reshape(-1)
    outside = np.flatnonzero((flat < -(2 ** 31)) | (flat >= 2 ** 32))
    if outside.size:
        raise launch.error(where, f"value {int(flat[outside[0]])} is outside the 32-bit "
                                  f"integers ({-(2 ** 31)} to {2 ** 32 - 1})")
    flat = np.array(flat, dtype=np.int64)
    flat.setflags(write=False)
    return flat


def schedule(launch: LaunchFile) -> Schedule:
    """The schedule of the launch file's kernel.

    Raises:
        LaunchFileError: a field is wrong (named), including an argument the kernel lacks or
            one left out, an access contradicting the source and a local size the kernel's
            ``reqd_work_group_size`` does not allow (``launch.local_size``).
        tiletraffic.frontend.opencl.translate.FrontendError: the source is outside the supported subset
            (file:line:column of the source).
    """
    data = launch.data
    if is_glsl(data):
        from tiletraffic.frontend.glsl.launch import schedule as glsl_schedule
        return glsl_schedule(launch, _buffer_argument)
    table = data.get("launch", {})
    sizes = {}
    keys, other = LAUNCH_KEYS, CUDA_LAUNCH_KEYS
    if launch.language == "cuda":
        keys, other = CUDA_LAUNCH_KEYS[:2], LAUNCH_KEYS
    wrong = [k for k in other if k in table]
    if wrong:
        lang = "a CUDA kernel" if launch.language == "cuda" else "an OpenCL kernel"
        raise launch.error(f"launch.{wrong[0]}", f"{lang}'s launch gives "
                                                 f"{' and '.join(keys)}")
    if launch.language == "opencl" and "template" in data:
        raise launch.error("template", "template arguments are for CUDA kernels "
                                       "(language = \"cuda\")")
    for key in keys:
        raw = table.get(key)
        if not isinstance(raw, list) or not 1 <= len(raw) <= 3:
            raise launch.error(f"launch.{key}", "a list of 1 to 3 integers or expressions")
        sizes[key] = [launch.value(f"launch.{key}[{d}]", r) for d, r in enumerate(raw)]
        for d, v in enumerate(sizes[key]):
            if v < 1:
                raise launch.error(*not_positive(launch, f"launch.{key}[{d}]", table[key][d],
                                                 v))
    args = {name: (_buffer_argument(launch, f"args.{name}", raw) if isinstance(raw, dict)
                   else [launch.number(f"args.{name}[{k}]", r) for k, r in enumerate(raw)]
                   if isinstance(raw, list) else launch.number(f"args.{name}", raw))
            for name, raw in data.get("args", {}).items()}
    source_path = launch.source_path
    try:
        source = launch.source()
    except OSError as err:
        raise launch.error("source", f"{source_path} cannot be read ({err})") from None
    try:
        if launch.language == "cuda":
            sch = _cuda_kernel(launch, source, sizes, args)
        else:
            sch = parse_kernel(source, launch.kernel, sizes["global_size"],
                               sizes["local_size"], args, sizes=launch.names,
                               build_options=launch.build_options(), path=str(source_path))
    except WorkGroupSizeError as err:
        raise launch.error("launch.local_size", str(err)) from None
    except FrontendError as err:
        if err.arg is not None:
            field = f".{err.field}" if err.field else ""
            raise launch.error(f"args.{err.arg}{field}", str(err)) from None
        if err.field in ("template", "shared_bytes"):
            where = "template" if err.field == "template" else "launch.shared_bytes"
            raise launch.error(where, str(err)) from None
        if "no __kernel named" in str(err) or "no __global__ kernel named" in str(err):
            raise launch.error("kernel", str(err)) from None
        raise
    except ScheduleError as err:
        raise launch.error("launch", str(err)) from None
    language = "cuda" if "cuda" in sch.extra else "opencl"
    extra = {language: dict(sch.extra[language], launch_file=str(launch.path),
                            sizes=dict(launch.sizes), params=dict(launch.params)),
             **reference_terms(launch, data)}
    import dataclasses
    return dataclasses.replace(sch, extra=extra)


def _cuda_kernel(launch: LaunchFile, source: str, sizes: dict, args: dict) -> Schedule:
    """The schedule of a CUDA launch file's kernel (``grid``, ``block``, ``shared_bytes``,
    ``template``)."""
    from tiletraffic.frontend.cuda.translate import parse_kernel as parse_cuda_kernel
    table = launch.data.get("launch", {})
    shared = table.get("shared_bytes")
    if shared is not None:
        shared = launch.value("launch.shared_bytes", shared)
    return parse_cuda_kernel(source, launch.kernel, sizes["grid"], sizes["block"], args,
                             sizes=launch.names, template=launch.template(),
                             shared_bytes=shared, build_options=launch.build_options(),
                             path=str(launch.source_path))


def load(spec, overrides: dict | None = None, params: dict | None = None) -> Schedule:
    """:func:`schedule` of :func:`read` ``(spec, overrides, params)``."""
    return schedule(read(spec, overrides, params))


def reference_function(spec):
    """The launch file's reference as ``inputs -> {output name: array}`` (or, for a function
    that returns one array, that array: the kernel's one output), or ``None`` without a
    [reference] table. Each output the function names is checked
    (``simulator.engine.reference.references``).

    Raises:
        LaunchFileError: the function cannot be loaded; when called, it returned a name that
            is not one of the kernel's outputs (access ``out`` or ``inout``).
    """
    launch = read(spec)
    ref = launch.data.get("reference", {}).get("function")
    if ref is None:
        return None
    from tiletraffic.frontend import user_schedule
    if not isinstance(ref, str) or ":" not in ref:
        raise launch.error("reference.function", f"must be FILE.py:FUNCTION, not "
                                                 f"{shown(ref)}")
    file, _, name = ref.rpartition(":")
    try:
        fn = user_schedule.load_function(f"{launch.path.parent / file}:{name}")
    except user_schedule.UserScheduleError as err:
        raise launch.error("reference.function", str(err)) from None

    args = launch.data.get("bindings" if is_glsl(launch.data) else "args", {})
    outputs = [a for a, raw in args.items()
               if isinstance(raw, dict) and raw.get("access") in ("out", "inout")]

    from tiletraffic.simulator.engine.reference import ReferenceFunctionError
    reporting = user_schedule.reporting_reference(fn, ref)   # its own errors: one line

    def named_outputs(inputs):
        out = reporting(inputs)
        if isinstance(out, dict):
            if not out:
                raise ReferenceFunctionError(
                    f"{launch.path}: reference.function: returned no output; the kernel's "
                    f"outputs are {', '.join(outputs)}")
            unknown = [str(key) for key in out if outputs and key not in outputs]
            if unknown:
                raise ReferenceFunctionError(
                    f"{launch.path}: reference.function: returned "
                    f"{', '.join(map(repr, unknown))}; the kernel's "
                    f"output{'s are' if len(outputs) > 1 else ' is'} {', '.join(outputs)}")
        return out
    named_outputs.__name__ = name
    return named_outputs


def parse_assignments(items, what: str = "--set") -> dict[str, int]:
    """``["N=2048", "M=64"]`` as ``{"N": 2048, "M": 64}``.

    Raises:
        LaunchFileError: an item without ``=`` or whose value is not an integer.
    """
    out = {}
    for item in items or ():
        name, eq, value = item.partition("=")
        name = name.strip()
        try:
            if not eq or not name.isidentifier():
                raise ValueError
            out[name] = int(value.strip())
        except ValueError:
            raise LaunchFileError(f"{what} {item!r}: write NAME=INTEGER") from None
    return out


def size_binding(schedule: Schedule):
    """How the launch of a launch file's ``schedule`` follows from the file's [sizes], for
    the closed forms derived from its IR
    (:class:`simulator.model.derived_counts.SizeBinding`): each size given as an integer
    (or set with ``--set``) is a size of the forms; a size given as an expression of others
    stands for that expression; a size the work-group size, a template argument or a
    specialization constant reads (and each size it reads) is a constant (the counting
    needs a fixed work-group; the others are compiled into the kernel); the integer arguments and the NDRange are the file's
    expressions of them (the -D macros, a GLSL shader's constants and the tuning
    parameters at their values). ``None``
    for a schedule that is not a launch file's.

    Raises:
        LaunchFileError: the launch file can no longer be read.
    """
    from tiletraffic.simulator.ir.nodes import Param
    from tiletraffic.simulator.model.derived_counts import SizeBinding

    info = schedule.extra.get("opencl") or schedule.extra.get("cuda") or {}
    if info.get("launch_file") is None:
        return None
    launch = read(info["launch_file"], params=info.get("params") or {})
    constants = schedule.extra.get("glsl", {}).get("constants", {})
    values = {**constants, **launch.names, **info.get("sizes", {})}
    symbols: dict = {}
    free: list[tuple[str, int]] = []
    table = launch.data.get("launch", {})
    compiled = {**launch.data.get("template", {}), **launch.data.get("specialization", {})}
    fixed = set()       # the sizes the work-group size and the compiled-in values read
    for raw in (*table.get("local_size", []), *table.get("block", []),
                *(v for k, v in compiled.items() if k not in launch.params)):
        try:
            fixed |= expressions.parse(raw, values).names if isinstance(raw, str) else set()
        except expressions.ExpressionError:
            pass
    for name, raw in reversed(launch.data.get("sizes", {}).items()):
        if name in fixed and isinstance(raw, str):  # and the sizes that size reads
            fixed |= expressions.parse(raw, values).names
    for name, raw in launch.data.get("sizes", {}).items():
        form = None if isinstance(raw, int) else _form(launch, raw, symbols, values)
        if name in fixed:
            continue                          # a constant (see above)
        if form is None or launch.value(f"sizes.{name}", raw, values) != values[name]:
            symbols[name] = Param(name)       # an integer, or set with --set
            free.append((name, values[name]))
        else:
            symbols[name] = form
    params = {}
    for key in ("args", "push_constants"):
        for name, raw in launch.data.get(key, {}).items():
            form = None if isinstance(raw, dict) else _form(launch, raw, symbols, values)
            if form is not None:
                params[name] = form
    return SizeBinding(tuple(free), params, _global_size(launch, schedule, symbols, values))


def _global_size(launch: LaunchFile, schedule: Schedule, symbols: dict, values: dict):
    """The NDRange of the launch as expressions of the sizes: ``global_size``, or the
    work-groups (CUDA's ``grid``, GLSL's ``workgroups``) times the work-group size; None
    where an entry is no integer expression or the dimensions do not match."""
    from tiletraffic.simulator.ir.nodes import Const

    table = launch.data.get("launch", {})
    groups = next((key for key in ("grid", "workgroups") if key in table), None)
    entries = table.get(groups or "global_size", [])
    forms = [_form(launch, raw, symbols, values) for raw in entries]
    dims = len(schedule.global_size)
    if all(isinstance(f, Const) and f.value == 1 for f in forms[dims:]):
        forms = forms[:dims]                  # trailing dimensions of one work-group
    if len(forms) != dims or any(f is None for f in forms):
        return None
    if groups is None:
        return tuple(forms)
    return tuple(f * Const(items) for f, items in zip(forms, schedule.local_size))


def _form(launch: LaunchFile, raw, symbols: dict, values: dict):
    """An integer entry of the launch file (an integer or an expression string) as an IR
    integer expression of the sizes in ``symbols``; None where it is none (a float)."""
    from tiletraffic.simulator.ir.nodes import Const

    if isinstance(raw, bool) or not isinstance(raw, (int, str)):
        return None
    if isinstance(raw, int):
        return Const(raw)
    try:
        return expressions.as_int_expr(expressions.parse(raw, values, expressions.NUMBER),
                                       symbols, values)
    except expressions.ExpressionError:
        return None
