"""Tests of gpu.devices.device and gpu.runtime.launch on the OpenCL devices of this machine (PoCL, Oclgrind, GPUs)."""
from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pyopencl as cl
import pytest

from tiletraffic.gpu.devices import device as gpu_device
from tiletraffic.gpu.codegen.kernel import GeneratedKernel, KernelArg
from tiletraffic.gpu.runtime.launch import (error_factor, DeviceError, DeviceLimits,
                                            KernelBuildError, LaunchConfigError, LaunchError,
                                            ResultMismatchError, TiletrafficGpuError,
                                            build_program, check_launch_limits, check_result,
                                            list_devices, reference_product, run_kernel,
                                            select_device)

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


def _as_unbuildable(monkeypatch, unbuildable_ids):
    """Make the PoCL devices ``unbuildable_ids`` fail the build probe with LLVM 14's error."""
    monkeypatch.setattr(gpu_device, "build_problem", lambda info: (
        "error: unknown target CPU 'generic'" if info.id in unbuildable_ids else None))


@needs_pocl
def test_a_pocl_that_cannot_compile_is_passed_over_for_one_that_can(monkeypatch):
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)
    pocls = [d for d in DEVICES if d.is_pocl]
    first = min(pocls, key=gpu_device._preference)
    fake_second = dataclasses.replace(first, id="7:0", platform_index=7)
    _as_unbuildable(monkeypatch, {"7:0"})
    assert gpu_device._first_that_builds([first, fake_second], "pocl").id == first.id
    _as_unbuildable(monkeypatch, {first.id})
    assert gpu_device._first_that_builds([first, fake_second], "pocl").id == "7:0"
    # named by number: that device or none
    with pytest.raises(DeviceError, match="unknown target CPU"):
        gpu_device._first_that_builds([first, fake_second], first.id)
    _as_unbuildable(monkeypatch, set())
    assert gpu_device._first_that_builds([first], first.id).id == first.id


def test_a_device_that_is_not_a_string_is_bad_input():
    with pytest.raises(gpu_device.NoMatchingDeviceError, match="got 5"):
        select_device(5)


@needs_pocl
def test_no_pocl_that_compiles_is_one_line_naming_the_error_and_the_fix(monkeypatch):
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)
    _as_unbuildable(monkeypatch, {d.id for d in DEVICES})
    with pytest.raises(DeviceError) as err:
        select_device("pocl")
    message = str(err.value)
    assert "\n" not in message
    assert "unknown target CPU 'generic'" in message and "apt install pocl-opencl-icd" in message


