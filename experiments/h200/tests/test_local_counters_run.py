"""The device call of the local-memory counter check (experiments/h200/local_counters/):
the committed table is what ``run_table`` computes from the committed raw data and the
committed model figures, those figures are today's model (small cases recomputed), and the
agreements the findings state hold in the data."""
from __future__ import annotations

import json

import pytest

from experiments.h200.local_counters import run_table as R

from .conftest import committed


@pytest.fixture(scope="module")
def entries():
    committed("local_counters", "run2", "local_counters_run.tar.gz")
    return R.measured(R.load_run())


@pytest.fixture(scope="module")
def figures():
    return json.loads(committed("local_counters", "run2", "model.json").read_text())


def test_the_committed_table_is_the_analysis_of_the_committed_data(entries, figures):
    table = committed("local_counters", "table.md").read_text()
    assert table == R.markdown(R.rows(entries, figures))


@pytest.mark.parametrize("case_id, build", [
    ("gemm-tiled-M256-K256-N256-T16", "CUDA"),
    ("matvec-local-M333-K5003-T128", "OpenCL"),
])
def test_the_committed_model_figures_are_todays_model(entries, figures, case_id, build):
    entry = next(e for e in entries if e["id"] == case_id and e["build"] == build)
    assert R.model_figures(entry["case"], build) == figures[R.model_key(entry["case"], build)]


def test_the_run_measured_every_family_in_the_cuda_build(entries):
    cuda = [e for e in entries if e["build"] == "CUDA"]
    assert all(e["record"] is not None for e in cuda)
    assert len({e["case"]["family"] for e in cuda}) == 9


@pytest.fixture(scope="module")
def table_rows(entries, figures):
    return {(r["id"], r["build"]): r for r in R.rows(entries, figures) if r["record"]}


def test_every_gemm_equals_nsight_but_for_the_l1_units_own_counters(table_rows):
    # both builds, every GEMM configuration and shape measured: global requests and sectors,
    # local instructions and the instructions' own wavefronts exact; the L1 unit's wavefronts
    # and conflicts are the only quantities that differ
    gemms = [r for (cid, _), r in table_rows.items() if cid.startswith("gemm-")]
    assert len(gemms) == 68
    for r in gemms:
        for label, (model, measured) in r["values"].items():
            if "(L1)" not in label:
                assert model == measured, (r["id"], r["build"], label)


def test_l1_excess_differs_between_two_launches_of_one_case(table_rows):
    first = table_rows[("gemm-tiled-M1000-K1000-N1000-T16", "CUDA")]["values"]
    again = table_rows[("gemm-tiled-M1000-K1000-N1000-T16-again", "CUDA")]["values"]
    assert first["local ld conflicts (L1)"][1] != again["local ld conflicts (L1)"][1]
    assert first["local ld wavefronts (instr.)"] == again["local ld wavefronts (instr.)"]
    assert R.l1_excess(table_rows[("gemm-tiled-M1000-K1000-N1000-T16", "CUDA")])


def test_gemm_tiled_stores_one_element_per_work_item_and_k_step_at_every_shape(table_rows):
    # the schedule chooses each element (the load, or 0 outside) and stores it once, as
    # both compilers do: 3969 work-groups x 8 sub-groups x 63 K steps x 2 tiles at 1000³
    for (cid, build), r in table_rows.items():
        if cid.startswith("gemm-tiled-"):
            model, measured = r["values"]["local st instr."]
            assert model == measured, (cid, build)
    for build in ("CUDA", "OpenCL"):
        assert table_rows[("gemm-tiled-M1000-K1000-N1000-T16", build)]["values"][
            "local st instr."][1] == 63 * 63 * 63 * 16


def test_the_first_call_counted_the_same_stores_as_the_second():
    # the first call (run/, the schedule then storing in both sides of an If) measured the
    # same store instructions: the model changed, the compilers' code did not
    first = {(e["id"], e["build"]): e for e in R.measured(
        R.load_run(committed("local_counters", "run", "local_counters_run.tar.gz")))}
    metric = "smsp__sass_inst_executed_op_shared_st.sum"
    rec = first[("gemm-tiled-M1000-K1000-N1000-T16", "CUDA")]["record"]
    assert rec["metrics"][metric]["value"] == 63 * 63 * 63 * 16


def test_matvec_local_whole_is_merged_by_the_cuda_build_at_every_k(table_rows):
    # NVRTC reads x with 128-bit loads at K = 777 and 5003 as at 1000; the model merges
    # only at K a multiple of 4 (an off row of the table, written down in the findings)
    for cid in ("matvec-local-whole-M4096-K777-T256", "matvec-local-whole-M333-K5003-T256"):
        model, measured = table_rows[(cid, "CUDA")]["values"]["local ld instr."]
        assert 3.9 * measured < model < 4.1 * measured
    model, measured = table_rows[("matvec-local-whole-M1000-K1000-T256", "CUDA")]["values"][
        "local ld instr."]
    assert model == measured


def test_matvec_unrolled_remainders_give_the_cuda_builds_extra_executions(table_rows):
    # remainder-first unrolling (trips mod 4 first, then blocks of 16, 8, 4) where the
    # work-items of one sub-group differ in trips: rows-reduce at K = 1000 (32 and 31 trips)
    # 3 + 2·16 + 8 + 4 = 47 loads per array and row; local-whole's x copy 3 more per
    # work-group (one mixed sub-group with 0 and 3 remainder trips)
    model, measured = table_rows[("matvec-rows-reduce-M1000-K1000-T32", "CUDA")]["values"][
        "global ld requests"]
    assert (model, measured) == (1000 * 2 * 32, 1000 * 2 * (3 + 2 * 16 + 8 + 4))
    for cid, groups in (("matvec-local-whole-M1000-K1000-T256", 4),
                        ("matvec-local-whole-M4096-K777-T256", 16),
                        ("matvec-local-whole-M333-K5003-T256", 2)):
        model, measured = table_rows[(cid, "CUDA")]["values"]["local st instr."]
        assert measured - model == 3 * groups, cid


def test_the_counts_the_findings_state(table_rows):
    rows = list(table_rows.values())
    verdicts = [R.verdict(r) for r in rows]
    assert len(rows) == 101
    assert (verdicts.count("exact"), verdicts.count("within 1%"),
            verdicts.count("L1 excess")) == (28, 0, 56)
    l1 = [r for r in rows if all(R.meets(q, p) for q, p in r["values"].items()
                                 if "wavefronts" in q or "conflicts" in q)]
    own = [r for r in rows if all(R.meets(q, p) for q, p in r["values"].items()
                                  if "wavefronts (instr.)" in q)]
    assert (len(l1), len(own)) == (37, 97)
