"""The half-storage and batched-GEMM call: its case file is the committed predictions' (so
``validate --predictions`` measures exactly them), and the comparison reads the
predictions, a validate folder and cuBLAS's JSON into the pairs it names."""
from __future__ import annotations

import json
from pathlib import Path

from experiments.h200.half_batched import analysis
from tiletraffic.analysis.validation.cases import read_cases

HERE = Path(__file__).resolve().parents[1] / "half_batched"
PREDICTED = json.loads((HERE / "predicted" / "predictions.json").read_text())


def test_the_committed_predictions_are_of_the_case_file():
    cases = read_cases(HERE / "cases.toml")
    assert [c.id for c in cases] == list(PREDICTED["predictions"])
    assert all("error" not in p for p in PREDICTED["predictions"].values())
    assert PREDICTED["tiletraffic"]["git_dirty"] is False


def test_predicted_pairs_say_half_matvec_nearly_2x_and_batches_far_faster():
    pairs = dict(analysis.pairs(analysis.predicted_times(PREDICTED)))
    matvec = {k: v for k, v in pairs.items() if k.startswith("matvec-rows-reduce")}
    gemm = {k: v for k, v in pairs.items() if "float32 / float16" in k and "gemm" in k}
    batches = {k: v for k, v in pairs.items() if "batched" in k}
    assert len(matvec) == 8 and all(1.5 < v < 2.05 for v in matvec.values())
    assert len(gemm) == 4 and all(0.95 < v < 1.2 for v in gemm.values())
    assert len(batches) == 4 and all(v > 5 for v in batches.values())


def test_the_comparison_pairs_measured_and_cublas_times(tmp_path):
    case = PREDICTED["cases"][0]
    case_id = next(iter(PREDICTED["predictions"]))
    half = PREDICTED["cases"][4]
    half_id = list(PREDICTED["predictions"])[4]
    validation = {"meta": {"device": {"device_name": "NVIDIA H100 80GB HBM3"}},
                  "cases": [case, half],
                  "measurements": {case_id: {"rounds": [{"median_s": 4e-5}, {"median_s": 4e-5}]},
                                   half_id: {"rounds": [{"median_s": 2e-5}]}}}
    cublas = {"torch": "2", "device": "NVIDIA H100", "cases": [
        {"op": "mv", "m": 4096, "k": 4096, "dtype": "float32", "median_ms": 0.03},
        {"op": "mv", "m": 4096, "k": 4096, "dtype": "float16", "median_ms": 0.02},
        {"op": "bmm", "batch": 64, "m": 128, "k": 128, "n": 128, "dtype": "float32",
         "median_ms": 0.01},
        {"op": "matmul x batch", "batch": 64, "m": 128, "k": 128, "n": 128,
         "dtype": "float32", "median_ms": 0.5}]}
    text = analysis.render(PREDICTED, validation, cublas)
    assert "| matvec-rows-reduce 4096x4096: float32 / float16 | 1.61 | 2.00 |" in text
    assert "| torch.mv 4096x4096: float32 / float16 | 0.0300 | 0.0200 | 1.50 |" in text
    assert "matmul loop / bmm | 0.5000 | 0.0100 | 50.00 |" in text
