"""The CUDA front end: what it reads (the built-in index variables, shared memory static and
dynamic, barriers of every spelling, templates, constants, casts, float4, headers), what it
refuses with a one-line message at the place in the source, the faults a check reports at
the source's places, and CUDA launch files."""
from __future__ import annotations

import numpy as np
import pytest

import tiletraffic as tt
from tiletraffic.frontend import launch_file
from tiletraffic.frontend.cuda.translate import kernel_names, launch_geometry, parse_kernel
from tiletraffic.frontend.opencl.clang_ast import FrontendError
from tiletraffic.simulator.ir import nodes as S


def buf(shape, access):
    return {"shape": list(shape), "access": access}


COPY_ARGS = {"A": buf([64], "in"), "B": buf([64], "out")}


def counts(sch):
    return tt.simulate(sch, compute_values=False).counts


def test_index_variables_and_includes_of_a_real_file():
    src = """#include <cstdio>
#include <cstdlib>
#include <cassert>
#include <cuda_runtime.h>
#include <stdio.h>
__global__ void copy(const float *__restrict__ A, float *__restrict__ B) {
  int i = blockIdx.x * blockDim.x + threadIdx.x + threadIdx.y * 0 + gridDim.y * 0;
  assert(i < 64);
  B[i] = __ldg(&A[i]);
}
int main() {
  float *d;
  cudaMalloc(&d, 64 * sizeof(float));
  copy<<<2, 32>>>(d, d);
  cudaDeviceSynchronize();
  printf("done\\n");
  free(malloc(4));
  return 0;
}
"""
    assert kernel_names(src, "copy.cu") == ["copy"]
    sch = parse_kernel(src, "copy", [2], [32], COPY_ARGS, path="copy.cu")
    c = counts(sch)
    assert (c.global_load_elems, c.global_store_elems) == (64, 64)
    assert tt.check(sch, seed=1) == []
    assert sch.extra["cuda"]["grid"] == (2,) and sch.extra["cuda"]["block"] == (32,)


def test_launch_geometry_is_cuda_order():
    assert launch_geometry([4, 2], [16, 8]) == ((64, 16), (16, 8))
    assert launch_geometry([4], [8, 2]) == ((32, 2), (8, 2))
    with pytest.raises(FrontendError, match=r"block\[1\] = 0 is not a positive integer"):
        launch_geometry([1], [8, 0])


def test_template_arguments_bool_default_and_errors():
    src = """
template <const int W, bool SCALE, int H = W / 2>
__global__ void k(const float *A, float *B) {
  int i = blockIdx.x * W + threadIdx.x;
  if (SCALE) B[i] = 2.0f * A[i]; else B[i] = A[i];
  if (threadIdx.x < H) B[i] = B[i] + 1.0f;
}
"""
    sch = parse_kernel(src, "k", [2], [32], COPY_ARGS, template={"W": 32, "SCALE": True})
    assert sch.extra["cuda"]["template"] == {"W": "32", "SCALE": "true", "H": "16"}
    c = counts(sch)
    assert c.flop == 64 + 32         # the products, and H = 16 additions per block
    plain = parse_kernel(src, "k", [2], [32], COPY_ARGS, template={"W": 32, "SCALE": False})
    assert counts(plain).flop == 32
    with pytest.raises(FrontendError, match="template parameter SCALE of kernel k has no value"):
        parse_kernel(src, "k", [2], [32], COPY_ARGS, template={"W": 32})
    with pytest.raises(FrontendError, match="has no template parameter Q"):
        parse_kernel(src, "k", [2], [32], COPY_ARGS, template={"W": 32, "SCALE": 1, "Q": 2})
    with pytest.raises(FrontendError, match="SCALE is a bool"):
        parse_kernel(src, "k", [2], [32], COPY_ARGS, template={"W": 32, "SCALE": 7})


def test_message_in_a_template_instance_names_the_source_line():
    src = """template <int W>
__global__ void k(const float *A, float *B) {
  int i = threadIdx.x;
  B[i] = A[i];
  atomicAdd(&B[0], 1.0f);
}
"""
    with pytest.raises(FrontendError) as err:
        parse_kernel(src, "k", [2], [32], COPY_ARGS, template={"W": 4}, path="t.cu")
    assert str(err.value).startswith("t.cu:5:3: atomicAdd: atomics order updates")


