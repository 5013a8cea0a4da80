"""OpenCL C as people write it: a padded transpose through local memory whose indices are
assigned again after the barrier, an integer declared before its ``for`` loop, a
``do``/``while`` tile loop over ``__local float *`` arguments sized in the launch file, a
``for`` loop over two variables with ``alpha``/``beta`` arguments and a branch on
``beta``, and ``switch`` statements (fall-through, ``default``, ``break`` inside an ``if``,
``continue``) inside a loop, and ``float4`` tiles in local memory and a private array of
``float4`` through a ``typedef``, and a ``volatile __local float *`` pointer into local
memory.

Each kernel is read through its launch file; the simulator's counts equal Oclgrind's of
the very source, and the source runs on PoCL equal to the float64 reference; the kernels
whose constructs become new IR also run as the code generator renders their schedule.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

import tiletraffic as tt
from tiletraffic.frontend import launch_file
from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.visitor import walk_statements

TRANSPOSE = """\
/* out = in^T through a padded local tile; x and y are assigned again after the barrier */
#define TILE 4
__kernel void transpose_padded(__global float *out, __global const float *in,
                               const int width, const int height)
{
    __local float block[TILE][TILE + 1];
    int x = get_group_id(0) * TILE + get_local_id(0);
    int y = get_group_id(1) * TILE + get_local_id(1);
    if (x < width && y < height)
        block[get_local_id(1)][get_local_id(0)] = in[y * width + x];
    barrier(CLK_LOCAL_MEM_FENCE);
    x = get_group_id(1) * TILE + get_local_id(0);
    y = get_group_id(0) * TILE + get_local_id(1);
    if (x < height && y < width)
        out[y * height + x] = block[get_local_id(0)][get_local_id(1)];
}
"""

TRANSPOSE_TOML = """\
source = "transpose.cl"
kernel = "transpose_padded"
[sizes]
W = 12
H = 8
[launch]
global_size = ["W", "H"]
local_size = [4, 4]
[args]
out = { shape = ["W", "H"], access = "out" }
in = { shape = ["H", "W"], access = "in" }
width = "W"
height = "H"
[reference]
function = "refs.py:transposed"
"""

MATVEC = """\
/* y = A x; the integers are declared first and given their values later */
__kernel void matvec(__global const float *A, __global const float *x, __global float *y,
                     const int rows, const int cols)
{
    int i, k;
    float sum = 0.0f;
    i = get_global_id(0);
    if (i >= rows)
        return;
    for (k = 0; k < cols; k++)
        sum += A[i * cols + k] * x[k];
    y[i] = sum;
}
"""

MATVEC_TOML = """\
source = "matvec.cl"
kernel = "matvec"
[sizes]
rows = 10
cols = 7
[launch]
global_size = [16]
local_size = [8]
[args]
A = { shape = ["rows", "cols"], access = "in" }
x = { shape = ["cols"], access = "in" }
y = { shape = ["rows"], access = "out" }
rows = "rows"
cols = "cols"
[reference]
function = "refs.py:matvec"
"""

DO_WHILE = """\
/* C = A B in TS x TS tiles, the tile loop a do/while; the host sizes both tiles */
__kernel void gemm_do(const int M, const int N, const int K, __global const float *A,
                      __global const float *B, __global float *C,
                      __local float *Asub, __local float *Bsub)
{
    const int row = get_local_id(1), col = get_local_id(0);
    const int globalRow = TS * get_group_id(1) + row;
    const int globalCol = TS * get_group_id(0) + col;
    const int numTiles = K / TS;
    float acc = 0.0f;
    int t = 0;
    do {
        const int tiledRow = TS * t + row;
        const int tiledCol = TS * t + col;
        Asub[row * TS + col] = A[globalRow * K + tiledCol];
        Bsub[row * TS + col] = B[tiledRow * N + globalCol];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TS; k++)
            acc += Asub[row * TS + k] * Bsub[k * TS + col];
        barrier(CLK_LOCAL_MEM_FENCE);
        t++;
    } while (t < numTiles);
    C[globalRow * N + globalCol] = acc;
}
"""

DO_WHILE_TOML = """\
source = "do_while.cl"
kernel = "gemm_do"
build_options = "-DTS=4"
[sizes]
M = 8
N = 8
K = 12
[launch]
global_size = ["N", "M"]
local_size = ["TS", "TS"]
[args]
M = "M"
N = "N"
K = "K"
A = { shape = ["M", "K"], access = "in" }
B = { shape = ["K", "N"], access = "in" }
C = { shape = ["M", "N"], access = "out" }
Asub = { shape = ["TS", "TS"] }
Bsub = { local_bytes = "TS * TS * 4" }
[reference]
function = "refs.py:product"
"""

TWO_VARIABLES = """\
/* C = alpha A B + beta C (flat buffers, as the host passes them); a and b walk A's rows
   and B's columns of tiles together */
