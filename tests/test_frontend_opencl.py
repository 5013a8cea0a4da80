"""The OpenCL C front end: each construct of the subset, parsed from C text, simulated with
values against numpy (float64, tolerance from the terms summed) and counted as worked by
hand."""
from __future__ import annotations

import numpy as np
import pytest

import tiletraffic as tt
from tiletraffic.simulator.ir import nodes as S


def run(source, global_size, local_size, args, build_options="", seed=0):
    sch = tt.from_opencl(source, "k", global_size, local_size, args, build_options)
    rng = np.random.default_rng(seed)
    p = sch.param_values
    inputs = {a.name: rng.standard_normal([p[d] for d in a.shape]).astype(np.float32)
              for a in sch.arrays if a.is_input}
    result = tt.simulate(sch, inputs)
    return sch, inputs, result


def assert_close(actual, expected, terms=1):
    eps = np.finfo(np.float32).eps
    bound = 4 * terms * eps * (np.abs(expected) + 1)
    assert np.all(np.abs(np.asarray(actual, np.float64) - expected) <= bound)


def test_subtraction_fma_min_max_shifts_and_uint():
    src = """
    __kernel void k(__global const float *A, __global const float *B, __global float *C,
                    const uint n) {
        const uint i = get_global_id(0);
        const int j = max(0, min((int)i, 7)) << 1;   /* 0, 2, ..., 14 */
        if (i < n)
            C[i] = fma(A[i], 2.0f, -B[i]) - A[j >> 1] * 0.5f;
    }"""
    n = 50
    buf = {"shape": [n], "access": "in"}
    sch, x, r = run(src, [64], [16], {"A": buf, "B": buf, "C": {"shape": [n], "access": "out"},
                                      "n": n})
    a, b = x["A"].astype(np.float64), x["B"].astype(np.float64)
    j = np.minimum(np.arange(n), 7)
    assert_close(r.outputs["C"], a * 2 - b - a[j] * 0.5, 4)
    # per element: *, +, -, *  = 4 FLOPs (the negation of B counts none)
    assert r.counts.flop == 4 * n
    assert r.counts.global_load_elems == 3 * n


def test_vectors_pointer_casts_and_float4_buffers():
    src = """
    __kernel void k(__global const float4 *A, __global const float *B, __global float *C) {
        const int i = get_global_id(0);
        float4 a = A[i];
        float4 b = vload4(i, B);
        float4 s = a + b * 2.0f;
        vstore4(s, i, C);
        *(__global float4 *)&C[4 * i + 64] = (float4)(a.x, a.y, b.z, b.w);
    }"""
    sch, x, r = run(src, [16], [8], {"A": {"shape": [64], "access": "in"},
                                     "B": {"shape": [64], "access": "in"},
                                     "C": {"shape": [128], "access": "out"}})
    a, b = x["A"].astype(np.float64), x["B"].astype(np.float64)
    assert_close(r.outputs["C"][:64], a + 2 * b, 2)
    mixed = np.where(np.arange(64) % 4 < 2, a, b)
    assert_close(r.outputs["C"][64:], mixed)
    assert r.counts.global_load_elems == 128 and r.counts.global_store_elems == 128
    assert r.counts.flop == 2 * 64
    kinds = {type(s).__name__ for s in sch.body}
    assert {"VectorLoad", "VectorStore"} <= kinds


def test_a_scalar_broadcast_into_a_vector_is_evaluated_once():
    """``b * s[0]`` and ``(float4)(x[i] * 3.0f)`` load and multiply the scalar once per
    work-item, as C does, not once per component."""
    src = """
    __kernel void k(__global const float *x, __constant float *s, __global float *y) {
        const int i = get_global_id(0);
        float4 b = vload4(i, x);
        vstore4(b * s[0], i, y);
        vstore4((float4)(x[i] * 3.0f), i + 16, y);
    }"""
    sch, x, r = run(src, [16], [8], {"x": {"shape": [64], "access": "in"},
                                     "s": {"shape": [1], "access": "in"},
                                     "y": {"shape": [128], "access": "out"}})
    xs, s0 = x["x"].astype(np.float64), float(x["s"][0])
    assert_close(r.outputs["y"][:64], xs * s0)
    assert_close(r.outputs["y"][64:], np.repeat(xs[:16] * 3, 4))
    # per work-item: one float4 load, s[0] once, x[i] once; 4 + 1 multiplies
    assert r.counts.global_load_elems == 16 * (4 + 1 + 1)
    assert r.counts.flop == 16 * (4 + 1)


