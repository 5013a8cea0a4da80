"""Tests of experiments.h200.cuda: the CUDA prelude and that the generated OpenCL C follows it unchanged.

No GPU and no CuPy needed. Where ``nvcc`` is on the PATH, the mapped sources are also
compiled to PTX (for Hopper, sm_90) and the PTX is checked for the kernel's entry, its
launch bounds and its shared memory; elsewhere (CI) that test is skipped.
"""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

import tiletraffic as tt
from tiletraffic.gpu.codegen.generate import generate
from experiments.h200.cuda import (CUDA_PRELUDE, PRELUDE_END, TIMELINE_SUFFIX, cuda_source,
                                   launch_geometry, prelude, timeline_source)
from tiletraffic.simulator.kernels.families import FAMILIES, build

from strategies import functions_schedule, small_examples

CASES = small_examples()


def _defines(text: str) -> dict[str, str]:
    """``#define NAME[(params)] replacement`` lines -> {NAME[(params)]: replacement}."""
    found = {}
    for line in text.splitlines():
        m = re.match(r"#define (\w+(?:\([^)]*\))?)(?: (.*))?$", line)
        if m:
            found[m.group(1)] = m.group(2) or ""
    return found


def test_prelude_maps_every_opencl_spelling():
    d = _defines(CUDA_PRELUDE)
    assert d["__kernel"] == 'extern "C" __global__'
    assert d["__global"] == ""
    assert d["__local"] == "__shared__"
    assert d["restrict"] == "__restrict__"
    assert d["barrier(flags)"] == "__syncthreads()"
    assert d["CLK_LOCAL_MEM_FENCE"] and d["CLK_GLOBAL_MEM_FENCE"]
    for name, builtin in (("get_local_id", "threadIdx"), ("get_group_id", "blockIdx"),
                          ("get_local_size", "blockDim"), ("get_num_groups", "gridDim")):
        assert d[f"{name}(d)"] == (f"((d) == 0 ? {builtin}.x : (d) == 1 ? {builtin}.y : "
                                   f"{builtin}.z)")
    assert d["get_global_id(d)"] == ("(get_group_id(d) * get_local_size(d) + "
                                     "get_local_id(d))")
    assert d["get_global_size(d)"] == "(get_num_groups(d) * get_local_size(d))"
    # __launch_bounds__(n) is __attribute__((launch_bounds(n))) in crt/host_defines.h
    assert d["reqd_work_group_size(x, y, z)"] == "launch_bounds((x) * (y) * (z))"
    assert _defines(prelude(launch_bounds=False))["reqd_work_group_size(x, y, z)"] == ""


def test_prelude_is_only_defines_and_comments():
    for text in (CUDA_PRELUDE, prelude(launch_bounds=False)):
        assert text.endswith("\n")
        for line in text.splitlines():
            assert line.startswith("#define ") or line.startswith("//"), line


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("launch_bounds", [True, False])
def test_generated_source_follows_the_prelude_unchanged(family, launch_bounds):
    kernel = generate(CASES[family])
    mapped = cuda_source(kernel, launch_bounds=launch_bounds)
    assert mapped == prelude(launch_bounds) + kernel.source
    head, sep, tail = mapped.partition(PRELUDE_END + "\n")
    assert sep and tail == kernel.source
    # the kernel body (from the opening brace) is byte for byte the generated one
    body = kernel.source[kernel.source.index("{"):]
    assert mapped.endswith(body)
    assert "barrier(CLK_LOCAL_MEM_FENCE)" in body or family in ("gemm-naive", "matvec-naive",
                                                                "matvec-relu")


@pytest.mark.parametrize("family", FAMILIES)
def test_launch_geometry_is_the_ndrange_in_blocks(family):
    kernel = generate(CASES[family])
    grid, block = launch_geometry(kernel)
    assert len(grid) == len(block) == 3
    for d, (g, b) in enumerate(zip(kernel.global_size, kernel.local_size)):
        assert block[d] == b and grid[d] * b == g
    assert all(v == 1 for v in grid[len(kernel.global_size):] + block[len(kernel.local_size):])


def test_float_functions_map_to_their_float_forms():
    """The IR's float built-ins (tests/strategies.functions_schedule uses each) are defined
    as CUDA's float functions."""
    cuda = cuda_source(tt.generate(functions_schedule()))
    for name, args in (("fmax", "a, b"), ("fmin", "a, b"), ("fabs", "a"), ("sqrt", "a"),
                       ("rsqrt", "a"), ("exp", "a"), ("log", "a"), ("tanh", "a"),
                       ("pow", "a, b"), ("erf", "a")):
        assert f"#define {name}({args}) {name}f({args})" in cuda


def test_launch_geometry_refuses_a_ragged_ndrange():
    import dataclasses
    kernel = dataclasses.replace(generate(CASES["gemm-naive"]), global_size=(10, 9))
    with pytest.raises(ValueError, match="not a multiple"):
        launch_geometry(kernel)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("family", FAMILIES)
def test_nvcc_compiles_the_mapped_source(family, tmp_path):
    schedule = CASES[family]
    kernel = generate(schedule)
    src = tmp_path / "k.cu"
    src.write_text(cuda_source(kernel))
    ptx = tmp_path / "k.ptx"
    done = subprocess.run(["nvcc", "-arch=sm_90", "-ptx", str(src), "-o", str(ptx)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == ""  # no warning about an unknown attribute or the like
    text = ptx.read_text()
    assert re.search(rf"\.entry {kernel.name}\(", text)  # extern "C": name unmangled
    threads = kernel.work_group_items
    assert re.search(rf"\.maxntid {threads}, 1, 1", text)
    shared = sum(int(n) for n in re.findall(r"\.shared \.align \d+ \.b8 \S+\[(\d+)\]", text))
    assert shared == kernel.local_mem_bytes


@pytest.mark.parametrize("family", FAMILIES)
def test_timeline_source_wraps_the_unchanged_kernel(family):
    kernel = generate(CASES[family])
    src, entry = timeline_source(kernel)
    assert entry == kernel.name + TIMELINE_SUFFIX
    assert kernel.source in src  # byte for byte
    head = src[:src.index(kernel.source)]
    d = _defines(head)
    assert d["__kernel"] == "static __device__ __forceinline__"
    assert d[kernel.name] == kernel.name + "_body"
    assert d["reqd_work_group_size(x, y, z)"] == ""  # launch bounds move to the entry point
    tail = src[src.index(kernel.source) + len(kernel.source):]
    assert f"__launch_bounds__({kernel.work_group_items})" in tail
    names = ", ".join(a.name for a in kernel.args)
    assert f"{kernel.name}_body({names});" in tail
    assert "unsigned long long *__restrict__ timeline" in tail
    assert "%%globaltimer" in tail and "%%smid" in tail


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("family", FAMILIES)
def test_nvcc_compiles_the_timeline_source(family, tmp_path):
    kernel = generate(CASES[family])
    text, entry = timeline_source(kernel)
    src = tmp_path / "t.cu"
    src.write_text(text)
    ptx = tmp_path / "t.ptx"
    done = subprocess.run(["nvcc", "-arch=sm_90", "-ptx", str(src), "-o", str(ptx)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = ptx.read_text()
    assert re.search(rf"\.entry {entry}\(", out)
    assert not re.search(rf"\.entry {kernel.name}\(", out)  # the body is not an entry
    assert re.search(rf"\.maxntid {kernel.work_group_items}, 1, 1", out)
    assert out.count("%globaltimer") == 2 and "%smid" in out
