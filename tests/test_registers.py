"""Register-limited occupancy: the device model's register file, the
estimate from a schedule's private arrays, and registers through model_launch, the facade
and ``tiletraffic model --registers``."""
from __future__ import annotations

import json
import warnings
from dataclasses import replace

import pytest
from click.testing import CliRunner

import tiletraffic
from tiletraffic.analysis.cli import main
from tiletraffic.simulator.model.device_model import (GENERIC_GPU_MODEL, NVIDIA_H200,
                                                      DeviceModelError, GuessedValueWarning,
                                                      built_in_file, read_device_model)
from tiletraffic.simulator.model.registers import BASE_REGISTERS, estimate_registers
from tiletraffic.simulator.engine.limits import LimitError
from tiletraffic.simulator.model.launch import model_launch


# ------------------------------------------------------------- occupancy by hand
@pytest.mark.parametrize("registers, items, expected", [
    # R x 32 rounded up to 256 per sub-group; 16384 registers per sub-partition, 4 of them
    (168, 256, 1),    # 5376 per sub-group: 3 per sub-partition, 12 per SM / 8 = 1
    (64, 256, 4),     # 2048: 8 per sub-partition, 32 / 8 = 4
    (168, 64, 6),     # 12 per SM / 2 = 6
    (32, 1024, 2),    # 1024: 16 per sub-partition, 64 / 32 = 2
    (40, 256, 6),     # 1280: 12 per sub-partition, 48 / 8 = 6
    (22, 1024, 2),    # 704 -> 768: 21 per sub-partition, 84 / 32 = 2
    (255, 256, 1),    # 8160 -> 8192: 2 per sub-partition, 8 / 8 = 1
    (16, 256, 16),    # 512: 32 per sub-partition, 128 / 8 = 16 (above the warp limit)
    (255, 1024, 0),   # 32 sub-groups x 8192 = 262144 > 65536: does not fit
    (80, 1024, 0),    # 32 x 2560 = 81920 > 65536
    (65, 1024, 0),    # 2080 -> 2304: 32 x 2304 = 73728 > 65536
    (176, 352, 0),    # 5632: 2 per sub-partition, 8 < 11 sub-groups
])
def test_register_limited_work_groups_by_hand(registers, items, expected):
    assert NVIDIA_H200.register_limited_work_groups_per_cu(items, registers) == expected


def test_resident_work_groups_take_the_smallest_limit_and_none_keeps_the_old_result():
    # 256 work-items, 8 KiB local: 8 by sub-groups (64 / 8), 25 by local memory
    assert NVIDIA_H200.resident_work_groups_per_cu(256, 8192) == 8
    assert NVIDIA_H200.resident_work_groups_per_cu(256, 8192, None) == 8
    assert NVIDIA_H200.resident_work_groups_per_cu(256, 8192, 64) == 4
    assert NVIDIA_H200.resident_work_groups_per_cu(256, 8192, 32) == 8
    # 64 work-items, 16 KiB + 1 KiB reserved: 13 by local memory, 32 by sub-groups
    assert NVIDIA_H200.resident_work_groups_per_cu(64, 16384, 32) == 13
    assert NVIDIA_H200.resident_work_groups_per_cu(64, 16384, 168) == 6
    assert NVIDIA_H200.resident_work_groups_per_cu(256, 0, 256) == 0


@pytest.mark.parametrize("bad", [0, -3, 1.5, True, "64"])
def test_registers_must_be_a_positive_integer(bad):
    with pytest.raises(ValueError, match=f"positive integer, got {bad!r}"):
        NVIDIA_H200.resident_work_groups_per_cu(256, 0, bad)


def test_a_work_group_that_cannot_run_is_named_with_value_and_limit():
    assert NVIDIA_H200.work_group_register_problem(256, 128) is None
    assert "256 registers per work-item exceed the 255" in \
        NVIDIA_H200.work_group_register_problem(32, 256)
    assert "needs 81920 registers, a compute unit of nvidia-h200 has 65536" in \
        NVIDIA_H200.work_group_register_problem(1024, 80)
    # 11 sub-groups x 5632 = 61952 fit the compute unit, but a sub-partition holds
    # 16384 // 5632 = 2 of them: 8 < 11
    assert "does not fit the 16384 registers of each of the 4 sub-partitions" in \
        NVIDIA_H200.work_group_register_problem(352, 176)