def test_local_arrays_helpers_unroll_defines_and_countdown_loops():
    src = """
    #if !defined(WG)
    #error WG must be given
    #endif
    static inline float twice(float v) { return v + v; }
    static inline int mirror(int i) { return WG - 1 - i; }
    __kernel void k(__global const float *A, __global float *C) {
        __local float t[2][WG];
        float acc[2] = {0};
        const int l = get_local_id(0);
        const int g = get_group_id(0);
        t[0][l] = A[g * WG + l];
        t[1][mirror(l)] = twice(A[g * WG + l]);
        barrier(CLK_LOCAL_MEM_FENCE);
    #pragma unroll
        for (int r = 0; r < 2; r++)
            acc[r] += t[r][l];
        for (int s = WG / 2; s > 0; s >>= 1) {   /* a tree: unrolled, s constant */
            if (l < s)
                t[0][l] += t[0][l + s];
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        C[g * WG + l] = acc[0] + acc[1];
        if (l == 0)
            C[get_num_groups(0) * WG + g] = t[0][0];
    }"""
    wg, groups = 8, 3
    sch, x, r = run(src, [wg * groups], [wg],
                    {"A": {"shape": [wg * groups], "access": "in"},
                     "C": {"shape": [wg * groups + groups], "access": "out"}},
                    build_options=f"-DWG={wg}")
    a = x["A"].astype(np.float64).reshape(groups, wg)
    assert_close(r.outputs["C"][:wg * groups], (a + 2 * a[:, ::-1]).reshape(-1), 4)
    assert_close(r.outputs["C"][wg * groups:], a.sum(axis=1), wg)
    assert r.counts.barriers == groups * (1 + 3)
    assert sch.local_arrays[0].dims[1].name == "WG"
    with pytest.raises(ValueError, match="WG must be given"):
        tt.from_opencl(src, "k", [8], [8], {"A": {"shape": [8], "access": "in"},
                                            "C": {"shape": [9], "access": "out"}})


def test_flat_index_is_read_per_dimension():
    src = """
    __kernel void k(__global const float *A, __global float *C, const int M, const int N) {
        const int r = get_global_id(1), c = get_global_id(0);
        C[r * N + c] = A[(r + 1) * N + c - N] + A[c + r * N];
    }"""
    sch = tt.from_opencl(src, "k", [4, 3], [4, 3], {
        "A": {"shape": ["M", "N"], "access": "in"}, "C": {"shape": ["M", "N"], "access": "out"},
        "M": 3, "N": 4})
    store = sch.body[-1]
    assert isinstance(store, S.Store) and len(store.index) == 2
    assert isinstance(store.index[0], S.Var) and store.index[0].name == "r"
    # a column past N is out of bounds in its own dimension, as for the IR's own arrays
    bad = src.replace("A[c + r * N]", "A[r * N + c + 1]")
    sch = tt.from_opencl(bad, "k", [4, 3], [4, 3], {
        "A": {"shape": ["M", "N"], "access": "in"}, "C": {"shape": ["M", "N"], "access": "out"},
        "M": 3, "N": 4})
    assert "out-of-bounds" in {h.kind for h in tt.check(sch, seed=1)}


def test_includes_resolve_beside_the_source_and_reach_the_device_build(tmp_path):
    (tmp_path / "scale.h").write_text("#define SCALE 2.0f\n")
    (tmp_path / "k.cl").write_text(
        '#include "scale.h"\n__kernel void k(__global const float *A, __global float *C)\n'
        "{ const int i = get_global_id(0); C[i] = A[i] * SCALE; }\n")
    args = {"A": {"shape": [32], "access": "in"}, "C": {"shape": [32], "access": "out"}}
    sch = tt.from_opencl(tmp_path / "k.cl", "k", [32], [8], args)
    assert sch.extra["opencl"]["build_options"] == (f"-I{tmp_path.resolve()}",)
    assert tt.generate(sch).build_options == (f"-I{tmp_path.resolve()}",)
    x = np.arange(32, dtype=np.float32)
    assert np.array_equal(tt.simulate(sch, {"A": x}).outputs["C"], 2 * x)


def test_float_builtins_and_select():
    src = """
    __kernel void k(__global const float *A, __global const float *B, __global float *C) {
        const int i = get_global_id(0);
        const float a = A[i], b = B[i];
        C[i] = fmax(a, b) + fmin(a, 0.0f) * fabs(b) + sqrt(fabs(a)) + exp(b * 0.1f)
               + (i % 2 == 0 ? a : b) + select(a, b, i < 5) + max(a, 1.0f);
    }"""
    buf = {"shape": [16], "access": "in"}
    sch, x, r = run(src, [16], [8], {"A": buf, "B": buf, "C": {"shape": [16], "access": "out"}})
    a, b = x["A"].astype(np.float64), x["B"].astype(np.float64)
    i = np.arange(16)
    expected = (np.fmax(a, b) + np.fmin(a, 0) * np.abs(b) + np.sqrt(np.abs(a)) + np.exp(b * 0.1)
                + np.where(i % 2 == 0, a, b) + np.where(i < 5, b, a) + np.fmax(a, 1.0))
    assert_close(r.outputs["C"], expected, 16)


def test_shifts_and_masks_of_negative_values_round_down_as_opencl():
    """``x >> s`` of a negative int rounds toward minus infinity and ``x & (2^s - 1)`` is in
    0..2^s-1, as OpenCL C's two's-complement ints give them (numpy's ``>>`` and ``&`` on
    int64 agree); a truncating division would read other elements."""
    src = """
    __kernel void k(__global const float *A, __global float *C) {
        const int i = get_global_id(0);
        C[i] = A[((i - 9) >> 2) + 3] + A[(i - 13) & 7];
    }"""
    sch, x, r = run(src, [16], [8], {"A": {"shape": [16], "access": "in"},
                                     "C": {"shape": [16], "access": "out"}})
    a, i = x["A"].astype(np.float64), np.arange(16)
    assert_close(r.outputs["C"], a[((i - 9) >> 2) + 3] + a[(i - 13) & 7], 2)
    assert not tt.check(sch)


