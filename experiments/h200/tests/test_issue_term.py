"""The issue-term study's helpers (experiments/h200/model_error/issue_term.py) on small
launches: the flat table is the model's own rate, the prefetch credit shortens only a
prefetching work-group's latency, by its own busy time per interval."""
from __future__ import annotations

import warnings

import pytest

import tiletraffic as tt
from experiments.h200.model_error import issue_term as IT
from tiletraffic.simulator.model.device_model import DEVICE_MODELS
from tiletraffic.simulator.model.launch import observe_for_model
from tiletraffic.simulator.model.prediction import interval_latency_s, predict
from tiletraffic.simulator.model.queueing import exposed_latency_s, tail_latency_s

MODEL = DEVICE_MODELS["nvidia-h200-calibrated"]


def _seen_and_prediction(family, **options):
    seen = observe_for_model(tt.build(family, m=512, k=512, n=512, **options), MODEL)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return seen, predict(seen, MODEL, 64)


def test_the_flat_table_is_the_model_s_own_rate_everywhere():
    rates = IT.flat_table(MODEL).issue_rates
    for warps, share in ((1, 0.0), (2.5, 1.0), (16, 0.3)):
        assert rates.rate(warps, share) == MODEL.warp_instructions_per_cycle_per_sub_partition


def test_the_prefetch_credit_shortens_only_a_prefetching_work_group_s_latency():
    seen, p = _seen_and_prediction("gemm-register-blocked", tile=16, tm=4, tn=4, bk=16)
    assert IT.prefetch_time_s(seen, MODEL, p) == p.predicted_time_s
    seen, p = _seen_and_prediction("gemm-prefetch", tile=16, tm=4, tn=4, bk=16)
    busy, intervals = p.time_terms_s[p.bound + "_s"], p.barrier_intervals_per_cu
    customers = min(p.resident_work_groups_per_cu, p.work_groups_per_cu)
    latency = interval_latency_s(MODEL, p.dram_read_bytes, p.l2_read_sectors, seen.load_phases)
    credited = max(0.0, latency - busy / intervals)
    assert credited < latency
    by_hand = (busy + exposed_latency_s(busy, intervals, customers, credited)
               + tail_latency_s(busy, intervals, p.work_groups_per_cu, customers, credited)
               + MODEL.launch_overhead_s)
    assert IT.prefetch_time_s(seen, MODEL, p) == pytest.approx(by_hand)
    assert IT.prefetch_time_s(seen, MODEL, p) < p.predicted_time_s
