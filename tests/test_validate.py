"""gpu.runtime.checked_run.run_on_device on PoCL: every launch checked, the
worst error/tolerance named, the kind of inputs."""
from __future__ import annotations

import numpy as np
import pytest

from tiletraffic.gpu.runtime.checked_run import run_on_device
from tiletraffic.gpu.runtime.launch import (LAUNCH_INDEX_ARG, ResultMismatchError,
                                            list_devices, select_device)
from tiletraffic.simulator.kernels.demos import LAUNCH_INDEX_PARAM, WRONG_LAUNCH
from tiletraffic.simulator.kernels.families import build
from tiletraffic.simulator.kernels.variants import VARIANTS

pytestmark = pytest.mark.skipif(not any(d.is_pocl for d in list_devices()),
                                reason="PoCL is not installed")

ZEROS = f"gemm-naive:zeros-in-launch-{WRONG_LAUNCH}"


@pytest.fixture(scope="module")
def pocl():
    return select_device("pocl")


def test_the_launch_index_argument_has_one_name():
    assert LAUNCH_INDEX_ARG == LAUNCH_INDEX_PARAM


@pytest.mark.parametrize("warmup", [2, 1])
def test_a_middle_launch_storing_zeros_is_caught_and_named(pocl, warmup):
    """The variant stores zeros in launch 5 only (0-based): with 2 warm-up launches that
    is the 4th of 10 timed launches; checking only the last launch passed it."""
    variant = VARIANTS[ZEROS]
    assert variant.run_only
    with pytest.raises(ResultMismatchError) as err:
        run_on_device(pocl, variant.make(*variant.example), warmup=warmup,
                      rng=np.random.default_rng(0))
    assert err.value.launch == WRONG_LAUNCH
    assert err.value.check.mismatch_count == 20 * 20, "every element of C is zero"
    assert err.value.check.unwritten_count == 0, "written (zeros), not unwritten"


def test_a_correct_run_checks_first_and_last_launch_and_names_the_worst_element(pocl):
    sch = build("gemm-tiled", 33, 40, 17, 16)
    result = run_on_device(pocl, sch, rng=np.random.default_rng(1))
    assert sorted(result.launch_checks) == [0, 11]
    assert result.run.distinct_outputs == 1 and result.run.checked_launches == (0, 11)
    summary = result.to_dict()["check"]
    c = result.check
    assert summary["worst_index"] == list(c.worst_index)
    i, j = c.worst_index
    assert 0 <= i < 33 and 0 <= j < 17
    assert summary["error_over_tolerance"] == pytest.approx(
        abs(c.worst_value - c.worst_reference) / c.worst_tolerance)
    assert summary["error_over_tolerance"] <= 1 and summary["checked_launches"] == [0, 11]


@pytest.mark.parametrize("kind", ["normal", "uniform", "ones", "arange"])
def test_every_kind_of_input_runs_and_checks(pocl, kind):
    result = run_on_device(pocl, build("matvec-local", 37, 29, None, 16), inputs=kind,
                           rng=np.random.default_rng(2))
    assert result.check.ok and result.to_dict()["inputs"] == kind


def test_a_launch_beyond_the_devices_local_memory_is_refused_before_the_inputs_are_made(
        pocl, monkeypatch):
    from tiletraffic.gpu.runtime import checked_run as validate
    from tiletraffic.gpu.runtime.launch import LaunchConfigError

    def no_inputs(*args, **kwargs):
        raise AssertionError("inputs made for a launch the device refuses")

    monkeypatch.setattr(validate, "random_inputs", no_inputs)
    too_wide = pocl.limits.local_mem_bytes // 4 + 1024     # floats of x beyond the device's
    schedule = build("matvec-local-whole", 8, too_wide, tile=8)
    with pytest.raises(LaunchConfigError, match="bytes of local memory per work-group exceed"):
        run_on_device(pocl, schedule)
