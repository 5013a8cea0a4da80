"""Other SMs busy with other work (analysis/busy_background.py): the committed H200 runs and
the text computed from them."""
from __future__ import annotations

import json
from pathlib import Path

from tiletraffic.analysis.busy_background import busy_background_lines, load_busy_background

REPORT = Path(__file__).resolve().parents[1] / "reports" / "nvidia-h200"


def test_committed_runs_are_read_with_every_checked_time():
    runs = load_busy_background(REPORT)
    assert [(r["name"], r["k"]) for r in runs] == [
        ("call1-k4096", 4096), ("call2-k4096", 4096), ("call2-k12288", 12288),
        ("call3-k12288", 12288), ("call3-k8192", 8192)]
    for r in runs:
        raw = json.loads((REPORT / "matvec" / "busy_background" / r["name"]
                          / "h200_busy_background.json").read_text())
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


def test_table_and_text_from_a_hand_made_run(tmp_path):
    assert load_busy_background(tmp_path) == [] and busy_background_lines([]) == []
    families = ("matvec-naive", "matvec-local", "matvec-local-whole")
    base = {"matvec-naive": 2.0e-3, "matvec-local": 1.7e-3, "matvec-local-whole": 1.6e-3}
    factor = {"alone_unpadded": 1.0, "none": 1.0, "spin": 1.01, "l2": 0.9, "dram": 0.98}
    cases = []
    for f in families:
        times = {b: {"median_s": base[f] * (factor[b] if f == "matvec-naive" else 1.02
                                             if b in ("spin", "l2", "dram") else 1.0),
                     "check": {"ok": True}} for b in factor}
        cases.append({"family": f, "k": 8192, "work_groups": 16, "times": times})
        cases.append({"family": f, "k": 8192, "work_groups": 132, "times": {
            "none": {"median_s": base[f] * (0.9 if f == "matvec-naive" else 1.0),
                     "check": {"ok": True}},
            "alone_unpadded": {"median_s": 1.0, "check": {"ok": False}}}})
    folder = tmp_path / "matvec" / "busy_background" / "call1-k8192"
    folder.mkdir(parents=True)
    (folder / "h200_busy_background.json").write_text(json.dumps(
        {"meta": {"created_utc": "2026-11-30T11:40:45Z"}, "cases": cases}))
    runs = load_busy_background(tmp_path)
    assert ("matvec-naive", 132, "alone_unpadded") not in runs[0]["times"]   # failed check
    lines = busy_background_lines(runs)
    assert "| call1-k8192 | 8,192 | read an 8 MiB buffer (L2 hits) | 1.800 ms | 1.734 ms | " \
           "1.632 ms |" in lines
    assert "| call1-k8192 | 8,192 | run the same schedule (132 work-groups) | 1.800 ms | " \
           "1.700 ms | 1.600 ms |" in lines
    text = lines[-1]
    assert ("changes by -10.0% when the other 116 SMs run matvec-naive too (132 "
            "work-groups), by -10.0% while they read the 8 MiB buffer, by -2.0% while they "
            "stream from DRAM and by +1.0% while they only do arithmetic") in text
    assert "matvec-local-whole's times change by +2.0% with any of the three" in text
    assert "at least two thirds of matvec-naive's speed-up from 116 more matvec " \
           "work-groups in 1 of 1 runs;" in text
    assert "The unused shared memory itself changes the 16-work-group times by +0.0%" in text
    # no L2 effect: the text says nothing reproduces the speed-up
    for case in cases:
        if case["family"] == "matvec-naive" and case["work_groups"] == 16:
            case["times"]["l2"]["median_s"] = base["matvec-naive"]
    (folder / "h200_busy_background.json").write_text(json.dumps(
        {"meta": {"created_utc": "2026-11-30T11:40:45Z"}, "cases": cases}))
    assert "No background reproduces" in busy_background_lines(
        load_busy_background(tmp_path))[-1]
    # blank, lead, blank, head and separator, 6 rows, blank, text
    assert len(busy_background_lines(runs)) == 3 + 2 + 6 + 2


def test_clock_rates_of_the_busy_sms_sweep_and_their_sentence(tmp_path):
    from tiletraffic.analysis.busy_background import _clock_sentence, load_clocks
    clocks = load_clocks(REPORT)
    assert sorted(clocks["naive_s"]) == [8, 12, 16, 20, 24, 32, 40, 48, 64, 96, 132]
    # measured: matvec-naive gets faster with more busy SMs while no clock moves by 1%
    assert clocks["naive_s"][132] < 0.95 * clocks["naive_s"][8]
    assert set(clocks["clocks_hz"]) == {"the SMs", "the L2", "DRAM", "the GPCs",
                                        "the system (sys)"}
    assert all(hi / lo < 1.02 for lo, hi in clocks["clocks_hz"].values())
    text = _clock_sentence(clocks)
    assert f"takes {clocks['naive_s'][8] * 1e3:.3f} ms with 8 work-groups" in text
    # the speed-up is fewer SM cycles: the cycles fall within 1% of the time
    cycles = clocks["naive_sm_cycles"]
    fewer = cycles[132] / cycles[8] - 1
    assert abs(fewer - (clocks["naive_s"][132] / clocks["naive_s"][8] - 1)) < 0.01
    assert f"its SM cycles by {-fewer:.1%}: it needs fewer cycles" in text
    lo, hi = clocks["clocks_hz"]["the L2"]
    assert f"the L2 {lo / 1e9:.3f}–{hi / 1e9:.3f} GHz" in text
    assert load_clocks(tmp_path) is None and _clock_sentence(None) == ""
