"""simulator.ir.wellformed: every built-in schedule passes; each kind of malformed schedule is
refused with the offending name in the message, and one that passes simulates and renders."""
from __future__ import annotations

import dataclasses

import pytest

from tiletraffic.gpu.codegen.generate import generate
from tiletraffic.simulator.kernels import families as schedules
from tiletraffic.simulator.engine.simulation import simulate
from tiletraffic.simulator.ir.nodes import (Accumulate, Assign, Barrier, Const, DeclareFloat,
                                            For, GlobalArray, If, Let, LocalArray, Param,
                                            Schedule, Var, global_id, local_id, store)
from tiletraffic.simulator.kernels.variants import build_any, names
from tiletraffic.simulator.ir.nodes import ScheduleError
from tiletraffic.simulator.ir.wellformed import MalformedScheduleError, check_well_formed

A = GlobalArray("A", "in", ("N",))
Y = GlobalArray("y", "out", ("N",))
T = LocalArray("t", (Const(4, "W"),))


def kernel(*body, arrays=(A, Y), local_arrays=(T,), local_size=(4,), global_size=(8,),
           params=(("N", 8),)) -> Schedule:
    return Schedule(family="mine", kernel_name="mine", params=params, arrays=arrays,
                    local_arrays=local_arrays, local_size=local_size, global_size=global_size,
                    body=tuple(body), tile=4)


GOOD = (Let("i", global_id(0)), Let("l", local_id(0)), DeclareFloat("s"),
        store(T, Var("l"), A[Var("i")]), Barrier(),
        For("j", Const(0), Const(4, "W"), Const(1), (Accumulate("s", T[Var("j")]),)),
        store(Y, Var("i"), DeclareFloat("s").ref))


@pytest.mark.parametrize("name", names())
def test_every_builtin_schedule_and_variant_is_well_formed(name):
    check_well_formed(build_any(name))


@pytest.mark.parametrize("family", schedules.FAMILIES)
@pytest.mark.parametrize("m,k,n,tile", [(1, 1, 1, 1), (33, 21, 17, 5)])
def test_families_at_edge_shapes_are_well_formed(family, m, k, n, tile):
    if family in ("gemm-vectorized", "gemm-warp-tiled"):  # float4: K, N multiples of 4
        k, n = 4 * k, 4 * n
    if family == "gemm-warp-tiled":  # whole sub-groups: tile x tile a multiple of 32
        tile = 8
    check_well_formed(schedules.build(family, m, k, n if family in schedules.ALL_GEMM_FAMILIES
                                      else None, tile))


def test_a_well_formed_kernel_simulates_and_renders():
    sch = kernel(*GOOD)
    check_well_formed(sch)
    assert simulate(sch, compute_values=False).counts.barriers == 2
    assert "mine" in generate(sch).source


@pytest.mark.parametrize("make,needle", [
    (lambda: kernel(Let("i", Var("nope") + 1)), "'nope'"),
    (lambda: kernel(If(global_id(0) < Param("N"), (Let("i", global_id(0)),)), store(Y, Var("i"), 1.0)),
     "Var('i')"),
    (lambda: kernel(For("j", Const(0), Const(2), Const(1), ()), store(Y, Var("j"), 1.0)), "Var('j')"),
    (lambda: kernel(Let("i", global_id(0)), store(A, Var("i"), 1.0)), "'A'"),
    (lambda: kernel(Let("i", global_id(0)), store(Y, Var("i"), DeclareFloat("s").ref)), "'s'"),
    (lambda: kernel(Assign("acc", A[0])), "'acc'"),
    (lambda: kernel(Let("i", Param("M"))), "Param('M')"),
    (lambda: kernel(Let("i", global_id(0)), Let("i", global_id(0) + 1)), "'i'"),
    (lambda: kernel(Let("N", global_id(0))), "'N'"),
    (lambda: kernel(For("j", Const(0), Const(2), Const(0), ())), "step 0"),
    (lambda: kernel(Let("i", global_id(1))), "dimension 1"),
    (lambda: kernel(store(Y, 0, GlobalArray("B", "in", ("N",))[0])), "'B'"),
    (lambda: kernel(Let("i", Const(3, "W"))), "two values"),
    (lambda: kernel(global_size=(6,)), "global_size[0] = 6"),
    (lambda: kernel(arrays=(GlobalArray("A", "in", ("M",)), Y)), "['M']"),
    (lambda: kernel(local_size=(0,), global_size=(0,)), "local_size[0] = 0"),
    (lambda: kernel(*GOOD, params=(("N", -5),)), "parameter N = -5 is an extent of array A"),
    (lambda: kernel(*GOOD, params=(("N", 0),)), "parameter N = 0 is an extent of array A"),
    (lambda: dataclasses.replace(kernel(*GOOD), kernel_name="float"), "kernel_name 'float'"),
    (lambda: dataclasses.replace(kernel(*GOOD), kernel_name="int4"), "kernel_name 'int4'"),
    (lambda: dataclasses.replace(kernel(*GOOD), kernel_name="local"), "kernel_name 'local'"),
    (lambda: kernel(Let("uint", global_id(0))), "'uint'"),
])
def test_malformed_schedules_are_refused_naming_the_value(make, needle):
    """Refused when built (the IR's own checks: NDRange, stores into inputs) or by
    check_well_formed, always naming the value."""
    with pytest.raises((MalformedScheduleError, ScheduleError)) as info:
        check_well_formed(make())
    assert needle in str(info.value)


def test_an_equal_copy_of_an_array_is_the_same_array():
    copy = dataclasses.replace(Y)
    check_well_formed(kernel(Let("i", global_id(0)), store(copy, Var("i"), 1.0)))


def test_a_parameter_that_is_no_extent_may_be_zero_or_negative():
    body = (Let("i", global_id(0)), store(Y, Var("i"), A[Var("i")]))
    check_well_formed(kernel(*body, params=(("N", 8), ("offset", 0), ("shift", -2))))
