"""The OpenCL C front end's flat indices, pointers and scalar arguments: a flat index read
as a buffer's row and column, pointer arguments tested against NULL, 64-bit scalar
arguments, a pointer pointed at another array, a float4 view of a private array; each
simulated with values against numpy and, where Oclgrind is installed, counted as it
counts."""
from __future__ import annotations

import numpy as np
import pytest

import tiletraffic as tt
from tiletraffic.frontend.opencl.translate import FrontendError
from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.visitor import walk


def run(source, global_size, local_size, args, build_options="", seed=0):
    sch = tt.from_opencl(source, "k", global_size, local_size, args, build_options)
    rng = np.random.default_rng(seed)
    p = sch.param_values
    inputs = {a.name: rng.standard_normal([p[d] for d in a.shape]).astype(np.float32)
              for a in sch.arrays if a.is_input}
    return sch, inputs, tt.simulate(sch, inputs)


def accesses(sch, array):
    return [n for s in sch.body for n in walk(s)
            if isinstance(n, (S.Load, S.Store)) and n.array.name == array]


def same_counts_as_oclgrind(sch):
    from tiletraffic.gpu.oclgrind.crosscheck import compare_counts
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available
    if oclgrind_available():
        comparison = compare_counts(sch)
        assert comparison.equal, comparison.to_dict()


def test_a_flat_index_of_a_matrix_takes_every_multiple_of_its_row_length_into_the_row():
    """``b * T * C + t * C + i`` over a ``(B * T, C)`` buffer is ``(b * T + t, i)``, and a row
    offset held in an integer (``int r = ldc * g * 4 + m; C[r + i * ldc]``) is read through
    its value: ``(g * 4 + i, m)``; a correct kernel is not counted out of bounds."""
    src = """
    #define TILE 4
    __kernel void k(__global const float *inp, __global float *out, __global float *D,
                    int T, int C, int ldc) {
        int t = get_global_id(0), b = get_global_id(1);
        for (int i = 0; i < C; i++)
            out[b * T * C + t * C + i] = inp[b * T * C + t * C + i] * 2.0f;
        int m = get_local_id(0), g = get_group_id(1);
        int r = ldc * g * TILE + m;
        for (int i = 0; i < TILE; i++)
            D[r + i * ldc] = inp[r + i * ldc] + 1.0f;
    }"""
    args = {"T": 4, "C": 4, "ldc": 4, "inp": {"shape": [12, 4], "access": "in"},
            "out": {"shape": [12, 4], "access": "out"}, "D": {"shape": [12, 4], "access": "out"}}
    sch, inputs, result = run(src, [4, 3], [4, 1], args)
    assert tt.check(sch, seed=1) == []
    x = inputs["inp"].astype(np.float64)
    np.testing.assert_allclose(result.outputs["out"], 2 * x, rtol=1e-6)
    np.testing.assert_allclose(result.outputs["D"], x + 1, rtol=1e-6)
    for access in accesses(sch, "out") + accesses(sch, "D"):
        assert "%" not in repr(access.index) and "/" not in repr(access.index)
    assert result.counts.global_load_elems == 2 * 48
    same_counts_as_oclgrind(sch)


def test_a_row_offset_that_reads_an_assigned_integer_is_not_read_through():
    """An integer bound from one the kernel assigns again (``int c = k * n; k = 0;``) keeps
    the value it had where it was bound: the flat index falls back to ``(flat / n, flat %
    n)``, never to the row ``k`` of later."""
    src = """
    __kernel void k(__global const float *A, __global float *B, int n) {
        int k = 0;
        k = get_global_id(0);
        int c = k * n;
        k = 0;
        for (int j = 0; j < n; j++)
            B[c + k + j] = A[c + j];
    }"""
    sch, inputs, result = run(src, [4], [4], {"n": 3, "A": {"shape": [4, 3], "access": "in"},
                                             "B": {"shape": [4, 3], "access": "out"}})
    np.testing.assert_array_equal(result.outputs["B"], inputs["A"])
    assert tt.check(sch, seed=1) == []


ROW_POINTER_SRC = """
__kernel void k(__global float *vals, __global const float *mask, int n) {
    int row = get_group_id(0) * 2 + get_local_id(0) / 8, lane = get_local_id(0) % 8;
    vals += row * n;
    int off = 0;
    off = (row / 4) * n;
    for (int i = 0; i < n / 8; i++) {
        int id = i * 8 + lane;
        float m = mask[off + id];
        vals[id] = (id < n ? vals[LANE] : 0.0f) * 2.0f + m;
    }
}"""
ROW_POINTER_ARGS = {"n": 8, "vals": {"shape": [2, 4, 8], "access": "inout"},
                    "mask": {"shape": [2, 8], "access": "in"}}


