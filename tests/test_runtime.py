"""Tests of gpu.device and gpu.runtime on the OpenCL devices of this machine (PoCL, Oclgrind, GPUs)."""
from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pyopencl as cl
import pytest

from tiletraffic.gpu import device as gpu_device
from tiletraffic.gpu.kernel import GeneratedKernel, KernelArg
from tiletraffic.gpu.runtime import (
    error_factor,
    DeviceError,
    DeviceLimits,
    KernelBuildError,
    LaunchConfigError,
    LaunchError,
    ResultMismatchError,
    TiletrafficGpuError,
    build_program,
    check_launch_limits,
    check_result,
    list_devices,
    reference_product,
    run_kernel,
    select_device,
)

TILED_GEMM_SOURCE = """\
__kernel __attribute__((reqd_work_group_size(16, 16, 1)))
void gemm_tiled(__global const float *restrict A, __global const float *restrict B,
                __global float *restrict C, const int M, const int K, const int N)
{
    __local float tile_A[256];
    __local float tile_B[256];
    const int col = get_global_id(0);
    const int row = get_global_id(1);
    const int lc = get_local_id(0);
    const int lr = get_local_id(1);
    float acc = 0.0f;
    for (int t = 0; t < (K + 15) / 16; t += 1) {
        if (row < M && t * 16 + lc < K) tile_A[lr * 16 + lc] = A[row * K + t * 16 + lc]; else tile_A[lr * 16 + lc] = 0.0f;
        if (t * 16 + lr < K && col < N) tile_B[lr * 16 + lc] = B[(t * 16 + lr) * N + col]; else tile_B[lr * 16 + lc] = 0.0f;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < 16; k += 1) acc += tile_A[lr * 16 + k] * tile_B[k * 16 + lc];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
"""

GEMM_ARGS = (
    KernelArg("A", "global_in"), KernelArg("B", "global_in"), KernelArg("C", "global_out"),
    KernelArg("M", "int"), KernelArg("K", "int"), KernelArg("N", "int"),
)

DEVICES = list_devices()
HAS_POCL = any(d.is_pocl for d in DEVICES)
HAS_OCLGRIND = any("oclgrind" in d.platform_name.lower() for d in DEVICES)
HAS_GPU = any(d.is_gpu for d in DEVICES)
needs_pocl = pytest.mark.skipif(not HAS_POCL, reason="PoCL is not installed (pip install pocl-binary-distribution)")
needs_oclgrind = pytest.mark.skipif(not HAS_OCLGRIND, reason="Oclgrind is not installed")
needs_gpu = pytest.mark.skipif(not HAS_GPU, reason="no real GPU OpenCL device")

FAKE_1024 = DeviceLimits(max_work_group_size=1024, max_work_item_sizes=(1024, 1024, 64),
                         local_mem_bytes=48 * 1024, name="Fake GPU")


