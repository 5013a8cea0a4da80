"""GLSL compute shaders compiled by glslangValidator and dispatched through Vulkan
(gpu.vulkan): a tiled GEMM against numpy, push and specialization constants, uniform
buffers, timestamps, and the one-line errors. The module skips in one line where no
Vulkan device or no glslangValidator exists."""
from __future__ import annotations

import statistics
from pathlib import Path

import numpy as np
import pytest

from tiletraffic.gpu.vulkan import (GlslCompileError, VulkanUnavailable, compile_glsl, dispatch,
                                    glslang_validator, open_device, vulkan_available)
from tiletraffic.gpu.vulkan import device as vulkan_device
from tiletraffic.gpu.vulkan.spirv import interface


def _unavailable() -> str | None:
    try:
        glslang_validator()
    except VulkanUnavailable as err:
        return str(err)
    return vulkan_available()


_WHY = _unavailable()
if _WHY:
    pytest.skip(f"no Vulkan: {_WHY}", allow_module_level=True)

SHADERS = Path(__file__).parent / "shaders"


@pytest.fixture(scope="module")
def gemm_spirv() -> bytes:
    return compile_glsl(path=SHADERS / "gemm_tiled.comp")


@pytest.fixture(scope="module")
def constants_spirv() -> bytes:
    return compile_glsl(path=SHADERS / "constants.comp")


