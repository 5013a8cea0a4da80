"""C's fixed-width integers: the IR's ``Wrap`` in the simulator, the static evaluation and
the code generator."""
from __future__ import annotations


import numpy as np
import pytest

from tiletraffic.gpu.codegen import render_block, render_int
from tiletraffic.simulator import schedule as S
from tiletraffic.simulator.engine import simulate
from tiletraffic.simulator.static_ir import ExecutionError, eval_static, wrap_int
from tiletraffic.simulator.wellformed import check_well_formed

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
