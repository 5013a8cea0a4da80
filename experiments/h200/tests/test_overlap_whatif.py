"""experiments/h200/ladder/overlap_whatif.py: with no overlap it is the model's network;
with overlap the delay shrinks; its cases come from round 8's committed data."""
from __future__ import annotations

import pytest

from experiments.h200.ladder import overlap_whatif as w
from tiletraffic.simulator.model.queueing import closed_network_throughputs

from experiments.h200.tests.conftest import committed


@pytest.mark.parametrize("per", ["residence", "demand"])
def test_no_overlap_is_the_model_s_network_and_overlap_only_helps(per):
    for customers, demand, delay in ((1, 1.0, 3.0), (4, 0.5, 2.0), (3, 0.0, 1.0)):
        assert w.overlapped_throughputs(0.0, per)(customers, demand, delay) == \
            pytest.approx(closed_network_throughputs(customers, demand, delay))
    # one customer, demand 1, delay 3: X = 1 / 4; hiding half its own work: 1 / 3.5
    assert w.overlapped_throughputs(0.5, per)(1, 1.0, 3.0) == pytest.approx([1 / 3.5])
    # a delay shorter than the hidden work is gone: X(1) = 1 / demand
    assert w.overlapped_throughputs(1.0, per)(1, 1.0, 0.5) == pytest.approx([1.0])


def test_the_cases_are_round_8_s_prefetch_measurements():
    committed("preregistered8", "ladder", "ladder_raw.json.gz")
    cases = w.measured_cases()
    assert sorted((label, n, regs) for label, _, regs, n, _ in cases) == [
        ("prefetch", 1024, 79), ("prefetch", 4096, 79),
        ("prefetch 8x8 bk8", 1024, 128), ("prefetch 8x8 bk8", 4096, 128)]
    assert all(0 < seconds < 0.01 for *_, seconds in cases)


def test_the_overlap_reaches_the_model_s_prediction():
    """What main prints: with f = 0 the model's own prediction (round 8's, 0.1004 ms for
    4x4 at 1024 with 79 registers), with f = 1 no exposed latency left and a shorter time
    (if the model stopped calling the patched function, every f would print the same)."""
    import warnings

    import tiletraffic

    model = str(committed("preregistered6", "h200-calibrated.toml"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = tiletraffic.model(tiletraffic.build("gemm-prefetch", m=1024, k=1024, n=1024),
                                  model, registers_per_work_item=79).prediction
        none = w.predicted({}, 1024, 79, 0.0, "residence", model)
        full = w.predicted({}, 1024, 79, 1.0, "residence", model)
    assert none.predicted_time_s == pytest.approx(plain.predicted_time_s, rel=1e-12)
    assert plain.time_terms_s["barrier_latency_s"] > 0
    assert full.time_terms_s["barrier_latency_s"] == 0
    assert full.predicted_time_s < plain.predicted_time_s
