"""Render a schedule description into OpenCL C.

The code generator reads the same :class:`simulator.ir.nodes.Schedule` tree the simulator
executes, so the two cannot drift apart. The kernel frame is a Jinja2 template
(``gpu/codegen/templates/kernel.cl.j2``); statements and expressions are rendered here.

Named constants (tile width, chunk) become ``#define`` lines; parameters (``M``, ``K``,
``N``) become ``const int`` arguments, float parameters (``alpha``) ``const float`` ones;
every global buffer is ``float`` (row-major) and the
work-group size is fixed with ``reqd_work_group_size``.

Integers are ``int``; a :class:`~simulator.ir.nodes.Wrap` is rendered as a ``long`` holding
the wrapped value (``(long)(unsigned int)(i - 1)``), a ``Let``, a loop variable or a
``DeclareInt`` whose value (or a value assigned to it) holds one (or such a name) is
declared ``long`` and a ``min`` of one takes both
operands as ``long``, so that the C arithmetic around it is the IR's (mathematical)
arithmetic: no further wrap-around.
"""
from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path

import jinja2

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.visitor import Visitor, walk, walk_statements

from tiletraffic.gpu.codegen.kernel import GeneratedKernel, KernelArg

_PRECEDENCE = {"||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6, "<": 7,
               "<=": 7, ">": 7, ">=": 7, "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10,
               "%": 10}
"""C's precedence of the binary operators the IR renders (higher binds tighter)."""
_ATOM = 20
_IDS = {"local": "get_local_id", "group": "get_group_id", "global": "get_global_id"}
ARG_KINDS = {"in": "global_in", "out": "global_out", "inout": "global_inout"}
"""Kernel argument kind (:class:`gpu.codegen.kernel.KernelArg`) of each global array role."""


@lru_cache(maxsize=1)
def _template() -> jinja2.Template:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined)
    return env.get_template("kernel.cl.j2")


def render_int(e: S.IntExpr, longs=frozenset()) -> tuple[str, int]:
    """C text of an integer expression and its precedence; ``longs``: the names declared
    ``long`` (see the module docstring)."""
    if isinstance(e, S.Const):
        return (e.name if e.name else str(e.value)), _ATOM
    if isinstance(e, (S.Param, S.Var)):
        return e.name, _ATOM
    if isinstance(e, S.WorkItemId):
        return f"(int){_IDS[e.kind]}({e.dim})", _ATOM
    if isinstance(e, S.Min):
        left, right = render_int(e.left, longs)[0], render_int(e.right, longs)[0]
        if _is_long(longs, e):      # min of one type: OpenCL C has no min(long, int)
            return f"min((long)({left}), (long)({right}))", _ATOM
        return f"min({left}, {right})", _ATOM
    if isinstance(e, S.BinOp):
        return _binary(e.op, render_int(e.left, longs), render_int(e.right, longs),
                       _op_of(e.right))
    if isinstance(e, S.IntSelect):
        return (f"(({render_cond(e.cond, longs)[0]}) ? {render_int(e.then, longs)[0]} : "
                f"{render_int(e.orelse, longs)[0]})"), _ATOM
    if isinstance(e, S.IntLoad):     # an element of an int/uint buffer, widened as read
        return f"(long){render_access(e.array, e.index, longs)}", _ATOM
    if isinstance(e, S.Wrap):
        inner = render_int(e.operand, longs)[0]
        if e.bits == 64:   # the operand itself (an unsigned one refused when negative)
            return f"(long)({inner})", _ATOM
        return f"(long)({S.c_int_type(e.bits, e.signed)})({inner})", _ATOM
    raise TypeError(f"cannot render integer expression {e!r}")


def _is_long(longs, *exprs: S.IntExpr) -> bool:
    """Whether one of ``exprs`` is a ``long`` in C: it holds a :class:`Wrap`, a name of
    ``longs`` or a constant beyond ``int``'s range (a ``long`` literal)."""
    return any(isinstance(node, S.Wrap) or (isinstance(node, S.Var) and node.name in longs)
               or (isinstance(node, S.Const) and not -2 ** 31 <= node.value < 2 ** 31)
               for e in exprs for node in walk(e))


