"""The state of one kernel's translation (:mod:`frontend.opencl.translate`): the launch, the
arguments, the C names in scope and what each is bound to, the IR names used, and the bounds
of the integer names (for an integer assigned again, at the point translated); with the
errors, name binding and source locations every part of the translation uses, and the walks
of clang's tree that find which variables a piece of code assigns and whether a loop's body
leaves it with ``break`` or ``continue``.

:class:`TranslationContext` is the base of the translator's parts (declarations,
statements, loops, calls, integers, floats, vectors, memory), which
:class:`frontend.opencl.translate.KernelBuilder` composes into one class.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tiletraffic.simulator.ir import nodes as S

from tiletraffic.frontend.opencl import clang_ast as C
from tiletraffic.frontend.opencl.c_types import address_space


DATA_DEPENDENT = ("traffic depends on the data; tiletraffic models only kernels whose "
                  "addresses and branches do not")
"""The reason given for a branch, loop bound or index computed from loaded values."""


@dataclass
class Buffer:
    """A buffer argument of the kernel: its name, access role (``in``, ``out``, ``inout``),
    shape (the names of its sizes) and sizes, floats per element, whether the source
    declares it const, its IR array, and whether the kernel stores into it."""

    name: str
    role: str
    shape: tuple[str, ...]
    dims: tuple[int, ...]
    width: int           # 1: float*, 4: float4*
    const: bool
    array: S.GlobalArray = None
    stored: bool = False
    dtype: str = "float"          # "int"/"uint": an integer buffer (its contents in data)
    data: tuple | None = None
    char: bool = False   # declared char* (uchar*): the floats reached through byte offsets


@dataclass
class Binding:
    """What a C name is bound to: ``kind`` (``int``, ``loopvar``, ``float``,
    ``float_param``, ``vector``, ``private_array``, ``local``, ``buffer``, ``pointer``), its
    IR value and its declaration cursor."""

    kind: str
    value: object
    cursor: object = None


@dataclass
class Pointer:
    """An address: a buffer's flat element index, or a local array's index tuple; a
    ``char`` pointer into a buffer holds its offset in bytes (``flat``)."""

    target: object       # Buffer | S.LocalArray
    flat: S.IntExpr | None = None
    index: tuple | None = None
    width: int = 1       # floats per element of the pointer's type
    char: bool = False   # a char*/uchar*: ``flat`` counts bytes


@dataclass
class Scope:
    """The C names declared in one block, each with its :class:`Binding`."""

    names: dict = field(default_factory=dict)


class TranslationContext:
    """One kernel's translation state (see the module docstring); the translator's parts
    extend it."""

    def __init__(self, cursor, path, global_size, local_size, args, sizes, cl_std=None):
        self.cursor, self.path = cursor, path
        self.cl_std = cl_std            # -cl-std=... of the build options, upper-cased
        self.global_size, self.local_size = global_size, local_size
        self.args, self.sizes = args, sizes
        self.params: dict[str, int] = {}
        self.int_vectors: dict[str, tuple[str, ...]] = {}
        """Each ``int2``/``int4`` argument's IR parameters, one per component."""
        self.buffers: dict[str, Buffer] = {}
        self.local_arrays: list[S.LocalArray] = []
        self.arg_kinds: list[tuple[str, str]] = []
        self.scopes: list[Scope] = [Scope()]
        self.used_names: set[str] = set()
        self.inline_depth = 0
        self.helper_return: list | None = None
        self.condition_prelude: list | None = None
        """Where the statements an ``if``'s float comparison needs go, run before the ``if``
        (None: nowhere, inside ``&&``/``||`` or outside an ``if``'s condition)."""
        self.ranges: dict[str, tuple] = {}
        """Bounds (lo, hi) of the values of each integer name of the IR, for this launch."""
        self.inlined_from: list[str] = []
        """The helper calls being inlined, innermost last (``sync_tile, called at
        k.cl:20:9``)."""
        self.let_values: dict[str, S.IntExpr] = {}
        """The value of each integer name of the IR bound once (a ``Let``), for reading a
        flat index through it (:meth:`frontend.opencl.memory.Memory.delinearize`)."""
        self.mutable_ranges: dict[str, tuple] = {}
        """The integer names of the IR that ``AssignInt`` may assign (a ``DeclareInt``: a C
        integer or a pointer's offset assigned again), each with the bounds of its C type:
        :attr:`ranges` holds the bounds of its value at the point translated, which
        :meth:`widen` resets to these where a loop may assign it."""
        self.aligned_offsets: set[str] = set()
        """The names of :attr:`mutable_ranges` that are char pointers' offsets in bytes whose
        every assignment translated so far is a multiple of a float's size."""
        self.aligned_reads: set[str] = set()
        """The names of :attr:`aligned_offsets` a cast to a float pointer has divided by a
        float's size (an assignment that breaks their alignment is then refused)."""
        self.mutable_decls: dict[str, tuple] = {}
        """Per name of :attr:`mutable_ranges`, the declaration it belongs to (the
        variable's cursor, by :func:`_key`)."""
        self.loops: list[str] = []
        """The kinds of the IR loops being translated around the statement (``For``,
        ``While``), innermost last."""
        self._assigned: dict[tuple, frozenset] = {}
        self.pointer_retargets = 0
        """How many assignments so far pointed a pointer at another array than before."""
        self.flat_local_shapes: dict[str, tuple] = {}
        """Per IR name of a ``__local float2/4/8 *`` argument whose shape has two or more
        dimensions, the last the vector's width: (argument name, extents, width), until an
        access indexes its rows (see :meth:`frontend.opencl.memory.Memory.resolve`)."""
        self.flat_local_reads: set[str] = set()
        """The names of :attr:`flat_local_shapes` some access reaches by one flat index
        split by division into the shape's rows."""
        self.vector_widths: dict[str, int] = {}
        """Floats per element of each private or local array of ``float2``/``float4`` (by
        IR name), held as an array of floats with one more dimension, of that extent."""
        self.vector_components: dict[str, str] = {}
        """The vector (its IR name) each private float that is a vector's component
        belongs to."""
        self.source_names: dict[str, str] = {}
        """The C name of each IR name that differs from it (``r_2`` -> ``r``: a name
        declared again, in another scope or an inlined helper), for messages."""
        self.display_names: dict[str, str] = {}
        """How the user wrote each C name that differs from it, for a kernel translated
        into C from another language (GLSL's ``local`` is ``local_glsl`` in C)."""

    def pointer_space(self, pointee) -> str:
        """The address space of a kernel argument pointing at ``pointee`` (a type), as
        :func:`~tiletraffic.frontend.opencl.c_types.address_space` reads it."""
        return address_space(pointee)

    def fail(self, cursor, message: str, arg: str | None = None):
        """Raise :class:`~tiletraffic.frontend.opencl.clang_ast.FrontendError` with
        ``file:line:column`` of ``cursor`` and ``message`` (``arg``: the argument named)."""
        C.fail(cursor, message, self.path, arg)

    def bind(self, c_name: str, binding: Binding) -> str:
        """Bind ``c_name`` in the innermost scope; returns the IR name (a fresh one when
        ``c_name`` was declared before, in another scope or an inlined helper: the IR's
        names are the kernel's)."""
        if c_name in self.used_names or c_name in self.params:
            ir = self.fresh(c_name)
            self.source_names[ir] = c_name
        else:
            ir = c_name
            self.used_names.add(ir)
        if binding.kind == "float":
            binding.value = ir
        self.scopes[-1].names[c_name] = binding
        return ir

    def lookup(self, name: str):
        """The :class:`Binding` of the C name ``name`` in the innermost scope that has it,
        else ``None``."""
        for scope in reversed(self.scopes):
            if name in scope.names:
                return scope.names[name]
        return None

    def push(self):
        self.scopes.append(Scope())

    def pop(self):
        self.scopes.pop()

    def fresh(self, base: str) -> str:
        """An IR name not used yet (``base``, else ``base_2``, ``base_3``, ...), now used."""
        n = 1
        name = base
        while name in self.used_names:
            n += 1
            name = f"{base}_{n}"
        self.used_names.add(name)
        return name

    def describe_target(self, c) -> str:
        """The source text of cursor ``c`` (its tokens, a space between two where the source
        has one: ``A[i + 1]``), for messages. The tokens are those of the file where ``c``
        is written: for an expression of macros (``BK / VEC``), the macros' names as used,
        not their definitions."""
        parts, end = [], None
        for t in _written_tokens(c):
            extent = t.extent
            start = extent.start.offset
            if end is not None and start != end:
                parts.append(" ")
            parts.append(t.spelling)
            end = extent.end.offset
        return "".join(parts) or "this target"

    def access_source(self, c, array, index) -> str:
        """The ``source`` of an access built from cursor ``c`` (:class:`simulator.ir.nodes.Load`,
        ``Store``, ``VectorLoad``, ``VectorStore``): ``array[index]`` in the source's names and
        where it is, ``tile[lx, ly + r] at k.cl:11:32`` (:meth:`source_of`)."""
        return f"{S.describe_access(array, index, self.shown_names())} at {self.source_of(c)}"

    def shown_names(self) -> dict[str, str]:
        """Each IR name shown otherwise in messages: by its C name (:attr:`source_names`),
        and that as the user wrote it (:attr:`display_names`)."""
        if not self.display_names:
            return self.source_names
        shown = dict(self.display_names)
        shown.update((ir, self.display_names.get(c, c)) for ir, c in self.source_names.items())
        return shown

    def source_of(self, c) -> str:
        """``file:line:column`` of cursor ``c``, with the helper calls it is inlined through
        (``k.cl:5:5 in sync_tile, called at k.cl:20:9``)."""
        return " in ".join([str(C.where(c, self.path)), *reversed(self.inlined_from)])

    # ------------------------------------------------------------ integers assigned again
    def reassigned(self, decl) -> bool:
        """Whether the variable or parameter declared by cursor ``decl`` is the target of an
        assignment (``=``, a compound assignment, ``++``, ``--``) anywhere in the function
        that declares it."""
        function = decl.semantic_parent
        if function is None:
            return False
        key = _key(function)
        if key not in self._assigned:
            self._assigned[key] = frozenset(assigned_in(function))
        return _key(decl) in self._assigned[key]

    def widen(self, cursors) -> None:
        """Set the bounds of every integer of :attr:`mutable_ranges` that the code of
        ``cursors`` assigns (a loop's condition, update and body, run any number of times)
        to its type's: its value there is not known statically."""
        targets = set()
        for c in cursors:
            if c is not None:
                targets |= assigned_in(c)
        for scope in self.scopes:
            for binding in scope.names.values():
                ir = self.mutable_name(binding)
                if ir is not None and binding.cursor is not None and \
                        _key(binding.cursor) in targets:
                    self.ranges[ir] = self.mutable_ranges[ir]

    def mutable_name(self, binding) -> str | None:
        """The IR integer that assignments to ``binding`` assign: an integer's own name, a
        pointer's offset; ``None`` where it is bound once."""
        value = binding.value
        if binding.kind == "int" and isinstance(value, S.Var):
            name = value.name
        elif binding.kind == "pointer" and isinstance(getattr(value, "flat", None), S.Var):
            name = value.flat.name
        else:
            return None
        if name not in self.mutable_ranges or binding.cursor is None or \
                self.mutable_decls[name] != _key(binding.cursor):
            return None        # a helper's parameter bound to the value of a variable
        return name

    def declare_mutable(self, ir: str, cursor, bounds: tuple) -> None:
        """Register ``ir`` as an integer that assignments to the variable declared by
        ``cursor`` assign, its values within ``bounds``."""
        self.mutable_ranges[ir] = bounds
        self.mutable_decls[ir] = _key(cursor)

    def join_ranges(self, *branches: dict) -> None:
        """:attr:`ranges` after code that ran one of ``branches`` (the ranges at the end of
        each): the hull of each name's bounds."""
        joined = dict(branches[0])
        for branch in branches[1:]:
            for name, (lo, hi) in branch.items():
                if name in joined:
                    joined[name] = (min(lo, joined[name][0]), max(hi, joined[name][1]))
                else:
                    joined[name] = (lo, hi)
        self.ranges = joined


