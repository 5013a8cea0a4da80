"""Programs as hosts build them and the constructs of their helper files: a launch file's
``drop_include_lines`` (every line beginning with ``#include `` dropped from each file, the
files joined), a reinterpreting cast or a vector type in a function the kernel does not
call, ``char`` scalar arguments, ``int2`` private variables bound once, ``float4`` values
joined from ``float2`` ones and swizzles of several components (``.lo``, ``.hi``, ``.xy``)."""
from __future__ import annotations

import numpy as np
import pytest

import tiletraffic as tt
from tiletraffic.frontend import launch_file
from tiletraffic.frontend.opencl.clang_ast import FrontendError

HELPERS = """\
#include "for_ide.h"
#define TWICE(x) (2.0f * (x))
static float unused(const global uchar *p, int i) {
    char c = as_char(p[i]);
    uchar2 pair = (uchar2)(p[i], p[i + 1]);
    return convert_float(c) + convert_float(as_ushort(pair));
}
"""

KERNEL = """\
#include "for_ide.h"
__kernel void k(__global const float *A, __global float4 *C, const char flip,
                const int n) {
    const int i = get_global_id(0);
    int2 range = (int2)(i * 2, i * 2 + 2);
    float2 lo = (float2)(A[range.x], A[range.x + 1]);
    float2 hi = (float2)(TWICE(A[range.x]), flip ? -1.0f : 1.0f);
    float4 v = (float4)(lo, hi);
    if (i < n)
        C[i] = (float4)(v.hi, v.lo);
}
"""

TOML = """\
source = ["helpers.cl", "k.cl"]
drop_include_lines = true
kernel = "k"
[launch]
global_size = [16]
local_size = [8]
[args]
A = { shape = [32], access = "in" }
C = { shape = [16, 4], access = "out" }
flip = 1
n = 16
"""


def program(tmp_path, toml=TOML):
    (tmp_path / "helpers.cl").write_text(HELPERS)
    (tmp_path / "k.cl").write_text(KERNEL)
    (tmp_path / "k.toml").write_text(toml)
    return tmp_path / "k.toml"


def reference(inputs):
    a = inputs["A"].astype(np.float64).reshape(16, 2)
    return {"C": np.stack([2 * a[:, 0], -np.ones(16), a[:, 0], a[:, 1]], axis=1)}


def test_a_program_without_its_include_lines_is_read(tmp_path):
    sch = launch_file.load(program(tmp_path))
    a = np.arange(32, dtype=np.float32)
    out = tt.simulate(sch, {"A": a}).outputs["C"]
    np.testing.assert_array_equal(out, reference({"A": a})["C"].astype(np.float32))
    text = launch_file.read(program(tmp_path)).source()
    assert "#include" not in text and '#line 1 "k.cl"' in text
    assert text.count("\n") >= HELPERS.count("\n") + KERNEL.count("\n")


def test_without_the_option_the_missing_header_is_named(tmp_path):
    path = program(tmp_path, TOML.replace("drop_include_lines = true\n", ""))
    with pytest.raises(FrontendError, match="'for_ide.h' file not found"):
        launch_file.load(path)
    bad = program(tmp_path, TOML.replace("drop_include_lines = true", 'drop_include_lines = 1'))
    with pytest.raises(launch_file.LaunchFileError, match="drop_include_lines: must be true "
                                                          "or false"):
        launch_file.load(bad)


def test_a_message_names_the_file_and_line_of_the_program(tmp_path):
    path = program(tmp_path)
    (tmp_path / "k.cl").write_text(KERNEL.replace("TWICE(A[range.x])", "as_float(n)"))
    with pytest.raises(FrontendError, match=r"k\.cl:7:\d+: as_float reinterprets"):
        launch_file.load(path)


def test_a_char_argument_out_of_its_range_is_refused(tmp_path):
    path = program(tmp_path, TOML.replace("flip = 1", "flip = 300"))
    with pytest.raises(launch_file.LaunchFileError, match="flip = 300 does not fit a 8-bit"):
        launch_file.load(path)