def _binary(op: str, left: tuple[str, int], right: tuple[str, int],
            right_op: str | None = None, reassociate: bool = True) -> tuple[str, int]:
    """``left op right`` with the parentheses C needs to keep the tree's meaning.

    A right operand of equal precedence keeps its parentheses unless it is the same
    associative operator (``a + (b + c)``, ``a * (b * c)``, ``&&``, ``||``) and
    ``reassociate`` allows it: never for floats (evaluation order changes rounding), never
    for ``a * (b / c)`` or ``a - (b - c)``.
    """
    p = _PRECEDENCE[op]
    lt = left[0] if left[1] >= p else f"({left[0]})"
    same_assoc = reassociate and right_op == op and op in ("+", "*", "&&", "||")
    rt = right[0] if right[1] > p or (right[1] == p and same_assoc) else f"({right[0]})"
    return f"{lt} {op} {rt}", p


def _op_of(node) -> str | None:
    return getattr(node, "op", None)


def render_cond(c: S.Cond, longs=frozenset()) -> tuple[str, int]:
    """C text of a condition and its precedence."""
    if isinstance(c, S.Compare):
        return _binary(c.op, render_int(c.left, longs), render_int(c.right, longs),
                       _op_of(c.right))
    if isinstance(c, S.BoolOp):
        return _binary(c.op, render_cond(c.left, longs), render_cond(c.right, longs),
                       _op_of(c.right))
    if isinstance(c, S.Not):
        return f"!({render_cond(c.operand, longs)[0]})", _ATOM
    if isinstance(c, S.FloatCompare):
        return _binary(c.op, render_float(c.left, longs), render_float(c.right, longs),
                       reassociate=False)
    if isinstance(c, S.FloatTest):
        return f"{c.fn}({render_float(c.operand, longs)[0]})", _ATOM
    raise TypeError(f"cannot render condition {c!r}")


def render_access(array: S.Array, index: tuple[S.IntExpr, ...], longs=frozenset()) -> str:
    """``A[row * K + col]`` for a global buffer (flat, row-major); ``tile[r][c]`` for a
    local array (declared with its dimensions)."""
    if isinstance(array, S.LocalArray):
        return array.name + "".join(f"[{render_int(i, longs)[0]}]" for i in index)
    return f"{array.name}[{render_int(_flat(array, index), longs)[0]}]"


def _flat(array: S.GlobalArray, index: tuple[S.IntExpr, ...], plus: int = 0) -> S.IntExpr:
    """The flat (row-major) element index of ``array[index]``, ``plus`` elements further."""
    flat = index[0]
    for i, extent in zip(index[1:], array.dims[1:]):
        flat = flat * extent + i
    return flat + plus if plus else flat


def _is_half(array) -> bool:
    return isinstance(array, S.GlobalArray) and array.dtype == "half"


def render_half_load(array: S.GlobalArray, index, longs=frozenset(), plus: int = 0) -> str:
    """``vload_half(flat, A)``: an element of a ``half`` buffer read as float (exact)."""
    return f"vload_half({render_int(_flat(array, index, plus), longs)[0]}, {array.name})"


def render_float_constant(value: float) -> str:
    """C text of a float constant: ``2.0f``; OpenCL C's ``INFINITY``, ``(-INFINITY)`` and
    ``NAN`` for the values no literal writes."""
    value = float(value)
    if math.isnan(value):
        return "NAN"
    if math.isinf(value):
        return "INFINITY" if value > 0 else "(-INFINITY)"
    return f"{value!r}f"


def render_float(e: S.FloatExpr, longs=frozenset()) -> tuple[str, int]:
    """C text of a float expression and its precedence."""
    if isinstance(e, S.Load):
        if _is_half(e.array):
            return render_half_load(e.array, e.index, longs), _ATOM
        return render_access(e.array, e.index, longs), _ATOM
    if isinstance(e, S.FConst):
        return render_float_constant(e.value), _ATOM
    if isinstance(e, (S.Private, S.FloatParam)):
        return e.name, _ATOM
    if isinstance(e, S.PrivateElem):
        return e.array.name + "".join(f"[{render_int(i, longs)[0]}]" for i in e.index), _ATOM
    if isinstance(e, S.IntToFloat):
        return f"((float)({render_int(e.value, longs)[0]}))", _ATOM
    if isinstance(e, S.FBinOp):
        return _binary(e.op, render_float(e.left, longs), render_float(e.right, longs),
                       _op_of(e.right), reassociate=False)
    if isinstance(e, S.FNeg):
        return f"(-({render_float(e.operand, longs)[0]}))", _ATOM
    if isinstance(e, S.FCall):  # OpenCL C built-ins of the same names
        return f"{e.fn}({', '.join(render_float(a, longs)[0] for a in e.args)})", _ATOM
    if isinstance(e, S.Select):
        return (f"(({render_cond(e.cond, longs)[0]}) ? {render_float(e.then, longs)[0]} : "
                f"{render_float(e.orelse, longs)[0]})"), _ATOM
    raise TypeError(f"cannot render float expression {e!r}")