def test_shared_memory_declared_anywhere_and_dynamic():
    src = """
__global__ void k(const float *A, float *B) {
  extern __shared__ float dyn[];
  int i = blockIdx.x * 32 + threadIdx.x;
  for (int r = 0; r < 2; ++r) {
    __shared__ float stage[32];
    stage[threadIdx.x] = A[i];
    __syncthreads();
    dyn[31 - threadIdx.x] = stage[threadIdx.x];
    __syncthreads();
  }
  B[i] = dyn[threadIdx.x];
}
"""
    sch = parse_kernel(src, "k", [2], [32], COPY_ARGS, shared_bytes=128)
    assert sorted(a.size_bytes for a in sch.local_arrays) == [128, 128]
    c = counts(sch)
    assert (c.local_store_elems, c.local_load_elems, c.barriers) == (256, 192, 8)
    assert tt.check(sch, seed=1) == []
    with pytest.raises(FrontendError, match="extern __shared__ dyn: the launch gives no "
                                            "shared_bytes"):
        parse_kernel(src, "k", [2], [32], COPY_ARGS)


def test_cooperative_groups_sync_is_a_barrier():
    src = """#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void k(const float *A, float *B) {
  cg::thread_block block = cg::this_thread_block();
  __shared__ float s[32];
  s[threadIdx.x] = A[blockIdx.x * 32 + threadIdx.x];
  block.sync();
  B[blockIdx.x * 32 + threadIdx.x] = s[31 - threadIdx.x];
  cg::sync(block);
}
"""
    sch = parse_kernel(src, "k", [2], [32], COPY_ARGS, path="cg.cu")
    barriers = [n for n in sch.body if isinstance(n, S.Barrier)]
    assert [b.source for b in barriers] == ["cg.cu:7:3", "cg.cu:9:3"]
    assert tt.check(sch, seed=1) == []


def test_constants_casts_and_float4():
    src = """
constexpr int SHIFT = 2;
constexpr float SCALE = 0.5f;
__device__ __forceinline__ float twice(float x) { return 2.0f * x; }
__global__ void k(const float *A, float *B, int n) {
  const int i = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
  float4 v = reinterpret_cast<const float4 *>(&A[i])[0];
  float s = static_cast<float>(SHIFT) * SCALE + (float)n;
  reinterpret_cast<float4 *>(&B[i])[0] = make_float4(twice(v.x), v.y + s, fmaxf(v.z, 0.0f), v.w);
}
"""
    sch = parse_kernel(src, "k", [2], [8], {**COPY_ARGS, "n": 3})
    c = counts(sch)
    assert (c.global_load_elems, c.global_store_elems) == (64, 64)
    vector_ops = [n for n in sch.body if isinstance(n, (S.VectorLoad, S.VectorStore))]
    assert len(vector_ops) == 2


def test_make_float2_of_swapped_components_swaps_them():
    src = """__global__ void k(const float *A, float *B) {
  int i = (blockIdx.x * blockDim.x + threadIdx.x) * 2;
  float2 a = reinterpret_cast<const float2 *>(&A[i])[0];
  float2 b = make_float2(a.y, a.x);
  reinterpret_cast<float2 *>(&B[i])[0] = b;
}
"""
    sch = parse_kernel(src, "k", [2], [16], COPY_ARGS)
    a = np.arange(64, dtype=np.float32)
    out = tt.simulate(sch, {"A": a}).outputs["B"]
    assert np.array_equal(out, a.reshape(32, 2)[:, ::-1].reshape(64))


def test_double_arithmetic_is_read_in_float32_with_a_warning_at_its_place():
    from tiletraffic.frontend.opencl.floats import DoubleArithmeticWarning
    src = """__global__ void k(const float *A, float *B) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  B[i] = LITERAL * A[i];
}
"""
    with pytest.warns(DoubleArithmeticWarning, match=r"<source>:3:10: '\*' computes in double"):
        sch = parse_kernel(src.replace("LITERAL", "0.1"), "k", [2], [32], COPY_ARGS)
    a = np.arange(64, dtype=np.float32)
    out = tt.simulate(sch, {"A": a}).outputs["B"]
    assert np.array_equal(out, np.float32(0.1) * a)       # simulated in float32
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", DoubleArithmeticWarning)
        parse_kernel(src.replace("LITERAL", "0.1f"), "k", [2], [32], COPY_ARGS)


