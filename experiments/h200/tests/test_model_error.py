"""The model-error study (experiments/h200/model_error/, reports/nvidia-h200/model_error/):
its case lists are the committed measurements, its committed tables are what today's model
gives, and its helpers count what they say, on small hand-checked inputs."""
from __future__ import annotations

from collections import Counter

import pytest

from experiments.h200.model_error import cases as C
from experiments.h200.model_error import instructions as I
from experiments.h200.model_error import table as T

from experiments.h200.tests.conftest import committed
from shared_results import computed_once


@pytest.fixture(scope="module")
def all_cases():
    committed("warp_tiled", "tune_five")
    committed("preregistered8", "ladder")
    return C.all_cases()


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """The observations' cache folder, one per test run (under ``-n`` too: the workers
    share it, ``shared_results.computed_once``)."""
    return computed_once(tmp_path_factory, "test_model_error.cache",
                         lambda: tmp_path_factory.mktemp("model-error-cache"))


@pytest.fixture(scope="module")
def rows(all_cases, cache, tmp_path_factory):
    """Every case predicted with both device models (cold cache: about a minute), once per
    test run."""
    return computed_once(tmp_path_factory, "test_model_error.rows",
                         lambda: T.predictions(all_cases, cache))


def test_the_cases_are_every_committed_measurement(all_cases):
    groups = Counter(c["group"] for c in all_cases)
    assert groups == {"warp-tiled": 35, "validation": 22, "ladder": 24}
    warp = [c for c in all_cases if c["group"] == "warp-tiled"]
    assert sum("tune_five" in c["source"] for c in warp) == 19
    assert all(c["family"] == "gemm-warp-tiled" and c["registers"] for c in warp)
    assert all(c["measured_s"] > 0 for c in all_cases)


def test_the_summary_of_errors_by_hand():
    # |errors| 0.05, 0.10, 0.30: median 0.10, worst the signed -0.30, 2 within 20%
    s = C.summary([0.05, -0.30, 0.10])
    assert s == {"cases": 3, "median_abs": 0.10, "worst_abs": 0.30, "worst": -0.30,
                 "within_20pct": 2}


def test_a_counter_record_id_names_its_configuration():
    config, shape = I._config_of_id(
        "gemm-warp-tiled-M1000-K1000-N1000-T16-bk32-tm8-tn4-wg_rows8-wn32-opencl-jit")
    assert shape == (1000, 1000, 1000)
    assert config == ("gemm-warp-tiled", 16, (("bk", 32), ("tm", 8), ("tn", 4),
                                              ("wg_rows", 8), ("wn", 32)))
    assert I._config_of_id("gemm-tiled-M1000-K1000-N1000-T16-opencl-jit") is None


def test_the_static_loop_of_a_small_listing():
    # a loop from 0x0010 back to it: 2 FFMA, 1 LDS.128, the branch; the EXIT after it is out
    sass = "\n".join([
        "        /*0000*/                   MOV R1, R2 ;",
        "        /*0010*/                   LDS.128 R4, [R0] ;",
        "        /*0020*/                   FFMA R8, R4, R5, R8 ;",
        "        /*0030*/                   FFMA R9, R4, R6, R9 ;",
        "        /*0040*/              @!P0 BRA 0x10 ;",
        "        /*0050*/                   EXIT ;"])
    assert I.static_loop(sass) == Counter({"FFMA": 2, "LDS": 1, "BRA": 1})


def test_the_opencl_builds_k_step_loop_has_the_findings_counts():
    committed("local_counters", "run4", "local_counters_run.tar.gz")
    sass = I.opencl_records()[1]
    loop = I.static_loop(sass["gemm-warp-tiled-T16-bk16-tm8-tn8-wg_rows16-wn64"
                              ".opencl-jit.0.sass"])
    assert sum(loop.values()) == 1182
    assert (loop["FFMA"], loop["LDS"], loop["STS"], loop["LDG"], loop["BAR"]) == \
        (1024, 64, 10, 4, 1)


def test_the_committed_table_is_todays_model(rows):
    assert committed("model_error", "table.md").read_text() == T.markdown(rows, terms=True)


def test_the_figures_the_findings_state(rows):
    s = T.summaries(rows)
    pct = {g: {m: (round(100 * v["median_abs"], 1), round(100 * v["worst"], 1))
               for m, v in by.items()} for g, by in s.items()}
    assert pct["warp-tiled"] == {"built-in": (22.4, -41.3), "calibrated": (17.5, -35.1)}
    assert pct["validation"]["calibrated"] == (4.6, -10.2)
    assert pct["ladder"]["calibrated"] == (4.1, -16.6)


def test_the_committed_instruction_tables_are_todays_model(rows, cache):
    from tiletraffic.simulator.model.device_model import device_model

    committed("local_counters", "run4", "local_counters_run.tar.gz")
    calibrated = device_model(dict(T.MODELS)["calibrated"])
    measured = [dict(r, _clock_hz=calibrated.clock_hz,
                     _issue_rate=calibrated.warp_instructions_per_cycle_per_sub_partition)
                for r in rows if r["group"] == "warp-tiled"]
    text = I.markdown(I.counted(cache), I.opencl_records()[1], measured)
    assert committed("model_error", "instructions.md").read_text() == text


def test_the_build_counts_table_gives_median_and_worst_of_each_count():
    from experiments.h200.model_error.build_counts import markdown

    rows = [{"group": "ladder", "built-in": (0.1, -0.2, 0.05), "calibrated": (0.0, 0.3, 0.1)},
            {"group": "ladder", "built-in": (-0.3, 0.1, 0.05), "calibrated": (0.2, 0.1, 0.1)}]
    lines = markdown(rows).splitlines()
    assert lines[2] == "| ladder (2) | built-in | 20.0% / -30.0% | 15.0% / -20.0% | 5.0% / +5.0% |"
    assert lines[3] == "| ladder (2) | calibrated | 10.0% / +20.0% | 20.0% / +30.0% | 10.0% / +10.0% |"
