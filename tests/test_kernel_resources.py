"""Registers per work-item from the compiled kernel: the ptxas lines of
NVIDIA's ``-cl-nv-verbose`` build log, and what a run reports where the driver gives none."""
from __future__ import annotations

import types

import numpy as np
import pytest

import tiletraffic
from tiletraffic.gpu.codegen.kernel import GeneratedKernel
from tiletraffic.gpu.devices.kernel_resources import (NV_VERBOSE, BuildLogError,
                                                      KernelResources, is_nvidia_platform,
                                                      parse_ptxas_log)
from tiletraffic.gpu.runtime.launch import build_options, list_devices

# The build log of gemm_tiled B = 16 with -cl-nv-verbose on the H200 (NVIDIA OpenCL driver
# 580.159.04), as stored in reports/nvidia-h200/h200_raw.json.gz, opencl_work_group_probe[9].
H200_TILED_LOG = (
    "(): Warning: Function gemm_tiled is a kernel, so overriding noinline attribute. The "
    "function may be inlined when called.\n\n"
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function 'gemm_tiled' for 'sm_90a'\n"
    "ptxas info    : Function properties for gemm_tiled\n"
    "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 31 registers, used 1 barriers, 2052 bytes smem\n"
    "ptxas info    : Compile time = 5.767 ms")


def test_the_h200_log_of_gemm_tiled():
    got = parse_ptxas_log(H200_TILED_LOG, "gemm_tiled")
    assert got == KernelResources(registers_per_work_item=31, spill_store_bytes=0,
                                  spill_load_bytes=0, stack_frame_bytes=0,
                                  local_mem_bytes=2052, source=f"{NV_VERBOSE} build log")


def test_two_kernels_each_gets_its_own_lines_with_spills_and_constant_banks():
    log = (
        "ptxas info    : 0 bytes gmem\n"
        "ptxas info    : Compiling entry function 'first' for 'sm_90a'\n"
        "ptxas info    : Function properties for first\n"
        "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
        "ptxas info    : Used 40 registers, used 0 barriers, 380 bytes cmem[0]\n"
        "ptxas info    : Compiling entry function 'gemm_register_blocked' for 'sm_90a'\n"
        "ptxas info    : Function properties for gemm_register_blocked\n"
        "ptxas         .     48 bytes stack frame, 44 bytes spill stores, 52 bytes spill loads\n"
        "ptxas info    : Used 255 registers, used 1 barriers, 8192 bytes smem, "
        "380 bytes cmem[0]\n")
    first = parse_ptxas_log(log, "first")
    blocked = parse_ptxas_log(log, "gemm_register_blocked")
    assert (first.registers_per_work_item, first.local_mem_bytes, first.spill_store_bytes) == \
        (40, 0, 0)
    assert (blocked.registers_per_work_item, blocked.local_mem_bytes, blocked.stack_frame_bytes,
            blocked.spill_store_bytes, blocked.spill_load_bytes) == (255, 8192, 48, 44, 52)
    assert parse_ptxas_log(log, "absent") is None


def test_an_older_log_without_entry_line_or_properties():
    # ptxas of older drivers: "Used N registers, 4+0 bytes lmem, ..." and no entry line
    got = parse_ptxas_log("ptxas info    : Used 63 registers, 4+0 bytes lmem, 64 bytes "
                          "cmem[0], 4 bytes cmem[14]\n", "k")
    assert (got.registers_per_work_item, got.local_mem_bytes, got.spill_store_bytes) == \
        (63, 0, None)


@pytest.mark.parametrize("log", ["", "Build succeeded", "warning: unused variable 'x'"])
def test_a_log_without_ptxas_lines_gives_none(log):
    assert parse_ptxas_log(log, "gemm_tiled") is None


def test_a_mangled_resource_line_is_refused_with_the_line():
    log = H200_TILED_LOG.replace("Used 31 registers", "Used many registers")
    with pytest.raises(BuildLogError, match="Used many registers"):
        parse_ptxas_log(log, "gemm_tiled")


def test_nv_verbose_is_added_on_nvidia_only():
    kernel = GeneratedKernel("k", "", (), (16,), (16,), 0, ("-cl-fast-relaxed-math",))
    nvidia = types.SimpleNamespace(info=types.SimpleNamespace(platform_name="NVIDIA CUDA"))
    pocl = types.SimpleNamespace(info=types.SimpleNamespace(
        platform_name="Portable Computing Language"))
    assert build_options(nvidia, kernel) == ("-cl-fast-relaxed-math", NV_VERBOSE)
    assert build_options(pocl, kernel) == ("-cl-fast-relaxed-math",)
    assert is_nvidia_platform("NVIDIA CUDA") and not is_nvidia_platform("Oclgrind")


