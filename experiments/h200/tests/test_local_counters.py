"""The local-memory counter check (experiments/h200/local_counters/): the committed table
is what the analysis computes from the committed data, and every compared record meets its
target: global requests and sectors and local load instructions exact, local wavefronts
and conflicts exact or above the model by exactly the L1 unit's conflicts, which the load
instructions' own counters (where read) do not have."""
from __future__ import annotations

import ast
import json

import pytest

from experiments.h200.data import load_json
from experiments.h200.local_counters import analysis as A
from experiments.h200.local_counters.cases import code_cases, config_id

from experiments.h200.tests.conftest import committed


def eval_key(name: str) -> tuple:
    """A key of the model file (a tuple's repr) back as the tuple (a literal only)."""
    return ast.literal_eval(name)


@pytest.fixture(scope="module")
def rows():
    committed("local_counters", "offline_sass.json.gz")
    figures = json.loads(committed("local_counters", "earlier_model.json").read_text())
    return A.rows(figures)


def test_the_committed_table_is_the_analysis_of_the_committed_data(rows):
    assert committed("local_counters", "earlier_records.md").read_text() == A.markdown(rows)


def test_the_committed_model_figures_are_todays_model():
    # one small case recomputed (the file's big launches take minutes): the committed
    # figures must be what the model gives today
    figures = json.loads(committed("local_counters", "earlier_model.json").read_text())
    small = [k for k in figures if "'matvec-local', 4096, 2048" in k]
    assert small
    for name in small[:1]:
        key = eval_key(name)
        case = {"family": key[1], "m": key[2], "k": key[3], "n": key[4], "tile": key[5],
                "options": dict(key[6])}
        assert A._model(key, case) == figures[name]


def test_every_compared_record_meets_its_target(rows):
    compared = [r for r in rows if not r["why_not"]]
    families = {r["id"].split("-M")[0] for r in compared}
    assert {"gemm-naive", "gemm-tiled", "gemm-vectorized", "matvec-naive", "matvec-local",
            "matvec-local-whole"} <= families
    for r in compared:
        assert A.verdict(r) in ("exact", "L1 excess"), r
        for label in ("global load requests", "global load sectors", "local load instructions",
                      "local load wavefronts (instructions)"):
            if label in r["values"]:
                model, measured = r["values"][label]
                assert model == measured, (r["id"], label)


def test_l1_excess_is_timing_not_addresses(rows):
    # the same launch (gemm-tiled 1024³, B = 16, CUDA build) in four device calls: the
    # instructions' own wavefronts equal the model's every time, the L1 unit's conflicts
    # differ from call to call (an access pattern's would repeat exactly)
    same = [r for r in rows if r["id"] == "gemm-tiled-M1024-K1024-N1024-T16" and not r["why_not"]]
    excess = {r["values"]["local load conflicts (L1)"][1] for r in same}
    assert len(same) >= 3 and len(excess) == len(same)
    assert all(r["values"]["local load conflicts (L1)"][0] == 0 for r in same)
    for r in same:
        if "local load wavefronts (instructions)" in r["values"]:
            model, measured = r["values"]["local load wavefronts (instructions)"]
            assert model == measured


def test_offline_nvrtc_reproduced_the_devices_cuda_builds_and_covers_every_configuration():
    data = load_json(committed("local_counters", "offline_sass.json.gz"))
    checks = [row for rows in data["checks"].values() for row in rows]
    assert len(checks) == 20 and all(row["equal"] for row in checks)
    assert data["meta"]["nvrtc_version"] == "13.0"
    # read at K = 256 for the families whose source has K in it (one configuration there)
    assert {c["config"] for c in code_cases()} <= set(data["configs"])


def test_the_cuda_build_merges_the_register_tiles_a_loads_into_128_bit_loads():
    # today's source: the kk loop fully unrolled, A_tile[row][kk..kk+3] one LDS.128, the B
    # tile's B_tile[kk][col] (a row apart) scalar: per K step of 16, TM·16/4 and 16·TN
    configs = load_json(committed("local_counters", "offline_sass.json.gz"))["configs"]
    for cid, (tm, tn, bk) in {"gemm-register-blocked-T16": (4, 4, 16),
                              "gemm-register-blocked-T16-bk8-tm8-tn8": (8, 8, 8),
                              "gemm-register-blocked-T16-bk16-tm4-tn8": (4, 8, 16),
                              "gemm-register-blocked-T16-bk16-tm8-tn4": (8, 4, 16),
                              "gemm-register-blocked-T16-bk32-tm4-tn4": (4, 4, 32)}.items():
        counts = configs[cid]["sass_counts"]
        assert (counts["LDS.128"], counts["LDS"]) == (tm * bk // 4, bk * tn), cid