def test_a_pointer_moved_to_its_work_groups_row_then_indexed_in_the_row_is_clean():
    """``vals += row * n; vals[i * 8 + lane]`` over a ``(2, 4, n)`` buffer, and ``mask[off +
    i * 8 + lane]`` with ``off`` a C integer assigned again: the flat element (offset and
    index together) is what the declared shape is indexed by, so a row the offset reaches
    past the first is no out-of-bounds access; the values are numpy's, the counts
    Oclgrind's."""
    sch, inputs, result = run(ROW_POINTER_SRC.replace("LANE", "id"), [64], [16],
                              ROW_POINTER_ARGS)
    assert tt.check(sch, seed=1) == []
    x, mask = inputs["vals"].astype(np.float64), inputs["mask"].astype(np.float64)
    np.testing.assert_allclose(result.outputs["vals"], 2 * x + mask[:, None, :], rtol=1e-6)
    assert result.counts.global_load_elems == 2 * 64
    same_counts_as_oclgrind(sch)


def test_a_moved_pointer_that_leaves_its_buffer_is_reported_with_declared_indices():
    """``vals[id + 1]`` through the moved pointer crosses into the next row in every row
    (no fault in C: the buffer is flat) and leaves the buffer only at the last element of
    the last row, the one access reported, with its indices as the array is declared."""
    sch = tt.from_opencl(ROW_POINTER_SRC.replace("LANE", "id + 1"), "k", [64], [16],
                         ROW_POINTER_ARGS)
    hazards = [h for h in tt.check(sch, seed=1) if h.kind == "out-of-bounds"]
    assert len(hazards) == 1 and hazards[0].count == 1
    assert "global load of vals[2, 0, 0]" in hazards[0].detail
    assert "index 2 outside dimension 0 of extent 2 (shape 2 x 4 x 8)" in hazards[0].detail
    assert "work-item 15 of work-group (3,)" in hazards[0].detail


def test_long_and_ulong_scalar_arguments():
    """A ``long`` or ``ulong`` argument (``size_t`` too, where a kernel language allows it
    as an argument) is an integer scalar like an ``int``, a 64-bit argument at launch; a
    negative value for an unsigned one is refused by name."""
    src = """
    __kernel void k(__global const float *A, __global float *B, const ulong n, long off,
                    ulong scale) {
        size_t i = get_global_id(0);
        if (i < n)
            B[i] = A[i + off] * (float)scale;
    }"""
    args = {"n": 10, "off": 2, "scale": 3, "A": {"shape": [16], "access": "in"},
            "B": {"shape": [10], "access": "out"}}
    sch, inputs, result = run(src, [16], [8], args)
    np.testing.assert_allclose(result.outputs["B"], 3 * inputs["A"][2:12], rtol=1e-6)
    assert dict(sch.extra["opencl"]["args"])["n"] == "long"
    assert result.counts.global_load_elems == 10
    same_counts_as_oclgrind(sch)
    with pytest.raises(FrontendError, match="argument n = -1 is negative, but a ulong in the source"):
        tt.from_opencl(src, "k", [16], [8], dict(args, n=-1))


NULL_SRC = """
__kernel void k(__global const float *A, __global const float *bias, __global float *B,
                int n) {
    int i = get_global_id(0);
    float val = (bias != NULL) ? bias[i] : 0.0f;
    float w = bias ? bias[i] : 1.0f;
    float inside = (i < n) ? A[i] : 0.0f;
    if (bias != 0 && i < n) val += 1.0f;
    if (!bias) { w += 2.0f; } else { w += bias[0]; }
    B[i] = inside * 2.0f + val + w;
}"""


@pytest.mark.parametrize("given", [False, True])
def test_a_pointer_argument_tested_against_null(given):
    """A buffer given as null makes ``bias != NULL``, ``bias ? ..``, ``!bias`` constants, and
    only the branch taken is read (no access through the null pointer); given, the tests
    are true. ``float v = c ? A[i] : 0.0f`` leaves no private float read before written."""
    bias = {"shape": [16], "access": "in"} if given else {"null": True}
    args = {"n": 10, "A": {"shape": [16], "access": "in"}, "bias": bias,
            "B": {"shape": [16], "access": "out"}}
    sch, inputs, result = run(NULL_SRC, [16], [8], args)
    assert tt.check(sch, seed=1) == []
    a, i = inputs["A"].astype(np.float64), np.arange(16)
    inside = np.where(i < 10, a, 0)
    if given:
        b = inputs["bias"].astype(np.float64)
        expected = 2 * inside + b + (i < 10) + b + b[0]
        loads = 10 + 3 * 16
    else:
        expected = 2 * inside + 0 + 3
        loads = 10
        assert dict(sch.extra["opencl"]["args"])["bias"] == "null"
    np.testing.assert_allclose(result.outputs["B"], expected, rtol=1e-5, atol=1e-5)
    assert result.counts.global_load_elems == loads
    same_counts_as_oclgrind(sch)


