"""The IR's float built-ins (fmax, fmin, fabs, sqrt, exp, select): executed vectorized by the
simulator as numpy does, rendered as OpenCL C, one FLOP each; matvec-relu built
with them (closed forms, PoCL); the sum-length rules (simulator/engine/sum_length.py)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tiletraffic as tt
from tiletraffic.gpu.devices.device import list_devices
from tiletraffic.simulator.engine import sum_length
from tiletraffic.simulator.engine.launch_check import check_launch
from tiletraffic.simulator.engine.data_inputs import random_inputs
from tiletraffic.simulator.ir.nodes import FConst

from strategies import functions_schedule

HAS_POCL = any(d.is_pocl for d in list_devices())
needs_pocl = pytest.mark.skipif(not HAS_POCL, reason="PoCL is not installed")
N = 100


def expected(inputs):
    a, b = inputs["a"], inputs["b"]
    i = np.arange(len(a))
    return np.where(i % 3 == 0, np.sqrt(np.abs(a)),
                    np.minimum(np.exp(b * 0.25), np.maximum(a, b) + 2.0))


def test_simulator_computes_the_functions_as_numpy():
    sch = functions_schedule()
    inputs = random_inputs(sch, np.random.default_rng())
    res = tt.simulate(sch, inputs, sum_lengths=True)
    got = res.outputs["y"].astype(np.float64)
    want = expected({k: v.astype(np.float64) for k, v in inputs.items()})
    np.testing.assert_allclose(got, want, rtol=8 * 2.0**-24 * 4)
    assert res.hazards == []


def test_flop_rule_one_per_function_and_select():
    """Per work-item in range: select 1 + sqrt 1 + fabs 1 + fmin 1 + exp 1 + * 1 + fmax 1
    + + 1 = 8 FLOP; the 100 of 128 work-items with i < N execute it."""
    assert tt.simulate(functions_schedule(), compute_values=False).counts.flop == 8 * N


def test_sum_lengths_of_the_functions():
    """sqrt(fabs(a)): 0 + 6; fmin(exp(b*0.25) [1 + 6], fmax(a, b) + 2 [0 + 1]): 7."""
    sch = functions_schedule()
    res = tt.simulate(sch, random_inputs(sch, np.random.default_rng()), sum_lengths=True)
    lengths = res.sum_lengths["y"]
    assert set(lengths[0::3]) == {6} and set(np.delete(lengths, np.s_[0::3])) == {7}


def test_rendered_as_opencl_c():
    source = tt.generate(functions_schedule()).source
    assert ("y[i] = ((i % 3 == 0) ? sqrt(fabs(a[i])) : fmin(exp(b[i] * 0.25f), "
            "fmax(a[i], b[i]) + 2.0f));") in source


def test_unknown_function_and_wrong_arity_are_refused():
    with pytest.raises(tt.ScheduleError, match="not one of"):
        tt.FCall("fmod", (FConst(1.0),))
    with pytest.raises(tt.ScheduleError, match="takes 2 argument"):
        tt.FCall("fmax", (FConst(1.0),))
    with pytest.raises(TypeError, match="integer condition"):
        tt.select(1, 0.0, 1.0)


@needs_pocl
def test_functions_on_pocl_equal_numpy():
    sch = functions_schedule()
    run = tt.run(sch, device="pocl", reference=expected)
    assert run.check.ok and run.check.k == 7
    assert run.launch_check.sum_length == 7 and not run.launch_check.hazards


@pytest.mark.parametrize("m, k, tile", [(300, 300, 64), (1, 7, 32), (65, 129, 64)])
def test_matvec_relu_closed_forms(m, k, tile):
    sch = tt.build("matvec-relu", m=m, k=k, tile=tile)
    counts = tt.simulate(sch, compute_values=False).counts.to_dict()
    assert counts == tt.closed_form(sch)
    assert counts["flop"] == 2 * m * k + m


@needs_pocl
def test_matvec_relu_on_pocl():
    sch = tt.build("matvec-relu", m=300, k=257, tile=64)
    run = tt.run(sch, device="pocl")
    assert run.check.ok and run.check.k == 257
    assert "fmax(acc, 0.0f)" in tt.generate(sch).source


@given(old=st.integers(-1, 20), terms=st.lists(st.integers(-1, 20), min_size=1, max_size=12),
       live=st.lists(st.booleans(), min_size=12, max_size=12))
def test_accumulate_of_a_block_equals_additions_one_by_one(old, terms, live):
    mask = np.array(live[:len(terms)]).reshape(1, 1, -1)
    t = np.array(terms).reshape(1, 1, -1)
    d = np.array(old).reshape(1, 1, 1)
    one_by_one = d
    for j in range(len(terms)):
        if mask[0, 0, j]:
            one_by_one = sum_length.add(one_by_one, t[:, :, j:j + 1])
    assert sum_length.accumulate(d, t, mask).item() == one_by_one.item()


def test_matvec_relu_check_and_sum_length():
    c = check_launch(tt.build("matvec-relu", m=70, k=33, tile=32))
    assert not c.hazards and c.sum_length == 33


@pytest.mark.parametrize("family, size", [
    ("gemm-vectorized", dict(m=17, k=8, n=24, tile=3, tm=4, tn=8, bk=4, wg_rows=5)),
    ("gemm-prefetch", dict(m=17, k=9, n=23, tile=3, tm=2, tn=3, bk=4, wg_rows=5)),
    ("gemm-tiled", dict(m=17, k=5, n=23, tile=7))])
def test_counting_sum_lengths_leaves_values_and_hazards_as_they_are(family, size):
    sch = tt.build(family, **size)
    inputs = random_inputs(sch, np.random.default_rng(3))
    plain = tt.simulate(sch, inputs, hazards="report")
    counted = tt.simulate(sch, inputs, hazards="report", sum_lengths=True)
    for name, value in plain.outputs.items():
        np.testing.assert_array_equal(counted.outputs[name], value)
    assert counted.counts.to_dict() == plain.counts.to_dict()
    assert counted.hazards == plain.hazards == []
    assert counted.sum_lengths["C"].max() == size["k"]
