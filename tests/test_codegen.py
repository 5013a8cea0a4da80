"""Tests of gpu.codegen.generate: the source it renders and, run on PoCL, the values it computes."""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tiletraffic.gpu.codegen.generate import generate, render_cond, render_float, render_int
from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.engine.simulation import simulate
from tiletraffic.simulator.kernels.families import FAMILIES, build
from strategies import (
    assert_matches_reference,
    output_name,
    random_inputs,
    reference,
    schedules,
    seeds,
    small_examples,
    tolerance,
)

SMALL = small_examples()


def _count_barriers(stmts) -> int:
    n = 0
    for s in stmts:
        if isinstance(s, S.Barrier):
            n += 1
        elif isinstance(s, S.If):
            n += _count_barriers(s.then) + _count_barriers(s.orelse)
        elif isinstance(s, S.For):
            n += _count_barriers(s.body)
    return n


# ------------------------------------------------------------------------ the source
@pytest.mark.parametrize("family", FAMILIES)
def test_source_names_kernel_and_fixes_work_group_size(family):
    schedule = SMALL[family]
    kernel = generate(schedule)
    assert kernel.name == schedule.kernel_name
    assert re.search(rf"__kernel\b[^;{{]*\bvoid\s+{schedule.kernel_name}\s*\(", kernel.source)
    reqd = list(schedule.local_size) + [1] * (3 - len(schedule.local_size))
    pattern = r"reqd_work_group_size\(\s*" + r"\s*,\s*".join(map(str, reqd)) + r"\s*\)"
    assert re.search(pattern, kernel.source), f"no reqd_work_group_size{tuple(reqd)}"
    assert kernel.local_size == schedule.local_size
    assert kernel.global_size == schedule.global_size
    assert kernel.local_mem_bytes == schedule.local_mem_bytes
    assert [(a.name, a.kind) for a in kernel.args] == (
        [(a.name, "global_out" if a.role == "out" else "global_in") for a in schedule.arrays]
        + [(name, "int") for name, _ in schedule.params])


@pytest.mark.parametrize("family", FAMILIES)
def test_one_barrier_call_per_barrier_statement(family):
    schedule = SMALL[family]
    expected = _count_barriers(schedule.body)
    assert expected == {"gemm-tiled": 2, "matvec-local": 2, "matvec-local-whole": 1,
                        "gemm-register-blocked": 2, "gemm-vectorized": 2,
                        "gemm-prefetch": 1, "gemm-warp-tiled": 1, "matvec-rows-reduce": 4}.get(family, 0)
    assert generate(schedule).source.count("barrier(CLK_LOCAL_MEM_FENCE)") == expected
    assert generate(schedule).source.count("barrier(") == expected


@pytest.mark.parametrize("tile", [1, 3, 7, 16])
def test_gemm_tiled_defines_the_tile_width(tile):
    kernel = generate(build("gemm-tiled", 20, 20, 20, tile=tile))
    source = kernel.source
    assert kernel.local_mem_bytes == 2 * 4 * tile * tile
    assert re.findall(r"^\s*#define\s+TILE\s+(\S+)\s*$", source, re.M) == [str(tile)]
    assert re.search(r"__local\s+float\s+tile_A\s*\[", source)
    assert re.search(r"__local\s+float\s+tile_B\s*\[", source)


def test_matvec_local_defines_chunk_and_work_group_size():
    source = generate(build("matvec-local", 20, 20, tile=32, chunk=12)).source
    assert re.findall(r"^\s*#define\s+CHUNK\s+(\S+)\s*$", source, re.M) == ["12"]
    assert re.findall(r"^\s*#define\s+WG_SIZE\s+(\S+)\s*$", source, re.M) == ["32"]
    assert re.search(r"__local\s+float\s+x_chunk\s*\[\s*(12|CHUNK)\s*\]", source)


# --------------------------------------------------------------- expression rendering
a, b, c = S.Var("a"), S.Var("b"), S.Var("c")