def tiled_gemm(m: int, n: int, tile: int = 16, **changes) -> GeneratedKernel:
    """The example tiled GEMM with its global size rounded up to multiples of the tile."""
    kernel = GeneratedKernel(
        name="gemm_tiled",
        source=TILED_GEMM_SOURCE,
        args=GEMM_ARGS,
        global_size=(-(-n // tile) * tile, -(-m // tile) * tile),
        local_size=(tile, tile),
        local_mem_bytes=2 * tile * tile * 4,
        schedule_name="gemm-tiled",
    )
    return dataclasses.replace(kernel, **changes)


def gemm_inputs(m: int, k: int, n: int, rng: np.random.Generator):
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    return {"A": a, "B": b, "C": np.empty((m, n), np.float32)}, {"M": m, "K": k, "N": n}


@pytest.fixture(scope="module")
def pocl():
    if not HAS_POCL:
        pytest.skip("PoCL is not installed (pip install pocl-binary-distribution)")
    return select_device("pocl")


# ---------------------------------------------------------------- device choice


@needs_pocl
def test_list_devices_finds_pocl_cpu():
    pocl = [d for d in DEVICES if d.is_pocl]
    assert pocl and "CPU" in pocl[0].type and not pocl[0].is_gpu and not pocl[0].is_simulator
    d = pocl[0]
    assert d.id == f"{d.platform_index}:{d.device_index}"
    assert d.max_work_group_size >= 1 and d.local_mem_bytes > 0 and d.compute_units >= 1
    assert len(d.max_work_item_sizes) >= 2 and d.global_mem_bytes > 0


@needs_oclgrind
def test_oclgrind_is_a_simulator_not_a_gpu():
    grind = next(d for d in DEVICES if "oclgrind" in d.platform_name.lower())
    assert grind.is_simulator and not grind.is_gpu
    assert "GPU" in grind.type  # it does claim the GPU bit; we must not believe it


def test_slugs_are_directory_safe():
    for d in DEVICES:
        assert d.slug and all(c.isdigit() or "a" <= c <= "z" or c == "-" for c in d.slug)
    assert gpu_device.device_slug("NVIDIA CUDA", "NVIDIA Corporation", "NVIDIA H200", "GPU") == "nvidia-h200"
    assert gpu_device.device_slug("Portable Computing Language", "The pocl project",
                                  "pthread-Intel(R) Xeon(R) Processor", "CPU") == "pocl-cpu-intel-xeon-processor"


@needs_pocl
def test_select_pocl_by_name_gives_a_profiling_target(pocl):
    assert pocl.info.is_pocl and pocl.slug.startswith("pocl-cpu")
    assert pocl.queue.properties & cl.command_queue_properties.PROFILING_ENABLE


def test_unknown_spec_raises_device_error_naming_it():
    with pytest.raises(DeviceError, match="no-such-device") as err:
        select_device("no-such-device")
    assert isinstance(err.value, TiletrafficGpuError) and isinstance(err.value, RuntimeError)
    if DEVICES:
        assert DEVICES[0].id in str(err.value)  # the available devices are listed


def test_bad_index_raises_device_error():
    with pytest.raises(DeviceError, match="99:0"):
        select_device("99:0")


@needs_pocl
def test_pyopencl_ctx_is_respected(monkeypatch):
    pocl = next(d for d in DEVICES if d.is_pocl)
    monkeypatch.setenv("PYOPENCL_CTX", pocl.id)
    assert select_device().info.id == pocl.id
    monkeypatch.setenv("PYOPENCL_CTX", str(pocl.platform_index))
    assert select_device().info.platform_index == pocl.platform_index
    monkeypatch.setenv("PYOPENCL_CTX", "no-such-device")
    with pytest.raises(DeviceError, match="PYOPENCL_CTX"):
        select_device()


@pytest.mark.skipif(not DEVICES, reason="no OpenCL device")
def test_default_choice_is_never_oclgrind_when_something_else_exists(monkeypatch):
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)
    chosen = select_device().info
    if any(not d.is_simulator for d in DEVICES):
        assert not chosen.is_simulator and "oclgrind" not in chosen.platform_name.lower()
    if HAS_GPU:
        assert chosen.is_gpu
    elif HAS_POCL:
        assert chosen.is_pocl


def test_no_device_at_all_says_how_to_install_pocl(monkeypatch):
    monkeypatch.setattr(gpu_device, "_platforms", lambda: [])
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)
    assert list_devices() == []
    with pytest.raises(DeviceError, match="pip install pocl-binary-distribution"):
        select_device()


def test_broken_platform_does_not_crash_listing(monkeypatch):
    class Broken:
        name = vendor = version = "Broken"

        def get_devices(self):
            raise cl.RuntimeError("clGetDeviceIDs failed: OUT_OF_RESOURCES")

    real = gpu_device._platforms()
    monkeypatch.setattr(gpu_device, "_platforms", lambda: [Broken(), *real])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = list_devices()
    assert len(found) == len(DEVICES) and all(d.platform_index >= 1 for d in found)
    assert any("platform 0" in str(w.message) for w in caught)


# ---------------------------------------------------------------- launch limits (pure numbers)


def test_fake_device_refuses_64x64_work_group():
    kernel = tiled_gemm(128, 128, tile=64)
    with pytest.raises(LaunchConfigError, match="4096") as err:
        check_launch_limits(kernel, FAKE_1024)
    assert "1024" in str(err.value) and "64 x 64" in str(err.value)
    assert isinstance(err.value, ValueError)