def test_described_unknown_and_known():
    unknown = KernelResources(private_mem_bytes=0, source="not reported by PoCL")
    assert unknown.describe() == ("registers per work-item: unknown (not reported by PoCL); "
                                  "CL_KERNEL_PRIVATE_MEM_SIZE 0 bytes")
    assert "registers per work-item: 31, spills 0 bytes" in \
        parse_ptxas_log(H200_TILED_LOG, "gemm_tiled").describe()


HAS_POCL = any(d.is_pocl for d in list_devices())


@pytest.mark.skipif(not HAS_POCL, reason="PoCL is not installed")
def test_a_pocl_run_reports_no_registers_but_the_queried_sizes():
    rng = np.random.default_rng()
    sch = tiletraffic.build("gemm-register-blocked", m=40, k=24, n=72, tile=8,
                            tm=2, tn=2, bk=8)
    res = tiletraffic.run(sch, device="Portable", seed=int(rng.integers(1 << 30)))
    r = res.run
    assert r.registers_per_work_item is None
    assert r.resources.kernel_local_mem_bytes == sch.local_mem_bytes
    assert isinstance(r.resources.private_mem_bytes, int)
    assert "Portable Computing Language" in r.resources.source
    d = res.to_dict()
    assert d["registers_per_work_item"] is None
    assert d["kernel_resources"]["kernel_local_mem_bytes"] == sch.local_mem_bytes


def test_the_h200_log_of_a_kernel_with_spills():
    # gemm_vectorized (TM = TN = 4) on the H200, reports/nvidia-h200/registers/build_logs.txt
    log = ("ptxas info    : Compiling entry function 'gemm_vectorized' for 'sm_90a'\n"
           "ptxas info    : Function properties for gemm_vectorized\n"
           "ptxas         .     16 bytes stack frame, 12 bytes spill stores, 12 bytes spill "
           "loads\n"
           "ptxas info    : Used 48 registers, used 1 barriers, 8208 bytes smem\n"
           "ptxas info    : Compile time = 46.546 ms\n")
    got = parse_ptxas_log(log, "gemm_vectorized")
    assert (got.registers_per_work_item, got.stack_frame_bytes, got.spill_store_bytes,
            got.spill_load_bytes, got.local_mem_bytes) == (48, 16, 12, 12, 8208)


class _FakeKernel:
    """A built kernel whose work-group queries answer like NVIDIA's driver."""

    def get_work_group_info(self, query, device):
        import pyopencl as cl
        return {cl.kernel_work_group_info.PRIVATE_MEM_SIZE: 0,
                cl.kernel_work_group_info.LOCAL_MEM_SIZE: 2052}[query]


def test_nvidia_resources_from_the_log_and_the_queries():
    from tiletraffic.gpu.runtime.launch import kernel_resources
    nvidia = types.SimpleNamespace(info=types.SimpleNamespace(platform_name="NVIDIA CUDA"),
                                   device=None)
    got = kernel_resources(nvidia, _FakeKernel(), "gemm_tiled", H200_TILED_LOG)
    assert (got.registers_per_work_item, got.private_mem_bytes,
            got.kernel_local_mem_bytes) == (31, 0, 2052)
    cached = kernel_resources(nvidia, _FakeKernel(), "gemm_tiled", "", "cache retrieval")
    assert cached.registers_per_work_item is None and "PYOPENCL_NO_CACHE=1" in cached.source
    bad = kernel_resources(nvidia, _FakeKernel(), "gemm_tiled",
                           H200_TILED_LOG.replace("Used 31", "Used x"))
    assert bad.registers_per_work_item is None and "unreadable ptxas line" in bad.source


def test_the_gpu_package_turns_nvidias_jit_cache_off_unless_the_user_chose():
    """A cached NVIDIA build writes no ptxas lines, so its registers could not be read."""
    import os
    import subprocess
    import sys
    code = "import os, tiletraffic.gpu; print(os.environ['CUDA_CACHE_DISABLE'])"
    env = {k: v for k, v in os.environ.items() if k != "CUDA_CACHE_DISABLE"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "1", out.stderr
    env["CUDA_CACHE_DISABLE"] = "0"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "0", out.stderr
