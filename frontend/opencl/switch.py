"""``switch`` on an integer, as the IR's ``If`` statements.

The switch's value is bound once (a ``Let``); its body is read as a sequence of sections,
each the ``case`` and ``default`` labels written together and the statements up to the next
label. Where every section but the last ends with a ``break`` (or a ``return``) and holds no
other ``break`` of the switch, the switch is an ``if``/``else if`` chain over its sections'
labels (``default`` last); a section may also end with ``continue``. Otherwise (fall-through, a ``break`` inside an ``if``) it runs as
C does with an integer flag per work-item: a section's labels matching set the flag, each
section runs where it is set, and a ``break`` clears it (the rest of the section after a
statement that may break runs where it is still set). ``continue`` inside a switch belongs
to the loop around it.

Errors: :class:`~tiletraffic.frontend.opencl.clang_ast.FrontendError` for a switch on a
float, a ``case`` label that is not an integer constant or is a range (``case 1 ... 3``),
a label inside a block or a statement of the switch's body (Duff's device), or two labels
of the same value.
"""
from __future__ import annotations

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.visitor import walk_statements

from tiletraffic.frontend.opencl import clang_ast as C
from tiletraffic.frontend.opencl.c_types import c_value, is_int_type
from tiletraffic.frontend.opencl.context import TranslationContext

SWITCH = "Switch"
"""The entry of :attr:`~TranslationContext.loops` for a switch being translated (a
``break`` there leaves the switch)."""


class Switches(TranslationContext):
    """``switch`` statements into ``If`` statements."""

    def switch_statement(self, c) -> list:
        """The IR statements of the ``switch`` statement ``c`` (see the module docstring)."""
        kids = C.children(c)
        cond, body = kids[-2], kids[-1]
        if len(kids) != 2 or not is_int_type(C.strip(cond).type):
            self.fail(c, "switch on a value that is not an integer: switch on an int, or "
                         "write if/else")
        sections = self.switch_sections(body)
        value = self.exact(cond)
        name = self.fresh("switch_value")
        self.ranges[name] = self.range_of(value)
        out: list = [S.Let(name, value)]
        matches = self.section_matches(S.Var(name), sections, cond.type)
        self.widen([body])
        chained = all(_ends_section(stmts) for _, stmts in sections[:-1]) and \
            not any(_breaks(s) for _, stmts in sections for s in _before_break(stmts))
        self.push()
        try:
            if chained:
                out += self.switch_chain(sections, matches)
            else:
                out += self.switch_flag(sections, matches)
        finally:
            self.pop()
        self.widen([body])
        return out

    def switch_sections(self, body) -> list:
        """The sections of a switch's body: (labels, statement cursors) in order, each label
        the cursor of a ``case`` or ``default`` statement."""
        from clang.cindex import CursorKind as K
        sections: list = []
        kids = C.children(body) if body.kind == K.COMPOUND_STMT else [body]
        for k in kids:
            labels = []
            while k.kind in (K.CASE_STMT, K.DEFAULT_STMT):
                labels.append(k)
                parts = C.children(k)
                if k.kind == K.CASE_STMT and len(parts) != 2:
                    self.fail(k, "case range (case a ... b): write one case label per value")
                k = parts[-1]
            if labels:
                sections.append((labels, []))
            elif not sections:
                if k.kind != K.NULL_STMT:
                    self.fail(k, "statement before the first case label of a switch: it "
                                 "never runs; remove it")
                continue
            for inner in k.walk_preorder():
                if inner.kind in (K.CASE_STMT, K.DEFAULT_STMT):
                    self.fail(inner, "case label inside a block or a statement of the "
                                     "switch: write each label at the top of its switch")
            sections[-1][1].append(k)
        return sections

    def section_matches(self, value, sections, ctype) -> list:
        """Per section, the condition under which the switch enters it (``value`` equal to
        one of its labels; ``default``: equal to none of the switch's)."""
        from clang.cindex import CursorKind as K
        seen: dict = {}
        for labels, _ in sections:
            for label in labels:
                if label.kind != K.CASE_STMT:
                    continue
                v = C.evaluate(C.children(label)[0])
                if not isinstance(v, int):
                    self.fail(label, "case label that is not an integer constant")
                v = c_value(v, ctype)
                if v in seen:
                    self.fail(label, f"duplicate case value {v}")
                seen[v] = label
        out = []
        for labels, _ in sections:
            cond = None
            for label in labels:
                if label.kind == K.CASE_STMT:
                    v = c_value(C.evaluate(C.children(label)[0]), ctype)
                    test = S.Compare("==", value, S.Const(v))
                else:
                    test = None
                    for v in seen:
                        other = S.Compare("!=", value, S.Const(v))
                        test = other if test is None else S.BoolOp("&&", test, other)
                    test = test or S.Compare("==", S.Const(0), S.Const(0))
                cond = test if cond is None else S.BoolOp("||", cond, test)
            out.append(cond)
        return out

    def switch_chain(self, sections, matches) -> list:
        """Sections that each end with ``break`` (or ``return``) as an ``if``/``else if``
        chain, the ``default`` section tested last."""
        from clang.cindex import CursorKind as K
        translated = []
        self.loops.append(SWITCH)
        try:
            for (labels, stmts), match in zip(sections, matches):
                before = dict(self.ranges)
                body = [s for k in stmts for s in self.statement(k)]
                self.ranges = before
                is_default = any(label.kind == K.DEFAULT_STMT for label in labels)
                translated.append((is_default, match, tuple(body)))
        finally:
            self.loops.pop()
        ordered = [t for t in translated if not t[0]] + [t for t in translated if t[0]]
        orelse: tuple = ()
        for is_default, match, body in reversed(ordered):
            if is_default and not orelse and len(ordered) > 1:
                orelse = body              # every other section's labels fail
                continue
            orelse = (S.If(match, body, orelse),)
        return list(orelse)

    def switch_flag(self, sections, matches) -> list:
        """The switch with fall-through: a flag per work-item, set where a section's labels
        match, cleared by ``break``; each section runs where it is set."""
        flag = self.fresh("switch_on")
        self.ranges[flag] = (0, 1)
        on = S.Compare("!=", S.Var(flag), S.Const(0))
        out: list = [S.DeclareInt(flag, S.Const(0))]
        self.loops.append(f"{SWITCH}:{flag}")
        try:
            for (_, stmts), match in zip(sections, matches):
                body = [s for k in stmts for s in self.statement(k)]
                out.append(S.If(match, (S.AssignInt(flag, S.Const(1)),)))
                if body:
                    out.append(S.If(on, _guarded(tuple(body), flag, on)))
        finally:
            self.loops.pop()
        return out

    def switch_break(self, c) -> list:
        """``break`` of the innermost switch: its flag cleared (a chained switch's
        ``break`` ends its section, where it is last)."""
        entry = self.loops[-1]
        if entry == SWITCH:
            return []
        return [S.AssignInt(entry.split(":", 1)[1], S.Const(0))]

    def innermost_loop(self) -> str | None:
        """The kind of the innermost loop around the statement (``For``, ``While``),
        switches skipped; ``None`` outside loops."""
        for entry in reversed(self.loops):
            if not entry.startswith(SWITCH):
                return entry
        return None


