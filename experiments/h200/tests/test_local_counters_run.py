"""The device calls of the local-memory counter check (experiments/h200/local_counters/):
the committed tables are what ``run_table`` computes from the committed raw data and the
committed model figures, the third call's figures are today's model (small cases
recomputed), and the agreements the findings state hold in the data: the fourth call
(``run4/``, today's sources and every family) for what is measured now, the second
(``run2/``) for the compilers' unrolling of loops whose trip count differed inside a
sub-group."""
from __future__ import annotations

import json

import pytest

from experiments.h200.local_counters import run_table as R

from experiments.h200.tests.conftest import committed


def _rows(run: str) -> dict:
    entries = R.measured(R.load_run(committed("local_counters", run, "local_counters_run.tar.gz")))
    figures = json.loads(committed("local_counters", run, "model.json").read_text())
    return entries, figures


@pytest.fixture(scope="module")
def entries():
    return _rows("run4")[0]


@pytest.fixture(scope="module")
def figures():
    return _rows("run4")[1]


@pytest.fixture(scope="module")
def table_rows(entries, figures):
    return {(r["id"], r["build"]): r for r in R.rows(entries, figures) if r["record"]}


@pytest.fixture(scope="module")
def second_call_rows():
    entries, figures = _rows("run2")
    return {(r["id"], r["build"]): r for r in R.rows(entries, figures) if r["record"]}


def test_the_committed_table_is_the_analysis_of_the_committed_data(entries, figures):
    assert R.RUN.name == "run4"
    table = committed("local_counters", "table.md").read_text()
    assert table == R.markdown(R.rows(entries, figures))


@pytest.mark.parametrize("run", ["run2", "run3"])
def test_an_earlier_calls_table_is_the_analysis_of_its_data(run):
    table = committed("local_counters", run, "table.md").read_text()
    assert table == R.markdown(R.rows(*_rows(run)))


@pytest.mark.parametrize("case_id, build", [
    ("gemm-tiled-M256-K256-N256-T16", "CUDA"),
    ("matvec-local-M333-K5003-T128", "OpenCL"),
    ("matvec-local-M333-K5003-T256", "CUDA"),
    ("matvec-local-whole-M333-K5003-T256", "CUDA"),
    ("matvec-rows-reduce-M333-K5003-T16-wg_rows4", "CUDA"),
    ("gemm-warp-tiled-M256-K256-N256-T16-bk32-tm8-tn4-wg_rows8-wn32", "CUDA"),
])
def test_the_committed_model_figures_are_todays_model(entries, figures, case_id, build):
    entry = next(e for e in entries if e["id"] == case_id and e["build"] == build)
    assert R.model_figures(entry["case"], build) == figures[R.model_key(entry["case"], build)]


def test_the_run_measured_every_family_in_both_builds(entries):
    assert all(e["record"] is not None for e in entries)
    for build in ("CUDA", "OpenCL"):
        assert len({e["case"]["family"] for e in entries if e["build"] == build}) == 11


def test_every_gemm_equals_nsight_but_for_the_l1_units_own_counters(table_rows):
    # both builds, every GEMM configuration and shape measured: global requests and sectors,
    # local instructions and the instructions' own wavefronts exact; the L1 unit's wavefronts
    # and conflicts are the only quantities that differ
    gemms = [r for (cid, _), r in table_rows.items() if cid.startswith("gemm-")]
    assert len(gemms) == 86
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


@pytest.mark.parametrize("case_id, sub_groups, per_sub_group", [
    # 128 sub-groups (M = 4096): 194 LDS.128 and the last word scalar (x_local has K words)
    ("matvec-local-whole-M4096-K777-T256", 128, 194 + 1),
    # 11 sub-groups with rows (M = 333): 1250 LDS.128 and 3 scalar
    ("matvec-local-whole-M333-K5003-T256", 11, 1250 + 3),
    # chunks of 256: the last chunk's 139 words in 34 LDS.128 and one more for the last 3,
    # whose 16 bytes lie inside the chunk
    ("matvec-local-M333-K5003-T256", 11, 19 * 64 + 34 + 1),
    # chunks of 128: the last chunk's 9 words in 2 LDS.128 and one more for the last word
    ("matvec-local-M4096-K777-T128", 128, 6 * 32 + 2 + 1),
])
def test_the_cuda_build_merges_a_loop_of_any_length_and_reads_the_rest_by_room(
        table_rows, case_id, sub_groups, per_sub_group):
    model, measured = table_rows[(case_id, "CUDA")]["values"]["local ld instr."]
    assert model == measured == sub_groups * per_sub_group


