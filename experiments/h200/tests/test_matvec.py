"""The matrix-vector section of the committed H200 report (experiments/h200/matvec/
analysis.py): its ratios recomputed from the raw times and counters, and the figures of the
loops in flight and of the busy-SMs sweep."""
from __future__ import annotations

import pytest

from tiletraffic.simulator.model.device_model import device_model

from experiments.h200.matvec.analysis import (DATA_PIPE, _busy_lines, _loop_finding,
                                              busy_figures, busy_sms_rows, load_busy_sms,
                                              load_matvec, loop_figures, matvec_rows,
                                              matvec_section)
from experiments.h200.matvec.sass import LoopIssue

from experiments.h200.tests.conftest import committed

SMALL = ("-M4096-K2048-", "-M1024-K4096-")
FAMILIES = ("matvec-naive", "matvec-local", "matvec-local-whole")


def _cells(lines: list[str]) -> list[list[str]]:
    """The cells of every markdown table row (not the separators)."""
    return [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in lines
            if ln.startswith("| ") and not ln.startswith("|---")]


@pytest.fixture(scope="module")
def small(report_dir):
    """The committed data cut to the two smallest (M, K) (quick to model)."""
    committed("matvec", "h200_matvec.json.gz")
    data = load_matvec(report_dir)
    data["opencl"] = [r for r in data["opencl"] if any(s in r["id"] for s in SMALL)]
    data["counters"]["records"] = [r for r in data["counters"]["records"]
                                   if any(s in r["id"] for s in SMALL)]
    return data


def test_every_committed_case_ran_and_was_checked(report_dir):
    committed("matvec", "h200_matvec.json.gz")
    data = load_matvec(report_dir)
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


def test_section_table_has_a_row_per_size_and_an_absent_directory_has_none(small, tmp_path):
    lines, rows = matvec_section(small, device_model("nvidia-h200"))
    assert len(rows) == 2
    # M, K, work-groups and whether A fits in L2 lead each row of the table
    table = {tuple(c[:3]): c[3] for c in _cells(lines) if c[0].replace(",", "").isdigit()}
    assert table == {("4,096", "2,048", "16"): "yes", ("1,024", "4,096", "4"): "yes"}
    assert all(r["a_fits_l2"] for r in rows)
    assert load_matvec(tmp_path) is None
    assert matvec_section(None, device_model("nvidia-h200")) == ([], [])


def test_loop_figures_count_loads_in_flight_and_order_the_rows():
    def row(m, wgs, naive, whole):
        return {"m": m, "k": 4096, "work_groups": wgs, "a_fits_l2": False,
                "schedules": {"matvec-naive": {"opencl_s": naive},
                              "matvec-local": {"opencl_s": 1e-3},
                              "matvec-local-whole": {"opencl_s": whole}}}
    loops = {"matvec-naive": LoopIssue(32, 0, 16, 16), "matvec-local": LoopIssue(16, 16, 16, 4),
             "matvec-local-whole": LoopIssue(16, 16, 16, 16)}
    rows = [row(33792, 132, 0.577e-3, 0.556e-3), row(4096, 16, 0.627e-3, 0.557e-3)]
    fig = loop_figures(rows, loops, 32)
    # 8 k-steps per 32-byte sector: 8 and 4 k-steps in flight hold one miss, 16 hold two
    assert fig["k_steps"] == {"matvec-naive": 8, "matvec-local": 4, "matvec-local-whole": 16}
    assert fig["k_steps_per_sector"] == 8
    assert fig["sectors_per_row"] == {"matvec-naive": 1, "matvec-local": 1,
                                      "matvec-local-whole": 2}
    assert [r["work_groups"] for r in fig["rows"]] == [16, 132]     # by work-groups
    assert len(_loop_finding(rows, loops, 32)) == 1
    assert loop_figures(rows, {}, 32) is None and _loop_finding(rows, {}, 32) == []
    assert loop_figures(rows[:1], loops, 32) is None and _loop_finding(rows[:1], loops, 32) == []
    # a row where A fits in L2 is not one of them
    assert loop_figures([rows[0], {**rows[1], "a_fits_l2": True}], loops, 32) is None


def test_busy_sms_rows_table_and_figures_from_the_committed_sweep(report_dir):
    committed("matvec", "busy_sms")
    data = load_busy_sms(report_dir)
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
        assert r["opencl_s"] == {f: raw[(f, r["m"])] for f in FAMILIES}
    # each work-group has an SM to itself: the model's times do not depend on how many
    assert rows[0]["predicted_s"] == pytest.approx(rows[2]["predicted_s"], rel=1e-9)
    lines = _busy_lines(rows, data["meta"]["created_utc"], model.l2_bytes)
    # the table: work-groups, the three times (ms) and the two ratios, one row each
    t = {f: raw[(f, 16384)] for f in FAMILIES}
    table = {c[0]: c[1:] for c in _cells(lines) if c[0].isdigit()}
    assert sorted(table, key=int) == ["8", "64", "132"]
    assert table["64"] == [f"{t[f] * 1e3:.3f} ms" for f in FAMILIES] + [
        f"{t['matvec-naive'] / t['matvec-local-whole']:.3f}",
        f"{t['matvec-naive'] / t['matvec-local']:.3f}"]
    fig = busy_figures(rows)
    naive = [r["opencl_s"]["matvec-naive"] for r in rows]
    assert naive[0] > naive[1] > naive[2]          # measured: faster with more SMs busy
    assert fig["naive_drop"] == pytest.approx((naive[0] - naive[2]) / naive[0])
    spread = max((max(v) - min(v)) / max(v) for v in (
        [r["opencl_s"][f] for r in rows] for f in ("matvec-local", "matvec-local-whole")))
    assert fig["local_spread"] == pytest.approx(spread) and spread < 0.02
    assert fig["crossing"] == (64, 132)            # matvec-naive overtakes matvec-local
    assert fig["model_same_at_ends"] and [r["work_groups"] for r in fig["modelled"]] == [8, 132]
    followed = _busy_lines(rows, data["meta"]["created_utc"], model.l2_bytes, followed=True)
    assert followed[:-1] == lines[:-1] and followed[-1] != lines[-1]
    assert _busy_lines(rows[:1], "?", model.l2_bytes) == []
    assert busy_sms_rows(None, model) == []
