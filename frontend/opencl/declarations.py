"""The kernel's signature and declarations: its arguments checked against what the caller
gives (``__global``/``__constant`` ``float``/``float2``/``float4`` buffers with their shapes
and accesses, ``__local float *`` arguments with their sizes, ``int``/``uint``, ``long``/``ulong``/``size_t``
and ``float`` scalars), and the variables its body declares (integers, a ``Let`` or, assigned again, a
``DeclareInt``; private floats and float vectors, private arrays, ``__local`` arrays of
static shape, pointers into buffers). ``__attribute__((...))`` on a declaration is no part
of its value.

Errors: :class:`~tiletraffic.frontend.opencl.clang_ast.FrontendError` naming the argument or
the declaration, and what to write instead.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tiletraffic.simulator.ir import nodes as S

from tiletraffic.frontend.opencl import clang_ast as C
from tiletraffic.frontend.opencl.c_types import (CHAR_KINDS, VECTOR_COMPONENTS, address_space,
                                                 type_range,
                                                 int_type, is_float_type, is_int_type,
                                                 is_vector_type, type_kind, vector_width)
from tiletraffic.frontend.opencl.clang_ast import FrontendError
from tiletraffic.frontend.opencl.context import Binding, Buffer, TranslationContext

ACCESS = S.ARRAY_ROLES
"""The accesses a buffer argument may have (``in``, ``out``, ``inout``)."""

_INT_NAMES = {8: "char", 16: "short", 32: "int"}
"""OpenCL C's name of the integer type of each width below 64 bits."""
_SCALAR_INTS = ("INT", "UINT", "LONG", "ULONG", "LONGLONG", "ULONGLONG", "CHAR_S", "CHAR_U",
                "SCHAR", "UCHAR", "SHORT", "USHORT")
INT_VECTOR_TYPES = ((32, True), (32, False))
"""(bits, signed) of the components of the integer vector arguments (``int2``, ``uint4``)."""
"""clang's canonical kinds of the integer scalar arguments (``size_t`` is ``ULONG``)."""

FLT_MAX = 3.4028234663852886e38
"""The largest finite float32."""


@dataclass(frozen=True)
class BufferArg:
    """A buffer argument as the caller describes it: its logical shape (row-major float32
    elements; each entry an ``int`` or the name of a size or scalar argument) and its
    access, one of ``in``, ``out``, ``inout``.

    For a ``__local float *`` (``float2``, ``float4``, ``float8``) argument: its shape in
    elements of the pointee type (row-major; the access, if any, is ignored; ``(32,)`` is
    32 ``float4`` of a ``float4`` pointer, 512 bytes), or ``local_bytes``, its size in bytes
    as ``clSetKernelArg`` takes it (a shape of ``local_bytes`` / the element's bytes), or
    both when they agree.

    ``null``: the ``__global`` pointer argument is given as ``NULL`` (no shape, no access):
    a test of it (``p != NULL``, ``p ? x : y``) is a constant, and an access through it is
    refused.

    ``data``: the contents of an ``int``/``uint`` buffer (flat, row-major integers), which
    the kernel reads as integers (indices, bounds); needed for such a buffer."""

    shape: tuple
    access: str | None = None
    local_bytes: int | None = None
    null: bool = False
    data: object = None


BUFFER_FIELDS = ("shape", "access", "local_bytes", "null", "data")
"""The fields of a buffer or local argument given as a dict (:class:`BufferArg`)."""


def _integers(name: str, data):
    """The contents of integer buffer ``name`` given as a sequence or numpy array of
    integers, flat (row-major) as a read-only int64 numpy array; None where not given.

    Raises:
        FrontendError: a value that is not an integer (named)."""
    if data is None:
        return None
    values = np.asarray(data)
    if values.dtype.kind not in "iub":
        bad = next((v for v in values.reshape(-1).tolist()
                    if isinstance(v, bool) or not isinstance(v, int)), values.dtype)
        raise FrontendError(f"buffer {name}: data holds {bad!r}; an integer buffer holds "
                            "integers", name)
    flat = values.reshape(-1)
    if flat.dtype.kind == "u" and flat.size and int(flat.max()) >= 2 ** 63:
        raise FrontendError(f"buffer {name}: data value {int(flat.max())} does not fit "
                            "32-bit integers", name)
    flat = np.array(flat, dtype=np.int64)
    flat.setflags(write=False)
    return flat