def test_unary_minus_on_a_float_is_a_negation_of_no_flop():
    src = """
    __kernel void k(__global const float *A, __global float *C) {
        const int i = get_global_id(0);
        C[i] = -A[i] * 2.0f;
        C[i + 16] = -(A[i] * 0.0f);
    }"""
    sch, x, r = run(src, [16], [16], {"A": {"shape": [16], "access": "in"},
                                      "C": {"shape": [32], "access": "out"}})
    stores = [s for s in sch.body if isinstance(s, S.Store)]
    assert isinstance(stores[0].value.left, S.FNeg) and isinstance(stores[1].value, S.FNeg)
    assert r.counts.flop == 2 * 16                      # the two *, no FLOP for either -
    a = x["A"]
    assert np.array_equal(r.outputs["C"][:16], -a * np.float32(2))
    # -(+0.0) is -0.0, as on the device (0.0f - x would give +0.0)
    assert np.array_equal(np.signbit(r.outputs["C"][16:]), a >= 0)
    from tiletraffic.gpu.codegen.generate import render_float
    assert render_float(stores[1].value)[0] == "(-(A[i] * 0.0f))"


def test_opencl_c_constants_are_understood():
    src = """
    __kernel void k(__global const float *A, __global float *C) {
        const int i = get_global_id(0);
        float lo = INFINITY;
        lo = fmin(lo, A[i]);
        C[i] = lo * M_PI_F;
        C[i + 8] = (i < INT_MAX && i > INT_MIN && (uint)i < UINT_MAX) ? FLT_MAX : -HUGE_VALF;
        C[i + 16] = NAN;
        C[i + 24] = FLT_MIN + FLT_EPSILON * M_E_F + M_SQRT2_F * M_PI_2_F;
        C[i + 32] = A[i] * (INT_MIN / 65536 + TS * 2);   /* folded: one FLOP */
    }"""
    sch, x, r = run(src, [8], [8], {"A": {"shape": [8], "access": "in"},
                                    "C": {"shape": [40], "access": "out"}}, "-DTS=4")
    f, a, c = np.float32, x["A"], r.outputs["C"]
    assert np.array_equal(c[:8], a * f(np.pi))
    assert np.array_equal(c[8:16], np.full(8, np.finfo(f).max))
    assert np.all(np.isnan(c[16:24]))
    tiny, eps = np.finfo(f).tiny, np.finfo(f).eps
    sum_ = tiny + eps * f(np.e) + f(np.sqrt(2)) * f(np.pi / 2)
    assert np.array_equal(c[24:32], np.full(8, sum_))
    assert np.array_equal(c[32:], a * f(-32768 + 8))
    assert r.counts.flop == 8 * (2 + 1 + 4 + 1)   # fmin *, select, + * + *, *
    constants = {s.name: s.init for s in sch.body if isinstance(s, S.DeclareFloat)}
    assert constants == {"lo": np.inf}


def test_a_source_may_redefine_a_built_in_constant():
    src = """
    #define M_PI_F 3.0f
    __kernel void k(__global float *C) { C[get_global_id(0)] = M_PI_F; }"""
    sch, _, r = run(src, [4], [4], {"C": {"shape": [4], "access": "out"}})
    assert np.array_equal(r.outputs["C"], np.full(4, 3.0, np.float32))


def test_integer_constants_in_a_float_expression_convert_as_c_converts_them():
    src = """
    __kernel void k(__global const float *A, __global float *C) {
        const int i = get_global_id(0);
        C[i] = A[i] * ((int)2.5f + (float)(7 / 2));
    }"""
    sch, x, r = run(src, [4], [4], {"A": {"shape": [4], "access": "in"},
                                    "C": {"shape": [4], "access": "out"}})
    assert np.array_equal(r.outputs["C"], x["A"] * np.float32(5))


BARRIER_HELPERS = """#define WG 16
static void sync_tile(void) { barrier(CLK_LOCAL_MEM_FENCE); }
static void stage(__local float *t, __global const float *A, int i, int l) {
    t[l] = A[i];
    sync_tile();
}
__kernel void k(__global const float *A, __global float *B) {
    __local float t[WG];
    const int i = get_global_id(0), l = get_local_id(0);
    if (l < 12)
        stage(t, A, i, l);
    if (l < 8)
        sync_tile();
    B[i] = t[WG - 1 - l];
    barrier(CLK_LOCAL_MEM_FENCE);
}"""


def test_barrier_divergence_names_the_barrier_in_the_source_and_the_calls_of_its_helper():
    """Each inlined copy of a helper's barrier is named by the barrier's line and the calls
    it was inlined through, not by its position among the schedule's barriers (which counts
    every copy); the kernel's own barrier is named by its line."""
    from tiletraffic.frontend.opencl.translate import parse_kernel
    sch = parse_kernel(BARRIER_HELPERS, "k", [32], [16],
                       {"A": {"shape": [32], "access": "in"},
                        "B": {"shape": [32], "access": "out"}}, path="k.cl")
    sources = []

    def walk(stmts):
        for s in stmts:
            if isinstance(s, S.Barrier):
                sources.append(s.source)
            for block in (getattr(s, "then", ()), getattr(s, "orelse", ()),
                          getattr(s, "body", ())):
                walk(block)

    walk(sch.body)
    assert sources == ["k.cl:2:31 in sync_tile, called at k.cl:5:5 in stage, called at "
                       "k.cl:11:9",
                       "k.cl:2:31 in sync_tile, called at k.cl:13:9",
                       "k.cl:15:5"]
    divergent = [h for h in tt.check(sch) if h.kind == "barrier-divergence"]
    assert [h.site for h in divergent] == [f"barrier at {s}" for s in sources[:2]]
    assert divergent[0].detail.startswith(
        f"the barrier at {sources[0]} is reached by some work-items of a work-group and not "
        "by others: e.g. only 12 of 16 work-items of work-group (0,) reach it")


