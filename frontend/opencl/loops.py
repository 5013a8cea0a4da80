"""Loops. A counted ``for`` loop (one integer declared with its start, a condition and an
update, a body that assigns neither the variable nor what the condition and the update read,
and leaves the loop by no ``break`` or ``continue``; or such a loop over an integer declared
before it, ``for (k = 0; k < K; k++)``, followed by the ``AssignInt`` of the value it leaves
in ``k``) that counts up (``i < stop`` or
``i <= last``; ``++i``, ``i++``, ``i += step``, ``i = i + step``) becomes an IR
:class:`~tiletraffic.simulator.ir.nodes.For`; one of another kind with constant bounds
(``s >>= 1``, ``i--``) is unrolled, one copy of its body per iteration, evaluated in C's
integer types. Every other loop becomes a
:class:`~tiletraffic.simulator.ir.nodes.While`: a ``for`` loop of any initialisation,
condition and update (several variables: ``a += s, b += t``), ``while`` and ``do ...
while`` (a ``do { ... } while (0)`` without ``break`` or ``continue`` is its body), with
``break`` and ``continue``. An integer a loop assigns has, inside and after it, the bounds
of its C type (:meth:`~tiletraffic.frontend.opencl.context.TranslationContext.widen`).

Errors: :class:`~tiletraffic.frontend.opencl.clang_ast.FrontendError` for a loop condition
on loaded values, a loop update that assigns floats, a loop of constant bounds that does not
count up with too many iterations or unrolled copies, or an unsigned comparison of a counted
loop's variable that may start below 0.
"""
from __future__ import annotations

import math

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.static import eval_static, trunc_div

from tiletraffic.frontend.opencl import clang_ast as C
from tiletraffic.frontend.opencl.c_types import c_value, int_type, is_int_type
from tiletraffic.frontend.opencl.clang_ast import FrontendError
from tiletraffic.frontend.opencl.context import (Binding, TranslationContext, assigned_in,
                                                 declarations_read, exits_loop)


