"""IR rewrites applied to a parsed kernel body: the C spellings of one IR statement folded
back into it.

- a ``float4`` temporary loaded in one vector access and copied out component by component
  (``const float4 v = vload4(...); a = v.x; b = v.y; ...``) becomes one
  :class:`VectorLoad` into the targets;
- a ``float4`` temporary filled component by component and stored in one vector access
  becomes one :class:`VectorStore` of the values;
- a private array followed by a loop nest that zero-fills every element becomes a
  :class:`DeclarePrivateArray` with ``init=0.0``.

Each applies only where the temporary is read nowhere else before it is declared again, so
the rewritten body moves the same values through the same accesses.
"""
from __future__ import annotations

from typing import Mapping

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.visitor import bodies, walk, walk_statements, with_bodies


def simplify(body: tuple, vectors: Mapping[str, str] | None = None) -> tuple:
    """``body`` with the rewrites of the module docstring applied at every depth;
    ``vectors``: the vector each private float that is a vector's component belongs to
    (component name -> vector name; only those are temporaries to fold)."""
    return _block(tuple(body), dict(vectors or {}))


def _block(stmts: tuple, vectors: dict) -> tuple:
    stmts = tuple(_nested(s, vectors) for s in stmts)
    out: list = []
    i = 0
    while i < len(stmts):
        for rule in (_vector_load, _vector_store, _zero_fill):
            got = rule(stmts, i, vectors)
            if got is not None:
                replacement, used = got
                out.extend(replacement)
                i += used
                break
        else:
            out.append(stmts[i])
            i += 1
    return tuple(out)


def _nested(s, vectors: dict):
    """``s`` with its bodies (an ``If``'s, a ``For``'s) simplified."""
    nested = bodies(s)
    return with_bodies(s, **{k: _block(v, vectors) for k, v in nested.items()}) \
        if nested else s


def _declares(stmts, i, vectors: dict, width_max=4):
    """Names of the run of uninitialised DeclareFloat of one vector's components starting
    at ``i``."""
    names = []
    while i + len(names) < len(stmts) and len(names) < width_max:
        s = stmts[i + len(names)]
        if not (isinstance(s, S.DeclareFloat) and s.init is None and s.name in vectors):
            break
        if names and vectors[s.name] != vectors[names[0]]:
            break
        names.append(s.name)
    return names


def _vector_load(stmts, i, vectors):
    names = _declares(stmts, i, vectors)
    w = len(names)
    if w not in S.VECTOR_WIDTHS or i + 2 * w + 1 > len(stmts):
        return None
    load = stmts[i + w]
    if not (isinstance(load, S.VectorLoad) and load.names == tuple(names)):
        return None
    copies = stmts[i + w + 1:i + w + 1 + w]
    if len(copies) != w or not all(
            isinstance(c, S.Assign) and not c.index and isinstance(c.value, S.Private)
            and c.value.name == n for c, n in zip(copies, names)):
        return None
    targets = tuple(c.name for c in copies)
    if len(set(targets)) != w or set(targets) & set(names) or \
            _read_later(stmts[i + 2 * w + 1:], set(names)):
        return None
    return [S.VectorLoad(targets, load.array, load.index, aligned=load.aligned,
                         source=load.source)], 2 * w + 1


def _vector_store(stmts, i, vectors):
    names = _declares(stmts, i, vectors)
    w = len(names)
    if w not in S.VECTOR_WIDTHS:
        return None
    fills = stmts[i + w:i + 2 * w]
    if len(fills) != w or not all(isinstance(f, S.Assign) and not f.index for f in fills):
        return None
    values = {f.name: f.value for f in fills}
    if set(values) != set(names) or any(_reads(v, set(names)) for v in values.values()):
        return None
    if i + 2 * w >= len(stmts):
        return None
    store = stmts[i + 2 * w]
    if not (isinstance(store, S.VectorStore) and store.values and all(
            isinstance(v, S.Private) and v.name == n for v, n in zip(store.values, names))):
        return None
    if _read_later(stmts[i + 2 * w + 1:], set(names)):
        return None
    return [S.VectorStore(store.array, store.index, tuple(values[n] for n in names),
                          aligned=store.aligned, source=store.source)], 2 * w + 1


def _zero_fill(stmts, i, vectors):
    s = stmts[i]
    if not (isinstance(s, S.DeclarePrivateArray) and s.init is None) or i + 1 >= len(stmts):
        return None
    loop, dims, loop_vars = stmts[i + 1], s.array.dims, []
    node = loop
    for d in dims:
        if not (isinstance(node, S.For) and _const(node.start) == 0 and
                _const(node.stop) == d.value and _const(node.step) == 1 and
                len(node.body) == 1):
            return None
        loop_vars.append(node.var)
        node = node.body[0]
    if not (isinstance(node, S.Assign) and node.name == s.array.name and
            isinstance(node.value, S.FConst) and node.value.value == 0.0 and
            all(isinstance(x, S.Var) and x.name == v for x, v in zip(node.index, loop_vars))
            and len(node.index) == len(dims)):
        return None
    return [S.DeclarePrivateArray(s.array, 0.0)], 2


def _const(e):
    return e.value if isinstance(e, S.Const) else None


def _reads(e, names: set) -> bool:
    """Whether the float expression ``e`` reads a private float of ``names``."""
    return any(isinstance(n, S.Private) and n.name in names for n in walk(e))


def _read_later(stmts, names: set) -> bool:
    """Whether a statement of ``stmts`` reads one of ``names`` before all are declared
    again."""
    live = set(names)
    for s in stmts:
        if not live:
            return False
        if isinstance(s, S.DeclareFloat) and s.name in live:
            live.discard(s.name)
            continue
        if _stmt_reads(s, live):
            return True
    return False


def _stmt_reads(s, names: set) -> bool:
    """Whether ``s`` or a statement in its bodies reads a private float of ``names``."""
    return any(_own_reads(x, names) for x in walk_statements((s,)))


def _own_reads(s, names: set) -> bool:
    """Whether the statement ``s`` itself (not its bodies) reads one of ``names``."""
    if isinstance(s, (S.Assign, S.Accumulate)):
        return _reads(s.value, names) or (isinstance(s, S.Accumulate) and s.name in names)
    if isinstance(s, S.Store):
        return _reads(s.value, names)
    if isinstance(s, S.VectorStore):
        return any(_reads(v, names) for v in s.values)
    return False
