"""simulator.engine.reference: the kinds of inputs and what structured inputs
hide."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tiletraffic.gpu.runtime.launch import check_result
from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.engine.simulation import simulate
from tiletraffic.simulator.engine.reference import INPUT_KINDS, random_inputs, reference
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
