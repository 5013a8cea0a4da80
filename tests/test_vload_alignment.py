"""``vload4``/``vstore4`` need their element's alignment only (OpenCL 1.2 §6.12.7); a
``float4`` pointer cast needs 16 bytes. A matrix-vector product over rows of 6 floats reads
``vload4(0, A + 6 * row)`` at byte offsets 24·row, half of them not multiples of 16: right
in OpenCL, so no hazard, the launch made and equal to numpy, and Oclgrind of the same
source agrees; the same read through a cast is still a misaligned access."""
from __future__ import annotations

import numpy as np
import pytest

import tiletraffic as tt
from tiletraffic.gpu.codegen.generate import generate

ROWS = 64

GEMV6 = """
__kernel void gemv6(__global const float *A, __global const float *x, __global float *y,
                    const int M) {
    const int row = get_global_id(0);
    if (row < M) {
        const float4 a = %s;
        const float2 b = vload2(2, A + row * 6);
        float4 out4 = (float4)(a.x * x[0], a.y * x[1], a.z * x[2], a.w * x[3]);
        y[row] = out4.x + out4.y + out4.z + out4.w + b.x * x[4] + b.y * x[5];
    }
}
"""
VLOAD = "vload4(0, A + row * 6)"
CAST = "*(__global const float4 *)(A + row * 6)"

ARGS = {"A": {"shape": (ROWS, 6), "access": "in"}, "x": {"shape": (6,), "access": "in"},
        "y": {"shape": (ROWS,), "access": "out"}, "M": ROWS}


def gemv6(read: str):
    return tt.from_opencl(GEMV6 % read, "gemv6", (ROWS,), (32,), ARGS)


def reference(inputs):
    return inputs["A"].astype(np.float64) @ inputs["x"].astype(np.float64)


def test_vload4_at_a_24_byte_offset_is_no_hazard_and_counts_its_elements():
    sch = gemv6(VLOAD)
    assert tt.check(sch) == []
    counts = tt.simulate(sch, compute_values=False).counts
    assert counts.global_load_elems == ROWS * (4 + 2) + ROWS * 6   # A's rows, x per row


def test_the_same_read_through_a_float4_cast_is_still_misaligned():
    hazards = tt.check(gemv6(CAST))
    kinds = {h.kind for h in hazards}
    assert kinds == {"misaligned-vector-access"}
    assert "byte offset 24, not a multiple of 16" in str(hazards[0])


def test_generated_code_keeps_vload_and_the_cast_as_written():
    assert "vload4(0, " in generate(gemv6(VLOAD)).source
    cast = generate(gemv6(CAST)).source
    assert "vload4(0, " not in cast and "float4 *)" in cast


def test_values_equal_numpy():
    sch = gemv6(VLOAD)
    rng = np.random.default_rng(1)
    inputs = {"A": rng.standard_normal((ROWS, 6)).astype(np.float32),
              "x": rng.standard_normal(6).astype(np.float32)}
    y = tt.simulate(sch, inputs).outputs["y"]
    np.testing.assert_allclose(y, reference(inputs), rtol=1e-5, atol=1e-5)


def test_run_on_pocl_launches_and_equals_numpy(pocl):
    result = tt.run(gemv6(VLOAD), pocl, repeat=10, warmup=1, reference=reference, seed=3)
    assert result.check.ok


def test_oclgrind_counts_of_the_same_source_equal_the_simulator():
    from tiletraffic.gpu.oclgrind.crosscheck import compare_counts
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available
    if not oclgrind_available():
        pytest.skip("no Oclgrind platform")
    comparison = compare_counts(gemv6(VLOAD))
    assert comparison.equal, comparison.to_dict()
    assert comparison.oclgrind["global_load_elems"] > 0


STRIDE8 = GEMV6.replace("row * 6", "row * 8")
ARGS8 = {**ARGS, "A": {"shape": (ROWS, 8), "access": "in"}}


def test_a_global_vload4_is_counted_as_four_scalar_loads_as_the_compiler_emits_it():
    """NVIDIA's OpenCL compiler emits four ld.global.f32 for vload4 where it cannot prove
    16-byte alignment, and one ld.global.v4.f32 for a float4 cast (an H100's PTX,
    experiments/h100/vload_alignment): at rows of 8 floats, both aligned, the vload4 kernel
    reads the same elements of A in four times the cast's requests (and the vload2 in two
    scalar requests beside the cast kernel's one)."""
    vload = tt.from_opencl(STRIDE8 % VLOAD.replace("6", "8"), "gemv6", (ROWS,), (32,), ARGS8)
    cast = tt.from_opencl(STRIDE8 % CAST.replace("6", "8"), "gemv6", (ROWS,), (32,), ARGS8)
    assert tt.check(cast) == [] and tt.check(vload) == []
    mv, mc = (tt.model(s, "nvidia-h200").memory for s in (vload, cast))
    cv, cc = (tt.simulate(s, compute_values=False).counts for s in (vload, cast))
    assert cv.global_load_elems == cc.global_load_elems
    sub_groups = ROWS // 32
    x_requests = 6 * sub_groups                      # x[0..5], scalar in both kernels
    assert mv.global_load_requests == (4 + 2) * sub_groups + x_requests
    assert mc.global_load_requests == (1 + 2) * sub_groups + x_requests
