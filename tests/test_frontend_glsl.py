"""The GLSL compute front end (frontend/glsl/): what it reads (specialization constants,
local_size_*_id, #include, #define, [[unroll]], vec4 buffers, instance-named blocks,
uniform blocks, helpers reading buffers, gl_LocalInvocationIndex, gl_WorkGroupSize,
.length(), dot, fma, max, while loops, fences), counted as worked by hand and equal to
Oclgrind's counts of the generated OpenCL C; what it refuses, by name with the GLSL
file:line:column; the reference compiler's rejections; the launch file's errors; the
Python API."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import tiletraffic as tt
from tiletraffic.frontend import launch_file
from tiletraffic.frontend.glsl import syntax
from tiletraffic.frontend.glsl.syntax import GlslError
from tiletraffic.frontend.launch_file import LaunchFileError
from tiletraffic.frontend.opencl.clang_ast import FrontendError

needs_glslang = pytest.mark.skipif(syntax.validator() is None,
                                   reason="glslangValidator is not installed")

HEADER = "#version 450\n"

REDUCE = """\
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint TS = 4;
layout(local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer In { vec4 data[]; } src;
layout(std430, set = 0, binding = 1) writeonly buffer Out { float data[]; } dst;
layout(set = 0, binding = 2) uniform Params { uint n; float alpha; };
shared float partial[WG];

float load4(uint i) {
    vec4 v = src.data[i];
    return dot(v, vec4(1.0));
}

void main() {
    uint i = gl_GlobalInvocationID.x;
    uint lid = gl_LocalInvocationIndex;
    float acc = 0.0;
    [[unroll]] for (uint t = 0u; t < TS; ++t) {
        uint j = i * TS + t;
        if (j < n) {
            acc = fma(alpha, load4(j), acc);
        }
    }
    partial[lid] = twice(acc);
    memoryBarrierShared();
    barrier();
    uint k = gl_WorkGroupSize.x / 2u;
    while (k > 0u) {
        if (lid < k) {
            partial[lid] += partial[lid + k];
        }
        barrier();
        k /= 2u;
    }
    if (lid == 0u) {
        dst.data[gl_WorkGroupID.x] = max(partial[0], 0.0) + float(src.data.length());
    }
}
"""

COMMON = """\
#define SCALE 2
float twice(float v) { return v * float(SCALE); }
"""

REDUCE_TOML = """\
source = "reduce.comp"
[sizes]
G = 3
[launch]
workgroups = ["G"]
[specialization]
WG = 32
[push_constants]
n = "G * WG * TS - 5"
alpha = 0.5
[bindings]
src = { shape = ["G * WG * TS * 4"], access = "in" }
dst = { shape = ["G"], access = "out" }
"""


def write(tmp_path, shader: str, toml: str, name="reduce", files=None) -> str:
    (tmp_path / f"{name}.comp").write_text(shader)
    (tmp_path / f"{name}.toml").write_text(toml)
    for file, text in (files or {}).items():
        (tmp_path / file).write_text(text)
    return str(tmp_path / f"{name}.toml")


@pytest.fixture
def reduce_launch(tmp_path):
    return write(tmp_path, REDUCE, REDUCE_TOML, files={"common.glsl": COMMON})


def reduce_expected(groups, wg, ts, n, src):
    """The reduction's output, worked in numpy: per work-group the sum over its work-items
    of 2 * (sum of alpha * (sum of each vec4) over its TS elements below n), floored at 0,
    plus the vec4 count."""
    vec_sums = src.reshape(-1, 4).sum(axis=1)
    out = []
    for g in range(groups):
        total = 0.0
        for lid in range(wg):
            i = g * wg + lid
            total += 2 * sum(0.5 * vec_sums[i * ts + t] for t in range(ts) if i * ts + t < n)
        out.append(max(total, 0.0) + len(vec_sums))
    return np.array(out)


def test_features_count_as_worked_by_hand(reduce_launch):
    sch = tt.build(reduce_launch)
    assert (sch.local_size, sch.global_size) == ((32,), (96,))   # WG from the launch
    counts = tt.simulate(sch, compute_values=False).counts
    groups, wg, ts, n = 3, 32, 4, 3 * 32 * 4 - 5
    assert counts.global_load_elems == 4 * n           # one vec4 per element below n
    assert counts.global_store_elems == groups
    halvings = 5                                      # 16, 8, 4, 2, 1
    assert counts.barriers == groups * (1 + halvings)
    assert counts.local_store_elems == groups * (wg + (wg - 1))
    assert tt.check(sch, seed=1) == []


def test_features_compute_the_shaders_result(reduce_launch):
    sch = tt.build(reduce_launch)
    src = np.random.default_rng(4).standard_normal(3 * 32 * 4 * 4).astype(np.float32)
    result = tt.simulate(sch, {"src": src})
    expected = reduce_expected(3, 32, 4, 3 * 32 * 4 - 5, src.astype(np.float64))
    np.testing.assert_allclose(result.outputs["dst"], expected, rtol=1e-4)


def test_features_equal_oclgrind_on_the_translation(reduce_launch):
    from tiletraffic.gpu.oclgrind.crosscheck import compare_counts
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available
    if not oclgrind_available():
        pytest.skip("no Oclgrind platform")
    comparison = compare_counts(tt.build(reduce_launch))
    assert comparison.equal, comparison.to_dict()


def test_specialization_default_and_override(tmp_path):
    path = write(tmp_path, REDUCE, REDUCE_TOML.replace("[specialization]\nWG = 32\n", ""),
                 files={"common.glsl": COMMON})
    assert tt.build(path).local_size == (64,)
    bad = write(tmp_path, REDUCE, REDUCE_TOML.replace("WG = 32", "NOPE = 3"), name="bad",
                files={"common.glsl": COMMON})
    with pytest.raises(LaunchFileError, match=r"specialization: .*NOPE.*WG, TS"):
        tt.build(bad)


def test_the_tables_of_the_api_equal_the_launch_file(reduce_launch, tmp_path):
    from_toml = tt.build(reduce_launch)
    from_api = tt.from_glsl(tmp_path / "reduce.comp", ["G"],
                            {"src": {"shape": ("G * WG * TS * 4",), "access": "in"},
                             "dst": {"shape": ["G"], "access": "out"}},
                            {"n": "G * WG * TS - 5", "alpha": 0.5}, {"WG": 32},
                            sizes={"G": 3})
    a = tt.simulate(from_toml, compute_values=False).counts
    assert tt.simulate(from_api, compute_values=False).counts == a


MINIMAL = """\
#version 450
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x = 4) in;
layout(set = 0, binding = 0) buffer Data {{ float x[]; }};
{globals}
void main() {{
    uint i = gl_GlobalInvocationID.x;
{body}
}}
"""

MINIMAL_TOML = """\
source = "k.comp"
[launch]
workgroups = [2]
[bindings]
x = { shape = [8], access = "inout" }
"""


def minimal(tmp_path, body="", globals_=""):
    return write(tmp_path, MINIMAL.format(body=body, globals=globals_), MINIMAL_TOML, "k")


@pytest.mark.parametrize("globals_,body,where,what", [
    ("shared uint counter;", "    atomicAdd(counter, 1u);", "8:5",
     "atomicAdd: atomic operations"),
    ("", "    x[i] = subgroupAdd(x[i]);", "8:12", "subgroupAdd: sub-group operations"),
    ("", "    mat4 m;", "8:5", "the type mat4"),
    ("", "    x[i] = float(1.0lf);", "8:18", "the double literal 1.0lf"),
    ("float bump(inout float v) { v += 1.0; return v; }", "", "5:12",
     "the inout parameter inout float v of bump"),
    ("float scratch[4];", "", "5:1", "the global variable scratch"),
    ("", "    x[i] = float(gl_SubgroupSize);", "8:18", "the built-in gl_SubgroupSize"),
    ("", "    uvec3 g = gl_GlobalInvocationID + 1u;", "8:15", "gl_GlobalInvocationID is not"),
])
def test_refusals_name_the_construct_and_place(tmp_path, globals_, body, where, what):
    path = minimal(tmp_path, body, globals_)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", syntax.ValidatorMissingWarning)
        with pytest.raises((GlslError, LaunchFileError)) as err:
            try:
                tt.build(path)
            except GlslError as e:
                assert "rejects the shader" not in str(e), str(e)
                raise
    message = str(err.value)
    assert f"k.comp:{where}: " in message and what in message, message
    assert "\n" not in message


ABS = """\
#version 450
layout(local_size_x = 4) in;
layout(set = 0, binding = 0) readonly buffer In { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Out { float y[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    int d = abs(int(i) - 5);
    y[i] = abs(x[uint(d)]);
}
"""


def test_abs_of_a_float_and_of_an_int(tmp_path):
    toml = MINIMAL_TOML.replace('x = { shape = [8], access = "inout" }',
                                'x = { shape = [8], access = "in" }\n'
                                'y = { shape = [8], access = "out" }')
    sch = tt.build(write(tmp_path, ABS, toml, "k"))
    x = np.arange(8, dtype=np.float32) - 6
    out = tt.simulate(sch, {"x": x}).outputs["y"]
    np.testing.assert_array_equal(out, np.abs(x[np.abs(np.arange(8) - 5)]))


def test_the_opencl_front_ends_refusals_name_the_glsl_place(tmp_path):
    path = minimal(tmp_path, "    uint j = uint(x[i]);\n    x[j] = 1.0;")
    with pytest.raises(FrontendError, match=r"k\.comp:8:15: .*depends on the data"):
        tt.build(path)


@needs_glslang
def test_a_shader_glslang_rejects_is_refused_with_its_message(tmp_path):
    path = minimal(tmp_path, "    x[i] = undefined_name;")
    with pytest.raises(GlslError, match=r"k\.comp:8: glslangValidator rejects the shader: "
                                        r"'undefined_name' : undeclared identifier"):
        tt.build(path)


def test_without_glslang_a_one_line_note(tmp_path, monkeypatch):
    monkeypatch.setattr(syntax, "validator", lambda: None)
    with pytest.warns(syntax.ValidatorMissingWarning, match="glslangValidator is not "
                                                           "installed") as caught:
        tt.build(minimal(tmp_path, "    x[i] = 2.0 * x[i];"))
    assert all("\n" not in str(w.message) for w in caught)


@pytest.mark.parametrize("edit,field", [
    (lambda t: t.replace("x = { shape = [8], access = \"inout\" }", ""), "bindings"),
    (lambda t: t + "y = { shape = [8] }\n", "bindings.y"),
    (lambda t: t.replace("workgroups = [2]", "workgroups = [0]"), "launch.workgroups[0]"),
    (lambda t: t.replace("workgroups = [2]", "workgroups = 2"), "launch.workgroups"),
    (lambda t: t + "[push_constants]\nM = 3\n", "push_constants.M"),
    (lambda t: t + "[args]\nM = 3\n", "args"),
])
def test_launch_file_errors_name_the_field(tmp_path, edit, field):
    path = write(tmp_path, MINIMAL.format(body="    x[i] = 2.0 * x[i];", globals=""),
                 edit(MINIMAL_TOML), "k")
    with pytest.raises(LaunchFileError, match=rf"k\.toml: {re.escape(field)}: "):
        tt.build(path)


def test_a_missing_push_constant_is_named(tmp_path):
    shader = MINIMAL.format(body="    if (i < pc.n) { x[i] = 2.0 * x[i]; }",
                            globals="layout(push_constant) uniform P { uint n; } pc;")
    path = write(tmp_path, shader, MINIMAL_TOML, "k")
    with pytest.raises(LaunchFileError, match=r"push_constants: n \(uint\) is missing"):
        tt.build(path)
    given = write(tmp_path, shader, MINIMAL_TOML + "[push_constants]\nn = 5\n", "k")
    counts = tt.simulate(tt.build(given), compute_values=False).counts
    assert counts.global_load_elems == 5


def test_an_opencl_launch_file_is_unchanged_by_the_language_key(tmp_path):
    from pathlib import Path
    examples = Path(__file__).resolve().parent.parent / "examples" / "opencl"
    text = (examples / "mm_tiled.toml").read_text()
    assert launch_file.is_launch_spec("x.toml")
    for f in ("mm_tiled.cl", "references.py"):
        (tmp_path / f).write_text((examples / f).read_text())
    (tmp_path / "mm.toml").write_text('language = "opencl"\n' + text)
    assert tt.build(str(tmp_path / "mm.toml")).family == "opencl:mmul_tiled"


CONDITIONAL = """\
#version 450
#define USE_FMA 1
#define GID (gl_GlobalInvocationID.x)
#ifdef USE_FMA
#define MUL_ADD(a, b, c) fma(a, b, c)
#else
#define MUL_ADD(a, b, c) ((a) * (b) + (c) + 100.0)
#endif
layout(local_size_x = 4) in;
layout(set = 0, binding = 0) buffer Data { float x[]; };
void main() {
    uint i = GID;
#if USE_FMA && !defined(NOT_DEFINED) && UNDEFINED_IS_ZERO == 0
    x[i] = MUL_ADD(x[i], 2.0, 1.0);
#else
    x[i] = x[i] + x[i + 1u];
#endif
}
"""


def test_conditional_directives_take_the_branch_the_macros_choose(tmp_path):
    sch = tt.build(write(tmp_path, CONDITIONAL, MINIMAL_TOML, "k"))
    x = np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(tt.simulate(sch, {"x": x}).outputs["x"], 2 * x + 1)
    assert tt.simulate(sch, compute_values=False).counts.global_load_elems == 8


def test_tuning_sets_specialization_constants(reduce_launch, tmp_path):
    doc = tt.tune_kernel(reduce_launch, {"WG": [16, 32], "TS": [2, 4]}, top=0,
                         out=tmp_path / "tuned.json")
    ranked = {tuple(sorted(p["params"].items())) for p in doc["predictions"]}
    assert ranked == {(("TS", ts), ("WG", wg)) for ts in (2, 4) for wg in (16, 32)}
    with pytest.raises(Exception, match=r"--param NOPE: .*not a specialization constant"):
        tt.tune_kernel(reduce_launch, {"NOPE": [1, 2]}, top=0, out=tmp_path / "t2.json")


PADDED = """\
#version 450
layout(local_size_x = 8, local_size_y = 8, local_size_z = 1) in;
layout(std430, set = 0, binding = 0) readonly buffer ABuf { float a[]; };
layout(std430, set = 0, binding = 1) readonly buffer BBuf { float b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer CBuf { float c[]; };
layout(push_constant) uniform Sizes { int M, N, K; } sz;
#define WIDTH sz.N
shared float As[8][8 + 1];
shared float Bs[8][8];
void main() {
    int tx = int(gl_LocalInvocationID.x);
    int ty = int(gl_LocalInvocationID.y);
    int row = int(gl_WorkGroupID.y) * 8 + ty;
    int col = int(gl_WorkGroupID.x) * 8 + tx;
    float acc = 0.0;
    int t = 0;
    while (t < sz.K) {
        As[ty][tx] = (row < sz.M && t + tx < sz.K) ? a[row * sz.K + t + tx] : 0.0;
        Bs[ty][tx] = (col < WIDTH && t + ty < sz.K) ? b[(t + ty) * WIDTH + col] : 0.0;
        barrier();
        for (int k = 0; k < 8; ++k) acc += As[ty][k] * Bs[k][tx];
        barrier();
        t += 8;
    }
    if (row < sz.M && col < WIDTH) c[row * WIDTH + col] = acc;
}
"""

PADDED_TOML = """\
source = "t.comp"
[sizes]
M = 20
N = 12
K = 28
[launch]
workgroups = ["(N + 7) // 8", "(M + 7) // 8"]
[push_constants]
M = "M"
N = "N"
K = "K"
[bindings]
a = { shape = ["M", "K"], access = "in" }
b = { shape = ["K", "N"], access = "in" }
c = { shape = ["M", "N"], access = "out" }
"""


def test_a_tiled_gemm_with_selected_loads_counts_as_worked_by_hand(tmp_path):
    """?: with a load in a branch (only the branch taken loads), a push
    constant through a #define, int work-item indices, a padded shared array."""
    sch = tt.build(write(tmp_path, PADDED, PADDED_TOML.replace('"t.comp"', '"k.comp"'), "k"))
    m, n, k = 20, 12, 28
    counts = tt.simulate(sch, compute_values=False).counts
    assert counts.global_load_elems == m * k * -(-n // 8) + k * n * -(-m // 8)
    assert counts.global_store_elems == m * n
    a = np.random.default_rng(1).standard_normal((m, k)).astype(np.float32)
    b = np.random.default_rng(2).standard_normal((k, n)).astype(np.float32)
    c = tt.simulate(sch, {"a": a, "b": b}).outputs["c"]
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


ALIASES = """\
#version 450
layout(local_size_x = 4, local_size_y = 2) in;
layout(set = 0, binding = 0) buffer Data { float x[]; };
void main() {
    uvec3 gid = gl_GlobalInvocationID;
    ivec2 lid = ivec2(gl_LocalInvocationID.yx);
    const uvec3 size = gl_WorkGroupSize;
    uint i = gid.y * 8u + gid.x;
    x[i] = float(lid.x * 100 + lid.y) + float(size.x * 1000u);
}
"""


def test_vectors_of_work_item_indices(tmp_path):
    toml = MINIMAL_TOML.replace("workgroups = [2]", "workgroups = [2, 2]").replace(
        "shape = [8]", "shape = [32]")
    sch = tt.build(write(tmp_path, ALIASES, toml, "k"))
    out = tt.simulate(sch, {"x": np.zeros(32, np.float32)}).outputs["x"]
    gx, gy = np.meshgrid(np.arange(8), np.arange(4))
    expected = (gy % 2) * 100 + (gx % 4) + 4000
    np.testing.assert_array_equal(out, expected.ravel())
    bare = ALIASES.replace("uint i = gid.y * 8u + gid.x;", "uint i = gid.y * 8u + gid.x;\n"
                           "    uvec3 again = gid;")
    with pytest.raises(GlslError, match=r"k\.comp:9:19: the vector gid "
                                        r"\(gl_GlobalInvocationID\) as a whole"):
        tt.build(write(tmp_path, bare, toml, "k"))


def test_the_dispatch_a_vulkan_runner_needs(reduce_launch):
    glsl = tt.build(reduce_launch).extra["glsl"]
    assert glsl["path"].endswith("reduce.comp") and glsl["text"] == REDUCE
    assert glsl["workgroups"] == (3, 1, 1) and glsl["local_size"] == (32, 1, 1)
    assert glsl["specialization"] == {"WG": (0, 32), "TS": (1, 4)}
    assert glsl["bindings"] == (("src", 0, 0, "vec4", "in"), ("dst", 0, 1, "float", "out"))
    assert glsl["scalars"] == {"n": ("uint", 3 * 32 * 4 - 5), "alpha": ("float", 0.5)}
    assert glsl["scalar_blocks"] == (("uniform", 0, 2, ("n", "alpha")),)


def test_macros_of_work_item_vectors_and_refusals_in_macro_bodies(tmp_path):
    shader = MINIMAL.format(globals="#define GID gl_GlobalInvocationID\n"
                                    "#define TWICE(v) (2.0 * (v))",
                            body="    x[GID.x] = clamp(TWICE(x[GID.x]), 1.0, 9.0);")
    sch = tt.build(write(tmp_path, shader, MINIMAL_TOML, "k"))
    x = np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(tt.simulate(sch, {"x": x}).outputs["x"],
                                  np.clip(2 * x, 1, 9))
    assert tt.simulate(sch, compute_values=False).counts.global_load_elems == 8
    bad = MINIMAL.format(globals="#define SIZE (gl_SubgroupSize * 2u)",
                         body="    x[i] = float(SIZE);")
    bad = bad.replace("#version 450\n", "#version 450\n#extension GL_KHR_shader_subgroup_basic"
                                        " : require\n")
    with pytest.raises(GlslError, match=r"k\.comp:6:1: in the body of #define SIZE: the "
                                        r"built-in gl_SubgroupSize"):
        tt.build(write(tmp_path, bad, MINIMAL_TOML, "k"))


MEMBER_QUALIFIERS = """\
#version 450
precision highp float;
layout(local_size_x = 4) in;
layout(std430) buffer;
layout(set = 0, binding = 0) buffer MatA {
    restrict readonly float a[];
};
layout(set = 0, binding = 1) buffer MatC {
    restrict writeonly float c[];
};
void main() {
    uint i = gl_GlobalInvocationID.x;
    c[i] = 3.0 * a[i];
}
"""


def test_access_qualifiers_on_members_precision_and_default_layouts(tmp_path):
    toml = MINIMAL_TOML.replace('x = { shape = [8], access = "inout" }',
                                'a = { shape = [8], access = "in" }\n'
                                'c = { shape = [8], access = "out" }')
    sch = tt.build(write(tmp_path, MEMBER_QUALIFIERS, toml, "k"))
    assert sch.extra["glsl"]["bindings"] == (("a", 0, 0, "float", "in"),
                                             ("c", 0, 1, "float", "out"))
    a = np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(tt.simulate(sch, {"a": a}).outputs["c"], 3 * a)


HELPERS = """\
#version 450
#define TS 4
layout(local_size_x = TS, local_size_y = TS) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) writeonly buffer C { float c[]; };
layout(push_constant) uniform P { uint n; } pc;
shared float tile[TS][TS];
shared float row_sums[TS];

void load_tile(uint t) {
    tile[gl_LocalInvocationID.y][gl_LocalInvocationID.x] =
        a[(t * TS + gl_LocalInvocationID.y) * pc.n + gl_GlobalInvocationID.x];
}

float row_sum(uint r) {
    float s = 0.0;
    for (uint k = 0u; k < TS; k++) {
        s += tile[r][k];
    }
    return s;
}

void main() {
    load_tile(gl_WorkGroupID.y);
    barrier();
    if (gl_LocalInvocationID.x == 0u) {
        row_sums[gl_LocalInvocationID.y] = row_sum(gl_LocalInvocationID.y);
    }
    barrier();
    c[gl_GlobalInvocationID.y * pc.n + gl_GlobalInvocationID.x] =
        row_sums[gl_LocalInvocationID.y];
}
"""


def test_helpers_reading_shared_arrays_buffers_and_push_constants(tmp_path):
    toml = MINIMAL_TOML.replace("workgroups = [2]", "workgroups = [2, 2]").replace(
        'x = { shape = [8], access = "inout" }',
        'a = { shape = [8, 8], access = "in" }\nc = { shape = [8, 8], access = "out" }'
    ) + "[push_constants]\nn = 8\n"
    sch = tt.build(write(tmp_path, HELPERS, toml, "k"))
    a = np.arange(64, dtype=np.float32).reshape(8, 8)
    c = tt.simulate(sch, {"a": a}).outputs["c"]
    tiles = a.reshape(2, 4, 2, 4)                     # [tile row, row, tile col, col]
    expected = np.repeat(tiles.sum(axis=3), 4, axis=2).reshape(8, 8)
    np.testing.assert_array_equal(c, expected)
    assert tt.check(sch, seed=1) == []


def test_a_local_copy_of_a_push_constant_of_the_same_name(tmp_path):
    shader = MINIMAL.format(globals="layout(push_constant) uniform P { uint n; } pc;\n"
                                    "float scaled(float v) { uint n = pc.n; return v * "
                                    "float(n); }",
                            body="    uint n = pc.n;\n    if (i < n) { x[i] = scaled(x[i]); }")
    sch = tt.build(write(tmp_path, shader, MINIMAL_TOML + "[push_constants]\nn = 5\n", "k"))
    x = np.arange(8, dtype=np.float32)
    out = tt.simulate(sch, {"x": x}).outputs["x"]
    np.testing.assert_array_equal(out, np.where(np.arange(8) < 5, 5 * x, x))
    assert dict(sch.params)["pc_n"] == 5 and "n" not in dict(sch.params)


def test_names_that_are_opencl_words(tmp_path):
    shader = MINIMAL.format(globals="", body="    float global = 0.5;\n    uint float4 = i;\n"
                                            "    x[float4] = global * x[float4];")
    sch = tt.build(write(tmp_path, shader, MINIMAL_TOML, "k"))
    x = np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(tt.simulate(sch, {"x": x}).outputs["x"], x / 2)


def test_a_float_push_constant_converted_to_an_integer(tmp_path):
    shader = MINIMAL.format(globals="layout(push_constant) uniform P { float n; float s; } pc;",
                            body="    uint n = uint(pc.n);\n"
                                 "    if (i < n) { x[i] = pc.s * x[i]; }")
    sch = tt.build(write(tmp_path, shader, MINIMAL_TOML + "[push_constants]\nn = 5.7\n"
                                                          "s = 3.0\n", "k"))
    x = np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(tt.simulate(sch, {"x": x}).outputs["x"],
                                  np.where(np.arange(8) < 5, 3 * x, x))
    assert tt.simulate(sch, compute_values=False).counts.global_load_elems == 5
    negative = write(tmp_path, shader, MINIMAL_TOML + "[push_constants]\nn = -2.0\ns = 1.0\n",
                     "k")
    with pytest.raises(LaunchFileError, match=r"push_constants\.n: -2\.0 converted to uint"):
        tt.build(negative)


def test_uint_arithmetic_wraps_around(tmp_path):
    shader = MINIMAL.format(globals="", body="    uint j = i - 1u;\n"
                                            "    if (j < 8u) { x[i] = x[j] + 1.0; }")
    toml = MINIMAL_TOML.replace("workgroups = [2]", "workgroups = [1]").replace(
        "shape = [8]", "shape = [4]")
    sch = tt.build(write(tmp_path, shader, toml, "k"))
    counts = tt.simulate(sch, compute_values=False, hazards="report").counts
    assert counts.global_load_elems == 3 and counts.global_store_elems == 3


def test_dot_in_opencl_c_evaluates_each_operand_once():
    source = """
    __kernel void k(__global const float4 *a, __global float *y) {
        int i = get_global_id(0);
        y[i] = dot(a[i], (float4)(1.0f, 2.0f, 3.0f, 4.0f)) + dot(2.0f, 3.0f);
    }"""
    sch = tt.from_opencl(source, "k", [4], [4], {"a": {"shape": [4, 4], "access": "in"},
                                                  "y": {"shape": [4], "access": "out"}})
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    out = tt.simulate(sch, {"a": a}).outputs["y"]
    np.testing.assert_array_equal(out, a @ np.array([1, 2, 3, 4]) + 6)
    assert tt.simulate(sch, compute_values=False).counts.global_load_elems == 16


def test_a_constant_from_the_work_group_size_is_a_name_for_the_launch(tmp_path):
    shader = MINIMAL.format(globals="const uint WG = gl_WorkGroupSize.x * 2u;\n"
                                    "shared float staged[WG];",
                            body="    staged[gl_LocalInvocationID.x] = x[i];\n"
                                 "    barrier();\n    x[i] = staged[3u - gl_LocalInvocationID.x];")
    toml = MINIMAL_TOML.replace("shape = [8]", 'shape = ["WG"]').replace(
        "workgroups = [2]", "workgroups = [\"WG // 4\"]")
    sch = tt.build(write(tmp_path, shader, toml, "k"))
    assert sch.global_size == (8,)
    x = np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(tt.simulate(sch, {"x": x}).outputs["x"],
                                  [3, 2, 1, 0, 7, 6, 5, 4])


def test_a_macro_naming_a_block_declared_after_it(tmp_path):
    shader = MINIMAL.format(globals="#define COUNT pc.n\n"
                                    "layout(push_constant) uniform P { uint n; } pc;",
                            body="    if (i < COUNT) { x[i] = 2.0 * x[i]; }")
    sch = tt.build(write(tmp_path, shader, MINIMAL_TOML + "[push_constants]\nn = 3\n", "k"))
    assert tt.simulate(sch, compute_values=False).counts.global_load_elems == 3


@pytest.mark.parametrize("word, copy, written, index", [
    ("global", "", "global", "local + global"),           # an OpenCL C word: global_glsl
    ("n", "    uint n = pc.n;\n", "pc.n", "local + n"),  # a member copied: pc_n
    ("global", "    uint global = pc.global;\n", "pc.global", "local + global"),   # both
])
def test_messages_and_headers_name_a_renamed_word_as_the_shader_writes_it(
        tmp_path, word, copy, written, index):
    from click.testing import CliRunner
    from tiletraffic.analysis.cli import main
    shader = MINIMAL.format(globals=f"layout(push_constant) uniform P {{ uint {word}; }} pc;",
                            body=f"{copy}    uint local = i;\n"
                                 f"    x[{index.replace(' + ', ' + pc.') if not copy else index}]"
                                 " = 1.0;")
    path = write(tmp_path, shader, MINIMAL_TOML + f"[push_constants]\n{word} = 1\n", "k")
    res = CliRunner().invoke(main, ["check", path])
    assert res.exit_code == 1, res.output
    header, hazard = res.output.splitlines()[:2]
    assert header.startswith(f"glsl:k  x_dim0=8 {written}=1  tile=4: 1 hazard(s)"), header
    assert f"(store x[{index}] at {tmp_path / 'k.comp'}:" in hazard, hazard
    assert "_glsl" not in res.output and "pc_" not in res.output



COPY_TS = """\
#version 450
layout(local_size_x = 4) in;
layout(set = 0, binding = 0) readonly buffer In { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Out { float y[]; };
layout(push_constant) uniform P { uint n; } pc;
const uint TS = 4u;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < pc.n) y[i] = x[i];
}
"""

COPY_TS_TOML = """\
source = "k.comp"
[sizes]
N = 8
[launch]
workgroups = ["(N + TS - 1) // TS"]
[push_constants]
n = "N"
[bindings]
x = { shape = ["N"], access = "in" }
y = { shape = ["N"], access = "out" }
"""


def test_a_shader_constant_in_the_workgroups_keeps_the_closed_forms_symbolic(tmp_path):
    """``workgroups`` written with the shader's ``const uint TS``: the NDRange is a form
    of the sizes, so the closed forms derived at one size hold at another."""
    from tiletraffic.simulator.engine.fast_path import count_launch

    path = write(tmp_path, COPY_TS, COPY_TS_TOML, "k")
    formula = tt.closed_form(tt.build(path))
    assert not any("NDRange" in note for note in formula.notes), formula.notes
    counts = count_launch(tt.build(path, set={"N": 37}), hazards="report").counts
    derived = formula.evaluate({"N": 37})
    assert derived["global_load_elems"] == counts.global_load_elems == 37
    assert derived["work_groups"] == counts.work_groups == 10


def test_a_size_a_specialization_constant_reads_is_a_constant_of_the_closed_forms(tmp_path):
    """``LEN = "N"`` in [specialization]: the shader is compiled with N's value, so N is no
    size of the derived forms (evaluating at another N is refused, never a wrong count)."""
    shader = COPY_TS.replace("const uint TS = 4u;",
                             "layout(constant_id = 0) const uint LEN = 4u;").replace(
        "i < pc.n", "i < LEN").replace("layout(push_constant) uniform P { uint n; } pc;\n", "")
    toml = COPY_TS_TOML.replace('[push_constants]\nn = "N"\n', '[specialization]\nLEN = "N"\n'
                                ).replace("(N + TS - 1) // TS", "(N + 3) // 4")
    formula = tt.closed_form(tt.build(write(tmp_path, shader, toml, "k")))
    assert "N" not in formula.sizes
    assert formula.evaluate()["global_load_elems"] == 8
    with pytest.raises(ValueError, match="'N' is not a size"):
        formula.evaluate({"N": 40})
