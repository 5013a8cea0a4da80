"""The held-out H200 run (reports/nvidia-h200/holdout/): predicted before it was measured.

No GPU needed: the raw data and the pre-registered predictions are committed."""
from __future__ import annotations

import json
import shutil

from experiments.h200.holdout.analysis import preregistered_check
from experiments.h200.render import main as render_main
from experiments.h200.validation.driver import case_list

from experiments.h200.tests.conftest import committed


def test_the_run_measured_the_holdout_cases_and_checked_them(holdout_raw):
    raw = holdout_raw
    wanted = [c["id"] for c in case_list(local=False, holdout=True)]
    assert raw["meta"]["case_set"] == "holdout" and raw["meta"]["cases"] == wanted
    assert [e["id"] for e in raw["opencl_cases"]] == wanted
    assert all(e["run"]["check"]["ok"] and len(e["run"]["kernel_times_s"]) >= 10
               for e in raw["opencl_cases"])
    assert all(e["check"]["ok"] for e in raw["counters"]["driver"])
    assert [r["id"] for r in raw["counters"]["records"]] == wanted


def test_predictions_were_written_before_the_measurement(holdout_raw, holdout_cases):
    pre = json.loads(committed("holdout", "predictions.json").read_text())
    assert pre["created_utc"] < holdout_raw["meta"]["created_utc"]  # same ISO format, UTC
    check = preregistered_check(committed("holdout"), holdout_cases)
    assert check["covered"] == check["cases"] == len(holdout_cases) == 15
    # since then only the time model changed: the counts, L2 and DRAM predictions are the
    # pre-registered ones
    assert check["only_times_changed"]


def test_preregistered_check_reports_a_changed_value(holdout_cases, tmp_path):
    pre = json.loads(committed("holdout", "predictions.json").read_text())
    first = holdout_cases[0].case_id
    pre["cases"][first]["dram_read_bytes"] *= 1.5
    (tmp_path / "predictions.json").write_text(json.dumps(pre))
    check = preregistered_check(tmp_path, holdout_cases)
    assert any(line.startswith(f"{first} dram_read_bytes") for line in check["changed"])
    assert not check["only_times_changed"]
    assert preregistered_check(tmp_path / "absent", holdout_cases) is None


def test_counts_equal_the_counters_at_the_held_out_sizes(holdout_cases):
    for c in holdout_cases:
        rows = {r["quantity"]: r for r in c.rows()}
        for q in ("global load instructions", "global load requests", "global load sectors"):
            assert rows[q]["predicted"] == rows[q]["measured"], (c.case_id, q)


def test_render_reproduces_the_committed_report_from_the_raw_data_alone(holdout_cases, tmp_path):
    """The whole render of the held-out run (the issue-4 run is the same code on more data,
    5-6 minutes): validation.json byte for byte, validation.md byte for byte but for the
    directory it names."""
    source = committed("holdout")
    target = tmp_path / "nvidia-h200" / "holdout"
    target.mkdir(parents=True)
    # the issue-4 report beside it, whose matrix-vector section the ranking points to
    (target.parent / "matvec").mkdir()
    (target.parent / "validation.md").write_text("")
    for name in ("h200_raw.json.gz", "predictions.json"):
        shutil.copy(source / name, target / name)
    assert render_main([str(target)]) == 0
    assert (target / "validation.json").read_bytes() == (source / "validation.json").read_bytes()
    rendered = (target / "validation.md").read_text().replace(str(target),
                                                               "reports/nvidia-h200/holdout")
    assert rendered == (source / "validation.md").read_text()
    assert (target / "roofline.png").stat().st_size > 10_000