#define BS 4
__kernel void gemm_ab(__global float *C, __global const float *A, __global const float *B,
                      const int wA, const int wB, const float alpha, const float beta)
{
    __local float As[BS][BS];
    __local float Bs[BS][BS];
    int bx = get_group_id(0), by = get_group_id(1);
    int tx = get_local_id(0), ty = get_local_id(1);
    int aBegin = wA * BS * by;
    int aEnd = aBegin + wA - 1;
    int aStep = BS;
    int bBegin = BS * bx;
    int bStep = BS * wB;
    float Csub = 0.0f;
    for (int a = aBegin, b = bBegin; a <= aEnd; a += aStep, b += bStep) {
        As[ty][tx] = A[a + wA * ty + tx];
        Bs[ty][tx] = B[b + wB * ty + tx];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < BS; ++k)
            Csub += As[ty][k] * Bs[k][tx];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    int c = wB * BS * by + BS * bx;
    float result = Csub;
    if (alpha != 1.0f)
        result *= alpha;
    if (beta != 0.0f)
        result += beta * C[c + wB * ty + tx];
    C[c + wB * ty + tx] = result;
}
"""

TWO_VARIABLES_TOML = """\
source = "two_variables.cl"
kernel = "gemm_ab"
[sizes]
M = 8
K = 12
N = 8
MN = 64
MK = 96
KN = 96
[launch]
global_size = ["N", "M"]
local_size = [4, 4]
[args]
C = { shape = ["MN"], access = "inout" }
A = { shape = ["MK"], access = "in" }
B = { shape = ["KN"], access = "in" }
wA = "K"
wB = "N"
alpha = 1.5
beta = "1 / 2"
[reference]
function = "refs.py:scaled"
"""

SWITCH = """\
/* y_i = a band of row i of A weighted by the distance to the diagonal, then scaled */
__kernel void banded(__global const float *A, __global float *y, const int n)
{
    const int i = get_global_id(0);
    float s = 0.0f;
    for (int j = 0; j < n; j++) {
        switch (j - i) {
        case -1:
            s += 0.5f * A[i * n + j];
            break;
        case 0:
            s += A[i * n + j];
            /* fall through */
        case 1:
            s += 2.0f * A[i * n + j];
            break;
        case 2:
            continue;
        default:
            if (j > i + 3)
                break;
            s -= A[i * n + j];
        }
        s *= 1.0f;
    }
    float scale;
    switch (i % 3) {
    case 0: scale = 1.0f; break;
    case 1: scale = 2.0f; break;
    default: scale = 4.0f; break;
    }
    y[i] = scale * s;
}
"""

SWITCH_TOML = """\
source = "switch.cl"
kernel = "banded"
[sizes]
n = 8
[launch]
global_size = ["n"]
local_size = [4]
[args]
A = { shape = ["n", "n"], access = "in" }
y = { shape = ["n"], access = "out" }
n = "n"
[reference]
function = "refs.py:banded"
"""

VECTORS = """\
/* C = A B with float4 elements: each work-item computes WIDTH consecutive columns of one
   row; the tiles are a local array of float4 and a __local float4 * argument the host
   sizes, the accumulator a private array of float4 */
