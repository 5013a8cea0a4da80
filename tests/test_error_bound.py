"""The running error bound (simulator/engine/error_bound.py): sound on random kernels with
subtractions, divisions and functions (the float32 result, and a result with every
``a*b + c`` contracted into a fused multiply-add, stay within it of the float64 value), not
vacuous (wrong GEMM and layer-norm results are refused), and the tolerance of checks
against a user's reference."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tiletraffic as tt
from tiletraffic.simulator.engine import error_bound
from tiletraffic.simulator.engine.reference import references
from tiletraffic.simulator.engine.simulation import simulate
from tiletraffic.simulator.engine.tolerance import check_result
from tiletraffic.simulator.ir.nodes import FUNCTION_ERROR_ULPS, FConst, Private

U = 2.0 ** -24
N = 64
NAMES = ("a", "b", "c")


# ----------------------------------------------------------------- random expression trees
def trees(with_rounded_functions: bool = True):
    """Expression trees as tuples: ("in", name), ("const", x), (op, left, right) for op in
    + - * /, ("neg", t), ("sqrt", t) (of |t|), ("exp", t) (of t/8), ("fmax", l, r)."""
    leaves = st.one_of(st.sampled_from([("in", n) for n in NAMES]),
                       st.sampled_from([("const", x) for x in (0.1, 3.0, -1.75, 1e-3)]))

    def extend(inner):
        binary = st.tuples(st.sampled_from("+-*"), inner, inner)
        options = [binary, binary, st.tuples(st.just("neg"), inner),
                   st.tuples(st.just("fmax"), inner, inner)]
        if with_rounded_functions:
            options += [st.tuples(st.just("/"), inner, inner), st.tuples(st.just("sqrt"), inner),
                        st.tuples(st.just("exp"), inner)]
        return st.one_of(*options)

    return st.recursive(leaves, extend, max_leaves=8)


def ir_of(tree, loads):
    kind = tree[0]
    if kind == "in":
        return loads[tree[1]]
    if kind == "const":
        return FConst(tree[1])
    if kind == "neg":
        return -ir_of(tree[1], loads)
    if kind == "sqrt":
        return tt.sqrt(tt.fabs(ir_of(tree[1], loads)))
    if kind == "exp":
        return tt.exp(ir_of(tree[1], loads) * 0.125)
    if kind == "fmax":
        return tt.fmax(ir_of(tree[1], loads), ir_of(tree[2], loads))
    left, right = ir_of(tree[1], loads), ir_of(tree[2], loads)
    return {"+": left + right, "-": left - right, "*": left * right, "/": left / right}[kind]


def evaluate(tree, inputs, dtype, contract: bool = False):
    """The tree in numpy, every operation in ``dtype``; with ``contract``, ``x*y + z`` and
    ``x*y - z`` as one fused multiply-add (the product exact in float64, one rounding)."""
    def ev(t):
        kind = t[0]
        if kind == "in":
            return inputs[t[1]].astype(dtype)
        if kind == "const":
            return np.full(N, t[1], dtype)
        if kind == "neg":
            return -ev(t[1])
        if kind == "sqrt":
            return np.sqrt(np.abs(ev(t[1])))
        if kind == "exp":
            return np.exp(ev(t[1]) * dtype(0.125))
        if kind == "fmax":
            return np.fmax(ev(t[1]), ev(t[2]))
        if contract and kind in "+-" and "*" in (t[1][0], t[2][0]):
            side = 1 if t[1][0] == "*" else 2
            prod = ev(t[side][1]).astype(np.float64) * ev(t[side][2]).astype(np.float64)
            rest = ev(t[3 - side]).astype(np.float64)
            sign = -1.0 if kind == "-" else 1.0
            exact = prod + sign * rest if side == 1 else rest + sign * prod
            return exact.astype(dtype)
        left, right = ev(t[1]), ev(t[2])
        return {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}[kind](
            left, right, dtype=dtype)

    with np.errstate(all="ignore"):
        return ev(tree)


def magnitude(tree, inputs):
    """The tree at |inputs| with subtraction as addition (+ - * and fmax only)."""
    kind = tree[0]
    if kind == "in":
        return np.abs(inputs[kind and tree[1]].astype(np.float64))
    if kind == "const":
        return np.full(N, abs(tree[1]))
    if kind == "neg":
        return magnitude(tree[1], inputs)
    if kind == "fmax":
        return np.maximum(magnitude(tree[1], inputs), magnitude(tree[2], inputs))
    left, right = magnitude(tree[1], inputs), magnitude(tree[2], inputs)
    return left * right if kind == "*" else left + right


def operations(tree) -> int:
    return 0 if tree[0] in ("in", "const") else 1 + sum(operations(t) for t in tree[1:])


def elementwise(tree) -> tt.Schedule:
    arrays = {n: tt.GlobalArray(n, "in", ("N",)) for n in NAMES}
    y = tt.GlobalArray("y", "out", ("N",))
    i = tt.Let("i", tt.global_id(0))
    value = ir_of(tree, {n: a[i.var] for n, a in arrays.items()})
    body = tt.block(i, tt.If(i.var < tt.Param("N"), (tt.store(y, (i.var,), value),)))
    return tt.Schedule(family="random-expression", kernel_name="random_expression",
                       params=(("N", N),), arrays=(*arrays.values(), y), local_arrays=(),
                       local_size=(32,), global_size=(N,), body=body, tile=32)


def drawn_inputs(seed: int, cancelling: bool) -> dict[str, np.ndarray]:
    """Normal inputs, or (``cancelling``) b and c within a few ulp of a, so that every
    difference of them cancels."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(N).astype(np.float32)
    if not cancelling:
        return {"a": a, **{n: rng.standard_normal(N).astype(np.float32) for n in "bc"}}
    near = [(a * (1 + rng.integers(-4, 5, N) * 2.0 ** -23)).astype(np.float32)
            for _ in "bc"]
    return {"a": a, "b": near[0], "c": near[1]}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=trees(), seed=st.integers(0, 2**32 - 1), cancelling=st.booleans())