@pytest.mark.parametrize("call,message", [
    ("atomicAdd(&B[0], 1.0f);", "atomicAdd: atomics order updates"),
    ("__syncwarp();", "__syncwarp synchronises one warp"),
    ("__threadfence();", "__threadfence orders memory without synchronising"),
    ("printf(\"%d\", 1);", "printf"),
])
def test_refused_by_name_at_the_place(call, message):
    src = f"""#include <cstdio>
__global__ void k(const float *A, float *B) {{
  B[threadIdx.x] = A[threadIdx.x];
  {call}
}}
"""
    with pytest.raises(FrontendError) as err:
        parse_kernel(src, "k", [2], [32], COPY_ARGS, path="r.cu")
    assert str(err.value).startswith("r.cu:4:3: ") and message in str(err.value)


def test_data_dependent_index_and_missing_kernel_are_refused():
    src = """__global__ void k(const float *A, float *B) {
  int j = (int)A[threadIdx.x];
  B[j] = 1.0f;
}
"""
    with pytest.raises(FrontendError, match="r.cu:2:11: .*traffic depends on the data"):
        parse_kernel(src, "k", [1], [32], COPY_ARGS, path="r.cu")
    with pytest.raises(FrontendError, match="no __global__ kernel named 'q'; it defines k"):
        parse_kernel(src, "q", [1], [32], COPY_ARGS, path="r.cu")


def test_early_return_before_syncthreads_is_barrier_divergence():
    src = """__global__ void k(const float *A, float *B) {
  __shared__ float t[32];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (threadIdx.x >= 16) return;
  t[threadIdx.x] = A[i];
  __syncthreads();
  B[i] = t[threadIdx.x];
}
"""
    sch = parse_kernel(src, "k", [2], [32], COPY_ARGS, path="div.cu")
    hazards = {h.kind: h for h in tt.check(sch, seed=1)}
    assert "barrier-divergence" in hazards
    assert "the barrier at div.cu:6:3" in hazards["barrier-divergence"].detail


def test_out_of_bounds_edge_tile_named_with_its_indices():
    src = """#define T 16
__global__ void k(const float *A, float *B, int N) {
  __shared__ float t[T][T];
  int x = blockIdx.x * T + threadIdx.x, y = blockIdx.y * T + threadIdx.y;
  t[threadIdx.y][threadIdx.x] = A[y * N + x];
  __syncthreads();
  B[y * N + x] = t[threadIdx.y][threadIdx.x];
}
"""
    args = {"A": buf(["N", "N"], "in"), "B": buf(["N", "N"], "out"), "N": 24}
    sch = parse_kernel(src, "k", [2, 2], [16, 16], args, path="edge.cu")
    hazards = [h for h in tt.check(sch, seed=1) if h.kind == "out-of-bounds"]
    assert hazards
    assert "A[24, 0] (load A[y, x] at edge.cu:5:33)" in hazards[0].detail
    assert "outside dimension 0 of extent 24 (shape 24 x 24)" in hazards[0].detail


ROW_POINTER_CU = """#define WIDTH 8
__global__ void k(float *vals, const float *mask, int n) {
  int row = blockIdx.x * (blockDim.x / WIDTH) + threadIdx.x / WIDTH;
  int lane = threadIdx.x % WIDTH;
  vals += row * n;
  int mask_offset = row / 4;
  mask_offset = mask_offset * n;
  for (int i = 0; i < n / WIDTH; i++) {
    int id = i * WIDTH + lane;
    float x = id < n ? vals[LANE] + mask[id + mask_offset] : -1e30f;
    vals[id] = x;
  }
}
"""
ROW_POINTER_ARGS = {"vals": buf([2, 4, 8], "inout"), "mask": buf([2, 8], "in"), "n": 8}