def constant_condition(value: bool) -> S.Cond:
    """A condition whose value is ``value`` for every work-item (``0 == 0``, ``0 != 0``)."""
    return S.Compare("==" if value else "!=", S.Const(0), S.Const(0))


def _key(cursor) -> tuple:
    """A cursor's identity across cursor objects: its file and offset."""
    loc = cursor.location
    return (loc.file.name if loc.file is not None else None, loc.offset)


def assigned_in(cursor) -> set:
    """The declarations (keys of :func:`_key`) that the code of ``cursor`` assigns: targets of
    ``=``, compound assignments, ``++`` and ``--``."""
    from clang.cindex import CursorKind as K
    found = set()
    for c in cursor.walk_preorder():
        if c.kind == K.BINARY_OPERATOR and C.binary_operator(c) == "=" or \
                c.kind == K.COMPOUND_ASSIGNMENT_OPERATOR or \
                c.kind == K.UNARY_OPERATOR and C.unary_operator(c) in ("++", "--"):
            target = C.strip(C.children(c)[0])
            if target.kind == K.DECL_REF_EXPR and target.referenced is not None:
                found.add(_key(target.referenced))
    return found


def exits_loop(body, breaks: bool = True) -> bool:
    """Whether ``body`` (a loop's body cursor) holds a ``break`` or ``continue`` of that
    loop (not one of a loop inside it; a ``continue`` inside a ``switch`` is the loop's,
    a ``break`` there the switch's). ``breaks``: count ``break`` statements."""
    from clang.cindex import CursorKind as K
    if body.kind == K.CONTINUE_STMT or breaks and body.kind == K.BREAK_STMT:
        return True
    if body.kind in (K.FOR_STMT, K.WHILE_STMT, K.DO_STMT):
        return False
    inner = breaks and body.kind != K.SWITCH_STMT
    return any(exits_loop(c, inner) for c in C.children(body))


def declarations_read(cursor) -> set:
    """The declarations (keys of :func:`_key`) that the code of ``cursor`` names."""
    from clang.cindex import CursorKind as K
    return {_key(c.referenced) for c in cursor.walk_preorder()
            if c.kind == K.DECL_REF_EXPR and c.referenced is not None}


def _written_tokens(c):
    """The tokens of the file range where cursor ``c`` is written (its extent's expansion
    locations); ``c``'s own tokens where that range is not in one file or holds none."""
    from clang import cindex

    extent = c.extent
    start, end = extent.start, extent.end
    if start.file is not None and end.file is not None and start.file.name == end.file.name \
            and start.offset < end.offset:
        tu = c.translation_unit
        tokens = list(tu.get_tokens(extent=cindex.SourceRange.from_locations(
            cindex.SourceLocation.from_offset(tu, start.file, start.offset),
            cindex.SourceLocation.from_offset(tu, end.file, end.offset))))
        if tokens:
            return tokens
    return list(c.get_tokens())
