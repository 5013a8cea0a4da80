"""The register budget of a work-item (``max_registers``, ``--max-registers``): carried by
the schedule and its kernels, capping the model's register estimate, refused where it is
not a positive integer or the platform offers none."""
from __future__ import annotations

import warnings

import pytest
from click.testing import CliRunner

import tiletraffic
from tiletraffic.analysis.cli import main
from tiletraffic.gpu.codegen.generate import generate
from tiletraffic.simulator.model.device_model import NVIDIA_H200
from tiletraffic.simulator.model.registers import (BASE_REGISTERS, estimate_registers,
                                                   with_register_budget)
from tiletraffic.simulator.kernels.families import ScheduleError

WARP = dict(m=256, k=64, n=256, tile=16, wg_rows=16, tm=8, tn=8, bk=16, wn=64)


def _model(schedule, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tiletraffic.model(schedule, **kw).prediction


def test_the_budget_is_carried_by_the_schedule_its_kernel_and_every_kernel_of_a_sequence():
    s = tiletraffic.build("gemm-warp-tiled", **WARP, max_registers=128)
    assert s.max_registers == 128
    assert generate(s).max_registers == 128
    assert tiletraffic.build("gemm-warp-tiled", **WARP).max_registers is None
    seq = tiletraffic.build("gemm-split-k", m=64, k=1024, n=256, tile=16, wg_rows=8, tm=8,
                            tn=4, bk=32, wn=32, splits=2, max_registers=96)
    assert [k.max_registers for k in seq.kernels] == [96, 96]
    assert with_register_budget(s, None) is s


@pytest.mark.parametrize("bad", [0, -3, 1.5, True, "128"])
def test_a_budget_that_is_not_a_positive_integer_is_refused(bad):
    with pytest.raises(ScheduleError, match=f"max_registers must be a positive integer, got "
                                            f"{bad!r}".replace("(", r"\(").replace(".", r"\.")):
        tiletraffic.build("gemm-warp-tiled", **WARP, max_registers=bad)


def test_the_estimate_is_capped_by_the_budget_and_says_so():
    s = tiletraffic.build("gemm-warp-tiled", **WARP)
    free = estimate_registers(s, 255)
    floats = free.private_floats
    # 8x8 accumulators, two fragment sets of 8 + 8, the staged float4s of both tiles
    assert free.registers_per_work_item == BASE_REGISTERS + floats and not free.capped
    capped = estimate_registers(with_register_budget(s, 128), 255)
    assert (capped.registers_per_work_item, capped.capped, capped.capped_by) == (128, True,
                                                                                 "budget")
    assert f"= {BASE_REGISTERS + floats}, capped at 128: the schedule's register budget" \
        in capped.describe()
    above = estimate_registers(with_register_budget(s, 300), 255)   # above the estimate
    assert (above.registers_per_work_item, above.capped, above.capped_by) == (
        BASE_REGISTERS + floats, False, "")
    tight = estimate_registers(with_register_budget(s, 200), 100)   # the device's is lower
    assert (tight.registers_per_work_item, tight.capped_by) == (100, "device")


def test_the_budget_sets_the_occupancy_of_the_model():
    # 256 work-items: 8 sub-groups; 142 registers x 32 lanes rounded up to 256 = 4608 per
    # sub-group, 3 per 16384-register sub-partition: 12 per SM, one work-group of 8; at
    # 128: 4096 per sub-group, 4 per sub-partition, 16 per SM: two work-groups.
    s = tiletraffic.build("gemm-warp-tiled", **{**WARP, "m": 2048, "n": 2048, "k": 256})
    assert BASE_REGISTERS + estimate_registers(s, 255).private_floats > 128
    free, capped = _model(s), _model(with_register_budget(s, 128))
    assert free.resident_work_groups_per_cu == 1
    assert capped.resident_work_groups_per_cu == 2
    assert capped.registers_per_work_item == 128
    assert NVIDIA_H200.register_limited_work_groups_per_cu(256, 128) == 2


def test_a_compiled_count_above_the_budget_is_refused():
    s = tiletraffic.build("gemm-warp-tiled", **WARP, max_registers=128)
    with pytest.raises(ValueError, match="registers_per_work_item 149 is above the "
                                         "schedule's register budget max_registers = 128"):
        tiletraffic.model(s, registers_per_work_item=149)


def test_cli_budget_in_model_and_bad_values():
    args = ["model", "gemm-warp-tiled", "--m", "2048", "--k", "256", "--n", "2048",
            "--wg-rows", "16", "--bk", "16", "--wn", "64", "--device-model", "nvidia-h200"]
    out = CliRunner().invoke(main, args + ["--max-registers", "128"])
    assert out.exit_code == 0, out.output
    assert "capped at 128: the schedule's register budget" in out.output
    resident = next(line for line in out.output.splitlines()
                    if line.strip().startswith("resident work-groups per CU"))
    assert resident.split()[-1] == "2"
    bad = CliRunner().invoke(main, args + ["--max-registers", "0"])
    assert bad.exit_code == 2
    assert "--max-registers must be a positive integer, got 0" in bad.output


def test_run_refuses_a_budget_on_a_platform_without_one():
    from tiletraffic.gpu.devices.device import list_devices
    if not list_devices():
        pytest.skip("no OpenCL device")
    out = CliRunner().invoke(main, ["run", "gemm-warp-tiled", "--m", "64", "--k", "64",
                                    "--n", "64", "--max-registers", "64"])
    platform = list_devices()[0].platform_name
    if "nvidia" in platform.lower():
        pytest.skip("the default device offers a register budget")
    assert out.exit_code == 2, out.output
    assert "offers no register budget (NVIDIA's OpenCL only" in out.output


def test_build_program_refuses_a_budget_off_nvidia():
    from tiletraffic.gpu.runtime import launch as runtime
    from tiletraffic.gpu.devices.device import list_devices, select_device
    devices = [d for d in list_devices() if "nvidia" not in d.platform_name.lower()]
    if not devices:
        pytest.skip("no non-NVIDIA OpenCL device")
    target = select_device(devices[0].id)
    with pytest.raises(runtime.RegisterBudgetError, match="max_registers = 64: .* offers no "
                                                          "register budget"):
        runtime.build_program(target, "__kernel void k(__global float *x) { x[0] = 1; }",
                              (), max_registers=64)
    runtime.build_program(target, "__kernel void k(__global float *x) { x[0] = 1; }", ())
