"""Float vectors (``float2``, ``float4``): each private vector is one private float per
component (``v.x``, ...); values from ``vload2/4``, ``*(float4 *)p``, a ``float4`` buffer
element, a vector variable, ``(float4)(a, b, c, d)`` and ``+ - *`` of those (a scalar
operand is splatted), stored with one :class:`~tiletraffic.simulator.ir.nodes.VectorStore`.
"""
from __future__ import annotations

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.visitor import walk

from tiletraffic.frontend.opencl import clang_ast as C
from tiletraffic.frontend.opencl.c_types import (VECTOR_COMPONENTS, component_name,
                                                 component_number,
                                                 is_vector_type, swizzle_components,
                                                 vector_width)
from tiletraffic.frontend.opencl.context import Pointer, TranslationContext


class Vectors(TranslationContext):
    """Float vector values, loads and stores."""

    def is_vector_component(self, s) -> bool:
        from clang.cindex import CursorKind as K
        if s.kind not in (K.UNEXPOSED_EXPR, K.MEMBER_REF_EXPR):
            return False
        kids = C.children(s)
        return len(kids) == 1 and is_vector_type(kids[0].type) and not is_vector_type(s.type)

    def component_target(self, s):
        """What the component ``v.x`` (or ``acc[i].x`` of a private array of vectors) is:
        ('float', private float name) or ('private_elem', array, index)."""
        from clang.cindex import CursorKind as K
        base = C.strip(C.children(s)[0])
        if base.kind == K.ARRAY_SUBSCRIPT_EXPR:
            e = self.element(base)
            comp = list(s.get_tokens())[-1].spelling
            if e[0] == "private_vector" and component_number(comp) is not None:
                width = self.vector_widths[e[1].name]
                k = component_number(comp)
                if k >= width:
                    self.fail(s, f"{e[1].name} holds float{width}: it has {width} components")
                return ("private_elem", e[1], e[2][:-1] + (S.Const(k),))
        names, k = self.vector_component(s)
        return ("float", names[k])

    def component_names(self, ir: str, c_name: str | None, width: int) -> tuple[str, ...]:
        """The private floats of a vector's ``width`` components (``v_x``, ``v_y``, ...:
        C identifiers, as the generated kernel declares them), each named ``v.x`` in
        messages where the vector is the source's ``c_name``."""
        names = []
        for w in range(width):
            comp = component_name(w, width)
            name = self.fresh(f"{ir}_{comp}")
            if c_name is not None:
                self.source_names[name] = f"{c_name}.{comp}"
            self.vector_components[name] = ir
            names.append(name)
        return tuple(names)

    def memory_component(self, s):
        """(pointer to the element, component number) when ``s`` is a component of a
        float2/float4 element in memory (``A[i].y``), else None."""
        from clang.cindex import CursorKind as K
        base = C.strip(C.children(s)[0])
        comp = list(s.get_tokens())[-1].spelling
        if component_number(comp) is None or base.kind != K.ARRAY_SUBSCRIPT_EXPR:
            return None
        e = self.element(base)
        if e[0] != "vector_memory":
            return None
        k = component_number(comp)
        if k >= e[1].width:
            self.fail(s, f"a float{e[1].width} element has {e[1].width} components")
        return e[1], k

    def memory_component_load(self, s, ptr, k, out: list) -> S.FloatExpr:
        """The float ``A[i].y``: the whole element loaded (as the device compilers load it)
        into fresh private floats in ``out``, and its component ``k``."""
        names = self.component_names(self.fresh("vec"), None, ptr.width)
        array, index = self.resolve(ptr, s)
        out += [S.DeclareFloat(n, None) for n in names]
        out.append(S.VectorLoad(names, array, index, source=self.access_source(s, array, index)))
        return S.Private(names[k])

    def memory_component_target(self, s, ptr, k) -> tuple:
        """(array, index) of the float the store ``A[i].y = v`` writes."""
        component = self.offset(Pointer(ptr.target, ptr.flat, ptr.index, 1), S.Const(k))
        return self.resolve(component, s, store=True)

    def component_of_value(self, s, out: list):
        """``f(x).s0``, ``(a + b).y``: a component of a vector value other than a variable
        or an element (a helper's result, an operation), or None for those."""
        from clang.cindex import CursorKind as K
        base = C.strip(C.children(s)[0])
        k = component_number(list(s.get_tokens())[-1].spelling)
        if k is None or base.kind in (K.DECL_REF_EXPR, K.ARRAY_SUBSCRIPT_EXPR,
                                      K.MEMBER_REF_EXPR, K.UNEXPOSED_EXPR):
            return None
        width = vector_width(base.type)
        if k >= width:
            return None
        values, stmts = self.vector_values(base, width)
        out += stmts
        return values[k]

    def vector_component(self, s):
        """(component names of the vector variable, component number) of ``v.x``."""
        from clang.cindex import CursorKind as K
        base = C.strip(C.children(s)[0])
        comp = list(s.get_tokens())[-1].spelling
        if component_number(comp) is None or base.kind != K.DECL_REF_EXPR:
            self.fail(s, "vector component: write v.x, v.y, v.z or v.w (or v.s0 to v.s3) of a "
                         "float4 variable, of an element of a private float4 array or of a "
                         "float4 buffer element")
        b = self.lookup(base.spelling)
        if b is None or b.kind != "vector":
            self.fail(s, f"{base.spelling} is not a float vector variable")
        k = component_number(comp)
        if k >= len(b.value):
            self.fail(s, f"{base.spelling} has {len(b.value)} components")
        return b.value, k

    def vector_values(self, c, width):
        """A float vector value: (tuple of FloatExpr, statements to run first)."""
        from clang.cindex import CursorKind as K
        s = C.strip(c)
        out: list = []
        view = self.private_view(s, width)
        if view is not None:          # *(float4 *)&x[4 * k] of a private array x
            return tuple(S.PrivateElem(view[0], i) for i in view[1]), out
        load = self.vector_load_of(s, width)
        if load is not None:
            names = self.component_names(self.fresh("vec"), None, width)
            out += [S.DeclareFloat(n, None) for n in names]
            out.append(load(names))
            return tuple(S.Private(n) for n in names), out
        if s.kind == K.DECL_REF_EXPR:
            b = self.lookup(s.spelling)
            if b is not None and b.kind == "vector" and len(b.value) == width:
                return tuple(S.Private(n) for n in b.value), out
        swizzled = self.swizzle(s, width)
        if swizzled is not None:
            return swizzled
        if s.kind == K.ARRAY_SUBSCRIPT_EXPR:
            e = self.element(s)
            if e[0] == "private_vector" and self.vector_widths[e[1].name] == width:
                return tuple(S.PrivateElem(e[1], e[2][:-1] + (S.Const(w),))
                             for w in range(width)), out
        if s.kind == K.COMPOUND_LITERAL_EXPR and is_vector_type(s.type):
            parts = C.children(C.children(s)[-1])
            if len(parts) == width and not any(is_vector_type(C.strip(p).type)
                                               for p in parts):
                return tuple(self.float_expr(p, out) for p in parts), out
            if len(parts) == 1:
                return self.splat(self.float_expr(parts[0], out), width, out), out
            joined = self.joined_vector(parts, width, out)
            if joined is not None:
                return joined, out
        if s.kind == K.CSTYLE_CAST_EXPR and is_vector_type(s.type):
            inner = C.strip(C.children(s)[-1])
            parts = C.children(inner) if inner.kind in (K.INIT_LIST_EXPR, K.PAREN_EXPR) or \
                inner.kind.name == "PAREN_LIST_EXPR" else [inner]
            if len(parts) == width:
                return tuple(self.float_expr(p, out) for p in parts), out
            if len(parts) == 1:
                return self.splat(self.float_expr(parts[0], out), width, out), out
            joined = self.joined_vector(parts, width, out)
            if joined is not None:
                return joined, out
        if s.kind == K.CALL_EXPR and (helper := self.helper(s)) is not None and \
                is_vector_type(helper.result_type):
            stmts, value = self.inline(s, helper, want_value=True)
            if len(value[1]) == width:
                return value[1], stmts
        if s.kind == K.CALL_EXPR and s.spelling in ("mad", "fma") and \
                len(C.children(s)) == 4:      # component by component, as the scalar one
            parts = [self._vector_or_scalar(x, width) for x in C.children(s)[1:]]
            (va, oa), (vb, ob), (vc, oc) = parts
            return tuple(S.FBinOp("+", S.FBinOp("*", x, y), z)
                         for x, y, z in zip(va, vb, vc)), oa + ob + oc
        if s.kind == K.UNARY_OPERATOR and C.unary_operator(s) in ("-", "+"):
            values, out = self.vector_values(C.children(s)[0], width)
            if C.unary_operator(s) == "+":
                return values, out
            return tuple(S.FNeg(v) for v in values), out
        if s.kind == K.BINARY_OPERATOR and C.binary_operator(s) in S.FLOAT_OPS:
            a, b = C.children(s)
            va, oa = self._vector_or_scalar(a, width)
            vb, ob = self._vector_or_scalar(b, width)
            op = C.binary_operator(s)
            return tuple(S.FBinOp(op, x, y) for x, y in zip(va, vb)), oa + ob
        self.fail(s, f"float{width} value: write vload{width}, a float{width} variable or "
                     f"array element, (float{width})(a, b, ...) or + - * /, mad or fma of "
                     "those")

    def swizzle(self, s, width):
        """``v.lo``, ``v.hi``, ``v.even``, ``v.xy``, ``v.s23``, ... of a float vector as a
        float``width`` value (components, statements to run first), or None for another
        expression."""
        from clang.cindex import CursorKind as K
        kids = C.children(s)
        if s.kind not in (K.UNEXPOSED_EXPR, K.MEMBER_REF_EXPR) or len(kids) != 1 or \
                not is_vector_type(kids[0].type):
            return None
        base_width = vector_width(kids[0].type)
        comps = swizzle_components(list(s.get_tokens())[-1].spelling, base_width)
        if comps is None or len(comps) != width:
            return None
        values, out = self.vector_values(kids[0], base_width)
        return tuple(values[k] for k in comps), out

    def swizzle_target(self, s) -> tuple[str, ...] | None:
        """The private floats ``v.yx = ...``, ``v.hi = ...``, ``v.s20 = ...`` assigns, in
        the selector's order, for a swizzle of a float vector variable; None for another
        expression."""
        from clang.cindex import CursorKind as K
        kids = C.children(s)
        if s.kind not in (K.UNEXPOSED_EXPR, K.MEMBER_REF_EXPR) or len(kids) != 1 or \
                not is_vector_type(kids[0].type) or not is_vector_type(s.type):
            return None
        base = C.strip(kids[0])
        b = self.lookup(base.spelling) if base.kind == K.DECL_REF_EXPR else None
        if b is None or b.kind != "vector":
            return None
        comps = swizzle_components(list(s.get_tokens())[-1].spelling, len(b.value))
        if comps is None or len(set(comps)) != len(comps):
            return None
        return tuple(b.value[k] for k in comps)

    def joined_vector(self, parts, width, out: list):
        """The components of ``(float4)(a, b)`` whose parts are vectors and floats
        (``float2`` + ``float2``, ``float2`` + two floats, ...), in order; None where they
        do not add up to ``width``."""
        values: list = []
        for p in parts:
            if is_vector_type(C.strip(p).type):
                comps, stmts = self.vector_values(p, vector_width(C.strip(p).type))
                out += stmts
                values += comps
            else:
                values.append(self.float_expr(p, out))
        return tuple(values) if len(values) == width else None

    def _vector_or_scalar(self, c, width):
        if is_vector_type(C.strip(c).type):
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

    def vector_load_of(self, s, width):
        """A function names -> VectorLoad when ``s`` loads a vector from memory, else None."""
        from clang.cindex import CursorKind as K
        ptr, aligned = None, True
        if s.kind == K.CALL_EXPR and s.spelling in ("vload2", "vload4"):
            aligned = False  # vloadn needs the element's alignment only
            if int(s.spelling[-1]) != width:
                self.fail(s, f"{s.spelling} into a float{width}")
            args = C.children(s)[1:]
            base = self.pointer_expr(args[1])
            ptr = self.offset(base, self.exact(args[0], True) * width)
        elif s.kind == K.CALL_EXPR and s.spelling in ("vload_half2", "vload_half4"):
            aligned = False  # vload_halfn needs the element's alignment only
            if int(s.spelling[-1]) != width:
                self.fail(s, f"{s.spelling} into a float{width}")
            args = C.children(s)[1:]
            ptr = self.half_pointer(s, args[0], args[1], width)
        elif s.kind == K.UNARY_OPERATOR and C.unary_operator(s) == "*":
            ptr = self.pointer_expr(C.children(s)[0])
        elif s.kind == K.ARRAY_SUBSCRIPT_EXPR:
            e = self.element(s)
            if e[0] == "vector_memory":
                ptr = e[1]
        if ptr is None or isinstance(ptr.target, S.PrivateArray):
            return None
        if ptr.width not in (1, width):
            self.fail(s, f"float{ptr.width} access read as float{width}")
        array, index = self.resolve(ptr, s)
        source = self.access_source(s, array, index)
        return lambda names: S.VectorLoad(tuple(names), array, index, aligned=aligned,
                                          source=source)

    def vector_assign(self, names, rhs, op=None) -> list:
        """``v = rhs`` (``op``: ``v op= rhs``, component by component) for the vector
        variable of component ``names``."""
        s = C.strip(rhs)
        load = self.vector_load_of(s, len(names)) if op is None else None
        if load is not None:
            return [load(names)]
        values, out = self._vector_or_scalar(s, len(names))
        values = self.read_before_assigned(values, out, lambda i, n: isinstance(
            n, S.Private) and n.name in names[:i])
        return out + [_assign(n, (), v, op, S.Private(n)) for n, v in zip(names, values)]

    def read_before_assigned(self, values, out: list, assigned_before) -> tuple:
        """The ``values`` of a vector assigned component by component (component 0 first),
        each computed first into a fresh private float assigned in ``out`` where the value
        of some component ``i`` reads a node ``n`` that ``assigned_before(i, n)`` says
        an earlier component's assignment changes (``a = a.yx``: C reads the whole
        right-hand side before it assigns)."""
        if not any(assigned_before(i, n) for i, v in enumerate(values) for n in walk(v)):
            return values
        staged = []
        for v in values:
            name = self.fresh("component")
            out += [S.DeclareFloat(name, None), S.Assign(name, v)]
            staged.append(S.Private(name))
        return tuple(staged)

    def private_vector_assign(self, arr, index, rhs, op=None) -> list:
        """``arr[index] = rhs`` (``op``: ``op=``) for an element of a private array of
        vectors (``index``: of its first float)."""
        width = self.vector_widths[arr.name]
        values, out = self._vector_or_scalar(rhs, width)
        values = self.read_before_assigned(values, out, lambda i, n: i > 0 and isinstance(
            n, S.PrivateElem) and n.array.name == arr.name)
        for w, v in enumerate(values):
            at = index[:-1] + (S.Const(w),)
            out.append(_assign(arr.name, at, v, op, S.PrivateElem(arr, at)))
        return out

    def vector_store(self, ptr, rhs, at) -> list:
        width = ptr.width
        values, out = self.vector_values(rhs, width)
        if isinstance(ptr.target, S.PrivateArray):   # *(float4 *)&x[4 * k] = ...
            arr, index = self.view_elements(ptr, width, at)
            return out + [S.Assign(arr.name, v, i) for v, i in zip(values, index)]
        return out + [self.vector_memory_store(ptr, width, values, at)]

    def vector_memory_store(self, ptr, width, values, at, aligned: bool = True):
        """One VectorStore of ``values`` through ``ptr``; ``aligned=False`` for ``vstoren``,
        which needs the element's alignment only."""
        if ptr.width not in (1, width):
            self.fail(at, f"float{width} stored through a float{ptr.width} pointer")
        array, index = self.resolve(ptr, at, store=True)
        return S.VectorStore(array, index, tuple(values), aligned=aligned,
                             source=self.access_source(at, array, index))


def _assign(name: str, index: tuple, value: S.FloatExpr, op, old: S.FloatExpr) -> S.Stmt:
    """``name[index] = value`` (``op``: ``op=``, ``old`` its current value; ``+=`` an
    ``Accumulate``)."""
    if op == "+":
        return S.Accumulate(name, value, index)
    if op is not None:
        value = S.FBinOp(op, old, value)
    return S.Assign(name, value, index)
