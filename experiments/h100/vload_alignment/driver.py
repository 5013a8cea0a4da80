"""Which global loads NVIDIA's OpenCL compiler emits for ``vload4`` at addresses it cannot
prove 16-byte aligned, beside a ``float4`` pointer cast and a ``float4`` buffer.

Run on the device (NVIDIA's OpenCL platform registered, pyopencl importable)::

    python -m experiments.h100.vload_alignment.driver OUT_DIR

Writes ``OUT_DIR/vload_alignment.json``: per kernel, its source, the PTX the driver returns
as the program binary, the load instructions in it (counted by mnemonic, one instruction a
line) and whether a launch on 1024 rows gave the float64 numpy result. Nothing else runs.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROWS = 1024
K_ROW = 6      # floats per row of the matrix read by the row-strided kernels

KERNELS = {
    "vload4_runtime_stride": """
__kernel void k(__global const float *A, __global float *y, const int K) {
    int row = get_global_id(0);
    float4 a = vload4(0, A + row * K);
    y[row] = a.x + a.y + a.z + a.w;
}""",
    "vload4_constant_stride_6": """
__kernel void k(__global const float *A, __global float *y, const int K) {
    int row = get_global_id(0);
    float4 a = vload4(0, A + row * 6);
    y[row] = a.x + a.y + a.z + a.w;
}""",
    "vload4_constant_stride_8": """
__kernel void k(__global const float *A, __global float *y, const int K) {
    int row = get_global_id(0);
    float4 a = vload4(0, A + row * 8);
    y[row] = a.x + a.y + a.z + a.w;
}""",
    "vload4_vector_index": """
__kernel void k(__global const float *A, __global float *y, const int K) {
    int row = get_global_id(0);
    float4 a = vload4(row, A);
    y[row] = a.x + a.y + a.z + a.w;
}""",
    "cast_float4_stride_8": """
__kernel void k(__global const float *A, __global float *y, const int K) {
    int row = get_global_id(0);
    float4 a = *(__global const float4 *)(A + row * 8);
    y[row] = a.x + a.y + a.z + a.w;
}""",
    "float4_buffer": """
__kernel void k(__global const float4 *A, __global float *y, const int K) {
    int row = get_global_id(0);
    float4 a = A[row];
    y[row] = a.x + a.y + a.z + a.w;
}""",
}

STRIDE = {"vload4_runtime_stride": K_ROW, "vload4_constant_stride_6": 6,
          "vload4_constant_stride_8": 8, "vload4_vector_index": 4,
          "cast_float4_stride_8": 8, "float4_buffer": 4}
"""Kernel -> floats between the rows it reads."""


def load_instructions(ptx: str) -> dict[str, int]:
    """PTX global load instructions by mnemonic (``ld.global.f32``, ``ld.global.nc.v4.f32``,
    ...): the first word of each instruction line that starts with ``ld.global``."""
    out: dict[str, int] = {}
    for line in ptx.splitlines():
        words = line.strip().split()
        if words and words[0].startswith("ld.global"):
            out[words[0]] = out.get(words[0], 0) + 1
    return out


def main(out_dir: str) -> None:
    import pyopencl as cl

    platform = next(p for p in cl.get_platforms() if "NVIDIA" in p.name)
    device = platform.get_devices()[0]
    ctx = cl.Context([device])
    queue = cl.CommandQueue(ctx)
    rng = np.random.default_rng(0)
    results = {"device": device.name, "driver": device.driver_version, "kernels": {}}
    for name, source in KERNELS.items():
        program = cl.Program(ctx, source).build()
        ptx = program.get_info(cl.program_info.BINARIES)[0].decode("utf-8", "replace")
        stride = STRIDE[name]
        a = rng.standard_normal(ROWS * stride + 8).astype(np.float32)
        y = np.empty(ROWS, np.float32)
        mf = cl.mem_flags
        a_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
        y_buf = cl.Buffer(ctx, mf.WRITE_ONLY, y.nbytes)
        program.k(queue, (ROWS,), (128,), a_buf, y_buf, np.int32(K_ROW))
        cl.enqueue_copy(queue, y, y_buf)
        rows = np.arange(ROWS) * stride
        expected = sum(a[rows + j].astype(np.float64) for j in range(4))
        results["kernels"][name] = {
            "source": source, "row_stride_floats": stride,
            "loads": load_instructions(ptx),
            "result_ok": bool(np.allclose(y, expected, rtol=1e-5, atol=1e-5)),
            "ptx": ptx}
    path = Path(out_dir) / "vload_alignment.json"
    path.write_text(json.dumps(results, indent=1))
    for name, r in results["kernels"].items():
        print(name, r["loads"], "ok" if r["result_ok"] else "WRONG")


if __name__ == "__main__":
    main(sys.argv[1])
