"""The held-out H200 run (reports/nvidia-h200/holdout/): predicted before it was measured.

No GPU needed: the raw data and the pre-registered predictions are committed."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tiletraffic.analysis.hardware import compare, load_raw, model_for
from tiletraffic.analysis.hardware_report import preregistered_check

REPO = Path(__file__).resolve().parents[1]
HOLDOUT = REPO / "reports" / "nvidia-h200" / "holdout"


@pytest.fixture(scope="module")
def cases():
    raw = load_raw(HOLDOUT)
    return compare(raw, model_for(raw))


def test_the_run_measured_the_holdout_cases_and_checked_them():
    raw = load_raw(HOLDOUT)
    sys.path.insert(0, str(REPO / "benchmarks"))
    from h200_validation import case_list

    wanted = [c["id"] for c in case_list(local=False, holdout=True)]
    assert raw["meta"]["case_set"] == "holdout" and raw["meta"]["cases"] == wanted
    assert [e["id"] for e in raw["opencl_cases"]] == wanted
    assert all(e["run"]["check"]["ok"] and len(e["run"]["kernel_times_s"]) >= 10
               for e in raw["opencl_cases"])
    assert all(e["check"]["ok"] for e in raw["counters"]["driver"])
    assert [r["id"] for r in raw["counters"]["records"]] == wanted


def test_predictions_were_written_before_the_measurement(cases):
    pre = json.loads((HOLDOUT / "predictions.json").read_text())
    raw = load_raw(HOLDOUT)
    assert pre["created_utc"] < raw["meta"]["created_utc"]  # same ISO format, UTC
    check = preregistered_check(HOLDOUT, cases)
    assert check["covered"] == check["cases"] == len(cases) == 15


def test_preregistered_check_reports_a_changed_value(cases, tmp_path):
    pre = json.loads((HOLDOUT / "predictions.json").read_text())
    first = cases[0].case_id
    pre["cases"][first]["dram_read_bytes"] *= 1.5
    (tmp_path / "predictions.json").write_text(json.dumps(pre))
    check = preregistered_check(tmp_path, cases)
    assert any(line.startswith(f"{first} dram_read_bytes") for line in check["changed"])


def test_counts_equal_the_counters_at_the_held_out_sizes(cases):
    for c in cases:
        rows = {r["quantity"]: r for r in c.rows()}
        for q in ("global load instructions", "global load requests", "global load sectors"):
            assert rows[q]["predicted"] == rows[q]["measured"], (c.case_id, q)
