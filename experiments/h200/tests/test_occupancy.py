"""The occupancy driver's source edit (the ``tt_pad`` splice) and its pad arithmetic
(experiments/h200/occupancy/driver.py). No GPU."""
from __future__ import annotations

import pytest

import tiletraffic

from experiments.h200.occupancy.driver import (CUDA_MAX_SHARED_PER_BLOCK, cuda_pad_source,
                                               opencl_pad_source, pad_bytes)

PER_CU, RESERVED, OPENCL_CAP = 233472, 1024, 49152  # H200: 228 KiB, 1 KiB, 48 KiB


@pytest.fixture(scope="module")
def source():
    return tiletraffic.generate(tiletraffic.build("gemm-register-blocked", m=64, k=64, n=64,
                                                  tile=16)).source


def test_opencl_splice_appends_the_local_argument_and_one_touch(source):
    padded = opencl_pad_source(source)
    assert "const int N, __local float *restrict tt_pad)\n{\n    if (K < 0) tt_pad[0] = 0.0f;" \
        in padded
    assert padded.replace(", __local float *restrict tt_pad", "").replace(
        "\n    if (K < 0) tt_pad[0] = 0.0f;", "") == source


def test_cuda_splice_declares_dynamic_shared_memory_first_in_the_body(source):
    padded = cuda_pad_source(source)
    assert padded.count("extern __shared__ float tt_pad[];") == 1
    assert ")\n{\n    extern __shared__ float tt_pad[];\n    if (K < 0) tt_pad[0] = 0.0f;" \
        in padded
    assert padded.split(")\n{")[0] == source.split(")\n{")[0]


def test_splice_refuses_an_unexpected_kernel(source):
    with pytest.raises(ValueError, match="unexpected kernel shape"):
        opencl_pad_source(source + "\n__kernel void other(const int K)\n{\n}\n")
    with pytest.raises(ValueError, match="'Q'"):
        cuda_pad_source(source, int_arg="Q")


def test_pad_bytes_hand_computed():
    # R = 2, 12 KiB static, CUDA: allowed pad 64513..103424, middle 83968 (a multiple of 256)
    assert pad_bytes(2, 12288, PER_CU, RESERVED, CUDA_MAX_SHARED_PER_BLOCK) == 83968
    # R = 1, 16 KiB static: 99329..216064, middle 157696
    assert pad_bytes(1, 16384, PER_CU, RESERVED, CUDA_MAX_SHARED_PER_BLOCK) == 157696
    # R = 4 under OpenCL's 48 KiB, 8 KiB static: 37479..40960, middle 39219 -> 39168
    assert pad_bytes(4, 8192, PER_CU, RESERVED, OPENCL_CAP) == 39168
    # R = 3 needs more than 48 KiB per work-group: 58368 + 1 - 1024 > 49152
    assert pad_bytes(3, 8192, PER_CU, RESERVED, OPENCL_CAP) is None
    with pytest.raises(ValueError, match="r = 0"):
        pad_bytes(0, 0, PER_CU, RESERVED, OPENCL_CAP)


@pytest.mark.parametrize("static", [0, 2052, 8192, 12288, 16384, 33280])
@pytest.mark.parametrize("r", [1, 2, 3, 4])
def test_pad_leaves_exactly_r_work_groups_by_the_device_models_rule(static, r):
    dm = tiletraffic.device_model("nvidia-h200")
    assert (dm.local_mem_bytes_per_cu, dm.local_mem_reserved_bytes_per_work_group) == \
        (PER_CU, RESERVED)
    pad = pad_bytes(r, static, PER_CU, RESERVED, CUDA_MAX_SHARED_PER_BLOCK)
    assert pad is not None and static + pad <= CUDA_MAX_SHARED_PER_BLOCK
    assert dm.resident_work_groups_per_cu(64, static + pad) == r
    # 128-byte allocation granularity (rounding the work-group's bytes up) keeps it at r
    assert PER_CU // (-(-(static + pad + RESERVED) // 128) * 128) == r
