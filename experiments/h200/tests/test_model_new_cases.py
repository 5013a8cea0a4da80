"""The new-cases call (experiments/h200/model_new_cases/): its committed predictions are of
its case file (so ``validate --predictions`` measures exactly them), made from a clean tree
with the models they name, and the cases are new: none is a committed H200 measurement's."""
from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest

from tiletraffic.analysis.validation.cases import read_cases
from tiletraffic.simulator.model.device_model import built_in_file

HERE = Path(__file__).resolve().parents[1] / "model_new_cases"
ROOT = HERE.parents[2]


def _predicted(name: str) -> dict:
    return json.loads((HERE / "predicted" / name).read_text())


def test_the_committed_predictions_are_of_the_case_file_and_name_their_models():
    cases = read_cases(HERE / "cases.toml")
    assert len(cases) >= 20
    families = Counter(c.family for c in cases)
    assert all(families[f] >= 4 for f in ("gemm-warp-tiled", "gemm-vectorized",
                                           "gemm-prefetch", "gemm-split-k"))
    h200, h100 = _predicted("predictions.json"), _predicted("predictions-h100.json")
    for doc in (h200, h100):
        assert [c.id for c in cases] == list(doc["predictions"])
        assert all("error" not in p for p in doc["predictions"].values())
        assert doc["tiletraffic"]["git_dirty"] is False
    assert h200["device_model"]["sha256"] == hashlib.sha256(
        built_in_file("nvidia-h200-calibrated").read_bytes()).hexdigest()
    model = ROOT / h100["device_model"]["source"]
    assert h100["device_model"]["sha256"] == hashlib.sha256(model.read_bytes()).hexdigest()
    # the same H100 model the half/batched call committed
    assert model.read_bytes() == (ROOT / "experiments/h200/half_batched/predicted/"
                                  "nvidia-h100-80gb-hbm3.toml").read_bytes()


def test_no_case_is_one_measured_before():
    """No case's family, shape and options is a committed H200 measurement's (the model
    study's warp-tiled, validation and ladder kernels, and the split-K tunes'); two are at
    a measured shape (a target shape, 512 x 11008 x 4096) with new options."""
    import gzip

    from experiments.h200.model_error import cases as C

    def key(family, m, k, n, tile, options):
        options = {o: v for o, v in options.items() if o != "wn"}   # default or not
        return (family, m, k, n, tile, tuple(sorted(options.items())))

    measured = {key(c["family"], c["m"], c["k"], c["n"], c["tile"], c["options"])
                for c in C.all_cases()}
    for path in (ROOT / "reports/nvidia-h200/split_k").rglob("tune-*.json.gz"):
        data = json.loads(gzip.open(path).read())
        m, k, n = (int(x) for x in path.name[5:-8].split("-"))
        for x in data["measurements"]:
            params = dict(x["params"])
            measured.add(key(x["family"], m, k, n, params.pop("tile"), params))
    new = [key(c.family, c.m, c.k, c.n, c.tile, dict(c.options))
           for c in read_cases(HERE / "cases.toml")]
    assert sum(k[0] == "gemm-split-k" for k in measured) >= 10
    assert len(measured) > 80 and not measured & set(new)
    shapes = {k[1:4] for k in measured}
    assert [k[:4] for k in new if k[1:4] in shapes] == [
        ("gemm-prefetch", 512, 11008, 4096), ("gemm-split-k", 512, 11008, 4096)]


def test_the_analysis_reads_back_what_the_call_brings(tmp_path):
    from experiments.h200.model_new_cases import analysis

    predicted = _predicted("predictions.json")
    ids = list(predicted["predictions"])[:2]
    times = [predicted["predictions"][cid]["predicted_time_s"] for cid in ids]
    # the first measured 25% slower than predicted (error -20%), the second as predicted
    measured = {ids[0]: times[0] * 1.25, ids[1]: times[1]}
    validation = {"measurements": {cid: {"rounds": [{"kernel_times_s": [t, t, t]}]}
                                   for cid, t in measured.items()}}
    (tmp_path / "validate").mkdir()
    (tmp_path / "validate" / "validation.json").write_text(json.dumps(validation))
    (tmp_path / "tune").mkdir()
    ok = lambda label, rank, s: {"label": label, "status": "ok",            # noqa: E731
                                 "predicted_rank": rank, "median_s": s}
    (tmp_path / "tune" / "tune-1000-1000-1000.json").write_text(json.dumps({
        "status": "complete", "predictions": [{}, {}, {}],
        "measurements": [ok("a", 1, 1.1e-4), ok("b", 2, 1.0e-4)]}))
    (tmp_path / "cublas.json").write_text(json.dumps([
        {"m": 1000, "k": 1000, "n": 1000, "median_s": 0.8e-4}]))
    errs = analysis.errors(predicted, analysis.measured_s(validation))
    assert errs == pytest.approx({ids[0]: -0.2, ids[1]: 0.0})
    text = analysis.error_table("x", errs)
    assert "| all (2) | 10.0% / -20.0% (not met) |" in text
    tune = analysis.tune_table(tmp_path, [{"m": 1000, "k": 1000, "n": 1000,
                                           "median_s": 0.8e-4}])
    assert "| 1000, 1000, 1000 | complete | 2 / 3 | a (rank 1; 72.7%) | b (80.0%) | +10.0% |" \
        in tune
    assert analysis.main([str(tmp_path)]) == 0
