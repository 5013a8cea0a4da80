"""Memory accesses: array subscripts, pointers into buffers and ``__local`` arrays (``A + i``,
``&A[i]``, casts to ``float2``/``float4`` pointers), and the IR's index tuples of an access.

Buffers are row-major: a flat index ``row * N + col`` of a buffer shaped ``(M, N)`` is read
as the two indices ``(row, col)`` (every term whose factor is a multiple of ``N``, such as
``r * (K * N)``, goes to the row, dimension by dimension for higher ranks), any other flat
index as ``(flat / N, flat % N)``.

Errors: :class:`~tiletraffic.frontend.opencl.clang_ast.FrontendError` for an access of the
wrong rank, a store into an ``in`` buffer, a pointer expression outside the subset.
"""
from __future__ import annotations

from tiletraffic.simulator.ir import nodes as S

from tiletraffic.frontend.opencl import clang_ast as C
from tiletraffic.frontend.opencl.c_types import (is_float_type, is_vector_type, type_kind,
                                                 vector_width)
from tiletraffic.frontend.opencl.context import Pointer, TranslationContext


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
        outer_terms, rest = [], []
        for sign, t in _terms(flat):
            outer = self._row_part(t, dims[-1]) if sign == "+" else None
            if outer is None:
                rest.append((sign, t))
            else:
                outer_terms.append((sign, outer))
        if outer_terms:
            return self.delinearize(_rebuild(outer_terms), dims[:-1], None) + (_rebuild(rest),)
        last = dim_exprs[-1] if dim_exprs is not None else S.Const(dims[-1])
        outer = S.BinOp("/", flat, last)
        return self.delinearize(outer, dims[:-1], None) + (S.BinOp("%", flat, last),)

    def _row_part(self, term: S.IntExpr, row_length: int) -> S.IntExpr | None:
        """``x * m`` for a product ``term`` of ``x`` and a factor of static value
        ``m * row_length`` (``q * np`` -> ``q``, ``r * (nq * np)`` -> ``r * nq``), else None."""
        if not (isinstance(term, S.BinOp) and term.op == "*"):
            return None
        for outer, factor in ((term.left, term.right), (term.right, term.left)):
            value = self.static_value(factor)
            if value and value % row_length == 0:
                rows = value // row_length
                return outer if rows == 1 else S.BinOp("*", outer, S.Const(rows))
        return None

    def offset(self, ptr: Pointer, delta: S.IntExpr) -> Pointer:
        """``ptr`` moved by ``delta`` floats."""
        if isinstance(delta, S.Const) and delta.value == 0 and ptr.flat is None and \
                ptr.index is not None:
            return ptr
        if ptr.index is not None:
            index = ptr.index[:-1] + (_add(ptr.index[-1], delta),)
            return Pointer(ptr.target, None, index, ptr.width)
        return Pointer(ptr.target, _add(ptr.flat, delta), None, ptr.width)

    def pointer_expr(self, c) -> Pointer:
        """The address an expression of pointer type holds (a buffer or local array, an
        offset in floats, the floats per element of its type)."""
        from clang.cindex import CursorKind as K
        s = C.strip(c)
        if s.kind == K.DECL_REF_EXPR:
            b = self.lookup(s.spelling)
            if b is not None and b.kind == "buffer":
                return Pointer(b.value, S.Const(0), None, b.value.width)
            if b is not None and b.kind == "pointer":
                return b.value
            if b is not None and b.kind == "local":
                width = self.vector_widths.get(b.value.name, 1)
                if len(b.value.dims) == 1:
                    return Pointer(b.value, None, (S.Const(0),), 1)
                return Pointer(b.value, S.Const(0), None, width)
            self.fail(s, f"{s.spelling} is not a buffer or a local array")
        if s.kind == K.CSTYLE_CAST_EXPR:
            inner = self.pointer_expr(C.children(s)[-1])
            pointee = s.type.get_pointee()
            if is_vector_type(pointee) and is_float_type(pointee.get_canonical().element_type):
                width = vector_width(pointee)
            elif is_float_type(pointee):
                width = 1
            else:
                self.fail(s, f"pointer cast to {s.type.spelling}: cast to float2/float4 "
                             "pointers only")
            return Pointer(inner.target, inner.flat, inner.index, width)
        if s.kind == K.UNARY_OPERATOR and C.unary_operator(s) == "&":
            target = C.strip(C.children(s)[0])
            if target.kind == K.ARRAY_SUBSCRIPT_EXPR:
                base, idx = self.subscripts(target)
                b = self.lookup(base.spelling) if base.kind == K.DECL_REF_EXPR else None
                if b is not None and b.kind == "local" and len(idx) == len(b.value.dims):
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
