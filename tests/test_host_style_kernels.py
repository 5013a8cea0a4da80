"""Kernels as host programs build them: ``__local float *`` arguments the host sizes with
``clSetKernelArg(k, i, bytes, NULL)``, ``float`` scalar arguments (``alpha``, ``beta``), a
kernel defined in a file the source includes, a ``-D`` macro the source redefines, float
division, ``#pragma unroll N`` and ``__attribute__((...))``.

Each kernel is read through its launch file and counted as closed forms worked by hand
say; the simulator's counts equal Oclgrind's of the very source and of the OpenCL C the
code generator renders from the schedule, and both run on PoCL equal to numpy.
"""
from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import numpy as np
import pytest

import tiletraffic as tt
from tiletraffic.frontend import launch_file
from tiletraffic.frontend.opencl.translate import MacroRedefinedWarning, parse_kernel
from tiletraffic.gpu.codegen.generate import generate
from tiletraffic.gpu.codegen.kernel import KernelArg
from tiletraffic.simulator.engine import sum_length
from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.wellformed import MalformedScheduleError, check_well_formed

TILED = """\
/* C = A * B in TILE x TILE tiles; the host sizes both tiles at launch. */
#ifndef TILE
#define TILE 4
#endif
__kernel void tile_product(__global const float *restrict A,
                           __global const float *restrict B, __global float *restrict C,
                           const int rows, const int inner, const int cols,
                           __local float *Asub, __local float *Bsub)
{
    const int lc = get_local_id(0), lr = get_local_id(1);
    const int c = get_global_id(0), r = get_global_id(1);
    float acc = 0.0f;
    for (int k0 = 0; k0 < inner; k0 += TILE) {
        Asub[lr * TILE + lc] = A[r * inner + k0 + lc];
        Bsub[lr * TILE + lc] = B[(k0 + lr) * cols + c];
        barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll 4
        for (int kk = 0; kk < TILE; ++kk)
            acc = fma(Asub[lr * TILE + kk], Bsub[kk * TILE + lc], acc);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    C[r * cols + c] = acc;
}
"""

TILED_TOML = """\
source = "tiled.cl"
kernel = "tile_product"
build_options = "-DTILE=8"
[sizes]
M = 16
K = 24
N = 32
[launch]
global_size = ["N", "M"]
local_size = ["TILE", "TILE"]
[args]
A = { shape = ["M", "K"], access = "in" }
B = { shape = ["K", "N"], access = "in" }
C = { shape = ["M", "N"], access = "out" }
rows = "M"
inner = "K"
cols = "N"
Asub = { shape = ["TILE", "TILE"] }
Bsub = { local_bytes = "TILE * TILE * 4", access = "inout" }
[reference]
function = "refs.py:product"
"""

SCALED = """\
/* C = alpha * A * B + beta * C, one element per work-item, edges guarded. */
__kernel __attribute__((reqd_work_group_size(8, 4, 1)))
void scaled_product(const int M, const int N, const int K, const float alpha,
                    const float beta, __global const float *A, __global const float *B,
                    __global float *C)
{
    const int j = get_global_id(0);
    const int i = get_global_id(1);
    if (i < M && j < N) {
        float dot __attribute__((aligned(4))) = 0.0f;
        for (int k = 0; k < K; k++)
            dot += A[i * K + k] * B[k * N + j];
        C[i * N + j] = alpha * dot + beta * C[i * N + j];
    }
}
"""

SCALED_TOML = """\
source = "scaled.cl"
kernel = "scaled_product"
[sizes]
M = 10
N = 13
K = 7
[launch]
global_size = ["ceil_div(N, 8) * 8", "ceil_div(M, 4) * 4"]
local_size = [8, 4]
[args]
M = "M"
N = "N"
K = "K"
alpha = 1.5
beta = "1 / 4"
A = { shape = ["M", "K"], access = "in" }
B = { shape = ["K", "N"], access = "in" }
C = { shape = ["M", "N"], access = "inout" }
[reference]
function = "refs.py:scaled"
"""

HOST_FILE = """\
/* what the host passes to clCreateProgramWithSource: its kernels are in the header */
#include "kernels/axpy.clh"
"""

INCLUDED_KERNEL = """\
__kernel void axpy_in_header(const float a, __global const float *x, __global float *y,
                             const int n)
{
    const int i = get_global_id(0);
    if (i < n)
        y[i] = a * x[i] + y[i];
}
"""

