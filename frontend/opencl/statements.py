"""Statements of the kernel's body: blocks and their scopes, ``if``/``else``, ``return``,
assignments (``=``, ``+=``, ``-=``, ``*=`` of floats, float vectors, private array elements
and memory; ``=``, compound assignments, ``++`` and ``--`` of integers and of pointers into
a buffer or a local array, each an ``AssignInt``), ``barrier`` and ``work_group_barrier``
with their fence flags, ``vstore2/4``, helper calls as statements, and ``break`` and
``continue`` of a ``While`` loop or a ``switch``. Loops are :mod:`frontend.opencl.loops`,
``switch`` :mod:`frontend.opencl.switch`.

Errors: :class:`~tiletraffic.frontend.opencl.clang_ast.FrontendError` for a statement
outside the subset (``goto``, atomics, ...), with what to write instead.
"""
from __future__ import annotations

import math

from tiletraffic.simulator.ir import nodes as S

from tiletraffic.frontend.opencl import clang_ast as C
from tiletraffic.frontend.opencl.context import (Binding, Pointer, TranslationContext,
                                                 constant_condition)
from tiletraffic.frontend.opencl.switch import SWITCH


_WORK_GROUP_BARRIER_STD = ("CL2.0", "CL3.0")
"""The ``-cl-std`` versions whose OpenCL C has ``work_group_barrier``."""
_WORK_GROUP_SCOPES = (1, 2, 3)
"""``memory_scope_work_group``, ``_device``, ``_all_svm_devices``: scopes that order the
work-group's accesses, as the IR's barrier does (``opencl_builtins.h`` values)."""


HALF_STORES = {"vstore_half": 1, "vstore_half_rte": 1, "vstore_half2": 2,
               "vstore_half2_rte": 2, "vstore_half4": 4, "vstore_half4_rte": 4}
"""The half stores the IR models (round to nearest even), with their widths."""


