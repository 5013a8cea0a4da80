"""Prediction against measurement (experiments.h200.hardware) on hand-made raw data."""
from __future__ import annotations

import pytest

from experiments.h200.hardware import (COMPARED, compare, counter_model_for, modelled_launch,
                                       rankings, speedups)
from tiletraffic.simulator.model.device_model import DEVICE_MODELS

N = 64
CASES = [("gemm-naive", 16), ("gemm-tiled", 16), ("gemm-tiled", 8)]


def _raw(times_s: dict[str, float], scale: float = 1.0) -> dict:
    """Raw data whose counters are the counted model's predictions times ``scale`` (exact
    where ``scale`` is 1) and whose OpenCL times are ``times_s`` by case id."""
    counted = counter_model_for(DEVICE_MODELS["nvidia-h200"])
    records, opencl = [], []
    for family, tile in CASES:
        cid = f"{family}-T{tile}"
        predicted = modelled_launch(family, N, N, N, tile, counted).to_dict()
        metrics = {metric: {"value": predicted[key] * scale, "unit": ""}
                   for _, key, metric, _ in COMPARED}
        metrics["gpu__time_duration.sum"] = {"value": times_s[cid] * 1e9, "unit": "ns"}
        records.append({"id": cid, "schedule": family, "m": N, "k": N, "n": N, "tile": tile,
                        "metrics": metrics})
        opencl.append({"id": cid, "run": {"median_s": times_s[cid]}})
    return {"counters": {"records": records}, "opencl_cases": opencl}


def test_compare_pairs_every_counted_case_with_both_builds_predictions():
    model = DEVICE_MODELS["nvidia-h200"]
    times = {"gemm-naive-T16": 4e-6, "gemm-tiled-T16": 3e-6, "gemm-tiled-T8": 2e-6}
    cases = compare(_raw(times), model)
    assert [c.case_id for c in cases] == list(times)
    for c in cases:
        assert c.launch.prediction.device_model == "nvidia-h200"
        assert c.counted.prediction.device_model == "nvidia-h200-cuda"
        rows = {r["quantity"]: r for r in c.rows()}
        # counters equal to the prediction: every target met, every error zero
        assert all(r["met"] in (True, None) for r in rows.values())
        assert rows["global load sectors"]["relative_error"] == 0.0
        assert rows["kernel time (s)"]["measured"] == times[c.case_id]
        assert c.time_pair() == (c.launch.prediction.predicted_time_s, times[c.case_id])
    # 30% fewer sectors counted than predicted: the exact targets are missed
    off = compare(_raw(times, scale=1 / 1.3), model)
    row = {r["quantity"]: r for r in off[0].rows()}["global load sectors"]
    assert row["met"] is False and row["relative_error"] == pytest.approx(0.3)
    # a record without numeric counters is left out
    raw = _raw(times)
    raw["counters"]["records"][0]["metrics"] = {"x": {"value": "n/a"}}
    assert [c.case_id for c in compare(raw, model)] == list(times)[1:]


def test_speedups_and_rankings_use_the_measured_times():
    model = DEVICE_MODELS["nvidia-h200"]
    times = {"gemm-naive-T16": 4e-6, "gemm-tiled-T16": 2e-6, "gemm-tiled-T8": 3e-6}
    cases = compare(_raw(times), model)
    by = {c.case_id: c for c in cases}
    (speed,) = speedups(cases)                  # only B = 16 has a naive partner
    assert (speed["case"], speed["versus"]) == ("gemm-tiled-T16", "gemm-naive-T16")
    assert speed["measured"] == pytest.approx(2.0)
    assert speed["predicted"] == pytest.approx(
        by["gemm-naive-T16"].launch.prediction.predicted_time_s
        / by["gemm-tiled-T16"].launch.prediction.predicted_time_s)
    (rank,) = rankings(cases)
    assert rank["size"] == ("gemm", N, N, N)
    assert rank["measured"] == ["gemm-tiled B=16", "gemm-tiled B=8", "gemm-naive B=16"]
    assert sorted(rank["predicted"]) == sorted(rank["measured"])
    assert rank["match"] == (rank["predicted"] == rank["measured"]) == (not rank["discordant"])
