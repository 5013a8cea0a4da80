"""An integer converted to float in OpenCL C (``(float)i``, ``convert_float(i)``, an ``int``
operand of a float operation) is the IR's :class:`IntToFloat`: the work-item's integer
rounded to float32, no FLOP and no memory traffic. Simulated values equal numpy, the
counts equal Oclgrind's of the same source, PoCL's run equals numpy, and the generated
code writes the conversion as ``((float)(...))``."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import tiletraffic as tt
from tiletraffic.gpu.codegen.generate import generate
from tiletraffic.simulator.engine import sum_length
from tiletraffic.simulator.engine.accelerators import (Accelerators, class_safety,
                                                       k_extrapolation, private_nest)
from tiletraffic.simulator.engine.simulation import simulate
from tiletraffic.simulator.observers.memory import MemoryObserver
from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.visitor import walk
from tiletraffic.simulator.ir.wellformed import MalformedScheduleError, check_well_formed

N = 256
K = 48

SCALE = """
__kernel void scale(__global const float *A, __global float *y, const int n) {
    const int i = get_global_id(0);
    if (i < n)
        y[i] = A[i] * (float)i + convert_float(i % 7);
}
"""

WEIGHTED = """
__kernel void weighted(__global const float *x, __global float *y, const int K) {
    const int i = get_global_id(0);
    float s = 0;
    for (int k = 0; k < K; k++)
        s += (float)k * x[k];
    y[i] = s + i;
}
"""


def scale(n: int = N):
    return tt.from_opencl(SCALE, "scale", (n,), (64,),
                          {"A": {"shape": (n,), "access": "in"},
                           "y": {"shape": (n,), "access": "out"}, "n": n})


def weighted():
    return tt.from_opencl(WEIGHTED, "weighted", (64,), (32,),
                          {"x": {"shape": (K,), "access": "in"},
                           "y": {"shape": (64,), "access": "out"}, "K": K})


def scale_reference(inputs):
    i = np.arange(N, dtype=np.float64)
    return inputs["A"].astype(np.float64) * i + (np.arange(N) % 7)


def weighted_reference(inputs):
    s = np.arange(K, dtype=np.float64) @ inputs["x"].astype(np.float64)
    return s + np.arange(64, dtype=np.float64)


def conversions(sch):
    return [n for s in sch.body for n in walk(s) if isinstance(n, S.IntToFloat)]


def test_the_front_end_accepts_the_casts_convert_float_and_an_int_operand():
    assert len(conversions(scale())) == 2
    assert len(conversions(weighted())) == 2          # (float)k and s + i


def test_scale_values_equal_numpy_and_the_conversion_counts_no_flop():
    rng = np.random.default_rng(0)
    inputs = {"A": rng.standard_normal(N).astype(np.float32)}
    result = tt.simulate(scale(), inputs)
    np.testing.assert_allclose(result.outputs["y"], scale_reference(inputs),
                               rtol=1e-6, atol=1e-6)
    counts = result.counts
    assert counts.global_load_elems == N
    assert counts.flop == 2 * N                      # one * and one + per work-item


def test_weighted_sum_values_equal_numpy():
    rng = np.random.default_rng(1)
    inputs = {"x": rng.standard_normal(K).astype(np.float32)}
    result = tt.simulate(weighted(), inputs)
    np.testing.assert_allclose(result.outputs["y"], weighted_reference(inputs),
                               rtol=1e-5, atol=1e-4)
    assert result.counts.flop == 64 * (2 * K + 1)


def test_the_conversion_rounds_to_nearest_beyond_2_to_the_24():
    big = 2 ** 24 + 1                                 # not a float32: rounds to 2**24
    src = """
