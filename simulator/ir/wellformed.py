"""Static checks that a hand-written schedule is well formed, before it runs or is rendered.

The simulator executes a schedule with one flat table of names and the code generator
renders it into C with block scopes, so a schedule that is not well formed could run in
one and fail (or differ) in the other. :func:`check_well_formed` walks the statement tree
once and refuses, naming the statement's value:

- launch geometry: 1 to 3 dimensions, positive work-group and NDRange sizes, NDRange a
  multiple of the work-group size in every dimension;
- declarations: identifiers; no name declared twice among parameters, global and local
  arrays, named constants and the names a block can see (C forbids a redefinition, and a
  shadowing name would differ between the simulator and C); global array shapes name
  parameters; named constants have one value; local array extents are positive;
- uses: every :class:`Var` bound by an enclosing :class:`Let`, :class:`DeclareInt` or
  :class:`For` earlier in its block (C scope: a name bound inside an ``if`` or a loop is not
  seen after it), every private float declared before use, every :class:`Param` an integer
  parameter and every :class:`FloatParam` a parameter, every array one of
  the schedule's, no store into an input (``const``) array, work-item ids within the
  NDRange's dimensions, constant loop steps positive;
- integers and loops: every :class:`AssignInt` to an integer a :class:`DeclareInt`
  declares there (a :class:`Let` or a loop variable is bound once), :class:`Break` and
  :class:`Continue` only in a :class:`While` loop's body (not in a :class:`For` inside it).

Errors: :class:`MalformedScheduleError` (a ``ValueError``) with the first problem and the
number of others.
"""
from __future__ import annotations

import keyword

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.sequence import KernelSequence
from tiletraffic.simulator.ir.visitor import Visitor, walk

INT_OPS = frozenset(S.INT_OPS)
COMPARE_OPS = frozenset(("<", "<=", ">", ">=", "==", "!="))
WORK_ITEM_ID_KINDS = frozenset(("local", "group", "global"))


class MalformedScheduleError(ValueError):
    """A schedule that the simulator and the code generator cannot both take as written."""


def check_well_formed(schedule: S.Schedule) -> None:
    """Raise :class:`MalformedScheduleError` naming the first problem of ``schedule`` (of
    each kernel of a :class:`simulator.ir.sequence.KernelSequence`, in launch order)."""
    if isinstance(schedule, KernelSequence):
        for kernel in schedule.kernels:
            check_well_formed(kernel)
        return
    problems = _Checker(schedule).problems
    if problems:
        more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
        raise MalformedScheduleError(f"schedule {schedule.family!r}: {problems[0]}{more}")


_SCALARS = ("char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "float",
            "double", "half")
OPENCL_C_RESERVED = frozenset((
    # C99 keywords (ISO/IEC 9899:1999 §6.4.1)
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
    "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch",
    "typedef", "union", "unsigned", "void", "volatile", "while", "_Bool", "_Complex",
    "_Imaginary",
    # OpenCL C 1.2 §6.1 (types) and §6.5-6.7 (qualifiers), and the reserved words of §6.1.4
    "bool", "half", "uchar", "ushort", "uint", "ulong", "size_t", "ptrdiff_t", "intptr_t",
    "uintptr_t", "image1d_t", "image1d_array_t", "image1d_buffer_t", "image2d_t",
    "image2d_array_t", "image3d_t", "sampler_t", "event_t", "complex", "imaginary", "quad",
    "__global", "global", "__local", "local", "__constant", "constant", "__private",
    "private", "__kernel", "kernel", "__read_only", "read_only", "__write_only",
    "write_only", "__read_write", "read_write", "__attribute__", "pipe", "uniform",
    *(f"{t}{n}" for t in _SCALARS for n in (2, 3, 4, 8, 16)),
))
"""Words an OpenCL C kernel cannot use as a name: C99's keywords and OpenCL C's types,
qualifiers and reserved words (vector types included)."""


