"""C's fixed-width integers: the IR's ``Wrap`` (simulator, static evaluation, code generator)
and the OpenCL front end's unsigned arithmetic, which wraps around as on the device
(``uint``: modulo 2**32) or, for 64-bit ``size_t`` values the simulator cannot hold, is
refused where a work-item computes one (exit 2)."""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from click.testing import CliRunner

import tiletraffic as tt
from tiletraffic.analysis.cli import main
from tiletraffic.frontend.opencl.translate import FrontendError
from tiletraffic.gpu.codegen.generate import generate, render_block, render_int
from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.engine.simulation import simulate
from tiletraffic.simulator.ir.static import ExecutionError, eval_static, wrap_int
from tiletraffic.simulator.ir.wellformed import check_well_formed

N = 16


def _schedule(body, n=N, local=8):
    A = S.GlobalArray("A", "in", ("N",))
    B = S.GlobalArray("B", "inout", ("N",))
    return S.Schedule(family="wrap-test", kernel_name="wrap_test", params=(("N", n),),
                      arrays=(A, B), local_arrays=(), local_size=(local,), global_size=(n,),
                      body=S.block(body), tile=local)


A_ = S.GlobalArray("A", "in", ("N",))
B_ = S.GlobalArray("B", "inout", ("N",))
I = S.global_id(0)
NP = S.Param("N")


def _inputs(n=N):
    rng = np.random.default_rng(0)
    return {"A": rng.standard_normal(n).astype(np.float32),
            "B": rng.standard_normal(n).astype(np.float32)}


# ------------------------------------------------------------------------ the IR's Wrap
@pytest.mark.parametrize("value, bits, signed, expected", [
    (-1, 32, False, 2 ** 32 - 1), (2 ** 32 + 5, 32, False, 5), (2 ** 31, 32, True, -2 ** 31),
    (-1, 16, False, 65535), (255, 8, True, -1), (-2 ** 31 - 1, 32, True, 2 ** 31 - 1)])
def test_wrap_int_converts_as_c_does(value, bits, signed, expected):
    assert wrap_int(value, bits, signed) == expected
    assert wrap_int(np.array([value], np.int64), bits, signed)[0] == expected
    assert eval_static(S.Wrap(S.Const(value), bits, signed), {}) == expected


def test_a_wrapped_guard_is_false_where_the_unsigned_difference_wraps():
    j = S.wrap(I - 1)                      # (uint)(i - 1): 4294967295 at i = 0
    sch = _schedule(S.If(j < NP, (S.store(B_, (j,), A_[I]),)))
    check_well_formed(sch)
    x = _inputs()
    result = simulate(sch, x, hazards="report")
    assert result.hazards == []
    expected = x["B"].copy()
    expected[:-1] = x["A"][1:]
    np.testing.assert_array_equal(result.outputs["B"], expected)


def test_an_unguarded_wrapped_index_is_out_of_bounds_at_the_wrapped_value():
    sch = _schedule(S.store(B_, (S.wrap(I - 1),), A_[I]))
    [hazard] = simulate(sch, _inputs(), hazards="report").hazards
    assert hazard.kind == "out-of-bounds" and hazard.index == 2 ** 32 - 1


def test_a_negative_unsigned_64_bit_value_is_refused_naming_the_work_item():
    j = S.Wrap(I - 1, 64, False, "k.cl:4:9: i - 1")
    sch = _schedule(S.If(j < NP, (S.store(B_, (I - 1,), A_[I]),)))
    with pytest.raises(ExecutionError) as err:
        simulate(sch, _inputs())
    text = str(err.value)
    assert text.startswith("k.cl:4:9: i - 1 is -1 for the work-item of global id (0,)")
    assert str(2 ** 64 - 1) in text and "not a fault of the kernel" in text
    assert "\n" not in text


def test_the_unsigned_64_bit_check_reads_only_the_work_items_that_compute_it():
    """Under an ``if`` and behind ``&&``/``||`` (C evaluates the right operand only where
    the left one does not decide), a work-item whose value would be negative is no
    refusal."""
    j = S.Wrap(I - 1, 64, False, "k.cl:4:9: i - 1")
    store = S.store(B_, (I - 1,), A_[I])
    for body in (S.If(I > 0, (S.If(j < NP, (store,)),)),
                 S.If((I > 0) & (j < NP), (store,)),
                 S.If(~(I.eq(0) | ~(j < NP)), (store,))):
        x = _inputs()
        result = simulate(_schedule(body), x, hazards="report")
        assert result.hazards == []
        np.testing.assert_array_equal(result.outputs["B"][:-1], x["A"][1:])


