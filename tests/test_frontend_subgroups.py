"""What hosts of tensor and imaging libraries hand the OpenCL C front end: sub-groups (the
device model's sub-group size, 32), char/void pointers that reach float buffers by byte
offsets, ``int2``/``uint2`` arguments and a program of several files. The simulator's values
equal numpy's, its counts equal Oclgrind's on the code that runs (the kernel rendered, its
shuffles through local memory, where it uses sub-groups; the user's source otherwise), and
the kernel run on PoCL equals numpy."""
from __future__ import annotations

import numpy as np
import pytest

import tiletraffic as tt
from tiletraffic.frontend.opencl.clang_ast import FrontendError
from tiletraffic.frontend.opencl.subgroups import SUB_GROUP_SIZE
from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.visitor import walk

SUB_GROUPS = """
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
__kernel void k(__global const float *A, __global float *sums, __global float *peaks,
                __global float *ids, int n) {
    const int row = get_group_id(0);
    const uint lid = get_sub_group_local_id(), sg = get_sub_group_id();
    __local float partial[8];
    float s = 0.0f, m = -INFINITY;
    for (int i = get_local_id(0); i < n; i += get_local_size(0)) {
        s += A[row * n + i];
        m = fmax(m, A[row * n + i]);
    }
    s = sub_group_reduce_add(s);
    m = sub_group_reduce_max(m);
    if (lid == 0) partial[sg] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_local_id(0) == 0) {
        float total = 0.0f;
        for (uint j = 0; j < get_num_sub_groups(); j++) total += partial[j];
        sums[row] = total;
    }
    float first = sub_group_broadcast(m, 0);
    float next = sub_group_shuffle_xor(A[row * n + get_local_id(0)], 1);
    if (get_local_id(0) == get_local_size(0) - 1) peaks[row] = first;
    ids[row * 64 + get_local_id(0)] = next + 1000.0f * get_sub_group_size() + 100.0f * sg
        + lid;
}
"""
ROWS, N = 3, 80


def _sub_group_schedule():
    args = {"A": {"shape": [ROWS, N], "access": "in"}, "sums": {"shape": [ROWS], "access": "out"},
            "peaks": {"shape": [ROWS], "access": "out"},
            "ids": {"shape": [ROWS, 64], "access": "out"}, "n": N}
    return tt.from_opencl(SUB_GROUPS, "k", [ROWS * 64], [64], args)


