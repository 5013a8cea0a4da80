"""simulator.ir.visitor, the one traversal of the IR: children, bodies, with_bodies, walk,
walk_statements, Visitor, Transformer and rewrite on hand-built nodes; a node type defined
here (not in simulator.ir) is traversed, transformed and seen by the walks built on the
visitor without any change to them."""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.static import is_vectorizable, privates_read
from tiletraffic.simulator.ir.visitor import (Transformer, Visitor, bodies, children, rewrite,
                                              walk, walk_statements, with_bodies)
from tiletraffic.simulator.model.registers import private_floats

X = S.GlobalArray("x", "in", ("N",))
Y = S.GlobalArray("y", "out", ("N",))
T = S.LocalArray("t", (S.Const(4, "W"),))
ACC = S.PrivateArray("acc", (S.Const(2, "TM"),))
I, J = S.Var("i"), S.Var("j")


@dataclass(frozen=True, eq=False)
class While(S.Stmt):
    """A statement type the IR does not have: ``while (cond) { body }``."""

    cond: S.Cond
    body: tuple[S.Stmt, ...]


@dataclass(frozen=True, eq=False)
class Clamp(S.FloatExpr):
    """A float expression type the IR does not have: ``clamp(value, lo, hi)``."""

    value: S.FloatExpr
    lo: S.FloatExpr
    hi: S.FloatExpr


def sample():
    """let i; float s; for j in [0, W): { s += t[j]; if (i < N) { barrier } }; y[i] = s."""
    let = S.Let("i", S.global_id(0))
    decl = S.DeclareFloat("s")
    acc = S.Accumulate("s", T[J])
    guarded = S.If(I < S.Param("N"), (S.Barrier(),))
    loop = S.For("j", S.Const(0), S.Const(4, "W"), S.Const(1), (acc, guarded))
    st = S.store(Y, I, S.Private("s"))
    return let, decl, acc, guarded, loop, st


# --------------------------------------------------------------------------- children
def test_children_are_the_node_fields_in_order_tuples_flattened():
    let, decl, acc, guarded, loop, st = sample()
    assert children(loop) == (loop.start, loop.stop, loop.step, acc, guarded)
    assert children(guarded) == (guarded.cond, *guarded.then)
    assert children(st) == (*st.index, st.value)          # the array is no node
    assert children(let) == (let.value,)
    assert children(S.Const(3)) == () and children(S.Barrier()) == ()
    assert children("not a node") == () and children(7) == ()


def test_children_with_arrays_add_the_arrays_and_their_dims():
    load = T[J]
    assert children(load) == (J,)
    assert children(load, arrays=True) == (T, J)
    assert children(T) == T.dims                             # a LocalArray's extents
    assert children(X) == ()                                 # a GlobalArray's are names
    decl = S.DeclarePrivateArray(ACC)
    assert children(decl) == () and children(decl, arrays=True) == (ACC,)


def test_vector_statements_children_skip_the_names():
    vl = S.vload(["a", "b"], X, I)
    assert children(vl) == (I,)
    vs = S.vstore(Y, I, [S.Private("a"), 1.0])
    assert children(vs) == (I, *vs.values)


# ----------------------------------------------------------------------------- bodies
def test_bodies_of_compound_statements_only():
    let, decl, acc, guarded, loop, st = sample()
    assert bodies(loop) == {"body": loop.body}
    assert bodies(guarded) == {"then": guarded.then, "orelse": ()}
    assert bodies(let) == {} and bodies(S.Barrier()) == {} and bodies(st) == {}
    vs = S.vstore(Y, I, [1.0, 2.0])                        # a tuple of floats is no body
    assert bodies(vs) == {}


def test_with_bodies_keeps_the_object_when_nothing_changes():
    let, decl, acc, guarded, loop, st = sample()
    assert with_bodies(loop, body=loop.body) is loop
    new = with_bodies(loop, body=(acc,))
    assert new is not loop and new.body == (acc,) and new.start is loop.start
    assert isinstance(new, S.For) and new.var == "j"


# ------------------------------------------------------------------------------ walks
def test_walk_is_pre_order_over_statements_and_expressions():
    let, decl, acc, guarded, loop, st = sample()
    seen = list(walk(loop))
    assert seen[0] is loop
    assert seen.index(acc) < seen.index(guarded) < seen.index(guarded.cond)
    assert acc.value in seen and J in seen and guarded.then[0] in seen
    assert T not in seen
    with_arrays = list(walk(loop, arrays=True))
    assert T in with_arrays and T.dims[0] in with_arrays
    assert with_arrays.index(T) < with_arrays.index(T.dims[0]) < with_arrays.index(J)