def _gemm(spirv, m, n, k, tile, alpha=1.0, **kw):
    rng = np.random.default_rng(m * n * k)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    push = np.array([m, n, k], np.uint32).tobytes() + np.float32(alpha).tobytes()
    run = dispatch(spirv, {(0, 0): a, (0, 1): b, (1, 0): np.zeros((m, n), np.float32)},
                   workgroups=(-(-n // tile), -(-m // tile)), push_constants=push,
                   specialization={0: tile}, outputs=[(1, 0)], **kw)
    return run, alpha * (a.astype(np.float64) @ b.astype(np.float64))


@pytest.mark.parametrize("m, n, k, tile", [(37, 45, 29, 8), (64, 32, 48, 16), (5, 3, 70, 4)])
def test_tiled_gemm_equals_numpy(gemm_spirv, m, n, k, tile):
    run, expected = _gemm(gemm_spirv, m, n, k, tile, alpha=0.5, repeat=3)
    c = run.outputs[(1, 0)]
    assert c.shape == (m, n) and c.dtype == np.float32
    np.testing.assert_allclose(c, expected, rtol=1e-4, atol=1e-4 * np.sqrt(k))
    assert set(run.outputs) == {(1, 0)}


def test_timestamps_time_every_dispatch_and_check_output_sees_each(gemm_spirv):
    seen = []
    run, _ = _gemm(gemm_spirv, 32, 32, 32, 8, repeat=4, warmup=2,
                   check_output=lambda i, out: seen.append((i, out[(1, 0)].shape)))
    assert seen == [(i, (32, 32)) for i in range(6)]
    assert len(run.times_ns) == 4 and all(t > 0 for t in run.times_ns)
    assert run.median_ns == statistics.median(run.times_ns)
    assert run.device == open_device().name and run.warmup == 2


def test_what_check_output_raises_ends_the_run(gemm_spirv):
    def refuse(i, out):
        raise AssertionError(f"dispatch {i} refused")

    with pytest.raises(AssertionError, match="dispatch 0 refused"):
        _gemm(gemm_spirv, 16, 16, 16, 8, check_output=refuse)


def test_constants_and_uniform_reach_the_shader_and_each_dispatch_starts_afresh(constants_spirv):
    counts = np.arange(6, dtype=np.uint32)
    push = np.array([4], np.uint32).tobytes() + np.float32(2.5).tobytes() + \
        np.int32(-7).tobytes()
    run = dispatch(constants_spirv, {(0, 2): np.zeros(8, np.float32),
                                     (2, 0): counts, (1, 1): np.array([3.25, 0, 0, 0],
                                                                      np.float32)},
                   workgroups=(1,), push_constants=push,
                   specialization={0: 42, 3: -5, 7: 0.75, 9: True}, repeat=3)
    np.testing.assert_array_equal(run.outputs[(0, 2)], [42, -5, 0.75, 1, 4, 2.5, -7, 3.25])
    # four dispatches in all, each from the arrays given: incremented once, not four times
    np.testing.assert_array_equal(run.outputs[(2, 0)], [1, 2, 3, 4, 4, 5])
    np.testing.assert_array_equal(counts, np.arange(6))   # the caller's array untouched


def test_spirv_interface(constants_spirv, gemm_spirv):
    shader = interface(constants_spirv)
    assert shader.storage_buffers == ((0, 2), (2, 0))
    assert shader.uniform_buffers == ((1, 1),)
    assert shader.spec_ids == (0, 3, 7, 9) and shader.push_constants
    assert interface(gemm_spirv).storage_buffers == ((0, 0), (0, 1), (1, 0))
    with pytest.raises(ValueError, match="not a SPIR-V module"):
        interface(b"\0" * 20)


@pytest.mark.parametrize("change, message", [
    (dict(workgroups=(0, 1)), r"workgroups \(0, 1, 1\): count 0 on axis 0 outside 1\.\.65535"),
    (dict(workgroups=(1, 1, 1, 1)), "expected 1 to 3 counts"),
    (dict(push_constants=b"\0" * 132), "push constants of 132 bytes: expected a multiple of 4"),
    (dict(push_constants=b""), "has a push-constant block: no push-constant bytes given"),
    (dict(specialization={5: 1}), "specialization constant 5: the shader has none"),
    (dict(specialization={0: 2**40}), "outside 32 bits"),
    (dict(outputs=[(3, 3)]), r"output \(set 3, binding 3\): no such buffer"),
    (dict(repeat=0), "repeat 0, warmup 1: expected 1..10000"),
    (dict(drop=(0, 1)), r"declares a buffer at \(set 0, binding 1\): no array given"),
    (dict(extra=(0, 5)), r"buffer \(set 0, binding 5\): the shader declares no buffer there"),
])
def test_bad_arguments_are_named_before_anything_runs(gemm_spirv, change, message):
    args = dict(workgroups=(1, 1), push_constants=np.zeros(4, np.uint32).tobytes(),
                specialization={0: 8})
    buffers = {(0, 0): np.zeros(4, np.float32), (0, 1): np.zeros(4, np.float32),
               (1, 0): np.zeros(4, np.float32)}
    if "drop" in change:
        del buffers[change.pop("drop")]
    if "extra" in change:
        buffers[change.pop("extra")] = np.zeros(1, np.float32)
    args.update(change)
    with pytest.raises(ValueError, match=message):
        dispatch(gemm_spirv, buffers, **args)


def test_a_rejected_shader_is_named_in_one_line(tmp_path):
    bad = tmp_path / "bad.comp"
    bad.write_text("#version 450\nlayout(local_size_x = 1) in;\n"
                   "void main() { undeclared = 1; }\n")
    with pytest.raises(GlslCompileError) as err:
        compile_glsl(path=bad)
    assert "\n" not in str(err.value)
    assert f"{bad}:3:" in str(err.value) and "undeclared" in str(err.value)
    with pytest.raises(GlslCompileError, match="^given.comp: rejected by glslangValidator: "
                                               "ERROR: #version: compute shaders require"):
        compile_glsl("void main() { }\n", path="given.comp")


def test_defines_reach_the_compiler(tmp_path):
    src = "#version 450\nlayout(local_size_x = WIDTH) in;\nvoid main() {}\n"
    assert compile_glsl(src, defines={"WIDTH": 4})[:4] == bytes.fromhex("03022307")
    with pytest.raises(GlslCompileError, match="WIDTH"):
        compile_glsl(src)
    with pytest.raises(ValueError, match="define '1X': not an identifier"):
        compile_glsl(src, defines={"1X": 1})


def test_missing_compiler_and_device_are_one_line_vulkan_unavailable(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(VulkanUnavailable, match="no glslangValidator on PATH to compile GLSL "
                                                "to SPIR-V .apt-get install glslang-tools.$"):
        compile_glsl("void main() {}")
    monkeypatch.setenv("GLSLANG_VALIDATOR", str(tmp_path / "none"))
    with pytest.raises(VulkanUnavailable, match="is not an executable file"):
        glslang_validator()
    with pytest.raises(VulkanUnavailable, match="no Vulkan physical device whose name contains "
                                                "'no such device'"):
        open_device("no such device")
    assert vulkan_available("no such device").startswith("no Vulkan physical device")


def test_a_missing_binding_package_is_vulkan_unavailable(monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_vulkan(name, *args, **kw):
        if name == "vulkan":
            raise ImportError(name)
        return real_import(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", no_vulkan)
    with pytest.raises(VulkanUnavailable, match="package 'vulkan' is not installed"):
        vulkan_device.binding()


# ---------------------------------------------------------------- run of a GLSL schedule

EXAMPLES = Path(__file__).parent.parent / "examples" / "glsl"


def _glsl_schedule(name: str, **sizes):
    """The chapter's listing ``name`` at ``sizes``, with its launch file's reference."""
    pytest.importorskip("tree_sitter_glsl_spec", reason="the GLSL front end's parser")
    from tiletraffic.frontend import launch_file
    path = str(EXAMPLES / f"{name}.toml")
    return launch_file.load(path, sizes), launch_file.reference_function(path)


def test_run_shader_dispatches_the_shader_itself_checked_and_timed():
    from tiletraffic.gpu.vulkan.runner import TIMING, run_shader

    sch, ref = _glsl_schedule("gemm_tiled", M=40, N=24, K=36)
    result = run_shader(None, sch, repeat=10, warmup=1, rng=np.random.default_rng(1),
                        reference_fn=ref)
    assert result.run.device_name == open_device().name
    assert result.run.timing == TIMING and len(result.run.kernel_times_s) == 10
    assert result.check.ok and result.output == "C"
    assert result.run.outputs["C"].shape == (40, 24)
    assert result.run.local_size == (16, 16, 1) and result.run.global_size == (32, 48, 1)
    assert 0 in result.launch_checks and 10 in result.launch_checks
    assert result.run.distinct_outputs == 1 and len(result.run.output_digests) == 11
    assert result.to_dict()["device_name"] == open_device().name


def test_run_shader_refuses_a_result_unlike_the_reference():
    from tiletraffic.gpu.runtime.launch import ResultMismatchError
    from tiletraffic.gpu.vulkan.runner import run_shader

    sch, _ = _glsl_schedule("gemm_naive", M=16, N=16, K=16)
    with pytest.raises(ResultMismatchError, match="dispatch 1 of 11 .warm-up dispatch 1 of 1."):
        run_shader(None, sch, repeat=10, warmup=1,
                   reference_fn=lambda x: {"C": x["A"] @ x["B"] + 1.0})


def test_a_name_glsl_reserves_is_renamed_for_the_compiler():
    from tiletraffic.gpu.vulkan.runner import TIMING, run_shader

    sch, ref = _glsl_schedule("matvec_naive", M=64, N=32)   # names a buffer 'output'
    result = run_shader(None, sch, repeat=10, warmup=1, reference_fn=ref)
    assert result.check.ok and result.run.timing == TIMING and result.output == "output"


def test_a_shader_glslang_rejects_runs_as_its_opencl_translation(pocl, monkeypatch):
    from tiletraffic.gpu.devices.device import select_device
    from tiletraffic.gpu.vulkan import runner

    def reject(*args, **kw):
        raise GlslCompileError("gemm_naive.comp: rejected by glslangValidator: ERROR: x.")

    monkeypatch.setattr(runner, "compile_glsl", reject)
    sch, ref = _glsl_schedule("gemm_naive", M=24, N=20, K=16)
    with pytest.warns(runner.ShaderFallbackWarning, match="ERROR: x; running the shader's "
                                                          "OpenCL C translation"):
        result = runner.run_shader(select_device(pocl), sch, repeat=10, warmup=1,
                                   reference_fn=ref)
    assert result.check.ok and result.run.timing != runner.TIMING


def test_run_command_names_vulkans_physical_device():
    from click.testing import CliRunner
    from tiletraffic.analysis.cli import main

    pytest.importorskip("tree_sitter_glsl_spec", reason="the GLSL front end's parser")
    out = CliRunner().invoke(main, ["run", str(EXAMPLES / "gemm_naive.toml"), "--set", "M=32",
                                    "--set", "N=32", "--set", "K=32"])
    assert out.exit_code == 0, out.output
    assert f"glsl:gemm_naive on {open_device().name}:" in out.output
    assert "result equals the reference" in out.output


def test_the_environment_can_turn_the_vulkan_runner_off(monkeypatch):
    from tiletraffic.gpu.runtime.shader_runner import vulkan_runner
    from tiletraffic.gpu.vulkan.runner import run_shader, unavailable_reason

    assert vulkan_runner() is run_shader
    monkeypatch.setenv("TILETRAFFIC_VULKAN", "off")
    assert vulkan_runner() is None
    assert unavailable_reason() == "TILETRAFFIC_VULKAN=off turns the Vulkan runner off"


def test_the_python_api_runs_a_glsl_shader_through_vulkan():
    import tiletraffic as tt

    sch, ref = _glsl_schedule("gemm_tiled", M=20, N=20, K=20)
    result = tt.run(sch, reference=ref, seed=3)
    assert result.run.device_name == open_device().name and result.check.ok
