"""Fixtures of the H200 experiment tests: the committed raw data under reports/nvidia-h200.

Every test that reads committed data gets it through :func:`committed` (or a fixture built
on it), which skips the test, naming the missing file, when the data is absent (e.g. a
checkout without reports/). The predictions of the two validation runs are modelled once
per test run, also under ``-n`` (``shared_results.computed_once``): modelling the 27 + 15
cases is the slowest part of these tests.

These tests run as their own step (``pytest experiments``), apart from the package's tests;
the package's test helpers (``tests/strategies.py``) are importable here as ``strategies``.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from experiments.h200.hardware import compare

from experiments.h200.data import REPORT
from experiments.h200.validation.analysis import load_raw, model_for

PACKAGE_TESTS = Path(__file__).resolve().parents[3] / "tests"
"""The package's tests folder, whose helper modules these tests import."""
if str(PACKAGE_TESTS) not in sys.path:
    sys.path.append(str(PACKAGE_TESTS))

from shared_results import computed_once  # noqa: E402


def committed(*parts: str) -> Path:
    """``reports/nvidia-h200/<parts>``, or skip the calling test when it is not there."""
    path = REPORT.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"no committed H200 data: {path.relative_to(REPORT.parents[1])}")
    return path


def load_committed(folder: str, loader):
    """``loader(reports/nvidia-h200)`` for the data of ``folder`` (skips the calling test
    when the folder is absent); the loader must find its data there."""
    committed(folder)
    loaded = loader(REPORT)
    assert loaded is not None, f"{loader.__name__} found nothing in {folder}"
    return loaded


@pytest.fixture(scope="session")
def report_dir() -> Path:
    """reports/nvidia-h200 (skips when absent)."""
    return committed()


@pytest.fixture(scope="session")
def raw() -> dict:
    """The issue-4 run's raw data (``h200_raw.json.gz``)."""
    return load_raw(committed("h200_raw.json.gz").parent)


@pytest.fixture(scope="session")
def cases(raw, tmp_path_factory):
    """Every case of the issue-4 run compared with its predictions (modelled once)."""
    return computed_once(tmp_path_factory, "experiments.cases",
                         lambda: compare(raw, model_for(raw)))


@pytest.fixture(scope="session")
def holdout_raw() -> dict:
    """The held-out run's raw data (``holdout/h200_raw.json.gz``)."""
    return load_raw(committed("holdout", "h200_raw.json.gz").parent)


@pytest.fixture(scope="session")
def holdout_cases(holdout_raw, tmp_path_factory):
    """Every case of the held-out run compared with its predictions (modelled once)."""
    return computed_once(tmp_path_factory, "experiments.holdout_cases",
                         lambda: compare(holdout_raw, model_for(holdout_raw)))