def _sub_group_reference(x):
    a = x["A"]
    lanes = np.arange(64)
    ids = a[:, lanes ^ 1] + 1000.0 * SUB_GROUP_SIZE + 100.0 * (lanes // SUB_GROUP_SIZE) \
        + lanes % SUB_GROUP_SIZE
    # the last work-item is in sub-group 1 (work-items 32..63, which read columns 32..63):
    # its lane 0 holds that sub-group's maximum
    return {"sums": a.sum(axis=1), "peaks": a[:, 32:64].max(axis=1), "ids": ids}


def test_sub_group_reductions_and_shuffles_compute_what_numpy_does():
    sch = _sub_group_schedule()
    assert sch.extra["opencl"]["sub_group_size"] == SUB_GROUP_SIZE == 32
    shuffles = [n for s in sch.body for n in walk(s) if isinstance(n, S.Shuffle)]
    # a butterfly of log2(32) xor shuffles per reduction, then the broadcast and the xor
    assert len(shuffles) == 2 * 5 + 2
    assert {s.width for s in shuffles} == {32}
    rng = np.random.default_rng(4)
    inputs = {"A": rng.standard_normal((ROWS, N)).astype(np.float32)}
    result = tt.simulate(sch, inputs)
    want = _sub_group_reference({"A": inputs["A"].astype(np.float64)})
    for name, value in want.items():
        np.testing.assert_allclose(result.outputs[name], value, rtol=1e-5, atol=1e-5)


def test_a_sub_group_kernel_runs_as_rendered_and_counts_equal_oclgrinds(pocl):
    from tiletraffic.gpu.codegen.generate import generate
    from tiletraffic.gpu.oclgrind.crosscheck import compare_counts
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available
    sch = _sub_group_schedule()
    source = generate(sch).source                         # platforms without sub-groups
    assert "sub_group_reduce" not in source and "get_sub_group" not in source
    if oclgrind_available():
        comparison = compare_counts(sch)
        assert comparison.equal, comparison.to_dict()
    result = tt.run(sch, pocl, repeat=10, warmup=1, reference=_sub_group_reference, seed=5)
    assert result.check.ok


def test_a_work_group_below_the_sub_group_size_is_one_sub_group():
    src = """
    __kernel void k(__global const float *A, __global float *C) {
        C[get_global_id(0)] = sub_group_reduce_add(A[get_global_id(0)])
                              + 100.0f * get_sub_group_size() + 1000.0f * get_num_sub_groups();
    }"""
    sch = tt.from_opencl(src, "k", [32], [16], {"A": {"shape": [32], "access": "in"},
                                               "C": {"shape": [32], "access": "out"}})
    a = np.arange(32, dtype=np.float32)
    out = tt.simulate(sch, {"A": a}).outputs["C"]
    sums = np.repeat([a[:16].sum(), a[16:].sum()], 16)
    np.testing.assert_array_equal(out, sums + 1600.0 + 1000.0)


@pytest.mark.parametrize("source, local, words", [
    ("__kernel void k(__global const float *A, __global float *C) {\n"
     "    C[get_global_id(0)] = sub_group_reduce_add(A[get_global_id(0)]);\n}\n", 48,
     "a work-group of 48 work-items, not a multiple of the device model's sub-group size 32"),
    ("__attribute__((intel_reqd_sub_group_size(16)))\n"
     "__kernel void k(__global const float *A, __global float *C) {\n"
     "    C[get_global_id(0)] = A[get_global_id(0)];\n}\n", 32,
     "kernel k requires sub-groups of 16 work-items (intel_reqd_sub_group_size), but the "
     "device model's sub-group size is 32"),
    ('__attribute__((qcom_reqd_sub_group_size("full")))\n'
     "__kernel void k(__global const float *A, __global float *C) {\n"
     "    C[get_global_id(0)] = A[get_global_id(0)];\n}\n", 32,
     "kernel k requires sub-groups of 128 work-items (qcom_reqd_sub_group_size)"),
    ("__kernel void k(__global const float *A, __global float *C) {\n"
     "    C[get_global_id(0)] = A[sub_group_broadcast((int)get_global_id(0), 0)];\n}\n", 32,
     "sub_group_broadcast of an integer: the simulator shuffles floats"),
])
def test_sub_groups_the_front_end_cannot_model_are_refused_in_one_line(source, local, words):
    with pytest.raises(FrontendError) as err:
        tt.from_opencl(source, "k", [96], [local], {"A": {"shape": [96], "access": "in"},
                                                   "C": {"shape": [96], "access": "out"}})
    assert words in str(err.value) and "\n" not in str(err.value)
    assert str(err.value).startswith("<source>:")


BYTE_OFFSETS = """
__kernel void k(__global char *src, ulong offset, __global void *dst, ulong offsetd,
                ulong row_bytes, int n) {
    src = src + offset;
    dst = (__global void *)((__global char *)dst + offsetd);
    const int row = get_group_id(0), i = get_local_id(0);
    __global float *x = (__global float *)(src + row * row_bytes);
    __global float4 *x4 = (__global float4 *)(src + row * row_bytes);
    __global float *y = (__global float *)((__global char *)dst + row * row_bytes);
    if (i < n / 4)
        y[i] = x4[i].s0 + x4[i].s3 + x[4 * i + 1] * 2.0f;
}
"""


def _byte_offset_schedule(offset_bytes=16, **extra):
    args = {"src": {"shape": [4, 20], "access": "in"}, "offset": offset_bytes,
            "dst": {"shape": [4, 20], "access": "inout"}, "offsetd": 8,
            "row_bytes": 16 * 4, "n": 16, **extra}
    return tt.from_opencl(BYTE_OFFSETS, "k", [4 * 8], [8], args)


def _byte_offset_reference(x):
    src = x["src"].reshape(-1)[4:]           # 16 bytes in: 4 floats
    out = x["dst"].copy().reshape(-1)
    for row in range(4):
        x4 = src[row * 16: row * 16 + 16]
        for i in range(4):
            out[2 + row * 16 + i] = x4[4 * i] + x4[4 * i + 3] + x4[4 * i + 1] * 2.0
    return {"dst": out.reshape(4, 20)}


def test_char_and_void_pointers_reach_floats_by_byte_offsets(pocl):
    from tiletraffic.gpu.codegen.generate import generate
    from tiletraffic.gpu.oclgrind.crosscheck import compare_counts
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available
    sch = _byte_offset_schedule()
    assert generate(sch).source == BYTE_OFFSETS          # the user's source runs
    rng = np.random.default_rng(2)
    inputs = {a.name: rng.standard_normal((4, 20)).astype(np.float32) for a in sch.arrays}
    result = tt.simulate(sch, inputs)
    want = _byte_offset_reference({k: v.astype(np.float64) for k, v in inputs.items()})
    np.testing.assert_allclose(result.outputs["dst"], want["dst"], rtol=1e-6, atol=1e-6)
    if oclgrind_available():
        comparison = compare_counts(sch)
        assert comparison.equal, comparison.to_dict()
    run = tt.run(sch, pocl, repeat=10, warmup=1, reference=_byte_offset_reference, seed=5)
    assert run.check.ok


def test_a_byte_offset_not_a_multiple_of_a_float_is_refused():
    with pytest.raises(FrontendError) as err:
        _byte_offset_schedule(offset_bytes=6)
    assert "cannot show its byte offset is a multiple of 4" in str(err.value)


INT2_ARGUMENTS = """
__kernel void k(__global float *dst, __global const float *src, int width, int2 offset,
                uint2 shape) {
    const int x = get_global_id(0), y = get_global_id(1);
    if (x < shape.x && y < shape.s1)
        dst[(offset.y + y) * width + offset.x + x] = 2.0f * src[y * width + x];
}
"""


def _int2_reference(x):
    dst = x["dst"].copy()
    dst[3:3 + 5, 2:2 + 7] = 2.0 * x["src"][:5, :7]
    return {"dst": dst}


def test_int2_and_uint2_arguments_are_given_as_lists(pocl):
    from tiletraffic.gpu.oclgrind.crosscheck import compare_counts
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available
    args = {"dst": {"shape": [10, 12], "access": "inout"},
            "src": {"shape": [10, 12], "access": "in"}, "width": 12, "offset": [2, 3],
            "shape": [7, 5]}
    sch = tt.from_opencl(INT2_ARGUMENTS, "k", [8, 8], [8, 4], args)
    assert dict(sch.extra["opencl"]["args"])["offset"] == "int2"
    assert dict(sch.extra["opencl"]["args"])["shape"] == "uint2"
    rng = np.random.default_rng(3)
    inputs = {a.name: rng.standard_normal((10, 12)).astype(np.float32) for a in sch.arrays}
    result = tt.simulate(sch, inputs)
    np.testing.assert_array_equal(result.outputs["dst"], _int2_reference(inputs)["dst"])
    assert result.counts.global_store_elems == 35
    if oclgrind_available():
        comparison = compare_counts(sch)
        assert comparison.equal, comparison.to_dict()
    assert tt.run(sch, pocl, repeat=10, warmup=1, reference=_int2_reference, seed=5).check.ok


@pytest.mark.parametrize("value, words", [
    (3, "argument offset is an int2 in the source; give it a list of 2 integers, not 3"),
    ([1, 2, 3], "give it a list of 2 integers, not [1, 2, 3]"),
    ([1, 2 ** 31], "2147483648 does not fit the int2's components"),
])
def test_an_int2_argument_of_another_value_is_refused(value, words):
    args = {"dst": {"shape": [10, 12], "access": "inout"},
            "src": {"shape": [10, 12], "access": "in"}, "width": 12, "offset": value,
            "shape": [7, 5]}
    with pytest.raises(FrontendError) as err:
        tt.from_opencl(INT2_ARGUMENTS, "k", [8, 8], [8, 4], args)
    assert words in str(err.value)


def test_a_launch_file_builds_a_list_of_sources_as_one_program(tmp_path):
    from tiletraffic.frontend import launch_file
    (tmp_path / "types.cl").write_text("typedef struct pair { float a, b; } pair;\n"
                                       "#define SCALE 3.0f\n")
    (tmp_path / "k.cl").write_text(
        "float scaled(pair p) { return SCALE * p.a; }\n"
        "__kernel void k(__global const float *A, __global float *C) {\n"
        "    const int i = get_global_id(0);\n"
        "    C[i] = SCALE * A[i] + 1.0f;\n}\n")
    (tmp_path / "k.toml").write_text(
        'source = ["types.cl", "k.cl"]\nkernel = "k"\n[launch]\nglobal_size = [16]\n'
        'local_size = [16]\n[args]\nA = { shape = [16], access = "in" }\n'
        'C = { shape = [16], access = "out" }\n')
    sch = launch_file.load(tmp_path / "k.toml")
    a = np.arange(16, dtype=np.float32)
    np.testing.assert_array_equal(tt.simulate(sch, {"A": a}).outputs["C"], 3.0 * a + 1.0)
    (tmp_path / "alone.toml").write_text(
        (tmp_path / "k.toml").read_text().replace('["types.cl", "k.cl"]', '"k.cl"'))
    with pytest.raises(FrontendError) as err:      # k.cl alone lacks the types
        launch_file.load(tmp_path / "alone.toml")
    assert "k.cl:1:" in str(err.value)
    (tmp_path / "bad.toml").write_text(
        (tmp_path / "k.toml").read_text().replace('["types.cl", "k.cl"]', '["types.cl", 3]'))
    with pytest.raises(launch_file.LaunchFileError, match="a list of source files"):
        launch_file.load(tmp_path / "bad.toml")


POINTER_CHOICES = """
__kernel void k(__global char *src0, __global char *src1, __global char *src2,
                __global float *dst, int n) {
    const int i = get_global_id(0);
    __global float *x = (__global float *)src0;
    __global float *mask = src1 != src0 ? (__global float *)src1 : 0;
    __global float *sink = src2 == src0 ? 0 : (__global float *)src2;
    dst[i] = x[i] + (mask ? mask[i] : 0.0f) + (sink ? sink[0] : 100.0f);
}
"""


def test_a_pointer_chosen_by_a_test_of_distinct_buffers(pocl):
    from tiletraffic.gpu.oclgrind.crosscheck import compare_counts
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available
    args = {"src0": {"shape": [16], "access": "in"}, "src1": {"shape": [16], "access": "in"},
            "src2": {"shape": [1], "access": "in"}, "dst": {"shape": [16], "access": "out"},
            "n": 16}
    sch = tt.from_opencl(POINTER_CHOICES, "k", [16], [16], args)

    def reference(x):
        return {"dst": x["src0"] + x["src1"] + x["src2"][0]}
    rng = np.random.default_rng(1)
    inputs = {a.name: rng.standard_normal(p).astype(np.float32)
              for a, p in zip(sch.arrays[:3], (16, 16, 1))}
    result = tt.simulate(sch, inputs)
    np.testing.assert_allclose(result.outputs["dst"], reference(inputs)["dst"], rtol=1e-6)
    assert result.counts.global_load_elems == 16 * 3
    if oclgrind_available():
        comparison = compare_counts(sch)
        assert comparison.equal, comparison.to_dict()
    assert tt.run(sch, pocl, repeat=10, warmup=1, reference=reference, seed=5).check.ok


def test_mad_of_float4_values_is_component_by_component():
    src = """
    __kernel void k(__global const float4 *x, __global const float4 *w, __global float4 *y,
                    float scale) {
        const int i = get_global_id(0);
        const float4 t = mad(x[i], (float4)scale, (float4)(1.0f, 2.0f, 3.0f, 4.0f));
        y[i] = fma(t, w[i], x[i]);
    }"""
    args = {"x": {"shape": [8, 4], "access": "in"}, "w": {"shape": [8, 4], "access": "in"},
            "y": {"shape": [8, 4], "access": "out"}, "scale": 0.5}
    sch = tt.from_opencl(src, "k", [8], [8], args)
    rng = np.random.default_rng(6)
    x, w = (rng.standard_normal((8, 4)).astype(np.float32) for _ in range(2))
    result = tt.simulate(sch, {"x": x, "w": w})
    t = x.astype(np.float64) * 0.5 + np.array([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(result.outputs["y"], t * w + x, rtol=1e-5, atol=1e-6)
    assert result.counts.flop == 8 * 4 * 4     # two multiplies and two adds a component


def test_from_opencl_builds_a_list_of_files_as_one_program(tmp_path):
    (tmp_path / "defs.cl").write_text("#define TWICE(x) (2.0f * (x))\n")
    (tmp_path / "k.cl").write_text(
        "__kernel void k(__global const float *A, __global float *C) {\n"
        "    C[get_global_id(0)] = TWICE(A[get_global_id(0)]);\n}\n")
    args = {"A": {"shape": [8], "access": "in"}, "C": {"shape": [8], "access": "out"}}
    sch = tt.from_opencl([tmp_path / "defs.cl", tmp_path / "k.cl"], "k", [8], [8], args)
    a = np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(tt.simulate(sch, {"A": a}).outputs["C"], 2.0 * a)
    with pytest.raises(FrontendError, match="k.cl:2:"):
        tt.from_opencl([tmp_path / "k.cl"], "k", [8], [8], args)


def test_a_sub_group_operation_part_of_a_work_group_skips_is_simulated_not_launched(pocl):
    from tiletraffic.gpu.devices.device import TiletrafficGpuError
    src = """
    __kernel void k(__global const float *A, __global float *C) {
        const int i = get_global_id(0);
        float s = A[i];
        if (get_sub_group_id() == 0)
            s = sub_group_reduce_add(s);
        C[i] = s;
    }"""
    sch = tt.from_opencl(src, "k", [64], [64], {"A": {"shape": [64], "access": "in"},
                                               "C": {"shape": [64], "access": "out"}})
    a = np.arange(64, dtype=np.float32)
    out = tt.simulate(sch, {"A": a}).outputs["C"]
    np.testing.assert_array_equal(out, np.concatenate([np.full(32, a[:32].sum()), a[32:]]))
    with pytest.raises(TiletrafficGpuError, match="skips a sub-group operation"):
        tt.run(sch, pocl, repeat=10, warmup=1, seed=5)


@pytest.mark.parametrize("step, floats", [("8", 2), ("n", 1), ("2", None)])
def test_a_char_pointer_moved_in_a_loop_stays_a_multiple_of_a_float(step, floats):
    src = f"""
    __kernel void k(__global char *A, __global float *C, int n) {{
        __global char *p = A;
        float s = 0.0f;
        for (int j = 0; j < 4; j++) {{ s += *(__global float *)p; p += {step}; }}
        C[get_global_id(0)] = s;
    }}"""
    args = {"A": {"shape": [64], "access": "in"}, "C": {"shape": [16], "access": "out"},
            "n": 4}
    if floats is None:
        with pytest.raises(FrontendError, match="moved by a byte count the front end cannot"):
            tt.from_opencl(src, "k", [16], [16], args)
        return
    sch = tt.from_opencl(src, "k", [16], [16], args)
    a = np.arange(64, dtype=np.float32)
    out = tt.simulate(sch, {"A": a}).outputs["C"]
    np.testing.assert_array_equal(out, np.full(16, a[0:4 * floats:floats].sum()))