def test_walk_statements_enters_bodies_not_expressions():
    let, decl, acc, guarded, loop, st = sample()
    body = (let, decl, loop, st)
    assert list(walk_statements(body)) == [let, decl, loop, acc, guarded,
                                           guarded.then[0], st]


# ---------------------------------------------------------------------------- Visitor
class CountByClass(Visitor):
    def __init__(self):
        self.counts: dict[str, int] = {}

    def generic_visit(self, node):
        name = type(node).__name__
        self.counts[name] = self.counts.get(name, 0) + 1
        super().generic_visit(node)


class LoopVariables(Visitor):
    def __init__(self):
        self.names: list[str] = []

    def visit_For(self, loop):
        self.names.append(loop.var)
        self.visit_all(loop.body)
        return "visited"


def test_visitor_dispatches_on_the_class_name_and_falls_back_to_the_children():
    let, decl, acc, guarded, loop, st = sample()
    counter = CountByClass()
    counter.visit_all((let, decl, loop, st))
    assert counter.counts["Barrier"] == 1 and counter.counts["Const"] == 3
    assert counter.counts["Var"] == 3 and counter.counts["Load"] == 1
    inner = S.For("k", S.Const(0), S.Const(2), S.Const(1), (loop,))
    loops = LoopVariables()
    assert loops.visit(inner) == "visited"
    assert loops.names == ["k", "j"]
    assert LoopVariables().visit(S.Barrier()) is None


# ------------------------------------------------------------------ Transformer, rewrite
class DropBarriers(Transformer):
    def visit_Barrier(self, s):
        return ()


class DoubleStores(Transformer):
    def visit_Store(self, s):
        return (s, s)


def test_transformer_replaces_deletes_and_rebuilds_inside_bodies():
    let, decl, acc, guarded, loop, st = sample()
    out = DropBarriers().transform((let, loop, st))
    assert out[0] is let and out[2] is st
    assert out[1].body[0] is acc and out[1].body[1].then == ()
    assert loop.body[1] is guarded and len(guarded.then) == 1  # the input is kept
    doubled = DoubleStores().transform((S.If(I < 2, (st,)),))
    assert doubled[0].then == (st, st)


def test_rewrite_with_a_function():
    let, decl, acc, guarded, loop, st = sample()
    out = rewrite((loop,), lambda s: () if isinstance(s, S.Accumulate) else None)
    assert [type(s).__name__ for s in out[0].body] == ["If"]
    assert out[0].body[0].then == guarded.then


# ----------------------------------------------------------- a node type defined here
def test_a_new_statement_type_is_traversed_without_changes():
    let, decl, acc, guarded, loop, st = sample()
    loop_w = While(I < S.Param("N"), (S.DeclarePrivateArray(ACC), st, S.Barrier()))
    assert children(loop_w) == (loop_w.cond, *loop_w.body)
    assert bodies(loop_w) == {"body": loop_w.body}
    assert list(walk_statements((let, loop_w))) == [let, loop_w, *loop_w.body]
    assert loop_w.cond in list(walk(loop_w))
    dropped = DropBarriers().transform((loop_w,))[0]
    assert isinstance(dropped, While) and dropped.body == loop_w.body[:2]
    assert dropped.cond is loop_w.cond
    counter = CountByClass()
    counter.visit(loop_w)
    assert counter.counts["While"] == 1 and counter.counts["Store"] == 1
    # the walks built on the visitor see inside it
    assert private_floats((decl, loop_w)) == (1 + 2, True)
    with pytest.raises(S.ScheduleError, match="'x'"):
        S.Schedule("mine", "mine", (("N", 8),), (X, Y), (), (4,), (8,),
                   (let, While(I < 2, (S.store(X, I, 1.0),))), 4)


def test_a_new_float_expression_type_is_traversed_without_changes():
    clamp = Clamp(S.Private("a"), S.FConst(0.0), ACC[S.Const(1)])
    assert children(clamp) == (clamp.value, clamp.lo, clamp.hi)
    assert ACC[S.Const(1)].array is ACC
    seen = list(walk(S.Accumulate("s", clamp)))
    assert clamp in seen and clamp.value in seen and clamp.hi.index[0] in seen
    reads: set[str] = set()
    privates_read(clamp, reads)
    assert reads == {"a", "acc"}
    loop = S.For("k", S.Const(0), S.Const(4), S.Const(1), (S.Accumulate("s", clamp),))
    assert is_vectorizable(loop)
    reading = S.For("k", S.Const(0), S.Const(4), S.Const(1),
                    (S.Accumulate("a", clamp),))       # reads its own target
    assert not is_vectorizable(reading)