def test_the_unsigned_64_bit_check_holds_in_a_loop_run_by_the_accelerators():
    """A loop of stores (run in blocks of iterations without values) still refuses a
    negative unsigned 64-bit value of an executing work-item, and none of the others."""
    for lo, refused in ((0, True), (1, False)):
        body = S.For("k", S.Const(lo), NP, S.Const(1),
                     (S.If(S.Wrap(S.Var("k") - 1, 64, False, "k.cl:5:9: k - 1") < NP,
                           (S.store(B_, (I,), A_[S.Var("k")]),)),))
        sch = _schedule(body)
        for values in (False, True):
            run = (lambda: simulate(sch, _inputs(), compute_values=values)) if values else \
                (lambda: simulate(sch, compute_values=False))
            if refused:
                with pytest.raises(ExecutionError, match="k - 1 is -1"):
                    run()
            else:
                run()


def test_codegen_renders_a_wrap_as_a_long_of_the_wrapped_value():
    a = S.Var("a")
    assert render_int(S.wrap(a - 1))[0] == "(long)(unsigned int)(a - 1)"
    assert render_int(S.wrap(a, 32, True))[0] == "(long)(int)(a)"
    assert render_int(S.wrap(a, 16))[0] == "(long)(unsigned short)(a)"
    assert render_int(S.Wrap(a - 1, 64, False))[0] == "(long)(a - 1)"
    lines = render_block((S.Let("j", S.wrap(I - 1)), S.Let("k", S.Var("j") + 1),
                          S.Let("m", S.minimum(S.Var("k"), NP)), S.Let("q", I + 1)))
    assert [ln.strip() for ln in lines] == [
        "const long j = (long)(unsigned int)((int)get_global_id(0) - 1);",
        "const long k = j + 1;",
        "const long m = min((long)(k), (long)(N));",
        "const int q = (int)get_global_id(0) + 1;"]


def test_wrap_refuses_a_width_c_has_no_type_of():
    with pytest.raises(S.ScheduleError, match="bits = 24"):
        S.Wrap(S.Const(1), 24)


# ------------------------------------------------------------------------ the front end
def _parse(source, n=64, local=16, b_size=128):
    return tt.from_opencl(source, "k", [n], [local],
                          {"A": {"shape": [n], "access": "in"},
                           "B": {"shape": [b_size], "access": "inout"}, "n": n})


ISSUE_UINT = """__kernel void k(__global const float *A, __global float *B, const uint n) {
    uint i = get_global_id(0);
    if (i - 1 < n)
        B[i - 1] = A[i];
}"""
ISSUE_SIZE_T = ISSUE_UINT.replace("uint i", "size_t i")


def test_a_uint_guard_that_wraps_at_zero_is_false_there_as_on_the_device():
    sch = _parse(ISSUE_UINT)
    assert tt.check(sch) == []
    x = _inputs(64)
    x["B"] = np.random.default_rng(1).standard_normal(128).astype(np.float32)
    out = simulate(sch, x).outputs["B"]
    expected = x["B"].copy()
    expected[:63] = x["A"][1:]
    np.testing.assert_array_equal(out, expected)