__kernel void big(__global float *y, const int b) {
    y[get_global_id(0)] = (float)(b + (int)get_global_id(0));
}
"""
    sch = tt.from_opencl(src, "big", (4,), (4,),
                         {"y": {"shape": (4,), "access": "out"}, "b": big})
    y = tt.simulate(sch, {}).outputs["y"]
    np.testing.assert_array_equal(y, (big + np.arange(4)).astype(np.float32))
    assert y[0] == np.float32(2 ** 24)


def test_sum_length_of_an_integer_is_exact_up_to_2_to_the_24_and_one_rounding_beyond():
    lengths = sum_length.of_integer(np.array([0, 3, -2 ** 24, 2 ** 24 + 1, -2 ** 25]))
    assert lengths.tolist() == [sum_length.ZERO, 0, 0, 1, 1]


def rendered(sch):
    """``sch``'s IR rendered by the code generator (not the user's source it came from)."""
    return dataclasses.replace(sch, extra={k: v for k, v in sch.extra.items()
                                           if k != "opencl"})


@pytest.mark.parametrize("make", [scale, weighted])
def test_generated_code_writes_the_conversion_and_parses_back_the_same(make):
    sch = rendered(make())
    source = generate(sch).source
    assert source.count("((float)(") == 2
    args = dict(sch.params)
    for a in sch.arrays:
        args[a.name] = {"shape": a.shape, "access": a.role}
    back = tt.from_opencl(source, sch.kernel_name, sch.global_size, sch.local_size, args)
    assert len(conversions(back)) == 2
    name, size = ("A", N) if make is scale else ("x", K)
    inputs = {name: np.random.default_rng(2).standard_normal(size).astype(np.float32)}
    one, two = tt.simulate(sch, inputs), tt.simulate(back, inputs)
    np.testing.assert_array_equal(one.outputs["y"], two.outputs["y"])
    assert one.counts.to_dict() == two.counts.to_dict()


def test_a_conversion_of_an_undeclared_integer_is_not_well_formed():
    sch = scale()
    y = next(a for a in sch.arrays if a.name == "y")
    bad = S.Store(y, (S.Const(0),), S.IntToFloat(S.Var("nowhere")))
    check_well_formed(sch)
    with pytest.raises(MalformedScheduleError, match="nowhere"):
        check_well_formed(dataclasses.replace(sch, body=sch.body + (bad,)))


def test_run_on_pocl_equals_numpy(pocl):
    for sch, reference in ((scale(), scale_reference), (weighted(), weighted_reference)):
        for kernel in (sch, rendered(sch)):       # the user's source, the generated code
            result = tt.run(kernel, pocl, repeat=10, warmup=1, reference=reference, seed=3)
            assert result.check.ok, kernel.kernel_name


@pytest.mark.parametrize("make", [scale, weighted])
def test_oclgrind_counts_of_the_same_source_equal_the_simulator(make):
    from tiletraffic.gpu.oclgrind.crosscheck import compare_counts
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available
    if not oclgrind_available():
        pytest.skip("no Oclgrind platform")
    comparison = compare_counts(make())
    assert comparison.equal, comparison.to_dict()
    assert comparison.oclgrind["global_load_elems"] > 0


# ------------------------------------------------------------------------ accelerators
SQUARES = """
__kernel void squares(__global const float *A, __global float *y, const int n) {
    const int i = get_global_id(0);
    float acc[4] = {0};
    for (int j = 0; j < 4; j++)
        acc[j] = (float)j;
    for (int j = 0; j < 4; j++)
        acc[j] += (float)(i * i);
    for (int j = 0; j < 4; j++)
        y[i] += A[i] * acc[j] + (float)(j / (i % 4 + 1));
}
"""


def squares():
    return tt.from_opencl(SQUARES, "squares", (N,), (32,),
                          {"A": {"shape": (N,), "access": "in"},
                           "y": {"shape": (N,), "access": "inout"}, "n": N})


def test_work_group_classes_are_proved_for_an_affine_conversion_only():
    assert class_safety.classes_problem(weighted()) is None      # (float)k, s + i
    # convert_float(i % 7), refused where a dimension has enough work-groups to share
    # classes (with fewer than 5, each is its own class and the remainder is a constant)
    assert "(i % 7)" in class_safety.classes_problem(scale(2048))
    assert class_safety.classes_problem(scale()) is None
    problem = class_safety.classes_problem(squares())
    assert problem is not None and "i * i" in problem.replace("(", "").replace(")", "")


def test_a_private_nest_plans_a_static_conversion_and_refuses_a_work_item_s():
    loops = [s for s in squares().body if isinstance(s, S.For)]
    static, per_work_item = loops[0], loops[1]
    assert private_nest.plan(static, {"n": N}) is not None
    assert private_nest.plan(per_work_item, {"n": N}) is None


@pytest.mark.parametrize("make", [scale, weighted, squares])
def test_counts_with_every_accelerator_equal_full_execution(make):
    def counts(accelerators):
        memory = MemoryObserver()
        result = simulate(make(), compute_values=False, observers=[memory],
                          accelerators=accelerators)
        return result.counts.to_dict(), memory.counts.to_dict()

    full = counts(Accelerators(work_group_classes=False, private_nests=False))
    fast = counts(Accelerators(work_group_classes=True, private_nests=True, loop_blocks=True))
    assert fast == full


def test_k_extrapolation_does_not_take_a_conversion():
    sch = weighted()
    assert k_extrapolation.k_step_elems(dataclasses.replace(sch, family="matvec-naive")) \
        is None
