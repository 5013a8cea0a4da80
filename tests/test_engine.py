"""Tests of simulator.engine.simulation.simulate: values against numpy, counts, read maps, errors, limits."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tiletraffic.simulator.engine.limits import GENERIC_GPU, LimitError
from tiletraffic.simulator.engine.accelerators import Accelerators
from tiletraffic.simulator.engine.simulation import InputError, simulate
from tiletraffic.simulator.kernels.families import FAMILIES, ScheduleError, build
from strategies import (
    assert_matches_reference,
    output_name,
    random_inputs,
    schedules,
    seeds,
    sizes,
    gemm_tiles,
    matvec_tiles,
)


MORE_EXAMPLES = max(100, settings.default.max_examples)
"""The simulator is fast on small shapes: its central properties get more examples."""


# ------------------------------------------------------------------- values vs numpy
@settings(max_examples=MORE_EXAMPLES)
@given(schedule=schedules(), seed=seeds)
@example(schedule=build("gemm-tiled", 17, 5, 23, tile=7), seed=1)
@example(schedule=build("gemm-naive", 9, 31, 4, tile=3), seed=2)
@example(schedule=build("matvec-local", 45, 37, tile=8, chunk=5), seed=3)
@example(schedule=build("matvec-naive", 47, 13, tile=6), seed=4)
def test_outputs_equal_float64_reference(schedule, seed):
    inputs = random_inputs(schedule, np.random.default_rng(seed))
    result = simulate(schedule, inputs)
    assert set(result.outputs) == {output_name(schedule)}
    assert_matches_reference(schedule, inputs, result.outputs[output_name(schedule)],
                             what="simulated output")


@given(schedule=schedules(), seed=seeds)
@example(schedule=build("gemm-tiled", 13, 29, 6, tile=5), seed=0)
@example(schedule=build("matvec-local", 30, 41, tile=7, chunk=3), seed=0)
def test_compute_values_false_gives_identical_counts(schedule, seed):
    with_values = simulate(schedule, random_inputs(schedule, np.random.default_rng(seed)))
    counts_only = simulate(schedule, compute_values=False)
    assert counts_only.counts.to_dict() == with_values.counts.to_dict()
    np.testing.assert_array_equal(counts_only.global_loads_per_group,
                                  with_values.global_loads_per_group)
    assert counts_only.outputs == {}
    # the counts are real: every schedule reads something and stores its output once
    p = schedule.param_values
    assert with_values.counts.global_store_elems == p["M"] * p.get("N", 1)
    assert with_values.counts.global_load_elems > 0


# ------------------------------------------------------------------------- read maps
@given(mkn=sizes(), tile=gemm_tiles())
@example(mkn=(20, 7, 33), tile=16)
def test_read_maps_gemm_naive_every_element_read_n_and_m_times(mkn, tile):
    m, k, n = mkn
    r = simulate(build("gemm-naive", m, k, n, tile), compute_values=False, read_maps=("A", "B"))
    assert r.read_maps["A"].shape == (m, k)
    assert r.read_maps["B"].shape == (k, n)
    np.testing.assert_array_equal(r.read_maps["A"], np.full((m, k), n))
    np.testing.assert_array_equal(r.read_maps["B"], np.full((k, n), m))


@given(mkn=sizes(), tile=gemm_tiles())
@example(mkn=(20, 7, 33), tile=16)
@example(mkn=(5, 9, 5), tile=5)
def test_read_maps_gemm_tiled_each_element_read_once_per_tile_row_or_column(mkn, tile):
    m, k, n = mkn
    r = simulate(build("gemm-tiled", m, k, n, tile), compute_values=False, read_maps=("A", "B"))
    np.testing.assert_array_equal(r.read_maps["A"], np.full((m, k), math.ceil(n / tile)))
    np.testing.assert_array_equal(r.read_maps["B"], np.full((k, n), math.ceil(m / tile)))


@given(m=st.integers(1, 48), k=st.integers(1, 48), tile=matvec_tiles(),
       chunk=st.integers(1, 64))
@example(m=40, k=33, tile=16, chunk=10)
def test_read_maps_matvec_x_read_per_row_naive_and_per_work_group_local(m, k, tile, chunk):
    naive = simulate(build("matvec-naive", m, k, tile=tile), compute_values=False,
                     read_maps=("A", "x"))
    np.testing.assert_array_equal(naive.read_maps["A"], np.ones((m, k)))
    np.testing.assert_array_equal(naive.read_maps["x"], np.full(k, m))
    staged = simulate(build("matvec-local", m, k, tile=tile, chunk=chunk),
                      compute_values=False, read_maps=("A", "x"))
    np.testing.assert_array_equal(staged.read_maps["A"], np.ones((m, k)))
    np.testing.assert_array_equal(staged.read_maps["x"], np.full(k, math.ceil(m / tile)))


def test_read_map_of_an_output_is_refused():
    with pytest.raises(InputError, match="'C'"):
        simulate(build("gemm-naive", 4, 4, 4, 2), compute_values=False, read_maps=("C",))


# ------------------------------------------------------------------------ input errors
def test_wrong_input_shape_raises_input_error_naming_both_shapes():
    schedule = build("gemm-tiled", 3, 5, 7, tile=2)
    rng = np.random.default_rng(0)
    inputs = random_inputs(schedule, rng)
    inputs["A"] = inputs["A"].T.copy()  # (5, 3) instead of (3, 5)
    with pytest.raises(InputError) as info:
        simulate(schedule, inputs)
    msg = str(info.value)
    assert "'A'" in msg and "(5, 3)" in msg and "(3, 5)" in msg


def test_wrong_vector_shape_raises_input_error_naming_both_shapes():
    schedule = build("matvec-naive", 6, 4, tile=2)
    inputs = random_inputs(schedule, np.random.default_rng(0))
    inputs["x"] = np.ones((4, 1), dtype=np.float32)
    with pytest.raises(InputError) as info:
        simulate(schedule, inputs)
    msg = str(info.value)
    assert "'x'" in msg and "(4, 1)" in msg and "(4,)" in msg


def test_missing_input_raises_input_error_naming_input_and_shape():
    schedule = build("gemm-naive", 3, 5, 7, tile=2)
    inputs = random_inputs(schedule, np.random.default_rng(0))
    del inputs["B"]
    with pytest.raises(InputError) as info:
        simulate(schedule, inputs)
    assert "'B'" in str(info.value) and "(5, 7)" in str(info.value)


def test_no_inputs_with_compute_values_raises_input_error():
    with pytest.raises(InputError, match="'A'"):
        simulate(build("matvec-local", 3, 5, tile=2))


# ---------------------------------------------------------------------- device limits
def test_work_group_of_4096_items_exceeds_generic_gpu_limit():
    schedule = build("gemm-tiled", 64, 64, 64, tile=64)
    assert schedule.work_group_items == 4096
    with pytest.raises(LimitError) as info:
        simulate(schedule, compute_values=False)
    assert "4096" in str(info.value) and "1024" in str(info.value)


def test_64_kib_of_local_memory_exceeds_generic_gpu_limit():
    schedule = build("matvec-local", 5, 100, chunk=16384)
    assert schedule.local_mem_bytes == 65536
    with pytest.raises(LimitError) as info:
        simulate(schedule, compute_values=False, limits=GENERIC_GPU)
    assert "65536" in str(info.value) and "49152" in str(info.value)


def test_limits_none_runs_the_64_kib_matvec_local_and_matches_numpy():
    m, k = 5, 16500  # two chunks of 16384, the second partial
    schedule = build("matvec-local", m, k, chunk=16384)
    inputs = random_inputs(schedule, np.random.default_rng(16384))
    result = simulate(schedule, inputs, limits=None)
    assert_matches_reference(schedule, inputs, result.outputs["y"])
    assert result.counts.global_load_elems_by_buffer == {"A": m * k, "x": k, "y": 0}
    assert result.counts.barriers == 2 * 2  # one work-group, two chunks, two barriers each


# ------------------------------------------------------------------------- bad sizes
BAD_VALUES = [0, -1, 2.5, True]


@pytest.mark.parametrize("value", BAD_VALUES, ids=repr)
@pytest.mark.parametrize("family, which", [
    (f, w) for f in FAMILIES for w in ("M", "K", "N", "tile")
    if not (w == "N" and f.startswith("matvec"))])  # matrix-vector schedules have no N
def test_bad_size_raises_schedule_error_naming_the_value(family, which, value):
    args = {"M": 4, "K": 4, "N": 4, "tile": 2}
    args[which] = value
    with pytest.raises(ScheduleError) as info:
        build(family, args["M"], args["K"], args["N"], tile=args["tile"])
    msg = str(info.value)
    assert repr(value) in msg and which in msg


@pytest.mark.parametrize("value", BAD_VALUES, ids=repr)
def test_bad_chunk_raises_schedule_error_naming_the_value(value):
    with pytest.raises(ScheduleError) as info:
        build("matvec-local", 4, 4, tile=2, chunk=value)
    assert repr(value) in str(info.value) and "chunk" in str(info.value)


# ------------------------------------------------------------------------ fixed cases
def test_tiled_20_cubed_with_tile_16_loads_1600_and_matches_numpy():
    schedule = build("gemm-tiled", 20, 20, 20, tile=16)
    inputs = random_inputs(schedule, np.random.default_rng(20))
    result = simulate(schedule, inputs)
    assert result.counts.global_load_elems == 1600
    assert_matches_reference(schedule, inputs, result.outputs["C"])


@pytest.mark.parametrize("family", ["gemm-tiled", "gemm-naive"])
def test_non_square_c_32_by_16(family):
    schedule = build(family, 32, 16, 16, tile=16)
    inputs = random_inputs(schedule, np.random.default_rng(32))
    result = simulate(schedule, inputs)
    assert result.outputs["C"].shape == (32, 16)
    assert_matches_reference(schedule, inputs, result.outputs["C"])


# The seeds' numbers at 1024³ by work-group classes (exact: tests/test_classes.py proves the
# classes against full execution); every work-group executed at 256³, where the same forms
# give 2·256³/16 and 2·256³.
def test_seed_number_tiled_1024_with_tile_16_loads_134217728():
    r = simulate(build("gemm-tiled", 1024, 1024, 1024, 16), compute_values=False,
                 accelerators=Accelerators(work_group_classes=True))
    assert r.counts.global_load_elems == 134217728  # 2·1024³/16 = 1.34e8
    full = simulate(build("gemm-tiled", 256, 256, 256, 16), compute_values=False)
    assert full.counts.global_load_elems == 2 * 256**3 // 16


def test_seed_number_naive_1024_loads_2147483648():
    r = simulate(build("gemm-naive", 1024, 1024, 1024), compute_values=False,
                 accelerators=Accelerators(work_group_classes=True))
    assert r.counts.global_load_elems == 2147483648  # 2·1024³ = 2.1e9
    full = simulate(build("gemm-naive", 256, 256, 256), compute_values=False)
    assert full.counts.global_load_elems == 2 * 256**3
