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


# ------------------------------------------- every command: the limits first, exit 2
BEYOND_KERNELS = {
    # 16384 work-items (128 x 128) and 66048 bytes of local memory per work-group
    "items": ("#ifndef PAD\n#define PAD 0\n#endif\n"
              "__kernel void items(__global const float *A, __global float *B, const int N)\n"
              "{\n"
              "    __local float tile[128][129 + PAD];\n"
              "    const int lx = get_local_id(0);\n"
              "    const int ly = get_local_id(1);\n"
              "    tile[ly][lx] = A[ly * N + lx];\n"
              "    barrier(CLK_LOCAL_MEM_FENCE);\n"
              "    B[ly * N + lx] = tile[lx][ly];\n"
              "}\n", ["N", "N"], [128, 128], ["N", "N"]),
    # 16 MiB of local memory, of which each work-item uses one word: the check before a
    # launch would find an uninitialized read, which the limits come before
    "words": ("#ifndef PAD\n#define PAD 0\n#endif\n"
              "__kernel void words(__global const float *A, __global float *B, const int N)\n"
              "{\n"
              "    __local float tile[4194304 + PAD];\n"
              "    const int i = get_global_id(0);\n"
              "    tile[get_local_id(0)] = A[i];\n"
              "    barrier(CLK_LOCAL_MEM_FENCE);\n"
              "    B[i] = tile[get_local_id(0) + 1];\n"
              "}\n", ["N"], [64], ["N"]),
}
"""Kernels beyond every device's limits, each with its NDRange and buffer shape (the macro
PAD, 0, for tune)."""

BEYOND_VALUES = {"items": "16384 work-items", "words": "16777216 bytes of local memory"}


def _beyond_launch_file(folder, name: str):
    source, global_size, local_size, shape = BEYOND_KERNELS[name]
    (folder / f"{name}.cl").write_text(source)
    (folder / "refs.py").write_text("def copy(inputs):\n    return {'B': inputs['A']}\n")
    (folder / f"{name}.toml").write_text(
        f'source = "{name}.cl"\nkernel = "{name}"\n\n[sizes]\nN = 128\n\n[launch]\n'
        f"global_size = {global_size}\nlocal_size = {local_size}\n\n[args]\n".replace("'", '"')
        + f'A = {{ shape = {shape}, access = "in" }}\n'.replace("'", '"')
        + f'B = {{ shape = {shape}, access = "out" }}\n'.replace("'", '"')
        + 'N = "N"\n\n[reference]\nfunction = "refs.py:copy"\n')
    (folder / "cases.toml").write_text(f'[[case]]\nlaunch = "{name}.toml"\n')
    return folder / f"{name}.toml"


def _commands(launch, cases, has_pocl: bool, has_oclgrind: bool):
    """(argv, the limit named) of every command that takes the launch."""
    generic, h200 = ("1024", "49152"), ("1024", "49152")
    out = [(("simulate", launch), generic), (("check", launch), generic),
           (("model", launch), h200), (("simulate", launch, "--device-model", "nvidia-h200"),
                                        h200),
           (("explain", launch, "--out", str(launch.parent / "page.html")), h200),
           (("tune", launch, "--param", "PAD=0", "--top", "0"), h200)]
    if has_pocl:
        pocl = ("4096", "1048576")
        out += [(("run", launch, "--device", "pocl"), pocl),
                (("validate", "--cases", cases, "--device", "pocl", "--out",
                  str(launch.parent / "validation")), pocl)]
    if has_oclgrind:
        out.append((("crosscheck", launch), ("1024", "32768")))
    return out


@pytest.mark.parametrize("name", sorted(BEYOND_KERNELS))
def test_every_command_refuses_a_launch_beyond_the_limits_first_in_one_line(
        tmp_path, monkeypatch, name):
    """Work-group size and local memory beyond the device's: exit 2 at once, one line that
    names the value and the limit, no check before launch, no hazard count."""
    from click.testing import CliRunner

    from tiletraffic.analysis.cli import main
    from tiletraffic.simulator.engine import launch_check

    def no_check(*args, **kwargs):
        raise AssertionError("the launch was checked before its limits")
    monkeypatch.setattr(launch_check, "check_launch", no_check)
    launch = _beyond_launch_file(tmp_path, name)
    devices = gpu_device.list_devices()
    has_pocl = any(d.is_pocl for d in devices)
    has_oclgrind = any("oclgrind" in d.platform_name.lower() for d in devices)
    for argv, (items_limit, bytes_limit) in _commands(launch, tmp_path / "cases.toml",
                                                      has_pocl, has_oclgrind):
        result = CliRunner().invoke(main, [str(a) for a in argv])
        text = result.output
        assert result.exit_code == 2, (argv, text, result.exception)
        assert "Traceback" not in text and "hazard" not in text, (argv, text)
        assert BEYOND_VALUES[name] in text, (argv, text)
        assert (items_limit if name == "items" else bytes_limit) in text, (argv, text)
        if argv[0] != "tune":   # tune says so once, for its one candidate
            assert len(text.strip().splitlines()) == 1, (argv, text)
    assert not (tmp_path / "validation").exists() and not (tmp_path / "page.html").exists()
