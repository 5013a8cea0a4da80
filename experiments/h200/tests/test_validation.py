"""The issue-4 H200 run (reports/nvidia-h200/h200_raw.json.gz, written on the device by
experiments/h200/validation/driver.py): the model's predictions against the committed
counters and times, and the validation report rendered from them. No GPU needed."""
from __future__ import annotations

import json

from experiments.h200.hardware import rankings, speedups
from tiletraffic.simulator.model.device_model import DEVICE_MODELS

from experiments.h200.render import main as render_main
from experiments.h200.validation.analysis import model_for, value_rows

from experiments.h200.tests.conftest import committed


def test_model_is_the_h200_one(raw):
    assert model_for(raw).name == "nvidia-h200"
    assert model_for({"device_facts": {"name": "other"}}).name == "generic-gpu"


def test_global_load_instructions_requests_and_sectors_equal_the_counters(cases):
    assert len(cases) == 27
    families = {c.family for c in cases}
    assert {"gemm-naive", "gemm-tiled", "matvec-naive", "matvec-local"} <= families
    for c in cases:
        rows = {r["quantity"]: r for r in c.rows()}
        for q in ("global load instructions", "global load requests", "global load sectors"):
            assert rows[q]["predicted"] == rows[q]["measured"], (c.case_id, q, rows[q])
            assert rows[q]["met"] is True


def test_local_load_instructions_equal_the_counters(cases):
    for c in cases:
        row = {r["quantity"]: r for r in c.rows()}["local load instructions"]
        assert row["predicted"] == row["measured"], (c.case_id, row)


def test_l2_to_l1_sectors_within_25_percent(cases):
    for c in cases:
        row = {r["quantity"]: r for r in c.rows()}["L2→L1 read sectors"]
        assert abs(row["relative_error"]) <= 0.25, (c.case_id, row)
        assert row["met"] is True


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
        # a ranking matches exactly when no pair is discordant
        assert r["match"] == (not r["discordant"])


def test_committed_validation_json_holds_every_case_and_its_figures(cases):
    data = json.loads(committed("validation.json").read_text())
    assert data["device_model"] == "nvidia-h200"
    assert [c["case"] for c in data["cases"]] == [c.case_id for c in cases]
    for rendered, c in zip(data["cases"], cases):
        # the committed figures are the model's of today: a model change shows here first
        assert rendered["predicted_time_s"] == c.launch.prediction.predicted_time_s, c.case_id
        assert rendered["opencl_median_s"] == c.measured_time_s
    assert data["speedups"] == speedups(cases)


def test_render_cli_refuses_a_directory_without_raw_data(tmp_path, capsys):
    assert render_main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path) in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "validation.md").exists()


def test_guessed_values_table_has_a_row_for_every_guess():
    for name in ("nvidia-h200", "nvidia-h200-cuda", "generic-gpu"):
        model = DEVICE_MODELS[name]
        rows = value_rows(model, "these data in view", None)
        cells = [[c.strip() for c in r.strip("|").split("|")] for r in rows]
        names = [c[0].strip("`") for c in cells]
        assert set(model.guessed) <= set(names)
        assert len(names) == len(set(names))
        values = {n: c[1] for n, c in zip(names, cells)}
        assert all(len(c) == 4 for c in cells)
        if name == "generic-gpu":
            assert set(names) == set(model.guessed)
        else:
            # the values read off measurements are listed with the guesses, with their value
            assert {"local_vector_words", "local_vector_min_wavefronts",
                    "barrier_wavefronts_per_work_group"} <= set(names)
            assert values["barrier_wavefronts_per_work_group"] == "2"
            assert values["local_vector_words"] == str(model.local_vector_words)
            assert values["memory_latency_s"] == f"{model.memory_latency_s * 1e9:g} ns"
