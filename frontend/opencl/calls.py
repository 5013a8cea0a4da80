"""Calls of functions the subset has no built-in meaning for: the refused ones
(:func:`frontend.opencl.clang_ast.refused_function`), and helper functions defined in the
source or a header it includes, inlined at each call with their parameters bound to the
call's arguments (recursion refused). A helper returning a float, a float vector or nothing
from several places (``if (c) return there; ...; return x;``) is inlined with its result in
private floats and an integer flag set by each ``return``, the statements after a
``return`` guarded by the flag; a ``return`` inside a loop, or followed by statements in
its own block, is refused.
"""
from __future__ import annotations

from pathlib import Path

from tiletraffic.simulator.ir import nodes as S

from tiletraffic.frontend.opencl import clang_ast as C
from tiletraffic.frontend.opencl.c_types import (component_name, is_float_type, is_int_type,
                                                 is_vector_type, type_kind, vector_width)
from tiletraffic.frontend.opencl.context import Binding, Scope, TranslationContext
from tiletraffic.frontend.opencl.memory import null_constant


class Calls(TranslationContext):
    """Refused calls and helper functions inlined."""

    def refuse_call(self, c) -> None:
        """Refuse a call :func:`frontend.opencl.clang_ast.refused_function` names (``as_float``,
        ``printf``, ... declared by the source itself)."""
        why = C.refused_function(c.spelling)
        if why is not None:
            self.fail(c, why)

    def reference_argument(self, param, arg, bindings: dict) -> bool:
        """Bind a helper's parameter of another type (C++'s references, in a language that
        has them) in ``bindings``; whether it did. C has none: ``False``."""
        return False

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
        if C.is_kernel(fn):
            self.fail(call, f"calling the kernel {fn.spelling} from a kernel: move its body "
                            "into a helper function")
        params = [k for k in C.children(fn) if k.kind == K.PARM_DECL]
        args = C.children(call)[1:]
        out: list = []
        bindings = {}
        for p, a in zip(params, args):
            t = p.type
            if is_int_type(t):
                bindings[p.spelling] = Binding("int", self.int_expr(a), p)
            elif is_float_type(t):
                value = self.float_expr(a, out)
                bindings[p.spelling] = ("float", value, p)
            elif is_vector_type(t) and is_float_type(t.get_canonical().element_type):
                values, stmts = self.vector_values(a, vector_width(t))
                out += stmts
                bindings[p.spelling] = ("vector", values, p)
            elif type_kind(t) in ("POINTER", "CONSTANTARRAY", "INCOMPLETEARRAY"):
                ref = C.strip(a)
                b = self.lookup(ref.spelling) if ref.kind == K.DECL_REF_EXPR else None
                if b is not None and b.kind in ("local", "buffer", "private_array", "null"):
                    bindings[p.spelling] = b     # the array itself, with its shape
                elif null_constant(a):
                    bindings[p.spelling] = Binding("null", None, p)
                else:
                    bindings[p.spelling] = Binding("pointer", self.pointer_expr(a), p)
            elif not self.reference_argument(p, a, bindings):
                self.fail(a, f"helper argument {p.spelling} of type {t.spelling}: helpers "
                             "take integers, floats and pointers")
        saved_scopes, saved_return = self.scopes, self.helper_return
        self.scopes = [self.scopes[0], Scope()]
        self.inline_depth += 1
        self.helper_return = []
        self.inlined_from.append(f"{fn.spelling}, called at {C.where(call, self.path)}")
        try:
            for pname, b in bindings.items():
                if isinstance(b, tuple) and b[0] == "vector":
                    ir = self.bind(pname, Binding("vector", None, b[2]))
                    names = tuple(f"{ir}.{component_name(w, len(b[1]))}"
                                  for w in range(len(b[1])))
                    self.lookup(pname).value = names
                    out += [S.DeclareFloat(n, None) for n in names]
                    out += [S.Assign(n, v) for n, v in zip(names, b[1])]
                elif isinstance(b, tuple):
                    ir = self.bind(pname, Binding("float", None, b[2]))
                    out += [S.DeclareFloat(ir, None), S.Assign(ir, b[1])]
                else:
                    self.scopes[-1].names[pname] = b
            body = [k for k in C.children(fn) if k.kind == K.COMPOUND_STMT][0]
            kids = C.children(body)
            if _early_returns(body):
                out += self.inline_early_returns(fn, kids)
                return out, self.early_value(fn) if want_value else None
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
                if is_int_type(fn.result_type):
                    value = ("int", self.int_expr(returned))
                elif is_vector_type(fn.result_type):
                    values, stmts = self.vector_values(returned, vector_width(fn.result_type))
                    out += stmts
                    value = ("vector", values)
                else:
                    value = ("float", self.float_expr(returned, out))
            return out, value
        finally:
            self.scopes, self.helper_return = saved_scopes, saved_return
            self.inline_depth -= 1
            self.inlined_from.pop()

    def inline_early_returns(self, fn, kids) -> list:
        """The statements of the body ``kids`` of helper ``fn`` whose ``return`` statements are not
        all at its end (:func:`_early_returns`): its result in fresh private floats, each
        ``return`` assigning them and setting a fresh integer flag, every statement after
        one that may return run only where the flag is unset."""
        from clang.cindex import CursorKind as K
        problem = _early_return_problem(kids)
        result = fn.result_type
        void = type_kind(result) == "VOID"
        if problem is not None or not (void or is_float_type(result) or (
                is_vector_type(result) and
                is_float_type(result.get_canonical().element_type))):
            self.fail(problem or fn, f"helper {fn.spelling} returns before its end"
                      f"{' inside a loop or before other statements' if problem else ''}: "
                      "return once, as its last statement (a helper of floats or of no "
                      "value may return from the branches of an if)")
        width = 0 if void else vector_width(result) if is_vector_type(result) else 1
        names = () if void else self.component_names(self.fresh("result"), None, width) \
            if width > 1 else (self.fresh("result"),)
        flag = self.fresh("returned")
        self.declare_mutable(flag, fn, (0, 1))
        self.ranges[flag] = (0, 1)
        self.helper_return = _EarlyReturn(names, flag, width)
        out = [S.DeclareFloat(n, None) for n in names] + [S.DeclareInt(flag, S.Const(0))]

        def guarded(stmts) -> list:
            done = []
            for i, k in enumerate(stmts):
                done += self.statement(k)
                if _count_returns(k) and i < len(stmts) - 1 and k.kind != K.RETURN_STMT:
                    rest = guarded(stmts[i + 1:])
                    if rest:
                        done.append(S.If(S.Compare("==", S.Var(flag), S.Const(0)),
                                         tuple(rest)))
                    return done
            return done
        return out + guarded(kids)

    def early_value(self, fn) -> tuple:
        """The value of a helper inlined by :meth:`inline_early_returns`."""
        names = self.helper_return.names
        if len(names) == 1 and not is_vector_type(fn.result_type):
            return ("float", S.Private(names[0]))
        return ("vector", tuple(S.Private(n) for n in names))

    def early_return(self, c) -> list:
        """The IR of ``return value;`` in a helper inlined by :meth:`inline_early_returns`:
        the value into its result floats, the flag set."""
        early = self.helper_return
        kids = C.children(c)
        if early.width == 0:
            return [S.AssignInt(early.flag, S.Const(1))]
        if not kids:
            self.fail(c, "return without a value in a helper that returns one")
        if early.width > 1:
            values, out = self.vector_values(kids[0], early.width)
        else:
            out = []
            values = (self.float_expr(kids[0], out),)
        return out + [S.Assign(n, v) for n, v in zip(early.names, values)] + \
            [S.AssignInt(early.flag, S.Const(1))]


