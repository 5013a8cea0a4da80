"""The matrix-vector section of the committed H200 report (analysis.matvec): rendered from
the raw file, its ratios recomputed from the raw times and counters."""
from __future__ import annotations

from pathlib import Path

import pytest

from tiletraffic.analysis.matvec import DATA_PIPE, matvec_rows, matvec_section, load_matvec
from tiletraffic.simulator.device_model import device_model

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


def test_loop_finding_names_loads_in_flight_and_the_times_by_work_groups():
    from tiletraffic.analysis.matvec import _loop_finding
    from tiletraffic.analysis.sass import LoopIssue

    def row(m, wgs, naive, whole):
        return {"m": m, "k": 4096, "work_groups": wgs, "a_fits_l2": False,
                "schedules": {"matvec-naive": {"opencl_s": naive},
                              "matvec-local": {"opencl_s": 1e-3},
                              "matvec-local-whole": {"opencl_s": whole}}}
    loops = {"matvec-naive": LoopIssue(32, 0, 16, 16), "matvec-local": LoopIssue(16, 16, 16, 4),
             "matvec-local-whole": LoopIssue(16, 16, 16, 16)}
    rows = [row(33792, 132, 0.577e-3, 0.556e-3), row(4096, 16, 0.627e-3, 0.557e-3)]
    text = "\n".join(_loop_finding(rows, loops, 32))
    # 8 k-steps per 32-byte sector: 8 and 4 k-steps in flight hold one miss, 16 hold two
    assert "loads of 8 k-steps" in text and "4 in matvec-local and 16 in" in text
    assert ("at most 1 missing sector per row in flight in matvec-naive, 1 in matvec-local "
            "and 2 in matvec-local-whole") in text
    assert "from 0.627 ms at 16 work-groups to 0.577 ms at 132" in text
    assert "stays at 0.556–0.557 ms" in text
    assert _loop_finding(rows, {}, 32) == [] and _loop_finding(rows[:1], loops, 32) == []


def test_busy_sms_rows_and_table_from_the_committed_sweep():
    from tiletraffic.analysis.matvec import _busy_lines, busy_sms_rows, load_busy_sms
    data = load_busy_sms(REPORT)
    assert data is not None and len(data["opencl"]) == 33
    assert all(r["run"]["check"]["ok"] for r in data["opencl"])
    # three sweep points: 8, 64 and 132 work-groups (the model runs at the two ends only)
    data["opencl"] = [r for r in data["opencl"] if r["m"] in (2048, 16384, 33792)]
    model = device_model("nvidia-h200")
    rows = busy_sms_rows(data, model)
    assert [r["work_groups"] for r in rows] == [8, 64, 132]
    assert [len(r["predicted_s"]) for r in rows] == [2, 0, 2]
    raw = {(r["schedule"], r["m"]): r["run"]["median_s"] for r in data["opencl"]}
    for r in rows:
        assert r["opencl_s"] == {f: raw[(f, r["m"])] for f in
                                 ("matvec-naive", "matvec-local", "matvec-local-whole")}
    # each work-group has an SM to itself: the model's times do not depend on how many
    assert rows[0]["predicted_s"] == pytest.approx(rows[2]["predicted_s"], rel=1e-9)
    lines = _busy_lines(rows, data["meta"]["created_utc"], model.l2_bytes)
    t = {f: raw[(f, 16384)] for f in ("matvec-naive", "matvec-local", "matvec-local-whole")}
    assert (f"| 64 | {t['matvec-naive'] * 1e3:.3f} ms | {t['matvec-local'] * 1e3:.3f} ms | "
            f"{t['matvec-local-whole'] * 1e3:.3f} ms | "
            f"{t['matvec-naive'] / t['matvec-local-whole']:.3f} | "
            f"{t['matvec-naive'] / t['matvec-local']:.3f} |") in lines
    text = lines[-1]
    naive = [r["opencl_s"]["matvec-naive"] for r in rows]
    assert naive[0] > naive[1] > naive[2]          # measured: faster with more SMs busy
    assert f"{(naive[0] - naive[2]) / naive[0]:.1%} below its slowest" in text
    spread = max((max(v) - min(v)) / max(v) for v in (
        [r["opencl_s"][f] for r in rows] for f in ("matvec-local", "matvec-local-whole")))
    assert f"change by at most {spread:.1%}" in text
    assert "overtakes matvec-local between 64 and 132" in text
    assert "the same at both, so the same in every row" in text
    assert "was not measured" in text
    followed = _busy_lines(rows, "?", model.l2_bytes, followed=True)[-1]
    assert followed.endswith("\"Other SMs busy with other work\", next.")
    assert _busy_lines(rows[:1], "?", model.l2_bytes) == []
    assert busy_sms_rows(None, model) == []