def test_kernel_maximum_is_enforced():
    kernel = tiled_gemm(64, 64, tile=32)  # 1024 work-items: fits the device, not this kernel
    check_launch_limits(kernel, FAKE_1024)
    with pytest.raises(LaunchConfigError, match="1024.*kernel's maximum of 512"):
        check_launch_limits(kernel, FAKE_1024, kernel_max_work_group_size=512)


def test_kernel_maximum_is_advisory_for_a_kernel_compiled_for_that_size():
    """NVIDIA reports CL_KERNEL_WORK_GROUP_SIZE = 256 for every kernel yet runs 32 x 32
    work-groups of kernels compiled for them: warn, do not refuse."""
    kernel = tiled_gemm(64, 64, tile=32)
    with pytest.warns(RuntimeWarning, match="1024.*256"):
        check_launch_limits(kernel, FAKE_1024, kernel_max_work_group_size=256,
                            required_local_size=(32, 32, 1))
    with pytest.raises(LaunchConfigError, match="kernel's maximum of 256"):
        check_launch_limits(kernel, FAKE_1024, kernel_max_work_group_size=256,
                            required_local_size=(0, 0, 0))
    with pytest.raises(LaunchConfigError, match="4096"):  # the device limit stays hard
        check_launch_limits(tiled_gemm(128, 128, tile=64), FAKE_1024,
                            kernel_max_work_group_size=256, required_local_size=(64, 64, 1))


def test_local_memory_over_limit_names_both_numbers():
    kernel = tiled_gemm(64, 64, local_mem_bytes=64 * 1024)
    with pytest.raises(LaunchConfigError, match=r"65536 bytes.*49152 bytes"):
        check_launch_limits(kernel, FAKE_1024)


def test_work_item_size_per_dimension():
    kernel = tiled_gemm(64, 64, global_size=(1, 128), local_size=(1, 128))
    with pytest.raises(LaunchConfigError, match=r"local_size\[1\] = 128 .* 64 in dimension 1"):
        check_launch_limits(kernel, dataclasses.replace(FAKE_1024, max_work_item_sizes=(1024, 64, 64)))


def test_global_size_must_be_a_multiple_of_local_size():
    with pytest.raises(LaunchConfigError, match=r"global_size\[1\] = 40 .* local_size\[1\] = 16.*48"):
        check_launch_limits(tiled_gemm(20, 13, global_size=(16, 40)), FAKE_1024)
    with pytest.raises(LaunchConfigError, match=r"global_size\[0\] = 0"):
        check_launch_limits(tiled_gemm(20, 13, global_size=(0, 32)), FAKE_1024)


def test_required_work_group_size_is_checked():
    check_launch_limits(tiled_gemm(20, 13), FAKE_1024, required_local_size=(16, 16, 1))
    check_launch_limits(tiled_gemm(20, 13), FAKE_1024, required_local_size=(0, 0, 0))
    with pytest.raises(LaunchConfigError, match="reqd_work_group_size"):
        check_launch_limits(tiled_gemm(20, 13, tile=8), FAKE_1024, required_local_size=(16, 16, 1))


@needs_pocl
def test_run_refuses_before_launching_on_pocl(pocl):
    arrays, scalars = gemm_inputs(20, 37, 13, np.random.default_rng())
    big = tiled_gemm(20, 13, local_mem_bytes=pocl.info.local_mem_bytes + 4)
    with pytest.raises(LaunchConfigError, match=str(pocl.info.local_mem_bytes)):
        run_kernel(pocl, big, arrays, scalars)


# ---------------------------------------------------------------- build, run, time, check


@needs_pocl
@pytest.mark.parametrize("m,k,n", [(20, 37, 13), (1, 1, 1), (33, 16, 17)])
def test_tiled_gemm_on_pocl_equals_numpy(pocl, m, k, n):
    rng = np.random.default_rng()
    arrays, scalars = gemm_inputs(m, k, n, rng)
    result = run_kernel(pocl, tiled_gemm(m, n), arrays, scalars)
    c = result.outputs["C"]
    assert c.shape == (m, n) and c.dtype == np.float32
    ref, abs_prod = reference_product(arrays["A"], arrays["B"])
    check = check_result(c, ref, k, abs_prod)
    check.raise_if_bad("C")
    assert check.nan_count == 0 and check.max_abs_error <= check.max_allowed