@pytest.mark.parametrize("expr, text", [
    ((a + b) * c, "(a + b) * c"),
    (a - (b - c), "a - (b - c)"),
    (a - (b + c), "a - (b + c)"),
    (a - b - c, "a - b - c"),
    (a // (b * c), "a / (b * c)"),
    (a % (b % c), "a % (b % c)"),
    ((a // b) * c, "a / b * c"),
    (a + b * c, "a + b * c"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_render_int_keeps_c_precedence(expr, text):
    assert render_int(expr)[0] == text


def test_render_cond_keeps_c_precedence():
    ab, bc = a < b, b.ne(c)
    assert render_cond((ab | bc) & (a >= c))[0] == "(a < b || b != c) && a >= c"
    assert render_cond(ab | (bc & (a >= c)))[0] in ("a < b || b != c && a >= c",
                                                    "a < b || (b != c && a >= c)")
    assert render_cond(~(ab & bc))[0] == "!(a < b && b != c)"


def _c_div(x: int, y: int) -> int:
    """C's ``x / y`` on ints: the quotient truncated toward zero."""
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


def _c_mod(x: int, y: int) -> int:
    """C's ``x % y``: ``x - (x / y) * y`` (the sign of ``x``)."""
    return x - _c_div(x, y) * y


class _CInt:
    """An int with C semantics for ``/`` and ``%`` (truncation toward zero), so that the
    rendered C text can be evaluated by Python, whose precedence of ``+ - * / %`` is C's."""

    def __init__(self, v):
        self.v = int(v)

    def __add__(self, o): return _CInt(self.v + o.v)
    def __sub__(self, o): return _CInt(self.v - o.v)
    def __mul__(self, o): return _CInt(self.v * o.v)
    def __truediv__(self, o): return _CInt(_c_div(self.v, o.v))
    def __mod__(self, o): return _CInt(_c_mod(self.v, o.v))


def _int_exprs():
    leaves = st.one_of(st.sampled_from([S.Param("p"), S.Param("q"), S.Param("r")]),
                       st.integers(-9, 9).map(S.Const))
    return st.recursive(
        leaves,
        lambda sub: st.builds(S.BinOp, st.sampled_from(["+", "-", "*", "/", "%"]), sub, sub),
        max_leaves=6)


def _c_value(expr, params):
    """Value of ``expr`` with C semantics, evaluated on the tree (not on its text)."""
    if isinstance(expr, S.Const):
        return expr.value
    if isinstance(expr, S.Param):
        return params[expr.name]
    left, right = _c_value(expr.left, params), _c_value(expr.right, params)
    if expr.op in "/%" and right == 0:
        raise ZeroDivisionError
    return {"+": lambda: left + right, "-": lambda: left - right, "*": lambda: left * right,
            "/": lambda: int(_c_div(left, right)), "%": lambda: int(_c_mod(left, right))}[
        expr.op]()


@given(expr=_int_exprs(), p=st.integers(-20, 20), q=st.integers(-20, 20),
       r=st.integers(-20, 20))
@example(expr=S.Param("p") * (S.Param("q") // S.Param("r")), p=2, q=3, r=2)
@example(expr=S.Param("p") * (S.Param("q") % S.Param("r")), p=2, q=3, r=2)
def test_rendered_int_expression_evaluates_like_the_tree(expr, p, q, r):
    params = {"p": p, "q": q, "r": r}
    try:
        expected = _c_value(expr, params)
    except ZeroDivisionError:
        return
    text = render_int(expr)[0]
    env = {k: _CInt(v) for k, v in params.items()}
    # Python's precedence of + - * / % is C's; negative literals become unary minus on a
    # _CInt in Python as in C.
    env["__builtins__"] = {}
    text_py = re.sub(r"(?<![\w)])(-?\d+)", lambda mt: f"_CInt({mt.group(1)})", text)
    env["_CInt"] = _CInt
    try:
        got = eval(text_py, env).v  # noqa: S307 - our own rendered arithmetic only
    except ZeroDivisionError:
        return
    assert got == expected, f"{text!r} evaluates to {got}, the tree to {expected}"


@pytest.mark.parametrize("expr, text", [
    (a * (b // c), "a * (b / c)"),
    (a * (b % c), "a * (b % c)"),
])
def test_render_int_keeps_parentheses_of_division_right_of_product(expr, text):
    assert render_int(expr)[0] == text


def test_render_float_keeps_the_ir_evaluation_order():
    x, y, z = S.Private("x"), S.Private("y"), S.Private("z")
    assert render_float(x + (y + z))[0] == "x + (y + z)"
    assert render_float(x * (y * z))[0] == "x * (y * z)"


def test_render_float_keeps_precedence():
    x, y, z = S.Private("x"), S.Private("y"), S.Private("z")
    assert render_float(x * (y + z))[0] == "x * (y + z)"
    assert render_float((x + y) * z)[0] == "(x + y) * z"
    assert render_float(x + y * z)[0] == "x + y * z"


def test_negation_renders_as_a_parenthesized_unary_minus():
    x, y = S.Private("x"), S.Private("y")
    assert render_float(-x)[0] == "(-(x))"
    assert render_float(x - -y)[0] == "x - (-(y))"
    assert render_float(-(x * y))[0] == "(-(x * y))"
    assert render_float(-S.FConst(2.0))[0] == "(-(2.0f))"


def test_constants_no_literal_writes_render_as_opencl_macros():
    assert render_float(S.FConst(float("inf")))[0] == "INFINITY"
    assert render_float(S.FConst(float("-inf")))[0] == "(-INFINITY)"
    assert render_float(S.FConst(float("nan")))[0] == "NAN"
    assert render_float(S.FConst(0.5))[0] == "0.5f"


# ---------------------------------------------------------------- run on PoCL via pyopencl
_POCL: dict = {}
_PROGRAMS: dict = {}
"""Built kernels by generated source (PoCL builds take 0.3-1 s each)."""


def _pocl():
    """(context, queue) on the PoCL CPU device; skip when PoCL is not installed."""
    if not _POCL:
        cl = pytest.importorskip("pyopencl")
        for platform in cl.get_platforms():
            if "Portable Computing Language" in platform.name:
                device = platform.get_devices()[0]
                ctx = cl.Context([device])
                _POCL.update(cl=cl, ctx=ctx, queue=cl.CommandQueue(ctx))
                break
        else:
            pytest.skip("no PoCL platform ('Portable Computing Language') found")
    return _POCL["cl"], _POCL["ctx"], _POCL["queue"]


def run_on_pocl(schedule, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Generate, build (cached by source), launch on PoCL; outputs in logical shapes."""
    cl, ctx, queue = _pocl()
    kernel = generate(schedule)
    if kernel.source not in _PROGRAMS:
        program = cl.Program(ctx, kernel.source).build(options=list(kernel.build_options))
        _PROGRAMS[kernel.source] = getattr(program, kernel.name)  # program.<kernel>
    cl_kernel = _PROGRAMS[kernel.source]
    p = schedule.param_values
    mf = cl.mem_flags
    args, outputs = [], {}
    for arg in kernel.args:
        if arg.kind == "int":
            args.append(np.int32(p[arg.name]))
        elif arg.kind == "global_in":
            host = np.ascontiguousarray(inputs[arg.name], dtype=np.float32)
            args.append(cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=host))
        else:
            shape = tuple(p[s] for s in schedule.array(arg.name).shape)
            host = np.full(shape, np.nan, dtype=np.float32)  # unwritten elements stay NaN
            outputs[arg.name] = (host, cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR,
                                                 hostbuf=host))
            args.append(outputs[arg.name][1])
    cl_kernel(queue, kernel.global_size, kernel.local_size, *args)
    for host, buf in outputs.values():
        cl.enqueue_copy(queue, host, buf)
    queue.finish()
    return {name: host for name, (host, _) in outputs.items()}


@settings(max_examples=8)   # each draw builds a kernel on PoCL; seven examples below
@given(schedule=schedules(max_size=40, max_matvec_tile=64, max_chunk=48), seed=seeds)
@example(schedule=SMALL["gemm-naive"], seed=11)
@example(schedule=SMALL["gemm-tiled"], seed=12)
@example(schedule=SMALL["matvec-naive"], seed=13)
@example(schedule=SMALL["matvec-local"], seed=14)
@example(schedule=SMALL["gemm-register-blocked"], seed=15)
@example(schedule=SMALL["gemm-vectorized"], seed=16)
# PoCL computed 0 here when the private accumulator array was zeroed by "= {0.0f}"
@example(schedule=build("gemm-register-blocked", 1, 1, 1, tile=1, tm=1, tn=2, bk=1, wg_rows=3),
         seed=0)
def test_generated_kernel_on_pocl_equals_simulator_and_numpy(schedule, seed):
    inputs = random_inputs(schedule, np.random.default_rng(seed))
    device = run_on_pocl(schedule, inputs)[output_name(schedule)]
    simulated = simulate(schedule, inputs).outputs[output_name(schedule)]
    assert_matches_reference(schedule, inputs, device, what="PoCL output")
    assert_matches_reference(schedule, inputs, simulated, what="simulated output")
    # device and simulator round differently (summation order, FMA contraction) but each is
    # within the bound of the exact result; so they are within twice the bound of each other
    _, abs_product = reference(schedule, inputs)
    bound = 2 * tolerance(schedule.param_values["K"], abs_product)
    assert np.all(np.abs(device.astype(np.float64) - simulated) <= bound)


def test_a_negation_runs_on_pocl_as_in_the_simulator():
    x, y = S.GlobalArray("x", "in", ("N",)), S.GlobalArray("y", "out", ("M",))
    g = S.Let("g", S.global_id(0))
    sch = S.Schedule(
        family="negation", kernel_name="negation", params=(("N", 16), ("M", 32)),
        arrays=(x, y), local_arrays=(), local_size=(16,), global_size=(16,),
        body=(g, S.store(y, g.var, -x[g.var] * 2.0),
              S.store(y, g.var + 16, -(x[g.var] * 0.0))), tile=16)
    inputs = {"x": np.random.default_rng(4).standard_normal(16).astype(np.float32)}
    simulated = simulate(sch, inputs)
    assert simulated.counts.flop == 2 * 16                 # the two *; no FLOP for a -
    device = run_on_pocl(sch, inputs)["y"]
    assert np.array_equal(device, simulated.outputs["y"])
    assert np.array_equal(np.signbit(device), np.signbit(simulated.outputs["y"]))
