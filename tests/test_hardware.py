"""Predictions against the committed H200 counters (no GPU needed: the raw data is in
reports/nvidia-h200/h200_raw.json, produced by benchmarks/h200_validation.py on the device)."""
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tiletraffic.analysis.cli import main
from tiletraffic.analysis.hardware import compare, load_raw, model_for, rankings, speedups

RAW_DIR = Path(__file__).resolve().parent.parent / "reports" / "nvidia-h200"
pytestmark = pytest.mark.skipif(not (RAW_DIR / "h200_raw.json").exists(),
                                reason="no committed H200 raw data")


@pytest.fixture(scope="module")
def cases():
    raw = load_raw(RAW_DIR)
    return compare(raw, model_for(raw))


def test_model_is_the_h200_one():
    assert model_for(load_raw(RAW_DIR)).name == "nvidia-h200"


def test_global_load_instructions_requests_and_sectors_equal_the_counters(cases):
    assert len(cases) >= 12
    families = {c.family for c in cases}
    assert {"gemm-naive", "gemm-tiled", "matvec-naive", "matvec-local"} <= families
    for c in cases:
        rows = {r["quantity"]: r for r in c.rows()}
        for q in ("global load instructions", "global load requests", "global load sectors"):
            assert rows[q]["predicted"] == rows[q]["measured"], (c.case_id, q, rows[q])


def test_local_load_instructions_equal_the_counters(cases):
    for c in cases:
        row = {r["quantity"]: r for r in c.rows()}["local load instructions"]
        assert row["predicted"] == row["measured"], (c.case_id, row)


def test_l2_to_l1_sectors_within_25_percent(cases):
    for c in cases:
        row = {r["quantity"]: r for r in c.rows()}["L2→L1 read sectors"]
        assert abs(row["relative_error"]) <= 0.25, (c.case_id, row)


def test_speedups_of_tiling_are_predicted_within_30_percent(cases):
    speed = speedups(cases)
    assert len(speed) >= 6
    for s in speed:
        assert s["measured"] and abs(s["relative_error"]) <= 0.30, s


def test_rankings_are_reported_for_every_size(cases):
    ranks = rankings(cases)
    assert {r["size"][1] for r in ranks} >= {1024, 4096}
    for r in ranks:
        assert sorted(r["predicted"]) == sorted(r["measured"])


def test_render_writes_validation_report_without_a_gpu(tmp_path):
    target = tmp_path / "nvidia-h200"
    target.mkdir()
    for name in ("h200_raw.json", "results.json"):
        shutil.copy(RAW_DIR / name, target / name)
    result = CliRunner().invoke(main, ["report", "--render", str(target)])
    assert result.exit_code == 0, result.output
    text = (target / "validation.md").read_text()
    assert "| global load sectors equal | 27 | 27 |" in text
    assert (target / "roofline.png").stat().st_size > 10_000
    data = json.loads((target / "validation.json").read_text())
    assert data["device_model"] == "nvidia-h200" and len(data["cases"]) == 27
    assert (target / "report.md").exists()


def test_render_of_an_empty_directory_fails_cleanly(tmp_path):
    result = CliRunner().invoke(main, ["report", "--render", str(tmp_path)])
    assert result.exit_code == 1
    assert "neither results.json nor h200_raw.json" in result.output
    assert "Traceback" not in result.output


def test_guessed_values_table_has_a_row_for_every_guess_and_never_calls_one_measured():
    from tiletraffic.analysis.hardware_report import _value_rows
    from tiletraffic.simulator.device_model import DEVICE_MODELS
    for name in ("nvidia-h200", "nvidia-h200-cuda", "generic-gpu"):
        model = DEVICE_MODELS[name]
        rows = {r.split("`")[1]: r for r in _value_rows(model, "these data in view", None)}
        assert set(model.guessed) <= set(rows)
        for guess in model.guessed:
            assert "not a guess" not in rows[guess], (name, guess)
        if name == "generic-gpu":
            # no H200 account of how a value was set: every row says guessed
            assert all(r.split(" | ")[2] == "guessed" for r in rows.values())
            assert "read off" not in "".join(rows.values())
        else:
            assert rows["barrier_wavefronts_per_work_group"].startswith(
                "| `barrier_wavefronts_per_work_group` | 2 | not a guess")
            assert f"| {model.local_vector_words} | not a guess" in rows["local_vector_words"]
            assert "| 550 ns |" in rows["memory_latency_s"]
