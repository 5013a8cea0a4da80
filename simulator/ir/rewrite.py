"""Rewriting a statement tree of the IR (:mod:`simulator.ir.nodes`): the known-faulty
variants (:mod:`simulator.kernels.variants`) and the demos (:mod:`simulator.kernels.demos`) are built from
correct schedules this way."""
from __future__ import annotations

from typing import Callable

from tiletraffic.simulator.ir.nodes import For, If, Stmt


def rewrite(stmts: tuple[Stmt, ...], fn: Callable[[Stmt], tuple | None]) -> tuple:
    """Rebuild a statement tree; ``fn(stmt)`` returns replacement statements or ``None``
    (keep the statement and rewrite inside it)."""
    out: list[Stmt] = []
    for s in stmts:
        replaced = fn(s)
        if replaced is not None:
            out.extend(replaced)
            continue
        if isinstance(s, If):
            s = If(s.cond, rewrite(s.then, fn), rewrite(s.orelse, fn))
        elif isinstance(s, For):
            s = For(s.var, s.start, s.stop, s.step, rewrite(s.body, fn))
        out.append(s)
    return tuple(out)