def test_a_barrier_source_changes_neither_the_generated_code_nor_a_built_in_message():
    from tiletraffic.gpu.codegen.generate import render_block
    from tiletraffic.simulator.kernels.variants import VARIANTS
    for fence in (False, True):
        assert render_block((S.Barrier(fence, source="k.cl:2:31"),)) == \
            render_block((S.Barrier(fence),))
    sch = VARIANTS["gemm-tiled:early-return"].make(20, 20, 20, 16)
    divergent = [h for h in tt.check(sch) if h.kind == "barrier-divergence"]
    assert [h.site for h in divergent] == ["barrier 1", "barrier 2"]
    assert divergent[0].detail.startswith("barrier 1 (in source order) is reached")


RENAMED_LOOPS = """#define TS 16
__kernel void k(__global const float *A, __global float *B, const int N) {
    __local float tile[TS][TS];
    const int lx = get_local_id(0), ly = get_local_id(1);
    for (int r = 0; r < 1; r++)
        tile[ly + r][lx] = A[(ly + r) * N + lx];
    for (int r = 0; r < 1; r++)
        B[(ly + r) * N + lx] = tile[lx][ly + r];
}"""
"""A transpose through local memory with no barrier (a race), whose second loop variable
``r`` the front end renames to keep the IR's names unique."""


def test_a_race_in_opencl_c_names_the_accesses_by_the_source_and_their_places():
    """The race between the store and the load of the tile names both in the source's own
    names (``r``, not the IR's ``r_2``) with file:line:column, as barrier divergence does."""
    from tiletraffic.frontend.opencl.translate import parse_kernel
    sch = parse_kernel(RENAMED_LOOPS, "k", [16, 16], [16, 16],
                       {"A": {"shape": [16, 16], "access": "in"},
                        "B": {"shape": [16, 16], "access": "out"}, "N": 16}, path="k.cl")
    loops = [s for s in sch.body if isinstance(s, S.For)]
    assert [loop.var for loop in loops] == ["r", "r_2"]      # unique in the IR
    (race,) = [h for h in tt.check(sch) if h.kind == "data-race"]
    assert "r_2" not in race.detail
    assert race.detail.startswith(
        "read-after-write race on local memory (store tile[ly + r, lx] at k.cl:6:9 | "
        "load tile[lx, ly + r] at k.cl:8:32): e.g. in work-group (0, 0)"), race.detail
    assert race.site == ("read-after-write: store tile[ly + r, lx] at k.cl:6:9 | "
                         "load tile[lx, ly + r] at k.cl:8:32")


def test_an_access_source_changes_neither_the_generated_code_nor_the_counts():
    """The source of each load and store is for messages only: a kernel from OpenCL C
    renders and counts the same with every source removed, and a built-in schedule's
    messages keep the IR's text."""
    import dataclasses

    from tiletraffic.gpu.codegen.generate import generate
    from tiletraffic.frontend.opencl.translate import parse_kernel
    from tiletraffic.simulator.kernels.variants import VARIANTS

    sch = parse_kernel(RENAMED_LOOPS, "k", [16, 16], [16, 16],
                       {"A": {"shape": [16, 16], "access": "in"},
                        "B": {"shape": [16, 16], "access": "out"}, "N": 16}, path="k.cl")
    accesses = (S.Load, S.Store, S.VectorLoad, S.VectorStore)
    nodes = [n for n in walk_all(sch.body) if isinstance(n, accesses)]
    assert len(nodes) == 4 and all(n.source for n in nodes)
    bare = dataclasses.replace(sch, body=strip_sources(sch.body))
    assert not any(n.source for n in walk_all(bare.body) if isinstance(n, accesses))
    assert generate(bare).source == generate(sch).source
    assert tt.simulate(bare, compute_values=False, hazards="report").counts.to_dict() == \
        tt.simulate(sch, compute_values=False, hazards="report").counts.to_dict()
    (race,) = [h for h in tt.check(bare) if h.kind == "data-race"]   # the IR's own text
    assert "(store tile[ly + r, lx] | load tile[lx, ly + r_2])" in race.detail, race.detail
    sch = VARIANTS["gemm-tiled:no-second-barrier"].make(20, 20, 20, 16)
    assert [h.site for h in tt.check(sch)] == [
        "write-after-read: load tile_A[lr, k] | store tile_A[lr, lc]",
        "write-after-read: load tile_B[k, lc] | store tile_B[lr, lc]"]


def walk_all(stmts):
    from tiletraffic.simulator.ir.visitor import walk
    for s in stmts:
        yield from walk(s)


def strip_sources(stmts):
    """``stmts`` with the source of every load and store removed."""
    import dataclasses

    def strip(node):
        if not dataclasses.is_dataclass(node) or isinstance(node, type):
            return node
        changes = {}
        for f in dataclasses.fields(node):
            value = getattr(node, f.name)
            new = tuple(strip(v) for v in value) if isinstance(value, tuple) else strip(value)
            if new is not value and (not isinstance(value, tuple) or
                                     any(a is not b for a, b in zip(new, value))):
                changes[f.name] = new
        if getattr(node, "source", None) and isinstance(node, (S.Load, S.Store, S.VectorLoad,
                                                               S.VectorStore)):
            changes["source"] = None
        return dataclasses.replace(node, **changes) if changes else node
    return tuple(strip(s) for s in stmts)