def test_unrolled_loops_with_trip_counts_differing_inside_a_sub_group(second_call_rows,
                                                                      table_rows):
    # the second call's sources: remainder-first unrolling (trips mod 4 first, then blocks
    # of 16, 8, 4) where the work-items of one sub-group differ in trips: rows-reduce at
    # K = 1000 (32 and 31 trips) 3 + 2·16 + 8 + 4 = 47 loads per array and row; local-whole's
    # x copy 3 more per work-group (one mixed sub-group with 0 and 3 remainder trips)
    label = "global ld requests"
    rows_reduce = ("matvec-rows-reduce-M1000-K1000-T32", "CUDA")
    assert second_call_rows[rows_reduce]["values"][label] == (
        1000 * 2 * 32, 1000 * 2 * (3 + 2 * 16 + 8 + 4))
    copies = (("matvec-local-whole-M1000-K1000-T256", 4),
              ("matvec-local-whole-M4096-K777-T256", 16),
              ("matvec-local-whole-M333-K5003-T256", 2))
    for cid, groups in copies:
        model, measured = second_call_rows[(cid, "CUDA")]["values"]["local st instr."]
        assert measured - model == 3 * groups, cid
    # today's sources step every work-item of a sub-group alike (then one guarded step):
    # the model's lock-step figures, in both builds
    for build in ("CUDA", "OpenCL"):
        model, measured = table_rows[(rows_reduce[0], build)]["values"][label]
        assert model == measured == 1000 * 2 * 32
        for cid in ("matvec-rows-reduce-M4096-K777-T32", "matvec-rows-reduce-M333-K5003-T32"):
            model, measured = table_rows[(cid, build)]["values"]["global ld sectors"]
            assert model == measured, (cid, build)
        for cid, _ in copies:
            model, measured = table_rows[(cid, build)]["values"]["local st instr."]
            assert model == measured, (cid, build)


def test_the_counts_the_findings_state(table_rows):
    rows = list(table_rows.values())
    verdicts = [R.verdict(r) for r in rows]
    assert len(rows) == 128
    assert (verdicts.count("exact"), verdicts.count("within 1%"),
            verdicts.count("L1 excess")) == (58, 0, 70)
    own = [r for r in rows if all(R.meets(q, p) for q, p in r["values"].items()
                                  if "(L1)" not in q)]
    assert len(own) == 128


@pytest.mark.parametrize("options, per_read", [
    # float4 reads of A and B per depth (LC = 8 lanes along N): an A read's lanes share
    # addresses with their neighbours (8 lanes a float4), so it is served in 2 half
    # sub-group phases: 2 wavefronts; a B read's neighbouring lanes read different float4s
    # (8 distinct, each by 4 lanes): 4 quarter sub-group phases, 4 wavefronts
    ("bk16-tm8-tn8-wg_rows16-wn64", (2 * 2 + 2 * 4) / 4),   # 2 A reads of 4, 2 B of 8 words
    ("bk32-tm8-tn4-wg_rows8-wn32", (2 * 2 + 4) / 3),        # 2 A reads of 4, 1 B of 8
    ("bk32-tm4-tn4-wg_rows8-wn32", (2 + 4) / 2),            # 1 A read of 4, 1 B of 8
])
def test_warp_tiled_float4_reads_take_wavefronts_by_their_distinct_words(table_rows, options,
                                                                         per_read):
    for build in ("CUDA", "OpenCL"):
        values = table_rows[(f"gemm-warp-tiled-M256-K256-N256-T16-{options}", build)]["values"]
        reads = values["local ld instr."][1]
        assert values["local ld wavefronts (instr.)"] == (reads * per_read,) * 2
