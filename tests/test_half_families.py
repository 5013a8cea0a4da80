"""Every GEMM and matrix-vector family in half storage at sizes that are no multiple of its
tiles: checked for hazards, run on PoCL against float64 with half's tolerance, and a
kernel sequence's counts (gemm-split-k, two kernels) equal to Oclgrind's."""
from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from tiletraffic.analysis.cli import main
from tiletraffic.simulator.kernels.families import FAMILIES, SEQUENCE_FAMILIES, build

VECTOR_FAMILIES = ("gemm-vectorized", "gemm-warp-tiled")
"""Families whose vector accesses of 4 elements need K and N multiples of 4 (M is free)."""


def _sizes(family: str) -> tuple:
    """M×K(×N) of no tile's multiple; K and N multiples of 4 where the family needs it,
    and K of 4 steps of BK = 16 or more for split-K's 4 slices."""
    if family.startswith("matvec"):
        return 37, 29
    if family in SEQUENCE_FAMILIES:
        return 37, 52, 44
    return (37, 28, 44) if family in VECTOR_FAMILIES else (37, 29, 41)


@pytest.mark.parametrize("family", FAMILIES + SEQUENCE_FAMILIES)
def test_every_family_in_half_storage_is_clean_and_runs_on_pocl(pocl, family):
    from tiletraffic.gpu.devices.device import select_device
    from tiletraffic.gpu.runtime.checked_run import run_on_device

    sch = build(family, *_sizes(family), dtype="float16")
    result = run_on_device(select_device(pocl), sch, repeat=10, warmup=1,
                           rng=np.random.default_rng(3))
    assert not result.launch_check.hazards, result.launch_check.hazards
    assert result.check.ok and result.check.stored_half, result.check
    assert 0 < result.check.error_over_tolerance <= 1
    out = np.asarray(next(iter(result.run.outputs.values())), np.float32)
    assert (out.astype(np.float16).astype(np.float32) == out).all(), "outputs are halves"


def test_split_k_in_half_storage_counts_as_oclgrind_at_a_non_multiple_size():
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available

    if not oclgrind_available():
        pytest.skip("no Oclgrind")
    res = CliRunner().invoke(main, ["crosscheck", "gemm-split-k", "--m", "37", "--k", "52",
                                    "--n", "44", "--bk", "8", "--dtype", "float16"])
    assert res.exit_code == 0, res.output
    assert res.output.count("counts identical") == 2, res.output


def test_split_k_refusing_a_size_names_itself_and_its_slices_kernel():
    from tiletraffic.simulator.kernels.families import ScheduleError

    with pytest.raises(ScheduleError, match=r"^gemm-split-k \(its slices kernel is "
                                            r"gemm-warp-tiled's\): .*K to be a multiple of 4"):
        build("gemm-split-k", 37, 29, 41, dtype="float16")


@pytest.mark.parametrize("spec, size, word", [
    ("gemm-vectorized", ["--k", "66", "--n", "64"], "--k"),
    ("gemm-warp-tiled", ["--k", "64", "--n", "62"], "--n"),
    ("gemm-split-k", ["--k", "64", "--n", "62"], "--n"),
])
def test_a_vector_familys_refusal_in_half_storage_names_half_and_8_bytes(spec, size, word):
    res = CliRunner().invoke(main, ["simulate", spec, "--m", "64", *size,
                                    "--dtype", "float16"])
    assert res.exit_code == 2, res.output
    assert (f"needs {word} to be a multiple of 4 (vector accesses of 4 half elements need "
            f"8-byte aligned addresses), got {word} = ") in res.stderr, res.stderr
    assert "float" not in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_a_local_memory_size_refusal_names_floats_whatever_the_storage():
    # --tm governs only the float4 reads of the float local tiles, never a global access
    for dtype in ("float16", "float32"):
        res = CliRunner().invoke(main, ["simulate", "gemm-vectorized", "--m", "64", "--k",
                                        "64", "--n", "64", "--tm", "6", "--dtype", dtype])
        assert res.exit_code == 2, res.output
        assert ("needs --tm to be a multiple of 4 (vector reads of 4 floats from local "
                "memory need 16-byte aligned addresses), got --tm = 6") in res.stderr, \
            res.stderr