@needs_pocl
def test_the_build_probe_of_a_working_pocl_is_none_and_kept():
    chosen = select_device("pocl").info
    assert gpu_device.build_problem(chosen) is None
    key = (chosen.platform_index, chosen.device_index, chosen.platform_version,
           chosen.device_name)
    assert gpu_device._build_problems[key] is None


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
def test_the_compilers_stderr_summary_is_kept_from_the_terminal_unless_asked(pocl, capfd,
                                                                            monkeypatch):
    # the source redefines a -D macro: a warning, in the log; a fresh option each build so
    # that no compiler cache skips the compile
    source = "#define W 2\n__kernel void k(__global float *y) { y[0] = W; }\n"
    import uuid
    monkeypatch.delenv("PYOPENCL_COMPILER_OUTPUT", raising=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        built = build_program(pocl, source, ("-DW=3", f"-DFRESH={uuid.uuid4().int % 10**9}"))
        quiet = capfd.readouterr().err
        monkeypatch.setenv("PYOPENCL_COMPILER_OUTPUT", "1")
        build_program(pocl, source, ("-DW=3", f"-DFRESH={uuid.uuid4().int % 10**9}"))
        asked = capfd.readouterr().err
    assert "macro redefined" in built.log            # the warning itself is kept
    assert "generated." not in quiet, quiet
    assert "1 warning generated." in asked           # the compiler does print it


@needs_pocl
def test_wrong_kernel_name_raises_kernel_build_error(pocl):
    with pytest.raises(KernelBuildError, match="gemm_nope"):
        run_kernel(pocl, tiled_gemm(20, 13, name="gemm_nope"), *gemm_inputs(20, 37, 13, np.random.default_rng()))


@needs_pocl
def test_argument_checks(pocl):
    arrays, scalars = gemm_inputs(20, 37, 13, np.random.default_rng())
    kernel = tiled_gemm(20, 13)
    with pytest.raises(ValueError, match="repeat = 9 is below the minimum of 10"):
        run_kernel(pocl, kernel, arrays, scalars, repeat=9)
    with pytest.raises(ValueError, match="repeat = 10001 is above the maximum of 10000"):
        run_kernel(pocl, kernel, arrays, scalars, repeat=10001)
    with pytest.raises(ValueError, match="warmup = 0 is below the minimum of 1"):
        run_kernel(pocl, kernel, arrays, scalars, warmup=0)
    with pytest.raises(ValueError, match="warmup = 1001 is above the maximum of 1000"):
        run_kernel(pocl, kernel, arrays, scalars, warmup=1001)
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
    with pytest.raises(ResultMismatchError, match=r"y\[1\] = -1\.99982, reference -2, .*tolerance"):
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


# ------------------------------------------------ every launch checked
COPY_SOURCE = """\
__kernel void copy_launch(__global const float *restrict A, __global float *restrict C,
                          const int M, const int launch_index)
{
    const int i = get_global_id(0);
    if (i < M) C[i] = %s;
}
"""


def copy_kernel(expression: str) -> GeneratedKernel:
    """C[i] = expression (of A[i] and launch_index) for 64 elements, work-groups of 16."""
    return GeneratedKernel(
        name="copy_launch", source=COPY_SOURCE % expression,
        args=(KernelArg("A", "global_in"), KernelArg("C", "global_out"), KernelArg("M", "int"),
              KernelArg("launch_index", "int")),
        global_size=(64,), local_size=(16,), local_mem_bytes=0)


def copy_arrays(rng):
    return ({"A": rng.standard_normal(64).astype(np.float32),
             "C": np.empty(64, dtype=np.float32)}, {"M": 64, "launch_index": 0})


@needs_pocl
def test_a_middle_launch_writing_zeros_is_caught_by_the_fingerprints(pocl):
    arrays, scalars = copy_arrays(np.random.default_rng(3))
    kernel = copy_kernel("launch_index == 6 ? 0.0f : A[i]")
    with pytest.raises(ResultMismatchError) as err:
        run_kernel(pocl, kernel, arrays, scalars)  # no check given: differing outputs refused
    assert err.value.launch == 6
    seen = []

    def exact(launch, outputs):
        seen.append(launch)
        if not np.array_equal(outputs["C"], arrays["A"]):
            raise ResultMismatchError("wrong", launch=launch)

    with pytest.raises(ResultMismatchError) as err:
        run_kernel(pocl, kernel, arrays, scalars, check_output=exact)
    assert err.value.launch == 6 and seen == [0, 6], "launch 0 checked, then the new output"


@needs_pocl
def test_every_launch_starts_from_unwritten_outputs(pocl):
    """A launch that writes nothing in one launch shows as unwritten, not as the previous
    launch's values."""
    arrays, scalars = copy_arrays(np.random.default_rng(4))
    source = COPY_SOURCE.replace("if (i < M)", "if (i < M && launch_index != 3)") % "A[i]"
    kernel = dataclasses.replace(copy_kernel("A[i]"), source=source)
    checks = {}

    def check(launch, outputs):
        ref = arrays["A"].astype(np.float64)
        checks[launch] = check_result(outputs["C"], ref, 1, np.abs(ref))
        checks[launch].raise_if_bad("C")

    with pytest.raises(ResultMismatchError):
        run_kernel(pocl, kernel, arrays, scalars, check_output=check)
    assert sorted(checks) == [0, 3]
    assert checks[3].unwritten_count == 64 and checks[3].written_nonfinite_count == 0


@needs_pocl
def test_nondeterminism_within_tolerance_is_reported_not_refused(pocl):
    arrays, scalars = copy_arrays(np.random.default_rng(5))
    kernel = copy_kernel("launch_index % 2 == 0 ? A[i] : A[i] * 1.0000001f")

    def close(launch, outputs):
        np.testing.assert_allclose(outputs["C"], arrays["A"], rtol=1e-6)

    with pytest.warns(RuntimeWarning, match="nondeterministic"):
        result = run_kernel(pocl, kernel, arrays, scalars, check_output=close)
    assert result.distinct_outputs == 2 and len(result.output_digests) == 12
    assert result.checked_launches == (0, 1, 11)
    assert len(set(result.output_digests[::2])) == 1 and len(set(result.output_digests)) == 2


@needs_pocl
def test_deterministic_kernel_checks_first_and_last_only(pocl):
    arrays, scalars = copy_arrays(np.random.default_rng(6))
    seen = []
    result = run_kernel(pocl, copy_kernel("A[i] + 1.0f"), arrays, scalars,
                        check_output=lambda launch, outputs: seen.append(launch))
    assert seen == [0, 11] and result.checked_launches == (0, 11)
    assert result.distinct_outputs == 1 and result.timing == "profiling"
    np.testing.assert_array_equal(result.outputs["C"], arrays["A"] + np.float32(1))


# ---------------------------------------- profiling unavailable
@needs_pocl
def test_a_queue_without_profiling_falls_back_to_host_timing_with_a_warning(pocl):
    from tiletraffic.gpu.runtime.launch import ProfilingUnavailableWarning, queue_has_profiling

    plain = dataclasses.replace(pocl, queue=cl.CommandQueue(pocl.context, pocl.device),
                                program_cache={})
    assert queue_has_profiling(pocl.queue) and not queue_has_profiling(plain.queue)
    arrays, scalars = copy_arrays(np.random.default_rng(7))
    with pytest.warns(ProfilingUnavailableWarning, match="profiling is unavailable"):
        result = run_kernel(plain, copy_kernel("A[i]"), arrays, scalars)
    assert result.timing == "host" and len(result.kernel_times_s) == 10
    assert all(t > 0 for t in result.kernel_times_s)


@needs_pocl
def test_profiling_times_that_cannot_be_read_fall_back_to_host_timing(pocl, monkeypatch):
    from tiletraffic.gpu.runtime import launch as runtime
    from tiletraffic.gpu.runtime.launch import ProfilingUnavailableWarning

    real = cl.enqueue_nd_range_kernel

    class NoProfile:
        def __init__(self, event):
            self.event = event

        def wait(self):
            self.event.wait()

        @property
        def profile(self):
            raise cl.RuntimeError("clGetEventProfilingInfo failed: PROFILING_INFO_NOT_AVAILABLE")

    monkeypatch.setattr(runtime.cl, "enqueue_nd_range_kernel",
                        lambda *a, **kw: NoProfile(real(*a, **kw)))
    arrays, scalars = copy_arrays(np.random.default_rng(8))
    with pytest.warns(ProfilingUnavailableWarning):
        result = run_kernel(pocl, copy_kernel("A[i]"), arrays, scalars)
    assert result.timing == "host" and len(result.kernel_times_s) == 10


@needs_pocl
def test_a_device_refusing_a_profiling_queue_still_opens_with_a_warning(monkeypatch):
    from tiletraffic.gpu.runtime.launch import ProfilingUnavailableWarning, queue_has_profiling

    real = cl.CommandQueue

    def refusing(context, device=None, properties=None):
        if properties:
            raise cl.LogicError("clCreateCommandQueue failed: INVALID_QUEUE_PROPERTIES")
        return real(context, device)

    monkeypatch.setattr(gpu_device.cl, "CommandQueue", refusing)
    with pytest.warns(ProfilingUnavailableWarning, match="profiling is unavailable"):
        target = select_device("pocl")
    assert not queue_has_profiling(target.queue)


def test_check_result_names_the_worst_ratio_not_the_largest_error():
    """Issue #15 case 6: the largest |error| (element 0, large values) and the largest
    error/tolerance (element 1, small values) are different elements; the verdict is the
    ratio's, at its element."""
    ref = np.array([[1000.0, 1.0]])
    tol = error_factor(1) * np.abs(ref) + 2 * 2.0**-126
    actual = (ref + np.array([[0.5, 4.0]]) * tol).astype(np.float64)
    check = check_result(actual, ref, 1, np.abs(ref))
    assert check.worst_index == (0, 1)
    assert check.max_abs_error == pytest.approx(0.5 * tol[0, 0])
    assert check.error_over_tolerance == pytest.approx(4.0)
    assert not check.ok and check.mismatch_count == 1