def test_a_pointer_moved_to_its_blocks_row_is_indexed_by_the_flat_element():
    """``vals += row * n`` then ``vals[i * WIDTH + lane]`` (and a mask offset held in an
    integer assigned again): the rows the offsets reach are inside the declared ``(2, 4,
    8)`` buffer, so the launch is clean, its values numpy's and its counts Oclgrind's."""
    from tiletraffic.gpu.oclgrind.crosscheck import compare_counts
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available
    sch = parse_kernel(ROW_POINTER_CU.replace("LANE", "id"), "k", [4], [16],
                       ROW_POINTER_ARGS, path="rows.cu")
    assert tt.check(sch, seed=1) == []
    rng = np.random.default_rng(0)
    inputs = {"vals": rng.standard_normal((2, 4, 8)).astype(np.float32),
              "mask": rng.standard_normal((2, 8)).astype(np.float32)}
    result = tt.simulate(sch, inputs)
    expected = inputs["vals"].astype(np.float64) + inputs["mask"][:, None, :]
    np.testing.assert_allclose(result.outputs["vals"], expected, rtol=1e-6)
    assert result.counts.global_load_elems == 2 * 64
    if oclgrind_available():
        comparison = compare_counts(sch)
        assert comparison.equal, comparison.to_dict()


def test_a_moved_pointer_past_its_buffer_is_named_with_declared_indices():
    """``vals[id + 1]`` crosses into the next row in every row, inside the buffer (no fault
    in C), and leaves it at the last element of the last row: that one access is reported,
    with its indices as the array is declared."""
    sch = parse_kernel(ROW_POINTER_CU.replace("LANE", "id + 1"), "k", [4], [16],
                       ROW_POINTER_ARGS, path="rows.cu")
    hazards = [h for h in tt.check(sch, seed=1) if h.kind == "out-of-bounds"]
    assert len(hazards) == 1 and hazards[0].count == 1
    assert "global load of vals[2, 0, 0]" in hazards[0].detail
    assert "at rows.cu:10:24" in hazards[0].detail
    assert "outside dimension 0 of extent 2 (shape 2 x 4 x 8)" in hazards[0].detail


def _launch(tmp_path, toml: str, source: str, name="k.cu"):
    (tmp_path / name).write_text(source)
    path = tmp_path / "k.toml"
    path.write_text(toml)
    return path


SCALE_SRC = """template <int W>
__global__ void k(const float *A, float *B) {
  int i = blockIdx.x * W + threadIdx.x;
  B[i] = A[i] * 2.0f;
}
"""


def test_cuda_launch_file_with_template_and_every_command(tmp_path):
    path = _launch(tmp_path, """source = "k.cu"
kernel = "k"
template = { W = "B" }
[sizes]
n = 64
B = 32
[launch]
grid = ["n / W"]
block = ["W"]
[args]
A = { shape = ["n"], access = "in" }
B = { shape = ["n"], access = "out" }
""", SCALE_SRC)
    sch = tt.build(str(path))
    assert sch.family == "cuda:k" and sch.local_size == (32,) and sch.global_size == (64,)
    assert sch.extra["cuda"]["launch_file"] == str(path)
    assert counts(sch).flop == 64
    tuned = launch_file.load(path, None, {"W": 16})
    assert tuned.local_size == (16,) and tuned.extra["cuda"]["template"] == {"W": "16"}
    assert tt.check(sch, seed=1) == []


def test_cuda_launch_file_errors(tmp_path):
    path = _launch(tmp_path, """source = "k.cu"
kernel = "k"
template = { W = 32 }
[launch]
global_size = [64]
local_size = [32]
[args]
A = { shape = [64], access = "in" }
B = { shape = [64], access = "out" }
""", SCALE_SRC)
    with pytest.raises(launch_file.LaunchFileError,
                       match=r"launch.global_size: a CUDA kernel's launch gives grid and block"):
        tt.build(str(path))
    path.write_text(path.read_text().replace("global_size = [64]\nlocal_size = [32]",
                                             "grid = [2]\nblock = [32]")
                    .replace("W = 32", "V = 32"))
    with pytest.raises(launch_file.LaunchFileError, match=r"k.toml: template: .*has no "
                                                          r"template parameter V"):
        tt.build(str(path))



SHUFFLE_SRC = """__global__ void k(const float *A, float *B) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = A[i];
  float up = __shfl_up_sync(0xffffffff, v, 1);
  float x = __shfl_xor_sync(0xffffffff, v, 3, 16);
  float b = __shfl_sync(0xffffffff, v, 5);
  B[i] = up + 100.0f * x + 10000.0f * b;
}
"""


def _shuffle_reference(a):
    """What SHUFFLE_SRC stores, in numpy, for one block per 64 floats of ``a``."""
    out = np.empty_like(a)
    for i in range(a.size):
        lane, warp = i % 32, i - i % 32
        up = a[i - 1] if lane >= 1 else a[i]
        seg = i - i % 16
        x = a[seg + ((i % 16) ^ 3)]
        b = a[warp + 5]
        out[i] = up + 100.0 * x + 10000.0 * b
    return out


