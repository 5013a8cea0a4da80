"""simulator.engine.reference: the kinds of inputs and what structured inputs
hide."""
from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from tiletraffic.gpu.runtime.launch import check_result
from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.engine.simulation import simulate
from tiletraffic.simulator.engine.reference import reference
from tiletraffic.simulator.engine.data_inputs import INPUT_KINDS, random_inputs
from tiletraffic.simulator.kernels.families import build
from tiletraffic.simulator.kernels.variants import rewrite


def test_kinds_of_inputs():
    sch = build("gemm-tiled", 3, 4, 5, 2)
    rng = np.random.default_rng
    ones = random_inputs(sch, rng(0), "ones")
    assert set(ones) == {"A", "B"} and ones["A"].shape == (3, 4) and (ones["B"] == 1).all()
    arange = random_inputs(sch, rng(0), "arange")
    np.testing.assert_array_equal(arange["A"].ravel(), np.arange(12))
    uniform = random_inputs(sch, rng(0), "uniform")
    assert all((-1 <= v).all() and (v < 1).all() and v.dtype == np.float32
               for v in uniform.values())
    for kind in INPUT_KINDS:  # a seed gives the same inputs again
        again = random_inputs(sch, rng(9), kind)
        for name, value in random_inputs(sch, rng(9), kind).items():
            np.testing.assert_array_equal(value, again[name])
    with pytest.raises(ValueError, match="'zeros'"):
        random_inputs(sch, rng(0), "zeros")


def _swapped_a(m: int) -> S.Schedule:
    """Naive GEMM reading A[k, row] instead of A[row, k] (square, so it stays in bounds)."""
    sch = build("gemm-naive", m, m, m, 4)

    def fn(s):
        if isinstance(s, S.Accumulate):
            prod = s.value
            a = prod.left
            return (S.Accumulate(s.name, S.Load(a.array, a.index[::-1]) * prod.right),)
        return None

    return dataclasses.replace(sch, body=rewrite(sch.body, fn))


@pytest.mark.parametrize("kind, hidden", [("ones", True), ("normal", False),
                                          ("uniform", False), ("arange", False)])
def test_ones_hide_a_swapped_index_random_inputs_show_it(kind, hidden):
    sch = _swapped_a(8)
    inputs = random_inputs(sch, np.random.default_rng(1), kind)
    out = simulate(sch, inputs).outputs["C"]
    ref = reference(sch, inputs)
    assert check_result(out, ref.value, ref.k, ref.abs_product).ok == hidden


def _two_outputs():
    """y = A·x (K terms each) and z = 2·x[:M], two outputs of one kernel."""
    M, K = 5, 6
    A = S.GlobalArray("A", "in", ("M", "K"))
    x = S.GlobalArray("x", "in", ("K",))
    y = S.GlobalArray("y", "out", ("M",))
    z = S.GlobalArray("z", "out", ("M",))
    i = S.global_id(0)
    acc = S.DeclareFloat("acc")
    body = (acc, S.For("k", S.Const(0), S.Param("K"), S.Const(1),
                       (S.Accumulate("acc", A[i, S.Var("k")] * x[S.Var("k")]),)),
            S.store(y, i, acc.ref), S.store(z, i, x[i] * 2.0))
    return S.Schedule("two", "two", (("M", M), ("K", K)), (A, x, y, z), (), (M,), (M,), body,
                      tile=1)


def test_a_reference_of_several_outputs_gives_one_per_output_each_checked():
    from tiletraffic.simulator.engine.reference import ReferenceFunctionError, references

    sch = _two_outputs()
    inputs = random_inputs(sch, np.random.default_rng(3))
    out = simulate(sch, inputs).outputs

    def both(d):
        return {"y": d["A"] @ d["x"], "z": 2 * d["x"][:5]}
    refs = references(sch, inputs, both, sum_length=6)
    assert [r.output for r in refs] == ["y", "z"]
    for r in refs:
        assert check_result(out[r.output], r.value, r.k, r.abs_product).ok
    assert np.array_equal(refs[1].abs_product, 2 * np.abs(inputs["x"][:5].astype(np.float64)))
    wrong = references(sch, inputs, lambda d: {**both(d), "z": 3 * d["x"][:5]}, sum_length=6)
    assert not check_result(out["z"], wrong[1].value, wrong[1].k, wrong[1].abs_product).ok
    only_z = references(sch, inputs, lambda d: {"z": 2 * d["x"][:5]}, sum_length=6)
    assert [r.output for r in only_z] == ["z"]
    with pytest.raises(ReferenceFunctionError, match="gives 2 outputs"):
        reference(sch, inputs, both, sum_length=6)
    for fn, words in ((lambda d: d["A"] @ d["x"], "one array, the schedule has the outputs "
                                                  "y, z"),
                      (lambda d: {**both(d), "w": d["x"]}, "'w', not an output"),
                      (lambda d: {}, "no output"),
                      (lambda d: {"y": d["x"]}, "shape (6,), the output y has shape (5,)")):
        with pytest.raises(ReferenceFunctionError, match=re.escape(words)):
            references(sch, inputs, fn, sum_length=6)
