"""Integer expressions and conditions in C's types: literals, macros and enum constants,
the kernel's scalars and integer variables, ``get_global_id`` and the other work-item
functions, ``+ - * / %``, the bitwise ``& | ^ ~`` and shifts ``<< >>`` (by constants and
masks of low bits as affine IR, otherwise the IR's bitwise operators), ``?:``, integer
``min``/``max``, casts, and integer helpers; conditions of comparisons, ``&&``, ``||``, ``!``; and the
integer declarations and assignments: a variable with a value that nothing assigns again is
a ``Let``, any other (declared without a value, assigned with ``=``, a compound assignment,
``++`` or ``--``) a ``DeclareInt`` with an ``AssignInt`` per assignment, its values in its C
type.

Each value is congruent to C's modulo ``2**bits`` of its type and exact (a
:class:`~tiletraffic.simulator.ir.nodes.Wrap` where its bounds for the launch leave the
type's range) where a comparison, ``/``, ``%``, ``>>``, ``min``/``max``, an index or a
widening conversion reads it.

Errors: :class:`~tiletraffic.frontend.opencl.clang_ast.FrontendError`, with
:data:`~tiletraffic.frontend.opencl.context.DATA_DEPENDENT` for an integer computed from
loaded values.
"""
from __future__ import annotations

import dataclasses
import math

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.static import int_op_bounds, trunc_div, wrap_int

from tiletraffic.frontend.opencl import clang_ast as C
from tiletraffic.frontend.opencl.subgroups import is_sub_group_call
from tiletraffic.frontend.opencl.c_types import (int_type, is_float_type, is_int_type,
                                                 is_vector_type, type_kind, type_range)
from tiletraffic.frontend.opencl.context import (Binding, DATA_DEPENDENT, TranslationContext,
                                                 constant_condition)


_ID_FUNCTIONS = {"get_global_id": "global", "get_local_id": "local", "get_group_id": "group"}
_INT_OPERATORS = "integers take + - * / %, & | ^ ~ << >>, ?:, min, max and clamp"
_INT_COMPARE = ("<", "<=", ">", ">=", "==", "!=")


