"""The measured dispatch of the committed H200 report (analysis.dispatch): the section is
rendered from the raw files, the timelines are complete, and the L2 partition counters
balance with the DRAM reads."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from analysis.dispatch import PARTITION_METRICS, _value, dispatch_section, load_dispatch
from analysis.hardware import compare, load_raw, model_for

REPORT = Path(__file__).resolve().parents[1] / "reports" / "nvidia-h200"


@pytest.fixture(scope="module")
def dispatch():
    d = load_dispatch(REPORT)
    assert d is not None
    return d


def test_every_timeline_has_one_start_and_end_per_work_group(dispatch):
    for rec in dispatch["record"]["timelines"]:
        start = dispatch["timelines"][rec["id"] + "__start_ns"]
        end = dispatch["timelines"][rec["id"] + "__end_ns"]
        assert rec["check"]["ok"], rec["id"]
        assert len(start) == len(end) == rec["summary"]["work_groups"] == np.prod(rec["grid"])
        assert np.all(end > start) and start.min() == 0


def test_l2_partition_counters_balance_with_dram_reads(dispatch):
    for case, row in dispatch["ncu_full"].items():
        own, asked, there, dram = (_value(row, m) for m, _ in PARTITION_METRICS[1:])
        if dram and dram > 1e7:  # beyond L2 only
            assert own - asked + there == pytest.approx(dram, rel=0.03), case


def test_section_renders_from_the_committed_files(dispatch):
    raw = load_raw(REPORT)
    model = model_for(raw)
    wanted = {f"gemm-{f}-M{n}-K{n}-N{n}-T16" for f in ("naive", "tiled") for n in (4096, 5120)}
    records = raw["counters"]["records"]
    raw["counters"]["records"] = [r for r in records if r["id"] in wanted]
    cases = compare(raw, model)
    assert len(cases) == 4
    lines, rows = dispatch_section(dispatch, cases, model, samples=10)
    text = "\n".join(lines)
    assert "## Work-group dispatch, measured" in text and "ltcfabric" in text
    assert {r["case"] for r in rows} == wanted
    by = {r["case"]: r for r in rows}
    for n in (4096, 5120):
        naive = by[f"gemm-naive-M{n}-K{n}-N{n}-T16"]
        tiled = by[f"gemm-tiled-M{n}-K{n}-N{n}-T16"]
        assert naive["spread_ratio"] < tiled["spread_ratio"]  # naive: waves
        for r in (naive, tiled):
            compulsory = 2 * n * n * 4
            assert compulsory <= r["dram_timeline_l2"] <= r["dram_timeline_partition"]


def test_a_directory_without_dispatch_has_no_section(tmp_path):
    assert load_dispatch(tmp_path) is None
    assert dispatch_section(None, [], None) == ([], [])


def test_an_archive_without_the_raw_page_gives_no_counter_tables(tmp_path):
    import shutil
    import tarfile

    d = tmp_path / "dispatch"
    d.mkdir()
    for name in ("h200_dispatch.json", "timelines.npz"):
        shutil.copy(REPORT / "dispatch" / name, d / name)
    with tarfile.open(d / "ncu_full.tar.gz", "w:gz"):
        pass
    loaded = load_dispatch(tmp_path)
    assert loaded is not None and "ncu_full" not in loaded and "lsu" not in loaded
