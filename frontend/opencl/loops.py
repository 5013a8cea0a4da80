"""``for`` loops: a loop counting up (``i < stop`` or ``i <= last``; ``++i``, ``i++``,
``i += step``, ``i = i + step``) becomes an IR :class:`~tiletraffic.simulator.ir.nodes.For`;
a loop of another kind with constant bounds (``s >>= 1``, ``i--``) is unrolled, one copy of
its body per iteration, evaluated in C's integer types.

Errors: :class:`~tiletraffic.frontend.opencl.clang_ast.FrontendError` for a loop without an
integer loop variable, a loop that does not count up and has no constant bounds, too many
unrolled copies, or an unsigned comparison of a loop variable that may start below 0.
"""
from __future__ import annotations

import math

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.static import trunc_div

from tiletraffic.frontend.opencl import clang_ast as C
from tiletraffic.frontend.opencl.c_types import c_value, int_type, is_int_type
from tiletraffic.frontend.opencl.context import Binding, TranslationContext


class Loops(TranslationContext):
    """``for`` loops into IR loops or unrolled copies of their body."""

    def for_statement(self, c) -> S.For:
        from clang.cindex import CursorKind as K
        kids = C.children(c)
        if len(kids) != 4 or kids[0].kind != K.DECL_STMT:
            self.fail(c, "for loop without its three parts: write for (int i = start; "
                         "i < stop; i += step)")
        init, cond, inc, body = kids
        decls = C.children(init)
        if len(decls) != 1 or not is_int_type(decls[0].type) or not C.children(decls[0]):
            self.fail(init, "loop initialisation: declare one integer loop variable with its "
                            "start (for (int i = start; ...))")
        var_cursor = decls[0]
        init_value = C.children(var_cursor)[-1]
        start = self.canonical(self.int_expr(init_value), var_cursor.type, init_value)
        if not self.counts_up(cond, inc, var_cursor):
            return self.unrolled(c, start, cond, inc, body, var_cursor)
        self.push()
        try:
            ir = self.bind(var_cursor.spelling, Binding("int", None, var_cursor))
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
                    self.scopes[-1].names[var_cursor.spelling] = Binding(
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
            v = c_value(v, outer.type)
        return v

    def _static_eval(self, s, var_cursor, value):
        from clang.cindex import CursorKind as K
        if self._is_var(s, var_cursor):
            return value
        if s.kind == K.CSTYLE_CAST_EXPR:
            return c_value(self.static_eval(C.children(s)[-1], var_cursor, value), s.type)
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
                return result if isinstance(result, bool) else c_value(result, s.type)
        e = self.int_expr(s)
        v = self.static_value(e)
        if v is None:
            self.fail(s, "a loop that does not count up needs constant bounds: write for "
                         "(int i = start; i < stop; i += step)")
        return v

    def static_update(self, inc, var_cursor, value) -> int:
        """The loop variable's next value, in its C type."""
        return c_value(self._static_update(inc, var_cursor, value), var_cursor.type)

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
        info = int_type(var_side.type)
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
