"""The measured dispatch of the committed H200 report (experiments/h200/dispatch/analysis.py):
the section is rendered from the raw files, the timelines are complete, and the L2 partition
counters balance with the DRAM reads."""
from __future__ import annotations

import numpy as np
import pytest

from experiments.h200.dispatch.analysis import (PARTITION_METRICS, _value, dispatch_section,
                                                load_dispatch, tail_lines, tail_rows)
from experiments.h200.validation.analysis import model_for

from experiments.h200.tests.conftest import committed, load_committed


@pytest.fixture(scope="module")
def dispatch():
    return load_committed("dispatch", load_dispatch)


def _only(cases, wanted: set[str]):
    """The compared cases whose ids are ``wanted`` (the session's modelled cases)."""
    out = [c for c in cases if c.case_id in wanted]
    assert {c.case_id for c in out} == wanted
    return out


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


def test_section_renders_from_the_committed_files(dispatch, raw, cases):
    model = model_for(raw)
    wanted = {f"gemm-{f}-M{n}-K{n}-N{n}-T16" for f in ("naive", "tiled") for n in (4096, 5120)}
    lines, rows = dispatch_section(dispatch, _only(cases, wanted), model, samples=10)
    assert lines and all(isinstance(line, str) for line in lines)
    assert {r["case"] for r in rows} == wanted
    by = {r["case"]: r for r in rows}
    for n in (4096, 5120):
        naive = by[f"gemm-naive-M{n}-K{n}-N{n}-T16"]
        tiled = by[f"gemm-tiled-M{n}-K{n}-N{n}-T16"]
        assert naive["spread_ratio"] < tiled["spread_ratio"]  # naive: waves
        for r in (naive, tiled):
            compulsory = 2 * n * n * 4
            assert compulsory <= r["dram_timeline_l2"] <= r["dram_timeline_partition"]


def test_tail_rows_compare_each_sms_drain_with_the_model(dispatch, cases):
    # The drain of an SM: its last work-group's start to its last end, recomputed here from
    # the raw timeline; only kernels with barriers whose SMs get more work-groups than they
    # hold have a tail (the naive kernels have no barrier intervals).
    wanted = {"gemm-tiled-M1024-K1024-N1024-T16", "gemm-naive-M1024-K1024-N1024-T32"}
    subset = _only(cases, wanted)
    rows = tail_rows(dispatch, subset)
    assert [r["case"] for r in rows] == ["gemm-tiled-M1024-K1024-N1024-T16"]
    r = rows[0]
    start = dispatch["timelines"]["gemm-tiled-N1024-T16__start_ns"].astype(np.int64)
    end = dispatch["timelines"]["gemm-tiled-N1024-T16__end_ns"].astype(np.int64)
    sm = dispatch["timelines"]["gemm-tiled-N1024-T16__cu"]
    drains = [(end[sm == u].max() - start[sm == u].max()) * 1e-9 for u in np.unique(sm)]
    assert r["drain_measured_s"] == pytest.approx(float(np.median(drains)), rel=1e-12)
    assert r["drain_measured_p10_s"] <= r["drain_measured_s"] <= r["drain_measured_p90_s"]
    # 4096 work-groups on 132 SMs: 32 on the busiest, 8 resident; the CUDA build's model
    assert (r["work_groups_per_cu"], r["resident"], r["device_model"]) == \
        (32, 8, "nvidia-h200-cuda")
    assert 0 < r["tail_s"] < r["drain_model_s"]
    # one table row per case
    assert [ln.split(" | ")[0] for ln in tail_lines(rows) if ln.startswith("| gemm")] == \
        ["| gemm-tiled-M1024-K1024-N1024-T16"]
    assert tail_lines([]) == [] and tail_rows(None, subset) == []


def test_a_directory_without_dispatch_has_no_section(tmp_path):
    assert load_dispatch(tmp_path) is None
    assert dispatch_section(None, [], None) == ([], [])


def test_an_archive_without_the_raw_page_gives_no_counter_tables(tmp_path):
    import shutil
    import tarfile

    d = tmp_path / "dispatch"
    d.mkdir()
    for name in ("h200_dispatch.json.gz", "timelines.npz"):
        shutil.copy(committed("dispatch", name), d / name)
    with tarfile.open(d / "ncu_full.tar.gz", "w:gz"):
        pass
    loaded = load_dispatch(tmp_path)
    assert loaded is not None and "ncu_full" not in loaded and "lsu" not in loaded
