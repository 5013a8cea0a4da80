"""Float expressions: constants (literals, ``INFINITY``, ``NAN``, folded integer constant
expressions), ``float`` arguments, private floats, vector components and array elements,
loads, integers converted to float (``(float)i``, ``convert_float(i)``, an ``int`` operand
of a float operation: :class:`~tiletraffic.simulator.ir.nodes.IntToFloat` of the integer's
C value), ``+ - * /`` and negation, ``fma``/``mad``, ``dot`` of float vectors, the IR's
float built-ins (float ``max``/``min`` as ``fmax``/``fmin``), ``select`` and ``?:`` on
integer conditions, and float helpers. A ``?:`` whose branches load or need statements of their own is an ``if``/``else``
assigning a fresh private float, so that only the branch taken loads, as in C.

Errors: :class:`~tiletraffic.frontend.opencl.clang_ast.FrontendError` for a call outside
the subset, an integer computed from loaded values, a branch on float values.
"""
from __future__ import annotations

import warnings

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.visitor import walk

from tiletraffic.frontend.opencl import clang_ast as C
from tiletraffic.frontend.opencl.subgroups import is_sub_group_call
from tiletraffic.frontend.opencl.c_types import (is_float_type, is_int_type, is_vector_type,
                                                  vector_width)
from tiletraffic.frontend.opencl.context import DATA_DEPENDENT, TranslationContext


_FLOAT_CONSTANT_CALLS = ("__builtin_inff", "__builtin_huge_valf", "__builtin_nanf")
"""What ``INFINITY``, ``HUGE_VALF`` and ``NAN`` expand to (``opencl_builtins.h``)."""


class DoubleArithmeticWarning(UserWarning):
    """An operation the compiler types ``double`` (in CUDA, ``0.1 * x[i]`` with an unsuffixed
    literal; in OpenCL C only where ``cl_khr_fp64`` is enabled) is simulated in float32: its
    counts are the same, its values rounded as float. The message names the first such
    operation of the kernel and the ``f`` suffix that makes it float."""