class Declarations(TranslationContext):
    """The kernel's arguments and the declarations of its body."""

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
            b.array = S.GlobalArray(b.name, b.role, b.shape, b.dtype, b.data)
        body = [c for c in self.cursor.get_children() if c.kind == CursorKind.COMPOUND_STMT]
        stmts = self.block(body[0], new_scope=True, kernel_level=True)
        self.check_flat_local_shapes()
        for b in self.buffers.values():
            if b.stored and b.role == "in":
                raise FrontendError(f"{self.path}: kernel stores into buffer {b.name}, "
                                    "whose access is 'in'; give it access 'out' or 'inout'",
                                    b.name)
        return tuple(stmts)

    def declare_argument(self, p):
        name, t = p.spelling, p.type
        value = self.args[name]
        if isinstance(value, dict):
            extra = sorted(set(value) - set(BUFFER_FIELDS))
            if extra:
                raise FrontendError(f"buffer {name}: unknown field(s) {', '.join(extra)}",
                                    name)
            value = BufferArg(tuple(value.get("shape") or ()), value.get("access"),
                              value.get("local_bytes"), value.get("null", False),
                              _integers(name, value.get("data")))
        if type_kind(t) == "POINTER":
            pointee = t.get_pointee()
            space = self.pointer_space(pointee)
            if space == "__local":
                self.declare_local_argument(p, pointee, value)
                return
            if space not in ("__global", "__constant"):
                self.fail(p, f"argument {name}: pointers must be __global or __constant",
                          name)
            if value is None or isinstance(value, BufferArg) and value.null is not False:
                self.declare_null_argument(p, value)
                return
            char = type_kind(pointee) in CHAR_KINDS
            if type_kind(pointee) in _SCALAR_INTS and int_type(pointee) is not None and \
                    int_type(pointee)[0] == 32 and isinstance(value, BufferArg):
                if value.data is None:
                    self.fail(p, f"buffer {name} of {pointee.spelling} is read as integers: "
                                 "give its contents (data = \"FILE.npy\" or "
                                 "\"FILE.py:FUNCTION\")", name)
                self.declare_int_buffer(p, pointee, value, space)
                return
            half = type_kind(pointee) == "HALF"    # read with vload_half, stored with vstore_half
            if is_float_type(pointee) or char or half:
                width = 1
            elif is_vector_type(pointee) and \
                    is_float_type(pointee.get_canonical().element_type) and \
                    vector_width(pointee) in S.VECTOR_WIDTHS:
                width = vector_width(pointee)
            else:
                self.fail(p, f"buffer {name} of {pointee.spelling}: buffers must hold float, "
                             "float2, float4 or half, or be char or void pointers to floats",
                          name)
            if not isinstance(value, BufferArg):
                raise FrontendError(f"argument {name} is a buffer in the source; give its "
                                    "shape and access, not a number", name)
            if value.local_bytes is not None:
                raise FrontendError(f"buffer {name} is {space} in the source; local_bytes "
                                    "sizes a __local pointer argument: give its shape", name)
            if value.access is None:
                raise FrontendError(f"missing (one of {', '.join(ACCESS)}): buffer {name} is "
                                    f"{space} in the source and needs an access", name,
                                    "access")
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
            self.buffers[name] = Buffer(name, value.access, shape, dims, width, const,
                                        dtype="half" if half else "float", char=char)
            self.arg_kinds.append((name, {"in": "global_in", "out": "global_out",
                                          "inout": "global_inout"}[value.access]))
            self.bind(name, Binding("buffer", self.buffers[name], p))
            return
        if is_vector_type(t) and int_type(t.get_canonical().element_type) in INT_VECTOR_TYPES:
            self.declare_int_vector_argument(p, value)
            return
        if type_kind(t) in _SCALAR_INTS:
            bits, signed = int_type(t)
            if isinstance(value, bool) or not isinstance(value, int):
                given = "a buffer (shape and access)" if isinstance(value, BufferArg) \
                    else f"{type(value).__name__} {value!r}"
                hint = " (in an expression, // divides integers)" \
                    if isinstance(value, float) else ""
                raise FrontendError(f"argument {name} is an integer in the source; give it "
                                    f"a number, not {given}{hint}", name)
            if not signed and value < 0:
                raise FrontendError(f"argument {name} = {value} is negative, but a "
                                    f"{ {8: 'uchar', 16: 'ushort', 32: 'uint'}.get(bits, 'ulong')} in the source (the device would see it as "
                                    f"{value % 2 ** bits}); give 0 or more", name)
            low, high = type_range(bits, True)
            if not low <= value <= high:
                if not signed:
                    raise FrontendError(f"argument {name} = {value} is above {high}, the "
                                        f"largest value of an unsigned {bits}-bit argument "
                                        "read (integer arguments are read as signed)", name)
                raise FrontendError(f"argument {name} = {value} does not fit a {bits}-bit "
                                    f"{'int' if bits == 32 else 'signed integer'} ({low} to "
                                    f"{high})", name)
            self.params[name] = int(value)
            self.arg_kinds.append((name, {8: "char", 16: "short", 32: "int"}.get(bits, "long")))
            self.scopes[0].names[name] = Binding("int", S.Param(name), p)
            self.used_names.add(name)
            return
        if is_float_type(t):
            self.declare_float_argument(p, value)
            return
        self.fail(p, f"argument {name} of type {t.spelling}: arguments must be int, uint, long, "
                     "ulong, size_t or float scalars, __global float/float2/float4 buffers or __local float "
                     "pointers", name)

    def declare_int_buffer(self, p, pointee, value: BufferArg, space: str) -> None:
        """A ``__global``/``__constant`` ``int*``/``uint*`` argument given its contents
        (``value.data``): an input :class:`simulator.ir.nodes.GlobalArray` of element type
        ``int``/``uint`` whose elements the kernel reads as integers."""
        name = p.spelling
        if value.access not in (None, "in"):
            raise FrontendError(f"buffer {name} of {pointee.spelling} is read as integers: "
                                f"its access must be 'in', not {value.access!r}", name)
        shape, dims = self.buffer_shape(name, value.shape)
        n = math.prod(dims)
        if len(value.data) != n:
            raise FrontendError(f"buffer {name}: data holds {len(value.data)} integers; its "
                                f"shape {' x '.join(map(str, dims))} holds {n}", name)
        signed = int_type(pointee)[1]
        lo, hi = type_range(32, signed)
        outside = np.flatnonzero((value.data < lo) | (value.data > hi))
        bad = int(value.data[outside[0]]) if outside.size else None
        if bad is not None:
            raise FrontendError(f"buffer {name}: data value {bad} does not fit its "
                                f"{'int' if signed else 'uint'} elements ({lo} to {hi})", name)
        buf = Buffer(name, "in", shape, dims, 1, True, dtype="int" if signed else "uint",
                     data=value.data)
        self.buffers[name] = buf
        self.arg_kinds.append((name, "global_in"))
        self.bind(name, Binding("buffer", buf, p))

    def declare_int_vector_argument(self, p, value) -> None:
        """An ``int2``/``uint2``/``int4``/``uint4`` argument given a list of as many
        integers: each component an IR parameter (``name_x``, ...), the argument passed to
        the device as the vector."""
        name, t = p.spelling, p.type
        width = vector_width(t)
        bits, signed = int_type(t.get_canonical().element_type)
        ctype = f"{'' if signed else 'u'}int{width}"
        if not isinstance(value, (list, tuple)) or len(value) != width or \
                any(isinstance(v, bool) or not isinstance(v, int) for v in value):
            raise FrontendError(f"argument {name} is an {ctype} in the source; give it a list "
                                f"of {width} integers, not {value!r}", name)
        lo, hi = (-(2 ** 31), 2 ** 31 - 1) if signed else (0, 2 ** 32 - 1)
        for v in value:
            if not lo <= v <= hi:
                raise FrontendError(f"argument {name} = {list(value)}: {v} does not fit the "
                                    f"{ctype}'s components ({lo} to {hi})", name)
        names = []
        for k, v in enumerate(value):
            param = self.fresh(f"{name}_{VECTOR_COMPONENTS[k]}")
            self.params[param] = int(v)
            names.append(param)
        self.int_vectors[name] = tuple(names)
        self.arg_kinds.append((name, ctype))
        self.scopes[0].names[name] = Binding("int_vector", tuple(S.Param(n) for n in names), p)
        self.used_names.add(name)

    def declare_null_argument(self, p, value) -> None:
        """A ``__global`` pointer argument given as ``NULL`` (``value``: ``None`` or a
        :class:`BufferArg` with ``null`` true and nothing else): no array; bound so that a
        test of it is a constant (:meth:`frontend.opencl.memory.Memory.known_condition`)."""
        name = p.spelling
        if value is not None and (value.null is not True or value.shape or value.access or
                                  value.local_bytes is not None):
            raise FrontendError(f"buffer {name}: null must be true and stand alone (no shape, "
                                "access or local_bytes)", name)
        self.arg_kinds.append((name, "null"))
        self.scopes[0].names[name] = Binding("null", None, p)
        self.used_names.add(name)

    def declare_float_argument(self, p, value) -> None:
        """A ``float`` argument: a :class:`~simulator.ir.nodes.FloatParam` whose value,
        ``value`` as float32, is the schedule's parameter of its name."""
        name = p.spelling
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            given = "a buffer (shape and access)" if isinstance(value, BufferArg) \
                else f"{type(value).__name__} {value!r}"
            raise FrontendError(f"argument {name} is a float in the source; give it a number, "
                                f"not {given}", name)
        if not math.isfinite(value) or abs(value) > FLT_MAX:
            raise FrontendError(f"argument {name} = {value!r} is not a finite float32 (at most "
                                f"{FLT_MAX:.6g} in magnitude)", name)
        self.params[name] = float(value)
        self.arg_kinds.append((name, "float"))
        self.scopes[0].names[name] = Binding("float_param", S.FloatParam(name), p)
        self.used_names.add(name)

    def declare_local_argument(self, p, pointee, value) -> None:
        """A ``__local float *`` (or ``float2 *``, ``float4 *``) argument: local memory of
        the work-group, sized by the caller (``value``: a shape in elements of its type, or
        bytes), as an IR :class:`~simulator.ir.nodes.LocalArray` of that shape (indexed
        through the pointer with one flat, row-major index; a vector's floats one more
        dimension). A vector's shape of two or more extents, the last its width, is checked
        once the body is read (:meth:`check_flat_local_shapes`)."""
        name = p.spelling
        width = 1
        if is_vector_type(pointee) and is_float_type(pointee.get_canonical().element_type) \
                and vector_width(pointee) in S.VECTOR_WIDTHS:
            width = vector_width(pointee)
        elif not is_float_type(pointee):
            self.fail(p, f"__local pointer argument {name} of {pointee.spelling}: local "
                         "pointer arguments hold float, float2 or float4", name)
        if value is None or isinstance(value, BufferArg) and value.null:
            raise FrontendError(f"argument {name} is a __local pointer in the source, which "
                                "cannot be null; give its shape or local_bytes", name)
        if not isinstance(value, BufferArg):
            raise FrontendError(f"argument {name} is a __local pointer in the source; give "
                                "its shape (elements) or local_bytes, not a number", name)
        if value.shape:
            dims = self.shape_values(name, value.shape)
        elif value.local_bytes is None:
            raise FrontendError(f"local argument {name}: give its shape (elements) or "
                                "local_bytes (bytes, as clSetKernelArg takes them)", name)
        else:
            dims = ()
        if value.local_bytes is not None:
            size = value.local_bytes
            if isinstance(size, bool) or not isinstance(size, int) or size < S.FLOAT_BYTES \
                    or size % S.FLOAT_BYTES:
                raise FrontendError(f"local argument {name}: local_bytes = {size!r} is not a "
                                    f"positive multiple of {S.FLOAT_BYTES} (bytes of a float)",
                                    name)
            element = S.FLOAT_BYTES * width
            if size % element:
                raise FrontendError(f"local argument {name}: local_bytes = {size} is not a "
                                    f"multiple of {element} (bytes of its element type, "
                                    f"{pointee.spelling})", name)
            if dims and math.prod(dims) * element != size:
                raise FrontendError(f"local argument {name}: shape {list(dims)} is "
                                    f"{math.prod(dims) * element} bytes, local_bytes "
                                    f"{size}: give one of them, or both equal", name)
            dims = dims or (size // element,)
        arr = S.LocalArray(self.bind(name, Binding("local", None, p)),
                           tuple(S.Const(d) for d in dims + ((width,) if width > 1 else ())))
        if width > 1:
            self.vector_widths[arr.name] = width
            if len(dims) > 1 and dims[-1] == width:
                self.flat_local_shapes[arr.name] = (name, dims, width)
        self.lookup(name).value = arr
        self.local_arrays.append(arr)
        self.arg_kinds.append((name, "local", arr.size_bytes))

    def check_flat_local_shapes(self) -> None:
        """Refuse a ``__local float2/4/8 *`` argument shaped ``[..., width]`` (its last
        extent the vector's width) that the kernel indexes only by one flat index, never by
        its rows: a shape counts elements of the pointee type, so the last extent is not
        the vector's floats.

        Raises:
            FrontendError: one line naming the argument, the shape given, its bytes and the
                shape of the same elements without the last extent."""
        for arr_name in sorted(self.flat_local_reads & set(self.flat_local_shapes)):
            name, dims, width = self.flat_local_shapes[arr_name]
            ctype, element = f"float{width}", S.FLOAT_BYTES * width
            fewer = list(dims[:-1])
            raise FrontendError(
                f"local argument {name} of {ctype}: shape {list(dims)} counts {ctype} "
                f"elements ({math.prod(dims)} of them, {math.prod(dims) * element} bytes), "
                f"but the kernel indexes it by one flat index: give shape {fewer} for "
                f"{math.prod(fewer)} {ctype} ({math.prod(fewer) * element} bytes), or "
                f"[{math.prod(dims)}] for {math.prod(dims)} {ctype}", name)

    def shape_values(self, name, shape) -> tuple[int, ...]:
        """The extents of a shape the caller gives (each an ``int`` or the name of a size or
        of a scalar argument), each a positive integer, fewer than 2^31 elements in all."""
        dims = []
        for d, entry in enumerate(shape):
            value = entry
            if isinstance(entry, str):
                if entry in self.sizes:
                    value = self.sizes[entry]
                elif entry in self.args and not isinstance(self.args[entry], (dict, BufferArg)):
                    value = self.args[entry]
                else:
                    raise FrontendError(f"buffer {name}: shape[{d}] = {entry!r} is neither a "
                                        "size nor a scalar argument", name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise FrontendError(f"buffer {name}: shape[{d}] = {value!r} is not a positive "
                                    "integer", name)
            dims.append(int(value))
        if math.prod(dims) >= 2 ** 31:
            raise FrontendError(f"buffer {name}: {math.prod(dims)} elements; at most 2^31 - 1",
                                name)
        return tuple(dims)

    def buffer_shape(self, name, shape) -> tuple[tuple[str, ...], tuple[int, ...]]:
        """The parameter names and the extents of a buffer's shape (:meth:`shape_values`);
        a name that is not an integer argument becomes a parameter of that value, a number
        one named ``<buffer>_dim<d>``."""
        if not shape:
            raise FrontendError(f"buffer {name}: shape missing (a list of positive sizes)", name)
        dims = self.shape_values(name, shape)
        names = []
        for d, (entry, value) in enumerate(zip(shape, dims)):
            pname = entry if isinstance(entry, str) else f"{name}_dim{d}"
            scalar = self.args.get(entry) if isinstance(entry, str) else None
            if isinstance(scalar, int) and not isinstance(scalar, bool) and scalar != value:
                pname = f"{name}_dim{d}"       # the size and the argument differ
            if pname not in self.args:
                self.params.setdefault(pname, value)
            names.append(pname)
        return tuple(names), dims

    def declaration(self, d, kernel_level) -> list:
        from clang.cindex import CursorKind as K
        if d.kind != K.VAR_DECL:
            self.fail(d, f"declaration {d.kind.name.lower()}: only variables are declared "
                         "inside a kernel")
        t = d.type
        name = d.spelling
        kids = [k for k in C.children(d)
                if k.kind != K.TYPE_REF and not k.kind.is_attribute()]
        space = address_space(t)
        if space == "__local" and type_kind(t) != "POINTER":
            return self.local_declaration(d, kernel_level)
        if type_kind(t) == "CONSTANTARRAY":
            return self.private_array_declaration(d, kids)
        init = kids[-1] if kids else None
        if is_int_type(t):
            return self.int_declaration(d, init)
        if is_float_type(t):
            fixed = self.float_literal(init) if init is not None else None
            if init is not None and fixed is None:
                out: list = []
                value = self.float_expr(init, out)
                ir = self.bind(name, Binding("float", None, d))
                return out + [S.DeclareFloat(ir, None), S.Assign(ir, value)]
            ir = self.bind(name, Binding("float", None, d))
            return [S.DeclareFloat(ir, fixed)]
        if is_vector_type(t) and is_float_type(t.get_canonical().element_type):
            width = vector_width(t)
            if width not in S.VECTOR_WIDTHS:
                self.fail(d, f"float{width}: vectors of 2 or 4 floats only")
            ir = self.bind(name, Binding("vector", None, d))
            names = self.component_names(ir, name, width)
            self.lookup(name).value = names
            out = [S.DeclareFloat(n, None) for n in names]
            if init is not None:
                out += self.vector_assign(names, init)
            return out
        if is_vector_type(t) and \
                int_type(t.get_canonical().element_type) in INT_VECTOR_TYPES:
            return self.int_vector_declaration(d, init)
        if type_kind(t) == "POINTER":
            if init is None:
                self.fail(d, f"pointer {name} without a value: point it at a buffer where it "
                             "is declared")
            return self.pointer_declaration(d, self.pointer_expr(init))
        self.fail(d, f"variable {name} of type {t.spelling}: use int/uint/size_t, float, "
                     "float2, float4 or arrays of them")

    def int_vector_declaration(self, d, init) -> list:
        """``int2 v = (int2)(a, b);`` (``int4``, ``uint2``, ...) never assigned again: each
        component an integer bound once (a ``Let``), read as ``v.x``, ``v.s1``, ...

        Raises:
            FrontendError: no value of that form, or the vector assigned again.
        """
        from clang.cindex import CursorKind as K
        width, name = vector_width(d.type), d.spelling
        s = C.strip(init) if init is not None else None
        parts = []
        if s is not None and s.kind in (K.CSTYLE_CAST_EXPR, K.COMPOUND_LITERAL_EXPR):
            inner = C.strip(C.children(s)[-1])
            parts = C.children(inner) if inner.kind in (K.INIT_LIST_EXPR, K.PAREN_EXPR) or \
                inner.kind.name == "PAREN_LIST_EXPR" else [inner]
        if s is not None and s.kind == K.CALL_EXPR:
            self.refuse_call(s)         # as_int4(...) refused by name
        if len(parts) != width or any(is_vector_type(C.strip(p).type) for p in parts) or \
                self.reassigned(d):
            bits, signed = int_type(d.type.get_canonical().element_type)
            ctype = f"{'' if signed else 'u'}{_INT_NAMES.get(bits, 'long')}{width}"
            self.fail(d, f"integer vector {name} of type {ctype}: give it its components "
                         f"where it is declared (({ctype})(a, b, ...)) and do not assign it "
                         "again")
        out, names = [], []
        for k, part in enumerate(parts):
            value = self.int_expr(part)
            ir = self.fresh(f"{name}_{VECTOR_COMPONENTS[k]}")
            self.ranges[ir] = self.range_of(value)
            out.append(S.Let(ir, value))
            names.append(S.Var(ir))
        self.bind(name, Binding("int_vector", tuple(names), d))
        return out

    def array_dims(self, d) -> tuple[tuple[S.Const, ...], int]:
        """The static dimensions of an array declaration, each named by its macro, and the
        floats per element (1 for ``float``; 2 or 4 for ``float2``/``float4``, through a
        ``typedef`` too, whose components are one more dimension of that extent)."""
        extents = []
        t = d.type.get_canonical()
        while t.kind.name == "CONSTANTARRAY":
            extents.append(t.get_array_size())
            t = t.element_type
        width = 1
        if is_vector_type(t) and is_float_type(t.element_type) and \
                vector_width(t) in S.VECTOR_WIDTHS:
            width = vector_width(t)
        elif not is_float_type(t):
            self.fail(d, f"array {d.spelling} of {d.type.spelling}: arrays hold float, float2 "
                         "or float4 (an integer table: compute its values from the index)")
        names = self.dim_names(d, len(extents))
        dims = tuple(S.Const(e, n) for e, n in zip(extents, names))
        return (dims + (S.Const(width),) if width > 1 else dims), width

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
        if type_kind(d.type) != "CONSTANTARRAY":
            self.fail(d, f"__local {d.spelling}: local memory is an array of static size "
                         "(__local float tile[TS][TS])")
        dims, width = self.array_dims(d)
        arr = S.LocalArray(self.bind(d.spelling, Binding("local", None, d)), dims)
        if width > 1:
            self.vector_widths[arr.name] = width
        self.lookup(d.spelling).value = arr
        self.local_arrays.append(arr)
        return []

    def private_array_declaration(self, d, kids) -> list:
        from clang.cindex import CursorKind as K
        dims, width = self.array_dims(d)
        init = None
        lists = [k for k in kids if k.kind == K.INIT_LIST_EXPR]
        if lists:
            lst = lists[0]
            if any(v not in (0, 0.0) for v in self._init_values(lst)):
                self.fail(lst, f"private array {d.spelling}: only = {{0}} (zero-fill) is "
                               "supported as an initialiser; assign the elements in a loop")
            init = 0.0
        ir = self.bind(d.spelling, Binding("private_array", None, d))
        arr = S.PrivateArray(ir, dims)
        if width > 1:
            self.vector_widths[ir] = width
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
