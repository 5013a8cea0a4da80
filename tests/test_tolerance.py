"""The one float64 reference and tolerance (simulator.engine.tolerance), shared with gpu.runtime.launch."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tiletraffic.gpu.runtime import launch as runtime
from tiletraffic.simulator.engine import tolerance
from tiletraffic.simulator.engine.reference import error_over_tolerance, reference, reference_product
from tiletraffic.simulator.engine.data_inputs import random_inputs
from tiletraffic.simulator.kernels.families import build


def test_gpu_runtime_re_exports_the_one_tolerance():
    assert runtime.error_factor is tolerance.error_factor
    assert runtime.UNIT_ROUNDOFF_F32 == tolerance.UNIT_ROUNDOFF_F32 == 2.0**-24
    assert issubclass(runtime.ResultMismatchError, tolerance.ResultMismatchError)
    assert issubclass(runtime.ResultMismatchError, runtime.TiletrafficGpuError)
    assert issubclass(runtime.CheckResult, tolerance.CheckResult)


def test_both_checks_give_the_same_numbers_and_each_raises_its_error():
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((8, 300)), rng.standard_normal((300, 5))
    ref, absprod = reference_product(a, b)
    bad = (a @ b).astype(np.float32)
    bad[3, 2] += 1e-2
    here = tolerance.check_result(bad, ref, 300, absprod)
    there = runtime.check_result(bad, ref, 300, absprod)
    assert dataclasses.astuple(here) == dataclasses.astuple(there)
    assert not here.ok and here.worst_index == (3, 2) and here.mismatch_count == 1
    with pytest.raises(tolerance.ResultMismatchError) as err:
        here.raise_if_bad("C")
    assert not isinstance(err.value, runtime.TiletrafficGpuError)
    with pytest.raises(runtime.ResultMismatchError):
        there.raise_if_bad("C")


def test_the_schedule_reference_is_the_product_reference():
    sch = build("gemm-tiled", 20, 33, 12, tile=4)
    inputs = random_inputs(sch, np.random.default_rng(3))
    ref = reference(sch, inputs)
    value, absprod = reference_product(inputs["A"], inputs["B"])
    assert np.array_equal(ref.value, value) and np.array_equal(ref.abs_product, absprod)
    exact = (inputs["A"].astype(np.float64) @ inputs["B"]).astype(np.float32)
    assert error_over_tolerance(exact.ravel(), ref) <= 1
    exact[0, 0] += 1.0
    assert error_over_tolerance(exact, ref) > 1


def test_the_mismatch_message_shows_values_with_six_significant_digits():
    ref = np.array([[25.130181732982006, 1.0]])
    bad = np.array([[0.0, 1.0]], dtype=np.float32)
    message = tolerance.check_result(bad, ref, 40, np.abs(ref)).message("C")
    assert message.startswith("C[0, 0] = 0, reference 25.1302, |error| 25.1 vs tolerance ")