typedef float4 floatX;
#define WIDTH 4
__kernel void gemm_vec(const int M, const int N, const int K, __global const floatX *A,
                       __global const floatX *B, __global floatX *C, __local floatX *Bsub)
{
    __local floatX Asub[TS][TS / WIDTH];
    const int row = get_local_id(1);
    const int col = get_local_id(0);
    const int globalRow = TS * get_group_id(1) + row;
    const int globalCol = (TS / WIDTH) * get_group_id(0) + col;
    floatX acc[1];
    acc[0] = (floatX)(0.0f);
    for (int t = 0; t < K / TS; t++) {
        Asub[row][col] = A[globalRow * (K / WIDTH) + t * (TS / WIDTH) + col];
        Bsub[row * (TS / WIDTH) + col] = B[(t * TS + row) * (N / WIDTH) + globalCol];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TS / WIDTH; k++) {
            const floatX a = Asub[row][k];
            acc[0] += a.x * Bsub[(WIDTH * k) * (TS / WIDTH) + col]
                    + a.y * Bsub[(WIDTH * k + 1) * (TS / WIDTH) + col]
                    + a.z * Bsub[(WIDTH * k + 2) * (TS / WIDTH) + col]
                    + a.w * Bsub[(WIDTH * k + 3) * (TS / WIDTH) + col];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float2 low[1];
    low[0] = (float2)(acc[0].x, acc[0].y);
    low[0].y *= 1.0f;
    C[globalRow * (N / WIDTH) + globalCol] = (floatX)(low[0].x, low[0].y, acc[0].z, acc[0].w);
}
"""

VECTORS_TOML = """\
source = "vectors.cl"
kernel = "gemm_vec"
build_options = "-DTS=8"
[sizes]
M = 8
N = 16
K = 16
[launch]
global_size = ["N // 4", "M"]
local_size = ["TS // 4", "TS"]
[args]
M = "M"
N = "N"
K = "K"
A = { shape = ["M", "K"], access = "in" }
B = { shape = ["K", "N"], access = "in" }
C = { shape = ["M", "N"], access = "out" }
Bsub = { shape = ["TS", "TS // 4"] }
[reference]
function = "refs.py:product"
"""

LOCAL_POINTER = """\
/* y = the sum of each row of X, reduced in local memory through a pointer into it */
__kernel void row_sums(__global const float *X, __global float *y, const int cols,
                       __local float *partial)
{
    const int row = get_group_id(0), lid = get_local_id(0);
    float s = 0.0f;
    for (int c = lid; c < cols; c += WG)
        s += X[row * cols + c];
    partial[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int step = WG / 2; step > 0; step >>= 1) {
        volatile __local float *p = partial + lid;
        if (lid < step)
            p[0] += p[step];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        y[row] = partial[0];
}
"""

LOCAL_POINTER_TOML = """\
source = "local_pointer.cl"
kernel = "row_sums"
build_options = "-DWG=8"
[sizes]
rows = 3
cols = 20
[launch]
global_size = ["rows * WG"]
local_size = ["WG"]
[args]
X = { shape = ["rows", "cols"], access = "in" }
y = { shape = ["rows"], access = "out" }
cols = "cols"
partial = { local_bytes = "WG * 4" }
[reference]
function = "refs.py:row_sums"
"""

REFERENCES = """\
import numpy as np


def transposed(inputs):
    return {"out": inputs["in"].T}


def row_sums(inputs):
    return {"y": inputs["X"].sum(axis=1)}


def matvec(inputs):
    return {"y": inputs["A"] @ inputs["x"]}


def product(inputs):
    return {"C": inputs["A"] @ inputs["B"]}


def scaled(inputs):
    a, b = inputs["A"].reshape(8, 12), inputs["B"].reshape(12, 8)
    return {"C": (1.5 * a @ b).ravel() + 0.5 * inputs["C"]}


def banded(inputs):
    a = inputs["A"]
    n = a.shape[0]
    y = np.zeros(n)
    for i in range(n):
        s = 0.0
        for j in range(n):
            d = j - i
            if d == -1:
                s += 0.5 * a[i, j]
            elif d in (0, 1):
                s += (3.0 if d == 0 else 2.0) * a[i, j]
            elif d != 2 and j <= i + 3:
                s -= a[i, j]
        y[i] = (1.0, 2.0, 4.0)[i % 3] * s
    return {"y": y}
"""

FILES = {"transpose.cl": TRANSPOSE, "transpose.toml": TRANSPOSE_TOML,
         "matvec.cl": MATVEC, "matvec.toml": MATVEC_TOML,
         "do_while.cl": DO_WHILE, "do_while.toml": DO_WHILE_TOML,
         "two_variables.cl": TWO_VARIABLES, "two_variables.toml": TWO_VARIABLES_TOML,
         "switch.cl": SWITCH, "switch.toml": SWITCH_TOML,
         "vectors.cl": VECTORS, "vectors.toml": VECTORS_TOML,
         "local_pointer.cl": LOCAL_POINTER, "local_pointer.toml": LOCAL_POINTER_TOML,
         "refs.py": REFERENCES}

NAMES = ("transpose", "matvec", "do_while", "two_variables", "switch", "vectors",
         "local_pointer")


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("constructs")
    for name, text in FILES.items():
        (root / name).write_text(text)
    return root


def closed_forms(name: str) -> dict:
    """Exact counts of each kernel at its launch file's sizes, worked by hand."""
    if name == "transpose":          # every element through local memory once
        w, h = 12, 8
        return {"global_load_elems": w * h, "global_store_elems": w * h,
                "local_store_elems": w * h, "local_load_elems": w * h,
                "barriers": (w // 4) * (h // 4), "flop": 0}
    if name == "matvec":             # 10 of the 16 work-items: 7 products each
        return {"global_load_elems": 10 * 2 * 7, "global_store_elems": 10,
                "flop": 10 * 2 * 7}
    if name in ("do_while", "two_variables"):   # 8 x 8 x 12 tiled by 4
        m, n, k, t = 8, 8, 12, 4
        steps = k // t
        scale = {"do_while": (0, 0), "two_variables": (1, 3)}[name]
        return {"global_load_elems": 2 * m * n * steps + scale[0] * m * n,
                "global_store_elems": m * n,
                "local_store_elems": 2 * m * n * steps, "local_load_elems": 2 * m * n * k,
                "barriers": 2 * steps * (m // t) * (n // t),
                "flop": 2 * m * n * k + scale[1] * m * n}
    if name == "switch":
        n = 8
        band = {-1: 2, 0: 3, 1: 2}   # FLOPs of each case that reads A
        loads = sum(1 for i in range(n) for j in range(n)
                    if j - i in band or (j - i != 2 and j <= i + 3))
        flop = sum(band[j - i] if j - i in band else 1 if j <= i + 3 else 0
                   for i in range(n) for j in range(n) if j - i != 2)
        flop += sum(1 for i in range(n) for j in range(n) if j - i != 2)   # s *= 1.0f
        return {"global_load_elems": loads + sum(1 for i in range(n) for j in range(n)
                                                  if j - i == 0),
                "global_store_elems": n, "flop": flop + n}
    if name == "vectors":            # M x N / 4 work-items of 4 columns; tiles of 8
        m, n, k, t = 8, 16, 16, 8
        items, steps = m * n // 4, k // t
        return {"global_load_elems": 2 * 4 * items * steps, "global_store_elems": m * n,
                "local_store_elems": 2 * 4 * items * steps,
                "local_load_elems": items * steps * (t // 4) * 4 * 5,
                "barriers": 2 * steps * (m // t) * (n // t),
                "flop": items * 4 * (steps * (t // 4) * 8) + items}
    if name == "local_pointer":      # 3 rows of 20 through 8 work-items, a tree of 3 steps
        rows, cols, wg = 3, 20, 8
        return {"global_load_elems": rows * cols, "global_store_elems": rows,
                "local_store_elems": rows * (wg + wg - 1),
                "local_load_elems": rows * (2 * (wg - 1) + 1),
                "barriers": rows * 4, "flop": rows * (cols + wg - 1)}
    raise KeyError(name)


@pytest.mark.parametrize("name", NAMES)
def test_counts_equal_closed_forms_and_the_kernel_is_clean(folder, name):
    sch = launch_file.load(folder / f"{name}.toml")
    counts = tt.simulate(sch, compute_values=False).counts.to_dict()
    expected = closed_forms(name)
    assert {k: counts[k] for k in expected} == expected
    assert tt.check(sch, seed=3) == []


@pytest.mark.parametrize("name", NAMES)
def test_simulated_outputs_equal_the_reference(folder, name):
    sch = launch_file.load(folder / f"{name}.toml")
    ref = launch_file.reference_function(folder / f"{name}.toml")
    rng = np.random.default_rng(5)
    inputs = {a.name: rng.standard_normal(tuple(sch.param_values[d] for d in a.shape))
              .astype(np.float32) for a in sch.arrays if a.is_input}
    want = ref({k: v.astype(np.float64) for k, v in inputs.items()})
    got = tt.simulate(sch, inputs).outputs
    for out, value in want.items():
        assert np.allclose(got[out], value, rtol=1e-5, atol=1e-5), out


def test_the_integers_assigned_again_are_assigned_in_the_schedule(folder):
    sch = launch_file.load(folder / "transpose.toml")
    assigned = [s.name for s in walk_statements(sch.body) if isinstance(s, S.AssignInt)]
    assert assigned == ["x", "y"]
    loops = [s for s in walk_statements(launch_file.load(folder / "two_variables.toml").body)
             if isinstance(s, S.While)]
    assert [len(loop.update) for loop in loops] == [2]


def test_a_branch_on_beta_is_a_comparison_of_the_launch_s_floats(folder, tmp_path):
    """With ``beta = 0`` the kernel reads no C and scales by alpha only."""
    for f in ("two_variables.cl", "refs.py"):
        (tmp_path / f).write_text((folder / f).read_text())
    toml = tmp_path / "two_variables.toml"
    toml.write_text(TWO_VARIABLES_TOML.replace('beta = "1 / 2"', "beta = 0.0")
                    .replace("alpha = 1.5", "alpha = 1.0"))
    sch = launch_file.load(toml)
    conds = [s.cond for s in walk_statements(sch.body) if isinstance(s, S.If)]
    assert [type(c).__name__ for c in conds] == ["FloatCompare", "FloatCompare"]
    counts = tt.simulate(sch, compute_values=False).counts
    assert counts.global_load_elems == 2 * 8 * 8 * 3
    assert counts.flop == 2 * 8 * 8 * 12


RENDERED = ("two_variables", "switch", "vectors")
"""The kernels whose constructs the code generator renders from new IR (a float
comparison, the switch's flag, vector arrays), also run as rendered."""


@pytest.mark.parametrize("name", NAMES + tuple(f"{n}:rendered" for n in RENDERED))
def test_runs_on_pocl_equal_to_the_reference(folder, pocl, name):
    name, _, rendered = name.partition(":")
    sch = launch_file.load(folder / f"{name}.toml")
    if rendered:
        sch = dataclasses.replace(sch, extra={})
    ref = launch_file.reference_function(folder / f"{name}.toml")
    result = tt.run(sch, pocl, repeat=10, warmup=1, reference=ref, seed=7)
    assert result.check.ok


@pytest.mark.parametrize("name", NAMES + tuple(f"{n}:rendered" for n in RENDERED))
def test_oclgrind_counts_equal_the_simulator(folder, name):
    from tiletraffic.gpu.oclgrind.crosscheck import compare_counts
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available
    if not oclgrind_available():
        pytest.skip("no Oclgrind platform")
    name, _, rendered = name.partition(":")
    sch = launch_file.load(folder / f"{name}.toml")
    if rendered:
        sch = dataclasses.replace(sch, extra={})
    comparison = compare_counts(sch)
    assert comparison.equal, comparison.to_dict()
    assert comparison.oclgrind["global_load_elems"] > 0


SWITCH_IN_LOOP = """\
__kernel void k(__global const float *A, __global float *C)
{
    const int i = get_global_id(0);
    float s = 0.0f;
    for (int j = 0; j < 4; j++) {
        switch ((i + j) % 4) {
        case 0: s += A[j]; break;
        case 1: case 2: s *= 2.0f; break;
        default: BODY
        }
    }
    C[i] = s;
}
"""


@pytest.mark.parametrize("default, flag", [("s += 1.0f; break;", False),
                                           ("{ if (i == 3) break; s += 1.0f; }", True)])
def test_a_switch_is_an_if_chain_unless_it_falls_through_or_breaks_inside_a_statement(
        default, flag):
    """Sections that each end with ``break`` are an ``if``/``else`` chain (no integer
    assigned, the loop still counted); a ``break`` inside an ``if`` runs as C does through
    a flag. Both compute what C computes."""
    sch = tt.from_opencl(SWITCH_IN_LOOP.replace("BODY", default), "k", [8], [4],
                         {"A": {"shape": [8], "access": "in"},
                          "C": {"shape": [8], "access": "out"}})
    kinds = {type(s).__name__ for s in walk_statements(sch.body)}
    assert ("DeclareInt" in kinds) == flag
    assert "For" in kinds and "While" not in kinds
    a = np.arange(1, 9, dtype=np.float32)
    want = []
    for i in range(8):
        s = 0.0
        for j in range(4):
            case = (i + j) % 4
            if case == 0:
                s += a[j]
            elif case in (1, 2):
                s *= 2.0
            elif not (flag and i == 3):
                s += 1.0
        want.append(s)
    assert np.array_equal(tt.simulate(sch, {"A": a}).outputs["C"], np.array(want, np.float32))
