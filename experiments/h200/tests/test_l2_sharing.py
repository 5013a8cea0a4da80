"""The L2-sharing measurements of the committed H200 report (experiments/h200/l2_sharing/
analysis.py): the helpers on hand-made data, the committed raw files complete and checked,
and the section's rows computed from them."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from tiletraffic.simulator.model.device_model import DEVICE_MODELS
from tiletraffic.simulator.model.dram import miss_probability

from experiments.h200.data import gzip_bytes, read_json
from experiments.h200.l2_sharing.analysis import (MIB, fit_l2_curve, half_miss_distance_mib,
                                                  l2_sharing_section, load_l2_sharing,
                                                  max_running, progress_rows, retention_us,
                                                  stagger_rows, window_rows)

from experiments.h200.tests.conftest import committed, load_committed

NVIDIA_H200 = DEVICE_MODELS["nvidia-h200"]


@pytest.fixture(scope="module")
def data():
    return load_committed("l2_sharing", load_l2_sharing)


@pytest.fixture(scope="module")
def section(data):
    """The section rendered once (few Monte Carlo samples): (lines, rows)."""
    return l2_sharing_section(data, [], NVIDIA_H200, samples=4)


def test_max_running_by_hand():
    # work-groups [0,1), [0,3), [1,2), [2,4): two run at t=0, 1 and 2 (an end at t frees it)
    assert max_running(np.array([0., 0., 1., 2.]), np.array([1., 3., 2., 4.])) == 2
    assert max_running(np.array([0., 0., 0.]), np.array([5., 5., 5.])) == 3
    assert max_running(np.array([0., 1., 2.]), np.array([1., 2., 3.])) == 1


def test_half_miss_distance_interpolates():
    rows = [{"distance_mib": 10, "miss_read_1x": 0.0}, {"distance_mib": 30, "miss_read_1x": 0.2},
            {"distance_mib": 40, "miss_read_1x": 0.8}, {"distance_mib": 50, "miss_read_1x": 1.0}]
    assert half_miss_distance_mib(rows) == pytest.approx(35.0)  # 30 + (0.3 / 0.6) * 10
    assert half_miss_distance_mib(rows[:2]) is None  # never crosses one half


def test_fit_recovers_a_curve_made_by_the_model():
    rows = [{"distance_mib": d, "miss_read_1x": miss_probability(d * MIB, 40 * MIB, 32)}
            for d in (1, 9, 17, 25, 33, 41, 49)]
    assert fit_l2_curve(rows) == (40 * MIB, 32)
    assert fit_l2_curve(rows[:2]) is None


def test_committed_runs_are_complete_and_checked(data):
    rec = data["record"]
    for key in ("slices", "slices_2"):
        stage = rec[key]
        assert stage["rc"] == 0 and len(stage["records"]) == len(stage["cases"])
        assert all(e["check"]["ok"] for e in stage["driver"]), key
    assert all(v["check_ok"] for v in rec["variants"]["driver"])
    assert len(rec["variants"]["records"]) == len(rec["variants"]["driver"])
    assert all(t["check"]["ok"] for t in rec["slices_timelines"] + rec["slices_2_timelines"])
    assert all(p["check_ok"] for p in rec["progress"])
    for key in ("l2_window", "l2_reread", "l2_policy"):
        assert rec[key]["rc"] == 0 and len(rec[key]["records"]) == len(rec[key]["plan"]), key


def test_one_row_of_work_groups_reads_each_operand_once(data):
    # compulsory reads: the counter is what the slices are measured in units of
    for case, ncu in zip(data["record"]["slices"]["cases"], data["record"]["slices"]["records"]):
        if case["m"] == case["tile"]:
            compulsory = (case["m"] * case["k"] + case["k"] * case["n"]) * 4
            assert ncu["metrics"]["dram__bytes_read.sum"]["value"] == pytest.approx(
                compulsory, rel=0.01), case["id"]


def test_window_curve_and_progress_from_the_committed_files(data):
    rows = window_rows(data, NVIDIA_H200)
    assert [r["between_mib"] for r in rows] == sorted(r["between_mib"] for r in rows)
    for r in rows:
        assert 0.0 <= r["miss_read_1x"] <= 1.02 and 0.0 <= r["miss_model"] <= 1.0
        if r["distance_mib"] <= 17:
            assert r["miss_read_1x"] < 0.01
    assert rows[-1]["miss_read_1x"] > 0.9
    assert 33 < half_miss_distance_mib(rows) < 41
    for p in progress_rows(data):
        assert p["warp_spread_us_p50"] <= p["warp_spread_us_p99"] < 1.0, p["case"]
        assert 0.0 <= p["progress_departure_p99"] <= p["progress_departure_max"] < 0.25, p
        if p["case"].startswith("gemm-naive"):
            assert p["progress_departure_p99"] < 0.05, p


def test_section_rows_from_the_committed_files(section):
    lines, rows = section
    text = "\n".join(lines)
    assert "nan" not in text and "()" not in text      # no number missing from the text
    assert rows["problems"] == []                       # every stage complete and read
    for key in ("window", "reread", "slices", "variants", "progress", "stagger_paced",
                "stagger_free_running", "placed", "placed_loaded"):
        assert rows[key], key
    assert rows["fitted_curve"] and rows["sm_partitions"]
    assert len(rows["slices"]) == 22 and len(rows["variants"]) == 8
    assert rows["policy"]["re_reads"] == 14 and len(rows["policy"]["telling"]) == 1
    assert all(t["miss"] < 0.01 for t in rows["policy"]["telling"])
    naive16 = next(r for r in rows["slices"] if r["case"] == "gemm-naive-M1024-K4096-N4096-T16")
    assert naive16["running_at_once"] == 1056 and naive16["waves"] == pytest.approx(15.5, 0.01)
    assert naive16["b_reads_measured"] > 2 * naive16["b_reads_lockstep"]


def test_incomplete_stage_is_left_out_not_misread(data, tmp_path):
    # one Nsight record missing: the stage must be left out (and said so), never shifted
    dst = tmp_path / "l2_sharing"
    shutil.copytree(committed("l2_sharing"), dst)
    path = dst / "h200_l2_sharing_window_progress.json.gz"
    rec = read_json(path)
    rec["l2_window"]["records"].pop(5)
    path.write_bytes(gzip_bytes(json.dumps(rec).encode()))
    broken = load_l2_sharing(tmp_path)
    assert window_rows(broken, NVIDIA_H200) == []
    lines, rows = l2_sharing_section(broken, [], NVIDIA_H200, samples=2)
    assert rows["window"] == [] and rows["half_miss_distance_mib"] is None
    assert [p for p in rows["problems"] if "l2_window" in p]    # named as left out
    assert "nan" not in "\n".join(lines)


def test_missing_files_render_without_missing_numbers(tmp_path):
    dst = tmp_path / "l2_sharing"
    shutil.copytree(committed("l2_sharing"), dst)
    for name in ("h200_l2_sharing.json.gz", "progress.npz",
                 "h200_l2_sharing_stagger_paced.json.gz"):
        (dst / name).unlink()
    lines, rows = l2_sharing_section(load_l2_sharing(tmp_path), [], NVIDIA_H200, samples=2)
    text = "\n".join(lines)
    assert rows["slices"] and rows["stagger_paced"] == [] and rows["reread"] == []
    assert "nan" not in text and "()" not in text and ":  (" not in text


def test_two_files_with_one_stage_are_refused(tmp_path):
    dst = tmp_path / "l2_sharing"
    shutil.copytree(committed("l2_sharing"), dst)
    shutil.copy(dst / "h200_l2_sharing_policy.json.gz", dst / "h200_l2_sharing_zcopy.json.gz")
    with pytest.raises(ValueError, match="l2_policy"):
        load_l2_sharing(tmp_path)


def test_retention_is_capacity_over_fill_rate():
    assert retention_us({"l2_fill_bytes_per_s": 40 * MIB / 1e-4}, 40) == pytest.approx(100.0)
    assert retention_us({"l2_fill_bytes_per_s": 0}, 40) is None
    assert retention_us({"l2_fill_bytes_per_s": 1e9}, None) is None


def test_staggered_readers_from_the_committed_files(data):
    rows = stagger_rows(data)
    assert {r["background"] for r in rows} == {"none", "stores streaming 512 MiB",
                                               "reads of 8 MiB kept in L2"}
    for r in rows:
        # between one fill shared by all readers and one fill each (a little slack: the
        # counter includes a few MB of other traffic)
        assert 0.98 <= r["reads_of_data"] <= r["readers"] + 0.05, r
        if r["background"] != "stores streaming 512 MiB" or r["delay_us"] == 0:
            assert r["reads_of_data"] == pytest.approx(1.0, abs=0.02), r
            assert r["latest_us"] < 1.0, r  # paced readers kept their clock
    stores8 = {r["delay_us"]: r["reads_of_data"] for r in rows
               if r["background"] == "stores streaming 512 MiB" and r["readers"] == 8}
    assert stores8[20] > stores8[10] > stores8[5] > stores8[2] >= stores8[0]
    assert stores8[100] == pytest.approx(8, abs=0.05)
    free = stagger_rows(data, "stagger")
    assert free and all("latest_us" not in r for r in free)


def test_sm_partitions_split_the_sms_in_two(data):
    from experiments.h200.l2_sharing.analysis import _ranges, sm_partitions

    p = sm_partitions(data)
    assert 0 in p["same"] and len(p["same"]) == len(p["other"]) == 66
    assert sorted(p["same"] + p["other"]) == list(range(132))
    for m in p["miss_fraction"]:
        assert m < 0.05 or 0.45 < m < 0.55  # none in between: two partitions, half homed
    assert _ranges([0, 1, 2, 5, 7, 8]) == "0–2, 5, 7–8"


def test_placed_readers_share_across_partitions(data):
    from experiments.h200.l2_sharing.analysis import placed_rows, sm_partitions

    rows = placed_rows(data)
    parts = sm_partitions(data)
    assert {r["placement"] for r in rows} == {"one partition", "alternating partitions"}
    for r in rows:
        sides = {sm in parts["same"] for sm in r["reader_sm"]}
        assert sides == ({True} if r["placement"] == "one partition" else {True, False}), r
        assert r["reads_of_data"] == pytest.approx(1.0, abs=0.02), r


def test_loaded_placed_readers_from_the_committed_files(data):
    from experiments.h200.l2_sharing.analysis import placed_rows

    rows = placed_rows(data, "placed_loaded")
    assert len(rows) == 10 and all("latest_us" in r for r in rows)
    for r in rows:
        assert 0.98 <= r["reads_of_data"] <= r["readers"] + 0.05, r
        assert r["background_bytes_per_s"] > 1e12, r  # the stores really ran
    at0 = [r for r in rows if r["delay_us"] == 0]
    assert all(r["reads_of_data"] == pytest.approx(1.0, abs=0.02) for r in at0)