@needs_pocl
def test_build_cache_and_timings(pocl):
    source = TILED_GEMM_SOURCE + "\n// cache test %r\n" % np.random.default_rng().integers(1 << 62)
    kernel = tiled_gemm(20, 13, source=source)
    arrays, scalars = gemm_inputs(20, 37, 13, np.random.default_rng())
    first = run_kernel(pocl, kernel, arrays, scalars, repeat=12, warmup=3)
    second = run_kernel(pocl, kernel, arrays, scalars)
    assert not first.build_cached and first.build_time_s > 0
    assert second.build_cached and second.build_time_s == 0.0
    assert build_program(pocl, source).cached
    assert len(first.kernel_times_s) == 12 and len(second.kernel_times_s) == 10
    for r in (first, second):
        assert all(t > 0 for t in r.kernel_times_s)
        assert r.min_s <= r.median_s <= r.max_s
        assert r.min_s == min(r.kernel_times_s) and r.max_s == max(r.kernel_times_s)
        assert r.device_slug == pocl.slug and r.global_size == (16, 32) and r.local_size == (16, 16)
    assert set(first.as_dict()) >= {"kernel_times_s", "median_s", "build_time_s", "device_slug"}


@needs_pocl
def test_unwritten_elements_are_nan(pocl):
    source = TILED_GEMM_SOURCE.replace("if (row < M && col < N) C", "if (row < M && col < N && col != 3) C")
    arrays, scalars = gemm_inputs(20, 37, 13, np.random.default_rng())
    c = run_kernel(pocl, tiled_gemm(20, 13, source=source), arrays, scalars).outputs["C"]
    assert np.isnan(c[:, 3]).all() and not np.isnan(np.delete(c, 3, axis=1)).any()
    ref, abs_prod = reference_product(arrays["A"], arrays["B"])
    check = check_result(c, ref, 37, abs_prod)
    assert not check.ok and check.nan_count == 20 and check.worst_index[1] == 3
    with pytest.raises(ResultMismatchError, match=r"C\[0, 3\] = nan"):
        check.raise_if_bad("C")


@needs_pocl
def test_syntax_error_raises_kernel_build_error_with_log(pocl):
    broken = TILED_GEMM_SOURCE.replace("float acc = 0.0f;", "float acc = 0.0f")
    with pytest.raises(KernelBuildError) as err:
        run_kernel(pocl, tiled_gemm(20, 13, source=broken), *gemm_inputs(20, 37, 13, np.random.default_rng()))
    assert "error" in err.value.log.lower() and err.value.log in str(err.value)
    assert "BUILD_PROGRAM_FAILURE" not in err.value.log  # the compiler's log, not pyopencl's wrapper


@needs_pocl
def test_wrong_kernel_name_raises_kernel_build_error(pocl):
    with pytest.raises(KernelBuildError, match="gemm_nope"):
        run_kernel(pocl, tiled_gemm(20, 13, name="gemm_nope"), *gemm_inputs(20, 37, 13, np.random.default_rng()))


@needs_pocl
def test_argument_checks(pocl):
    arrays, scalars = gemm_inputs(20, 37, 13, np.random.default_rng())
    kernel = tiled_gemm(20, 13)
    with pytest.raises(ValueError, match="at least 10"):
        run_kernel(pocl, kernel, arrays, scalars, repeat=9)
    with pytest.raises(ValueError, match="warmup"):
        run_kernel(pocl, kernel, arrays, scalars, warmup=0)
    with pytest.raises(TypeError, match="'A'.*float32.*float64"):
        run_kernel(pocl, kernel, {**arrays, "A": arrays["A"].astype(np.float64)}, scalars)
    with pytest.raises(ValueError, match="C-contiguous"):
        run_kernel(pocl, kernel, {**arrays, "A": np.asfortranarray(arrays["A"])}, scalars)
    with pytest.raises(ValueError, match="missing.*'N'"):
        run_kernel(pocl, kernel, arrays, {"M": 20, "K": 37})