INCLUDED_TOML = """\
source = "host.cl"
kernel = "axpy_in_header"
[sizes]
n = 70
[launch]
global_size = [96]
local_size = [32]
[args]
a = "3 / 2"
x = { shape = ["n"], access = "in" }
y = { shape = ["n"], access = "inout" }
n = "n"
[reference]
function = "refs.py:axpy"
"""

REDEFINED = """\
/* the file fixes its row width; the -DRX of the build options is overridden */
#define RX WIDE
__kernel void widen(__global const float *in, __global float *out, const float s)
{
    const int base = get_global_id(0) * RX;
    for (int r = 0; r < RX; r++)
        out[base + r] = s * in[base + r];
}
"""

REDEFINED_TOML = """\
source = "redefined.cl"
kernel = "widen"
build_options = "-DRX=8 -DWIDE=4"
[sizes]
n = 64
[launch]
global_size = ["n // WIDE"]
local_size = [4]
[args]
in = { shape = ["n"], access = "in" }
out = { shape = ["n"], access = "out" }
s = 0.5
[reference]
function = "refs.py:halve"
"""

NORMALISE = """\
/* Each work-group scales one row so that its absolute values sum to 1. */
__kernel void normalise_rows(__global const float *X, __global float *Y, const int cols,
                             __local float *part)
{
    const int row = get_group_id(0);
    const int lid = get_local_id(0);
    const int wg = get_local_size(0);
    float s = 0.0f;
    for (int c = lid; c < cols; c += wg)
        s += fabs(X[row * cols + c]);
    part[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int step = WG / 2; step > 0; step >>= 1) {
        if (lid < step)
            part[lid] = part[lid] + part[lid + step];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float total = part[0];
    for (int c = lid; c < cols; c += wg)
        Y[row * cols + c] = X[row * cols + c] / total;
}
"""

NORMALISE_TOML = """\
source = "normalise.cl"
kernel = "normalise_rows"
build_options = "-DWG=8"
[sizes]
rows = 6
cols = 20
[launch]
global_size = ["rows * WG"]
local_size = ["WG"]
[args]
X = { shape = ["rows", "cols"], access = "in" }
Y = { shape = ["rows", "cols"], access = "out" }
cols = "cols"
part = { shape = ["WG"] }
[reference]
function = "refs.py:normalised"
"""

REFERENCES = """\
import numpy as np


def product(inputs):
    return {"C": inputs["A"] @ inputs["B"]}


def scaled(inputs):
    return {"C": 1.5 * inputs["A"] @ inputs["B"] + 0.25 * inputs["C"]}


def axpy(inputs):
    return {"y": 1.5 * inputs["x"] + inputs["y"]}


def halve(inputs):
    return {"out": 0.5 * inputs["in"]}


def normalised(inputs):
    x = inputs["X"]
    return {"Y": x / np.abs(x).sum(axis=1, keepdims=True)}
"""

FILES = {"tiled.cl": TILED, "tiled.toml": TILED_TOML, "scaled.cl": SCALED,
         "scaled.toml": SCALED_TOML, "host.cl": HOST_FILE,
         "kernels/axpy.clh": INCLUDED_KERNEL, "included.toml": INCLUDED_TOML,
         "redefined.cl": REDEFINED, "redefined.toml": REDEFINED_TOML,
         "normalise.cl": NORMALISE, "normalise.toml": NORMALISE_TOML, "refs.py": REFERENCES}

NAMES = ("tiled", "scaled", "included", "redefined", "normalise")


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("host_style")
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def load(folder: Path, name: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MacroRedefinedWarning)
        return launch_file.load(folder / f"{name}.toml")


