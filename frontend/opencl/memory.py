"""Memory accesses: array subscripts, pointers into buffers and ``__local`` arrays (``A + i``,
``&A[i]``, casts to ``float2``/``float4`` pointers), and the IR's index tuples of an access.

Buffers are row-major: a flat index ``row * N + col`` of a buffer shaped ``(M, N)`` is read
as the two indices ``(row, col)`` (every term whose factor is a multiple of ``N``, such as
``r * (K * N)``, goes to the row, dimension by dimension for higher ranks; an integer bound
once is read as its value, so ``int t = N * g + m; A[t + i * N]`` is ``(g + i, m)``), any
other flat index as ``(flat / N, flat % N)``.

What the engine's per-dimension bounds check then means: where the front end reads the
index as ``row * N + col`` from the kernel's own arithmetic, the kernel addresses a row and
a column, and a column past its row (an edge tile reading ``A[y * N + x]`` at ``x >= N``) is
out of bounds in its own dimension, reported with its indices as the array is declared.
Where the column part reads an integer the kernel assigns again, a pointer's offset
(``vals += row * n; ... vals[lane]``) or a C integer (``off = b * n; ... A[off + lane]``),
and its bounds do not keep it inside one row, the row it lands in is not read from the
source: the whole flat index (offset and index together) is
delinearized as ``(flat / N, flat % N)``, so every index is derived from the flat element and
checking them per dimension is checking the buffer's flat extent. A C kernel that walks a
flat buffer may cross the rows the host declares; only leaving the buffer is a fault there.

Errors: :class:`~tiletraffic.frontend.opencl.clang_ast.FrontendError` for an access of the
wrong rank, a store into an ``in`` buffer, a pointer expression outside the subset.
"""
from __future__ import annotations

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.visitor import walk

from tiletraffic.frontend.opencl import clang_ast as C
from tiletraffic.frontend.opencl.c_types import (CHAR_KINDS, is_float_type, is_vector_type,
                                                 type_kind, vector_width)
from tiletraffic.frontend.opencl.context import Pointer, TranslationContext, exits_loop


class PointerState(dict):
    """The pointers in scope at one point of the translation, by binding: (C name, binding,
    address); ``retargets``: :attr:`TranslationContext.pointer_retargets` then."""

    def __init__(self, values: dict, retargets: int):
        super().__init__(values)
        self.retargets = retargets


