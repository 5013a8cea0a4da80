"""OpenCL C into the schedule IR: one ``__kernel`` of a user's source becomes a
:class:`~tiletraffic.simulator.ir.nodes.Schedule` that every command counts, checks, models
and runs.

``parse_kernel(source, kernel, global_size, local_size, args)`` parses the source with
libclang (:mod:`frontend.opencl.clang_ast`: OpenCL C 1.2, the real preprocessor, ``-D`` build
options) and walks clang's tree of the kernel. The subset it accepts:

- arguments: ``__global`` (or ``__constant``) ``float*``/``float4*`` buffers and
  ``int``/``uint`` scalars (``const`` or not);
- integers: ``int``/``uint``/``size_t`` variables bound once (a ``Let``), literals and
  macros, the kernel's scalars, ``get_global_id``, ``get_local_id``, ``get_group_id``,
  ``get_local_size``, ``get_num_groups``, ``get_global_size``; ``+ - * / %``, integer
  ``min``/``max``, shifts by constants (``>>`` of a negative value rounds down, as OpenCL's);
  in C's types: each value is congruent to C's modulo 2**bits of its type, and exact (a
  :class:`~tiletraffic.simulator.ir.nodes.Wrap` where its bounds for the launch leave the
  type's range: ``uint i = 0; i - 1`` is 4294967295) where a comparison, ``/``, ``%``,
  ``>>``, ``min``/``max``, an index or a widening conversion reads it; a ``size_t`` below 0
  there is refused by the simulator where a work-item computes it (64-bit unsigned values
  are beyond its int64), a loop variable below 0 compared as unsigned by the front end;
- floats: private scalars, ``float4`` private vectors, private arrays (``= {0}`` zero-fills),
  ``__local`` arrays of static shape (any rank), ``+ - *``, ``fma``/``mad``, the IR's
  built-ins (``fmax``, ``fmin``, ``fabs``, ``sqrt``, ``exp``; float ``max``/``min`` as
  ``fmax``/``fmin``), ``select`` and ``?:`` on integer conditions (``?:`` without loads in its
  branches: C loads only the branch taken), loads of the buffers
  indexed by integer expressions, ``vload2/4``, ``vstore2/4`` and ``float4`` pointer casts;
- statements: ``for`` loops counting up (``<``, ``<=``; ``++i``, ``i++``, ``i += s``,
  ``i = i + s``), ``if``/``else`` on integer conditions, ``return``, ``barrier`` with its
  fence flags (``work_group_barrier`` too, when the build options ask for ``-cl-std=CL2.0``
  or ``CL3.0``) and its place in the source for messages (``Barrier.source``, with the
  helper calls it is inlined through), ``#pragma unroll``, calls of helper functions
  defined in the source (inlined).

Buffers are row-major float32 of the shape the caller gives: a flat index
``row * N + col`` of a buffer shaped ``(M, N)`` is read as the two indices ``(row, col)``
(each checked against its own extent, as the IR's arrays are), any other flat index as
``(flat / N, flat % N)``.

Anything else raises :class:`FrontendError` with ``file:line:column``, the construct and what
to write instead; a branch or an index that depends on loaded values is refused because
the traffic would depend on the data.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.static import int_op_bounds, trunc_div, wrap_int

from tiletraffic.frontend.opencl import clang_ast as C
from tiletraffic.frontend.opencl.clang_ast import FrontendError
from tiletraffic.frontend.opencl.rewrite import simplify

__all__ = ["FrontendError", "WorkGroupSizeError", "parse_kernel", "kernel_names", "BufferArg",
           "DATA_DEPENDENT"]

DATA_DEPENDENT = ("traffic depends on the data; tiletraffic models only kernels whose "
                  "addresses and branches do not")
"""The reason given for a branch, loop bound or index computed from loaded values."""

ACCESS = S.ARRAY_ROLES
_VECTOR_COMPONENTS = "xyzw"
_INT_KINDS = {"INT", "UINT", "LONG", "ULONG", "SHORT", "USHORT", "CHAR_S", "UCHAR", "SCHAR",
              "CHAR_U", "BOOL", "LONGLONG", "ULONGLONG"}
_INT_TYPES = {"BOOL": (1, False), "CHAR_S": (8, True), "SCHAR": (8, True),
              "CHAR_U": (8, False), "UCHAR": (8, False), "SHORT": (16, True),
              "USHORT": (16, False),
              "INT": (32, True), "UINT": (32, False), "LONG": (64, True),
              "ULONG": (64, False), "LONGLONG": (64, True), "ULONGLONG": (64, False)}
"""(bits, signed) of each integer type (clang's canonical kind; ``size_t`` is ``ULONG``)."""
_ID_FUNCTIONS = {"get_global_id": "global", "get_local_id": "local", "get_group_id": "group"}
_INT_COMPARE = ("<", "<=", ">", ">=", "==", "!=")
_WORK_GROUP_BARRIER_STD = ("CL2.0", "CL3.0")
"""The ``-cl-std`` versions whose OpenCL C has ``work_group_barrier``."""
_WORK_GROUP_SCOPES = (1, 2, 3)
"""``memory_scope_work_group``, ``_device``, ``_all_svm_devices``: scopes that order the
work-group's accesses, as the IR's barrier does (``opencl_builtins.h`` values)."""
_FLOAT_CONSTANT_CALLS = ("__builtin_inff", "__builtin_huge_valf", "__builtin_nanf")
"""What ``INFINITY``, ``HUGE_VALF`` and ``NAN`` expand to (``opencl_builtins.h``)."""


class WorkGroupSizeError(FrontendError):
    """The kernel's ``__attribute__((reqd_work_group_size(X, Y, Z)))`` differs from the
    launch's work-group size (its dimensions padded with 1 to three): the device would
    refuse the launch. The message names both sizes."""


_REQUIRED_SIZE = ("reqd_work_group_size", "__reqd_work_group_size__")
_REQUIRED_SIZE_PROBE = "__tiletraffic_reqd_work_group_size"


@dataclass(frozen=True)
class BufferArg:
    """A buffer argument as the caller describes it: its logical shape (row-major float32
    elements; each entry an ``int`` or the name of a size or scalar argument) and its
    access, one of ``in``, ``out``, ``inout``."""

    shape: tuple
    access: str


@dataclass
class _Buffer:
    name: str
    role: str
    shape: tuple[str, ...]
    dims: tuple[int, ...]
    width: int           # 1: float*, 4: float4*
    const: bool
    array: S.GlobalArray = None
    stored: bool = False


@dataclass
class _Binding:
    kind: str            # int | float | vector | private_array | local | buffer
    value: object
    cursor: object = None


@dataclass
class _Pointer:
    """An address: a buffer's flat element index, or a local array's index tuple."""

    target: object       # _Buffer | S.LocalArray
    flat: S.IntExpr | None = None
    index: tuple | None = None
    width: int = 1       # floats per element of the pointer's type


@dataclass
class _Scope:
    names: dict = field(default_factory=dict)


def kernel_names(source: str, path: str = "<source>", build_options="") -> list[str]:
    """The ``__kernel`` functions defined in ``source``, in order.

    Raises:
        FrontendError: clang reports an error.
    """
    tu = C.parse(source, path, build_options)
    return [c.spelling for c in _kernels(tu, path)]


@dataclass(frozen=True)
class SourceNames:
    """The names of an OpenCL C source a ``-D`` macro can reach.

    Attributes:
        identifiers: every identifier token of the source and of the files it includes
            (not the built-in declarations), preprocessor lines included.
        defined_macros: the macros the source itself ``#define``s, in order.
    """

    identifiers: frozenset
    defined_macros: tuple


def source_names(source: str, path: str = "<source>", build_options="") -> SourceNames:
    """:class:`SourceNames` of ``source`` (the text of ``path``), from one parse.

    Raises:
        FrontendError: clang reports an error.
    """
    from clang import cindex
    tu = C.parse(source, path, build_options)
    tokens = frozenset(t.spelling for e in C.source_extents(tu)
                       for t in tu.get_tokens(extent=e) if t.kind == cindex.TokenKind.IDENTIFIER)
    defined = tuple(c.spelling for c in tu.cursor.get_children()
                    if c.kind == cindex.CursorKind.MACRO_DEFINITION and _in_file(c, path))
    return SourceNames(tokens, defined)


def _kernels(tu, path):
    from clang.cindex import CursorKind
    for c in tu.cursor.get_children():
        if c.kind == CursorKind.FUNCTION_DECL and c.is_definition() and _in_file(c, path) \
                and _is_kernel(c):
            yield c


def _in_file(cursor, path) -> bool:
    f = cursor.location.file
    return f is not None and f.name == path


def _is_kernel(cursor) -> bool:
    """Whether the function is declared ``__kernel`` (among its first tokens)."""
    from itertools import islice
    return any(t.spelling in ("__kernel", "kernel") for t in islice(cursor.get_tokens(), 12))


def parse_kernel(source: str, kernel: str, global_size, local_size, args: dict, *,
                 sizes: dict | None = None, build_options="", path: str | None = None
                 ) -> S.Schedule:
    """The schedule of ``kernel`` in the OpenCL C text ``source``.

    Args:
        source: the OpenCL C text (the file's contents when ``path`` names it).
        kernel: name of a ``__kernel`` function in it.
        global_size, local_size: the NDRange and the work-group size (work-items per
            dimension, 1 to 3 dimensions; the global size a multiple of the local one).
        args: every kernel argument by name: an ``int`` for a scalar, a :class:`BufferArg`
            (or a dict ``{"shape": [...], "access": "in"}``) for a buffer.
        sizes: values of the names the buffer shapes use that are not scalar arguments.
        build_options: ``-D``/``-U``/``-I`` options (a string or a list).
        path: the file name used in messages and for ``#include`` (default ``<source>``).

    Returns:
        A :class:`Schedule` of family ``opencl:<kernel>`` whose ``extra["opencl"]`` keeps the
        source, build options and argument kinds, so that running it launches this text.

    Raises:
        FrontendError: a parse error or a construct outside the subset (one line with
            file:line:column), an argument left out or unknown, a bad shape or access.
        WorkGroupSizeError: the kernel's ``reqd_work_group_size`` is not ``local_size``.
        tiletraffic.simulator.ir.nodes.ScheduleError: the NDRange is invalid.
    """
    path = path or "<source>"
    tu = C.parse(source, path, build_options)
    found = {c.spelling: c for c in _kernels(tu, path)}
    if kernel not in found:
        raise FrontendError(f"{path}: no __kernel named {kernel!r}; it defines "
                            f"{', '.join(found) or 'none'}")
    gsize, lsize = tuple(int(g) for g in global_size), tuple(int(x) for x in local_size)
    S.check_ndrange(gsize, lsize, f"{path}: {kernel}")
    if len(lsize) > 3:
        raise FrontendError(f"{path}: {kernel}: {len(lsize)} NDRange dimensions; at most 3")
    required = required_work_group_size(found[kernel], source, path, build_options)
    if required is not None:
        wanted, attr = required
        given = lsize + (1,) * (3 - len(lsize))
        if wanted != given:
            raise WorkGroupSizeError(
                f"{C.where(attr, path)}: kernel {kernel} requires the work-group size "
                f"{_sizes(wanted)} (reqd_work_group_size), but the launch's local size is "
                f"{_sizes(given)}: launch it with local size {_sizes(wanted)} or change the "
                "attribute")
    options = tuple(C.split_build_options(build_options))
    builder = _KernelBuilder(found[kernel], path, gsize, lsize, dict(args), dict(sizes or {}),
                             _cl_std(options))
    body = simplify(builder.build())
    parent = Path(path).parent
    if any(Path(inc.include.name) != C.BUILTINS_HEADER for inc in tu.get_includes()) and \
            parent.is_dir():
        options += (f"-I{parent.resolve()}",)   # the device compiler finds the headers too
    opencl = {"source": source, "kernel": kernel, "path": path,
              "build_options": options,
              "args": tuple(builder.arg_kinds)}
    return S.Schedule(
        family=f"opencl:{kernel}", kernel_name=kernel, params=tuple(builder.params.items()),
        arrays=tuple(b.array for b in builder.buffers.values()),
        local_arrays=tuple(builder.local_arrays), local_size=lsize, global_size=gsize,
        body=body, tile=lsize[0], description=f"{Path(path).name}: {kernel}",
        extra={"opencl": opencl})


def _cl_std(options) -> str | None:
    """The OpenCL C version ``-cl-std=`` asks for (the last one given), upper-cased."""
    stds = [o.partition("=")[2].upper() for o in options if o.startswith("-cl-std=")]
    return stds[-1] if stds else None


def _sizes(sizes) -> str:
    return f"({', '.join(map(str, sizes))})"


def required_work_group_size(kernel, source: str, path: str, build_options=()):
    """The sizes ``(X, Y, Z)`` of the ``reqd_work_group_size`` attribute of the ``kernel``
    cursor (of ``source``, the text of ``path``) and the attribute's cursor, or ``None``
    without one. Sizes written as integer literals are read as such; others (macros,
    expressions) are evaluated by clang, in a parse of the source followed by a constant
    initialised with the attribute's arguments.

    Raises:
        FrontendError: the attribute's arguments are not three constants clang evaluates.
    """
    from itertools import islice
    for attr in kernel.get_children():
        if not attr.kind.is_attribute():
            continue
        tokens = [t.spelling for t in islice(attr.get_tokens(), 256)]
        if not tokens or tokens[0] not in _REQUIRED_SIZE:
            continue
        args = _attribute_arguments(tokens)
        if args is None or len(args) != 3 or not all(args):
            C.fail(attr, "reqd_work_group_size: write its three sizes, "
                         "reqd_work_group_size(X, Y, Z)", path)
        values = [C.integer_literal(a[0]) if len(a) == 1 else None for a in args]
        if None in values:
            values = _evaluate_constants(args, source, path, build_options, attr)
        return tuple(values), attr
    return None


def _attribute_arguments(tokens) -> list[list[str]] | None:
    """The arguments of ``name ( a , b , c )`` as token lists (tokens after the closing
    parenthesis ignored), or None without the parentheses."""
    if len(tokens) < 2 or tokens[1] != "(":
        return None
    args, current, depth = [], [], 0
    for t in tokens[2:]:
        if t == ")" and depth == 0:
            return args + [current]
        if t == "," and depth == 0:
            args.append(current)
            current = []
            continue
        depth += (t == "(") - (t == ")")
        current.append(t)
    return None


def _evaluate_constants(args, source, path, build_options, at) -> list[int]:
    """The integer values of the token lists ``args`` where the source ends, by clang."""
    from clang.cindex import CursorKind as K
    probe = (f"{source}\n__constant int {_REQUIRED_SIZE_PROBE}[] = "
             f"{{{', '.join(' '.join(a) for a in args)}}};\n")
    written = ", ".join(" ".join(a) for a in args)
    try:
        tu = C.parse(probe, path, build_options)
    except FrontendError as err:
        C.fail(at, f"reqd_work_group_size({written}): its sizes are not constants clang "
                   f"evaluates at the end of the source ({err})", path)
    for c in tu.cursor.get_children():
        if c.kind == K.VAR_DECL and c.spelling == _REQUIRED_SIZE_PROBE:
            lists = [k for k in C.children(c) if k.kind == K.INIT_LIST_EXPR]
            values = [C.evaluate(k) for k in C.children(lists[0])] if lists else []
            if len(values) == 3 and all(isinstance(v, int) for v in values):
                return values
    C.fail(at, f"reqd_work_group_size({written}): its sizes are not three integer "
               "constants", path)


def _type_kind(t) -> str:
    return t.get_canonical().kind.name


def _is_int_type(t) -> bool:
    return _type_kind(t) in _INT_KINDS


def _int_type(t) -> tuple[int, bool] | None:
    """(bits, signed) of the integer type ``t``; ``None`` for another type."""
    return _INT_TYPES.get(_type_kind(t))


def _type_range(bits: int, signed: bool) -> tuple[int, int]:
    return (-(1 << bits - 1), (1 << bits - 1) - 1) if signed else (0, (1 << bits) - 1)


def _c_value(value: int, t) -> int:
    """The Python int ``value`` converted to the integer type ``t``, as C converts it."""
    info = _int_type(t)
    if info is None or info[0] == 1:
        return value
    return wrap_int(value, *info)


def _floor_mod(value: S.IntExpr, divisor: S.Const) -> S.IntExpr:
    """``value`` mod ``divisor`` (> 0) in 0..divisor-1 for negative values too, as ``&`` of
    a two's-complement int with ``divisor - 1`` gives it; the IR's ``%`` truncates as C's."""
    return S.BinOp("%", S.BinOp("+", S.BinOp("%", value, divisor), divisor), divisor)


def _loads(e: S.FloatExpr) -> bool:
    """``e`` reads a buffer or local array (a :class:`simulator.ir.nodes.Load` in it)."""
    return isinstance(e, S.Load) or any(_loads(o) for o in S.float_operands(e))


def _is_float_type(t) -> bool:
    return _type_kind(t) == "FLOAT"


def _is_vector_type(t) -> bool:
    return _type_kind(t) in ("VECTOR", "EXTVECTOR")


def _vector_width(t) -> int:
    return t.get_canonical().element_count


def _address_space(t) -> str:
    words = t.spelling.replace("*", " ").split()
    for space in ("__global", "__local", "__constant", "__private"):
        if space in words:
            return space
    return "__private"


class _KernelBuilder:
    """Walks one kernel's cursors and builds IR statements (see the module docstring)."""

    def __init__(self, cursor, path, global_size, local_size, args, sizes, cl_std=None):
        self.cursor, self.path = cursor, path
        self.cl_std = cl_std            # -cl-std=... of the build options, upper-cased
        self.global_size, self.local_size = global_size, local_size
        self.args, self.sizes = args, sizes
        self.params: dict[str, int] = {}
        self.buffers: dict[str, _Buffer] = {}
        self.local_arrays: list[S.LocalArray] = []
        self.arg_kinds: list[tuple[str, str]] = []
        self.scopes: list[_Scope] = [_Scope()]
        self.used_names: set[str] = set()
        self.inline_depth = 0
        self.helper_return: list | None = None
        self.ranges: dict[str, tuple] = {}
        """Bounds (lo, hi) of the values of each integer name of the IR, for this launch."""
        self.inlined_from: list[str] = []
        """The helper calls being inlined, innermost last (``sync_tile, called at
        k.cl:20:9``)."""

    # ------------------------------------------------------------------ errors
    def fail(self, cursor, message: str, arg: str | None = None):
        C.fail(cursor, message, self.path, arg)

    # ------------------------------------------------------------------ scopes
    def bind(self, c_name: str, binding: _Binding) -> str:
        """Bind ``c_name`` in the innermost scope; returns the IR name (a fresh one when
        ``c_name`` was declared before, in another scope or an inlined helper: the IR's
        names are the kernel's)."""
        if c_name in self.used_names or c_name in self.params:
            ir = self.fresh(c_name)
        else:
            ir = c_name
            self.used_names.add(ir)
        if binding.kind == "float":
            binding.value = ir
        self.scopes[-1].names[c_name] = binding
        return ir

    def lookup(self, name: str):
        for scope in reversed(self.scopes):
            if name in scope.names:
                return scope.names[name]
        return None

    def push(self):
        self.scopes.append(_Scope())

    def pop(self):
        self.scopes.pop()

    # ------------------------------------------------------------------ signature
    def build(self) -> tuple:
        from clang.cindex import CursorKind
        params = [c for c in self.cursor.get_children() if c.kind == CursorKind.PARM_DECL]
        names = [p.spelling for p in params]
        unknown = sorted(set(self.args) - set(names))
        if unknown:
            raise FrontendError(f"{C.where(self.cursor, self.path)}: kernel "
                                f"{self.cursor.spelling} has no argument "
                                f"{', '.join(unknown)}; its arguments: {', '.join(names)}",
                                unknown[0])
        missing = [n for n in names if n not in self.args]
        if missing:
            raise FrontendError(f"{C.where(self.cursor, self.path)}: kernel argument(s) "
                                f"{', '.join(missing)} not given (every argument needs a "
                                "value or a buffer shape)", missing[0])
        for p in params:
            self.declare_argument(p)
        for b in self.buffers.values():
            b.array = S.GlobalArray(b.name, b.role, b.shape)
        body = [c for c in self.cursor.get_children() if c.kind == CursorKind.COMPOUND_STMT]
        stmts = self.block(body[0], new_scope=True, kernel_level=True)
        for b in self.buffers.values():
            if b.stored and b.role == "in":
                raise FrontendError(f"{self.path}: kernel stores into buffer {b.name}, "
                                    "whose access is 'in'; give it access 'out' or 'inout'",
                                    b.name)
        return tuple(stmts)

    def declare_argument(self, p):
        name, t = p.spelling, p.type
        value = self.args[name]
        if _type_kind(t) == "POINTER":
            pointee = t.get_pointee()
            space = _address_space(pointee)
            if space == "__local":
                self.fail(p, f"__local pointer argument {name}: declare a __local array of "
                             "static size inside the kernel instead", name)
            if space not in ("__global", "__constant"):
                self.fail(p, f"argument {name}: pointers must be __global or __constant",
                          name)
            if _is_float_type(pointee):
                width = 1
            elif _is_vector_type(pointee) and \
                    _is_float_type(pointee.get_canonical().element_type) and \
                    _vector_width(pointee) in S.VECTOR_WIDTHS:
                width = _vector_width(pointee)
            else:
                self.fail(p, f"buffer {name} of {pointee.spelling}: buffers must hold float, "
                             "float2 or float4", name)
            if isinstance(value, dict):
                extra = sorted(set(value) - {"shape", "access"})
                if extra:
                    raise FrontendError(f"buffer {name}: unknown field(s) {', '.join(extra)}",
                                        name)
                value = BufferArg(tuple(value.get("shape", ())), value.get("access", ""))
            if not isinstance(value, BufferArg):
                raise FrontendError(f"argument {name} is a buffer in the source; give its "
                                    "shape and access, not a number", name)
            if value.access not in ACCESS:
                raise FrontendError(f"buffer {name}: access {value.access!r} is not one of "
                                    f"{', '.join(ACCESS)}", name)
            const = pointee.is_const_qualified() or space == "__constant"
            if const and value.access != "in":
                raise FrontendError(f"buffer {name} is const in the source; its access must be "
                                    f"'in', not {value.access!r}", name)
            shape, dims = self.buffer_shape(name, value.shape)
            if dims[-1] % width:
                raise FrontendError(f"buffer {name} holds float{width}: its last dimension "
                                    f"({dims[-1]}) must be a multiple of {width}", name)
            self.buffers[name] = _Buffer(name, value.access, shape, dims, width, const)
            self.arg_kinds.append((name, {"in": "global_in", "out": "global_out",
                                          "inout": "global_inout"}[value.access]))
            self.bind(name, _Binding("buffer", self.buffers[name], p))
            return
        if _type_kind(t) in ("INT", "UINT"):
            if isinstance(value, bool) or not isinstance(value, int):
                given = "a buffer (shape and access)" if isinstance(value, (BufferArg, dict)) \
                    else f"{type(value).__name__} {value}"
                raise FrontendError(f"argument {name} is an integer in the source; give it "
                                    f"a number, not {given}", name)
            if _type_kind(t) == "UINT" and value < 0:
                raise FrontendError(f"argument {name} = {value} is negative, but a uint in the "
                                    "source (the device would see it as "
                                    f"{value % 2 ** 32}); give 0 or more", name)
            if not -(2 ** 31) <= value < 2 ** 31:
                raise FrontendError(f"argument {name} = {value} does not fit a 32-bit int",
                                    name)
            self.params[name] = int(value)
            self.arg_kinds.append((name, "int"))
            self.scopes[0].names[name] = _Binding("int", S.Param(name), p)
            self.used_names.add(name)
            return
        self.fail(p, f"argument {name} of type {t.spelling}: arguments must be int or uint "
                     "scalars or __global float/float4 buffers (pass a float constant as "
                     "a -D build option)", name)

    def buffer_shape(self, name, shape) -> tuple[tuple[str, ...], tuple[int, ...]]:
        if not shape:
            raise FrontendError(f"buffer {name}: shape missing (a list of positive sizes)", name)
        names, dims = [], []
        for d, entry in enumerate(shape):
            if isinstance(entry, str):
                if entry in self.sizes:
                    value = self.sizes[entry]
                elif entry in self.args and not isinstance(self.args[entry], (dict, BufferArg)):
                    value = self.args[entry]
                else:
                    raise FrontendError(f"buffer {name}: shape[{d}] = {entry!r} is neither a "
                                        "size nor a scalar argument", name)
                scalar = self.args.get(entry)
                if isinstance(scalar, int) and not isinstance(scalar, bool) and scalar != value:
                    pname = f"{name}_dim{d}"       # the size and the argument differ
                else:
                    pname = entry
            else:
                value, pname = entry, f"{name}_dim{d}"
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise FrontendError(f"buffer {name}: shape[{d}] = {value!r} is not a positive "
                                    "integer", name)
            if pname not in self.args:
                self.params.setdefault(pname, int(value))
            names.append(pname)
            dims.append(int(value))
        if math.prod(dims) >= 2 ** 31:
            raise FrontendError(f"buffer {name}: {math.prod(dims)} elements; at most 2^31 - 1",
                                name)
        return tuple(names), tuple(dims)

    # ------------------------------------------------------------------ statements
    def block(self, cursor, new_scope=True, kernel_level=False) -> list:
        from clang.cindex import CursorKind
        if new_scope:
            self.push()
        try:
            out = []
            kids = C.children(cursor) if cursor.kind == CursorKind.COMPOUND_STMT else [cursor]
            for k in kids:
                out += self.statement(k, kernel_level)
            return out
        finally:
            if new_scope:
                self.pop()

    def statement(self, c, kernel_level=False) -> list:
        from clang.cindex import CursorKind as K
        kind = c.kind
        if kind == K.COMPOUND_STMT:
            return self.block(c)
        if kind == K.DECL_STMT:
            out = []
            for d in C.children(c):
                out += self.declaration(d, kernel_level)
            return out
        if kind == K.NULL_STMT:
            return []
        if kind == K.IF_STMT:
            return [self.if_statement(c)]
        if kind == K.FOR_STMT:
            return [self.for_statement(c)]
        if kind == K.RETURN_STMT:
            return self.return_statement(c)
        if kind in (K.WHILE_STMT, K.DO_STMT):
            self.fail(c, "while/do loop: write a for loop with integer bounds "
                         "(for (int i = start; i < stop; i += step))")
        if kind == K.SWITCH_STMT:
            self.fail(c, "switch: write if/else on integer conditions")
        if kind in (K.BREAK_STMT, K.CONTINUE_STMT, K.GOTO_STMT):
            self.fail(c, f"{c.kind.name.split('_')[0].lower()}: the IR's loops run their full "
                         "range; put the rest of the body under an if instead")
        if kind.name in ("ATTRIBUTED_STMT", "UNEXPOSED_STMT"):
            kids = C.children(c)
            if len(kids) == 1:      # #pragma unroll / __attribute__((opencl_unroll_hint))
                return self.statement(kids[0], kernel_level)
        if kind.is_expression():
            return self.expression_statement(c)
        self.fail(c, f"statement {kind.name.lower()} is not supported: write for loops, "
                     "if/else, assignments, barrier() and return")

    def if_statement(self, c) -> S.If:
        kids = C.children(c)
        cond = self.condition(kids[0])
        then = tuple(self.block(kids[1]))
        orelse = tuple(self.block(kids[2])) if len(kids) > 2 else ()
        return S.If(cond, then, orelse)

    def for_statement(self, c) -> S.For:
        from clang.cindex import CursorKind as K
        kids = C.children(c)
        if len(kids) != 4 or kids[0].kind != K.DECL_STMT:
            self.fail(c, "for loop without its three parts: write for (int i = start; "
                         "i < stop; i += step)")
        init, cond, inc, body = kids
        decls = C.children(init)
        if len(decls) != 1 or not _is_int_type(decls[0].type) or not C.children(decls[0]):
            self.fail(init, "loop initialisation: declare one integer loop variable with its "
                            "start (for (int i = start; ...))")
        var_cursor = decls[0]
        init_value = C.children(var_cursor)[-1]
        start = self.canonical(self.int_expr(init_value), var_cursor.type, init_value)
        if not self.counts_up(cond, inc, var_cursor):
            return self.unrolled(c, start, cond, inc, body, var_cursor)
        self.push()
        try:
            ir = self.bind(var_cursor.spelling, _Binding("int", None, var_cursor))
            self.scopes[-1].names[var_cursor.spelling].value = S.Var(ir)
            self.scopes[-1].names[var_cursor.spelling].kind = "loopvar"
            first = self.range_of(start)[0]
            self.ranges[ir] = (first, math.inf)
            stop = self.loop_stop(cond, var_cursor, first)
            self.ranges[ir] = (first, max(first, self.range_of(stop)[1] - 1))
            step = self.loop_step(inc, var_cursor)
            stmts = tuple(self.block(body))
        finally:
            self.pop()
        return S.For(ir, start, stop, step, stmts)

    def counts_up(self, cond, inc, var_cursor) -> bool:
        """Whether the loop is an IR loop (var < stop, var += step), else it is unrolled."""
        from clang.cindex import CursorKind as K
        c, i = C.strip(cond), C.strip(inc)
        up_cond = c.kind == K.BINARY_OPERATOR and (
            (C.binary_operator(c) in ("<", "<=") and self._is_var(C.children(c)[0], var_cursor))
            or (C.binary_operator(c) in (">", ">=") and
                self._is_var(C.children(c)[1], var_cursor)))
        up_inc = (i.kind == K.UNARY_OPERATOR and C.unary_operator(i) == "++") or (
            i.kind == K.COMPOUND_ASSIGNMENT_OPERATOR and C.binary_operator(i) == "+=") or (
            i.kind == K.BINARY_OPERATOR and C.binary_operator(i) == "=")
        return up_cond and up_inc

    UNROLL_MAX_TRIPS = 256
    """Most iterations of a loop with constant bounds that does not count up (``s >>= 1``,
    ``i--``) unrolled into the IR."""
    UNROLL_MAX_COPIES = 4096
    """Most copies of a body that unrolled loops nested in each other may make together."""
    _unroll_copies = 1

    def unrolled(self, c, start, cond, inc, body, var_cursor) -> S.If | list:
        """A loop with constant start, condition and update of another kind, as one copy of
        its body per iteration (the loop variable a constant in each)."""
        value = self.static_value(start)
        if value is None:
            self.fail(c, "a loop that does not count up needs constant bounds: write for "
                         "(int i = start; i < stop; i += step)")
        trips = []
        while self.static_eval(cond, var_cursor, value):
            trips.append(value)
            if len(trips) > self.UNROLL_MAX_TRIPS:
                self.fail(c, f"loop of more than {self.UNROLL_MAX_TRIPS} iterations that does "
                             "not count up: write it counting up (i < stop; i += step)")
            value = self.static_update(inc, var_cursor, value)
        outer = self._unroll_copies
        if outer * len(trips) > self.UNROLL_MAX_COPIES:
            self.fail(c, f"nested loops that do not count up unroll into {outer * len(trips)} "
                         f"copies of the innermost body, more than {self.UNROLL_MAX_COPIES}: "
                         "write the outer ones counting up (i < stop; i += step)")
        out = []
        self._unroll_copies = outer * len(trips)
        try:
            for v in trips:
                self.push()
                try:
                    self.scopes[-1].names[var_cursor.spelling] = _Binding(
                        "loopvar", S.Const(v), var_cursor)
                    out += self.block(body)
                finally:
                    self.pop()
        finally:
            self._unroll_copies = outer
        return S.If(S.Compare("==", S.Const(0), S.Const(0)), tuple(out)) if out else \
            S.If(S.Compare("==", S.Const(0), S.Const(1)), ())

    def static_eval(self, c, var_cursor, value):
        """The value of an integer expression or condition, with the loop variable =
        ``value``, from constants and scalar arguments only, in C's integer types (an
        unsigned one wraps around: ``uint s = 0; s - 1`` is 4294967295)."""
        chain = C.implicit_chain(c)
        v = self._static_eval(chain[-1], var_cursor, value)
        if isinstance(v, bool):
            return v
        for outer in reversed(chain[:-1]):      # the implicit conversions, innermost first
            v = _c_value(v, outer.type)
        return v

    def _static_eval(self, s, var_cursor, value):
        from clang.cindex import CursorKind as K
        if self._is_var(s, var_cursor):
            return value
        if s.kind == K.CSTYLE_CAST_EXPR:
            return _c_value(self.static_eval(C.children(s)[-1], var_cursor, value), s.type)
        if s.kind == K.BINARY_OPERATOR:
            op = C.binary_operator(s)
            a, b = (self.static_eval(x, var_cursor, value) for x in C.children(s))
            ops = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y,
                   "/": trunc_div, "%": lambda x, y: x - trunc_div(x, y) * y,
                   "<<": lambda x, y: x << y, ">>": lambda x, y: x >> y,
                   "<": lambda x, y: x < y, "<=": lambda x, y: x <= y,
                   ">": lambda x, y: x > y, ">=": lambda x, y: x >= y,
                   "==": lambda x, y: x == y, "!=": lambda x, y: x != y,
                   "&&": lambda x, y: bool(x and y), "||": lambda x, y: bool(x or y)}
            if op in ops:
                try:
                    result = ops[op](a, b)
                except ZeroDivisionError:
                    self.fail(s, "division by zero in a loop bound")
                return result if isinstance(result, bool) else _c_value(result, s.type)
        e = self.int_expr(s)
        v = self.static_value(e)
        if v is None:
            self.fail(s, "a loop that does not count up needs constant bounds: write for "
                         "(int i = start; i < stop; i += step)")
        return v

    def static_update(self, inc, var_cursor, value) -> int:
        """The loop variable's next value, in its C type."""
        return _c_value(self._static_update(inc, var_cursor, value), var_cursor.type)

    def _static_update(self, inc, var_cursor, value) -> int:
        from clang.cindex import CursorKind as K
        s = C.strip(inc)
        if s.kind == K.UNARY_OPERATOR and self._is_var(C.children(s)[0], var_cursor):
            op = C.unary_operator(s)
            if op in ("++", "--"):
                return value + (1 if op == "++" else -1)
        if s.kind == K.COMPOUND_ASSIGNMENT_OPERATOR and \
                self._is_var(C.children(s)[0], var_cursor):
            op = C.binary_operator(s)[:-1]
            rhs = self.static_eval(C.children(s)[1], var_cursor, value)
            result = {"+": value + rhs, "-": value - rhs, "*": value * rhs,
                      "<<": value << rhs, ">>": value >> rhs,
                      "/": trunc_div(value, rhs) if rhs else None}.get(op)
            if result is not None:
                return result
        if s.kind == K.BINARY_OPERATOR and C.binary_operator(s) == "=" and \
                self._is_var(C.children(s)[0], var_cursor):
            return self.static_eval(C.children(s)[1], var_cursor, value)
        self.fail(inc, f"loop update: write ++{var_cursor.spelling}, "
                       f"{var_cursor.spelling} += step, >>= or /= by a constant")

    def _is_var(self, c, var_cursor) -> bool:
        from clang.cindex import CursorKind as K
        c = C.strip(c)
        return c.kind == K.DECL_REF_EXPR and c.referenced == var_cursor

    def loop_stop(self, cond, var_cursor, first) -> S.IntExpr:
        """The IR loop's stop; ``first``: the least value the loop variable starts at."""
        from clang.cindex import CursorKind as K
        c = C.strip(cond)
        if c.kind == K.BINARY_OPERATOR:
            op = C.binary_operator(c)
            left, right = C.children(c)
            if self._is_var(left, var_cursor) and op in ("<", "<="):
                self.unsigned_loop_compare(c, left, var_cursor, first)
                stop = self.exact(right)
                return stop if op == "<" else stop + 1
            if self._is_var(right, var_cursor) and op in (">", ">="):
                self.unsigned_loop_compare(c, right, var_cursor, first)
                stop = self.exact(left)
                return stop if op == ">" else stop + 1
        self.fail(cond, f"loop condition: write {var_cursor.spelling} < stop or "
                        f"{var_cursor.spelling} <= last (loops count up)")

    def unsigned_loop_compare(self, cond, var_side, var_cursor, first) -> None:
        """Refuse a loop variable that may start below 0 compared as an unsigned integer
        (``var_side``: the variable's operand, of the comparison's type): C converts it to
        a large value there, the IR's loop compares it as it is."""
        info = _int_type(var_side.type)
        if info is not None and not info[1] and first < 0:
            name, ctype = var_cursor.spelling, var_side.type.spelling
            self.fail(cond, f"loop condition {self.describe_target(cond)}: {name} starts at "
                            f"{first} and is compared as {ctype}, an unsigned integer, so C "
                            f"converts a negative {name} to a large value: start it at 0 or "
                            "more, or compare it with a signed bound")

    def loop_step(self, inc, var_cursor) -> S.IntExpr:
        from clang.cindex import CursorKind as K
        c = C.strip(inc)
        name = var_cursor.spelling
        if c.kind == K.UNARY_OPERATOR and C.unary_operator(c) in ("++", ) and \
                self._is_var(C.children(c)[0], var_cursor):
            return S.Const(1)
        if c.kind == K.COMPOUND_ASSIGNMENT_OPERATOR and C.binary_operator(c) == "+=" and \
                self._is_var(C.children(c)[0], var_cursor):
            return self.int_expr(C.children(c)[1])
        if c.kind == K.BINARY_OPERATOR and C.binary_operator(c) == "=" and \
                self._is_var(C.children(c)[0], var_cursor):
            rhs = C.strip(C.children(c)[1])
            if rhs.kind == K.BINARY_OPERATOR and C.binary_operator(rhs) == "+":
                a, b = C.children(rhs)
                if self._is_var(a, var_cursor):
                    return self.int_expr(b)
                if self._is_var(b, var_cursor):
                    return self.int_expr(a)
        self.fail(inc, f"loop increment: write ++{name}, {name}++ or {name} += step "
                       "(loops count up by a positive step)")

    def return_statement(self, c) -> list:
        kids = C.children(c)
        if self.helper_return is not None:
            if self.helper_return:
                self.fail(c, "a helper function with more than one return: return once, at "
                             "its end")
            self.helper_return.append(kids[0] if kids else None)
            return []
        if kids:
            self.fail(c, "a kernel returns void: write return;")
        return [S.Return()]

    # ------------------------------------------------------------------ declarations
    def declaration(self, d, kernel_level) -> list:
        from clang.cindex import CursorKind as K
        if d.kind != K.VAR_DECL:
            self.fail(d, f"declaration {d.kind.name.lower()}: only variables are declared "
                         "inside a kernel")
        t = d.type
        name = d.spelling
        kids = [k for k in C.children(d) if k.kind != K.TYPE_REF]
        space = _address_space(t)
        if space == "__local":
            return self.local_declaration(d, kernel_level)
        if _type_kind(t) == "CONSTANTARRAY":
            return self.private_array_declaration(d, kids)
        init = kids[-1] if kids else None
        if _is_int_type(t):
            if init is None:
                self.fail(d, f"integer {name} declared without a value: give it its value "
                             "where it is declared (it is bound once)")
            value = self.int_expr(init)
            ir = self.bind(name, _Binding("int", None, d))
            self.lookup(name).value = S.Var(ir)
            self.ranges[ir] = self.range_of(value)
            return [S.Let(ir, value)]
        if _is_float_type(t):
            fixed = self.float_literal(init) if init is not None else None
            if init is not None and fixed is None:
                out: list = []
                value = self.float_expr(init, out)
                ir = self.bind(name, _Binding("float", None, d))
                return out + [S.DeclareFloat(ir, None), S.Assign(ir, value)]
            ir = self.bind(name, _Binding("float", None, d))
            return [S.DeclareFloat(ir, fixed)]
        if _is_vector_type(t) and _is_float_type(t.get_canonical().element_type):
            width = _vector_width(t)
            if width not in S.VECTOR_WIDTHS:
                self.fail(d, f"float{width}: vectors of 2 or 4 floats only")
            ir = self.bind(name, _Binding("vector", None, d))
            names = tuple(f"{ir}.{_VECTOR_COMPONENTS[w]}" for w in range(width))
            self.lookup(name).value = names
            out = [S.DeclareFloat(n, None) for n in names]
            if init is not None:
                out += self.vector_assign(names, init)
            return out
        if _type_kind(t) == "POINTER":
            if init is None:
                self.fail(d, f"pointer {name} without a value: point it at a buffer where it "
                             "is declared")
            ptr = self.pointer_expr(init)
            self.bind(name, _Binding("pointer", ptr, d))
            return []
        self.fail(d, f"variable {name} of type {t.spelling}: use int/uint/size_t, float, "
                     "float4 or arrays of float")

    def float_literal(self, c) -> float | None:
        """The value of a float constant: a literal (``2.0f``, ``FLT_MAX``, ``M_PI_F``),
        ``INFINITY``, ``HUGE_VALF``, ``NAN``, an integer constant expression (``INT_MAX``,
        ``INT_MIN``, ``TS * 2``: folded, as the compiler folds it), ``-`` or ``+`` before one,
        a cast of one; else ``None``."""
        from clang.cindex import CursorKind as K
        s = C.strip(c)
        if s.kind == K.INTEGER_LITERAL:
            return float(C.integer_value(s))
        if _is_int_type(s.type):                   # (int)2.5f too: 2, as C converts it
            v = C.evaluate(s)
            return float(v) if isinstance(v, int) else None
        if s.kind == K.CSTYLE_CAST_EXPR:
            return self.float_literal(C.children(s)[-1])
        if s.kind == K.UNARY_OPERATOR and C.unary_operator(s) in ("-", "+"):
            v = self.float_literal(C.children(s)[0])
            return None if v is None else -v if C.unary_operator(s) == "-" else v
        if s.kind == K.FLOATING_LITERAL or (s.kind == K.CALL_EXPR and
                                            s.spelling in _FLOAT_CONSTANT_CALLS):
            v = C.evaluate(s)
            return None if v is None else float(v)
        return None

    def array_dims(self, d) -> tuple[S.Const, ...]:
        """The static dimensions of an array declaration, each named by its macro."""
        extents = []
        t = d.type.get_canonical()
        while t.kind.name == "CONSTANTARRAY":
            extents.append(t.get_array_size())
            t = t.element_type
        if not _is_float_type(t):
            self.fail(d, f"array {d.spelling} of {t.spelling}: arrays hold float")
        names = self.dim_names(d, len(extents))
        return tuple(S.Const(e, n) for e, n in zip(extents, names))

    def dim_names(self, d, rank) -> list:
        """Macro names of the extents as written (``tile[TS][TS]``), from clang's tokens."""
        tokens = [t.spelling for t in d.get_tokens()]
        names = []
        i = 0
        while i < len(tokens) and len(names) < rank:
            if tokens[i] == "[" and i + 2 < len(tokens) and tokens[i + 2] == "]" \
                    and tokens[i + 1].isidentifier():
                names.append(tokens[i + 1])
                i += 3
                continue
            if tokens[i] == "[":
                names.append(None)
            i += 1
        return names + [None] * (rank - len(names))

    def local_declaration(self, d, kernel_level) -> list:
        if not kernel_level:
            self.fail(d, f"__local array {d.spelling} declared inside a block: declare it at "
                         "the kernel's top level")
        if _type_kind(d.type) != "CONSTANTARRAY":
            self.fail(d, f"__local {d.spelling}: local memory is an array of static size "
                         "(__local float tile[TS][TS])")
        arr = S.LocalArray(self.bind(d.spelling, _Binding("local", None, d)), self.array_dims(d))
        self.lookup(d.spelling).value = arr
        self.local_arrays.append(arr)
        return []

    def private_array_declaration(self, d, kids) -> list:
        from clang.cindex import CursorKind as K
        dims = self.array_dims(d)
        init = None
        lists = [k for k in kids if k.kind == K.INIT_LIST_EXPR]
        if lists:
            lst = lists[0]
            if any(v not in (0, 0.0) for v in self._init_values(lst)):
                self.fail(lst, f"private array {d.spelling}: only = {{0}} (zero-fill) is "
                               "supported as an initialiser; assign the elements in a loop")
            init = 0.0
        ir = self.bind(d.spelling, _Binding("private_array", None, d))
        arr = S.PrivateArray(ir, dims)
        self.lookup(d.spelling).value = arr
        return [S.DeclarePrivateArray(arr, init)]

    def _init_values(self, lst):
        from clang.cindex import CursorKind as K
        for k in C.children(lst):
            k = C.strip(k)
            if k.kind == K.INIT_LIST_EXPR:
                yield from self._init_values(k)
            elif k.kind.name == "IMPLICIT_VALUE_INIT_EXPR":
                yield 0.0
            else:
                v = self.float_literal(k)
                yield v if v is not None else 1.0

    # ------------------------------------------------------------------ expression statements
    def expression_statement(self, c) -> list:
        from clang.cindex import CursorKind as K
        s = C.strip(c)
        if s.kind == K.CALL_EXPR:
            return self.call_statement(s)
        if s.kind == K.BINARY_OPERATOR and C.binary_operator(s) == "=":
            lhs, rhs = C.children(s)
            return self.assign(lhs, rhs, None, s)
        if s.kind == K.COMPOUND_ASSIGNMENT_OPERATOR:
            op = C.binary_operator(s)[:-1]
            lhs, rhs = C.children(s)
            if op not in ("+", "-", "*"):
                self.fail(s, f"{op}= on {self.describe_target(lhs)}: floats take +=, -= and "
                             "*=; integers are bound once")
            return self.assign(lhs, rhs, op, s)
        if s.kind == K.UNARY_OPERATOR and C.unary_operator(s) in ("++", "--"):
            self.fail(s, f"{C.unary_operator(s)} on an integer variable: integers are bound "
                         "once (const int); use a new variable or the loop variable")
        self.fail(s, "expression statement without effect or of an unsupported kind: write "
                     "assignments, barrier() or a helper call")

    def describe_target(self, c) -> str:
        return " ".join(t.spelling for t in c.get_tokens()) or "this target"

    def target_of(self, lhs):
        """What an assignment writes: ('float', name) | ('private_elem', arr, index) |
        ('memory', array, index) | ('vector', names) | ('vector_memory', ptr) |
        ('component', name)."""
        from clang.cindex import CursorKind as K
        s = C.strip(lhs)
        if s.kind == K.DECL_REF_EXPR:
            b = self.lookup(s.spelling)
            if b is None:
                self.fail(s, f"{s.spelling} is not declared in the kernel")
            if b.kind == "float":
                return ("float", b.value)
            if b.kind == "vector":
                return ("vector", b.value)
            if b.kind in ("int", "loopvar"):
                self.fail(s, f"integer {s.spelling} assigned again: integers are bound once "
                             "(const int); compute the new value into a new variable")
            self.fail(s, f"cannot assign to {s.spelling}")
        if s.kind == K.ARRAY_SUBSCRIPT_EXPR:
            return self.element(s, store=True)
        if self.is_vector_component(s):
            names, comp = self.vector_component(s)
            return ("component", names[comp])
        if s.kind == K.UNARY_OPERATOR and C.unary_operator(s) == "*":
            ptr = self.pointer_expr(C.children(s)[0])
            return ("vector_memory", ptr)
        self.fail(s, f"cannot assign to {self.describe_target(s)}")

    def assign(self, lhs, rhs, op, at) -> list:
        target = self.target_of(lhs)
        out: list = []
        kind = target[0]
        if kind in ("vector", "vector_memory"):
            if op is not None:
                self.fail(at, f"{op}= on a float vector: write its components one by one")
            if kind == "vector":
                return self.vector_assign(target[1], rhs)
            return self.vector_store(target[1], rhs, at)
        value = self.float_expr(rhs, out)
        if kind in ("float", "component"):
            name = target[1]
            if op == "+":
                return out + [S.Accumulate(name, value)]
            if op is not None:
                return out + [S.Assign(name, S.FBinOp(op, S.Private(name), value))]
            return out + [S.Assign(name, value)]
        if kind == "private_elem":
            arr, index = target[1], target[2]
            if op == "+":
                return out + [S.Accumulate(arr.name, value, index)]
            if op is not None:
                value = S.FBinOp(op, S.PrivateElem(arr, index), value)
            return out + [S.Assign(arr.name, value, index)]
        array, index = target[1], target[2]
        if op is not None:
            value = S.FBinOp(op, S.Load(array, index), value)
        return out + [S.Store(array, index, value)]

    def refuse_call(self, c) -> None:
        """Refuse a call :func:`frontend.opencl.clang_ast.refused_function` names (``as_float``,
        ``printf``, ... declared by the source itself)."""
        why = C.refused_function(c.spelling)
        if why is not None:
            self.fail(c, why)

    def call_statement(self, c) -> list:
        name = c.spelling
        args = C.children(c)[1:] if C.children(c) else []
        self.refuse_call(c)
        if name == "barrier":
            return [self.barrier(c, args)]
        if name == "work_group_barrier":
            return [self.work_group_barrier(c, args)]
        if name in ("vstore2", "vstore4"):
            width = int(name[-1])
            values = self.vector_values(args[0], width)
            ptr = self.pointer_expr(args[2])
            offset = self.exact(args[1], True) * width
            return values[1] + [self.vector_memory_store(self.offset(ptr, offset), width,
                                                         values[0], c)]
        helper = self.helper(c)
        if helper is not None:
            stmts, _ = self.inline(c, helper, want_value=False)
            return stmts
        if name.startswith(("atomic_", "atom_")):
            self.fail(c, f"{name}: atomics order updates by the device's timing, not by the "
                         "schedule; reduce through local memory and barriers, one store per "
                         "element")
        if name in ("mem_fence", "read_mem_fence", "write_mem_fence"):
            self.fail(c, f"{name}: orders memory without synchronising; use barrier()")
        self.fail(c, f"call of {name} as a statement: only barrier(), vstore2/4 and helper "
                     "functions defined in the source")

    def work_group_barrier(self, c, args) -> S.Barrier:
        """OpenCL C 2.0's ``work_group_barrier(flags[, scope])``: :meth:`barrier` of its
        flags, under ``-cl-std=CL2.0`` or ``CL3.0`` and a scope at least the work-group's."""
        if self.cl_std not in _WORK_GROUP_BARRIER_STD:
            given = f"-cl-std={self.cl_std}" if self.cl_std else "no -cl-std option"
            self.fail(c, f"work_group_barrier is OpenCL C 2.0 and the build options give "
                         f"{given} (OpenCL C 1.2 has none): add -cl-std=CL2.0 or "
                         "-cl-std=CL3.0 to them, or write barrier(...)")
        if len(args) > 1:
            scope = C.evaluate(args[1])
            if scope not in _WORK_GROUP_SCOPES:
                self.fail(args[1], "work_group_barrier with a scope narrower than the "
                                   "work-group (memory_scope_work_item, memory_scope_sub_group) "
                                   "does not order the work-group's accesses, which the IR's "
                                   "barrier does: use memory_scope_work_group (the default)")
        return self.barrier(c, args[:1])

    def barrier(self, c, args) -> S.Barrier:
        flags = C.evaluate(args[0]) if args else None
        if not isinstance(flags, int):
            self.fail(c, "barrier flags must be the constants CLK_LOCAL_MEM_FENCE and/or "
                         "CLK_GLOBAL_MEM_FENCE")
        if not flags & 1:
            self.fail(c, "barrier(CLK_GLOBAL_MEM_FENCE) alone does not order local memory, "
                         "which the IR's barrier always does: write barrier(CLK_LOCAL_MEM_FENCE"
                         " | CLK_GLOBAL_MEM_FENCE)")
        return S.Barrier(global_fence=bool(flags & 2), source=self.source_of(c))

    def source_of(self, c) -> str:
        """``file:line:column`` of cursor ``c``, with the helper calls it is inlined through
        (``k.cl:5:5 in sync_tile, called at k.cl:20:9``)."""
        return " in ".join([str(C.where(c, self.path)), *reversed(self.inlined_from)])

    # ------------------------------------------------------------------ helpers (inlined)
    def helper(self, call):
        ref = call.referenced
        if ref is None:
            return None
        definition = ref.get_definition()
        if definition is None or definition.location.file is None or \
                Path(definition.location.file.name) == C.BUILTINS_HEADER:
            return None
        return definition     # defined in the source or in a header it includes

    def inline(self, call, fn, want_value: bool):
        """Statements of ``fn``'s body with its parameters bound to the call's arguments,
        and the returned value's cursor (or None)."""
        from clang.cindex import CursorKind as K
        if self.inline_depth >= 16:
            self.fail(call, f"helper {fn.spelling} calls itself (recursion): the IR inlines "
                            "helpers; write the recursion as a loop")
        if _is_kernel(fn):
            self.fail(call, f"calling the kernel {fn.spelling} from a kernel: move its body "
                            "into a helper function")
        params = [k for k in C.children(fn) if k.kind == K.PARM_DECL]
        args = C.children(call)[1:]
        out: list = []
        bindings = {}
        for p, a in zip(params, args):
            t = p.type
            if _is_int_type(t):
                bindings[p.spelling] = _Binding("int", self.int_expr(a), p)
            elif _is_float_type(t):
                value = self.float_expr(a, out)
                bindings[p.spelling] = ("float", value, p)
            elif _type_kind(t) in ("POINTER", "CONSTANTARRAY", "INCOMPLETEARRAY"):
                ref = C.strip(a)
                b = self.lookup(ref.spelling) if ref.kind == K.DECL_REF_EXPR else None
                if b is not None and b.kind in ("local", "buffer", "private_array"):
                    bindings[p.spelling] = b     # the array itself, with its shape
                else:
                    bindings[p.spelling] = _Binding("pointer", self.pointer_expr(a), p)
            else:
                self.fail(a, f"helper argument {p.spelling} of type {t.spelling}: helpers "
                             "take integers, floats and pointers")
        saved_scopes, saved_return = self.scopes, self.helper_return
        self.scopes = [self.scopes[0], _Scope()]
        self.inline_depth += 1
        self.helper_return = []
        self.inlined_from.append(f"{fn.spelling}, called at {C.where(call, self.path)}")
        try:
            for pname, b in bindings.items():
                if isinstance(b, tuple):
                    ir = self.bind(pname, _Binding("float", None, b[2]))
                    out += [S.DeclareFloat(ir, None), S.Assign(ir, b[1])]
                else:
                    self.scopes[-1].names[pname] = b
            body = [k for k in C.children(fn) if k.kind == K.COMPOUND_STMT][0]
            kids = C.children(body)
            for i, k in enumerate(kids):
                if k.kind == K.RETURN_STMT and i != len(kids) - 1:
                    self.fail(k, f"helper {fn.spelling} returns before its end: return once, "
                                 "as its last statement")
            out += self.block(body, new_scope=False)
            returned = self.helper_return[0] if self.helper_return else None
            value = None
            if want_value:
                if returned is None:
                    self.fail(call, f"helper {fn.spelling} returns no value")
                if _is_int_type(fn.result_type):
                    value = ("int", self.int_expr(returned))
                else:
                    value = ("float", self.float_expr(returned, out))
            return out, value
        finally:
            self.scopes, self.helper_return = saved_scopes, saved_return
            self.inline_depth -= 1
            self.inlined_from.pop()

    # ------------------------------------------------------------------ integers
    # ------------------------------------------------------------------ C's integer types
    def int_expr(self, c) -> S.IntExpr:
        """The IR of the integer expression ``c``, congruent to C's value modulo
        ``2**bits`` of ``c``'s type (its wrap-around is applied where it matters: at the
        uses :meth:`exact` reads, and where a conversion widens a narrower type)."""
        chain = C.implicit_chain(c)
        value = self._int_expr(chain[-1])
        for outer, inner in reversed(list(zip(chain, chain[1:]))):
            value = self.convert(value, inner.type, outer.type, inner)
        return value

    def convert(self, value: S.IntExpr, source, target, at) -> S.IntExpr:
        """``value``, of C type ``source``, converted to ``target``: a wider type holds the
        value in the narrower one's range (``(long)(uint)x`` is 0 .. 2**32 - 1); a narrower or
        as wide a type keeps it congruent."""
        a, b = _int_type(source), _int_type(target)
        if a is None or b is None or b[0] <= a[0]:
            return value
        return self.canonical(value, source, at)

    def exact(self, c, address: bool = False) -> S.IntExpr:
        """The IR of the integer expression ``c`` with C's value in ``c``'s type (after the
        implicit conversions clang shows on it): what a comparison, ``/``, ``%``, ``>>``,
        ``min``/``max`` and an index read. ``address``: ``c`` offsets a pointer, whose
        64-bit arithmetic wraps as the congruent value does (no check of a 64-bit value)."""
        value = self.int_expr(c)
        info = _int_type(c.type)
        if address and info is not None and info[0] == 64:
            return value
        return self.canonical(value, c.type, c)

    def canonical(self, value: S.IntExpr, ctype, at) -> S.IntExpr:
        """``value`` in the range of the integer type ``ctype``: itself where its bounds
        for this launch (:meth:`range_of`) are in the range, else a :class:`Wrap` naming
        the expression at cursor ``at``."""
        info = _int_type(ctype)
        if info is None or info[0] == 1 or info == (64, True):
            return value
        lo, hi = self.range_of(value)
        tlo, thi = _type_range(*info)
        if tlo <= lo and hi <= thi:
            return value
        return S.Wrap(value, info[0], info[1],
                      f"{C.where(at, self.path)}: {self.describe_target(at)}")

    def range_of(self, e: S.IntExpr) -> tuple:
        """Bounds (lo, hi) of the values of ``e`` in this launch (``math.inf`` unknown)."""
        if isinstance(e, S.Const):
            return e.value, e.value
        if isinstance(e, S.Param):
            v = self.params.get(e.name)
            return (-math.inf, math.inf) if v is None else (v, v)
        if isinstance(e, S.Var):
            return self.ranges.get(e.name, (-math.inf, math.inf))
        if isinstance(e, S.WorkItemId):
            extent = {"global": self.global_size, "local": self.local_size,
                      "group": tuple(g // x for g, x in zip(self.global_size,
                                                            self.local_size))}[e.kind]
            return 0, extent[e.dim] - 1
        if isinstance(e, S.Min):
            (a, b), (c, d) = self.range_of(e.left), self.range_of(e.right)
            return min(a, c), min(b, d)
        if isinstance(e, S.Wrap):
            lo, hi = self.range_of(e.operand)
            if e.bits == 64:
                return (lo, hi) if e.signed else (max(lo, 0), max(hi, 0))
            tlo, thi = _type_range(e.bits, e.signed)
            return (lo, hi) if tlo <= lo and hi <= thi else (tlo, thi)
        if isinstance(e, S.BinOp):
            return int_op_bounds(e.op, self.range_of(e.left), self.range_of(e.right))
        return -math.inf, math.inf

    def _int_expr(self, s) -> S.IntExpr:
        """:meth:`int_expr` of ``s``, a cursor without implicit casts around it."""
        from clang.cindex import CursorKind as K
        kind = s.kind
        if kind == K.INTEGER_LITERAL:
            return S.Const(C.integer_value(s), C.macro_name(s))
        if kind == K.CSTYLE_CAST_EXPR:
            if not _is_int_type(s.type):
                self.fail(s, f"cast to {s.type.spelling} in an integer expression")
            inner = C.children(s)[-1]
            if not _is_int_type(C.strip(inner).type):
                self.fail(s, f"an integer computed from a float value: {DATA_DEPENDENT}")
            return self.convert(self.int_expr(inner), inner.type, s.type, inner)
        if kind == K.DECL_REF_EXPR:
            b = self.lookup(s.spelling)
            if b is None:
                ref = s.referenced
                if ref is not None and ref.kind == K.ENUM_CONSTANT_DECL:
                    return S.Const(int(ref.enum_value), s.spelling)
                self.fail(s, f"{s.spelling} is not an integer the kernel knows (a scalar "
                             "argument, a variable or a macro)")
            if b.kind in ("int", "loopvar"):
                return b.value
            if b.kind in ("float", "vector", "private_array"):
                self.fail(s, f"index or bound computed from the float {s.spelling}: "
                             f"{DATA_DEPENDENT}")
            self.fail(s, f"{s.spelling} used as an integer")
        if kind == K.BINARY_OPERATOR:
            op = C.binary_operator(s)
            left, right = C.children(s)
            if op in ("+", "-", "*"):
                return S.BinOp(op, self.int_expr(left), self.int_expr(right))
            if op in ("/", "%"):
                return S.BinOp(op, self.exact(left), self.exact(right),
                               f"{self.source_of(s)}: {self.describe_target(s)}")
            if op in ("<<", ">>"):
                shift = C.evaluate(right)
                if not isinstance(shift, int) or not 0 <= shift < 31:
                    self.fail(right, f"shift {op} by a value that is not a constant 0..30: "
                                     "shift by constants only")
                factor = S.Const(2 ** shift)
                if op == "<<":
                    return S.BinOp("*", self.int_expr(left), factor)
                value = self.exact(left)   # x >> s rounds down: (x - (x mod 2^s)) / 2^s
                return S.BinOp("/", S.BinOp("-", value, _floor_mod(value, factor)), factor)
            if op == "&":
                mask = C.evaluate(right)
                if isinstance(mask, int) and mask >= 0 and (mask + 1) & mask == 0:
                    return _floor_mod(self.int_expr(left), S.Const(mask + 1))
            self.fail(s, f"integer operator {op}: write + - * / %, min, max or shifts by "
                         "constants")
        if kind == K.UNARY_OPERATOR:
            op = C.unary_operator(s)
            inner = C.children(s)[0]
            if op == "-":
                return S.BinOp("-", S.Const(0), self.int_expr(inner))
            if op == "+":
                return self.int_expr(inner)
            self.fail(s, f"integer operator {op}: write + - * / %, min, max or shifts by "
                         "constants")
        if kind == K.CALL_EXPR:
            return self.int_call(s)
        if kind == K.ARRAY_SUBSCRIPT_EXPR or _is_float_type(s.type):
            self.fail(s, f"an index, bound or condition computed from loaded values: "
                         f"{DATA_DEPENDENT}")
        if kind == K.CONDITIONAL_OPERATOR:
            self.fail(s, "?: in an integer expression: write min()/max() or if/else")
        if kind.name == "CXX_UNARY_EXPR":
            v = C.evaluate(s)
            if isinstance(v, int):
                return S.Const(v)
        self.fail(s, f"integer expression {kind.name.lower()} is not supported")

    def int_call(self, s) -> S.IntExpr:
        name = s.spelling
        args = C.children(s)[1:]
        self.refuse_call(s)
        if name in _ID_FUNCTIONS or name in ("get_local_size", "get_num_groups",
                                             "get_global_size"):
            dim = C.evaluate(args[0]) if len(args) == 1 else None
            if not isinstance(dim, int):
                self.fail(s, f"{name} needs a constant dimension (0, 1 or 2)")
            ndim = len(self.local_size)
            if name == "get_local_size":
                return S.Const(self.local_size[dim] if dim < ndim else 1)
            if name == "get_num_groups":
                return S.Const(self.global_size[dim] // self.local_size[dim] if dim < ndim
                               else 1)
            if name == "get_global_size":
                return S.Const(self.global_size[dim] if dim < ndim else 1)
            if dim >= ndim:
                return S.Const(0)
            return S.WorkItemId(_ID_FUNCTIONS[name], dim)
        if name == "get_work_dim":
            return S.Const(len(self.local_size))
        if name in ("min", "max") and len(args) == 2:
            a, b = self.exact(args[0]), self.exact(args[1])
            if name == "min":
                return S.Min(a, b)
            return S.BinOp("-", S.Const(0), S.Min(S.BinOp("-", S.Const(0), a),
                                                  S.BinOp("-", S.Const(0), b)))
        helper = self.helper(s)
        if helper is not None and _is_int_type(helper.result_type):
            stmts, value = self.inline(s, helper, want_value=True)
            if stmts:
                self.fail(s, f"integer helper {name}: its body must be only return expr;")
            return value[1]
        if name == "get_global_offset":
            self.fail(s, "get_global_offset: launches have no offset here; drop it")
        self.fail(s, f"call of {name} in an integer expression: use get_*_id, get_local_size, "
                     "get_num_groups, min, max or a helper defined in the source")

    # ------------------------------------------------------------------ conditions
    def condition(self, c) -> S.Cond:
        from clang.cindex import CursorKind as K
        s = C.strip(c)
        if s.kind == K.BINARY_OPERATOR:
            op = C.binary_operator(s)
            left, right = C.children(s)
            if op in ("&&", "||"):
                return S.BoolOp(op, self.condition(left), self.condition(right))
            if op in _INT_COMPARE:
                for side in (left, right):
                    if not _is_int_type(C.strip(side).type):
                        self.fail(s, f"a branch on float values: {DATA_DEPENDENT}")
                return S.Compare(op, self.exact(left), self.exact(right))
        if s.kind == K.UNARY_OPERATOR and C.unary_operator(s) == "!":
            return S.Not(self.condition(C.children(s)[0]))
        if _is_float_type(s.type):
            self.fail(s, f"a branch on float values: {DATA_DEPENDENT}")
        return S.Compare("!=", self.exact(s), S.Const(0))

    # ------------------------------------------------------------------ memory
    def subscripts(self, s):
        """``base[i][j]`` -> (base cursor, [i cursor, j cursor])."""
        from clang.cindex import CursorKind as K
        index = []
        while s.kind == K.ARRAY_SUBSCRIPT_EXPR:
            base, idx = C.children(s)
            index.insert(0, idx)
            s = C.strip(base)
        return s, index

    def element(self, s, store=False):
        """An element access: ('private_elem', arr, index) or ('memory', array, index), or
        for a float4 buffer element ('vector_memory', pointer)."""
        from clang.cindex import CursorKind as K
        base, idx = self.subscripts(s)
        if base.kind == K.DECL_REF_EXPR:
            b = self.lookup(base.spelling)
            if b is None:
                self.fail(base, f"{base.spelling} is not declared in the kernel")
            if b.kind == "private_array":
                arr = b.value
                self._rank(s, arr.name, len(arr.dims), len(idx))
                return ("private_elem", arr, tuple(self.exact(i, True) for i in idx))
            if b.kind == "local":
                arr = b.value
                if len(idx) == len(arr.dims):
                    return ("memory", arr, tuple(self.exact(i, True) for i in idx))
                if len(idx) == 1:
                    return ("memory", arr, self.delinearize(self.exact(idx[0], True),
                                                            [d.value for d in arr.dims]))
                self._rank(s, arr.name, len(arr.dims), len(idx))
        if len(idx) != 1:
            self.fail(s, "a buffer is indexed with one flat index (A[row * N + col])")
        ptr = self.pointer_expr(base)
        index = self.exact(idx[0], True)
        ptr = self.offset(ptr, index * ptr.width if ptr.width > 1 else index)
        if ptr.width > 1:
            return ("vector_memory", ptr)
        return ("memory", *self.resolve(ptr, s, store))

    def _rank(self, s, name, rank, given):
        if rank != given:
            self.fail(s, f"{name} has {rank} dimension(s), indexed with {given}")

    def resolve(self, ptr: _Pointer, at, store=False):
        """(array, index tuple) of a scalar access through ``ptr``."""
        if isinstance(ptr.target, S.LocalArray):
            return ptr.target, ptr.index if ptr.index is not None else \
                self.delinearize(ptr.flat, [d.value for d in ptr.target.dims])
        buf = ptr.target
        if store:
            buf.stored = True
            if buf.role == "in":
                self.fail(at, f"store into buffer {buf.name}, whose access is 'in': give it "
                              "access 'out' or 'inout'", buf.name)
        return buf.array, self.delinearize(ptr.flat, buf.dims, buf.array.dims)

    def delinearize(self, flat: S.IntExpr, dims, dim_exprs=None) -> tuple:
        """Per-dimension indices of a row-major flat index over ``dims`` (see the module
        docstring)."""
        if len(dims) == 1:
            return (flat,)
        terms = _terms(flat)
        for i, (sign, t) in enumerate(terms):
            if sign == "+" and isinstance(t, S.BinOp) and t.op == "*":
                for outer, factor in ((t.left, t.right), (t.right, t.left)):
                    if self.static_value(factor) == dims[-1]:
                        rest = terms[:i] + terms[i + 1:]
                        return self.delinearize(outer, dims[:-1], None) + (_rebuild(rest),)
        last = dim_exprs[-1] if dim_exprs is not None else S.Const(dims[-1])
        outer = S.BinOp("/", flat, last)
        return self.delinearize(outer, dims[:-1], None) + (S.BinOp("%", flat, last),)

    def static_value(self, e) -> int | None:
        if isinstance(e, S.Const):
            return e.value
        if isinstance(e, S.Param):
            return self.params.get(e.name)
        if isinstance(e, S.BinOp):
            a, b = self.static_value(e.left), self.static_value(e.right)
            if a is None or b is None:
                return None
            if e.op == "+":
                return a + b
            if e.op == "-":
                return a - b
            if e.op == "*":
                return a * b
            if e.op in ("/", "%") and b:
                q = int(a / b)
                return q if e.op == "/" else a - q * b
        if isinstance(e, S.Min):
            a, b = self.static_value(e.left), self.static_value(e.right)
            return None if a is None or b is None else min(a, b)
        if isinstance(e, S.Wrap):
            v = self.static_value(e.operand)
            if v is None or e.bits == 64:
                return None if v is None or (not e.signed and v < 0) else v
            return wrap_int(v, e.bits, e.signed)
        return None

    def offset(self, ptr: _Pointer, delta: S.IntExpr) -> _Pointer:
        """``ptr`` moved by ``delta`` floats."""
        if isinstance(delta, S.Const) and delta.value == 0 and ptr.flat is None and \
                ptr.index is not None:
            return ptr
        if ptr.index is not None:
            index = ptr.index[:-1] + (_add(ptr.index[-1], delta),)
            return _Pointer(ptr.target, None, index, ptr.width)
        return _Pointer(ptr.target, _add(ptr.flat, delta), None, ptr.width)

    def pointer_expr(self, c) -> _Pointer:
        """The address an expression of pointer type holds (a buffer or local array, an
        offset in floats, the floats per element of its type)."""
        from clang.cindex import CursorKind as K
        s = C.strip(c)
        if s.kind == K.DECL_REF_EXPR:
            b = self.lookup(s.spelling)
            if b is not None and b.kind == "buffer":
                return _Pointer(b.value, S.Const(0), None, b.value.width)
            if b is not None and b.kind == "pointer":
                return b.value
            if b is not None and b.kind == "local":
                if len(b.value.dims) == 1:
                    return _Pointer(b.value, None, (S.Const(0),), 1)
                return _Pointer(b.value, S.Const(0), None, 1)
            self.fail(s, f"{s.spelling} is not a buffer or a local array")
        if s.kind == K.CSTYLE_CAST_EXPR:
            inner = self.pointer_expr(C.children(s)[-1])
            pointee = s.type.get_pointee()
            if _is_vector_type(pointee) and _is_float_type(pointee.get_canonical().element_type):
                width = _vector_width(pointee)
            elif _is_float_type(pointee):
                width = 1
            else:
                self.fail(s, f"pointer cast to {s.type.spelling}: cast to float2/float4 "
                             "pointers only")
            return _Pointer(inner.target, inner.flat, inner.index, width)
        if s.kind == K.UNARY_OPERATOR and C.unary_operator(s) == "&":
            target = C.strip(C.children(s)[0])
            if target.kind == K.ARRAY_SUBSCRIPT_EXPR:
                base, idx = self.subscripts(target)
                b = self.lookup(base.spelling) if base.kind == K.DECL_REF_EXPR else None
                if b is not None and b.kind == "local" and len(idx) == len(b.value.dims):
                    return _Pointer(b.value, None, tuple(self.exact(i, True) for i in idx), 1)
                if len(idx) == 1:
                    ptr = self.pointer_expr(base)
                    delta = self.exact(idx[0], True)
                    return self.offset(ptr, delta * ptr.width if ptr.width > 1 else delta)
            self.fail(s, "address of something other than a buffer or local array element")
        if s.kind == K.BINARY_OPERATOR and C.binary_operator(s) in ("+", "-"):
            left, right = C.children(s)
            if _type_kind(C.strip(left).type) != "POINTER":
                left, right = right, left
            ptr = self.pointer_expr(left)
            delta = self.exact(right, True)
            if C.binary_operator(s) == "-":
                delta = S.BinOp("-", S.Const(0), delta)
            return self.offset(ptr, delta * ptr.width if ptr.width > 1 else delta)
        self.fail(s, "pointer expression: point into a buffer (A + offset, &A[i]) or a local "
                     "array")

    # ------------------------------------------------------------------ vectors
    def is_vector_component(self, s) -> bool:
        from clang.cindex import CursorKind as K
        if s.kind not in (K.UNEXPOSED_EXPR, K.MEMBER_REF_EXPR):
            return False
        kids = C.children(s)
        return len(kids) == 1 and _is_vector_type(kids[0].type) and not _is_vector_type(s.type)

    def vector_component(self, s):
        """(component names of the vector variable, component number) of ``v.x``."""
        from clang.cindex import CursorKind as K
        base = C.strip(C.children(s)[0])
        comp = list(s.get_tokens())[-1].spelling
        if comp not in _VECTOR_COMPONENTS or base.kind != K.DECL_REF_EXPR:
            self.fail(s, "vector component: write v.x, v.y, v.z or v.w of a float4 variable")
        b = self.lookup(base.spelling)
        if b is None or b.kind != "vector":
            self.fail(s, f"{base.spelling} is not a float vector variable")
        k = _VECTOR_COMPONENTS.index(comp)
        if k >= len(b.value):
            self.fail(s, f"{base.spelling} has {len(b.value)} components")
        return b.value, k

    def vector_values(self, c, width):
        """A float vector value: (tuple of FloatExpr, statements to run first)."""
        from clang.cindex import CursorKind as K
        s = C.strip(c)
        out: list = []
        load = self.vector_load_of(s, width)
        if load is not None:
            names = tuple(f"{self.fresh('vec')}.{_VECTOR_COMPONENTS[w]}" for w in range(width))
            out += [S.DeclareFloat(n, None) for n in names]
            out.append(load(names))
            return tuple(S.Private(n) for n in names), out
        if s.kind == K.DECL_REF_EXPR:
            b = self.lookup(s.spelling)
            if b is not None and b.kind == "vector" and len(b.value) == width:
                return tuple(S.Private(n) for n in b.value), out
        if s.kind == K.COMPOUND_LITERAL_EXPR and _is_vector_type(s.type):
            parts = C.children(C.children(s)[-1])
            if len(parts) == width and not any(_is_vector_type(C.strip(p).type)
                                               for p in parts):
                return tuple(self.float_expr(p, out) for p in parts), out
            if len(parts) == 1:
                return self.splat(self.float_expr(parts[0], out), width, out), out
        if s.kind == K.CSTYLE_CAST_EXPR and _is_vector_type(s.type):
            inner = C.strip(C.children(s)[-1])
            parts = C.children(inner) if inner.kind in (K.INIT_LIST_EXPR, K.PAREN_EXPR) or \
                inner.kind.name == "PAREN_LIST_EXPR" else [inner]
            if len(parts) == width:
                return tuple(self.float_expr(p, out) for p in parts), out
            if len(parts) == 1:
                return self.splat(self.float_expr(parts[0], out), width, out), out
        if s.kind == K.BINARY_OPERATOR and C.binary_operator(s) in ("+", "-", "*"):
            a, b = C.children(s)
            va, oa = self._vector_or_scalar(a, width)
            vb, ob = self._vector_or_scalar(b, width)
            op = C.binary_operator(s)
            return tuple(S.FBinOp(op, x, y) for x, y in zip(va, vb)), oa + ob
        self.fail(s, f"float{width} value: write vload{width}, a float{width} variable, "
                     f"(float{width})(a, b, ...) or + - * of those")

    def _vector_or_scalar(self, c, width):
        if _is_vector_type(C.strip(c).type):
            return self.vector_values(c, width)
        out: list = []
        return self.splat(self.float_expr(c, out), width, out), out

    def splat(self, value: S.FloatExpr, width: int, out: list) -> tuple:
        """``value`` as every component of a float``width``: evaluated once, as C does (a
        load or an operation in it is one load or FLOP, not ``width``), through a fresh
        private float assigned in ``out`` unless it is a constant or a private already."""
        if isinstance(value, (S.FConst, S.Private)):
            return (value,) * width
        name = self.fresh("scalar")
        out += [S.DeclareFloat(name, None), S.Assign(name, value)]
        return (S.Private(name),) * width

    def fresh(self, base: str) -> str:
        n = 1
        name = base
        while name in self.used_names:
            n += 1
            name = f"{base}_{n}"
        self.used_names.add(name)
        return name

    def vector_load_of(self, s, width):
        """A function names -> VectorLoad when ``s`` loads a vector from memory, else None."""
        from clang.cindex import CursorKind as K
        ptr = None
        if s.kind == K.CALL_EXPR and s.spelling in ("vload2", "vload4"):
            if int(s.spelling[-1]) != width:
                self.fail(s, f"{s.spelling} into a float{width}")
            args = C.children(s)[1:]
            base = self.pointer_expr(args[1])
            ptr = self.offset(base, self.exact(args[0], True) * width)
        elif s.kind == K.UNARY_OPERATOR and C.unary_operator(s) == "*":
            ptr = self.pointer_expr(C.children(s)[0])
        elif s.kind == K.ARRAY_SUBSCRIPT_EXPR:
            e = self.element(s)
            if e[0] == "vector_memory":
                ptr = e[1]
        if ptr is None:
            return None
        if ptr.width not in (1, width):
            self.fail(s, f"float{ptr.width} access read as float{width}")
        array, index = self.resolve(ptr, s)
        return lambda names: S.VectorLoad(tuple(names), array, index)

    def vector_assign(self, names, rhs) -> list:
        s = C.strip(rhs)
        load = self.vector_load_of(s, len(names))
        if load is not None:
            return [load(names)]
        values, out = self.vector_values(s, len(names))
        return out + [S.Assign(n, v) for n, v in zip(names, values)]

    def vector_store(self, ptr, rhs, at) -> list:
        width = ptr.width
        values, out = self.vector_values(rhs, width)
        return out + [self.vector_memory_store(ptr, width, values, at)]

    def vector_memory_store(self, ptr, width, values, at):
        if ptr.width not in (1, width):
            self.fail(at, f"float{width} stored through a float{ptr.width} pointer")
        array, index = self.resolve(ptr, at, store=True)
        return S.VectorStore(array, index, tuple(values))

    # ------------------------------------------------------------------ floats
    def float_expr(self, c, out: list) -> S.FloatExpr:
        from clang.cindex import CursorKind as K
        s = C.strip(c)
        kind = s.kind
        if kind == K.FLOATING_LITERAL or _is_int_type(s.type) or (
                kind == K.CALL_EXPR and s.spelling in _FLOAT_CONSTANT_CALLS):
            v = self.float_literal(s)
            if v is not None:
                return S.FConst(v)
        if self.is_vector_component(s):
            names, k = self.vector_component(s)
            return S.Private(names[k])
        if kind == K.CSTYLE_CAST_EXPR:
            inner = C.children(s)[-1]
            if _is_float_type(C.strip(inner).type):
                return self.float_expr(inner, out)
            v = self.float_literal(s)
            if v is not None:
                return S.FConst(v)
            self.fail(s, "an integer converted to float: the IR's floats come from memory and "
                         "constants; load the value instead")
        if kind == K.DECL_REF_EXPR:
            b = self.lookup(s.spelling)
            if b is not None and b.kind == "float":
                return S.Private(b.value)
            if b is not None and b.kind in ("int", "loopvar"):
                self.fail(s, f"the integer {s.spelling} used as a float: the IR's floats come "
                             "from memory and constants")
            self.fail(s, f"{s.spelling} is not a float the kernel knows")
        if kind == K.ARRAY_SUBSCRIPT_EXPR:
            e = self.element(s)
            if e[0] == "private_elem":
                return S.PrivateElem(e[1], e[2])
            if e[0] == "memory":
                return S.Load(e[1], e[2])
            self.fail(s, "a float4 element used as one float: take a component (A[i].x) of a "
                         "float4 variable")
        if kind == K.BINARY_OPERATOR:
            op = C.binary_operator(s)
            if op in ("+", "-", "*"):
                a, b = C.children(s)
                return S.FBinOp(op, self.float_expr(a, out), self.float_expr(b, out))
            if op == "/":
                self.fail(s, "float division: the IR counts +, - and *; multiply by a "
                             "reciprocal constant (x * 0.5f)")
            self.fail(s, f"float operator {op}")
        if kind == K.UNARY_OPERATOR:
            op = C.unary_operator(s)
            v = self.float_literal(s)
            if v is not None:
                return S.FConst(v)
            if op == "+":
                return self.float_expr(C.children(s)[0], out)
            if op == "-":
                return S.FNeg(self.float_expr(C.children(s)[0], out))
            if op == "*":
                self.fail(s, "a float read through a pointer: index the buffer (A[i])")
            self.fail(s, f"float operator {op}")
        if kind == K.CALL_EXPR:
            return self.float_call(s, out)
        if kind == K.CONDITIONAL_OPERATOR:
            cond, then, orelse = C.children(s)
            test = self.condition(cond)          # refuses a condition on float values
            operands = self.float_expr(then, out), self.float_expr(orelse, out)
            if any(_loads(e) for e in operands):
                self.fail(s, "a load in a branch of ?: (C loads only the branch taken, the "
                             "simulator's select loads both): write it as if/else")
            return S.Select(test, *operands)
        self.fail(s, f"float expression {kind.name.lower()} is not supported")

    def float_call(self, s, out) -> S.FloatExpr:
        name = s.spelling
        args = C.children(s)[1:]
        self.refuse_call(s)
        if name in ("fma", "mad") and len(args) == 3:
            a, b, c = (self.float_expr(x, out) for x in args)
            return S.FBinOp("+", S.FBinOp("*", a, b), c)
        functions = S.FLOAT_FUNCTIONS                     # the IR's float built-ins
        fn = {"max": "fmax", "min": "fmin"}.get(name, name)
        if fn in functions and len(args) == functions[fn]:
            return S.FCall(fn, tuple(self.float_expr(a, out) for a in args))
        if name == "select" and len(args) == 3:
            if not _is_int_type(C.strip(args[2]).type):
                self.fail(s, f"select on a float condition: {DATA_DEPENDENT}")
            test = self.condition(args[2])
            return S.Select(test, self.float_expr(args[1], out), self.float_expr(args[0], out))
        helper = self.helper(s)
        if helper is not None:
            stmts, value = self.inline(s, helper, want_value=True)
            out += stmts
            if value[0] != "float":
                self.fail(s, f"helper {name} returns an integer where a float is needed")
            return value[1]
        known = ", ".join(["fma", "mad", *S.FLOAT_FUNCTIONS, "select"])
        self.fail(s, f"call of {name}: floats take + - *, {known} and helpers defined in the "
                     "source or its headers")


def _terms(e: S.IntExpr) -> list[tuple[str, S.IntExpr]]:
    """The additive terms of ``e`` with their signs, left to right."""
    if isinstance(e, S.BinOp) and e.op in ("+", "-"):
        right = _terms(e.right)
        if e.op == "-":
            right = [("-" if sign == "+" else "+", t) for sign, t in right]
        return _terms(e.left) + right
    return [("+", e)]


def _rebuild(terms) -> S.IntExpr:
    if not terms:
        return S.Const(0)
    sign, first = terms[0]
    e = first if sign == "+" else S.BinOp("-", S.Const(0), first)
    for sign, t in terms[1:]:
        e = S.BinOp(sign, e, t)
    return e


def _add(a: S.IntExpr, b: S.IntExpr) -> S.IntExpr:
    if isinstance(b, S.Const) and b.value == 0:
        return a
    if isinstance(a, S.Const) and a.value == 0 and a.name is None:
        return b
    return S.BinOp("+", a, b)