def closed_forms(name: str) -> dict:
    """Exact counts of each kernel at its launch file's sizes, worked by hand."""
    if name == "tiled":              # M x N work-items, K / TILE tile steps of 2 loads each
        m, k, n, t = 16, 24, 32, 8
        steps = k // t
        return {"global_load_elems": 2 * m * n * steps, "global_store_elems": m * n,
                "local_store_elems": 2 * m * n * steps, "local_load_elems": 2 * m * n * k,
                "barriers": 2 * steps * (m // t) * (n // t), "flop": 2 * m * n * k}
    if name == "scaled":             # inside work-items: K products, 2 scalings, 1 add
        m, n, k = 10, 13, 7
        return {"global_load_elems": m * n * (2 * k + 1), "global_store_elems": m * n,
                "local_store_elems": 0, "local_load_elems": 0, "barriers": 0,
                "flop": m * n * (2 * k + 3)}
    if name == "included":
        n = 70
        return {"global_load_elems": 2 * n, "global_store_elems": n, "barriers": 0,
                "flop": 2 * n}
    if name == "redefined":          # RX = WIDE = 4: n / 4 work-items of 4 elements
        n = 64
        return {"global_load_elems": n, "global_store_elems": n, "flop": n}
    if name == "normalise":          # |x| and + per element, the tree, one division each
        rows, cols, wg = 6, 20, 8
        return {"global_load_elems": 2 * rows * cols, "global_store_elems": rows * cols,
                "local_store_elems": rows * (wg + wg - 1),
                "local_load_elems": rows * (2 * (wg - 1) + wg),
                "barriers": rows * (1 + 3),
                "flop": rows * (3 * cols + wg - 1)}
    raise KeyError(name)


@pytest.mark.parametrize("name", NAMES)
def test_counts_equal_closed_forms_and_the_kernel_is_clean(folder, name):
    sch = load(folder, name)
    counts = tt.simulate(sch, compute_values=False).counts.to_dict()
    expected = closed_forms(name)
    assert {k: counts[k] for k in expected} == expected
    derived = tt.closed_form(sch)     # derived from the IR: the same numbers
    assert derived.source == "derived" and {k: derived[k] for k in expected} == expected
    assert tt.check(sch, seed=2) == []


def test_local_pointer_arguments_become_local_arrays_of_the_given_sizes(folder):
    sch = load(folder, "tiled")
    assert [(a.name, tuple(d.value for d in a.dims)) for a in sch.local_arrays] == \
        [("Asub", (8, 8)), ("Bsub", (64,))]
    assert sch.local_mem_bytes == 2 * 8 * 8 * 4
    kinds = dict((a[0], a[1:]) for a in sch.extra["opencl"]["args"])
    assert kinds["Asub"] == ("local", 256) and kinds["Bsub"] == ("local", 256)
    assert generate(sch).args[-1] == KernelArg("Bsub", "local", 256)


def test_float_arguments_are_parameters_of_the_schedule(folder):
    sch = load(folder, "scaled")
    params = sch.param_values
    assert params["alpha"] == 1.5 and params["beta"] == 0.25
    assert isinstance(params["alpha"], float) and isinstance(params["M"], int)
    rendered = generate(dataclasses.replace(sch, extra={}))
    assert "const float alpha, const float beta" in rendered.source
    assert [a.kind for a in rendered.args if a.name in ("alpha", "beta", "M")] == \
        ["int", "float", "float"]


def test_a_negative_float_expression_and_a_toml_float(folder, tmp_path):
    """``beta = "0 - 1"`` is -1.0 and the simulator computes alpha·A·B + beta·C with it."""
    for f in ("scaled.cl", "refs.py"):
        (tmp_path / f).write_text((folder / f).read_text())
    toml = tmp_path / "scaled.toml"
    toml.write_text(SCALED_TOML.replace('beta = "1 / 4"', 'beta = "0 - 1"')
                    .replace("alpha = 1.5", "alpha = 2.0"))
    sch = launch_file.load(toml)
    assert sch.param_values["beta"] == -1.0 and sch.param_values["alpha"] == 2.0
    rng = np.random.default_rng(4)
    inputs = {n: rng.standard_normal(s, dtype=np.float32)
              for n, s in (("A", (10, 7)), ("B", (7, 13)), ("C", (10, 13)))}
    out = tt.simulate(sch, inputs).outputs["C"]
    want = 2.0 * inputs["A"].astype(np.float64) @ inputs["B"] - inputs["C"]
    assert np.allclose(out, want, rtol=1e-5, atol=1e-5)


def test_a_kernel_defined_in_an_included_file_is_found(folder):
    sch = load(folder, "included")
    assert sch.kernel_name == "axpy_in_header"
    assert sch.param_values["a"] == 1.5
    assert any(o.startswith("-I") for o in sch.extra["opencl"]["build_options"])
    from tiletraffic.frontend.opencl.translate import kernel_names
    assert kernel_names(HOST_FILE, str(folder / "host.cl")) == ["axpy_in_header"]


def test_a_redefined_build_macro_warns_once_and_the_later_definition_wins(folder):
    with pytest.warns(MacroRedefinedWarning) as caught:
        sch = launch_file.load(folder / "redefined.toml")
    lines = [str(w.message) for w in caught if w.category is MacroRedefinedWarning]
    assert len(lines) == 1
    assert lines[0].startswith(f"{folder / 'redefined.cl'}:2:9: 'RX' macro redefined")
    loops = [s for s in sch.body if isinstance(s, S.For)]
    assert [loop.stop.value for loop in loops] == [4]            # RX is WIDE (4), not 8


def test_division_is_one_flop_and_rounds_as_float32():
    a = S.GlobalArray("a", "in", ("n",))
    out = S.GlobalArray("out", "out", ("n",))
    i = S.global_id(0)
    sch = S.Schedule("divide", "divide", (("n", 8), ("d", 3.0)), (a, out), (), (8,), (8,),
                     (S.store(out, i, S.Load(a, (i,)) / S.FloatParam("d")),), 8)
    check_well_formed(sch)
    x = np.arange(1, 9, dtype=np.float32)
    res = tt.simulate(sch, {"a": x})
    assert res.counts.flop == 8
    assert np.array_equal(res.outputs["out"], x / np.float32(3.0))
    assert "a[i] / d" in generate(sch).source.replace("(int)get_global_id(0)", "i")


def test_division_sum_length_adds_the_rounding_opencl_allows():
    assert int(sum_length.divide(3, 2)) == 3 + 2 + sum_length.DIVISION_ROUNDINGS
    assert int(sum_length.divide(sum_length.ZERO, 4)) == sum_length.ZERO


def test_a_float_parameter_read_as_an_integer_is_malformed():
    out = S.GlobalArray("out", "out", ("n",))
    sch = S.Schedule("bad", "bad", (("n", 8), ("d", 3.0)), (out,), (), (8,), (8,),
                     (S.store(out, S.global_id(0) % S.Param("d"), S.FConst(1.0)),), 8)
    with pytest.raises(MalformedScheduleError, match="float parameter d = 3.0 as an integer"):
        check_well_formed(sch)


def test_attributes_before_the_kernel_keyword_and_on_variables_are_accepted():
    src = ("__attribute__((reqd_work_group_size(16, 1, 1))) __kernel void k("
           "__global const float *A, __global float *C) {\n"
           "    const int i __attribute__((unused)) = get_global_id(0);\n"
           "    float x __attribute__((aligned(4)));\n"
           "    x = A[i];\n    C[i] = x / 2.0f;\n}\n")
    sch = parse_kernel(src, "k", [64], [16], {"A": {"shape": [64], "access": "in"},
                                              "C": {"shape": [64], "access": "out"}})
    counts = tt.simulate(sch, compute_values=False).counts
    assert (counts.global_load_elems, counts.flop) == (64, 64)


def test_a_buffer_without_access_is_named_in_the_launch_file(folder, tmp_path):
    for f in ("scaled.cl", "refs.py"):
        (tmp_path / f).write_text((folder / f).read_text())
    toml = tmp_path / "scaled.toml"
    toml.write_text(SCALED_TOML.replace('C = { shape = ["M", "N"], access = "inout" }',
                                        'C = { shape = ["M", "N"] }'))
    with pytest.raises(launch_file.LaunchFileError,
                       match=r"args\.C\.access: missing \(one of in, out, inout\)"):
        launch_file.load(toml)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("text", ["source", "generated"])
def test_runs_on_pocl_equal_to_numpy(folder, pocl, name, text):
    """The source as written (``__local float *`` and ``float`` arguments set at launch),
    and the OpenCL C rendered from its schedule (local arrays in the body, ``const float``
    arguments)."""
    sch = load(folder, name)
    if text == "generated":
        sch = dataclasses.replace(sch, extra={})
    ref = launch_file.reference_function(folder / f"{name}.toml")
    result = tt.run(sch, pocl, repeat=10, warmup=1, reference=ref, seed=7)
    assert result.check.ok


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("text", ["source", "generated"])
def test_oclgrind_counts_equal_the_simulator(folder, name, text):
    from tiletraffic.gpu.oclgrind.crosscheck import compare_counts
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available
    if not oclgrind_available():
        pytest.skip("no Oclgrind platform")
    sch = load(folder, name)
    if text == "generated":
        sch = dataclasses.replace(sch, extra={})
    comparison = compare_counts(sch)
    assert comparison.equal, comparison.to_dict()
    assert comparison.oclgrind["global_load_elems"] > 0