@needs_pocl
def test_opencl_launch_failure_raises_launch_error(pocl, monkeypatch):
    def fail(*args, **kwargs):
        raise cl.LogicError("clEnqueueNDRangeKernel failed: OUT_OF_RESOURCES")

    monkeypatch.setattr(cl, "enqueue_nd_range_kernel", fail)
    with pytest.raises(LaunchError, match=r"gemm_tiled.*16 x 32.*16 x 16.*OUT_OF_RESOURCES"):
        run_kernel(pocl, tiled_gemm(20, 13), *gemm_inputs(20, 37, 13, np.random.default_rng()))


@needs_oclgrind
def test_tiled_gemm_on_oclgrind_equals_numpy():
    target = select_device("oclgrind")
    assert target.limits.max_work_group_size == target.info.max_work_group_size
    arrays, scalars = gemm_inputs(20, 37, 13, np.random.default_rng())
    result = run_kernel(target, tiled_gemm(20, 13), arrays, scalars, warmup=1)
    ref, abs_prod = reference_product(arrays["A"], arrays["B"])
    check_result(result.outputs["C"], ref, 37, abs_prod).raise_if_bad("C")


# ---------------------------------------------------------------- check_result


def test_check_result_tolerance_follows_the_probabilistic_bound():
    """Higham & Mary (2019): gamma~_k = exp(8 sqrt(k) u + k u^2/(1-u)) - 1, tighter than
    the worst case 2 gamma_k for large k, so a dropped term is caught at large K."""
    k = 1000
    u = 2.0**-24
    probable = math.expm1(8 * math.sqrt(k) * u + k * u * u / (1 - u))
    assert probable < 2 * k * u / (1 - k * u)
    assert error_factor(k) == pytest.approx(probable)
    assert error_factor(1) == pytest.approx(2 * u / (1 - u))  # worst case is tighter at k=1
    ref = np.array([1.0, -2.0])
    abs_prod = np.array([3.0, 4.0])
    good = (ref + 0.9 * probable * abs_prod).astype(np.float64)
    check = check_result(good, ref, k, abs_prod)
    assert check.ok and check.gamma_k == pytest.approx(probable)
    assert check.max_allowed == pytest.approx(probable * 4.0 + 2 * k * 2.0**-126)
    bad = np.array([1.0, -2.0 + 3 * probable * 4.0])
    check = check_result(bad, ref, k, abs_prod)
    assert not check.ok and check.worst_index == (1,) and check.mismatch_count == 1
    with pytest.raises(ResultMismatchError, match=r"y\[1\].*reference -2\.0.*tolerance"):
        check.raise_if_bad("y")


def test_check_result_catches_a_dropped_term_at_large_k():
    rng = np.random.default_rng()
    k = 16384
    a = rng.standard_normal((64, k)).astype(np.float32)
    x = rng.standard_normal(k).astype(np.float32)
    x[-1] = 2.0  # the dropped term a[:, -1] * x[-1] is then typically ~1.6: not hidden by luck
    ref, absprod = reference_product(a, x)
    assert check_result((a @ x).astype(np.float32), ref, k, absprod).ok
    dropped = (a[:, :-1] @ x[:-1]).astype(np.float32)
    assert not check_result(dropped, ref, k, absprod).ok


def test_check_result_rejects_mismatched_shapes_and_huge_k():
    with pytest.raises(ValueError, match="shapes"):
        check_result(np.zeros(3, np.float32), np.zeros(4), 5, np.zeros(4))
    with pytest.raises(ValueError, match="k"):
        check_result(np.zeros(3, np.float32), np.zeros(3), 2**24, np.zeros(3))


@needs_gpu
@pytest.mark.gpu
def test_tiled_gemm_on_the_gpu_equals_numpy(monkeypatch):
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)
    target = select_device()
    assert target.info.is_gpu
    m, k, n = 257, 129, 131
    arrays, scalars = gemm_inputs(m, k, n, np.random.default_rng())
    result = run_kernel(target, tiled_gemm(m, n), arrays, scalars)
    ref, abs_prod = reference_product(arrays["A"], arrays["B"])
    check_result(result.outputs["C"], ref, k, abs_prod).raise_if_bad("C")
    assert len(result.kernel_times_s) == 10 and result.min_s > 0
