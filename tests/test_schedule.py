"""Tests of the IR's own checks (simulator.ir.nodes): what no device could run as described
is refused when the schedule is built, with the same words on the simulator and device paths."""
from __future__ import annotations

import dataclasses

import pytest

from tiletraffic.gpu.codegen.generate import generate
from tiletraffic.gpu.runtime.launch import DeviceLimits, LaunchConfigError, check_launch_limits
from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.nodes import (Barrier, GlobalArray, Let, Schedule, ScheduleError,
                                            block, global_id, ndrange_problems, store)
from tiletraffic.simulator.kernels.families import build

GENEROUS = DeviceLimits(max_work_group_size=1024, max_work_item_sizes=(1024, 1024, 64),
                        local_mem_bytes=48 * 1024, name="generous")


def test_global_20x20_local_16x16_is_refused_naming_both_sizes():
    """Issue #15 case 2: the simulator used to floor this to one 16 x 16 work-group."""
    sch = build("gemm-tiled", 20, 20, 20, 16)
    assert sch.global_size == (32, 32)
    with pytest.raises(ScheduleError) as err:
        dataclasses.replace(sch, global_size=(20, 20))
    text = str(err.value)
    assert "20 x 20" in text and "16 x 16" in text
    assert "global_size[0] = 20" in text and "local_size[0] = 16" in text
    assert "32" in text, "says what to round up to"


def test_the_device_path_refuses_the_same_ndrange_with_the_same_words():
    kernel = dataclasses.replace(generate(build("gemm-tiled", 20, 20, 20, 16)),
                                 global_size=(20, 20))
    with pytest.raises(LaunchConfigError) as err:
        check_launch_limits(kernel, GENEROUS)
    for problem in ndrange_problems((20, 20), (16, 16)):
        assert problem in str(err.value)
    assert len(ndrange_problems((20, 20), (16, 16))) == 2, "one sentence per dimension"


@pytest.mark.parametrize("global_size, local_size, bad", [
    ((0,), (8,), 1), ((8,), (0,), 1), ((8, 8), (8,), 1), ((24, 7), (8, 7), 0),
    ((-8,), (8,), 1)])
def test_ndrange_problems(global_size, local_size, bad):
    assert len(ndrange_problems(global_size, local_size)) == bad


def _copy(role: str) -> Schedule:
    x = GlobalArray("x", role, ("M",))
    y = GlobalArray("y", "out", ("M",))
    i = Let("i", global_id(0))
    body = block(i, store(x, i.var, y[i.var]))
    return Schedule("store-into-x", "store_into_x", (("M", 8),), (x, y), (), (8,), (8,), body, 8)


def test_a_store_into_an_input_is_refused_naming_the_array():
    with pytest.raises(ScheduleError, match="'x'.*input") as err:
        _copy("in")
    assert isinstance(err.value, ValueError)


def test_a_store_into_an_input_hidden_in_a_loop_is_refused():
    x, y = GlobalArray("x", "in", ("M",)), GlobalArray("y", "out", ("M",))
    body = block(S.For("j", S.Const(0), S.Param("M"), S.Const(1),
                       (S.If(global_id(0).eq(0), (store(x, S.Var("j"), 1.0),)),)))
    with pytest.raises(ScheduleError, match="'x'"):
        Schedule("hidden", "hidden", (("M", 8),), (x, y), (), (8,), (8,), body, 8)


def test_inout_and_out_arrays_may_be_stored():
    assert _copy("inout").array("x").is_input and _copy("inout").array("x").is_output
    assert "const" not in generate(_copy("inout")).source.split("x,")[0].split("(")[-1]
    assert [a.kind for a in generate(_copy("inout")).args][:2] == ["global_inout", "global_out"]


def test_an_unknown_role_is_refused():
    with pytest.raises(ScheduleError, match="'both'"):
        GlobalArray("x", "both", ("M",))


def test_barrier_fences_are_rendered():
    x, y = GlobalArray("x", "in", ("M",)), GlobalArray("y", "out", ("M",))
    i = Let("i", global_id(0))
    body = block(i, Barrier(), Barrier(global_fence=True), store(y, i.var, x[i.var]))
    source = generate(Schedule("fences", "fences", (("M", 8),), (x, y), (), (8,), (8,), body,
                               8)).source
    assert source.count("barrier(CLK_LOCAL_MEM_FENCE);") == 1
    assert source.count("barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);") == 1