def test_counts_equal_oclgrinds_and_the_run_equals_numpy(tmp_path, pocl):
    from tiletraffic.gpu.oclgrind.crosscheck import compare_counts
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available
    sch = launch_file.load(program(tmp_path))
    result = tt.run(sch, pocl, repeat=10, warmup=1, reference=reference, seed=3)
    assert result.check.ok
    if not oclgrind_available():
        pytest.skip("no Oclgrind platform")
    comparison = compare_counts(sch)
    assert comparison.equal, comparison.to_dict()
    assert comparison.simulator["global_store_elems"] == 64


def test_the_launch_file_names_the_inputs_run_draws(tmp_path):
    from tiletraffic.analysis.api.arguments import inputs_kind_of
    from tiletraffic.simulator.engine.data_inputs import random_inputs
    sch = launch_file.load(program(tmp_path, TOML + '[reference]\ninputs = "positive"\n'))
    assert sch.extra["reference_inputs"] == "positive"
    assert inputs_kind_of(sch, None) == "positive" and inputs_kind_of(sch, "ones") == "ones"
    drawn = random_inputs(sch, np.random.default_rng(1), "positive")["A"]
    assert drawn.min() >= 0 and drawn.max() < 1 and len(set(drawn.tolist())) == drawn.size
    plain = launch_file.load(program(tmp_path))
    assert inputs_kind_of(plain, None) == "normal"
    with pytest.raises(launch_file.LaunchFileError, match="reference.inputs: 'even' is not"):
        launch_file.load(program(tmp_path, TOML + '[reference]\ninputs = "even"\n'))


EARLY = """\
float2 merged(float2 a, float2 b) {
    if (a.x <= 0.0f)
        return b;
    else if (b.x <= 0.0f)
        return a;
    float2 s = a + b;
    return s * 0.5f;
}
void clear_negative(__global float2 *c, int i) {
    if (c[i].y >= 0.0f)
        return;
    c[i] = (float2)(0.0f, 0.0f);
}
__kernel void merge(__global const float2 *A, __global const float2 *B, __global float2 *C) {
    int i = get_global_id(0);
    C[i] = merged(A[i], B[i]);
    clear_negative(C, i);
}
"""


def merge_reference(inputs):
    a, b = (inputs[n].astype(np.float64).reshape(-1, 2) for n in ("A", "B"))
    out = np.where((a[:, 0] <= 0)[:, None], b, np.where((b[:, 0] <= 0)[:, None], a, (a + b) / 2))
    out[out[:, 1] < 0] = 0.0
    return {"C": out}


def merge_kernel():
    shape = {"shape": [32, 2], "access": "in"}
    return tt.from_opencl(EARLY, "merge", [32], [16],
                          {"A": shape, "B": shape, "C": {"shape": [32, 2], "access": "inout"}})


def test_helpers_returning_from_several_places_run_as_c_does(pocl):
    from tiletraffic.gpu.oclgrind.crosscheck import compare_counts
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available
    sch = merge_kernel()
    rng = np.random.default_rng(4)
    inputs = {n: rng.standard_normal((32, 2)).astype(np.float32) for n in ("A", "B", "C")}
    out = tt.simulate(sch, inputs).outputs["C"]
    np.testing.assert_allclose(out, merge_reference(inputs)["C"], rtol=1e-6)
    result = tt.run(sch, pocl, repeat=10, warmup=1, reference=merge_reference, seed=2)
    assert result.check.ok
    if oclgrind_available():
        comparison = compare_counts(sch)
        assert comparison.equal, comparison.to_dict()


def test_a_return_inside_a_loop_of_a_helper_is_refused():
    source = EARLY.replace("    if (c[i].y >= 0.0f)\n        return;",
                           "    for (int k = 0; k < 2; k++)\n        if (c[i].y >= 0.0f) return;")
    shape = {"shape": [32, 2], "access": "in"}
    with pytest.raises(FrontendError, match="helper clear_negative returns before its end "
                                            "inside a loop"):
        tt.from_opencl(source, "merge", [32], [16],
                       {"A": shape, "B": shape, "C": {"shape": [32, 2], "access": "inout"}})