def _ends_section(stmts) -> bool:
    """Whether a section's last statement is a ``break``, a ``continue`` or a ``return``
    (it does not fall through into the next)."""
    from clang.cindex import CursorKind as K
    return bool(stmts) and stmts[-1].kind in (K.BREAK_STMT, K.CONTINUE_STMT, K.RETURN_STMT)


def _before_break(stmts) -> list:
    """A section's statements without the ``break`` that ends it, if one does."""
    from clang.cindex import CursorKind as K
    return stmts[:-1] if stmts and stmts[-1].kind == K.BREAK_STMT else list(stmts)


def _breaks(cursor) -> bool:
    """Whether the code of ``cursor`` holds a ``break`` of the switch around it (not of
    a loop or a switch inside it)."""
    from clang.cindex import CursorKind as K
    if cursor.kind == K.BREAK_STMT:
        return True
    if cursor.kind in (K.FOR_STMT, K.WHILE_STMT, K.DO_STMT, K.SWITCH_STMT):
        return False
    return any(_breaks(k) for k in C.children(cursor))


def _clears(stmt, flag: str) -> bool:
    """Whether ``stmt`` may clear the switch's ``flag`` (holds its ``break``)."""
    return any(isinstance(s, S.AssignInt) and s.name == flag for s in walk_statements([stmt]))


def _guarded(stmts: tuple, flag: str, on: S.Cond) -> tuple:
    """``stmts`` with the statements after one that may clear ``flag`` run only where it is
    still set (inside ``If`` bodies too)."""
    out: list = []
    for i, s in enumerate(stmts):
        if isinstance(s, S.AssignInt) and s.name == flag:
            return tuple(out + [s])               # a break: the rest never runs
        if isinstance(s, S.If) and _clears(s, flag):
            out.append(S.If(s.cond, _guarded(s.then, flag, on), _guarded(s.orelse, flag, on)))
        else:
            out.append(s)
        if _clears(s, flag) and stmts[i + 1:]:
            out.append(S.If(on, _guarded(stmts[i + 1:], flag, on)))
            return tuple(out)
    return tuple(out)

