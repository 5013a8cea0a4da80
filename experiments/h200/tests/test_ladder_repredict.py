"""experiments.h200.ladder.repredict on a small case: the cached simulation gives what
tiletraffic.model predicts, and the variants differ only where they should."""
from __future__ import annotations

import warnings

import tiletraffic
from tiletraffic.simulator.model.device_model import NVIDIA_H200

from experiments.h200.ladder import cases as C
from experiments.h200.ladder.repredict import simulated, variants


def test_both_is_what_the_model_predicts_and_cache_round_trips(tmp_path):
    case = next(c for c in C.CASES if c[0] == "register-blocked")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = simulated(case, 128, tmp_path, NVIDIA_H200)
        again = simulated(case, 128, tmp_path, NVIDIA_H200)      # from the pickle
        v = variants(again, NVIDIA_H200, (64, 168))
        model = tiletraffic.model(C.build(case, 128), "nvidia-h200").prediction
    assert data["counts"] == again["counts"]
    assert v["both"] == model.predicted_time_s
    assert v["registers_estimate"] == model.registers_per_work_item
    # 128^3: 4 work-groups, one per compute unit: occupancy cannot matter
    assert v["before"] == v["registers"] and v["issue"] == v["both"] == v["R=168"]


def test_measured_registers_of_every_ladder_case():
    from experiments.h200.ladder.repredict import measured_registers
    from experiments.h200.tests.conftest import committed

    got = measured_registers(committed("registers", "build_logs.txt"))
    assert got == {"naive": 32, "tiled": 31, "register-blocked": 59, "vectorized": 48,
                   "prefetch": 59, "register-blocked 8x8 bk8": 128, "vectorized 8x8 bk8": 123,
                   "vectorized 8x8 bk16": 122, "vectorized 8x8 bk16 wg8x8": 128,
                   "prefetch 8x8 bk8": 128}
