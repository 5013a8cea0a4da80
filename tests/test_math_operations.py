"""The IR's float built-ins beyond fmax/fmin/fabs/sqrt/exp (rsqrt, exp2, log, log2, pow, sin,
cos, tanh, erf), its integer bitwise operators and shifts, and its integer ``?:``
(IntSelect): each simulated as numpy computes it in float64 (within the function's OpenCL
error bound) or as C computes it (integers), one FLOP per call, rendered as OpenCL C that
PoCL runs to the simulator's values, and the analyses that prove forms of integers declining
what is not affine."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tiletraffic as tt
from tiletraffic.analysis.api.closed_forms import derive
from tiletraffic.simulator.engine import sum_length
from tiletraffic.simulator.engine.accelerators.class_safety import classes_problem
from tiletraffic.simulator.engine.accelerators.k_extrapolation import k_extrapolation_problem
from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.static import ExecutionError, eval_static, int_op_bounds
from tiletraffic.simulator.ir.visitor import walk
from tiletraffic.simulator.model import derived_counts

N = 64
NEW_FUNCTIONS = ("rsqrt", "exp2", "log", "log2", "pow", "sin", "cos", "tanh", "erf")
POSITIVE = ("rsqrt", "log", "log2", "pow")
"""Functions whose first operand is drawn positive (their domain)."""

REFERENCE = {"rsqrt": lambda a: 1 / np.sqrt(a), "exp2": np.exp2, "log": np.log,
             "log2": np.log2, "pow": np.power, "sin": np.sin, "cos": np.cos,
             "tanh": np.tanh, "erf": np.vectorize(math.erf)}
"""float64 numpy of each function."""


def function_schedule(fn: str) -> S.Schedule:
    """``y[i] = fn(a[i])`` (``pow(a[i], b[i])``) for ``N`` work-items, work-groups of 16."""
    a_arr, b_arr = S.GlobalArray("a", "in", ("N",)), S.GlobalArray("b", "in", ("N",))
    y = S.GlobalArray("y", "out", ("N",))
    i = S.Let("i", S.global_id(0))
    args = (a_arr[i.var], b_arr[i.var])[:S.FLOAT_FUNCTIONS[fn]]
    body = S.block(i, S.store(y, (i.var,), S.FCall(fn, args)))
    return S.Schedule(family=f"fn-{fn}", kernel_name=f"fn_{fn}", params=(("N", N),),
                      arrays=(a_arr, b_arr, y), local_arrays=(), local_size=(16,),
                      global_size=(N,), body=body, tile=16)


def function_inputs(fn: str, values: list[float]) -> dict[str, np.ndarray]:
    a = np.resize(np.array(values, np.float32), N)
    if fn in POSITIVE:
        a = np.abs(a) + np.float32(1e-3)
    b = np.resize(np.array(values[::-1], np.float32), N) / np.float32(8)
    return {"a": a.astype(np.float32), "b": b.astype(np.float32)}


def within_bound(fn: str, got, inputs) -> np.ndarray:
    """Where ``got`` is within the function's OpenCL bound (plus half an ulp for the
    reference's own rounding) of the float64 value."""
    args = [inputs["a"].astype(np.float64), inputs["b"].astype(np.float64)]
    want = REFERENCE[fn](*args[:S.FLOAT_FUNCTIONS[fn]])
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - want) <= (S.FUNCTION_ERROR_ULPS[fn] + 0.5) * ulp


VALUES = st.lists(st.floats(-20, 20, allow_nan=False, width=32), min_size=1, max_size=N)


@pytest.mark.parametrize("fn", NEW_FUNCTIONS)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=VALUES)
def test_simulator_value_is_numpy_float64_within_the_bound(fn, values):
    inputs = function_inputs(fn, values)
    got = tt.simulate(function_schedule(fn), inputs).outputs["y"]
    assert got.dtype == np.float32
    assert within_bound(fn, got, inputs).all()


@pytest.mark.parametrize("fn", NEW_FUNCTIONS)
def test_one_flop_per_call_and_rendered_under_its_opencl_name(fn):
    sch = function_schedule(fn)
    assert tt.simulate(sch, compute_values=False).counts.flop == N
    args = "a[i], b[i]" if fn == "pow" else "a[i]"
    assert f"y[i] = {fn}({args});" in tt.generate(sch).source


