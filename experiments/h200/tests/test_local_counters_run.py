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
    committed("local_counters", "run", "local_counters_run.tar.gz")
    return R.measured(R.load_run())


@pytest.fixture(scope="module")
def figures():
    return json.loads(committed("local_counters", "run", "model.json").read_text())


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


def test_every_gemm_meets_the_instruction_targets_of_loads(table_rows):
    # both builds, every GEMM configuration and shape measured: global load requests and
    # sectors, local load instructions and their own wavefronts exact
    gemms = [r for (cid, _), r in table_rows.items() if cid.startswith("gemm-")]
    assert len(gemms) == 48
    for r in gemms:
        for label in ("global ld requests", "global ld sectors", "local ld instr.",
                      "local ld wavefronts (instr.)"):
            if label in r["values"]:
                model, measured = r["values"][label]
                assert model == measured, (r["id"], r["build"], label)


def test_l1_excess_differs_between_two_launches_of_one_case(table_rows):
    first = table_rows[("gemm-tiled-M1000-K1000-N1000-T16", "CUDA")]["values"]
    again = table_rows[("gemm-tiled-M1000-K1000-N1000-T16-again", "CUDA")]["values"]
    assert first["local ld conflicts (L1)"][1] != again["local ld conflicts (L1)"][1]
    assert first["local ld wavefronts (instr.)"] == again["local ld wavefronts (instr.)"]
    assert R.l1_excess(table_rows[("gemm-tiled-M1000-K1000-N1000-T16", "CUDA")])


def test_gemm_tiled_stores_are_over_counted_only_where_the_tile_does_not_divide(table_rows):
    for (cid, build), r in table_rows.items():
        if cid.startswith("gemm-tiled-"):
            model, measured = r["values"]["local st instr."]
            if "-M256-K256-N256-" in cid:
                assert model == measured, (cid, build)
            else:
                assert model > measured, (cid, build)


def test_matvec_local_whole_is_merged_by_the_cuda_build_at_every_k(table_rows):
    # NVRTC reads x with 128-bit loads at K = 777 and 5003 as at 1000; the model merges
    # only at K a multiple of 4 (an off row of the table, written down in the findings)
    for cid in ("matvec-local-whole-M4096-K777-T256", "matvec-local-whole-M333-K5003-T256"):
        model, measured = table_rows[(cid, "CUDA")]["values"]["local ld instr."]
        assert 3.9 * measured < model < 4.1 * measured
    model, measured = table_rows[("matvec-local-whole-M1000-K1000-T256", "CUDA")]["values"][
        "local ld instr."]
    assert model == measured


def test_gemm_tiled_store_excess_is_its_diverging_sub_groups(table_rows):
    # 1000³, B = 16, sub-groups of 2 tile rows: the guard diverges for A at the last K step
    # in every work-group (63² × 8) and for B in the last column of work-groups at every K
    # step (63 × 63 × 8), less the sub-groups wholly outside at the last step (2 × 63 × 4)
    diverging = 63 * 63 * 8 + 63 * 63 * 8 - 2 * 63 * 4
    for build in ("CUDA", "OpenCL"):
        model, measured = table_rows[("gemm-tiled-M1000-K1000-N1000-T16", build)]["values"][
            "local st instr."]
        assert model - measured == diverging
        assert measured == 63 * 63 * 63 * 16


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
    assert len(rows) == 81
    assert (verdicts.count("exact"), verdicts.count("within 1%"),
            verdicts.count("L1 excess")) == (27, 1, 19)
    l1 = [r for r in rows if all(R.meets(q, p) for q, p in r["values"].items()
                                 if "wavefronts" in q or "conflicts" in q)]
    own = [r for r in rows if all(R.meets(q, p) for q, p in r["values"].items()
                                  if "wavefronts (instr.)" in q)]
    assert (len(l1), len(own)) == (32, 65)