def test_every_access_of_a_kernel_from_opencl_c_carries_its_source():
    """Scalar, vector (vload4, vstore4, float4 pointer casts and buffers) and compound
    accesses, and those of an inlined helper (with the call they were inlined through)."""
    from tiletraffic.frontend.opencl.translate import parse_kernel
    src = """void put(__global float *C, int i, float v) {
    C[i] += v;
}
__kernel void k(__global const float4 *A, __global const float *B, __global float *C) {
    const int i = get_global_id(0);
    float4 a = A[i];
    float4 b = vload4(i, B);
    vstore4(a + b, i, C);
    *(__global float4 *)&C[4 * i + 64] = (float4)(a.x, a.y, b.z, b.w);
    put(C, 128 + i, B[i]);
}"""
    sch = parse_kernel(src, "k", [16], [8], {"A": {"shape": [64], "access": "in"},
                                             "B": {"shape": [64], "access": "in"},
                                             "C": {"shape": [144], "access": "out"}},
                       path="k.cl")
    accesses = [n for n in walk_all(sch.body)
                if isinstance(n, (S.Load, S.Store, S.VectorLoad, S.VectorStore))]
    sources = sorted(n.source for n in accesses)
    assert sources == sorted([
        "A[i * 4] at k.cl:6:16", "B[i * 4] at k.cl:7:16", "C[i * 4] at k.cl:8:5",
        "C[(4 * i) + 64] at k.cl:9:5", "B[i] at k.cl:10:21",
        "C[128 + i] at k.cl:2:5 in put, called at k.cl:10:5",
        "C[128 + i] at k.cl:2:5 in put, called at k.cl:10:5"]), sources


def test_a_float_read_and_written_through_a_dereferenced_pointer():
    """``*(p + off)`` is the element ``p[off]``: a load where it is read, a store (or a
    load and a store for ``*= / += / -=``) where it is assigned, per dimension of the
    buffer's shape, in global and in local memory."""
    src = """
    __kernel void k(__global float *m, __global const float *a, const int n, const int t) {
        __local float row[8];
        const int i = get_global_id(0);
        *(row + i) = *(a + n * t + i);
        barrier(CLK_LOCAL_MEM_FENCE);
        if (i < n - 1 - t)
            *(m + n * (i + t + 1) + t) = *(a + n * (i + t + 1) + t) / *(row + t);
        *(m + i) *= 2.0f;
    }"""
    n, t = 8, 2
    sch, inputs, result = run(src, [8], [8], {
        "m": {"shape": ["n", "n"], "access": "inout"}, "a": {"shape": ["n", "n"], "access": "in"},
        "n": n, "t": t})
    a, m = inputs["a"].astype(np.float64), inputs["m"].astype(np.float64).copy()
    for i in range(n - 1 - t):
        m[i + t + 1, t] = a[i + t + 1, t] / a[t, t]
    m[0, :] *= 2
    assert_close(result.outputs["m"], m, terms=2)
    counts = result.counts
    assert counts.global_load_elems == 8 + 5 + 8 and counts.global_store_elems == 5 + 8
    stores = [s for s in walk_all(sch.body) if isinstance(s, S.Store) and s.array.name == "m"]
    assert stores and all(len(s.index) == 2 for s in stores)
    from tiletraffic.gpu.oclgrind.crosscheck import compare_counts
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available
    if oclgrind_available():
        comparison = compare_counts(sch)
        assert comparison.equal, comparison.to_dict()


def test_a_flat_index_of_a_three_dimensional_buffer_takes_every_multiple_of_a_row():
    """``r * (nq * np) + q * np + p`` over a ``(nr, nq, np)`` buffer is ``(r, q, p)``: a term
    whose factor is a multiple of a row's length belongs to the outer dimensions."""
    src = """
    __kernel void k(int nq, int np, __global const float *A, __global float *sum, int r) {
        int p = get_global_id(0), q = get_global_id(1);
        if (p < np && q < nq)
            sum[r * (nq * np) + q * np + p] = A[r * nq * np + q * np + p] + A[p + np * q];
    }"""
    args = {"nq": 5, "np": 6, "r": 2, "A": {"shape": [3, 5, 6], "access": "in"},
            "sum": {"shape": [3, 5, 6], "access": "inout"}}
    sch, inputs, result = run(src, [8, 5], [8, 1], args)
    assert tt.check(sch, seed=1) == []
    store = next(s for s in walk_all(sch.body) if isinstance(s, S.Store))
    assert isinstance(store.index[1], S.Var) and store.index[1].name == "q"
    a = inputs["A"].astype(np.float64)
    expected = inputs["sum"].astype(np.float64).copy()
    expected[2] = a[2] + a[0]
    assert_close(result.outputs["sum"], expected, terms=2)


GUARDED_TILE = """
__kernel void k(__global const float *A, __global float *C, const uint M, const uint K) {
    size_t col = get_global_id(0), row = get_global_id(1);
    __local float tile[4][5];
    size_t lc = get_local_id(0), lr = get_local_id(1);
    bool inside = row < M && col < K;
    bool shifted = inside && col + 1 < K;
    tile[lr][lc] = inside ? A[row * K + col] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    float right = shifted ? A[row * K + col + 1] * 2.0f : (!inside ? 1.0f : tile[lr][lc]);
    if (inside)
        C[row * K + col] = tile[lr][lc] + right;
}"""