def test_shuffles_move_values_between_lanes():
    sch = parse_kernel(SHUFFLE_SRC, "k", [2], [32], COPY_ARGS, path="s.cu")
    shuffles = [n for n in sch.body if isinstance(n, S.Shuffle)]
    assert [(s.mode, s.width) for s in shuffles] == [("up", 32), ("xor", 16), ("index", 32)]
    a = np.arange(64, dtype=np.float32) / 8
    result = tt.simulate(sch, {"A": a})
    assert np.allclose(result.outputs["B"], _shuffle_reference(a.astype(np.float64)))
    c = result.counts
    assert (c.global_load_elems, c.local_load_elems, c.flop) == (64, 0, 64 * 4)


def test_generated_shuffles_run_on_pocl(pocl):
    sch = parse_kernel(SHUFFLE_SRC, "k", [2], [32], COPY_ARGS, path="s.cu")
    result = tt.run(sch, pocl, repeat=10, warmup=1,
                    reference=lambda inputs: {"B": _shuffle_reference(inputs["A"])}, seed=2)
    assert result.check.ok


@pytest.mark.parametrize("call,message", [
    ("__shfl_down_sync(0xffff, v, 1)", "mask other than 0xffffffff"),
    ("__shfl_down_sync(0xffffffff, v, 1, 48)", "width 48: a power of two from 1 to 32"),
    ("__shfl_down_sync(0xffffffff, (int)v, 1)", "of an integer: the simulator shuffles floats"),
])
def test_shuffles_refused(call, message):
    src = f"""__global__ void k(const float *A, float *B) {{
  float v = A[threadIdx.x];
  B[threadIdx.x] = {call};
}}
"""
    with pytest.raises(FrontendError, match=message):
        parse_kernel(src, "k", [1], [32], {"A": buf([32], "in"), "B": buf([32], "out")})


def test_template_helper_in_a_namespace_is_inlined_with_its_arguments():
    src = """namespace util {
template <int W, typename T>
__device__ __forceinline__ T scale(T v, int i) { return v * (float)(W + i); }
}
template <int W>
__global__ void k(const float *A, float *B) {
  typedef unsigned int uint;
  uint i = threadIdx.x;
  B[i] = util::scale<W * 2, float>(A[i], i);
}
"""
    sch = parse_kernel(src, "k", [1], [32], {"A": buf([32], "in"), "B": buf([32], "out")},
                       template={"W": 3})
    out = tt.simulate(sch, {"A": np.ones(32, dtype=np.float32)}).outputs["B"]
    assert out[:3].tolist() == [6.0, 7.0, 8.0]


BLOCKTILED = """#include <cuda_runtime.h>
template <const int BM, const int BN, const int BK, const int TM, const int TN>
__device__ void load_tiles(int N, int K, const float *A, const float *B, float *As, float *Bs) {
  constexpr uint threads = (BM / TM) * (BN / TN);
  for (uint i = threadIdx.x * 4; i < BM * BK; i += threads * 4) {
    const float4 a = reinterpret_cast<const float4 *>(&A[(i / BK) * K + i % BK])[0];
    As[(i % BK + 0) * BM + i / BK] = a.x;
    As[(i % BK + 1) * BM + i / BK] = a.y;
    As[(i % BK + 2) * BM + i / BK] = a.z;
    As[(i % BK + 3) * BM + i / BK] = a.w;
  }
  for (uint i = threadIdx.x * 4; i < BK * BN; i += threads * 4)
    reinterpret_cast<float4 *>(&Bs[i])[0] =
        reinterpret_cast<const float4 *>(&B[(i / BN) * N + i % BN])[0];
}
template <const int BM, const int BN, const int BK, const int TM, const int TN>
__global__ void sgemm2d(int M, int N, int K, const float *A, const float *B, float *C) {
  __shared__ float As[BM * BK];
  __shared__ float Bs[BK * BN];
  A += blockIdx.y * BM * K;
  B += blockIdx.x * BN;
  C += blockIdx.y * BM * N + blockIdx.x * BN;
  const uint col = threadIdx.x % (BN / TN), row = threadIdx.x / (BN / TN);
  float acc[TM * TN] = {0.0f};
  for (uint k0 = 0; k0 < K; k0 += BK) {
    load_tiles<BM, BN, BK, TM, TN>(N, K, A, B, As, Bs);
    __syncthreads();
    A += BK;
    B += BK * N;
    for (uint k = 0; k < BK; ++k)
      for (uint m = 0; m < TM; ++m)
        for (uint n = 0; n < TN; ++n)
          acc[m * TN + n] += As[k * BM + row * TM + m] * Bs[k * BN + col * TN + n];
    __syncthreads();
  }
  for (uint m = 0; m < TM; ++m)
    for (uint n = 0; n < TN; ++n)
      C[(row * TM + m) * N + col * TN + n] = acc[m * TN + n];
}
"""