def test_the_values_and_their_sources():
    m = NVIDIA_H200
    assert (m.registers_per_cu, m.register_allocation_unit, m.max_registers_per_work_item,
            m.sub_partitions_per_cu, m.warp_instructions_per_cycle_per_sub_partition) == \
        (65536, 256, 255, 4, 1.0)
    for key in ("registers_per_cu", "register_allocation_unit", "max_registers_per_work_item",
                "sub_partitions_per_cu", "warp_instructions_per_cycle_per_sub_partition"):
        assert m.value_sources[key].kind == "documented", key
        assert GENERIC_GPU_MODEL.value_sources[key].kind == "guessed", key
        assert key in GENERIC_GPU_MODEL.guessed and key not in m.guessed
    assert "cuda_occupancy.h" in m.references["OCC"]


def test_a_file_without_the_register_file_or_with_a_bad_one_is_refused():
    text = built_in_file("nvidia-h200").read_text(encoding="utf-8")
    start = text.index("[values.registers_per_cu]")
    missing = text[:start] + text[text.index("[values.register_allocation_unit]"):]
    with pytest.raises(DeviceModelError, match="missing value.*registers_per_cu"):
        read_device_model(missing, "mine.toml")
    zero = text.replace("[values.sub_partitions_per_cu]\nvalue = 4",
                        "[values.sub_partitions_per_cu]\nvalue = 0")
    with pytest.raises(DeviceModelError, match="sub_partitions_per_cu: value must be positive"):
        read_device_model(zero, "mine.toml")


# ------------------------------------------------------------------ the estimate
def test_estimate_counts_private_floats_of_register_tiles():
    blocked = tiletraffic.build("gemm-register-blocked", m=64, k=64, n=64, tile=16)
    est = estimate_registers(blocked)
    # acc[4][4], a[4], b[4], and the staged loads sa0..sa3, sb0..sb3 (64x16 / 256 each)
    assert (est.registers_per_work_item, est.private_floats, est.capped) == \
        (BASE_REGISTERS + 32, 32, False)
    vec = tiletraffic.build("gemm-vectorized", m=64, k=64, n=64, tile=8, tm=8, tn=8, bk=8)
    # acc[8][8], a_0..a_7, b_0..b_7, v_0..v_3, and the staged float4 loads va0_*, va1_*,
    # vb0_*, vb1_* (64x8 / 4 / 64 = 2 of each tile)
    assert estimate_registers(vec).registers_per_work_item == BASE_REGISTERS + 100
    big = tiletraffic.build("gemm-register-blocked", m=64, k=64, n=64, tile=4, tm=16, tn=16)
    est = estimate_registers(big, 255)
    assert (est.registers_per_work_item, est.capped) == (255, True)
    assert "capped" in est.describe() and "guessed" in est.describe()


@pytest.mark.parametrize("family", ["gemm-naive", "gemm-tiled", "matvec-naive",
                                    "matvec-local"])
def test_schedules_without_private_arrays_get_no_estimate(family):
    kw = {"n": 64} if family.startswith("gemm") else {}
    assert estimate_registers(tiletraffic.build(family, m=64, k=64, tile=16, **kw)) is None


# ------------------------------------------------------- through the time model
def one_cu():
    """The H200 with one compute unit: all 16 work-groups of a 256 x 32 x 256 4x4 GEMM on
    it, so the resident work-groups matter (the exposed barrier latency and the tail)."""
    return replace(NVIDIA_H200, compute_units=1)


def test_fewer_resident_work_groups_expose_more_latency():
    s = tiletraffic.build("gemm-register-blocked", m=256, k=32, n=256, tile=16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GuessedValueWarning)
        many = model_launch(s, one_cu(), registers_per_work_item=32).prediction
        one = model_launch(s, one_cu(), registers_per_work_item=168).prediction
    assert (many.resident_work_groups_per_cu, one.resident_work_groups_per_cu) == (8, 1)
    assert (many.registers_per_work_item, one.registers_per_work_item) == (32, 168)
    assert one.time_terms_s["barrier_latency_s"] > many.time_terms_s["barrier_latency_s"]
    assert one.predicted_time_s > many.predicted_time_s
    # the ceilings do not depend on occupancy
    for key in ("fp32_s", "l1_s", "l1_requests_s", "issue_s"):
        assert one.time_terms_s[key] == many.time_terms_s[key]
    assert "168 (given)" in one.methods["resident_work_groups_per_cu"]


