"""Branches on floats of the data: ``if (!isfinite(v)) continue;``, ``if (v < 0.0f)
continue;`` and a Leaky-ReLU ``v > 0.0f ? v : a * v`` are read into float comparisons and
tests executed per work-item. Their counts depend on the data: the simulator counts them on
its seeded inputs, equal to Oclgrind's counts of the source run on the same values; the
source (and the OpenCL C rendered from the schedule) runs on PoCL equal to numpy; and every
accelerator declines such a schedule."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import tiletraffic as tt
from tiletraffic.simulator.engine.data_inputs import launch_inputs
from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.visitor import walk

N, ROWS = 6, 40

FINITE_SUM = """\
__kernel void finite_positive_sum(__global const float *x, __global const float *w,
                                  __global float *y, const int n)
{
    int i = get_global_id(0);
    float s = 0.0f;
    for (int k = 0; k < n; k++) {
        float v = x[i * n + k];
        if (!isfinite(v))
            continue;
        if (v < 0.0f)
            continue;
        s += v * w[k];
    }
    y[i] = s;
}
"""

LEAKY_RELU = """\
__kernel void leaky_relu(__global const float *x, __global float *y, __global float *big,
                         const float a, const int n)
{
    int i = get_global_id(0);
    if (i < n) {
        float v = x[i];
        y[i] = v > 0.0f ? v : a * v;
        big[i] = 0.0f;
        if (fabs(v) >= 1.0f)
            big[i] = v;
    }
}
"""


def finite_sum():
    return tt.from_opencl(FINITE_SUM, "finite_positive_sum", [ROWS], [8],
                          {"x": {"shape": [ROWS, N], "access": "in"},
                           "w": {"shape": [N], "access": "in"},
                           "y": {"shape": [ROWS], "access": "out"}, "n": N})


def finite_sum_reference(inputs):
    x, w = inputs["x"].astype(np.float64), inputs["w"].astype(np.float64)
    keep = np.isfinite(x) & (x >= 0)
    return {"y": np.where(keep, x * w, 0.0).sum(axis=1)}


def leaky_relu():
    return tt.from_opencl(LEAKY_RELU, "leaky_relu", [64], [16],
                          {"x": {"shape": [60], "access": "in"},
                           "y": {"shape": [60], "access": "out"},
                           "big": {"shape": [60], "access": "out"}, "a": 0.125, "n": 60})


def leaky_relu_reference(inputs):
    x = inputs["x"].astype(np.float64)
    return {"y": np.where(x > 0, x, 0.125 * x), "big": np.where(np.abs(x) >= 1, x, 0.0)}


KERNELS = {"finite_sum": (finite_sum, finite_sum_reference),
           "leaky_relu": (leaky_relu, leaky_relu_reference)}


def test_the_branches_are_float_tests_and_comparisons_of_the_data():
    conds = [n for s in finite_sum().body for n in walk(s) if S.is_data_condition(n)]
    assert sorted(type(c).__name__ for c in conds) == ["FloatCompare", "FloatTest"]
    assert [c.fn for c in conds if isinstance(c, S.FloatTest)] == ["isfinite"]
    assert S.branches_on_data(leaky_relu().body)
    launch_only = S.FloatCompare("!=", S.FloatParam("beta"), S.FConst(0.0))
    assert launch_only.on_launch_floats and not S.is_data_condition(launch_only)
    with pytest.raises(S.ScheduleError, match="float test 'isodd'"):
        S.FloatTest("isodd", S.FConst(1.0))


def test_counts_follow_the_data_they_are_counted_on():
    """The loads of w happen where x is finite and not negative, on the seeded inputs."""
    sch = finite_sum()
    x = launch_inputs(sch)["x"]
    counts = tt.simulate(sch, compute_values=False).counts
    kept = int(np.count_nonzero(np.isfinite(x) & (x >= 0)))
    assert 0 < kept < x.size
    assert counts.global_load_elems == x.size + kept
    # other values, other counts: all negative x reads no w
    res = tt.simulate(sch, {"x": -np.abs(x) - 1, "w": np.ones(N, np.float32)})
    assert res.counts.global_load_elems == x.size
    assert np.array_equal(res.outputs["y"], np.zeros(ROWS, np.float32))


def test_counted_on_the_kind_of_inputs_the_launch_file_names():
    """A launch file's ``reference.inputs = "positive"``: the counts without values given
    are those of non-negative inputs (every w load happens), as a run draws them."""
    sch = finite_sum()
    positive = dataclasses.replace(sch, extra={**sch.extra, "reference_inputs": "positive"})
    x = launch_inputs(positive)["x"]
    assert x.shape == (ROWS, N) and x.min() >= 0 and x.max() < 1
    assert len(set(x.ravel().tolist())) == x.size
    assert tt.simulate(positive, compute_values=False).counts.global_load_elems == 2 * x.size
    assert tt.simulate(sch, compute_values=False).counts.global_load_elems < 2 * x.size


def test_nan_and_inf_are_skipped_per_work_item():
    sch = finite_sum()
    x = np.ones((ROWS, N), np.float32)
    x[3, 1], x[7, 0], x[7, 5] = np.nan, np.inf, -np.inf
    w = np.arange(1, N + 1, dtype=np.float32)
    res = tt.simulate(sch, {"x": x, "w": w})
    assert res.counts.global_load_elems == x.size + x.size - 3
    expected = finite_sum_reference({"x": x, "w": w})["y"]
    assert np.array_equal(res.outputs["y"], expected.astype(np.float32))


def test_every_accelerator_declines_a_branch_on_data():
    from tiletraffic.simulator.engine.accelerators import FLOAT_BRANCH_DECLINE
    from tiletraffic.simulator.engine.accelerators.class_safety import classes_problem
    from tiletraffic.simulator.engine.accelerators.k_extrapolation import \
        k_extrapolation_problem
    from tiletraffic.simulator.engine.class_check import proved_clean
    from tiletraffic.simulator.engine.fast_path import count_launch
    from tiletraffic.analysis.api.closed_forms import derive
    for make, _ in KERNELS.values():
        sch = make()
        assert classes_problem(sch) == FLOAT_BRANCH_DECLINE
        assert k_extrapolation_problem(sch) == FLOAT_BRANCH_DECLINE
        assert not proved_clean(sch)       # the class check leaves it to full execution
        counted = count_launch(sch)
        assert counted.why_every_work_group == (FLOAT_BRANCH_DECLINE,)
        assert counted.work_groups_executed == sch.work_groups
        assert counted.counts.to_dict() == tt.simulate(sch, launch_inputs(sch)).counts.to_dict()
        pytest.importorskip("islpy")
        derived = derive(sch)
        assert derived.not_derived and all("floats of the data" in why
                                           for why in derived.not_derived.values())


@pytest.mark.parametrize("name", [*KERNELS, *(f"{k}:rendered" for k in KERNELS)])
def test_oclgrind_counts_equal_the_simulator_on_the_same_data(name):
    from tiletraffic.gpu.oclgrind.crosscheck import compare_counts
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available
    if not oclgrind_available():
        pytest.skip("no Oclgrind platform")
    name, _, rendered = name.partition(":")
    sch = KERNELS[name][0]()
    if rendered:
        sch = dataclasses.replace(sch, extra={})
    comparison = compare_counts(sch)
    assert comparison.equal, comparison.to_dict()
    assert comparison.oclgrind["global_store_elems"] > 0


@pytest.mark.parametrize("name", [*KERNELS, *(f"{k}:rendered" for k in KERNELS)])
def test_runs_on_pocl_equal_to_numpy(pocl, name):
    name, _, rendered = name.partition(":")
    make, reference = KERNELS[name]
    sch = make()
    if rendered:
        sch = dataclasses.replace(sch, extra={})
    result = tt.run(sch, pocl, repeat=10, warmup=1, reference=reference, seed=7)
    assert result.check.ok


def test_an_integer_select_on_a_float_test_is_described():
    """A message naming ``isnan(x) ? 1 : 2`` describes the test instead of failing."""
    from tiletraffic.simulator.ir import expressions as E
    chosen = E.IntSelect(E.FloatTest("isnan", E.FloatParam("x")), E.Const(1), E.Const(2))
    assert E.describe_int(chosen) == "(isnan(x) ? 1 : 2)"


@pytest.mark.parametrize("kind", ["normal", "positive"])
def test_the_seeded_inputs_are_the_draw_of_seed_0(kind):
    """Counting without values executes on the inputs ``random_inputs`` draws from
    ``default_rng(0)`` (``simulate --seed 0``), in the kind the launch names."""
    from tiletraffic.simulator.engine.data_inputs import random_inputs
    sch = finite_sum()
    sch = dataclasses.replace(sch, extra={**sch.extra, "reference_inputs": kind})
    drawn = random_inputs(sch, np.random.default_rng(0), kind)
    seeded = launch_inputs(sch)
    assert seeded.keys() == drawn.keys() == {"x", "w"}
    assert all(np.array_equal(seeded[n], drawn[n]) for n in drawn)
    assert tt.simulate(sch, compute_values=False).counts.to_dict() == \
        tt.simulate(sch, drawn).counts.to_dict()