class Integers(TranslationContext):
    """Integer expressions and conditions into the IR's integer expressions."""

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
        a, b = int_type(source), int_type(target)
        if a is None or b is None or b[0] <= a[0]:
            return value
        return self.canonical(value, source, at)

    def exact(self, c, address: bool = False) -> S.IntExpr:
        """The IR of the integer expression ``c`` with C's value in ``c``'s type (after the
        implicit conversions clang shows on it): what a comparison, ``/``, ``%``, ``>>``,
        ``min``/``max`` and an index read. ``address``: ``c`` offsets a pointer, whose
        64-bit arithmetic wraps as the congruent value does (no check of a 64-bit value)."""
        value = self.int_expr(c)
        info = int_type(c.type)
        if address and info is not None and info[0] == 64:
            return value
        return self.canonical(value, c.type, c)

    def canonical(self, value: S.IntExpr, ctype, at) -> S.IntExpr:
        """``value`` in the range of the integer type ``ctype``: itself where its bounds
        for this launch (:meth:`range_of`) are in the range, else a :class:`Wrap` naming
        the expression at cursor ``at``."""
        info = int_type(ctype)
        if info is None or info[0] == 1 or info == (64, True):
            return value
        lo, hi = self.range_of(value)
        tlo, thi = type_range(*info)
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
            tlo, thi = type_range(e.bits, e.signed)
            return (lo, hi) if tlo <= lo and hi <= thi else (tlo, thi)
        if isinstance(e, S.BinOp):
            return int_op_bounds(e.op, self.range_of(e.left), self.range_of(e.right))
        if isinstance(e, S.IntSelect):
            (a, b), (c, d) = self.range_of(e.then), self.range_of(e.orelse)
            return min(a, c), max(b, d)
        if isinstance(e, S.IntLoad):         # the launch's contents of the buffer
            values = e.array.values
            return (int(values.min()), int(values.max())) if values.size else (0, 0)
        return -math.inf, math.inf

    def _int_expr(self, s) -> S.IntExpr:
        """:meth:`int_expr` of ``s``, a cursor without implicit casts around it."""
        from clang.cindex import CursorKind as K
        kind = s.kind
        if kind == K.INTEGER_LITERAL:
            return S.Const(C.integer_value(s), C.macro_name(s))
        if kind == K.CSTYLE_CAST_EXPR:
            if not is_int_type(s.type):
                self.fail(s, f"cast to {s.type.spelling} in an integer expression")
            inner = C.children(s)[-1]
            if not is_int_type(C.strip(inner).type):
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
            if b.kind == "cond":
                self.fail(s, f"the bool {s.spelling} used as an integer: test it (if, ?:, &&) "
                             "or declare it int")
            if b.kind in ("float", "vector", "private_array"):
                self.fail(s, f"index or bound computed from the float {s.spelling}: "
                             f"{DATA_DEPENDENT}")
            self.fail(s, f"{s.spelling} used as an integer")
        if kind == K.BINARY_OPERATOR:
            left, right = C.children(s)
            return self.int_binary(s, C.binary_operator(s), left, right)
        if kind == K.UNARY_OPERATOR:
            op = C.unary_operator(s)
            inner = C.children(s)[0]
            if op in ("++", "--"):
                self.fail(s, f"{op} inside an expression: write it as a statement of its own "
                             f"({self.describe_target(inner)}{op};)")
            if op == "-":
                return S.BinOp("-", S.Const(0), self.int_expr(inner))
            if op == "+":
                return self.int_expr(inner)
            if op == "~":           # two's complement: ~x == -1 - x in every width
                return S.BinOp("-", S.Const(-1), self.int_expr(inner))
            self.fail(s, f"integer operator {op}: {_INT_OPERATORS}")
        if kind == K.CALL_EXPR:
            return self.int_call(s)
        if kind in (K.MEMBER_REF_EXPR, K.UNEXPOSED_EXPR) and len(C.children(s)) == 1 and \
                is_vector_type(C.children(s)[0].type) and is_int_type(s.type):
            return self.int_vector_component(s)
        if kind == K.ARRAY_SUBSCRIPT_EXPR and is_int_type(s.type):
            e = self.element(s)
            if e[0] == "memory" and isinstance(e[1], S.GlobalArray) and e[1].is_int:
                return S.IntLoad(e[1], e[2], self.access_source(s, e[1], e[2]))
        if kind == K.ARRAY_SUBSCRIPT_EXPR or is_float_type(s.type):
            self.fail(s, f"an index, bound or condition computed from loaded values: "
                         f"{DATA_DEPENDENT}")
        if kind == K.CONDITIONAL_OPERATOR:
            return self.int_conditional(s)
        if kind.name == "CXX_UNARY_EXPR":
            v = C.evaluate(s)
            if isinstance(v, int):
                return S.Const(v)
        self.fail(s, f"integer expression {kind.name.lower()} is not supported")

    def int_vector_component(self, s) -> S.IntExpr:
        """``v.x`` (``v.s1``, ...) of an ``int2``/``int4`` argument: its parameter."""
        from tiletraffic.frontend.opencl.c_types import component_number
        base = C.strip(C.children(s)[0]) if C.children(s) else None
        b = self.lookup(base.spelling) if base is not None and \
            base.kind.name == "DECL_REF_EXPR" else None
        k = component_number(list(s.get_tokens())[-1].spelling)
        if b is None or b.kind != "int_vector" or k is None:
            self.fail(s, "integer vector component: write v.x, v.y, ... (v.s0, ...) of an "
                         "int2/int4 argument or variable")
        if k >= len(b.value):
            self.fail(s, f"{base.spelling} has {len(b.value)} components")
        return b.value[k]

    def int_binary(self, s, op: str, left, right) -> S.IntExpr:
        """The IR of ``left op right`` (cursors; ``s`` the operation's cursor, for messages),
        for a binary operator or the operation of a compound assignment (``k += 2``)."""
        if op in ("+", "-", "*"):
            return S.BinOp(op, self.int_expr(left), self.int_expr(right))
        if op in ("/", "%"):
            return S.BinOp(op, self.exact(left), self.exact(right),
                           f"{self.source_of(s)}: {self.describe_target(s)}")
        if op in ("<<", ">>"):
            return self.shift(s, op, left, right)
        if op in ("&", "|", "^"):
            lowered = self.mask(s, op, left, right)
            if lowered is not None:
                return lowered
            # the low bits of a result depend on the operands' low bits only: congruent
            return S.BinOp(op, self.int_expr(left), self.int_expr(right))
        self.fail(s, f"integer operator {op}: {_INT_OPERATORS}")

    def shift(self, s, op: str, left, right) -> S.IntExpr:
        """``left << right`` or ``left >> right``: by a constant, a product or a floor
        division by a power of two (affine, as the analyses read it); by a variable, the
        IR's shift, its count taken modulo the left operand's width (as OpenCL C does; C
        and GLSL leave a count outside ``0 .. width - 1`` undefined) where its bounds for
        the launch leave that range."""
        bits = (int_type(s.type) or (32, True))[0]
        count = C.evaluate(right)
        if isinstance(count, int):
            if not 0 <= count < bits:
                self.fail(right, f"shift {op} by {count}: the count of a shift of a "
                                 f"{bits}-bit value is 0 to {bits - 1}")
            factor = S.Const(2 ** count)
            if op == "<<":
                return S.BinOp("*", self.int_expr(left), factor)
            value = self.exact(left)   # x >> s rounds down: (x - (x mod 2^s)) / 2^s
            return S.BinOp("/", S.BinOp("-", value, _floor_mod(value, factor)), factor)
        amount = self.exact(right)
        lo, hi = self.range_of(amount)
        if not (0 <= lo and hi < bits):
            amount = S.BinOp("&", amount, S.Const(bits - 1))
        value = self.int_expr(left) if op == "<<" else self.exact(left)
        return S.BinOp(op, value, amount)

    def mask(self, s, op: str, left, right) -> S.IntExpr | None:
        """``x & m`` with ``m`` a constant that keeps the low bits (``2**n - 1``: ``x mod
        2**n``) or clears them (``~(2**n - 1)``: ``x - x mod 2**n``), as affine IR; ``None``
        for any other operation."""
        if op != "&":
            return None
        bits = (int_type(s.type) or (32, True))[0]
        for value_c, mask_c in ((left, right), (right, left)):
            mask = C.evaluate(mask_c)
            if not isinstance(mask, int):
                continue
            mask %= 2 ** bits
            if (mask + 1) & mask == 0 and mask:               # 2**n - 1
                return _floor_mod(self.int_expr(value_c), S.Const(mask + 1))
            low = 2 ** bits - mask                             # ~(2**n - 1) == -2**n
            if 0 < low < 2 ** bits and low & (low - 1) == 0:
                value = self.int_expr(value_c)
                return S.BinOp("-", value, _floor_mod(value, S.Const(low)))
        return None

    def int_conditional(self, s) -> S.IntExpr:
        """``c ? a : b`` of integers: the operand a pointer test decides, else the IR's
        :class:`~tiletraffic.simulator.ir.nodes.IntSelect` (each work-item its operand)."""
        cond, then, orelse = C.children(s)
        known = self.known_condition(cond)
        if known is not None:
            return self.int_expr(then if known else orelse)
        return S.IntSelect(self.condition(cond), self.int_expr(then), self.int_expr(orelse))

    # ------------------------------------------------------------ integers assigned again
    def int_declaration(self, d, init) -> list:
        """The IR of the integer declaration ``d`` (its value's cursor ``init``, or
        ``None``): a ``Let`` where it has a value and no assignment changes it, else a
        ``DeclareInt`` (assigned by :meth:`int_assignment`)."""
        bound_once = init is not None and not self.reassigned(d)
        if bound_once and type_kind(d.type) == "BOOL":
            cond = self.condition(init)
            changing = sorted(self.source_names.get(n, n) for n in
                              _names_in(cond) & set(self.mutable_ranges))
            if changing:
                self.fail(d, f"bool {d.spelling} reads {', '.join(changing)}, which the kernel "
                             "assigns: test the condition where it is used")
            self.bind(d.spelling, Binding("cond", cond, d))
            return []
        if init is not None and not bound_once and type_kind(d.type) != "BOOL" and \
                C.strip(init).kind.name == "CONDITIONAL_OPERATOR":
            return self.conditional_int_declaration(d, C.strip(init))
        value = None if init is None else self.int_expr(init)
        if value is not None and not bound_once:
            value = self.canonical(value, d.type, init)
        ir = self.bind_int(d.spelling, d)
        if bound_once:
            self.ranges[ir] = self.range_of(value)
            if not S.reads_int_buffer(value):   # a load happens once, where it is bound
                self.let_values[ir] = value
            return [S.Let(ir, value)]
        self.declare_mutable(ir, d, _bounds_of(d.type))
        self.ranges[ir] = self.mutable_ranges[ir] if value is None else self.range_of(value)
        return [S.DeclareInt(ir, value)]

    def conditional_int_declaration(self, d, init) -> list:
        """The IR of ``int x = cond ? a : b;`` (``init`` the ``?:``) where the kernel assigns
        ``x`` again: ``x`` declared with ``b``'s value, then assigned ``a`` where ``cond``
        holds, per work-item (one bound once is a ``Let`` of an ``IntSelect``)."""
        cond_c, then_c, else_c = C.children(init)
        cond = self.condition(cond_c)
        then_v = self.canonical(self.int_expr(then_c), d.type, then_c)
        else_v = self.canonical(self.int_expr(else_c), d.type, else_c)
        ir = self.bind_int(d.spelling, d)
        self.declare_mutable(ir, d, _bounds_of(d.type))
        (lo_a, hi_a), (lo_b, hi_b) = self.range_of(then_v), self.range_of(else_v)
        self.ranges[ir] = (min(lo_a, lo_b), max(hi_a, hi_b))
        return [S.DeclareInt(ir, else_v), S.If(cond, (S.AssignInt(ir, then_v),))]

    def bind_int(self, c_name: str, cursor) -> str:
        """Bind the C integer ``c_name`` (declared at ``cursor``) to an IR integer name, as
        :meth:`bind` does (with its source name), the binding's value that name's ``Var``;
        returns the IR name."""
        ir = self.bind(c_name, Binding("int", None, cursor))
        self.lookup(c_name).value = S.Var(ir)
        return ir

    def mutable_parameter(self, p) -> list:
        """For an integer argument (``PARM_DECL`` cursor ``p``) the kernel assigns: a
        ``DeclareInt`` of its value, bound to its name from the kernel's first statement."""
        binding = self.lookup(p.spelling)
        ir = self.bind_int(p.spelling, p)
        self.declare_mutable(ir, p, _bounds_of(p.type))
        self.ranges[ir] = self.range_of(binding.value)
        return [S.DeclareInt(ir, binding.value)]

    def int_assignment(self, binding, s, lhs, rhs, op) -> list:
        """``AssignInt`` statements of the assignment ``s`` (``lhs = rhs``, ``lhs op= rhs``,
        or ``++``/``--`` with ``op`` ``"++"``/``"--"`` and ``rhs`` None) to the integer of
        ``binding``; its value in the variable's C type."""
        ir = self.mutable_name(binding)
        if ir is None:
            what = "a loop variable" if binding.kind == "loopvar" else "a helper's parameter"
            self.fail(s, f"{self.describe_target(lhs)} assigned, but it is {what}, whose "
                         "value the IR binds once: copy it into a variable of its own and "
                         "assign that")
        if op in ("++", "--"):
            value = S.BinOp("+" if op == "++" else "-", S.Var(ir), S.Const(1))
        elif op is None:
            value = self.int_expr(rhs)
        else:
            value = self.int_binary(s, op, lhs, rhs)
        value = self.canonical(value, lhs.type, s)
        self.ranges[ir] = self.range_of(value)
        return [S.AssignInt(ir, value)]

    def int_call(self, s) -> S.IntExpr:
        name = s.spelling
        args = C.children(s)[1:]
        self.refuse_call(s)
        if is_sub_group_call(name):
            return self.sub_group_integer(s)
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
            return S.Min(a, b) if name == "min" else _int_max(a, b)
        if name == "clamp" and len(args) == 3:
            # OpenCL C's integer clamp(x, lo, hi) is min(max(x, lo), hi)
            x, lo, hi = (self.exact(a) for a in args)
            return S.Min(_int_max(x, lo), hi)
        helper = self.helper(s)
        if helper is not None and is_int_type(helper.result_type):
            stmts, value = self.inline(s, helper, want_value=True)
            if stmts:
                self.fail(s, f"integer helper {name}: its body must be only return expr;")
            return value[1]
        if name == "get_global_offset":
            self.fail(s, "get_global_offset: launches have no offset here; drop it")
        self.fail(s, f"call of {name} in an integer expression: use get_*_id, get_local_size, "
                     "get_num_groups, min, max, clamp or a helper defined in the source")

    def condition(self, c) -> S.Cond:
        from clang.cindex import CursorKind as K
        known = self.known_condition(c)       # a pointer argument tested against NULL
        if known is not None:
            return constant_condition(known)
        s = C.strip(c)
        if s.kind == K.BINARY_OPERATOR:
            op = C.binary_operator(s)
            left, right = C.children(s)
            if op in ("&&", "||"):     # C may skip the right operand: nothing hoisted
                prelude, self.condition_prelude = self.condition_prelude, None
                try:
                    return S.BoolOp(op, self.condition(left), self.condition(right))
                finally:
                    self.condition_prelude = prelude
            if op in _INT_COMPARE:
                if any(C.strip(side).type.get_canonical().kind.name == "POINTER"
                       for side in (left, right)):
                    a, b = (" ".join(t.spelling for t in C.strip(side).get_tokens())
                            for side in (left, right))
                    self.fail(s, f"comparison of pointers {a} and {b} ({op}): of pointers, "
                                 "only tests of pointer arguments against NULL or each other "
                                 "are read; compare an integer index or offset instead")
                if not all(is_int_type(C.strip(side).type) for side in (left, right)):
                    return S.FloatCompare(op, self.condition_float(left, s),
                                          self.condition_float(right, s))
                return S.Compare(op, self.exact(left), self.exact(right))
        if s.kind == K.UNARY_OPERATOR and C.unary_operator(s) == "!":
            return S.Not(self.condition(C.children(s)[0]))
        if s.kind == K.DECL_REF_EXPR:
            b = self.lookup(s.spelling)
            if b is not None and b.kind == "cond":
                return b.value
        if s.kind == K.CALL_EXPR and s.spelling in S.FLOAT_TESTS and \
                len(C.children(s)) == 2 and is_float_type(C.strip(C.children(s)[1]).type):
            return S.FloatTest(s.spelling, self.condition_float(C.children(s)[1], s))
        if is_float_type(s.type):
            return S.FloatCompare("!=", self.condition_float(s, s), S.FConst(0.0))
        return S.Compare("!=", self.exact(s), S.Const(0))

    def condition_float(self, c, condition) -> S.FloatExpr:
        """An operand of a float comparison or test in a condition: a float of the launch
        (:meth:`launch_float`), or any float expression the statements before the
        condition need not compute (a load, a private variable, arithmetic, a float
        built-in): a branch on it depends on the data, executed per work-item.

        Raises:
            FrontendError: the operand needs statements of its own (an inlined helper, a
                conditional operator with loads): compute it into a variable first.
        """
        launch = self.launch_float(c, condition, refuse=False)
        if launch is not None:
            return launch
        out: list = []
        value = self.float_expr(c, out)
        if out and self.condition_prelude is not None:   # run before the if, as C does
            self.condition_prelude += out
            return value
        if out:
            self.fail(condition, "a float in a condition computed by statements of its own "
                                 "(an inlined helper, a conditional operator with loads): "
                                 "compute it into a float variable before the condition")
        return value

    def launch_float(self, c, condition, refuse: bool = True) -> S.FloatExpr | None:
        """An operand of a float comparison in a condition: a float constant, a ``float``
        argument or a negation of one (the launch's values, one truth for every
        work-item).

        Raises:
            FrontendError: a float of another kind (loaded, computed): a branch on it
                depends on the data.
        """
        from clang.cindex import CursorKind as K
        s = C.strip(c)
        value = self.float_literal(s)
        if value is not None:
            return S.FConst(value)
        if s.kind == K.UNARY_OPERATOR and C.unary_operator(s) in ("-", "+"):
            inner = self.launch_float(C.children(s)[0], condition, refuse)
            if inner is None:
                return None
            return S.FNeg(inner) if C.unary_operator(s) == "-" else inner
        if s.kind == K.CSTYLE_CAST_EXPR and is_float_type(C.strip(C.children(s)[-1]).type):
            return self.launch_float(C.children(s)[-1], condition, refuse)
        if s.kind == K.DECL_REF_EXPR:
            b = self.lookup(s.spelling)
            if b is not None and b.kind == "float_param":
                return b.value
        if not refuse:
            return None
        self.fail(condition, f"a branch on float values other than constants and float "
                             f"arguments ({self.describe_target(s)}): {DATA_DEPENDENT}")

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
                q = trunc_div(a, b)
                return q if e.op == "/" else a - q * b
            if e.op in ("&", "|", "^"):
                return {"&": a & b, "|": a | b, "^": a ^ b}[e.op]
            if e.op in ("<<", ">>") and 0 <= b < S.SHIFT_BITS:
                return a << b if e.op == "<<" else a >> b
        if isinstance(e, S.Min):
            a, b = self.static_value(e.left), self.static_value(e.right)
            return None if a is None or b is None else min(a, b)
        if isinstance(e, S.Wrap):
            v = self.static_value(e.operand)
            if v is None or e.bits == 64:
                return None if v is None or (not e.signed and v < 0) else v
            return wrap_int(v, e.bits, e.signed)
        return None