def test_an_access_through_a_null_pointer_is_refused_by_name():
    src = """
    __kernel void k(__global const float *bias, __global float *B) {
        int i = get_global_id(0);
        B[i] = (i < 4 || bias) ? 1.0f : bias[i];
    }"""
    args = {"bias": None, "B": {"shape": [8], "access": "out"}}
    with pytest.raises(FrontendError, match=r"4:.*buffer bias is given as null"):
        tt.from_opencl(src, "k", [8], [8], args)


def test_a_launch_file_passes_a_pointer_as_null(tmp_path):
    (tmp_path / "k.cl").write_text(NULL_SRC)
    toml = """source = "k.cl"
kernel = "k"
[launch]
global_size = [16]
local_size = [8]
[args]
n = 10
A = { shape = [16], access = "in" }
bias = BIAS
B = { shape = [16], access = "out" }
"""
    (tmp_path / "k.toml").write_text(toml.replace("BIAS", "{ null = true }"))
    sch = tt.build(str(tmp_path / "k.toml"))
    assert dict(sch.extra["opencl"]["args"])["bias"] == "null"
    assert tt.simulate(sch, compute_values=False).counts.global_load_elems == 10
    (tmp_path / "k.toml").write_text(toml.replace("BIAS", '{ null = true, access = "in" }'))
    with pytest.raises(ValueError, match="args.bias.null: stands alone"):
        tt.build(str(tmp_path / "k.toml"))


def test_a_pointer_pointed_at_another_array_in_sequence():
    """``x = inp + off; ... x = out + off2;`` in the order the code runs: each access through
    ``x`` reaches the array it points at there, in a loop's body too where every iteration
    starts at the same array."""
    src = """
    __kernel void k(__global const float *inp, __global float *out, int n) {
        int i = get_global_id(0);
        __global const float *x = inp + i * n;
        float s = x[0] + x[1];
        for (int r = 0; r < 2; r++) {
            x = out + i * 2;
            s += 1.0f;
            x = inp + i * n + r;
            s += x[0];
        }
        __global float *y = out + i * 2;
        y[0] = s;
        y = out + i * 2 + 1;
        *y = 2.0f * s;
    }"""
    args = {"n": 4, "inp": {"shape": [8, 4], "access": "in"},
            "out": {"shape": [8, 2], "access": "out"}}
    sch, inputs, result = run(src, [8], [8], args)
    a = inputs["inp"].astype(np.float64)
    s = a[:, 0] + a[:, 1] + 2 + a[:, 0] + a[:, 1]
    np.testing.assert_allclose(result.outputs["out"][:, 0], s, rtol=1e-5)
    np.testing.assert_allclose(result.outputs["out"][:, 1], 2 * s, rtol=1e-5)
    assert result.counts.global_load_elems == 4 * 8
    same_counts_as_oclgrind(sch)


@pytest.mark.parametrize("body, words", [
    ("if (i < 4) x = out + i; else x = A + i;",
     "pointer x points at out after one branch and at A after the other"),
    ("if (i < 4) x = out + i;",
     "pointer x points at out after one branch and at A after the other"),
    ("for (int r = 0; r < 2; r++) { x[r] = 1.0f; x = out + i; }",
     "pointer x points at A when an iteration of this loop starts and at out when it ends"),
    ("for (int r = 0; r < i; r++, x = out + i) { *x = 1.0f; }",
     "pointer x points at A when an iteration of this loop starts and at out when it ends"),
    ("for (int r = 0; r < 2; r++) { x = out + i; if (r == i) break; x = A + i; }",
     "a pointer pointed at another array in a loop that break or continue may leave"),
])
def test_a_pointer_whose_array_depends_on_a_branch_or_iteration_is_refused(body, words):
    src = f"""
    __kernel void k(__global float *A, __global float *out) {{
        int i = get_global_id(0);
        __global float *x = A + i;
        {body}
        *x = 3.0f;
    }}"""
    args = {"A": {"shape": [8], "access": "inout"}, "out": {"shape": [8], "access": "out"}}
    with pytest.raises(FrontendError, match=words):
        tt.from_opencl(src, "k", [8], [8], args)