def test_uint_arithmetic_wraps_modulo_2_to_the_32_as_numpy_uint32():
    """A multiplicative hash (the product beyond 2**32), ``>>``, ``/`` and ``min`` of a
    wrapped difference, its conversion to ``int`` (congruent: -3) and to ``long``
    (4294967293), and a ``ushort``: each as numpy's fixed-width integers compute it."""
    src = """__kernel void k(__global const float *A, __global float *B, const uint n) {
        const uint i = get_global_id(0);
        const uint h = i * 2654435761u;
        B[i] = A[h % n] + A[(h >> 7) % n];
        const uint j = i - 3;
        const int back = j;
        const long wide = j;
        const ushort u = i - 1;
        if (j / 2 < n / 2 && wide < n) B[64 + min(j, n - 1)] = A[i];
        if (back < 0) B[129 + i] = A[back + 3];
        if (u >= n) B[128] = A[u % n];
    }"""
    sch = _parse(src, b_size=132)
    assert tt.check(sch) == []
    x = _inputs(64)
    x["B"] = np.random.default_rng(1).standard_normal(132).astype(np.float32)
    out = simulate(sch, x).outputs["B"]
    a, expected = x["A"].astype(np.float64), x["B"].astype(np.float64)
    i = np.arange(64, dtype=np.uint32)
    h = i * np.uint32(2654435761)
    expected[:64] = a[h % 64] + a[(h >> 7) % 64]
    j = i - np.uint32(3)
    keep = (j // 2 < 32) & (j.astype(np.int64) < 64)
    expected[64 + np.minimum(j, 63)[keep]] = a[i[keep]]
    back = j.astype(np.int32)
    expected[129 + i[back < 0]] = a[back[back < 0] + 3]
    u = (i.astype(np.int32) - 1).astype(np.uint16)
    [wrapped] = u[u >= 64]                     # 65535, at i = 0
    expected[128] = a[wrapped % 64]
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_a_size_t_difference_below_zero_is_refused_with_its_source_and_work_item():
    with pytest.raises(ExecutionError) as err:
        simulate(_parse(ISSUE_SIZE_T), compute_values=False)
    text = str(err.value)
    assert text.startswith("<source>:3:9: i - 1 is -1 for the work-item of global id (0,) "
                           "(local id (0,) of work-group (0,))")


@pytest.mark.parametrize("body", [
    "size_t i = get_global_id(0); if (i > 0) B[i - 1] = A[i];",
    "size_t i = get_global_id(0); if (i >= 1 && i - 1 < n) B[i - 1] = A[i];",
    "size_t i = get_global_id(0); if (i == 0 || i - 1 >= n) return; B[i - 1] = A[i];",
    "int j = get_global_id(0) - 1; if (j >= 0) B[j] = A[j + 1];",
    "size_t i = get_global_id(0); if (i < n) B[i] = A[n - 1 - i];",
    "size_t l = get_local_id(0); if (l > 0) B[get_global_id(0) - 1] = A[l - 1];",
], ids=["guard-first", "and", "or-return", "int-from-size_t", "reversed", "local-id"])
def test_size_t_kernels_whose_differences_never_go_below_zero_run(body):
    src = ("__kernel void k(__global const float *A, __global float *B, const int n) "
           f"{{ {body} }}")
    sch = _parse(src)
    assert tt.check(sch) == []
    assert simulate(sch, compute_values=False).counts.global_store_elems > 0


def test_a_countdown_of_a_uint_that_never_ends_is_refused_not_cut_short():
    src = """__kernel void k(__global const float *A, __global float *B, const int n) {
        float acc = 0.0f;
        for (uint s = 4; s >= 0; s--) acc += A[s];
        B[get_global_id(0)] = acc;
    }"""
    with pytest.raises(FrontendError, match="more than 256 iterations"):
        _parse(src)


def test_a_loop_variable_below_zero_compared_as_unsigned_is_refused():
    src = """__kernel void k(__global const float *A, __global float *B, const uint n) {
        float acc = 0.0f;
        for (int k = -1; k < n; k += 16) acc += A[get_global_id(0)];
        B[get_global_id(0)] = acc;
    }"""
    with pytest.raises(FrontendError,
                       match=r"<source>:3:26: loop condition k < n: k starts at -1 and is "
                             r"compared as uint"):
        _parse(src)


def test_kernels_without_wrap_around_keep_their_ir():
    """The examples' schedules hold no Wrap: their guards and indices stay in range."""
    from pathlib import Path

    examples = sorted((Path(__file__).resolve().parent.parent / "examples" / "opencl")
                      .glob("*.toml"))
    assert examples
    for path in examples:
        body = tt.build(str(path)).body
        assert not any(isinstance(n, S.Wrap) for n in _nodes(body)), path.name


def _nodes(node):
    """Every IR node under ``node``."""
    yield node
    if isinstance(node, tuple):
        for n in node:
            yield from _nodes(n)
    elif isinstance(node, (S.Stmt, S.IntExpr, S.Cond, S.FloatExpr)):
        for f in node.__dataclass_fields__:
            yield from _nodes(getattr(node, f))


def _rendered(sch):
    """The parsed schedule's IR rendered by the code generator (not the user's text)."""
    return dataclasses.replace(sch, extra={})


def test_the_rendered_ir_parses_back_to_the_same_results():
    sch = _parse(ISSUE_UINT)
    source = generate(_rendered(sch)).source
    assert "(long)(unsigned int)(i - 1)" in source
    args = {**dict(sch.params),
            **{a.name: {"shape": list(a.shape), "access": a.role} for a in sch.arrays}}
    again = tt.from_opencl(source, sch.kernel_name, [64], [16], args)
    assert "opencl" in again.extra and any(isinstance(n, S.Wrap) for n in _nodes(again.body))
    x = _inputs(64)
    x["B"] = np.zeros(128, np.float32)
    np.testing.assert_array_equal(simulate(again, x).outputs["B"],
                                  simulate(sch, x).outputs["B"])


def _write_launch(folder, source, name="k"):
    (folder / f"{name}.cl").write_text(source)
    (folder / f"{name}.toml").write_text(f"""
source = "{name}.cl"
kernel = "k"
[sizes]
N = 64
[launch]
global_size = ["N"]
local_size = [16]
[args]
A = {{ shape = ["N"], access = "in" }}
B = {{ shape = ["2 * N"], access = "inout" }}
n = "N"
""")
    return str(folder / f"{name}.toml")


def test_check_of_the_uint_kernel_is_clean_and_the_size_t_one_is_refused(tmp_path):
    runner = CliRunner()
    clean = runner.invoke(main, ["check", _write_launch(tmp_path, ISSUE_UINT, "u32")])
    assert clean.exit_code == 0, clean.output
    assert "clean" in clean.output
    refused = runner.invoke(main, ["check", _write_launch(tmp_path, ISSUE_SIZE_T, "u64")])
    assert refused.exit_code == 2, refused.output
    [line] = [ln for ln in refused.output.splitlines() if ln.strip()]
    assert line.startswith("error: ") and "u64.cl:3:9: i - 1 is -1 for the work-item of " \
        "global id (0,)" in line and "Traceback" not in refused.output


oclgrind = pytest.importorskip("tiletraffic.gpu.oclgrind.oclgrind")


@pytest.mark.skipif(not oclgrind.oclgrind_available(), reason="no Oclgrind platform")
def test_crosscheck_agrees_with_oclgrind_on_the_uint_kernel_and_its_rendered_ir(tmp_path):
    from tiletraffic.gpu.oclgrind.crosscheck import compare_counts, compare_hazards
    sch = _parse(ISSUE_UINT)
    for target in (sch, _rendered(sch)):
        hazards = compare_hazards(target)
        assert hazards.agree and hazards.simulator_kinds == [] and \
            hazards.oclgrind_kinds == [], hazards.to_dict()
        counts = compare_counts(target)
        assert counts.equal, counts.to_dict()
    result = CliRunner().invoke(main, ["crosscheck", _write_launch(tmp_path, ISSUE_UINT),
                                       "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)[0]["equal"]


def _pocl():
    from tiletraffic.gpu.devices.device import list_devices
    found = [d for d in list_devices() if "portable" in d.platform_name.lower()
             or "pocl" in d.platform_name.lower()]
    return f"{found[0].platform_index}:{found[0].device_index}" if found else None


def test_the_device_computes_what_the_simulator_does_from_the_source_and_the_rendered_ir():
    device = _pocl()
    if device is None:
        pytest.skip("no PoCL device")
    sch = _parse("""__kernel void k(__global const float *A, __global float *B, const uint n) {
        const uint i = get_global_id(0);
        const uint h = i * 2654435761u;
        const uint j = i - 3;
        B[i] = A[h % n];
        if (j < n) B[64 + min(j, n - 1)] = A[(h >> 7) % n];
    }""")

    def simulated(inputs):
        out = simulate(sch, {k: np.asarray(v, np.float32) for k, v in inputs.items()})
        return out.outputs["B"].astype(np.float64)

    for target in (sch, _rendered(sch)):
        assert tt.run(target, device, repeat=10, warmup=1, reference=simulated,
                      seed=3).check.ok