def test_a_guarded_load_in_a_conditional_and_bool_conditions():
    """``c ? A[i] : 0.0f`` loads only where ``c`` holds (the loads counted are the taken
    branches'), and a ``bool`` declared from a condition is that condition where tested."""
    m, k = 6, 7
    sch, inputs, result = run(GUARDED_TILE, [8, 8], [4, 4], {
        "A": {"shape": ["M", "K"], "access": "in"}, "C": {"shape": ["M", "K"], "access": "out"},
        "M": m, "K": k})
    a = inputs["A"].astype(np.float64)
    right = np.empty_like(a)
    right[:, :-1] = 2 * a[:, 1:]
    right[:, -1] = a[:, -1]
    assert_close(result.outputs["C"], a + right, terms=2)
    assert result.counts.global_load_elems == m * k + m * (k - 1)
    assert tt.check(sch, seed=2) == []
    from tiletraffic.gpu.oclgrind.crosscheck import compare_counts
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available
    if oclgrind_available():
        comparison = compare_counts(sch)
        assert comparison.equal, comparison.to_dict()


def test_a_bool_reading_an_integer_the_kernel_assigns_is_refused_by_name():
    from tiletraffic.frontend.opencl.clang_ast import FrontendError
    src = GUARDED_TILE.replace("bool inside = row < M && col < K;",
                               "size_t r = row;\n    bool inside = r < M && col < K;\n    r += 1;")
    with pytest.raises(FrontendError, match=r":7:10: bool inside reads r, which the kernel assigns"):
        tt.from_opencl(src, "k", [8, 8], [4, 4], {
            "A": {"shape": ["M", "K"], "access": "in"},
            "C": {"shape": ["M", "K"], "access": "out"}, "M": 6, "K": 7})


def test_integer_clamp_in_an_index_is_min_of_max():
    src = """
    __kernel void k(__global const float *A, __global float *C, const int n) {
        const int i = get_global_id(0);
        const int j = clamp(i - 2, 0, n - 1);   /* nearest-edge neighbour */
        if (i < n)
            C[i] = A[j] + A[clamp(i + 3, 0, n - 1)];
    }"""
    n = 21
    sch, x, r = run(src, [32], [8], {"A": {"shape": [n], "access": "in"},
                                     "C": {"shape": [n], "access": "out"}, "n": n})
    a, i = x["A"].astype(np.float64), np.arange(n)
    assert_close(r.outputs["C"], a[np.clip(i - 2, 0, n - 1)] + a[np.clip(i + 3, 0, n - 1)], 2)
    assert r.counts.flop == n and r.counts.global_load_elems == 2 * n