def test_block_tiled_sgemm_with_moved_pointers_and_a_template_helper():
    n = 64
    args = {"M": n, "N": n, "K": n, "A": buf([n * n], "in"), "B": buf([n * n], "in"),
            "C": buf([n * n], "out")}
    sch = parse_kernel(BLOCKTILED, "sgemm2d", [2, 2], [64], args,
                       template={"BM": 32, "BN": 32, "BK": 8, "TM": 4, "TN": 4})
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal(n * n).astype(np.float32) for _ in range(2))
    result = tt.simulate(sch, {"A": a, "B": b})
    expected = a.reshape(n, n).astype(np.float64) @ b.reshape(n, n)
    assert np.abs(result.outputs["C"].reshape(n, n) - expected).max() < 1e-3
    assert tt.check(sch, seed=1) == []
    c = result.counts
    assert (c.global_load_elems, c.local_store_elems, c.barriers) == (
        2 * n * n * 2, 2 * n * n * 2, 2 * (n // 8) * 4)


def test_extern_c_kernel_and_shared_scalar():
    src = """extern "C" __global__ void k(const float *A, float *B) {
  __shared__ float total;
  if (threadIdx.x == 0) total = A[blockIdx.x * 32];
  __syncthreads();
  B[blockIdx.x * 32 + threadIdx.x] = total + A[blockIdx.x * 32 + threadIdx.x];
}
"""
    assert kernel_names(src) == ["k"]
    sch = parse_kernel(src, "k", [2], [32], COPY_ARGS)
    a = np.arange(64, dtype=np.float32)
    out = tt.simulate(sch, {"A": a}).outputs["B"]
    assert out.tolist() == (a + np.repeat(a[::32], 32)).tolist()
    assert tt.check(sch, seed=1) == []
    c = counts(sch)
    assert (c.local_store_elems, c.local_load_elems) == (2, 64)


def test_what_nvrtc_is_given_host_code_blanked_and_the_instance_named():
    from tiletraffic.gpu.runtime.cuda_run import kernel_expression
    src = """#include <cstdio>
template <int W, bool F>
__global__ void k(const float *A, float *B) { B[threadIdx.x] = A[threadIdx.x]; }
int main() {
  float *d;
  cudaMalloc(&d, 4);
  k<32, true><<<1, 32>>>(d, d);
  return 0;
}
"""
    sch = parse_kernel(src, "k", [1], [32], {"A": buf([32], "in"), "B": buf([32], "out")},
                       template={"W": 32, "F": True})
    cuda = sch.extra["cuda"]
    assert kernel_expression(cuda) == "k<32, true>"
    device = cuda["device_source"]
    assert device.count("\n") == src.count("\n")
    assert "__global__ void k" in device and "main" not in device and "cudaMalloc" not in device


def test_host_code_of_a_whole_program_is_left_out():
    src = """#include <vector>
#include <iostream>
#include <cublas_v2.h>
__global__ void k(const float *A, float *B) { B[threadIdx.x] = 2.0f * A[threadIdx.x]; }
int main() {
  std::vector<float> h(32, 1.0f);
  cublasHandle_t handle;
  std::cout << "done" << std::endl;
  return 0;
}
"""
    sch = parse_kernel(src, "k", [1], [32], {"A": buf([32], "in"), "B": buf([32], "out")})
    assert counts(sch).flop == 32
    broken = src.replace("2.0f * A[threadIdx.x]", "2.0f * A[threadIdx.x] * undeclared")
    with pytest.raises(FrontendError, match="<source>:4:.*undeclared"):
        parse_kernel(broken, "k", [1], [32], {"A": buf([32], "in"), "B": buf([32], "out")})


def test_an_extern_c_host_function_is_left_out_with_its_linkage():
    src = """#define API
__global__ void k(const float *A, float *B) { B[threadIdx.x] = A[threadIdx.x]; }
extern "C" API int run(const float *h, int n) {
  return n;
}
"""
    sch = parse_kernel(src, "k", [1], [32], {"A": buf([32], "in"), "B": buf([32], "out")})
    device = sch.extra["cuda"]["device_source"]
    assert device.count("\n") == src.count("\n")
    assert "__global__ void k" in device
    assert "extern" not in device and "run" not in device and "API int" not in device


def test_device_text_leaves_host_code_of_the_file_and_its_headers_out(tmp_path):
    (tmp_path / "host.h").write_text("""#pragma once
#include <ATen/cuda/CUDAContext.h>
#define SCALE 2.0f
inline int next_pow2(int v) { return v; }
class Context {
 public:
  Context() {}
  int handle() const { return 0; }
};
struct Pair { float a, b; };
template <typename T> void launch(const T *x, T *y, int n);
__device__ inline float twice(float v) { return SCALE * v; }
""")
    src = """#include "host.h"
template <>
void launch<float>(const float *x, float *y, int n) {
#if 1
  k<<<1, 32>>>(x, y);
#endif
}
__global__ void k(const float *A, float *B) { B[threadIdx.x] = twice(A[threadIdx.x]); }
__global__ void k(const double *A, double *B) { B[threadIdx.x] = A[threadIdx.x]; }
"""
    path = str(tmp_path / "k.cu")
    (tmp_path / "k.cu").write_text(src)
    sch = parse_kernel(src, "k", [1], [32], {"A": buf([32], "in"), "B": buf([32], "out")},
                       path=path)
    cuda = sch.extra["cuda"]
    device = cuda["device_source"]
    assert device.count("\n") == src.count("\n")
    assert "__global__ void k(const float *A" in device and "double" not in device
    assert "launch" not in device and "template" not in device
    assert "#if 1" in device and "#endif" in device and "k<<<" not in device
    header = cuda["device_headers"][str((tmp_path / "host.h").resolve())]
    assert header.count("\n") == (tmp_path / "host.h").read_text().count("\n")
    assert "ATen" not in header and "next_pow2" not in header and "Context" not in header
    assert "launch" not in header
    assert "#define SCALE 2.0f" in header and "struct Pair { float a, b; };" in header
    assert "__device__ inline float twice" in header


def test_helpers_take_references():
    src = """template <int TM>
__device__ void load_row(float (&reg)[TM], const float *A, const int &base) {
  for (int m = 0; m < TM; ++m) reg[m] = A[base + m];
}
__device__ void add_to(float &acc, float v, int &count) { acc += v; count += 1; }
__global__ void k(const float *A, float *B) {
  float reg[4];
  float acc = 0.0f;
  int count = 0;
  load_row<4>(reg, A, 4 * threadIdx.x);
  for (int m = 0; m < 4; ++m) add_to(acc, reg[m], count);
  B[threadIdx.x] = acc + (float)count;
}
"""
    sch = parse_kernel(src, "k", [1], [8], {"A": buf([32], "in"), "B": buf([8], "out")})
    a = np.arange(32, dtype=np.float32)
    out = tt.simulate(sch, {"A": a}).outputs["B"]
    assert out.tolist() == (a.reshape(8, 4).sum(axis=1) + 4).tolist()


def test_conditional_with_a_load_loads_only_the_branch_taken():
    src = """__global__ void k(const float *A, float *B, unsigned int n) {
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = (i < n) ? A[i] : 0.0f;
  B[i] = v + 1.0f;
}
"""
    sch = parse_kernel(src, "k", [2], [32], {"A": buf([40], "in"), "B": buf([64], "out"),
                                             "n": 40})
    assert tt.check(sch, seed=1) == []            # no load past A's 40 elements
    c = counts(sch)
    assert (c.global_load_elems, c.global_store_elems) == (40, 64)
    out = tt.simulate(sch, {"A": np.ones(40, dtype=np.float32)}).outputs["B"]
    assert out.tolist() == [2.0] * 40 + [1.0] * 24


def test_generated_shuffles_in_divergent_code_are_not_launched(pocl):
    from tiletraffic.gpu.devices.device import TiletrafficGpuError
    src = """__global__ void k(const float *A, float *B) {
  float v = A[threadIdx.x];
  if (threadIdx.x < 32) v += __shfl_down_sync(0xffffffff, v, 1);
  B[threadIdx.x] = v;
}
"""
    sch = parse_kernel(src, "k", [1], [64], {"A": buf([64], "in"), "B": buf([64], "out")},
                       path="d.cu")
    assert tt.check(sch, seed=1) == []      # on the GPU: one whole warp shuffles
    with pytest.raises(TiletrafficGpuError, match=r"part of a work-group skips a shuffle "
                                                  r"\(barrier at d.cu:3:30\)"):
        tt.run(sch, pocl, repeat=10, warmup=1, reference=lambda i: {"B": i["A"]}, seed=1)


def test_run_cuda_without_cupy_or_gpu_says_why_in_one_line():
    from tiletraffic.gpu.devices.device import TiletrafficGpuError
    from tiletraffic.gpu.runtime.cuda_run import nvrtc_problem
    problem = nvrtc_problem()
    if problem is None:
        pytest.skip("CuPy and an NVIDIA GPU are here: run_cuda launches")
    sch = parse_kernel("__global__ void k(const float *A, float *B) "
                       "{ B[threadIdx.x] = A[threadIdx.x]; }", "k", [1], [32],
                       {"A": buf([32], "in"), "B": buf([32], "out")})
    with pytest.raises(TiletrafficGpuError) as err:
        tt.run_cuda(sch, reference=lambda i: {"B": i["A"]})
    assert str(err.value) == f"cuda:k: its CUDA source cannot be launched here: {problem}"
    with pytest.raises(ValueError, match="not a schedule read from a CUDA source"):
        tt.run_cuda(tt.build("gemm-naive", 8, 8, 8, 4))


def test_a_define_that_replaces_a_build_option_warns_and_a_twice_defined_one_does_not():
    import warnings
    from tiletraffic.frontend.opencl.translate import MacroRedefinedWarning
    src = """#define TILE 16
#define SCALE 1
#define SCALE 2
__global__ void copy(const float *A, float *B) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  B[i] = A[(i * SCALE + TILE) % 64];
}
"""
    with pytest.warns(MacroRedefinedWarning) as caught:
        sch = parse_kernel(src, "copy", [2], [32], COPY_ARGS, build_options="-DTILE=8",
                           path="copy.cu")
    lines = [str(w.message) for w in caught if w.category is MacroRedefinedWarning]
    assert len(lines) == 1 and lines[0].startswith("copy.cu:1:9: 'TILE' macro redefined: "
                                                   "the source's #define replaces")
    from tiletraffic.simulator.ir.visitor import walk
    (load,) = [n for s in sch.body for n in walk(s) if isinstance(n, S.Load)]
    assert 16 in [n.value for n in walk(load.index[0]) if isinstance(n, S.Const)]  # not 8
    with warnings.catch_warnings():          # SCALE twice in the source: no -D value lost
        warnings.simplefilter("error", MacroRedefinedWarning)
        parse_kernel(src, "copy", [2], [32], COPY_ARGS, path="copy.cu")


def test_nvrtc_reads_the_headers_device_text_first(tmp_path):
    from tiletraffic.gpu.runtime.cuda_run import NVRTC_INCLUDE, nvrtc_options, write_device_headers
    inc = tmp_path / "inc"
    inc.mkdir()
    header = (inc / "h.h").resolve()
    cuda = {"path": str(tmp_path / "k.cu"), "build_options": (f"-I{inc}", "-DX=1"),
            "device_headers": {str(header): "// device text\n"}}
    (tmp_path / "k.cu").write_text("")
    root = write_device_headers(cuda, tmp_path / "copies")
    copy = root / header.relative_to(header.anchor)
    assert copy.read_text() == "// device text\n"
    options = nvrtc_options(cuda, root)
    mirrored = f"-I{root / inc.resolve().relative_to(inc.resolve().anchor)}"
    assert options.index(mirrored) < options.index(f"-I{inc}")
    assert options.index(mirrored) < options.index(f"-I{NVRTC_INCLUDE}")
    assert "-DX=1" in options and options[0] == "-std=c++17"
    assert write_device_headers({"device_headers": {}}, tmp_path / "none") is None
