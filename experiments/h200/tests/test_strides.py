"""The stride family (experiments/h200/strides/): cases, order, analysis, predictions, and
the PoCL rehearsal of the driver."""
from __future__ import annotations

import json

import pytest

from experiments.h200.strides import analysis, cases as C
from experiments.h200.strides.driver import interleaved, main as driver_main

from experiments.h200.tests.conftest import committed


def test_the_family_is_the_issues():
    ids = [C.case_id(c) for c in C.FULL]
    assert ids[0] == "matvec-naive-M4096-K4096-T256" and ids[32] == "matvec-naive-M4096-K4128-T256"
    assert len([i for i in ids if i.startswith("matvec")]) == 33
    assert ids[33:] == ["gemm-naive-M3200-K3200-N3200-T16", "gemm-tiled-M3200-K3200-N3200-T16",
                        "gemm-naive-M3201-K3201-N3201-T16", "gemm-tiled-M3201-K3201-N3201-T16"]
    aligned = [C.case_id(c) for c in C.FULL if C.stride_multiple_of_line(c)]
    assert aligned == ["matvec-naive-M4096-K4096-T256", "matvec-naive-M4096-K4128-T256",
                       "gemm-naive-M3200-K3200-N3200-T16", "gemm-tiled-M3200-K3200-N3200-T16"]


def test_interleaved_order_visits_every_case_once_outermost_first():
    assert interleaved(tuple(range(5))) == [0, 4, 1, 3, 2]
    assert interleaved(tuple(range(4))) == [0, 3, 1, 2]
    assert interleaved(()) == []


def test_analysis_by_hand():
    raw = {"cases": [
        {"id": "a", "k": 64, "family": "matvec-naive", "stride_multiple_of_128_bytes": True,
         "status": "ok", "checked": True, "median_s": 2e-3, "spread": 0.1},
        {"id": "a", "k": 64, "family": "matvec-naive", "stride_multiple_of_128_bytes": True,
         "status": "ok", "checked": True, "median_s": 4e-3, "spread": 0.3},
        {"id": "b", "k": 65, "family": "matvec-naive", "stride_multiple_of_128_bytes": False,
         "status": "ok", "checked": True, "median_s": 1e-3, "spread": 0.05},
        {"id": "c", "k": 66, "family": "matvec-naive", "stride_multiple_of_128_bytes": False,
         "status": "error", "checked": False, "error": "boom"}]}
    pred = {"cases": {"a": {"predicted_time_s": 2.4e-3}, "b": {"predicted_time_s": 1.5e-3}}}
    table = analysis.rows(raw, pred)
    # a: median of the two medians 3 ms; predicted 2.4 ms -> -20%
    assert table[0]["measured_s"] == pytest.approx(3e-3) and table[0]["spread"] == 0.3
    assert table[0]["error"] == pytest.approx(-0.2)
    assert table[1]["error"] == pytest.approx(0.5)
    assert table[2]["measured_s"] is None and table[2]["not_ok"] == ["error: boom"]
    # K = 64 against its one measured unaligned neighbour (65): 3 / 1
    assert analysis.aligned_ratios(table) == [{"k": 64, "ratio": pytest.approx(3.0),
                                              "neighbours": 1}]
    text = analysis.markdown(table, analysis.aligned_ratios(table))
    assert "| a | yes | 2.0000, 4.0000 | 30.0% | 2.4000 | -20.0% |" in text
    assert "K = 64: 3.00x" in text


def test_committed_predictions_cover_the_family_and_precede_any_run():
    pred = json.loads(committed("strides", "predictions.json").read_text())
    assert set(pred["cases"]) == {C.case_id(c) for c in C.FULL}
    assert not pred["quick"]
    assert pred["device_model"] == "reports/nvidia-h200/preregistered/h200-calibrated.toml"
    mv = pred["cases"]["matvec-naive-M4096-K4096-T256"]
    assert "multiple of 128 B" in mv["methods"]["l1_strided_requests"]
    assert "l1_strided_requests" not in pred["cases"]["gemm-naive-M3200-K3200-N3200-T16"]["methods"]
    for name in ("strides_raw.json", "strides_raw.json.gz"):
        path = committed("strides").joinpath(name)
        if path.exists():
            from experiments.h200.data import read_json
            raw = read_json(path)
            assert pred["created_utc"] < raw["facts"]["utc"]
            assert raw["predictions"]["created_utc"] == pred["created_utc"]


def test_quick_rehearsal_on_pocl(tmp_path):
    pyopencl = pytest.importorskip("pyopencl")
    if not any("Portable" in p.name for p in pyopencl.get_platforms()):
        pytest.skip("no PoCL platform")
    assert driver_main(["--quick", "--out", str(tmp_path)]) == 0
    raw = json.loads((tmp_path / "strides_raw.json").read_text())
    assert [r["id"] for r in raw["cases"]][:2] == ["matvec-naive-M64-K64-T32",
                                                    "matvec-naive-M64-K68-T32"]
    assert len(raw["cases"]) == len(C.QUICK)
    assert all(r["status"] == "ok" and r["checked"] and len(r["run"]["kernel_times_s"]) == 10
               for r in raw["cases"])
    assert (tmp_path / "command.txt").read_text().startswith(raw["command"])