def _target(s, longs=frozenset()) -> str:
    """``name`` or ``name[i][j]`` of an Assign/Accumulate."""
    return s.name + "".join(f"[{render_int(i, longs)[0]}]" for i in s.index)


def render_block(stmts, depth: int = 1, longs: set[str] | None = None) -> list[str]:
    """Lines of C for a block of statements, indented four spaces per ``depth``;
    ``longs``: the names declared ``long`` so far (see the module docstring), updated with
    the ones the block declares.

    Raises:
        TypeError: a value in the block that is no statement this module renders.
    """
    longs = set() if longs is None else longs
    renderer = _BlockRenderer(depth, longs, _long_integers(stmts, longs))
    renderer.visit_all(stmts)
    return renderer.lines


def _long_integers(stmts, longs) -> set[str]:
    """The integers declared by the ``DeclareInt`` statements of ``stmts`` (at any depth)
    that are declared ``long``: those of which a value (declared or assigned by an
    ``AssignInt`` of ``stmts``) holds a :class:`Wrap` or reads a name declared ``long``
    (``longs``, or a ``Let``, loop variable or integer of ``stmts`` declared ``long``)."""
    values: dict[str, list] = {}
    for s in walk_statements(stmts):
        if isinstance(s, (S.Let, S.AssignInt)) or (isinstance(s, S.DeclareInt) and
                                                    s.value is not None):
            values.setdefault(s.name, []).append(s.value)
        elif isinstance(s, S.For):
            values.setdefault(s.var, []).extend((s.start, s.stop, s.step))
    found = set(longs)
    while True:
        more = {name for name, exprs in values.items()
                if name not in found and _is_long(found, *exprs)}
        if not more:
            break
        found |= more
    return {s.name for s in walk_statements(stmts)
            if isinstance(s, S.DeclareInt) and s.name in found}


SHUFFLE_SCRATCH = "tt_shuffle_scratch"
"""The local array of one float per work-item that a schedule's shuffles go through."""
_FLAT_LOCAL_ID = ("(int)(get_local_id(0) + get_local_size(0) * (get_local_id(1) + "
                  "get_local_size(1) * get_local_id(2)))")
_LOCAL_ITEMS = "(int)(get_local_size(0) * get_local_size(1) * get_local_size(2))"