class Floats(TranslationContext):
    """Float expressions into the IR's float expressions."""

    def float_literal(self, c) -> float | None:
        """The value of a float constant: a literal (``2.0f``, ``FLT_MAX``, ``M_PI_F``),
        ``INFINITY``, ``HUGE_VALF``, ``NAN``, an integer constant expression (``INT_MAX``,
        ``INT_MIN``, ``TS * 2``: folded, as the compiler folds it), ``-`` or ``+`` before one,
        a cast of one; else ``None``."""
        from clang.cindex import CursorKind as K
        s = C.strip(c)
        if s.kind == K.INTEGER_LITERAL:
            return float(C.integer_value(s))
        if is_int_type(s.type):                   # (int)2.5f too: 2, as C converts it
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

    def float_expr(self, c, out: list) -> S.FloatExpr:
        from clang.cindex import CursorKind as K
        s = C.strip(c)
        kind = s.kind
        if kind == K.FLOATING_LITERAL or is_int_type(s.type) or (
                kind == K.CALL_EXPR and s.spelling in _FLOAT_CONSTANT_CALLS):
            v = self.float_literal(s)
            if v is not None:
                return S.FConst(v)
        if self.is_vector_component(s):
            in_memory = self.memory_component(s)
            if in_memory is not None:
                return self.memory_component_load(s, *in_memory, out)
            value = self.component_of_value(s, out)
            if value is not None:
                return value
            ref = self.component_target(s)
            return S.Private(ref[1]) if ref[0] == "float" else S.PrivateElem(ref[1], ref[2])
        if is_int_type(s.type):                   # x * i: C converts i to float
            return S.IntToFloat(self.exact(s))
        if kind == K.CSTYLE_CAST_EXPR:
            inner = C.children(s)[-1]
            if is_float_type(C.strip(inner).type):
                return self.float_expr(inner, out)
            v = self.float_literal(s)
            if v is not None:
                return S.FConst(v)
            if is_int_type(C.strip(inner).type):  # (float)i
                return S.IntToFloat(self.exact(inner))
            self.fail(s, f"a {C.strip(inner).type.spelling} converted to float")
        if kind == K.DECL_REF_EXPR:
            b = self.lookup(s.spelling)
            if b is not None and b.kind == "float":
                return S.Private(b.value)
            if b is not None and b.kind == "float_param":
                return b.value
            self.fail(s, f"{s.spelling} is not a float the kernel knows")
        if kind == K.ARRAY_SUBSCRIPT_EXPR:
            e = self.element(s)
            if e[0] == "private_elem":
                return S.PrivateElem(e[1], e[2])
            if e[0] == "memory":
                return S.Load(e[1], e[2], self.access_source(s, e[1], e[2]))
            self.fail(s, "a float4 element used as one float: take a component (A[i].x) of a "
                         "float4 variable")
        if kind == K.BINARY_OPERATOR:
            op = C.binary_operator(s)
            if op in S.FLOAT_OPS and not getattr(self, "double_warned", False) and \
                    s.type.get_canonical().spelling == "double":
                self.double_warned = True
                warnings.warn(f"{self.source_of(s)}: '{op}' computes in double (an unsuffixed "
                              "literal such as 0.1 is a double), which the simulator computes "
                              "in float32: values may differ in the last bits (0.1f computes "
                              "in float)", DoubleArithmeticWarning, stacklevel=2)
            if op in S.FLOAT_OPS:
                a, b = C.children(s)
                return S.FBinOp(op, self.float_expr(a, out), self.float_expr(b, out))
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
                ptr = self.pointer_expr(C.children(s)[0])
                if ptr.width != 1:
                    self.fail(s, f"a float{ptr.width} read through a pointer used as one "
                                 "float: take a component of a float vector variable")
                array, index = self.resolve(ptr, s)
                return S.Load(array, index, self.access_source(s, array, index))
            self.fail(s, f"float operator {op}")
        if kind == K.CALL_EXPR:
            return self.float_call(s, out)
        if kind == K.CONDITIONAL_OPERATOR:
            cond, then, orelse = C.children(s)
            known = self.known_condition(cond)   # a pointer argument tested against NULL
            if known is not None:
                return self.float_expr(then if known else orelse, out)
            test = self.condition(cond)          # refuses a condition on float values
            then_out: list = []
            else_out: list = []
            operands = self.float_expr(then, then_out), self.float_expr(orelse, else_out)
            if not then_out and not else_out and not any(_loads(e) for e in operands):
                return S.Select(test, *operands)
            # C evaluates only the branch taken: an if/else into a private float
            name = self.fresh("choice")
            out += [S.DeclareFloat(name, None),
                    S.If(test, (*then_out, S.Assign(name, operands[0])),
                         (*else_out, S.Assign(name, operands[1])))]
            return S.Private(name)
        self.fail(s, f"float expression {kind.name.lower()} is not supported")

    def float_call(self, s, out) -> S.FloatExpr:
        name = s.spelling
        args = C.children(s)[1:]
        self.refuse_call(s)
        if is_sub_group_call(name):
            return self.sub_group_float(s, out)
        if name == "convert_float" and len(args) == 1:     # rounds to nearest, as (float)
            arg = C.strip(args[0])
            if is_int_type(arg.type):
                return S.IntToFloat(self.exact(args[0]))
            return self.float_expr(args[0], out)
        if name == "vload_half" and len(args) == 2:      # a half element, exact as float
            return self.half_load(s, args)
        if name in ("fma", "mad") and len(args) == 3:
            a, b, c = (self.float_expr(x, out) for x in args)
            return S.FBinOp("+", S.FBinOp("*", a, b), c)
        if name == "dot" and len(args) == 2:                # sum of component products
            return self.dot(args, out)
        functions = S.FLOAT_FUNCTIONS                     # the IR's float built-ins
        fn = {"max": "fmax", "min": "fmin"}.get(name, name)
        if fn in functions and len(args) == functions[fn]:
            return S.FCall(fn, tuple(self.float_expr(a, out) for a in args))
        if name == "select" and len(args) == 3:
            if not is_int_type(C.strip(args[2]).type):
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
        known = ", ".join(["fma", "mad", "dot", *S.FLOAT_FUNCTIONS, "select",
                           "convert_float", "vload_half"])
        self.fail(s, f"call of {name}: floats take + - * /, {known} and helpers defined in "
                     "the source or its headers")

    def half_pointer(self, s, offset_arg, pointer_arg, width: int = 1):
        """The pointer of ``vload_half[N](offset, p)``/``vstore_half[N](v, offset, p)``:
        ``p`` moved by ``offset * N`` elements; ``p`` must point into a ``half`` buffer."""
        ptr = self.pointer_expr(pointer_arg)
        target = ptr.target
        if getattr(target, "dtype", None) != "half":
            self.fail(s, f"{s.spelling} of a buffer that is not half: declare it "
                         "__global half * (or read floats without conversion)")
        return self.offset(ptr, self.exact(offset_arg, True) * width)

    def half_load(self, s, args) -> S.FloatExpr:
        """``vload_half(offset, p)``: one element of a ``half`` buffer, read as float."""
        array, index = self.resolve(self.half_pointer(s, args[0], args[1]), s)
        return S.Load(array, index, self.access_source(s, array, index))

    def dot(self, args, out) -> S.FloatExpr:
        """``dot(a, b)`` of two float vectors (or floats): the products of their
        components summed in order, each operand evaluated once."""
        types = [C.strip(a).type for a in args]
        if not any(is_vector_type(t) for t in types):
            a, b = (self.float_expr(x, out) for x in args)
            return S.FBinOp("*", a, b)
        width = next(vector_width(t) for t in types if is_vector_type(t))
        (va, oa), (vb, ob) = (self._vector_or_scalar(a, width) for a in args)
        out += oa + ob
        total = S.FBinOp("*", va[0], vb[0])
        for x, y in zip(va[1:], vb[1:]):
            total = S.FBinOp("+", total, S.FBinOp("*", x, y))
        return total


def _loads(e: S.FloatExpr) -> bool:
    """``e`` reads a buffer or local array (a :class:`simulator.ir.nodes.Load` in it)."""
    return any(isinstance(n, S.Load) for n in walk(e))
