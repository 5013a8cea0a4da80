"""The one traversal of the IR (:mod:`simulator.ir.nodes`): every walk over a schedule's
statements and expressions goes through here.

A node's children are read from its dataclass fields (:func:`children`), so a new node type
is traversed without any change here: its fields that hold statements, statement tuples,
integer or float expressions or conditions are its children. Two ways to walk:

- :class:`Visitor`: ``visit(node)`` calls ``visit_<ClassName>(node)`` where the subclass
  defines it, else :meth:`Visitor.generic_visit`, which visits the children in field order.
  A subclass collects what it needs in its own attributes;
- :class:`Transformer`: rebuilds a statement tree: ``visit_<ClassName>(stmt)`` returns the
  statements that replace ``stmt`` (a tuple, possibly empty) or ``None`` to keep it and
  rebuild inside it (the bodies of ``If`` and ``For``, and of any compound statement).

:func:`walk` and :func:`walk_statements` give the nodes in pre-order for the simple
searches (``any(isinstance(s, Barrier) for s in walk_statements(body))``).
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Callable, Iterator

from tiletraffic.simulator.ir.expressions import Cond, FloatExpr, IntExpr, Stmt

Node = Stmt | IntExpr | FloatExpr | Cond
NODE_TYPES = (Stmt, IntExpr, FloatExpr, Cond)


def _is_body(value) -> bool:
    return isinstance(value, tuple) and bool(value) and all(isinstance(v, Stmt) for v in value)


def children(node, *, arrays: bool = False) -> tuple:
    """The IR nodes directly under ``node``, in field order: statements of its bodies and the
    expressions and conditions it holds (tuples of them flattened). Arrays, names and
    numbers are not nodes. ``()`` for a leaf or a value that is no dataclass.

    With ``arrays``, also the arrays ``node`` names (its field values that are dataclasses
    but no nodes: ``GlobalArray``, ``LocalArray``, ``PrivateArray``), each where its field
    is; the children of an array are the constants of its ``dims`` (none for a
    ``GlobalArray``, whose extents are parameter names)."""
    names = _field_names(node)
    if names is None:
        return ()
    out = []
    for name in names:
        value = getattr(node, name)
        for v in (value if isinstance(value, tuple) else (value,)):
            # ``arrays and`` before the call: a nodes-only walk makes no call per value
            if isinstance(v, NODE_TYPES) or (arrays and _is_array(v)):
                out.append(v)
    return tuple(out)


_FIELD_NAMES: dict[type, tuple[str, ...] | None] = {}


def _field_names(node) -> tuple[str, ...] | None:
    """The field names of dataclass instance ``node`` in field order (looked up once per
    class); ``None`` for a value that is no dataclass instance."""
    cls = type(node)
    try:
        return _FIELD_NAMES[cls]
    except KeyError:
        pass
    if isinstance(node, type):      # a dataclass itself (not an instance): not cached
        return tuple(f.name for f in dataclasses.fields(node)) \
            if dataclasses.is_dataclass(node) else None
    names = tuple(f.name for f in dataclasses.fields(node)) \
        if dataclasses.is_dataclass(node) else None
    _FIELD_NAMES[cls] = names
    return names


def _is_array(value) -> bool:
    """Whether ``value`` is a dataclass instance (outside the nodes: an array)."""
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def bodies(stmt: Stmt) -> dict[str, tuple[Stmt, ...]]:
    """The statement tuples of a compound statement by field name (``If``: ``then`` and
    ``orelse``; ``For``: ``body``); ``{}`` for a simple statement. An empty ``orelse`` is
    included, as a body with no statements."""
    if _field_names(stmt) is None:
        return {}
    out = {}
    for name in _body_field_names(stmt if isinstance(stmt, type) else type(stmt)):
        value = getattr(stmt, name)
        if isinstance(value, tuple) and (not value or _is_body(value)):
            out[name] = value
    return out


_BODY_FIELDS: dict[type, tuple[str, ...]] = {}


def _body_field_names(cls: type) -> tuple[str, ...]:
    """The fields of dataclass ``cls`` annotated as a tuple of statements, in field order
    (looked up once per class)."""
    try:
        return _BODY_FIELDS[cls]
    except KeyError:
        names = tuple(f.name for f in dataclasses.fields(cls)
                      if "Stmt" in str(f.type) and "tuple" in str(f.type))
        _BODY_FIELDS[cls] = names
        return names


def with_bodies(stmt: Stmt, **new: tuple[Stmt, ...]) -> Stmt:
    """``stmt`` with the named bodies replaced (``with_bodies(loop, body=...)``); the same
    object when every named body is unchanged."""
    if all(getattr(stmt, k) is v for k, v in new.items()):
        return stmt
    return dataclasses.replace(stmt, **new)


def walk(node, *, arrays: bool = False) -> Iterator:
    """``node`` and every IR node under it, in pre-order (with ``arrays``, also the arrays
    the nodes name and their dims' constants: :func:`children`)."""
    if arrays:
        stack = [node]
        while stack:
            current = stack.pop()
            yield current
            stack.extend(reversed(children(current, arrays=True)))
        return
    # The nodes-only walk inlines children(): the fields of each node, last first, pushed
    # onto the stack (so that they come off it in field order).
    stack = [node]
    pop, push = stack.pop, stack.append
    while stack:
        current = pop()
        yield current
        names = _REVERSED_FIELD_NAMES.get(type(current), False)
        if names is False:
            names = _field_names(current)
            names = None if names is None else names[::-1]
            if not isinstance(current, type):
                _REVERSED_FIELD_NAMES[type(current)] = names
        if not names:
            continue
        for name in names:
            value = getattr(current, name)
            if isinstance(value, tuple):
                for v in reversed(value):
                    if isinstance(v, NODE_TYPES):
                        push(v)
            elif isinstance(value, NODE_TYPES):
                push(value)


_REVERSED_FIELD_NAMES: dict[type, tuple[str, ...] | None] = {}


def walk_statements(stmts) -> Iterator[Stmt]:
    """Every statement of a statement tuple and of the bodies under it, in pre-order
    (expressions are not entered)."""
    stack = list(reversed(tuple(stmts)))
    while stack:
        current = stack.pop()
        yield current
        nested = [s for body in bodies(current).values() for s in body]
        stack.extend(reversed(nested))


class Visitor:
    """Dispatch on the node's class name: ``visit_For``, ``visit_Load``, ...; a node without
    its method goes to :meth:`generic_visit`. The return value of ``visit`` is that of the
    method called (``None`` from :meth:`generic_visit`)."""

    def visit(self, node):
        method = getattr(self, "visit_" + type(node).__name__, None)
        return method(node) if method is not None else self.generic_visit(node)

    def generic_visit(self, node) -> None:
        """Visit every child of ``node`` in field order."""
        for child in children(node):
            self.visit(child)

    def visit_all(self, nodes) -> None:
        """Visit each node of an iterable (a body) in order."""
        for node in nodes:
            self.visit(node)


class Transformer:
    """Rebuild a statement tree. ``visit_<ClassName>(stmt)`` returns the replacement
    statements (a tuple) or ``None`` to keep ``stmt`` and transform its bodies."""

    def replacement(self, stmt: Stmt) -> tuple | None:
        """The statements that replace ``stmt``, or ``None`` to keep it: its
        ``visit_<ClassName>`` method's answer, ``None`` where there is none."""
        method = getattr(self, "visit_" + type(stmt).__name__, None)
        return method(stmt) if method is not None else None

    def transform(self, stmts) -> tuple[Stmt, ...]:
        """The statements of ``stmts`` after the transformation, as a tuple."""
        out: list[Stmt] = []
        for stmt in stmts:
            replaced = self.replacement(stmt)
            if replaced is not None:
                out.extend(replaced)
                continue
            nested = bodies(stmt)
            if nested:
                stmt = with_bodies(stmt, **{k: self.transform(v) for k, v in nested.items()})
            out.append(stmt)
        return tuple(out)


class _FunctionTransformer(Transformer):
    def __init__(self, fn: Callable[[Stmt], tuple | None]) -> None:
        self.replacement = fn


def rewrite(stmts, fn: Callable[[Stmt], tuple | None]) -> tuple[Stmt, ...]:
    """Rebuild a statement tree; ``fn(stmt)`` returns replacement statements or ``None``
    (keep the statement and rewrite inside its bodies)."""
    return _FunctionTransformer(fn).transform(stmts)


class Rebuilder:
    """Rebuild statements and expressions down to their leaves, each node once (a node that
    stands in several places is rebuilt once and shared again). :meth:`leaf` gives a node's
    replacement, or ``None`` to rebuild its fields; :meth:`changed` may add to the field
    changes of a node whose fields were rebuilt. Tuples are rebuilt element by element;
    values that are not dataclass instances (numbers, strings, classes) are kept."""

    def __init__(self) -> None:
        self.memo: dict[int, object] = {}

    def __call__(self, node):
        key = id(node)
        if key not in self.memo:
            self.memo[key] = self._rebuild(node)
        return self.memo[key]

    def leaf(self, node):
        """``node``'s replacement, or ``None`` to rebuild its fields (the default)."""
        return None

    def changed(self, node, changes: dict) -> dict:
        """The field changes of ``node`` (``changes``: its rebuilt fields that differ)."""
        return changes

    def _rebuild(self, node):
        if isinstance(node, tuple):
            return tuple(self(v) for v in node)
        new = self.leaf(node)
        if new is not None:
            return new
        if not dataclasses.is_dataclass(node) or isinstance(node, type):
            return node
        changes = {}
        for f in dataclasses.fields(node):
            value = getattr(node, f.name)
            rebuilt = self(value)
            if rebuilt is not value:
                changes[f.name] = rebuilt
        changes = self.changed(node, changes)
        return dataclasses.replace(node, **changes) if changes else node


REMEMBERED_MAX = 4096
"""The most nodes a :func:`remembered` function holds results for before it starts again."""


def remembered(function: Callable) -> Callable:
    """``function(node)`` remembered per node by identity (the node kept beside its result,
    so that a later object with the same ``id`` misses), for immutable IR nodes and tuples of
    them; a list is computed each time, since it may change. At most
    :data:`REMEMBERED_MAX` results are held at once."""
    seen: dict[int, tuple[object, object]] = {}

    @functools.wraps(function)
    def wrapper(node):
        if isinstance(node, list):
            return function(node)
        hit = seen.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1]
        value = function(node)
        if len(seen) >= REMEMBERED_MAX:
            seen.clear()
        seen[id(node)] = (node, value)
        return value
    return wrapper