def _identifier(name) -> bool:
    """A name usable in both the generated OpenCL C and the expressions of data files:
    an ASCII identifier that is neither reserved in OpenCL C nor a Python keyword (the
    expression language's ``and``, ``or``, ``not``)."""
    return (isinstance(name, str) and name.isascii() and name.isidentifier()
            and not keyword.iskeyword(name) and name not in OPENCL_C_RESERVED)


_KINDS = ((S.Stmt, "a statement"), (S.IntExpr, "an integer expression"),
          (S.Cond, "a condition (build one with < <= > >= .eq .ne & | ~)"),
          (S.FloatExpr, "a float expression"))
"""The kinds of IR node, as the problem of a value that is not one where one is expected
names them."""


class _Checker(Visitor):
    """Collects :attr:`problems` of a schedule, in the order the statement tree is read.

    While a block is visited, ``ints`` holds the integer names (Let, For) and ``privates``
    the private floats and arrays its statements can see."""

    def __init__(self, sch: S.Schedule):
        self.sch = sch
        self.problems: list[str] = []
        self.dims = 0
        self._geometry()
        self.params = self._params()
        self.arrays = self._arrays()
        self.globals = set(self.params) | set(self.arrays)
        self.constants: dict[str, int] = {}
        self._collect_constants()
        self.ints: set[str] = set()
        self.privates: set[str] = set()
        self.mutables: set[str] = set()
        """The integer names of ``ints`` declared by a DeclareInt (assigned by AssignInt)."""
        self.loops: list[str] = []
        """The kinds of the loops around the statement visited (``For``, ``While``),
        innermost last."""
        self._block(sch.body, ints=set(), privates=set())

    def add(self, problem: str) -> None:
        self.problems.append(problem)

    # ----------------------------------------------------------------- declarations
    def _geometry(self) -> None:
        local, glob = tuple(self.sch.local_size), tuple(self.sch.global_size)
        sizes_ok = all(isinstance(v, int) and not isinstance(v, bool) and v > 0
                       for v in local + glob)
        if not 1 <= len(local) <= 3 or len(glob) != len(local) or not sizes_ok:
            self.add(f"local_size {local} and global_size {glob} must be 1 to 3 positive "
                     "integers each, as many of one as of the other")
            return
        self.dims = len(local)
        for d, (g, l) in enumerate(zip(glob, local)):
            if g % l:
                self.add(f"global_size {g} in dimension {d} is not a multiple of the "
                         f"work-group size {l}")
        if not _identifier(self.sch.kernel_name):
            self.add(f"kernel_name {self.sch.kernel_name!r} is not a C identifier or is reserved in OpenCL C")

    def _params(self) -> dict[str, int]:
        params: dict[str, int] = {}
        for entry in self.sch.params:
            if not (isinstance(entry, tuple) and len(entry) == 2):
                self.add(f"params entry {entry!r} is not a (name, value) pair")
                continue
            name, value = entry
            if not _identifier(name) or name in params:
                self.add(f"parameter name {name!r} is not a C identifier or is reserved in OpenCL C or is given twice")
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                self.add(f"parameter {name} = {value!r} is not an integer (a float only for "
                         "a float argument, FloatParam)")
            params[name] = value
        return params

    def _arrays(self) -> dict[str, object]:
        arrays: dict[str, object] = {}
        for a in (*self.sch.arrays, *self.sch.local_arrays):
            if not isinstance(a, (S.GlobalArray, S.LocalArray)):
                self.add(f"{a!r} is not a GlobalArray or LocalArray")
                continue
            if not _identifier(a.name) or a.name in arrays or a.name in self.params:
                self.add(f"array name {a.name!r} is not a C identifier or is reserved in OpenCL C or is declared twice")
            arrays[a.name] = a
            if isinstance(a, S.GlobalArray):
                if a not in self.sch.arrays:
                    self.add(f"global array {a.name} is listed among the local arrays")
                if a.role not in ("in", "out", "inout"):
                    self.add(f"array {a.name} has role {a.role!r}, not 'in', 'out' or "
                             "'inout'")
                missing = [s for s in a.shape if s not in self.params]
                floats = [s for s in a.shape if isinstance(self.params.get(s), float)]
                if floats:
                    self.add(f"array {a.name} has shape {a.shape}, but {floats} are float "
                             "parameters, not integers")
                if missing:
                    self.add(f"array {a.name} has shape {a.shape}, but {missing} are not "
                             f"parameters (parameters: {sorted(self.params)})")
                for extent in a.shape:
                    value = self.params.get(extent)
                    if isinstance(value, int) and not isinstance(value, bool) and value < 1:
                        self.add(f"parameter {extent} = {value} is an extent of array "
                                 f"{a.name}: it must be at least 1")
            else:
                if a not in self.sch.local_arrays:
                    self.add(f"local array {a.name} is listed among the global arrays")
                bad = [d for d in a.dims if not (isinstance(d, S.Const) and d.value > 0)]
                if bad:
                    self.add(f"local array {a.name} has extents {a.dims}: each must be a "
                             "positive Const")
        return arrays

    def _collect_constants(self) -> None:
        """Every named Const (rendered as a #define, so visible everywhere): of the
        statements, of the arrays they name and of the local arrays' extents."""
        nodes = [n for s in self.sch.body for n in walk(s, arrays=True)]
        nodes += [n for a in self.sch.local_arrays for d in a.dims for n in walk(d)]
        for node in nodes:
            if isinstance(node, S.Const):
                self._constant(node)

    def _constant(self, node: S.Const) -> None:
        if isinstance(node.value, bool) or not isinstance(node.value, int):
            self.add(f"Const value {node.value!r} is not an integer")
        elif node.name is not None:
            if not _identifier(node.name) or node.name in self.globals:
                self.add(f"constant name {node.name!r} is not a C identifier or is reserved in OpenCL C or is also "
                         "a parameter or array")
            elif self.constants.setdefault(node.name, node.value) != node.value:
                self.add(f"constant {node.name} has two values, "
                         f"{self.constants[node.name]} and {node.value}")

    def _declare(self, name: str, what: str, visible: set[str]) -> None:
        if not _identifier(name):
            self.add(f"{what} name {name!r} is not a C identifier or is reserved in OpenCL C")
        elif name in visible or name in self.globals or name in self.constants:
            self.add(f"{what} {name!r} is declared where that name is already visible")

    def generic_visit(self, node) -> None:
        """A node of a class this checker does not know, named with its kind."""
        for kind, what in _KINDS:
            if isinstance(node, kind):
                self.add(f"{node!r} is not {what}")
                return

    def _expect(self, node, kind: type) -> None:
        """Visit ``node`` if it is of ``kind``, else name it as no node of that kind."""
        if isinstance(node, kind):
            self.visit(node)
        else:
            self.add(f"{node!r} is not {dict(_KINDS)[kind]}")

    # --------------------------------------------------------------------- integers
    def _int(self, e) -> None:
        self._expect(e, S.IntExpr)

    def visit_Const(self, e: S.Const) -> None:
        pass  # checked by _collect_constants

    def visit_Param(self, e: S.Param) -> None:
        if e.name not in self.params:
            self.add(f"Param({e.name!r}) is not a parameter of the schedule "
                     f"(parameters: {sorted(self.params)})")
        elif isinstance(self.params[e.name], float):
            self.add(f"Param({e.name!r}) reads the float parameter {e.name} = "
                     f"{self.params[e.name]!r} as an integer: read it with FloatParam")

    def visit_Var(self, e: S.Var) -> None:
        if e.name not in self.ints:
            self.add(f"Var({e.name!r}) is used where no Let, DeclareInt or For binds it "
                     f"(bound there: {sorted(self.ints) or 'none'})")

    def visit_WorkItemId(self, e: S.WorkItemId) -> None:
        if e.kind not in WORK_ITEM_ID_KINDS or not (isinstance(e.dim, int)
                                                    and 0 <= e.dim < max(self.dims, 1)):
            self.add(f"{e.kind} id of dimension {e.dim!r}: the NDRange has "
                     f"{self.dims} dimension(s)")

    def visit_BinOp(self, e: S.BinOp) -> None:
        if e.op not in INT_OPS:
            self.add(f"integer operator {e.op!r} is not one of {' '.join(S.INT_OPS)}")
        self._int(e.left)
        self._int(e.right)

    def visit_Min(self, e: S.Min) -> None:
        self._int(e.left)
        self._int(e.right)

    def visit_IntSelect(self, e: S.IntSelect) -> None:
        self._cond(e.cond)
        self._int(e.then)
        self._int(e.orelse)

    def visit_Wrap(self, e: S.Wrap) -> None:
        if not isinstance(e.signed, bool):
            self.add(f"Wrap: signed = {e.signed!r} is not a bool")
        self._int(e.operand)

    def _cond(self, c) -> None:
        self._expect(c, S.Cond)

    def visit_Compare(self, c: S.Compare) -> None:
        if c.op not in COMPARE_OPS:
            self.generic_visit(c)
            return
        self._int(c.left)
        self._int(c.right)

    def visit_BoolOp(self, c: S.BoolOp) -> None:
        if c.op not in ("&&", "||"):
            self.generic_visit(c)
            return
        self._cond(c.left)
        self._cond(c.right)

    def visit_Not(self, c: S.Not) -> None:
        self._cond(c.operand)

    def visit_FloatCompare(self, c: S.FloatCompare) -> None:
        self._float(c.left)
        self._float(c.right)

    def visit_FloatTest(self, c: S.FloatTest) -> None:
        self._float(c.operand)

    # ------------------------------------------------------------------- floats
    def _array(self, array, index) -> None:
        known = self.arrays.get(getattr(array, "name", None))
        if known is not None and known is not array:  # an equal copy is the same array
            same = type(known) is type(array) and (
                (known.shape, known.role) == (array.shape, array.role)
                if isinstance(array, S.GlobalArray)
                else [d.value for d in known.dims] == [d.value for d in array.dims])
            known = known if same else None
        if known is None:
            self.add(f"array {getattr(array, 'name', array)!r} is not one of the schedule's "
                     f"arrays ({', '.join(self.arrays) or 'none'})")
        for i in index:
            self._int(i)

    def _float(self, e) -> None:
        self._expect(e, S.FloatExpr)

    def _operands(self, e: S.FloatExpr) -> None:
        for operand in S.float_operands(e):
            self._float(operand)

    def visit_Load(self, e: S.Load) -> None:
        self._array(e.array, e.index)

    def visit_PrivateElem(self, e: S.PrivateElem) -> None:
        if e.array.name not in self.privates:
            self.add(f"private array {e.array.name!r} is read where no "
                     "DeclarePrivateArray declares it")
        for i in e.index:
            self._int(i)

    def visit_Private(self, e: S.Private) -> None:
        if e.name not in self.privates:
            self.add(f"private {e.name!r} is read where no DeclareFloat declares it")

    def visit_FBinOp(self, e: S.FBinOp) -> None:
        if e.op not in S.FLOAT_OPS:
            self.generic_visit(e)
            return
        self._operands(e)

    def visit_FCall(self, e: S.FCall) -> None:
        self._operands(e)

    def visit_FNeg(self, e: S.FNeg) -> None:
        self._operands(e)

    def visit_Select(self, e: S.Select) -> None:
        self._cond(e.cond)
        self._operands(e)

    def visit_FConst(self, e: S.FConst) -> None:
        pass

    def visit_IntToFloat(self, e: S.IntToFloat) -> None:
        self._int(e.value)

    def visit_FloatParam(self, e: S.FloatParam) -> None:
        if e.name not in self.params:
            self.add(f"FloatParam({e.name!r}) is not a parameter of the schedule "
                     f"(parameters: {sorted(self.params)})")

    # --------------------------------------------------------------- statements
    def _block(self, stmts, ints: set[str], privates: set[str]) -> None:
        """Check a block with the names ``ints`` and ``privates`` visible; the names it
        declares end with it (a C block)."""
        outer = self.ints, self.privates, self.mutables
        self.ints, self.privates, self.mutables = set(ints), set(privates), set(self.mutables)
        for s in stmts:
            self._expect(s, S.Stmt)
        self.ints, self.privates, self.mutables = outer

    def visit_Let(self, s: S.Let) -> None:
        self._int(s.value)
        self._declare(s.name, "Let", self.ints | self.privates)
        self.ints.add(s.name)

    def visit_DeclareInt(self, s: S.DeclareInt) -> None:
        if s.value is not None:
            self._int(s.value)
        self._declare(s.name, "DeclareInt", self.ints | self.privates)
        self.ints.add(s.name)
        self.mutables.add(s.name)

    def visit_AssignInt(self, s: S.AssignInt) -> None:
        self._int(s.value)
        if s.name not in self.ints:
            self.add(f"AssignInt to {s.name!r}, which no DeclareInt declares there")
        elif s.name not in self.mutables:
            self.add(f"AssignInt to {s.name!r}, which a Let or For binds (bound once): "
                     "declare it with DeclareInt")

    def visit_DeclareFloat(self, s: S.DeclareFloat) -> None:
        self._declare(s.name, "DeclareFloat", self.ints | self.privates)
        self.privates.add(s.name)

    def visit_DeclarePrivateArray(self, s: S.DeclarePrivateArray) -> None:
        self._declare(s.array.name, "DeclarePrivateArray", self.ints | self.privates)
        self.privates.add(s.array.name)

    def visit_Assign(self, s: S.Assign) -> None:
        for i in s.index:
            self._int(i)
        if s.name not in self.privates:
            self.add(f"{type(s).__name__} to {s.name!r}, which no DeclareFloat "
                     "declares there")
        self._float(s.value)

    visit_Accumulate = visit_Assign

    def visit_Shuffle(self, s: S.Shuffle) -> None:
        self._int(s.lane)
        if s.name not in self.privates:
            self.add(f"Shuffle to {s.name!r}, which no DeclareFloat declares there")
        self._float(s.value)

    def _no_store_into_input(self, s) -> None:
        if getattr(s.array, "role", None) == "in":
            self.add(f"store into input array {s.array.name} (inputs are const; "
                     "give it role 'inout')")

    def visit_Store(self, s: S.Store) -> None:
        self._array(s.array, s.index)
        self._no_store_into_input(s)
        self._float(s.value)

    def visit_VectorLoad(self, s: S.VectorLoad) -> None:
        self._array(s.array, s.index)
        for name in s.names:
            if name not in self.privates:
                self.add(f"VectorLoad into {name!r}, which no DeclareFloat declares "
                         "there")

    def visit_VectorStore(self, s: S.VectorStore) -> None:
        self._array(s.array, s.index)
        self._no_store_into_input(s)
        for v in s.values:
            self._float(v)

    def visit_If(self, s: S.If) -> None:
        self._cond(s.cond)
        self._block(s.then, self.ints, self.privates)
        self._block(s.orelse, self.ints, self.privates)

    def visit_For(self, s: S.For) -> None:
        for bound in (s.start, s.stop, s.step):
            self._int(bound)
        if isinstance(s.step, S.Const) and s.step.value <= 0:
            self.add(f"loop {s.var} has step {s.step.value}; it must be positive")
        self._declare(s.var, "For variable", self.ints | self.privates)
        self.loops.append("For")
        self._block(s.body, self.ints | {s.var}, self.privates)
        self.loops.pop()

    def visit_While(self, s: S.While) -> None:
        self._cond(s.cond)
        self.loops.append("While")
        self._block(s.body, self.ints, self.privates)
        self.loops.pop()
        self._block(s.update, self.ints, self.privates)

    def visit_Break(self, s) -> None:
        if not self.loops:
            self.add(f"{type(s).__name__} outside a While loop")
        elif self.loops[-1] != "While":
            self.add(f"{type(s).__name__} in a For loop's body: the For loop runs its full "
                     "range (write the loop as a While)")

    visit_Continue = visit_Break

    def visit_Barrier(self, s: S.Barrier) -> None:
        pass

    def visit_Return(self, s: S.Return) -> None:
        pass