class _BlockRenderer(Visitor):
    """Appends the C lines of each statement visited to ``lines`` (:func:`render_block`)."""

    def __init__(self, depth: int, longs: set[str], long_integers: set[str]) -> None:
        self.depth, self.longs = depth, longs
        self.long_integers = long_integers
        """The ``DeclareInt`` names of the block rendered that are declared ``long``."""
        self.pad = "    " * depth
        self.lines: list[str] = []

    def generic_visit(self, s) -> None:
        raise TypeError(f"cannot render statement {s!r}")

    def emit(self, line: str) -> None:
        self.lines.append(self.pad + line)

    def nested(self, stmts) -> None:
        self.lines += render_block(stmts, self.depth + 1, self.longs)

    def visit_Let(self, s: S.Let) -> None:
        ctype = "long" if _is_long(self.longs, s.value) else "int"
        if ctype == "long":
            self.longs.add(s.name)
        self.emit(f"const {ctype} {s.name} = {render_int(s.value, self.longs)[0]};")

    def visit_DeclareInt(self, s: S.DeclareInt) -> None:
        ctype = "long" if s.name in self.long_integers or s.name in self.longs else "int"
        if ctype == "long":
            self.longs.add(s.name)
        value = "" if s.value is None else f" = {render_int(s.value, self.longs)[0]}"
        self.emit(f"{ctype} {s.name}{value};")

    def visit_AssignInt(self, s: S.AssignInt) -> None:
        self.emit(f"{s.name} = {render_int(s.value, self.longs)[0]};")

    def visit_DeclareFloat(self, s: S.DeclareFloat) -> None:
        init = "" if s.init is None else f" = {render_float_constant(s.init)}"
        self.emit(f"float {s.name}{init};")

    def visit_DeclarePrivateArray(self, s: S.DeclarePrivateArray) -> None:
        name = s.array.name
        extents = [render_int(d, self.longs)[0] for d in s.array.dims]
        self.emit(f"float {name}{''.join(f'[{e}]' for e in extents)};")
        if s.init is None:
            return
        # zero-filled by loops, not "= {0.0f}": PoCL (CPU) miscompiled that aggregate
        # initializer in work-groups of 3 work-items (tests/test_codegen.py found it)
        idx = [f"{name}_z{d}" for d in range(len(extents))]
        self.emit("{")
        for d, (i, e) in enumerate(zip(idx, extents)):
            self.emit(f"{'    ' * (d + 1)}for (int {i} = 0; {i} < {e}; ++{i})")
        fill = render_float_constant(s.init)
        self.emit(f"{'    ' * (len(idx) + 1)}{name}{''.join(f'[{i}]' for i in idx)} = {fill};")
        self.emit("}")

    def visit_Assign(self, s: S.Assign) -> None:
        self.emit(f"{_target(s, self.longs)} = {render_float(s.value, self.longs)[0]};")

    def visit_Accumulate(self, s: S.Accumulate) -> None:
        self.emit(f"{_target(s, self.longs)} += {render_float(s.value, self.longs)[0]};")

    def visit_Store(self, s: S.Store) -> None:
        if _is_half(s.array):      # rounded to the nearest half (the default rounding)
            self.emit(f"vstore_half({render_float(s.value, self.longs)[0]}, "
                      f"{render_int(_flat(s.array, s.index), self.longs)[0]}, {s.array.name});")
            return
        self.emit(f"{render_access(s.array, s.index, self.longs)} = "
                  f"{render_float(s.value, self.longs)[0]};")

    def _half_vector(self, s) -> str | None:
        """The element offset of an aligned ``vload_halfN``/``vstore_halfN`` of a half
        buffer (its flat index over N), or None for a scalar access per component."""
        if not s.aligned:
            return None
        return render_int(_flat(s.array, s.index) // S.Const(s.width), self.longs)[0]

    def _visit_half_vector_load(self, s: S.VectorLoad) -> None:
        offset = self._half_vector(s)
        if offset is not None:
            self.emit("{")
            self.emit(f"    const float{s.width} vec = vload_half{s.width}({offset}, "
                      f"{s.array.name});")
            for w, name in enumerate(s.names):
                self.emit(f"    {name} = vec.{'xyzw'[w]};")
            self.emit("}")
            return
        for w, name in enumerate(s.names):
            self.emit(f"{name} = {render_half_load(s.array, s.index, self.longs, w)};")

    def _visit_half_vector_store(self, s: S.VectorStore) -> None:
        offset = self._half_vector(s)
        self.emit("{")
        self.emit(f"    float{s.width} vec;")
        for w, v in enumerate(s.values):
            self.emit(f"    vec.{'xyzw'[w]} = {render_float(v, self.longs)[0]};")
        if offset is not None:
            self.emit(f"    vstore_half{s.width}(vec, {offset}, {s.array.name});")
        else:
            for w in range(s.width):
                flat = render_int(_flat(s.array, s.index, w), self.longs)[0]
                self.emit(f"    vstore_half(vec.{'xyzw'[w]}, {flat}, {s.array.name});")
        self.emit("}")

    def visit_VectorLoad(self, s: S.VectorLoad) -> None:
        if _is_half(s.array):
            return self._visit_half_vector_load(s)
        self.emit("{")
        where = f"&{render_access(s.array, s.index, self.longs)}"
        value = f"*({_vector_pointer(s.array, s.width, const=True)}){where}" if s.aligned \
            else f"vload{s.width}(0, {where})"
        self.emit(f"    const float{s.width} vec = {value};")
        for w, name in enumerate(s.names):
            self.emit(f"    {name} = vec.{'xyzw'[w]};")
        self.emit("}")

    def visit_VectorStore(self, s: S.VectorStore) -> None:
        if _is_half(s.array):
            return self._visit_half_vector_store(s)
        self.emit("{")
        self.emit(f"    float{s.width} vec;")
        for w, v in enumerate(s.values):
            self.emit(f"    vec.{'xyzw'[w]} = {render_float(v, self.longs)[0]};")
        where = f"&{render_access(s.array, s.index, self.longs)}"
        if s.aligned:
            self.emit(f"    *({_vector_pointer(s.array, s.width, const=False)}){where} = vec;")
        else:
            self.emit(f"    vstore{s.width}(vec, 0, {where});")
        self.emit("}")

    def visit_Shuffle(self, s: S.Shuffle) -> None:
        """A sub-group shuffle through the work-group's scratch array
        (:data:`SHUFFLE_SCRATCH`, one float per work-item): every work-item writes its
        value, a barrier, each reads the lane :class:`simulator.ir.nodes.Shuffle` picks, a
        barrier before the scratch is written again."""
        w = s.width
        lane = render_int(s.lane, self.longs)[0]
        target = {"index": f"((tt_lane % {w}) + {w}) % {w}", "up": f"tt_me % {w} - tt_lane",
                  "down": f"tt_me % {w} + tt_lane", "xor": f"(tt_me % {w}) ^ tt_lane"}[s.mode]
        self.emit("{")
        self.emit(f"    const int tt_me = {_FLAT_LOCAL_ID};")
        self.emit(f"    {SHUFFLE_SCRATCH}[tt_me] = {render_float(s.value, self.longs)[0]};")
        self.emit("    barrier(CLK_LOCAL_MEM_FENCE);")
        self.emit(f"    const int tt_lane = {lane};")
        self.emit(f"    const int tt_target = {target};")
        self.emit(f"    const int tt_source = tt_me / {w} * {w} + tt_target;")
        self.emit(f"    {s.name} = {SHUFFLE_SCRATCH}[(tt_target >= 0 && tt_target < {w} && "
                  f"tt_source < {_LOCAL_ITEMS}) ? tt_source : tt_me];")
        self.emit("    barrier(CLK_LOCAL_MEM_FENCE);")
        self.emit("}")

    def visit_If(self, s: S.If) -> None:
        self.emit(f"if ({render_cond(s.cond, self.longs)[0]}) {{")
        self.nested(s.then)
        if s.orelse:
            self.emit("} else {")
            self.nested(s.orelse)
        self.emit("}")

    def visit_For(self, s: S.For) -> None:
        step = render_int(s.step, self.longs)[0]
        inc = f"++{s.var}" if step == "1" else f"{s.var} += {step}"
        if _unrolled(s):
            self.emit("#pragma unroll")
        ctype = "long" if _is_long(self.longs, s.start, s.stop, s.step) else "int"
        if ctype == "long":
            self.longs.add(s.var)
        self.emit(f"for ({ctype} {s.var} = {render_int(s.start, self.longs)[0]}; "
                  f"{s.var} < {render_int(s.stop, self.longs)[0]}; {inc}) {{")
        self.nested(s.body)
        self.emit("}")

    def visit_While(self, s: S.While) -> None:
        """``while (cond)``, ``for (; cond; update)``, or ``do { } while (cond);`` with the
        update, if any, before the condition (``while ((i = i + 1, cond))``): a
        ``continue`` reaches the update in each."""
        cond = render_cond(s.cond, self.longs)[0]
        update = ", ".join(f"{u.name} = {render_int(u.value, self.longs)[0]}"
                           for u in s.update)
        if s.do_while:
            self.emit("do {")
            self.nested(s.body)
            self.emit(f"}} while (({update}, {cond}));" if update else f"}} while ({cond});")
            return
        self.emit(f"for (; {cond}; {update}) {{" if update else f"while ({cond}) {{")
        self.nested(s.body)
        self.emit("}")

    def visit_Break(self, s: S.Break) -> None:
        self.emit("break;")

    def visit_Continue(self, s: S.Continue) -> None:
        self.emit("continue;")

    def visit_Barrier(self, s: S.Barrier) -> None:
        fence = "CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE" if s.global_fence else \
            "CLK_LOCAL_MEM_FENCE"
        self.emit(f"barrier({fence});")

    def visit_Return(self, s: S.Return) -> None:
        self.emit("return;")


UNROLL_MAX_TRIPS = 64
"""A loop with constant bounds and at most this many iterations gets ``#pragma unroll``."""


def _unrolled(s: S.For) -> bool:
    """Whether ``s`` is rendered fully unrolled: constant start, stop and step, at most
    :data:`UNROLL_MAX_TRIPS` iterations (the register tiles' ``kk``, ``i`` and ``j`` loops).
    Unrolled here because NVIDIA's OpenCL compiler may leave such a loop rolled (one
    iteration's FMAs per pass), so that each iteration's local loads and the FMAs that use
    them run one after the other instead of overlapping."""
    if not all(isinstance(x, S.Const) for x in (s.start, s.stop, s.step)):
        return False
    return 0 < -(-(s.stop.value - s.start.value) // s.step.value) <= UNROLL_MAX_TRIPS


LOCAL_VECTOR_SPACE = "LOCAL_VECTOR_SPACE"
"""Macro naming the address space of local vector pointer casts: ``__local`` in OpenCL C
(defined by the kernel unless already defined), empty in the CUDA build, whose prelude maps
``__local`` to ``__shared__``, which a cast cannot name."""


def _vector_pointer(array: S.Array, width: int, const: bool) -> str:
    """``const __global float4 *``: the cast that makes one vector access of
    ``array`` (alignment to ``4 * width`` bytes is the schedule's promise, checked by the
    simulator)."""
    space = "__global" if isinstance(array, S.GlobalArray) else LOCAL_VECTOR_SPACE
    return f"{'const ' if const else ''}{space} float{width} *"


def _uses_vectors(stmts) -> bool:
    return any(isinstance(s, (S.VectorLoad, S.VectorStore)) for s in walk_statements(stmts))


def _named_constants(schedule: S.Schedule) -> dict[str, int]:
    """Named constants used anywhere in the schedule (its statements, the arrays they name,
    its local arrays), name -> value.

    Raises:
        ValueError: a name with two values.
    """
    found: dict[str, int] = {}
    nodes = [n for s in schedule.body for n in walk(s, arrays=True)]
    nodes += [n for a in schedule.local_arrays for n in walk(a, arrays=True)]
    for node in nodes:
        if isinstance(node, S.Const) and node.name:
            if found.setdefault(node.name, node.value) != node.value:
                raise ValueError(f"constant {node.name} has two values")
    return found


def generate(schedule: S.Schedule) -> GeneratedKernel:
    """OpenCL C for ``schedule`` with its launch geometry.

    A schedule parsed from a user's OpenCL C (``tiletraffic.frontend.opencl.translate``; its
    ``extra["opencl"]`` holds the source) is not rendered: its own source text, kernel
    name, argument order and build options are returned, so every run and Oclgrind
    cross-check executes the kernel as the user wrote it; one that uses sub-groups
    (``extra["opencl"]["sub_group_size"]``) is rendered, since the OpenCL platforms it is
    checked on have none (its shuffles through local memory, :meth:`visit_Shuffle`).

    Returns:
        :class:`gpu.codegen.kernel.GeneratedKernel` whose ``args`` are the global buffers (inputs
        ``global_in``, outputs ``global_out``, inputs the kernel writes ``global_inout``)
        followed by the parameters (``int``, or ``float`` for a float parameter); local
        arrays, those of a user's ``__local float *`` arguments included, are declared in
        the kernel's body.
    """
    if "opencl" in schedule.extra and "sub_group_size" not in schedule.extra["opencl"]:
        return _user_kernel(schedule)
    args = [KernelArg(a.name, ARG_KINDS[a.role]) for a in schedule.arrays]
    args += [KernelArg(name, "float" if isinstance(value, float) else "int")
             for name, value in schedule.params]
    sig = []
    for a in schedule.arrays:
        const = "const " if a.role == "in" else ""
        sig.append(f"__global {const}{a.dtype} *restrict {a.name}")
    sig += [f"const {arg.kind} {arg.name}" for arg in args[len(schedule.arrays):]]
    reqd = list(schedule.local_size) + [1] * (3 - len(schedule.local_size))
    vectors = _uses_vectors(schedule.body)
    # vector accesses of local arrays need them 16-byte aligned (float4)
    align = " __attribute__((aligned(16)))" if vectors else ""
    source = _template().render(
        family=schedule.family, description=schedule.description,
        defines=sorted(_named_constants(schedule).items()),
        reqd_size=", ".join(str(v) for v in reqd),
        kernel_name=schedule.kernel_name, signature=", ".join(sig),
        local_decls=[f"__local float {a.name}"
                     + "".join(f"[{render_int(d)[0]}]" for d in a.dims) + align + ";"
                     for a in schedule.local_arrays] + _shuffle_scratch(schedule),
        body="\n".join(render_block(schedule.body)),
    )
    if vectors:  # after the header comment, before the #defines
        lines = source.split("\n")
        at = next(i for i, line in enumerate(lines) if not line.startswith("//"))
        lines[at:at] = [f"#ifndef {LOCAL_VECTOR_SPACE}", f"#define {LOCAL_VECTOR_SPACE} __local",
                        "#endif"]
        source = "\n".join(lines)
    return GeneratedKernel(
        name=schedule.kernel_name, source=source, args=tuple(args),
        global_size=tuple(schedule.global_size), local_size=tuple(schedule.local_size),
        local_mem_bytes=schedule.local_mem_bytes, schedule_name=schedule.family,
        max_registers=schedule.max_registers)


def shuffles_as_generated(schedule: S.Schedule) -> S.Schedule:
    """``schedule`` with each :class:`~simulator.ir.nodes.Shuffle` replaced by the accesses
    its generated code makes (:meth:`_BlockRenderer.visit_Shuffle`): a store of the value
    into :data:`SHUFFLE_SCRATCH`, a barrier, a load of it into the shuffle's private float
    (at the work-item's own place: the counts are those of the code, the value is not the
    shuffle's), a barrier. Simulated, it counts what Oclgrind counts of the generated
    kernel; ``schedule`` itself where it does not shuffle."""
    import dataclasses
    if not _shuffle_scratch(schedule):
        return schedule
    items = 1
    for size in schedule.local_size:
        items *= size
    scratch = S.LocalArray(SHUFFLE_SCRATCH, (S.Const(items),))
    me: S.IntExpr = S.Const(0)
    for d in reversed(range(len(schedule.local_size))):
        me = S.WorkItemId("local", d) if d == len(schedule.local_size) - 1 else \
            S.WorkItemId("local", d) + S.Const(schedule.local_size[d]) * me

    def lower(stmts):
        out = []
        for s in stmts:
            if isinstance(s, S.Shuffle):
                out += [S.Store(scratch, (me,), s.value, s.source),
                        S.Barrier(source=s.source),
                        S.Assign(s.name, S.Load(scratch, (me,), s.source)),
                        S.Barrier(source=s.source)]
                continue
            changes = {f.name: lower(getattr(s, f.name)) for f in dataclasses.fields(s)
                       if isinstance(getattr(s, f.name), tuple) and getattr(s, f.name)
                       and all(isinstance(x, S.Stmt) for x in getattr(s, f.name))}
            out.append(dataclasses.replace(s, **changes) if changes else s)
        return tuple(out)
    return dataclasses.replace(schedule, body=lower(schedule.body),
                               local_arrays=schedule.local_arrays + (scratch,))


def _shuffle_scratch(schedule: S.Schedule) -> list[str]:
    """The declaration of :data:`SHUFFLE_SCRATCH` where the schedule shuffles, else none."""
    if not any(isinstance(n, S.Shuffle) for s in schedule.body for n in walk(s)):
        return []
    items = 1
    for size in schedule.local_size:
        items *= size
    return [f"__local float {SHUFFLE_SCRATCH}[{items}];"]


def _user_kernel(schedule: S.Schedule) -> GeneratedKernel:
    """The user's own kernel of a parsed schedule (see :func:`generate`)."""
    user = schedule.extra["opencl"]
    return GeneratedKernel(
        name=user["kernel"], source=user["source"],
        args=tuple(KernelArg(*arg) for arg in user["args"]),
        global_size=tuple(schedule.global_size), local_size=tuple(schedule.local_size),
        local_mem_bytes=schedule.local_mem_bytes, build_options=tuple(user["build_options"]),
        schedule_name=schedule.family, max_registers=schedule.max_registers)