class _EarlyReturn:
    """Where ``return`` statements of a helper with several of them put its result."""

    def __init__(self, names: tuple, flag: str, width: int):
        self.names, self.flag, self.width = names, flag, width


def _count_returns(cursor) -> int:
    """``return`` statements in the statement ``cursor`` and the statements under it."""
    from clang.cindex import CursorKind as K
    n = 1 if cursor.kind == K.RETURN_STMT else 0
    return n + sum(_count_returns(k) for k in C.children(cursor))


def _early_returns(body) -> bool:
    """Whether the helper body ``body`` (its compound statement) returns other than once,
    as its last statement."""
    from clang.cindex import CursorKind as K
    kids = C.children(body)
    total = _count_returns(body)
    return total > 1 or (total == 1 and (not kids or kids[-1].kind != K.RETURN_STMT))


def _early_return_problem(kids):
    """The first ``return`` inside a loop or a ``switch``, or followed by statements in its
    own block below the body's top level, among the statements ``kids``; None if none."""
    from clang.cindex import CursorKind as K
    loops = (K.FOR_STMT, K.WHILE_STMT, K.DO_STMT, K.SWITCH_STMT)

    def visit(c, in_loop: bool, top: bool):
        if c.kind == K.RETURN_STMT and in_loop:
            return c
        inner = C.children(c)
        if c.kind == K.COMPOUND_STMT and not top:
            for k in inner[:-1]:
                if k.kind == K.RETURN_STMT:
                    return k
        for k in inner:
            found = visit(k, in_loop or c.kind in loops, False)
            if found is not None:
                return found
        return None
    for k in kids:
        found = visit(k, False, False)
        if found is not None:
            return found
    return None

