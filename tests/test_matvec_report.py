"""The matrix-vector section of the committed H200 report (analysis.matvec): rendered from
the raw file, its ratios recomputed from the raw times and counters."""
from __future__ import annotations

from pathlib import Path

import pytest

from analysis.matvec import DATA_PIPE, matvec_rows, matvec_section, load_matvec
from simulator.device_model import device_model

REPORT = Path(__file__).resolve().parents[1] / "reports" / "nvidia-h200"
SMALL = ("-M4096-K2048-", "-M1024-K4096-")


@pytest.fixture(scope="module")
def small():
    """The committed data cut to the two smallest (M, K) (quick to model)."""
    data = load_matvec(REPORT)
    assert data is not None
    data["opencl"] = [r for r in data["opencl"] if any(s in r["id"] for s in SMALL)]
    data["counters"]["records"] = [r for r in data["counters"]["records"]
                                   if any(s in r["id"] for s in SMALL)]
    return data


def test_every_committed_case_ran_and_was_checked():
    data = load_matvec(REPORT)
    assert len(data["opencl"]) == len(data["meta"]["cases"]) == 29
    assert all(r["run"]["check"]["ok"] for r in data["opencl"])
    assert {r["id"] for r in data["counters"]["records"]} == set(data["meta"]["cases"])


def test_rows_recompute_the_raw_times_and_wavefronts(small):
    rows = matvec_rows(small, device_model("nvidia-h200"))
    assert [(r["m"], r["k"], r["work_groups"]) for r in rows] == [(4096, 2048, 16),
                                                                  (1024, 4096, 4)]
    runs = {r["id"]: r for r in small["opencl"]}
    counted = {r["id"]: r for r in small["counters"]["records"]}
    for r in rows:
        for family, s in r["schedules"].items():
            case = f"{family}-M{r['m']}-K{r['k']}-T256"
            assert s["opencl_s"] == runs[case]["run"]["median_s"]
            pipe = counted[case]["metrics"][DATA_PIPE]["value"]
            assert s["data_pipe_wavefronts_per_sm"] == pytest.approx(pipe / r["work_groups"])
        # the model charges naive and local-whole the same within 0.5%; the hardware does not
        naive, whole = r["schedules"]["matvec-naive"], r["schedules"]["matvec-local-whole"]
        assert naive["predicted_s"] == pytest.approx(whole["predicted_s"], rel=5e-3)
        assert naive["cuda_s"] / whole["cuda_s"] > 1.05


def test_section_renders_and_an_absent_directory_has_none(small, tmp_path):
    lines, rows = matvec_section(small, device_model("nvidia-h200"))
    text = "\n".join(lines)
    assert text.startswith("## Matrix-vector k-steps, measured")
    assert "| 4,096 | 2,048 | 16 | yes |" in text and "where A comes from DRAM" in text
    assert len(rows) == 2
    assert load_matvec(tmp_path) is None
    assert matvec_section(None, device_model("nvidia-h200")) == ([], [])