def test_a_float4_view_of_a_private_array():
    """``*((float4 *)&reg[4]) = vload4(...)`` assigns four elements of a private float array
    and ``*(float4 *)&reg[0]`` reads four: one vector load of the buffer, no private memory
    traffic."""
    src = """
    __kernel void k(__global const float *A, __global float *B) {
        int i = get_global_id(0);
        float reg[8];
        *((float4 *)&reg[0]) = vload4(2 * i, A);
        *((float4 *)&reg[4]) = vload4(2 * i + 1, A);
        float4 lo = *((float4 *)&reg[0]);
        float4 hi = *((float4 *)reg + 1);
        vstore4(lo * 2.0f + hi, i, B);
    }"""
    args = {"A": {"shape": [64], "access": "in"}, "B": {"shape": [32], "access": "out"}}
    sch, inputs, result = run(src, [8], [8], args)
    a = inputs["A"].astype(np.float64).reshape(8, 2, 4)
    np.testing.assert_allclose(result.outputs["B"].reshape(8, 4), 2 * a[:, 0] + a[:, 1],
                               rtol=1e-5, atol=1e-6)
    assert result.counts.global_load_elems == 64 and result.counts.global_store_elems == 32
    assert tt.check(sch, seed=1) == []
    same_counts_as_oclgrind(sch)


@pytest.mark.parametrize("offset", ["2", "i"])
def test_a_float4_view_of_a_private_array_off_a_multiple_of_four_is_refused(offset):
    src = f"""
    __kernel void k(__global const float *A, __global float *B) {{
        int i = get_global_id(0);
        float reg[8];
        *((float4 *)&reg[{offset}]) = vload4(i, A);
        B[i] = reg[2];
    }}"""
    args = {"A": {"shape": [32], "access": "in"}, "B": {"shape": [8], "access": "out"}}
    with pytest.raises(FrontendError, match="float4 view of private array reg: its offset "
                                            "must be a constant multiple of 4"):
        tt.from_opencl(src, "k", [8], [8], args)


def test_a_null_pointer_and_64_bit_scalars_run_on_pocl_equal_to_numpy(pocl):
    """At launch a null pointer argument is passed as NULL and a ``ulong``/``long`` one as
    a 64-bit value."""
    src = """
    __kernel void k(__global const float *A, __global const float *bias, __global float *B,
                    const ulong n, long off) {
        size_t i = get_global_id(0);
        float b = bias ? bias[i] : 0.5f;
        if (i < n) B[i] = A[i + off] * 2.0f + b;
    }"""
    sch = tt.from_opencl(src, "k", [16], [8], {
        "A": {"shape": [16], "access": "in"}, "bias": None,
        "B": {"shape": [10], "access": "out"}, "n": 10, "off": 3})
    result = tt.run(sch, pocl, repeat=10, warmup=1, seed=2,
                    reference=lambda inputs: {"B": inputs["A"][3:13] * 2.0 + 0.5})
    assert result.check.ok


def test_a_helper_tests_a_null_pointer_it_is_passed():
    """A helper's pointer parameter bound to a null argument or to ``NULL`` itself tests as
    null; bound to a buffer, as given."""
    src = """
    float biased(__global const float *b, int i) { return (b != NULL) ? b[i] : 0.25f; }
    __kernel void k(__global const float *A, __global const float *bias, __global float *B) {
        int i = get_global_id(0);
        B[i] = biased(bias, i) + biased(NULL, i) + biased(A, i);
    }"""
    args = {"A": {"shape": [8], "access": "in"}, "bias": {"null": True},
            "B": {"shape": [8], "access": "out"}}
    sch, inputs, result = run(src, [8], [8], args)
    np.testing.assert_allclose(result.outputs["B"], inputs["A"] + 0.5, rtol=1e-6)
    assert result.counts.global_load_elems == 8


@pytest.mark.parametrize("test", ["while (p >= A + K / 2)", "if (p != A)"])
def test_a_pointer_comparison_is_refused_as_one_at_its_place(test):
    src = f"""
    __kernel void k(__global float *A, int K) {{
        __global float *p = A + K - 1;
        {test} {{ *p = 0.0f; p--; }}
    }}"""
    args = {"A": {"shape": [8], "access": "inout"}, "K": 8}
    with pytest.raises(FrontendError, match=r"4:\d+: .*comparison of pointers p and A") as e:
        tt.from_opencl(src, "k", [1], [1], args)
    assert "not a float" not in str(e.value)