class Loops(TranslationContext):
    """``for``, ``while`` and ``do`` loops into IR loops or unrolled copies of their body."""

    def for_statement(self, c) -> list:
        """A counted loop (:meth:`counted_variable`) as an IR ``For`` where it counts up,
        else unrolled where its bounds are constant; any other ``for`` loop as its
        initialisation followed by a ``While`` loop."""
        init, cond, inc, body = self.for_parts(c)
        var_cursor = self.counted_variable(init, cond, inc, body)
        if var_cursor is not None:
            init_value = C.children(var_cursor)[-1]
            start = self.canonical(self.int_expr(init_value), var_cursor.type, init_value)
            if self.counts_up(cond, inc, var_cursor):
                return [self.counted_loop(start, cond, inc, body, var_cursor)]
            trips = self.unroll_trips(c, start, cond, inc, var_cursor)
            if trips is not None:
                return [self.unrolled(c, trips, body, var_cursor)]
        found = self.counted_assignment(init, cond, inc, body)
        if found is not None:
            return self.counted_loop_of_variable(*found, cond, inc, body)
        return self.general_for(c, init, cond, inc, body)

    def counted_assignment(self, init, cond, inc, body):
        """For ``for (k = start; k < stop; k += step)`` over an integer ``k`` declared before
        the loop (assigned again), counted as :meth:`counted_variable` says, counting up,
        with a bound and a step that do not read ``k``: (``k``'s declaration cursor, the
        start's cursor, ``k``'s IR name); ``None`` for another loop."""
        from clang.cindex import CursorKind as K
        if init is None or cond is None or inc is None:
            return None
        s = C.strip(init)
        if s.kind != K.BINARY_OPERATOR or C.binary_operator(s) != "=":
            return None
        target, start = C.children(s)
        target = C.strip(target)
        if target.kind != K.DECL_REF_EXPR or target.referenced is None:
            return None
        binding = self.lookup(target.spelling)
        ir = None if binding is None or binding.kind != "int" else self.mutable_name(binding)
        decl = target.referenced
        if ir is None or exits_loop(body) or not self.counts_up(cond, inc, decl):
            return None
        if any(_subscripts(x) for x in (s, cond, inc)):
            return None     # a bound loaded from memory: the value after the loop reloads it
        assigned = assigned_in(body)
        own = declarations_read(target)
        if own & assigned or (declarations_read(cond) | declarations_read(inc)) & assigned:
            return None
        step = self.step_of(inc, decl)
        c = C.strip(cond)
        bound = [x for x in C.children(c) if not self._is_var(x, decl)]
        if len(bound) != 1 or declarations_read(bound[0]) & own or \
                not isinstance(step, S.IntExpr) and declarations_read(step) & own:
            return None
        return decl, start, ir

    def counted_loop_of_variable(self, decl, start_cursor, ir, cond, inc, body) -> list:
        """The IR ``For`` of :meth:`counted_assignment`'s loop (its own loop variable, which
        the body reads for ``k``) and the ``AssignInt`` of the value ``k`` has after it:
        ``start + max(0, ceil((stop - start) / step)) * step``."""
        start = self.canonical(self.int_expr(start_cursor), decl.type, start_cursor)
        loop = self.counted_loop(start, cond, inc, body, decl)
        steps = S.BinOp("/", S.BinOp("-", S.BinOp("+", S.BinOp("-", loop.stop, loop.start),
                                                  loop.step), S.Const(1)), loop.step)
        trips = S.BinOp("-", S.Const(0), S.Min(S.Const(0), S.BinOp("-", S.Const(0), steps)))
        last = S.BinOp("+", loop.start, S.BinOp("*", trips, loop.step))
        if all(isinstance(x, S.Const) for x in (loop.start, loop.stop, loop.step)):
            last = S.Const(int(eval_static(last, {})))
        last = self.canonical(last, decl.type, cond)
        self.ranges[ir] = self.range_of(last)
        return [loop, S.AssignInt(ir, last)]

    def for_parts(self, c) -> tuple:
        """(initialisation, condition, update, body) cursors of a ``for`` statement, each
        ``None`` where the header leaves it out: clang lists only the parts written, which
        are told apart by their place between the header's two ``;`` tokens."""
        kids = C.children(c)
        header, body = kids[:-1], kids[-1]
        if len(header) == 3:
            return (*header, body)
        depth, semicolons = 0, []
        for token in c.get_tokens():
            if token.spelling == "(":
                depth += 1
            elif token.spelling == ")":
                depth -= 1
                if depth == 0:
                    break
            elif token.spelling == ";" and depth == 1:
                semicolons.append(token.extent.start.offset)
        if len(semicolons) != 2:
            self.fail(c, "for loop header: write for (init; condition; update)")
        parts = [None, None, None]
        for k in header:
            offset = k.extent.start.offset
            parts[0 if offset < semicolons[0] else 1 if offset < semicolons[1] else 2] = k
        return (*parts, body)

    def counted_variable(self, init, cond, inc, body):
        """The loop variable's declaration cursor of a counted ``for`` loop: it declares one
        integer with a value, has a condition and an update, and its body assigns neither
        the variable nor anything the condition or the update reads, and has no ``break``
        or ``continue`` of the loop; ``None`` for another loop."""
        from clang.cindex import CursorKind as K
        if init is None or cond is None or inc is None or init.kind != K.DECL_STMT:
            return None
        decls = C.children(init)
        if len(decls) != 1 or decls[0].kind != K.VAR_DECL or \
                not is_int_type(decls[0].type) or not C.children(decls[0]):
            return None
        if exits_loop(body):
            return None
        assigned = assigned_in(body)
        if declarations_read(cond) & assigned or declarations_read(inc) & assigned:
            return None
        return decls[0]

    def counted_loop(self, start, cond, inc, body, var_cursor) -> S.For:
        """The IR ``For`` of a counted loop that counts up."""
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
            self.widen([body])
            self.loops.append("For")
            pointers = self.pointer_targets()
            try:
                stmts = tuple(self.block(body))
            finally:
                self.loops.pop()
            self.loop_pointers(pointers, body)
            self.widen([body])
        finally:
            self.pop()
        return S.For(ir, start, stop, step, stmts)

    def general_for(self, c, init, cond, inc, body) -> list:
        """``for (init; cond; update) body`` as ``init`` followed by a ``While`` loop whose
        update holds the ``update``'s assignments (several: ``a += s, b += t``)."""
        self.push()
        try:
            out = [] if init is None else self.statement(init)
            self.widen([cond, inc, body])
            test = S.Compare("==", S.Const(0), S.Const(0)) if cond is None else \
                self.condition(cond)
            pointers = self.pointer_targets()
            stmts = self.loop_body(body)
            self.widen([cond, inc, body])
            update = () if inc is None else tuple(self.expression_statement(inc))
            self.loop_pointers(pointers, inc if inc is not None else body)
            for u in update:
                if not isinstance(u, S.AssignInt):
                    self.fail(inc, "loop update: update integers and pointers only (i += s, "
                                   "p++); assign floats in the loop's body")
            self.widen([cond, inc, body])
        finally:
            self.pop()
        return out + [S.While(test, stmts, update, False, self.source_of(c))]

    def while_statement(self, c) -> list:
        """``while (cond) body`` as a ``While`` loop."""
        cond, body = C.children(c)
        self.widen([cond, body])
        test = self.condition(cond)
        stmts = self.loop_body(body)
        self.widen([cond, body])
        return [S.While(test, stmts, (), False, self.source_of(c))]

    def do_statement(self, c) -> list:
        """``do body while (cond);`` as a ``While`` loop that runs its first iteration
        untested; ``do { ... } while (0)`` without ``break`` or ``continue`` (a macro's
        block) as the statements of its body."""
        body, cond = C.children(c)
        if C.evaluate(cond) == 0 and not exits_loop(body):
            return self.block(body)
        self.widen([cond, body])
        stmts = self.loop_body(body)
        self.widen([cond, body])
        test = self.condition(cond)
        return [S.While(test, stmts, (), True, self.source_of(c))]

    def loop_body(self, body) -> tuple:
        """The statements of a ``While`` loop's body (its ``break`` and ``continue``
        translated)."""
        self.loops.append("While")
        pointers = self.pointer_targets()
        try:
            stmts = tuple(self.block(body))
        finally:
            self.loops.pop()
        self.loop_pointers(pointers, body)
        return stmts

    def counts_up(self, cond, inc, var_cursor) -> bool:
        """Whether the loop is an IR loop (``var < stop`` or ``var <= last``; ``++var``,
        ``var++``, ``var += step``, ``var = var + step``), else it is unrolled."""
        from clang.cindex import CursorKind as K
        c = C.strip(cond)
        up_cond = c.kind == K.BINARY_OPERATOR and (
            (C.binary_operator(c) in ("<", "<=") and self._is_var(C.children(c)[0], var_cursor))
            or (C.binary_operator(c) in (">", ">=") and
                self._is_var(C.children(c)[1], var_cursor)))
        return up_cond and self.step_of(inc, var_cursor) is not None

    UNROLL_MAX_TRIPS = 256
    """Most iterations of a loop with constant bounds that does not count up (``s >>= 1``,
    ``i--``) unrolled into the IR."""
    UNROLL_MAX_COPIES = 4096
    """Most copies of a body that unrolled loops nested in each other may make together."""
    _unroll_copies = 1

    def unroll_trips(self, c, start, cond, inc, var_cursor) -> list | None:
        """The loop variable's values, one per iteration, of a loop with constant start,
        condition and update; ``None`` where they are not constant (then the loop is a
        ``While``).

        Raises:
            FrontendError: more than :data:`UNROLL_MAX_TRIPS` iterations, or more than
                :data:`UNROLL_MAX_COPIES` copies of a body with the loops around it.
        """
        value = self.static_value(start)
        if value is None:
            return None
        try:       # the condition and the update are constant, or the loop is a While
            running = self.static_eval(cond, var_cursor, value)
            following = self.static_update(inc, var_cursor, value) if running else None
        except FrontendError:
            return None
        trips = []
        while running:
            trips.append(value)
            if len(trips) > self.UNROLL_MAX_TRIPS:
                self.fail(c, f"loop of more than {self.UNROLL_MAX_TRIPS} iterations that does "
                             "not count up: write it counting up (i < stop; i += step)")
            value = following
            running = self.static_eval(cond, var_cursor, value)
            if running:
                following = self.static_update(inc, var_cursor, value)
        outer = self._unroll_copies
        if outer * len(trips) > self.UNROLL_MAX_COPIES:
            self.fail(c, f"nested loops that do not count up unroll into {outer * len(trips)} "
                         f"copies of the innermost body, more than {self.UNROLL_MAX_COPIES}: "
                         "write the outer ones counting up (i < stop; i += step)")
        return trips

    def unrolled(self, c, trips, body, var_cursor) -> S.If:
        """A loop with constant start, condition and update of another kind, as one copy of
        its body per iteration (the loop variable the constant ``trips[i]`` in copy i)."""
        out = []
        outer = self._unroll_copies
        self._unroll_copies = outer * len(trips)
        self.loops.append("For")
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
            self.loops.pop()
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
        return c.kind == K.DECL_REF_EXPR and c.referenced is not None and \
            c.referenced == var_cursor

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

    def step_of(self, inc, var_cursor):
        """The step of an update that counts ``var_cursor``'s variable up (``++i``, ``i++``:
        the constant 1; ``i += s``, ``i = i + s``, ``i = s + i``: the cursor of ``s``), else
        ``None``."""
        from clang.cindex import CursorKind as K
        c = C.strip(inc)
        if c.kind == K.UNARY_OPERATOR and C.unary_operator(c) == "++" and \
                self._is_var(C.children(c)[0], var_cursor):
            return S.Const(1)
        if c.kind == K.COMPOUND_ASSIGNMENT_OPERATOR and C.binary_operator(c) == "+=" and \
                self._is_var(C.children(c)[0], var_cursor):
            return C.children(c)[1]
        if c.kind == K.BINARY_OPERATOR and C.binary_operator(c) == "=" and \
                self._is_var(C.children(c)[0], var_cursor):
            rhs = C.strip(C.children(c)[1])
            if rhs.kind == K.BINARY_OPERATOR and C.binary_operator(rhs) == "+":
                a, b = C.children(rhs)
                if self._is_var(a, var_cursor):
                    return b
                if self._is_var(b, var_cursor):
                    return a
        return None

    def loop_step(self, inc, var_cursor) -> S.IntExpr:
        step = self.step_of(inc, var_cursor)
        if step is None:
            name = var_cursor.spelling
            self.fail(inc, f"loop increment: write ++{name}, {name}++ or {name} += step "
                           "(loops count up by a positive step)")
        return step if isinstance(step, S.IntExpr) else self.int_expr(step)


def _subscripts(cursor) -> bool:
    """Whether the expression ``cursor`` reads an element of an array or buffer
    (``indptr[row + 1]``), whose value a second evaluation would load again."""
    from clang.cindex import CursorKind as K
    if cursor.kind == K.ARRAY_SUBSCRIPT_EXPR:
        return True
    return any(_subscripts(k) for k in C.children(cursor))
