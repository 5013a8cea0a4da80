"""Private arrays (register tiles): values per work-item, loop and
constant indices, hazards (out-of-bounds index, read before assignment), rendering."""
from __future__ import annotations

import numpy as np
import pytest

from tiletraffic.gpu.codegen.generate import generate
from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.engine.simulation import simulate
from tiletraffic.simulator.ir.nodes import (Const, DeclarePrivateArray, For, GlobalArray, Let,
                                            PrivateArray, Schedule, ScheduleError, Var,
                                            accumulate_elem, assign_elem, global_id, store)

X = GlobalArray("x", "in", ("N",))
Y = GlobalArray("y", "out", ("N",))


def kernel(n: int, *body) -> Schedule:
    return Schedule("private-demo", "private_demo", (("N", n),), (X, Y), (), (n,), (n,),
                    S.block(*body), n)


def test_register_tile_per_work_item_with_loop_indices():
    # acc[2][3] per work-item, indexed by loop variables: every element accumulates
    # x[g]·1 and x[g]·1·0, so y[g] = sum over the 6 elements = 6·x[g]; a work-item's array
    # is its own (different x per work-item).
    acc = PrivateArray("acc", (Const(2, "R"), Const(3, "Q")))
    g, i, j = Let("g", global_id(0)), Var("i"), Var("j")
    one = Const(1)
    total = S.DeclareFloat("total")
    body = (g, DeclarePrivateArray(acc),
            For("i", Const(0), Const(2, "R"), one, (For("j", Const(0), Const(3, "Q"), one, (
                accumulate_elem(acc[i, j], X[g.var] * S.FConst(1.0)),
                accumulate_elem(acc[i, j], X[g.var] * S.FConst(1.0) * S.FConst(0.0)),)),)),
            For("i", Const(0), Const(2, "R"), one, (For("j", Const(0), Const(3, "Q"), one, (
                S.Accumulate("total", acc[i, j] * S.FConst(1.0)),)),)))
    body = body[:2] + (total,) + body[2:] + (store(Y, g.var, S.Private("total")),)
    x = np.arange(8, dtype=np.float32) + 1
    res = simulate(kernel(8, *body), {"x": x})
    np.testing.assert_array_equal(res.outputs["y"], 6 * x)
    # FLOP: 6 elements x (1 mul + 1 += and 2 mul + 1 +=) + 6 x (1 mul + 1 +=), per item
    assert res.counts.flop == 8 * (6 * 2 + 6 * 3 + 6 * 2)


def test_out_of_bounds_private_index_is_a_hazard():
    acc = PrivateArray("acc", (Const(4),))
    g = Let("g", global_id(0))
    body = (g, DeclarePrivateArray(acc),
            assign_elem(acc[g.var], X[g.var]), store(Y, g.var, acc[Const(0)]))
    res = simulate(kernel(6, *body), {"x": np.ones(6, np.float32)}, hazards="report")
    (h,) = [h for h in res.hazards if h.kind == "out-of-bounds"]
    assert (h.array, h.count, h.local_ids) == ("acc", 2, (4,))


def test_read_of_an_unassigned_element_is_reported():
    acc = PrivateArray("acc", (Const(2),))
    g = Let("g", global_id(0))
    body = (g, DeclarePrivateArray(acc, None),
            assign_elem(acc[Const(0)], X[g.var]), store(Y, g.var, acc[Const(1)]))
    res = simulate(kernel(4, *body), {"x": np.ones(4, np.float32)}, hazards="report")
    (h,) = res.hazards
    assert (h.kind, h.array, h.index, h.count) == ("uninitialized-private-read", "acc", 1, 4)


def test_nonzero_init_is_refused():
    with pytest.raises(ScheduleError, match="1.5"):
        DeclarePrivateArray(PrivateArray("acc", (Const(2),)), 1.5)


def test_private_arrays_render_as_c_arrays():
    acc = PrivateArray("acc", (Const(2, "R"), Const(3, "Q")))
    g = Let("g", global_id(0))
    body = (g, DeclarePrivateArray(acc), accumulate_elem(acc[Const(1), Const(2)], X[g.var]),
            store(Y, g.var, acc[Const(1), Const(2)]))
    src = generate(kernel(4, *body)).source
    assert "float acc[R][Q];" in src
    assert "acc[acc_z0][acc_z1] = 0.0f;" in src  # zero fill by loops
    assert "acc[1][2] += x[g];" in src
    assert "y[g] = acc[1][2];" in src
