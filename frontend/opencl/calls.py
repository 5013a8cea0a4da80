"""Calls of functions the subset has no built-in meaning for: the refused ones
(:func:`frontend.opencl.clang_ast.refused_function`), and helper functions defined in the
source or a header it includes, inlined at each call with their parameters bound to the
call's arguments (recursion and early returns refused).
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
