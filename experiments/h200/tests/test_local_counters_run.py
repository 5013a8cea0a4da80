"""The device call of the local-memory counter check (experiments/h200/local_counters/):
the committed table is what ``run_table`` computes from the committed raw data and the
committed model figures, those figures are today's model (small cases recomputed), and the
agreements the findings state hold in the data."""
from __future__ import annotations

import json

import pytest

from experiments.h200.local_counters import run_table as R

from .conftest import committed


@pytest.fixture(scope="module")
def entries():
    committed("local_counters", "run", "local_counters_run.tar.gz")
    return R.measured(R.load_run())


@pytest.fixture(scope="module")
def figures():
    return json.loads(committed("local_counters", "run", "model.json").read_text())


def test_the_committed_table_is_the_analysis_of_the_committed_data(entries, figures):
    table = committed("local_counters", "table.md").read_text()
    assert table == R.markdown(R.rows(entries, figures))


@pytest.mark.parametrize("case_id, build", [
    ("gemm-tiled-M256-K256-N256-T16", "CUDA"),
    ("matvec-local-M333-K5003-T128", "OpenCL"),
])
def test_the_committed_model_figures_are_todays_model(entries, figures, case_id, build):
    entry = next(e for e in entries if e["id"] == case_id and e["build"] == build)
    assert R.model_figures(entry["case"], build) == figures[R.model_key(entry["case"], build)]


def test_the_run_measured_every_family_in_the_cuda_build(entries):
    cuda = [e for e in entries if e["build"] == "CUDA"]
    assert all(e["record"] is not None for e in cuda)
    assert len({e["case"]["family"] for e in cuda}) == 9
