"""tiletraffic tune at the five GEMM target shapes on the H200 (reports/nvidia-h200/warp_tiled/
tune_five/): the committed table is what ``tune_table`` computes from the committed results
files and cuBLAS runs, and the figures the findings state hold in the data."""
from __future__ import annotations

import pytest

from experiments.h200.warp_tiled import tune_table as T

from experiments.h200.tests.conftest import committed


@pytest.fixture(scope="module")
def table():
    return T.rows(committed("warp_tiled", "tune_five"))


def test_the_committed_table_is_the_analysis_of_the_committed_data(table):
    assert committed("warp_tiled", "tune_five", "table.md").read_text() == T.markdown(table)


def test_every_shape_was_tuned_and_checked(table):
    assert {r["shape"] for r in table} == {(8192, 8192, 8192), (4096, 4096, 4096),
                                           (512, 11008, 4096), (128, 4096, 11008),
                                           (1000, 1000, 1000)}
    assert all(r["valid"] == 281 for r in table)
    assert sum(len(r["measured"]) for r in table) == 19


def test_the_model_predicts_every_measured_kernel_too_fast(table):
    errors = [x["error"] for r in table for x in r["measured"]]
    assert max(errors) < -0.18 and min(errors) > -0.42


def test_the_percentages_of_cublas_the_findings_state(table):
    by_shape = {r["shape"]: r for r in table}
    best = {s: round(100 * r["cublas_s"] / r["best_s"], 1) for s, r in by_shape.items()}
    assert best == {(8192, 8192, 8192): 90.5, (4096, 4096, 4096): 81.2,
                    (512, 11008, 4096): 89.0, (128, 4096, 11008): 82.0,
                    (1000, 1000, 1000): 101.3}
    assert by_shape[(8192, 8192, 8192)]["pick_s"] is None      # its call ran out of time