def test_an_integer_declared_from_a_conditional_takes_each_work_items_branch():
    src = """
    __kernel void k(__global const float *A, __global const float *h, __global float *C,
                    const int Nh) {
        const int i = get_global_id(0);
        const int Nx = get_global_size(0);
        float res = 0.f;
        const int h_start = ((i + Nh / 2) >= Nx) ? i + Nh / 2 + 1 - Nx : 0;
        const int h_end = ((i - Nh / 2) < 0) ? i + Nh / 2 + 1 : Nh;
        for (int t = h_start; t < h_end; ++t)
            res += h[t] * A[i + Nh / 2 - t];
        C[i] = res;
    }"""
    n, taps = 16, 5
    sch, x, r = run(src, [n], [8], {"A": {"shape": [n], "access": "in"},
                                    "h": {"shape": [taps], "access": "in"},
                                    "C": {"shape": [n], "access": "out"}, "Nh": taps})
    a, h = x["A"].astype(np.float64), x["h"].astype(np.float64)
    expected = np.convolve(a, h)[taps // 2: taps // 2 + n]    # zero-padded, centred
    assert_close(r.outputs["C"], expected, taps)
    # taps inside the row: 5 per work-item, less 2 + 1 at each edge
    inside = sum(min(i + 2, n - 1) - max(i - 2, 0) + 1 for i in range(n))
    assert r.counts.global_load_elems == 2 * inside and r.counts.flop == 2 * inside


def test_a_flat_index_term_of_several_factors_is_a_multiple_of_a_plane():
    """``i + j * Nx + k * Nx * Ny`` with ``Ny`` a ``get_global_size`` over a ``(nz, ny, nx)``
    buffer is ``(k, j, i)``: the static factors of ``(k * Nx) * Ny`` multiply to a plane."""
    src = """
    __kernel void k(__global const float *A, __global float *B, const int Nx) {
        int i = get_global_id(0), j = get_global_id(1), k = get_global_id(2);
        int Ny = get_global_size(1);
        B[i + j * Nx + k * Nx * Ny] = 2.0f * A[i + j * Nx + k * Nx * Ny];
    }"""
    args = {"Nx": 8, "A": {"shape": [3, 4, 8], "access": "in"},
            "B": {"shape": [3, 4, 8], "access": "out"}}
    sch, inputs, result = run(src, [8, 4, 3], [8, 1, 1], args)
    assert tt.check(sch, seed=1) == []
    store = next(s for s in walk_all(sch.body) if isinstance(s, S.Store))
    assert [type(i).__name__ for i in store.index] != ["BinOp", "BinOp", "BinOp"]
    assert_close(result.outputs["B"], 2.0 * inputs["A"].astype(np.float64))


def test_a_helper_taking_and_returning_float2_values_is_inlined():
    src = """
    static inline float2 complex_mul(float2 a, float2 b) {
        float2 res = (float2) (0, 0);
        res.x = a.x * b.x - a.y * b.y;
        res.y = a.y * b.x + a.x * b.y;
        return res;
    }
    __kernel void k(__global float2 *z, __global const float2 *w, int n) {
        int i = get_global_id(0);
        if (i >= n) return;
        z[i] = complex_mul(z[i], w[i % 4]);
    }"""
    n = 12
    sch, x, r = run(src, [16], [8], {"z": {"shape": [n, 2], "access": "inout"},
                                     "w": {"shape": [4, 2], "access": "in"}, "n": n})
    z, w = x["z"].astype(np.float64), x["w"].astype(np.float64)
    zc, wc = z[:, 0] + 1j * z[:, 1], np.tile(w[:, 0] + 1j * w[:, 1], 3)
    p = zc * wc
    assert_close(r.outputs["z"], np.stack([p.real, p.imag], axis=1), 2)
    assert r.counts.flop == 6 * n and r.counts.global_load_elems == 4 * n
    assert r.counts.global_store_elems == 2 * n


def test_a_component_of_a_float2_buffer_element_is_read_and_written():
    """``g[i].y`` read loads the whole element, as the device compilers load it; ``g[i].x =``
    stores that one float."""
    src = """
    __kernel void k(__global const float2 *g, __global float2 *h, __global float *s, int n) {
        int i = get_global_id(0);
        if (i < n) {
            s[i] = g[i].y * 2.0f + g[i].x;
            h[i].x = g[i].y;
        }
    }"""
    n = 10
    sch, x, r = run(src, [16], [8], {"g": {"shape": [n, 2], "access": "in"},
                                     "h": {"shape": [n, 2], "access": "inout"},
                                     "s": {"shape": [n], "access": "out"}, "n": n})
    g = x["g"].astype(np.float64)
    assert_close(r.outputs["s"], g[:, 1] * 2 + g[:, 0], 2)
    h = x["h"].astype(np.float64).copy()
    h[:, 0] = g[:, 1]
    assert_close(r.outputs["h"], h)
    assert r.counts.global_store_elems == 2 * n and r.counts.global_load_elems == 6 * n
    from tiletraffic.gpu.oclgrind.crosscheck import compare_counts
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available
    if oclgrind_available():
        assert compare_counts(sch).equal


LOCAL_FLOAT4_SUM = """
__kernel void k(__global const float *X, __global float *y, __local float4 *partial) {
    const int lid = get_local_id(0);
    partial[lid] = (float4)(X[lid], 0.0f, 0.0f, 0.0f);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0)
        y[0] = partial[0].x + partial[7].x;
}"""


def test_a_local_vector_arguments_shape_counts_elements_of_its_type():
    args = {"X": {"shape": [8], "access": "in"}, "y": {"shape": [1], "access": "out"}}
    sch, x, r = run(LOCAL_FLOAT4_SUM, [8], [8], {**args, "partial": {"shape": [8]}})
    assert sch.local_mem_bytes == 8 * 16              # 8 float4
    assert_close(r.outputs["y"][0], x["X"][0] + x["X"][7], 2)
    same = tt.from_opencl(LOCAL_FLOAT4_SUM, "k", [8], [8],
                          {**args, "partial": {"local_bytes": 8 * 16}})
    assert same.local_mem_bytes == 8 * 16


def test_a_local_vector_shaped_with_its_width_last_but_indexed_flat_is_refused():
    from tiletraffic.frontend.opencl.clang_ast import FrontendError
    args = {"X": {"shape": [8], "access": "in"}, "y": {"shape": [1], "access": "out"},
            "partial": {"shape": [8, 4]}}
    with pytest.raises(FrontendError, match=r"^local argument partial of float4: shape \[8, 4\] "
                       r"counts float4 elements \(32 of them, 512 bytes\), but the kernel "
                       r"indexes it by one flat index: give shape \[8\] for 8 float4 "
                       r"\(128 bytes\), or \[32\] for 32 float4$"):
        tt.from_opencl(LOCAL_FLOAT4_SUM, "k", [8], [8], args)


def test_a_local_vector_shaped_with_its_width_last_and_indexed_by_rows_is_read_as_given():
    src = """
    __kernel void k(__global const float *X, __global float *y, __local float4 *t) {
        const int r = get_local_id(1), c = get_local_id(0);
        t[r * 4 + c] = (float4)(X[r * 4 + c]);
        barrier(CLK_LOCAL_MEM_FENCE);
        y[r * 4 + c] = t[((r + 1) % 8) * 4 + c].y;
    }"""
    sch, x, r = run(src, [4, 8], [4, 8], {"X": {"shape": [8, 4], "access": "in"},
                                          "y": {"shape": [8, 4], "access": "out"},
                                          "t": {"shape": [8, 4]}})
    assert sch.local_mem_bytes == 8 * 4 * 16          # 8 x 4 float4
    assert_close(r.outputs["y"], np.roll(x["X"], -1, axis=0))      # the next row


SWIZZLES = [  # (float2 or float4 source, its OpenCL C expression, the components it reads)
    ("float2", "a.yx", [1, 0]),
    ("float4", "a.wzyx", [3, 2, 1, 0]),
    ("float4", "a.s1032", [1, 0, 3, 2]),
    ("float4", "a.zwxy", [2, 3, 0, 1]),
    ("float4", "a.xxyy", [0, 0, 1, 1]),
    ("float2", "(float4)(a, a.yx)", [0, 1, 1, 0]),
    ("float4", "a.s31", [3, 1]),
    ("float4", "a.zx", [2, 0]),
    ("float4", "a.lo", [0, 1]),
    ("float4", "a.hi", [2, 3]),
    ("float4", "a.even", [0, 2]),
    ("float4", "a.odd", [1, 3]),
    ("float4", "a.s13", [1, 3]),
]


@pytest.mark.parametrize("in_type, expr, comps", SWIZZLES, ids=[s[1] for s in SWIZZLES])
def test_a_swizzle_reads_its_components_in_its_order(in_type, expr, comps):
    out_type = f"float{len(comps)}"
    src = f"""
__kernel void k(__global const {in_type} *x, __global {out_type} *y)
{{ int g = get_global_id(0); {in_type} a = x[g]; {out_type} b = {expr}; y[g] = b; }}
"""
    width = int(in_type[-1])
    sch = tt.from_opencl(src, "k", [4], [4], {
        "x": {"shape": [4, width], "access": "in"},
        "y": {"shape": [4, len(comps)], "access": "out"}})
    x = np.arange(4 * width, dtype=np.float32).reshape(4, width)
    assert np.array_equal(tt.simulate(sch, {"x": x}).outputs["y"], x[:, comps])


def test_a_reordering_swizzle_in_a_joined_vector_feeds_lo_plus_hi():
    src = """
__kernel void k(__global const float2 *x, __global const float4 *z, __global float *y)
{ int g = get_global_id(0); float2 a = x[g]; float4 b = z[g];
  float4 c = (float4)(a, a.yx) * b; float2 e = c.lo + c.hi; vstore2(e, g, y); }
"""
    sch = tt.from_opencl(src, "k", [4], [4], {
        "x": {"shape": [4, 2], "access": "in"}, "z": {"shape": [4, 4], "access": "in"},
        "y": {"shape": [8], "access": "out"}})
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    z = np.arange(16, dtype=np.float32).reshape(4, 4) + 1
    c = np.concatenate([x, x[:, ::-1]], axis=1) * z
    assert np.array_equal(tt.simulate(sch, {"x": x, "z": z}).outputs["y"],
                          (c[:, :2] + c[:, 2:]).reshape(8))


@pytest.mark.parametrize("statement, expected", [
    ("a = a.yx;", lambda x: x[:, ::-1]),
    ("a = a.yx + a;", lambda x: x[:, ::-1] + x),
    ("a += a.yx;", lambda x: x + x[:, ::-1]),
    ("a = -a.yx;", lambda x: -x[:, ::-1]),
    ("a = (float2)(a.y, a.x);", lambda x: x[:, ::-1]),
], ids=["swizzle", "sum", "+=", "negation", "literal"])
def test_a_vector_assigned_from_its_own_components_reads_them_before_it_changes(
        statement, expected):
    src = f"""
__kernel void k(__global const float2 *x, __global float2 *y)
{{ int g = get_global_id(0); float2 a = x[g]; {statement} y[g] = a; }}
"""
    sch = tt.from_opencl(src, "k", [4], [4], {"x": {"shape": [4, 2], "access": "in"},
                                              "y": {"shape": [4, 2], "access": "out"}})
    x = np.arange(8, dtype=np.float32).reshape(4, 2) + 1
    assert np.array_equal(tt.simulate(sch, {"x": x}).outputs["y"], expected(x))


@pytest.mark.parametrize("statement, expected", [
    ("a.yx = x[g];", lambda x: x[:, [1, 0, 2, 3]]),
    ("a.wzyx = a;", lambda x: x[:, ::-1]),
    ("a.hi = a.lo;", lambda x: x[:, [0, 1, 0, 1]]),
    ("a.s20 += (float2)(10.0f, 20.0f);", lambda x: x + [20, 0, 10, 0]),
], ids=["load", "whole", "hi", "+="])
def test_a_swizzle_assigned_writes_its_components_in_its_order(statement, expected):
    src = f"""
__kernel void k(__global const float4 *x, __global float4 *y)
{{ int g = get_global_id(0); float4 a = x[g]; {statement.replace("x[g]", "x[g].lo")}
   y[g] = a; }}
"""
    sch = tt.from_opencl(src, "k", [4], [4], {"x": {"shape": [4, 4], "access": "in"},
                                              "y": {"shape": [4, 4], "access": "out"}})
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    assert np.array_equal(tt.simulate(sch, {"x": x}).outputs["y"], expected(x))


def test_an_element_of_a_private_vector_array_assigned_from_its_own_swizzle():
    src = """
__kernel void k(__global const float2 *x, __global float2 *y)
{ int g = get_global_id(0); float2 c[2]; c[0] = x[g]; c[0] = c[0].yx;
  c[1] = c[0].yx + c[0]; y[g] = c[0] * c[1]; }
"""
    sch = tt.from_opencl(src, "k", [4], [4], {"x": {"shape": [4, 2], "access": "in"},
                                              "y": {"shape": [4, 2], "access": "out"}})
    x = np.arange(8, dtype=np.float32).reshape(4, 2) + 1
    c0 = x[:, ::-1]
    assert np.array_equal(tt.simulate(sch, {"x": x}).outputs["y"], c0 * (x + c0))