def test_sum_length_adds_twice_the_bound_and_knows_the_values_at_zero():
    assert S.FUNCTION_ERROR_ULPS == {"sqrt": 3, "rsqrt": 2, "exp": 3, "exp2": 3, "log": 3,
                                     "log2": 3, "pow": 16, "sin": 4, "cos": 4, "tanh": 5,
                                     "erf": 16}
    z = sum_length.ZERO
    assert sum_length.rounded_function("tanh", 3).item() == 3 + 10
    assert sum_length.rounded_function("tanh", z).item() == z      # tanh(0) = 0
    assert sum_length.rounded_function("cos", z).item() == 0       # cos(0) = 1
    assert sum_length.rounded_function("pow", 2, 5).item() == 2 + 5 + 32
    assert sum_length.rounded_function("pow", z, 5).item() == 5 + 32


def _pocl_queue():
    cl = pytest.importorskip("pyopencl")
    for platform in cl.get_platforms():
        if "portable" in platform.name.lower() or "pocl" in platform.name.lower():
            context = cl.Context(platform.get_devices()[:1])
            return cl, context, cl.CommandQueue(context)
    pytest.skip("no PoCL device")


def run_on_pocl(sch: S.Schedule, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The generated OpenCL C of ``sch`` launched once on PoCL: its output buffers."""
    cl, context, queue = _pocl_queue()
    kernel = tt.generate(sch)
    program = cl.Program(context, kernel.source).build(options=list(kernel.build_options))
    shapes = {a.name: a.shape for a in sch.arrays}
    params = dict(sch.params)
    buffers, outputs, args = {}, {}, []
    for arg in kernel.args:
        if arg.kind in ("global_in", "global_inout", "global_out"):
            size = int(np.prod([params[d] if isinstance(d, str) else d
                                for d in shapes[arg.name]]))
            host = inputs.get(arg.name, np.zeros(size, np.float32)).astype(np.float32).ravel()
            buffers[arg.name] = cl.Buffer(context, cl.mem_flags.READ_WRITE |
                                          cl.mem_flags.COPY_HOST_PTR, hostbuf=host)
            outputs[arg.name] = np.empty_like(host)
            args.append(buffers[arg.name])
        elif arg.kind == "int":
            args.append(np.int32(params[arg.name]))
        elif arg.kind == "long":
            args.append(np.int64(params[arg.name]))
        else:
            args.append(np.float32(params[arg.name]))
    getattr(program, kernel.name)(queue, kernel.global_size, kernel.local_size, *args)
    for name, host in outputs.items():
        cl.enqueue_copy(queue, host, buffers[name])
    queue.finish()
    return outputs


@pytest.mark.parametrize("fn", NEW_FUNCTIONS)
def test_generated_opencl_on_pocl_equals_the_simulator(fn):
    inputs = function_inputs(fn, list(np.random.default_rng(5).normal(0, 4, N)))
    sch = function_schedule(fn)
    simulated = tt.simulate(sch, inputs).outputs["y"]
    device = run_on_pocl(sch, inputs)["y"]
    assert within_bound(fn, device, inputs).all() and within_bound(fn, simulated, inputs).all()
    ulp = np.spacing(np.abs(simulated))
    assert (np.abs(device - simulated) <= 2 * S.FUNCTION_ERROR_ULPS[fn] * ulp).all()


def test_an_unknown_function_is_refused_with_the_known_ones():
    with pytest.raises(tt.ScheduleError, match="not one of fmax, .*tanh, erf"):
        S.FCall("fmod", (S.FConst(1.0),))


# ---------------------------------------------------------------------------- integers
BITS_KERNEL = """
__kernel void bits(__global float *C, int p, uint q, int s, int n)
{
    int i = get_global_id(0);
    if (i >= n) return;
    int x = i * p - 37;
    uint u = (uint)i * q;
    C[6 * i + 0] = (float)(x & p);
    C[6 * i + 1] = (float)(x | (i << 3));
    C[6 * i + 2] = (float)((x ^ ~i) >> (s & 7));
    C[6 * i + 3] = (float)(u >> s);
    C[6 * i + 4] = (float)((u << (i % 5)) ^ q);
    C[6 * i + 5] = (float)(i < p ? x >> 1 : (q == 0u ? 7 : (int)(u / q)));
}
"""


def bits_schedule(p: int, q: int, s: int) -> S.Schedule:
    return tt.from_opencl(BITS_KERNEL, "bits", [N], [16],
                          {"C": {"shape": [6 * (N - 3)], "access": "out"}, "p": p, "q": q, "s": s,
                           "n": N - 3})


def bits_expected(p: int, q: int, s: int) -> np.ndarray:
    """What C computes, in numpy's 32-bit integers (wrapping as C's do)."""
    with np.errstate(over="ignore"):
        i = np.arange(N - 3, dtype=np.int32)
        x = i * np.int32(p) - np.int32(37)
        u = i.astype(np.uint32) * np.uint32(q)
        shift = np.uint32(s & 31)                   # OpenCL C: the count modulo 32
        cols = [x & np.int32(p), x | (i << 3), (x ^ ~i) >> (s & 7), u >> shift,
                (u << (i % 5).astype(np.uint32)) ^ np.uint32(q)]
        other = np.full_like(i, 7) if q == 0 else (u // np.uint32(q)).astype(np.int32)
        cols.append(np.where(i < p, x >> 1, other))
    return np.stack([c.astype(np.float32) for c in cols], axis=1).ravel()


WRITTEN = slice(0, 6 * (N - 3))
"""The elements of C (the work-items with i < n write them all)."""


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(p=st.integers(-3000, 3000), q=st.integers(0, 2 ** 31 - 1) | st.just(0),
       s=st.integers(-40, 40))
def test_bitwise_shifts_and_select_simulate_as_c(p, q, s):
    sch = bits_schedule(p, q, s)
    result = tt.simulate(sch, hazards="report")
    np.testing.assert_array_equal(result.outputs["C"][WRITTEN], bits_expected(p, q, s))
    assert result.hazards == []      # u / q is evaluated only where q != 0


@pytest.mark.parametrize("p, q, s", [(7, 0, 35), (-1000, 2000000001, -3), (33, 12345, 9)])
def test_bitwise_shifts_and_select_on_pocl_equal_the_simulator(p, q, s):
    sch = bits_schedule(p, q, s)
    simulated = tt.simulate(sch).outputs["C"]
    np.testing.assert_array_equal(run_on_pocl(sch, {})["C"][WRITTEN], simulated[WRITTEN])
    np.testing.assert_array_equal(simulated[WRITTEN], bits_expected(p, q, s))


def test_masks_of_low_and_high_bits_and_constant_shifts_stay_affine():
    sch = tt.from_opencl(
        "__kernel void k(__global float *C, uint k)\n{\n    uint i = get_global_id(0);\n"
        "    uint k4 = k & ~3u;\n    C[(i & 7u) + (k4 >> 2) + (i << 1)] = 1.0f;\n}\n",
        "k", [16], [8], {"C": {"shape": [64], "access": "out"}, "k": 11})
    ops = {n.op for n in walk(sch.body) if isinstance(n, S.BinOp)}
    assert not ops & set(S.BITWISE_OPS), ops
    assert classes_problem(sch) is None


def test_integer_operators_in_python():
    i = S.Var("i")
    assert isinstance(i & 3, S.BinOp) and (i & 3).op == "&"
    assert [(e.op) for e in (i | 1, i ^ 1, i << 2, i >> 1)] == ["|", "^", "<<", ">>"]
    assert eval_static(~S.Const(5), {}) == -6
    assert eval_static(S.Const(-7) >> 1, {}) == -4
    assert eval_static(S.int_select(S.Param("n") < 3, 10, 20), {"n": 2}) == 10
    with pytest.raises(ExecutionError, match="shift counts are 0 to 63"):
        eval_static(S.Const(1) << 64, {})
    with pytest.raises(TypeError, match="condition"):
        S.int_select(1, 2, 3)


@given(a=st.integers(-300, 300), b=st.integers(-300, 300), c=st.integers(-300, 300),
       d=st.integers(-300, 300), op=st.sampled_from(S.BITWISE_OPS))
def test_bounds_of_the_bitwise_operators_hold(a, b, c, d, op):
    (a, b), (c, d) = sorted((a, b)), sorted((c, d))
    if op in ("<<", ">>"):
        c, d = min(max(c, 0), 20), min(max(d, 0), 20)
    lo, hi = int_op_bounds(op, (a, b), (c, d))
    fn = {"&": lambda x, y: x & y, "|": lambda x, y: x | y, "^": lambda x, y: x ^ y,
          "<<": lambda x, y: x << y, ">>": lambda x, y: x >> y}[op]
    for x in {a, b, (a + b) // 2}:
        for y in {c, d, (c + d) // 2}:
            assert lo <= fn(x, y) <= hi


# ---------------------------------------------------------------------------- analyses
def _one_store(index: S.IntExpr, k: bool = False) -> S.Schedule:
    y = S.GlobalArray("y", "out", ("M",))
    x = S.GlobalArray("x", "in", ("M", "K"))
    g = S.Let("g", S.global_id(0))
    value = x[S.Const(0), index % 4] if k else S.FConst(1.0)
    body = S.block(g, S.store(y, (index if not k else g.var,), value))
    params = (("M", 256), ("K", 32))
    return S.Schedule(family="ops", kernel_name="ops", params=params, arrays=(y, x),
                      local_arrays=(), local_size=(16,), global_size=(256,), body=body,
                      tile=16)


def test_work_group_classes_decline_a_bitwise_operator_of_the_work_group_id():
    g = S.Var("g")
    assert "bitwise operator ^" in classes_problem(_one_store(g ^ 1))
    assert classes_problem(_one_store(g + (S.local_id(0) & 1))) is None  # no group id in it
    split = S.int_select(S.local_id(0) < 8, g, S.local_id(0))
    assert "move differently" in classes_problem(_one_store(split))
    same = S.int_select(S.local_id(0) < 8, g, g - S.local_id(0) + 3)
    assert classes_problem(_one_store(same)) is None


def test_closed_forms_decline_bitwise_operators_and_take_select_piecewise():
    space = derived_counts._Space(("N",), 1, [])
    affine = derived_counts._Affine(space, {"N": space.aff("N")}, (8,))
    with pytest.raises(derived_counts.NotAffine, match="bitwise operator &"):
        affine.int(S.Param("N") & 3, {})
    chosen = affine.int(S.int_select(S.local_id(0) < 3, S.Param("N"), 2), {})
    assert chosen.eq_set(space.const(2)).is_equal(
        affine.cond(S.local_id(0) >= 3, {}).union(affine.cond(S.Param("N").eq(2), {})))


CLAMPED = """
__kernel void k(__global const float *A, __global float *B, int n)
{
    int i = get_global_id(0);
    int j = i < n ? i : n - 1;
    B[i] = 0.0f;
    if (j > 6)
        B[i] = A[j] + A[i < 5 ? 0 : j - 5];
}
"""


@pytest.mark.parametrize("n", [1, 20, 64])
def test_closed_forms_of_a_kernel_with_integer_select_equal_the_simulation(n):
    sch = tt.from_opencl(CLAMPED, "k", [64], [16], {"A": {"shape": [64], "access": "in"},
                                                    "B": {"shape": [64], "access": "out"},
                                                    "n": n})
    derived = derive(sch)
    assert not any("?:" in why for why in derived.not_derived.values())
    counts = tt.simulate(sch, compute_values=False).counts.to_dict()
    values = derived.evaluate()
    assert values["global_load_elems"] == counts["global_load_elems"]
    assert (counts["global_load_elems"] > 0) == (n > 7)
    assert values["global_store_elems"] == counts["global_store_elems"]
    assert values["flop"] == counts["flop"]


def test_k_extrapolation_declines_a_bitwise_operator_of_k():
    k = S.Param("K")
    sch = _one_store(S.global_id(0) + (k ^ 1) - k, k=True)
    assert "bitwise operator ^" in k_extrapolation_problem(sch)


def test_a_shift_count_out_of_range_is_refused_only_where_a_work_item_shifts():
    """``if (i < limit) y[i] = (float)(2**62 >> (58 + i))``: work-items 0 to 5 shift by 58 to
    63; a count of 64 and more is refused, but only where the guard lets a work-item
    shift."""
    y = S.GlobalArray("y", "out", ("N",))
    i = S.Let("i", S.global_id(0))

    def schedule(limit: int) -> S.Schedule:
        value = S.IntToFloat(S.Const(2 ** 62) >> (S.Const(58) + i.var))
        body = S.block(i, S.store(y, (i.var,), S.FConst(0.0)),
                       S.If(i.var < limit, (S.store(y, (i.var,), value),)))
        return S.Schedule(family="shifts", kernel_name="shifts", params=(("N", 16),),
                          arrays=(y,), local_arrays=(), local_size=(16,), global_size=(16,),
                          body=body, tile=16)

    got = tt.simulate(schedule(6)).outputs["y"]
    assert list(got[:6]) == [16.0, 8.0, 4.0, 2.0, 1.0, 0.0]
    with pytest.raises(ExecutionError, match=r"shifts by 64 for the work-item of global id "
                                             r"\(6,\)"):
        tt.simulate(schedule(7))