class Statements(TranslationContext):
    """Statements and blocks into IR statements."""

    def block(self, cursor, new_scope=True, kernel_level=False) -> list:
        from clang.cindex import CursorKind
        if new_scope:
            self.push()
        try:
            out = self.mutable_arguments() if kernel_level else []
            kids = C.children(cursor) if cursor.kind == CursorKind.COMPOUND_STMT else [cursor]
            for k in kids:
                out += self.statement(k, kernel_level)
            return out
        finally:
            if new_scope:
                self.pop()

    def statement(self, c, kernel_level=False) -> list:
        from clang.cindex import CursorKind as K
        kind = c.kind
        if kind == K.COMPOUND_STMT:
            return self.block(c)
        if kind == K.DECL_STMT:
            out = []
            for d in C.children(c):
                out += self.declaration(d, kernel_level)
            return out
        if kind == K.NULL_STMT:
            return []
        if kind == K.IF_STMT:
            prelude = self.condition_prelude = []
            try:
                made = self.if_statement(c)
            finally:
                self.condition_prelude = None
            return prelude + [made]
        if kind == K.FOR_STMT:
            return self.for_statement(c)
        if kind == K.WHILE_STMT:
            return self.while_statement(c)
        if kind == K.DO_STMT:
            return self.do_statement(c)
        if kind == K.RETURN_STMT:
            return self.return_statement(c)
        if kind == K.SWITCH_STMT:
            return self.switch_statement(c)
        if kind == K.BREAK_STMT and self.loops and self.loops[-1].startswith(SWITCH):
            return self.switch_break(c)
        if kind in (K.BREAK_STMT, K.CONTINUE_STMT) and self.innermost_loop() == "While":
            return [S.Break() if kind == K.BREAK_STMT else S.Continue()]
        if kind == K.GOTO_STMT:
            self.fail(c, "goto: write loops (break, continue) and if/else")
        if kind.name in ("ATTRIBUTED_STMT", "UNEXPOSED_STMT"):
            kids = C.children(c)
            if len(kids) == 1:      # #pragma unroll / __attribute__((opencl_unroll_hint))
                return self.statement(kids[0], kernel_level)
        if kind.is_expression():
            return self.expression_statement(c)
        self.fail(c, f"statement {kind.name.lower()} is not supported: write for loops, "
                     "if/else, assignments, barrier() and return")

    def if_statement(self, c) -> S.If:
        kids = C.children(c)
        if self.known_condition(kids[0]) is not None:
            self.condition_prelude = None
            return self.known_if_statement(kids)
        cond = self.condition(kids[0])
        self.condition_prelude = None          # the branches' own conditions place theirs
        before, pointers = dict(self.ranges), self.pointer_targets()
        then = tuple(self.block(kids[1]))
        after_then, self.ranges = self.ranges, before
        pointers_then = self.pointer_targets()
        self.restore_pointers(pointers)
        orelse = tuple(self.block(kids[2])) if len(kids) > 2 else ()
        self.join_ranges(after_then, self.ranges)    # an integer assigned in either branch
        self.join_pointers(pointers_then, c)
        return S.If(cond, then, orelse)

    def known_if_statement(self, kids) -> S.If:
        """An ``if`` whose condition a pointer argument's test against NULL decides
        (:meth:`known_condition`): only the branch taken is translated (the other may reach
        memory through the null pointer)."""
        known = self.known_condition(kids[0])
        live = kids[1] if known else kids[2] if len(kids) > 2 else None
        return S.If(constant_condition(True), tuple(self.block(live)) if live else (), ())

    def return_statement(self, c) -> list:
        kids = C.children(c)
        if self.helper_return is not None and not isinstance(self.helper_return, list):
            return self.early_return(c)       # a helper returning from several places
        if self.helper_return is not None:
            if self.helper_return:
                self.fail(c, "a helper function with more than one return: return once, at "
                             "its end")
            self.helper_return.append(kids[0] if kids else None)
            return []
        if kids:
            self.fail(c, "a kernel returns void: write return;")
        return [S.Return()]

    def expression_statement(self, c) -> list:
        from clang.cindex import CursorKind as K
        s = C.strip(c)
        if s.kind == K.CALL_EXPR:
            return self.call_statement(s)
        if s.kind == K.BINARY_OPERATOR and C.binary_operator(s) == ",":
            return [x for e in C.children(s) for x in self.expression_statement(e)]
        if s.kind == K.BINARY_OPERATOR and C.binary_operator(s) == "=":
            lhs, rhs = C.children(s)
            binding = self.integer_target(lhs)
            if binding is not None:
                return self.assign_integer(binding, s, lhs, rhs, None)
            return self.assign(lhs, rhs, None, s)
        if s.kind == K.COMPOUND_ASSIGNMENT_OPERATOR:
            op = C.binary_operator(s)[:-1]
            lhs, rhs = C.children(s)
            binding = self.integer_target(lhs)
            if binding is not None:
                return self.assign_integer(binding, s, lhs, rhs, op)
            if op not in S.FLOAT_OPS:
                self.fail(s, f"{op}= on {self.describe_target(lhs)}: floats take +=, -=, *= "
                             "and /=")
            return self.assign(lhs, rhs, op, s)
        if s.kind == K.UNARY_OPERATOR and C.unary_operator(s) in ("++", "--"):
            inner = C.children(s)[0]
            binding = self.integer_target(inner)
            if binding is not None:
                return self.assign_integer(binding, s, inner, None, C.unary_operator(s))
            self.fail(s, f"{C.unary_operator(s)} on {self.describe_target(inner)}: write "
                         f"{'+=' if C.unary_operator(s) == '++' else '-='} 1.0f on a float")
        self.fail(s, "expression statement without effect or of an unsupported kind: write "
                     "assignments, barrier() or a helper call")

    # ---------------------------------------------------- integers and pointers assigned
    def integer_target(self, lhs):
        """The :class:`Binding` of an assignment's target that is an integer or a pointer
        (a variable, a loop variable, a buffer argument), else ``None``."""
        from clang.cindex import CursorKind as K
        s = C.strip(lhs)
        if s.kind != K.DECL_REF_EXPR:
            return None
        b = self.lookup(s.spelling)
        return b if b is not None and b.kind in ("int", "loopvar", "pointer", "buffer") \
            else None

    def assign_integer(self, binding, s, lhs, rhs, op) -> list:
        """The ``AssignInt`` statements of assignment ``s`` to an integer or pointer
        (:meth:`integer_target`); ``op``: ``None`` for ``=``, the operator of a compound
        assignment, ``"++"`` or ``"--"``."""
        if binding.kind in ("int", "loopvar"):
            return self.int_assignment(binding, s, lhs, rhs, op)
        ir = self.mutable_name(binding)
        name = self.describe_target(lhs)
        if ir is None:
            self.fail(s, f"pointer {name} assigned, but it is a helper's parameter, whose "
                         "address the IR binds once: index it with an offset instead")
        ptr = binding.value
        if op is None:
            new = self.pointer_expr(rhs)
            if new.char and not ptr.char:        # a void * converted to the pointer's type
                new = Pointer(new.target, self.bytes_to_floats(new.flat, rhs), None,
                              ptr.width)
            if new.width != ptr.width or new.char != ptr.char:
                self.fail(s, f"pointer {name} pointed at another element type: a pointer "
                             "assigned again keeps its type")
            if new.target is not ptr.target:
                self.retarget(binding, new.target)
            value = flat_offset(new)
        elif op in ("+", "-", "++", "--"):
            delta = S.Const(1) if op in ("++", "--") else self.exact(rhs, True)
            if ptr.width > 1:
                delta = delta * ptr.width
            value = S.BinOp("+" if op in ("+", "++") else "-", S.Var(ir), delta)
        else:
            self.fail(s, f"{op}= on pointer {name}: move a pointer with +=, -=, ++ or --")
        self.ranges[ir] = self.range_of(value)
        self.note_alignment(ir, value, ptr.char, s)
        return [S.AssignInt(ir, value)]

    def note_alignment(self, ir: str, value: S.IntExpr, char: bool, at=None) -> None:
        """Record whether the char pointer offset ``ir``, assigned ``value`` (bytes), stays
        a multiple of a float's size (:attr:`aligned_offsets`); refuse the assignment at
        cursor ``at`` where it does not and a cast translated before it (earlier in the
        code, or earlier in a loop's body that runs again after it) relied on it."""
        if char and self._divide(value, S.FLOAT_BYTES) is not None:
            self.aligned_offsets.add(ir)
            return
        self.aligned_offsets.discard(ir)
        if char and ir in self.aligned_reads and at is not None:
            self.fail(at, f"char pointer {self.describe_target(C.children(at)[0])} moved by "
                          f"a byte count the front end cannot show is a multiple of "
                          f"{S.FLOAT_BYTES}, after (or, in a loop, before) a cast of it to a "
                          "float pointer: move it by multiples of 4")

    def pointer_declaration(self, d, ptr) -> list:
        """The pointer variable ``d`` pointing at ``ptr``: bound to that address where
        nothing assigns it again, else to the address at an offset ``DeclareInt`` (which
        :meth:`assign_integer` assigns)."""
        if not self.reassigned(d):
            self.bind(d.spelling, Binding("pointer", ptr, d))
            return []
        offset = self.fresh(f"{d.spelling}_offset")
        flat = flat_offset(ptr)
        self.declare_mutable(offset, d, (-math.inf, math.inf))
        self.ranges[offset] = self.range_of(flat)
        self.note_alignment(offset, flat, ptr.char)
        self.bind(d.spelling, Binding("pointer", Pointer(ptr.target, S.Var(offset), None,
                                                          ptr.width, ptr.char), d))
        return [S.DeclareInt(offset, flat)]

    def mutable_arguments(self) -> list:
        """At the kernel's first statement: a ``DeclareInt`` for each argument the kernel
        assigns (an integer, or a buffer pointer moved by ``A += ...``), bound to its name
        in the kernel's scope."""
        out = []
        for name, b in list(self.scopes[0].names.items()):
            if b.cursor is None or b.kind not in ("int", "buffer") or \
                    not self.reassigned(b.cursor):
                continue
            if b.kind == "int":
                out += self.mutable_parameter(b.cursor)
                continue
            offset = self.fresh(f"{name}_offset")
            self.declare_mutable(offset, b.cursor, (-math.inf, math.inf))
            self.ranges[offset] = (0, 0)
            self.note_alignment(offset, S.Const(0), b.value.char)
            self.scopes[-1].names[name] = Binding(
                "pointer", Pointer(b.value, S.Var(offset), None, b.value.width,
                                   b.value.char), b.cursor)
            out.append(S.DeclareInt(offset, S.Const(0)))
        return out

    def target_of(self, lhs):
        """What an assignment writes: ('float', name) | ('private_elem', arr, index) |
        ('memory', array, index) | ('vector', names) | ('vector_memory', ptr) |
        ('private_vector', arr, index) | ('component', name)."""
        from clang.cindex import CursorKind as K
        s = C.strip(lhs)
        if s.kind == K.DECL_REF_EXPR:
            b = self.lookup(s.spelling)
            if b is None:
                self.fail(s, f"{s.spelling} is not declared in the kernel")
            if b.kind == "float":
                return ("float", b.value)
            if b.kind == "vector":
                return ("vector", b.value)
            self.fail(s, f"cannot assign to {s.spelling}")
        if s.kind == K.ARRAY_SUBSCRIPT_EXPR:
            return self.element(s, store=True)
        if self.is_vector_component(s):
            in_memory = self.memory_component(s)
            if in_memory is not None:
                return ("memory", *self.memory_component_target(s, *in_memory))
            ref = self.component_target(s)
            return ("component", ref[1]) if ref[0] == "float" else ref
        if s.kind == K.UNARY_OPERATOR and C.unary_operator(s) == "*":
            ptr = self.pointer_expr(C.children(s)[0])
            if ptr.width == 1:
                return ("memory", *self.resolve(ptr, s, store=True))
            return ("vector_memory", ptr)
        swizzled = self.swizzle_target(s)
        if swizzled is not None:
            return ("vector", swizzled)
        self.fail(s, f"cannot assign to {self.describe_target(s)}")

    def assign(self, lhs, rhs, op, at) -> list:
        target = self.target_of(lhs)
        out: list = []
        kind = target[0]
        if kind == "vector":
            return self.vector_assign(target[1], rhs, op)
        if kind == "private_vector":
            return self.private_vector_assign(target[1], target[2], rhs, op)
        if kind == "vector_memory":
            if op is not None:
                self.fail(at, f"{op}= on a float vector in memory: load it into a vector "
                              "variable, compute there and store it")
            return self.vector_store(target[1], rhs, at)
        value = self.float_expr(rhs, out)
        if kind in ("float", "component"):
            name = target[1]
            if op == "+":
                return out + [S.Accumulate(name, value)]
            if op is not None:
                return out + [S.Assign(name, S.FBinOp(op, S.Private(name), value))]
            return out + [S.Assign(name, value)]
        if kind == "private_elem":
            arr, index = target[1], target[2]
            if op == "+":
                return out + [S.Accumulate(arr.name, value, index)]
            if op is not None:
                value = S.FBinOp(op, S.PrivateElem(arr, index), value)
            return out + [S.Assign(arr.name, value, index)]
        array, index = target[1], target[2]
        source = self.access_source(lhs, array, index)
        if op is not None:
            value = S.FBinOp(op, S.Load(array, index, source), value)
        return out + [S.Store(array, index, value, source)]

    def call_statement(self, c) -> list:
        name = c.spelling
        args = C.children(c)[1:] if C.children(c) else []
        self.refuse_call(c)
        if name == "barrier":
            return [self.barrier(c, args)]
        if name == "work_group_barrier":
            return [self.work_group_barrier(c, args)]
        if name in ("vstore2", "vstore4"):
            width = int(name[-1])
            values = self.vector_values(args[0], width)
            ptr = self.pointer_expr(args[2])
            offset = self.exact(args[1], True) * width
            return values[1] + [self.vector_memory_store(self.offset(ptr, offset), width,
                                                         values[0], c, aligned=False)]
        if name in HALF_STORES:
            return self.half_store(c, args, HALF_STORES[name])
        helper = self.helper(c)
        if helper is not None:
            stmts, _ = self.inline(c, helper, want_value=False)
            return stmts
        if name.startswith(("atomic_", "atom_")):
            self.fail(c, f"{name}: atomics order updates by the device's timing, not by the "
                         "schedule; reduce through local memory and barriers, one store per "
                         "element")
        if name in ("mem_fence", "read_mem_fence", "write_mem_fence"):
            self.fail(c, f"{name}: orders memory without synchronising; use barrier()")
        if name.startswith(("vstore_half", "vstorea_half")):
            self.fail(c, f"{name}: half stores round to nearest even (vstore_half, "
                         "vstore_half_rte, vstore_half2/4 and their _rte forms); other "
                         "rounding modes are not modelled")
        self.fail(c, f"call of {name} as a statement: only barrier(), vstore2/4, "
                     "vstore_half[2/4] and helper functions defined in the source")

    def half_store(self, c, args, width: int) -> list:
        """``vstore_half[N](value, offset, p)``: ``value`` (a float or a floatN) rounded to
        the nearest half at ``p + offset * N``."""
        ptr = self.half_pointer(c, args[1], args[2], width)
        if width == 1:
            out: list = []
            value = self.float_expr(args[0], out)
            array, index = self.resolve(ptr, c, store=True)
            return out + [S.Store(array, index, value, self.access_source(c, array, index))]
        values, out = self.vector_values(args[0], width)
        return out + [self.vector_memory_store(ptr, width, values, c, aligned=False)]

    def work_group_barrier(self, c, args) -> S.Barrier:
        """OpenCL C 2.0's ``work_group_barrier(flags[, scope])``: :meth:`barrier` of its
        flags, under ``-cl-std=CL2.0`` or ``CL3.0`` and a scope at least the work-group's."""
        if self.cl_std not in _WORK_GROUP_BARRIER_STD:
            given = f"-cl-std={self.cl_std}" if self.cl_std else "no -cl-std option"
            self.fail(c, f"work_group_barrier is OpenCL C 2.0 and the build options give "
                         f"{given} (OpenCL C 1.2 has none): add -cl-std=CL2.0 or "
                         "-cl-std=CL3.0 to them, or write barrier(...)")
        if len(args) > 1:
            scope = C.evaluate(args[1])
            if scope not in _WORK_GROUP_SCOPES:
                self.fail(args[1], "work_group_barrier with a scope narrower than the "
                                   "work-group (memory_scope_work_item, memory_scope_sub_group) "
                                   "does not order the work-group's accesses, which the IR's "
                                   "barrier does: use memory_scope_work_group (the default)")
        return self.barrier(c, args[:1])

    def barrier(self, c, args) -> S.Barrier:
        flags = C.evaluate(args[0]) if args else None
        if not isinstance(flags, int):
            self.fail(c, "barrier flags must be the constants CLK_LOCAL_MEM_FENCE and/or "
                         "CLK_GLOBAL_MEM_FENCE")
        if not flags & 1:
            self.fail(c, "barrier(CLK_GLOBAL_MEM_FENCE) alone does not order local memory, "
                         "which the IR's barrier always does: write barrier(CLK_LOCAL_MEM_FENCE"
                         " | CLK_GLOBAL_MEM_FENCE)")
        return S.Barrier(global_fence=bool(flags & 2), source=self.source_of(c))


def flat_offset(ptr: Pointer) -> S.IntExpr:
    """The offset in floats of the address ``ptr`` from its array's first element (a local
    array's index tuple flattened row-major)."""
    if ptr.index is None:
        return ptr.flat
    flat = ptr.index[0]
    for i, extent in zip(ptr.index[1:], ptr.target.dims[1:]):
        flat = S.BinOp("+", S.BinOp("*", flat, extent), i)
    return flat