class Memory(TranslationContext):
    """Subscripts, pointers and the arrays and index tuples they address."""

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
        for a ``float2``/``float4`` element of a buffer or a local array ('vector_memory',
        pointer), of a private array ('private_vector', arr, index of its first float)."""
        from clang.cindex import CursorKind as K
        base, idx = self.subscripts(s)
        if base.kind == K.DECL_REF_EXPR:
            b = self.lookup(base.spelling)
            if b is None:
                self.fail(base, f"{base.spelling} is not declared in the kernel")
            width = self.vector_widths.get(getattr(b.value, "name", None), 1) \
                if b.kind in ("private_array", "local") else 1
            if width > 1:
                return self.vector_element(s, b, idx, width)
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

    def vector_element(self, s, b, idx, width):
        """:meth:`element` of an array of ``float{width}`` (its floats one more dimension):
        ('private_vector', arr, index) or ('vector_memory', pointer)."""
        arr = b.value
        rank = len(arr.dims) - 1
        index = tuple(self.exact(i, True) for i in idx)
        if b.kind == "private_array":
            self._rank(s, arr.name, rank, len(idx))
            return ("private_vector", arr, index + (S.Const(0),))
        if len(idx) not in (1, rank):
            self._rank(s, arr.name, rank, len(idx))
        flat = index[0]          # in elements, row-major, then in floats
        for i, extent in zip(index[1:], arr.dims[1:]):
            flat = S.BinOp("+", S.BinOp("*", flat, extent), i)
        return ("vector_memory", Pointer(arr, S.BinOp("*", flat, S.Const(width)), None, width))

    def _rank(self, s, name, rank, given):
        if rank != given:
            self.fail(s, f"{name} has {rank} dimension(s), indexed with {given}")

    def resolve(self, ptr: Pointer, at, store=False):
        """(array, index tuple) of a scalar access through ``ptr``."""
        if ptr.char:
            self.fail(at, f"a char of buffer {ptr.target.name} read or written: the buffers "
                          "hold float; cast the char pointer to a float pointer first "
                          "((global float *)(p + bytes))")
        if isinstance(ptr.target, S.PrivateArray):
            self.fail(at, f"private array {ptr.target.name} reached through a pointer: index "
                          "it (x[i]), or read or assign a float4 view of it "
                          "(*(float4 *)&x[4 * k])")
        if isinstance(ptr.target, S.LocalArray):
            if ptr.index is not None:
                return ptr.target, ptr.index
            divided: list[int] = []
            index = self.delinearize(ptr.flat, [d.value for d in ptr.target.dims],
                                     divided=divided)
            suspect = self.flat_local_shapes.get(ptr.target.name)
            if suspect is not None:
                if len(suspect[1]) in divided:   # the element's last index: flat % width
                    self.flat_local_reads.add(ptr.target.name)
                else:                            # the kernel indexes its rows
                    del self.flat_local_shapes[ptr.target.name]
            return ptr.target, index
        buf = ptr.target
        if store:
            buf.stored = True
            if buf.role == "in":
                self.fail(at, f"store into buffer {buf.name}, whose access is 'in': give it "
                              "access 'out' or 'inout'", buf.name)
        return buf.array, self.delinearize(ptr.flat, buf.dims, buf.array.dims)

    def delinearize(self, flat: S.IntExpr, dims, dim_exprs=None, divided=None) -> tuple:
        """Per-dimension indices of a row-major flat index over ``dims`` (see the module
        docstring). ``divided``, a list, gets the rank of each trailing part of ``dims``
        whose last index is the flat index's remainder by division (``flat % N``), not a
        term of it."""
        if len(dims) == 1:
            return (flat,)
        outer_terms, rest = [], []
        for sign, t in self._index_terms(flat, dims[-1]):
            outer = self._row_part(t, dims[-1]) if sign == "+" else None
            if outer is None:
                rest.append((sign, t))
            else:
                outer_terms.append((sign, outer))
        if outer_terms and self._column_read(_rebuild(rest), dims[-1]):
            return self.delinearize(_rebuild(outer_terms), dims[:-1], None, divided) + \
                (_rebuild(rest),)
        if divided is not None:
            divided.append(len(dims))
        last = dim_exprs[-1] if dim_exprs is not None else S.Const(dims[-1])
        outer = S.BinOp("/", flat, last)
        return self.delinearize(outer, dims[:-1], None, divided) + (S.BinOp("%", flat, last),)

    def _column_read(self, col: S.IntExpr, row_length: int) -> bool:
        """Whether ``col``, what is left of a flat index once its multiples of
        ``row_length`` went to the rows, stands as the index of the last dimension: it reads
        no integer the kernel assigns again (:attr:`mutable_ranges`: a C integer or a
        pointer's offset, whose value, and so its row, is known only at run time), or its
        bounds lie within ``[0, row_length)``."""
        if not _names_read(col) & set(self.mutable_ranges):
            return True
        lo, hi = self.range_of(col)
        return lo >= 0 and hi < row_length

    def _index_terms(self, flat: S.IntExpr, row_length: int) -> list:
        """The additive terms of ``flat`` with their signs, an integer bound once
        (``int t = ldc * g + m``) read as its value's terms where one of them is a
        multiple of ``row_length`` and the value reads no integer the kernel assigns."""
        out = []
        for sign, t in _terms(flat):
            value = self.let_values.get(t.name) if isinstance(t, S.Var) else None
            if sign == "+" and value is not None and \
                    not _names_read(value) & set(self.mutable_ranges):
                terms = self._index_terms(value, row_length)
                if any(s == "+" and self._row_part(u, row_length) is not None
                       for s, u in terms):
                    out += terms
                    continue
            out.append((sign, t))
        return out

    def _row_part(self, term: S.IntExpr, row_length: int) -> S.IntExpr | None:
        """``x * m`` for a product ``term`` of factors ``x`` and others of static product
        ``m * row_length`` (``q * np`` -> ``q``, ``r * (nq * np)`` -> ``r * nq``,
        ``ldc * g * 16`` at ldc = 64 -> ``g * 16``), else None. ``x`` keeps every factor
        without a static value and, where it can, one named static one (a scalar)."""
        factors = _factors(term)
        if len(factors) < 2:
            return None
        fixed = [f for f in factors if self.static_value(f) is None]
        static = [f for f in factors if self.static_value(f) is not None]
        for keep in [*([f] for f in static if not isinstance(f, S.Const)), []]:
            consumed = [f for f in static if all(f is not k for k in keep)]
            value = 1
            for f in consumed:
                value *= self.static_value(f)
            if not consumed or not value or value % row_length:
                continue
            outer, rows = fixed + keep, value // row_length
            if not outer:
                return S.Const(rows)
            e = outer[0]
            for f in outer[1:]:
                e = S.BinOp("*", e, f)
            return e if rows == 1 else S.BinOp("*", e, S.Const(rows))
        return None

    def _float_array(self, at, arr) -> None:
        """Refuse a pointer into the private array ``arr`` unless it holds floats."""
        if arr.name in self.vector_widths:
            self.fail(at, f"pointer into private array {arr.name} of float vectors: index it "
                          "(x[i]) or point into an array of float")

    def private_view(self, s, width: int) -> tuple | None:
        """The elements of a private float array that the float``width`` view ``s`` reads
        or assigns (``*(float4 *)&x[4]``, ``vload4(1, x)``): ``(array, index tuples)``, else
        ``None`` where ``s`` is no view of a private array.

        Raises:
            FrontendError: the view's offset is not a constant multiple of ``width`` or
                leaves the array's row."""
        from clang.cindex import CursorKind as K
        s = C.strip(s)
        if s.kind == K.UNARY_OPERATOR and C.unary_operator(s) == "*":
            ptr = self.pointer_expr(C.children(s)[0])
        elif s.kind == K.CALL_EXPR and s.spelling == f"vload{width}":
            args = C.children(s)[1:]
            ptr = self.pointer_expr(args[1])
            if isinstance(ptr.target, S.PrivateArray):
                ptr = self.offset(ptr, self.exact(args[0], True) * width)
        else:
            return None
        if not isinstance(ptr.target, S.PrivateArray):
            return None
        return self.view_elements(ptr, width, s)

    def view_elements(self, ptr: Pointer, width: int, at) -> tuple:
        """``(array, index tuples)`` of the float``width`` at ``ptr``, an address in a
        private array (see :meth:`private_view`; ``at``: the cursor for messages)."""
        arr, index = ptr.target, ptr.index
        last, row = self.static_value(index[-1]), arr.dims[-1].value
        if ptr.width not in (1, width) or last is None or last % width or \
                not 0 <= last <= row - width:
            self.fail(at, f"a float{width} view of private array {arr.name}: its offset must "
                          f"be a constant multiple of {width} within a row of {row}")
        return arr, tuple(index[:-1] + (S.Const(last + k),) for k in range(width))

    # ------------------------------------------------- pointers pointed at another array
    def retarget(self, binding, target) -> None:
        """Point the pointer variable of ``binding`` (its offset a ``DeclareInt``) at
        ``target`` from here on, in the order the code runs."""
        ptr = binding.value
        binding.value = Pointer(target, ptr.flat, None, ptr.width, ptr.char)
        self.pointer_retargets += 1

    def pointer_targets(self) -> PointerState:
        """The address of every pointer variable in scope now (for
        :meth:`restore_pointers`, :meth:`join_pointers`, :meth:`loop_pointers`)."""
        return PointerState({id(b): (name, b, b.value) for scope in self.scopes
                             for name, b in scope.names.items() if b.kind == "pointer"},
                            self.pointer_retargets)

    def restore_pointers(self, saved: PointerState) -> None:
        """Each pointer of ``saved`` pointing where it did then."""
        for _, b, value in saved.values():
            b.value = value

    def join_pointers(self, other: PointerState, at) -> None:
        """After the two branches of the ``if`` at cursor ``at`` (``other``: the pointers
        after the first, the current state after the second): each pointer's array.

        Raises:
            FrontendError: a pointer points at different arrays after the two branches."""
        for name, b, value in other.values():
            if b.value.target is not value.target:
                self.fail(at, f"pointer {name} points at {_array_name(value.target)} after "
                              f"one branch and at {_array_name(b.value.target)} after the "
                              "other: point it at one array in both (or use a pointer per "
                              "array)")

    def loop_pointers(self, before: PointerState, body) -> None:
        """Check the pointers after one translation of the loop body ``body`` against
        ``before``, their addresses at its start.

        Raises:
            FrontendError: a pointer points at another array at the end of an iteration
                than at its start (the next iteration would start there), or the body
                points one at another array and may leave the loop by ``break`` or
                ``continue``."""
        if self.pointer_retargets != before.retargets and exits_loop(body):
            self.fail(body, "a pointer pointed at another array in a loop that break or "
                            "continue may leave midway: point it before the loop (or use a "
                            "pointer per array)")
        for name, b, value in before.values():
            if b.value.target is not value.target:
                self.fail(body, f"pointer {name} points at {_array_name(value.target)} when "
                                f"an iteration of this loop starts and at "
                                f"{_array_name(b.value.target)} when it ends: point it at one "
                                "array in every iteration (or use a pointer per array)")

    def known_condition(self, c) -> bool | None:
        """The value of the condition ``c`` where a pointer argument's test decides it
        (``p``, ``p != NULL``, ``p == 0``, ``!p``, and ``&&``/``||``/``!`` of them where the
        tests decide the whole): ``False`` for ``p != NULL`` with ``p`` given as null;
        ``None`` for any other condition."""
        from clang.cindex import CursorKind as K
        s = C.strip(c)
        if type_kind(s.type) == "POINTER":
            return self._pointer_given(s)
        if s.kind == K.UNARY_OPERATOR and C.unary_operator(s) == "!":
            known = self.known_condition(C.children(s)[0])
            return None if known is None else not known
        if s.kind != K.BINARY_OPERATOR:
            return None
        op = C.binary_operator(s)
        left, right = C.children(s)
        if op in ("&&", "||"):
            a, b = self.known_condition(left), self.known_condition(right)
            decisive = op == "||"         # True decides ||, False decides &&
            if a is decisive or b is decisive:
                return decisive
            return None if a is None or b is None else a
        if op in ("==", "!="):
            for p, q in ((left, right), (right, left)):
                given = self._pointer_given(C.strip(p))
                if given is not None and null_constant(q):
                    return given if op == "!=" else not given
            same = self._same_array(left, right)
            if same is not None:
                return same if op == "==" else not same
        return None

    def _same_array(self, left, right) -> bool | None:
        """``False`` where the pointers ``left`` and ``right`` (cursors) point into two
        different buffers or arrays (distinct arguments: a host that passes one buffer
        twice is not modelled), else ``None`` (not known here)."""
        if type_kind(C.strip(left).type) != "POINTER" or \
                type_kind(C.strip(right).type) != "POINTER" or \
                not self._pointer_given(C.strip(left)) or \
                not self._pointer_given(C.strip(right)):
            return None
        a, b = self.pointer_expr(left), self.pointer_expr(right)
        return False if a.target is not b.target else None

    def _pointer_given(self, s) -> bool | None:
        """Whether the pointer argument, variable or helper parameter named by cursor ``s``
        is not null (``None``: ``s`` names none)."""
        from clang.cindex import CursorKind as K
        if s.kind != K.DECL_REF_EXPR:
            return None
        b = self.lookup(s.spelling)
        if b is None or b.kind not in ("null", "buffer", "pointer", "local", "private_array"):
            return None
        return b.kind != "null"

    def char_view(self, ptr: Pointer, at) -> Pointer:
        """The ``char`` pointer to the address ``ptr`` (its offset in bytes), of a buffer."""
        if ptr.char:
            return ptr
        if ptr.index is not None or not hasattr(ptr.target, "role"):
            self.fail(at, f"char pointer into {_array_name(ptr.target)}: char pointers "
                          "reach __global buffers only")
        return Pointer(ptr.target, S.BinOp("*", ptr.flat, S.Const(S.FLOAT_BYTES)), None, 1,
                       True)

    def bytes_to_floats(self, offset: S.IntExpr, at) -> S.IntExpr:
        """A char pointer's byte ``offset`` in floats, where the front end proves it a
        multiple of 4 bytes (a float's size) for every work-item of the launch: each term
        has a factor that is a multiple of 4 (a literal, a scalar argument's value, an
        integer bound once to such a sum); else :class:`FrontendError`."""
        floats = self._divide(offset, S.FLOAT_BYTES)
        if floats is not None:         # the offsets whose alignment this cast relies on
            self.aligned_reads.update(n.name for n in walk(offset) if isinstance(n, S.Var)
                                      and n.name in self.aligned_offsets)
        if floats is None:
            self.fail(at, f"char pointer cast to {C.strip(at).type.spelling}: the front end "
                          f"cannot show its byte offset is a multiple of {S.FLOAT_BYTES} (a "
                          "float's size) for every work-item: offset it by multiples of 4 "
                          "(literals, or arguments whose values are)")
        return floats

    def _divide(self, e: S.IntExpr, k: int) -> S.IntExpr | None:
        """``e / k`` where every term of ``e`` is a multiple of ``k`` (see
        :meth:`bytes_to_floats`), else ``None``."""
        if isinstance(e, S.Const):
            return S.Const(e.value // k) if e.value % k == 0 else None
        if isinstance(e, S.Param):
            value = self.params.get(e.name)
            return S.BinOp("/", e, S.Const(k)) if isinstance(value, int) and \
                value % k == 0 else None
        if isinstance(e, S.Var) and e.name in self.let_values:
            return self._divide(self.let_values[e.name], k)
        if isinstance(e, S.Var) and e.name in self.aligned_offsets and k == S.FLOAT_BYTES:
            return S.BinOp("/", e, S.Const(k))
        if isinstance(e, S.Wrap) and e.bits == 64:
            inner = self._divide(e.operand, k)
            return None if inner is None else S.Wrap(inner, e.bits, e.signed, e.source)
        if isinstance(e, S.BinOp) and e.op in ("+", "-"):
            a, b = self._divide(e.left, k), self._divide(e.right, k)
            return None if a is None or b is None else S.BinOp(e.op, a, b)
        if isinstance(e, S.BinOp) and e.op == "*":
            a = self._divide(e.left, k)
            if a is not None:
                return S.BinOp("*", a, e.right)
            b = self._divide(e.right, k)
            return None if b is None else S.BinOp("*", e.left, b)
        return None

    def offset(self, ptr: Pointer, delta: S.IntExpr) -> Pointer:
        """``ptr`` moved by ``delta`` floats (bytes, for a char pointer)."""
        if isinstance(delta, S.Const) and delta.value == 0 and ptr.flat is None and \
                ptr.index is not None:
            return ptr
        if ptr.index is not None:
            index = ptr.index[:-1] + (_add(ptr.index[-1], delta),)
            return Pointer(ptr.target, None, index, ptr.width)
        return Pointer(ptr.target, _add(ptr.flat, delta), None, ptr.width, ptr.char)

    def pointer_expr(self, c) -> Pointer:
        """The address an expression of pointer type holds (a buffer or local array, an
        offset in floats, the floats per element of its type)."""
        from clang.cindex import CursorKind as K
        s = C.strip(c)
        if s.kind == K.DECL_REF_EXPR:
            b = self.lookup(s.spelling)
            if b is not None and b.kind == "buffer":
                return Pointer(b.value, S.Const(0), None, b.value.width, b.value.char)
            if b is not None and b.kind == "pointer":
                return b.value
            if b is not None and b.kind == "private_array":
                self._float_array(s, b.value)
                return Pointer(b.value, None, (S.Const(0),) * len(b.value.dims), 1)
            if b is not None and b.kind == "null":
                self.fail(s, f"buffer {s.spelling} is given as null, but the kernel reaches "
                             "memory through it here: give its shape and access", s.spelling)
            if b is not None and b.kind == "local":
                width = self.vector_widths.get(b.value.name, 1)
                if len(b.value.dims) == 1:
                    return Pointer(b.value, None, (S.Const(0),), 1)
                return Pointer(b.value, S.Const(0), None, width)
            self.fail(s, f"{s.spelling} is not a buffer or a local array")
        if s.kind == K.CSTYLE_CAST_EXPR:
            inner = self.pointer_expr(C.children(s)[-1])
            pointee = s.type.get_pointee()
            if type_kind(pointee) in CHAR_KINDS:
                return self.char_view(inner, s)
            if is_vector_type(pointee) and is_float_type(pointee.get_canonical().element_type):
                width = vector_width(pointee)
            elif is_float_type(pointee):
                width = 1
            else:
                self.fail(s, f"pointer cast to {s.type.spelling}: cast to float, float2, "
                             "float4 or char pointers only")
            if inner.char:
                return Pointer(inner.target, self.bytes_to_floats(inner.flat, s), None, width)
            return Pointer(inner.target, inner.flat, inner.index, width)
        if s.kind == K.CONDITIONAL_OPERATOR:
            test, then, orelse = C.children(s)
            known = self.known_condition(test)
            if known is None:
                self.fail(s, "pointer chosen by ?: on a condition other than a test of "
                             "pointer arguments: choose it with if/else")
            picked = then if known else orelse
            if null_constant(picked):
                self.fail(s, "pointer ?: that gives a null pointer for this launch: give the "
                             "buffers it compares as the host does, or test the pointer where "
                             "it is used")
            return self.pointer_expr(picked)
        if s.kind == K.UNARY_OPERATOR and C.unary_operator(s) == "&":
            target = C.strip(C.children(s)[0])
            if target.kind == K.ARRAY_SUBSCRIPT_EXPR:
                base, idx = self.subscripts(target)
                b = self.lookup(base.spelling) if base.kind == K.DECL_REF_EXPR else None
                if b is not None and b.kind == "private_array":
                    self._float_array(s, b.value)
                if b is not None and b.kind in ("local", "private_array") and \
                        len(idx) == len(b.value.dims):
                    return Pointer(b.value, None, tuple(self.exact(i, True) for i in idx), 1)
                if b is not None and b.kind == "local" and b.value.name in self.vector_widths:
                    return self.vector_element(target, b, idx, self.vector_widths[
                        b.value.name])[1]
                if len(idx) == 1:
                    ptr = self.pointer_expr(base)
                    delta = self.exact(idx[0], True)
                    return self.offset(ptr, delta * ptr.width if ptr.width > 1 else delta)
            self.fail(s, "address of something other than a buffer or local array element")
        if s.kind == K.BINARY_OPERATOR and C.binary_operator(s) in ("+", "-"):
            left, right = C.children(s)
            if type_kind(C.strip(left).type) not in ("POINTER", "CONSTANTARRAY"):
                left, right = right, left
            ptr = self.pointer_expr(left)
            delta = self.exact(right, True)
            if C.binary_operator(s) == "-":
                delta = S.BinOp("-", S.Const(0), delta)
            return self.offset(ptr, delta * ptr.width if ptr.width > 1 else delta)
        self.fail(s, "pointer expression: point into a buffer (A + offset, &A[i]) or a local "
                     "array")


def _terms(e: S.IntExpr) -> list[tuple[str, S.IntExpr]]:
    """The additive terms of ``e`` with their signs, left to right."""
    if isinstance(e, S.BinOp) and e.op in ("+", "-"):
        right = _terms(e.right)
        if e.op == "-":
            right = [("-" if sign == "+" else "+", t) for sign, t in right]
        return _terms(e.left) + right
    return [("+", e)]


def _array_name(target) -> str:
    """The name of a pointer's array (a buffer or a local array)."""
    return target.name


def null_constant(c) -> bool:
    """Whether cursor ``c`` is a null pointer constant (``NULL``, ``0``, ``(void *)0``)."""
    from clang.cindex import CursorKind as K
    s = C.strip(c)
    while s.kind == K.CSTYLE_CAST_EXPR and type_kind(s.type) == "POINTER":
        s = C.strip(C.children(s)[-1])
    return s.kind == K.INTEGER_LITERAL and C.evaluate(s) == 0


def _factors(e: S.IntExpr) -> list:
    """The factors of a product ``e``, left to right (``[e]`` for any other expression)."""
    if isinstance(e, S.BinOp) and e.op == "*":
        return _factors(e.left) + _factors(e.right)
    return [e]


def _names_read(e: S.IntExpr) -> set:
    """The integer variables (``Var``) an IR expression reads."""
    return {n.name for n in walk(e) if isinstance(n, S.Var)}


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
