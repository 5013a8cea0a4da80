"""Other SMs busy with other work (experiments/h200/busy_background/analysis.py): the
committed H200 runs and the figures computed from them."""
from __future__ import annotations

import json

import pytest

from experiments.h200.busy_background.analysis import (BACKGROUNDS, _clock_sentence,
                                                       busy_background_lines,
                                                       busy_background_summary,
                                                       load_busy_background, load_clocks)
from experiments.h200.data import gzip_bytes, read_json

from experiments.h200.tests.conftest import committed

FAMILIES = ("matvec-naive", "matvec-local", "matvec-local-whole")


def _table(lines: list[str], run: str) -> list[list[float]]:
    """The times (ms) of ``run``'s rows of the table, in row order."""
    rows = [[c.strip() for c in ln.strip("|").split("|")] for ln in lines
            if ln.startswith(f"| {run} |")]
    return [[float(c.removesuffix(" ms")) for c in r[3:]] for r in rows]


def test_committed_runs_are_read_with_every_checked_time(report_dir):
    committed("matvec", "busy_background")
    runs = load_busy_background(report_dir)
    assert [(r["name"], r["k"]) for r in runs] == [
        ("call1-k4096", 4096), ("call2-k4096", 4096), ("call2-k12288", 12288),
        ("call3-k12288", 12288), ("call3-k8192", 8192)]
    for r in runs:
        raw = read_json(report_dir / "matvec" / "busy_background" / r["name"]
                        / "h200_busy_background.json.gz")
        for case in raw["cases"]:
            for background, t in case["times"].items():
                assert t["check"]["ok"]
                assert r["times"][(case["family"], case["work_groups"], background)] \
                    == t["median_s"]
        # 16 work-groups: five backgrounds; 132 (every SM): alone, with and without padding
        assert len(r["times"]) == 3 * 5 + 3 * 2
    # measured: other SMs' L2 reads speed matvec-naive up in every run
    assert all(r["times"][("matvec-naive", 16, "l2")] < r["times"][("matvec-naive", 16, "none")]
               for r in runs)
    summary = busy_background_summary(runs)
    assert all(c < 0 for c in summary["naive"]["l2"]) and len(summary["compared"]) == 5


def _write_run(tmp_path, cases):
    folder = tmp_path / "matvec" / "busy_background" / "call1-k8192"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "h200_busy_background.json.gz").write_bytes(gzip_bytes(json.dumps(
        {"meta": {"created_utc": "2026-11-30T11:40:45Z"}, "cases": cases}).encode()))


def test_table_and_figures_from_a_hand_made_run(tmp_path):
    assert load_busy_background(tmp_path) == [] and busy_background_lines([]) == []
    base = {"matvec-naive": 2.0e-3, "matvec-local": 1.7e-3, "matvec-local-whole": 1.6e-3}
    factor = {"alone_unpadded": 1.0, "none": 1.0, "spin": 1.01, "l2": 0.9, "dram": 0.98}
    cases = []
    for f in FAMILIES:
        times = {b: {"median_s": base[f] * (factor[b] if f == "matvec-naive" else 1.02
                                             if b in ("spin", "l2", "dram") else 1.0),
                     "check": {"ok": True}} for b in factor}
        cases.append({"family": f, "k": 8192, "work_groups": 16, "times": times})
        cases.append({"family": f, "k": 8192, "work_groups": 132, "times": {
            "none": {"median_s": base[f] * (0.9 if f == "matvec-naive" else 1.0),
                     "check": {"ok": True}},
            "alone_unpadded": {"median_s": 1.0, "check": {"ok": False}}}})
    _write_run(tmp_path, cases)
    runs = load_busy_background(tmp_path)
    assert ("matvec-naive", 132, "alone_unpadded") not in runs[0]["times"]   # failed check
    lines = busy_background_lines(runs)
    # blank, lead, blank, head and separator, one row per background and one for 132
    # work-groups, blank, text
    assert len(lines) == 3 + 2 + len(BACKGROUNDS) + 1 + 2
    table = _table(lines, "call1-k8192")
    assert len(table) == len(BACKGROUNDS) + 1
    l2_row = [b for b, _ in BACKGROUNDS].index("l2")
    assert table[l2_row] == [1.8, pytest.approx(1.734), pytest.approx(1.632)]
    assert table[-1] == [1.8, 1.7, 1.6]                 # every SM runs the schedule
    s = busy_background_summary(runs)
    assert s["naive_132"] == {"call1-k8192": pytest.approx(-0.10)}
    assert s["naive"] == {"spin": [pytest.approx(0.01)], "l2": [pytest.approx(-0.10)],
                          "dram": [pytest.approx(-0.02)]}
    assert s["local"] == [pytest.approx(0.02)] * 6
    assert s["reproduced"] == ["call1-k8192"] and s["missed"] == []
    assert set(s["padding"].values()) == {0.0}
    # no L2 effect: nothing reproduces the speed-up
    for case in cases:
        if case["family"] == "matvec-naive" and case["work_groups"] == 16:
            case["times"]["l2"]["median_s"] = base["matvec-naive"]
    _write_run(tmp_path, cases)
    s = busy_background_summary(load_busy_background(tmp_path))
    assert s["reproduced"] == [] and s["missed"] == ["call1-k8192"]


def test_clock_rates_of_the_busy_sms_sweep(report_dir, tmp_path):
    committed("matvec", "busy_sms_clocks")
    clocks = load_clocks(report_dir)
    assert sorted(clocks["naive_s"]) == [8, 12, 16, 20, 24, 32, 40, 48, 64, 96, 132]
    # measured: matvec-naive gets faster with more busy SMs while no clock moves by 2%
    assert clocks["naive_s"][132] < 0.95 * clocks["naive_s"][8]
    assert set(clocks["clocks_hz"]) == {"the SMs", "the L2", "DRAM", "the GPCs",
                                        "the system (sys)"}
    assert all(hi / lo < 1.02 for lo, hi in clocks["clocks_hz"].values())
    # the speed-up is fewer SM cycles: the cycles fall within 1% of the time
    cycles = clocks["naive_sm_cycles"]
    fewer = cycles[132] / cycles[8] - 1
    assert abs(fewer - (clocks["naive_s"][132] / clocks["naive_s"][8] - 1)) < 0.01
    assert load_clocks(tmp_path) is None and _clock_sentence(None) == ""
