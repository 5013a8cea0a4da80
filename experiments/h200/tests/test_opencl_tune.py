"""The committed tuning of examples/opencl/mm_tiled.cl's macros on the H200 says what
experiments/h200/opencl_tune/findings.md says."""
from __future__ import annotations

import pytest

from experiments.h200.data import REPORT, read_json

DATA = REPORT / "opencl_tune" / "tune.json.gz"


@pytest.fixture(scope="module")
def doc():
    if not DATA.exists():
        pytest.skip(f"{DATA} is not committed here")
    return read_json(DATA)


def test_every_candidate_modelled_and_measured_or_refused_at_launch(doc):
    assert len(doc["predictions"]) == 12 and not doc["rejected"]
    ok = [m for m in doc["measurements"] if m["status"] == "ok"]
    failed = [m for m in doc["measurements"] if m["status"] == "failed"]
    assert len(ok) == 10 and all(m["check"]["ok"] for m in ok)
    assert sorted(m["label"] for m in failed) == ["TS=32 WPT=1", "TS=32 WPT=2"]
    assert {m["stage"] for m in failed} == {"launch limits"}


def test_regret_and_ranking_as_the_findings_state(doc):
    s = doc["summary"]
    assert s["pick"]["label"] == s["best"]["label"] == "TS=32 WPT=8"
    assert s["regret_ratio"] == 1.0
    assert s["spearman_rho"] == pytest.approx(0.997, abs=5e-4)
    assert s["pairs"] == {"total": 45, "resolvable": 45, "concordant": 44, "discordant": 0,
                          "model_ties": 1}
    pick = next(m for m in doc["measurements"] if m["label"] == "TS=32 WPT=8")
    assert pick["median_s"] * 1e3 == pytest.approx(0.1957, abs=1e-4)