def _floor_mod(value: S.IntExpr, divisor: S.Const) -> S.IntExpr:
    """``value`` mod ``divisor`` (> 0) in 0..divisor-1 for negative values too, as ``&`` of
    a two's-complement int with ``divisor - 1`` gives it; the IR's ``%`` truncates as C's."""
    return S.BinOp("%", S.BinOp("+", S.BinOp("%", value, divisor), divisor), divisor)


def _bounds_of(ctype) -> tuple:
    """The bounds of the values a variable of C type ``ctype`` holds (``math.inf`` where the
    IR does not keep it in them: ``bool``)."""
    info = int_type(ctype)
    if info is None or info[0] == 1:
        return -math.inf, math.inf
    return type_range(*info)


def _names_in(node) -> set:
    """The names of the integer variables (``Var``) an IR condition or expression reads."""
    if isinstance(node, S.Var):
        return {node.name}
    names: set = set()
    if dataclasses.is_dataclass(node):
        for f in dataclasses.fields(node):
            value = getattr(node, f.name)
            for item in value if isinstance(value, tuple) else (value,):
                if dataclasses.is_dataclass(item):
                    names |= _names_in(item)
    return names


def _int_max(a: S.IntExpr, b: S.IntExpr) -> S.IntExpr:
    """max(a, b) of two integer expressions, as the IR writes it: -min(-a, -b)."""
    return S.BinOp("-", S.Const(0), S.Min(S.BinOp("-", S.Const(0), a),
                                          S.BinOp("-", S.Const(0), b)))