def test_float32_results_with_and_without_contraction_stay_within_the_bound(tree, seed,
                                                                           cancelling):
    inputs = drawn_inputs(seed, cancelling)
    res = simulate(elementwise(tree), inputs, error_bounds=True)
    bound = res.error_bounds["y"]
    exact = evaluate(tree, inputs, np.float64)
    simulated = res.outputs["y"].astype(np.float64)
    assert np.array_equal(simulated, evaluate(tree, inputs, np.float32), equal_nan=True)
    fused = evaluate(tree, inputs, np.float32, contract=True).astype(np.float64)
    assert np.all(bound >= 0)
    finite = np.isfinite(exact) & np.isfinite(bound) & (np.abs(exact) < 1e30)
    for device in (simulated, fused):
        with np.errstate(invalid="ignore"):
            err = np.abs(device - exact)
        assert np.all(err[finite] <= bound[finite]), (tree, np.max(err[finite] /
                                                                   bound[finite]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=trees(with_rounded_functions=False), seed=st.integers(0, 2**32 - 1),
       cancelling=st.booleans())
def test_the_bound_of_sums_and_products_is_a_few_roundings_of_the_magnitude(tree, seed,
                                                                           cancelling):
    """Not vacuous: at most ``2 * (ops + 1) * u`` times the magnitude (the tree at |inputs|
    with subtraction as addition; the one more for the literals' rounding to float32),
    plus the underflow allowance."""
    inputs = drawn_inputs(seed, cancelling)
    bound = simulate(elementwise(tree), inputs, error_bounds=True).error_bounds["y"]
    allowed = 2 * (operations(tree) + 1) * U * magnitude(tree, inputs) * (1 + 1e-6) + \
        operations(tree) * 2 * error_bound.FLT_MIN
    assert np.all(bound <= allowed + error_bound.REFERENCE_SLACK * magnitude(tree, inputs))


def test_a_difference_keeps_the_magnitude_of_its_operands():
    """x - y of nearly equal values: the bound is a rounding of |x| + |y|, not of the small
    difference (the reference at |inputs| would give 0)."""
    tree = ("-", ("*", ("in", "a"), ("in", "b")), ("*", ("in", "c"), ("in", "b")))
    inputs = drawn_inputs(7, cancelling=True)
    bound = simulate(elementwise(tree), inputs, error_bounds=True).error_bounds["y"]
    mag = 2 * np.abs(inputs["a"].astype(np.float64) * inputs["b"])
    assert np.all(bound >= U * mag)
    assert np.all(bound <= 4 * U * mag * 1.01)


# ------------------------------------------------------------------ not vacuous: GEMM
def test_a_gemm_result_passes_and_wrong_ones_are_refused():
    sch = tt.build("gemm-tiled", m=24, k=40, n=20, tile=8)
    rng = np.random.default_rng(3)
    inputs = {"A": rng.standard_normal((24, 40), dtype=np.float32),
              "B": rng.standard_normal((40, 20), dtype=np.float32)}
    res = simulate(sch, inputs, error_bounds=True)
    a64, b64 = inputs["A"].astype(np.float64), inputs["B"].astype(np.float64)
    ref, absprod = a64 @ b64, np.abs(a64) @ np.abs(b64)
    bound, c = res.error_bounds["C"], res.outputs["C"]
    assert res.sum_lengths["C"].max() == 40
    assert check_result(c, ref, 40, absprod, error_bound=bound).ok
    # the bound is at most Higham's gamma_K * |A||B| (deterministic, K = 40)
    gamma = 40 * U / (1 - 40 * U)
    assert np.all(bound <= gamma * absprod * (1 + 1e-5) + 1e-30)
    off = c.copy()
    off[5, 7] += np.float32(256) * np.spacing(np.abs(off[5, 7]))   # 256 ulp off
    bad = check_result(off, ref, 40, absprod, error_bound=bound)
    assert not bad.ok and bad.worst_index == (5, 7) and bad.mismatch_count == 1
    assert "running error bound" in bad.message("C")
    swapped = (inputs["A"] @ inputs["B"][[*range(1, 40), 0]]).astype(np.float32)  # k index
    assert check_result(swapped, ref, 40, absprod, error_bound=bound).mismatch_count == 480


# ------------------------------------------------------------- not vacuous: a layer norm
ROWS, COLS = 6, 48


def layer_norm() -> tt.Schedule:
    """y[r, j] = (x[r, j] - mean_r) / sqrt(var_r + 1e-5) * g[j] + h[j], one work-item per row,
    mean and variance summed in order."""
    x = tt.GlobalArray("x", "in", ("R", "C"))
    g, h = tt.GlobalArray("g", "in", ("C",)), tt.GlobalArray("h", "in", ("C",))
    y = tt.GlobalArray("y", "out", ("R", "C"))
    r = tt.Let("r", tt.global_id(0))
    j = tt.Var("j")
    mean, inv = Private("mean"), Private("inv")
    centred = x[r.var, j] - mean
    row = (
        tt.DeclareFloat("total", 0.0),
        tt.For("j", tt.Const(0), tt.Param("C"), tt.Const(1),
               (tt.Accumulate("total", x[r.var, j]),)),
        tt.DeclareFloat("mean", None),
        tt.Assign("mean", Private("total") / float(COLS)),
        tt.DeclareFloat("sq", 0.0),
        tt.For("j", tt.Const(0), tt.Param("C"), tt.Const(1),
               (tt.Accumulate("sq", centred * centred),)),
        tt.DeclareFloat("inv", None),
        tt.Assign("inv", 1.0 / tt.sqrt(Private("sq") / float(COLS) + 1e-5)),
        tt.For("j", tt.Const(0), tt.Param("C"), tt.Const(1),
               (tt.store(y, (r.var, j), centred * inv * g[j] + h[j]),)),
    )
    body = tt.block(r, tt.If(r.var < tt.Param("R"), row))
    return tt.Schedule(family="layer-norm", kernel_name="layer_norm",
                       params=(("R", ROWS), ("C", COLS)), arrays=(x, g, h, y), local_arrays=(),
                       local_size=(ROWS,), global_size=(ROWS,), body=body, tile=ROWS)


def layer_norm_reference(inputs):
    x = inputs["x"]
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * inputs["g"] + inputs["h"]


def test_a_layer_norm_result_passes_and_wrong_ones_are_refused():
    sch = layer_norm()
    rng = np.random.default_rng(11)
    inputs = {"x": (3.0 + rng.standard_normal((ROWS, COLS))).astype(np.float32),
              "g": rng.standard_normal(COLS).astype(np.float32),
              "h": rng.standard_normal(COLS).astype(np.float32)}
    (ref,) = references(sch, inputs, layer_norm_reference)
    assert ref.error_bound is not None and np.all(np.isfinite(ref.error_bound))
    out = simulate(sch, inputs).outputs["y"]
    assert check_result(out, ref.value, ref.k, ref.abs_product, error_bound=ref.error_bound).ok
    # the K-scaled tolerance, the reference at |inputs|, refuses this correct result
    assert not check_result(out, ref.value, ref.k, ref.abs_product).ok
    # the bound is within a few hundred roundings of the output's magnitude
    assert np.all(ref.error_bound <= 1000 * U * (np.abs(ref.value) + np.abs(inputs["h"]) + 1))
    off = out.copy()
    off[2, 9] += np.float32(4096) * np.spacing(np.abs(off[2, 9]))
    bad = check_result(off, ref.value, ref.k, ref.abs_product, error_bound=ref.error_bound)
    assert not bad.ok and bad.worst_index == (2, 9) and bad.mismatch_count == 1
    swapped = out[:, [1, 0, *range(2, COLS)]]
    assert check_result(swapped, ref.value, ref.k, ref.abs_product,
                        error_bound=ref.error_bound).mismatch_count == 2 * ROWS


# ------------------------------------------------------------------------ contract
def test_every_rounded_function_of_one_argument_has_its_rule():
    """Functions of one argument are bounded; ``pow`` (two) has no rule and says so, so that
    its launches keep the K-scaled tolerance."""
    from tiletraffic.simulator.ir.expressions import FLOAT_FUNCTIONS
    unary = {fn for fn in FUNCTION_ERROR_ULPS if FLOAT_FUNCTIONS[fn] == 1}
    assert unary <= set(error_bound.MONOTONE_FUNCTIONS) | set(error_bound.LIPSCHITZ_FUNCTIONS)
    with pytest.raises(error_bound.NoErrorBound, match="no rule for the function lgamma"):
        error_bound.rounded_function("lgamma", error_bound.of_value(np.ones(2)))
    one = error_bound.of_value(np.ones(2))
    with pytest.raises(error_bound.NoErrorBound, match="function pow of 2 argument"):
        error_bound.rounded_function("pow", one, one)


def test_a_division_by_a_value_that_may_be_zero_has_no_bound():
    """1 / y: bounded where |y| is far above its error, not where y is within twice its error
    of 0."""
    x = error_bound.of_value(np.array([1.0, 1.0]))
    y = error_bound.of_value(np.array([2.0, 1e-8]))
    y["e"] = 1e-7
    q = error_bound.divide(x, y)
    assert np.isfinite(q["e"][0]) and q["e"][1] == np.inf and q["m"][1] == np.inf


def test_error_bounds_need_values_and_exact_inputs():
    sch = tt.build("gemm-tiled", m=8, k=8, n=8, tile=4)
    with pytest.raises(tt.InputError, match="compute_values"):
        simulate(sch, compute_values=False, error_bounds=True)
    inputs = {"A": np.ones((8, 8), np.float32), "B": np.ones((8, 8), np.float32)}
    with pytest.raises(tt.InputError, match="exact inputs"):
        simulate(sch, inputs, error_bounds=True, input_sum_lengths={"A": 3})


def test_check_result_refuses_a_malformed_error_bound():
    ref = np.zeros((2, 2))
    with pytest.raises(ValueError, match="shapes differ"):
        check_result(ref, ref, 1, ref, error_bound=np.zeros(3))
    with pytest.raises(ValueError, match="negative or NaN"):
        check_result(ref, ref, 1, ref, error_bound=np.full((2, 2), -1.0))


def test_a_builtin_product_keeps_the_k_scaled_tolerance_and_a_reference_gets_the_bound():
    """|A|@|B| is the exact magnitude of a GEMM's sums: its check stays K-scaled; the same
    launch checked against a reference function gets each element's running bound."""
    sch = tt.build("gemm-tiled", m=8, k=12, n=8, tile=4)
    rng = np.random.default_rng(5)
    inputs = {"A": rng.standard_normal((8, 12), dtype=np.float32),
              "B": rng.standard_normal((12, 8), dtype=np.float32)}
    (builtin,) = references(sch, inputs)
    assert builtin.error_bound is None and builtin.k == 12
    (own,) = references(sch, inputs, lambda x: {"C": x["A"] @ x["B"]})
    assert own.error_bound.shape == (8, 8)
    assert np.all(own.error_bound <= 12 * U / (1 - 12 * U) * own.abs_product * (1 + 1e-5))


@pytest.mark.parametrize("fn", sorted(error_bound.LIPSCHITZ_FUNCTIONS))
def test_a_lipschitz_function_bounds_every_argument_within_the_error(fn, monkeypatch):
    monkeypatch.setitem(FUNCTION_ERROR_ULPS, fn, 4)
    f = error_bound.LIPSCHITZ_FUNCTIONS[fn][0]
    x = error_bound.of_value(np.linspace(-4.0, 4.0, 33))
    x["e"] = 1e-3
    out = error_bound.rounded_function(fn, x)
    shifts = np.linspace(-1e-3, 1e-3, 41)[:, None]
    worst = np.max(np.abs(f(x["v"] + shifts) - f(x["v"])), axis=0)   # exact arg = v
    assert np.all(out["e"] >= worst) and np.all(out["e"] <= 1e-3 + 1e-5)
    assert np.all(out["m"] >= np.abs(f(x["v"])))