def test_without_registers_a_register_tile_is_estimated_and_warned():
    s = tiletraffic.build("gemm-register-blocked", m=64, k=32, n=64, tile=16)
    with pytest.warns(GuessedValueWarning, match="estimated from the schedule"):
        p = tiletraffic.model(s).prediction
    assert p.registers_per_work_item == BASE_REGISTERS + 32   # acc, a, b, sa0..3, sb0..3
    assert "guessed" in p.methods["resident_work_groups_per_cu"]
    given = tiletraffic.model(s, registers_per_work_item=p.registers_per_work_item).prediction
    assert given.predicted_time_s == p.predicted_time_s


def test_without_private_arrays_nothing_changes():
    s = tiletraffic.build("gemm-tiled", m=128, k=64, n=128, tile=16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # no register warning (only the model's guesses)
        warnings.filterwarnings("ignore", message="device model nvidia-h200:")
        p = tiletraffic.model(s).prediction
    assert p.registers_per_work_item is None
    assert "resident_work_groups_per_cu" not in p.methods
    assert p.resident_work_groups_per_cu == NVIDIA_H200.resident_work_groups_per_cu(
        256, s.local_mem_bytes)


def test_registers_that_cannot_run_are_refused():
    s = tiletraffic.build("gemm-tiled", m=64, k=64, n=64, tile=32)
    with pytest.raises(ValueError, match="1024 work-items x 80 registers needs 81920"):
        tiletraffic.model(s, registers_per_work_item=80)
    with pytest.raises(ValueError, match="positive integer"):
        tiletraffic.model(s, registers_per_work_item=0)


def test_cli_registers_option():
    args = ["model", "gemm-register-blocked", "--m", "64", "--k", "32", "--n", "64"]
    res = CliRunner().invoke(main, [*args, "--registers", "168"])
    assert res.exit_code == 0, res.output
    assert "registers per work-item          168" in res.output
    assert "resident work-groups per CU      1" in res.output
    data = json.loads(CliRunner().invoke(main, [*args, "--registers", "64", "--json"]).output)
    assert (data["registers_per_work_item"], data["resident_work_groups_per_cu"]) == (64, 4)
    assert "issue_s" in data["time_terms_s"]
    bad = CliRunner().invoke(main, [*args, "--tile", "32", "--registers", "80"])
    assert bad.exit_code == 2
    assert "--registers 80: gemm-register-blocked: a work-group of 1024 work-items" in bad.output


@pytest.mark.parametrize("items, expected", [
    (1024, 64),   # 64 x 32 = 2048 per sub-group, 8 per sub-partition: 32 sub-groups fit
    (512, 128),   # 4096 per sub-group, 4 per sub-partition: 16 fit; 129 -> 4352: 3 per
    (256, 255),   # 8 sub-groups of 8192 fit: the device's maximum
])
def test_registers_for_one_work_group_by_hand(items, expected):
    assert NVIDIA_H200.registers_for_one_work_group(items) == expected
    assert NVIDIA_H200.register_limited_work_groups_per_cu(items, expected) == 1
    if expected < NVIDIA_H200.max_registers_per_work_item:
        assert NVIDIA_H200.register_limited_work_groups_per_cu(items, expected + 1) == 0


def test_an_estimate_is_capped_where_one_work_group_would_not_fit():
    # 32 x 32 work-items with 8 x 8 register tiles: 30 + 88 estimated, but a kernel
    # compiled for 1024 work-items gets at most 64 on the H200 (and spills the rest)
    s = tiletraffic.build("gemm-register-blocked", m=256, k=64, n=256, tile=32, tm=8, tn=8)
    with pytest.warns(GuessedValueWarning, match="capped at 64: the most with which one "
                                                "work-group fits"):
        p = model_launch(s, NVIDIA_H200).prediction
    assert (p.registers_per_work_item, p.resident_work_groups_per_cu) == (64, 1)
    est = estimate_registers(s, 255, 64)
    assert (est.registers_per_work_item, est.capped_by) == (64, "work-group")
    assert estimate_registers(s, 255, 200).capped_by == ""     # 118 is below every limit


@pytest.mark.parametrize("change, message", [
    ({"max_work_items_per_cu": 128}, "a work-group of 256 work-items (8 sub-groups of 32) "
                                     "exceeds the 128 work-items a compute unit"),
    ({"local_mem_bytes_per_cu": 1024}, "a work-group's 2048 bytes of local memory (+ "),
])
def test_a_work_group_no_compute_unit_holds_gets_no_time(change, message):
    model = replace(NVIDIA_H200, **change)
    s = tiletraffic.build("gemm-tiled", m=64, k=64, n=64, tile=16)
    assert model.resident_work_groups_per_cu(256, s.local_mem_bytes) == 0
    with pytest.raises(LimitError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("+", r"\+")):
        model_launch(s, model)
