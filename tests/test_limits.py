"""One DeviceLimits type and one limit check for the simulator and the OpenCL runtime."""
from __future__ import annotations

import pytest

from tiletraffic.gpu.devices import device as gpu_device
from tiletraffic.gpu.runtime import launch as runtime
from tiletraffic.gpu.codegen.generate import generate
from tiletraffic.simulator.engine import limits as sim_device
from tiletraffic.simulator.engine.limits import (GENERIC_GPU, DeviceLimits, LimitError,
                                                 check_schedule_limits, launch_limit_problems)
from tiletraffic.simulator.kernels.families import build

SMALL = DeviceLimits(name="small GPU", max_work_group_size=256, max_work_item_sizes=(256, 8, 4),
                     local_mem_bytes=4096)


def test_one_device_limits_type():
    assert gpu_device.DeviceLimits is runtime.DeviceLimits is sim_device.DeviceLimits
    info = next(iter(gpu_device.list_devices()), None)
    if info is None:
        pytest.skip("no OpenCL device")
    assert type(info.limits) is DeviceLimits
    nvidia = "nvidia" in info.platform_name.lower()
    assert info.limits == DeviceLimits(info.device_name, info.max_work_group_size,
                                       tuple(info.max_work_item_sizes), info.local_mem_bytes,
                                       register_budget=nvidia)


def test_problems_name_each_value_and_limit():
    problems = launch_limit_problems((32, 16), 8192, SMALL)
    assert len(problems) == 3  # work-group size, dimension 1, local memory
    for value, limit in (("512", "256"), ("16", "8"), ("8192", "4096")):
        assert any(value in p and limit in p and "small GPU" in p for p in problems)
    assert launch_limit_problems((16, 8), 4096, SMALL) == []
    kernel_max = launch_limit_problems((16, 8), 0, SMALL, kernel_max_work_group_size=64)
    assert len(kernel_max) == 1 and "128" in kernel_max[0] and "64" in kernel_max[0]


@pytest.mark.parametrize("schedule", [
    build("gemm-tiled", 64, 64, 64, tile=64),                # 4096 work-items, 32 KiB local
    build("gemm-tiled", 64, 64, 64, tile=16),                # 256 work-items, dimension 1: 16 > 8
    build("matvec-local", 64, 4096, tile=128, chunk=2048),   # 8 KiB of local memory
])
def test_the_simulator_and_the_runtime_report_the_same_problems(schedule):
    """The same schedule refused by both paths, with the same messages."""
    expected = launch_limit_problems(tuple(schedule.local_size), schedule.local_mem_bytes, SMALL)
    assert expected
    with pytest.raises(LimitError) as sim:
        check_schedule_limits(schedule, SMALL)
    with pytest.raises(runtime.LaunchConfigError) as dev:
        runtime.check_launch_limits(generate(schedule), SMALL)
    assert str(sim.value) == f"{schedule.family}: " + "; ".join(expected)
    assert str(dev.value).endswith(": " + "; ".join(expected))


def test_a_schedule_within_the_limits_passes_both():
    schedule = build("gemm-tiled", 64, 64, 64, tile=16)
    check_schedule_limits(schedule, GENERIC_GPU)
    runtime.check_launch_limits(generate(schedule), GENERIC_GPU)
