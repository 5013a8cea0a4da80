"""Tests of simulator.model.device_model and the model (simulator.model.prediction, simulator.model.queueing:
L1 footprint, DRAM, time ceilings) and of ``tiletraffic simulate --device-model``, against values computed by hand."""
from __future__ import annotations

import json
import math
import re
import warnings
from dataclasses import replace

import numpy as np
import pytest
from click.testing import CliRunner

from tiletraffic.analysis.cli import main
from tiletraffic.simulator.observers.counters import AccessEvent
from tiletraffic.simulator.model.device_model import (DEVICE_MODELS, GENERIC_GPU_MODEL,
                                                      NVIDIA_H200, NVIDIA_H200_CUDA,
                                                      DeviceModel, GuessedValueWarning,
                                                      device_model)
from tiletraffic.simulator.engine.accelerators import ALL, Accelerators
from tiletraffic.simulator.engine.simulation import simulate
from tiletraffic.simulator.observers.memory import MemoryObserver
from tiletraffic.simulator.kernels.families import build
from tiletraffic.simulator.observers.cache import FootprintObserver
from tiletraffic.simulator.model.launch import model_launch
from tiletraffic.simulator.model.observation import LaunchObservation
from tiletraffic.simulator.model.prediction import (ADDED_TIME_TERMS, interval_latency_s,
                                                    predict, term_name)
from tiletraffic.simulator.model.queueing import (closed_network_throughput, drain_time_s,
                                                  exposed_latency_s, tail_latency_s)

KIB = 1024


# ----------------------------------------------------------------- resident work-groups
@pytest.mark.parametrize("items, local_bytes, expected", [
    # 16x16 = 256 work-items, no local memory: min(32 groups, 2048/256 = 8, no local limit)
    (256, 0, 8),
    # 32x32 = 1024, 8 KiB: min(32, 2048/1024 = 2, 228 KiB / (8 KiB + 1 KiB reserved)
    #   = 233472 / 9216 = 25.3 -> 25) = 2
    (1024, 8 * KIB, 2),
    # 8x8 = 64, 512 B: min(32, 2048/64 = 32, 233472 / 1536 = 152) = 32
    (64, 512, 32),
    # 8x8 = 64, 48 KiB: min(32, 32, 233472 / (49152 + 1024) = 4.65 -> 4) = 4 (local-bound)
    (64, 48 * KIB, 4),
    # gemm-tiled B = 16: 256 work-items, 2 x 16 x 16 x 4 B = 2 KiB: min(32, 8, 233472/3072
    #   = 76) = 8
    (256, 2 * KIB, 8),
    # 1 work-item, no local memory: min(32, 2048, -) = 32 (work-group limit)
    (1, 0, 32),
    # 48 work-items: 2048 // 48 = 42.67 -> 42, capped at 32
    (48, 0, 32),
    # 96 work-items: 2048 // 96 = 21
    (96, 0, 21),
])
def test_h200_resident_work_groups_by_hand(items, local_bytes, expected):
    assert NVIDIA_H200.resident_work_groups_per_cu(items, local_bytes) == expected


@pytest.mark.parametrize("items, local_bytes, expected", [
    # generic model: 64 KiB local per compute unit = 65536 B
    (256, 2 * KIB, 8),      # min(32, 8, 65536 / 3072 = 21)
    (1024, 8 * KIB, 2),     # min(32, 2, 65536 / 9216 = 7)
    (64, 8 * KIB, 7),       # min(32, 32, 7): local-bound
    (64, 63 * KIB, 1),      # 65536 / 65536 = 1
])
def test_generic_resident_work_groups_by_hand(items, local_bytes, expected):
    assert GENERIC_GPU_MODEL.resident_work_groups_per_cu(items, local_bytes) == expected


def test_h200_documented_values():
    m = NVIDIA_H200
    assert (m.compute_units, m.sub_group_size, m.sector_bytes, m.line_bytes) == (132, 32, 32, 128)
    assert (m.local_banks, m.bank_bytes) == (32, 4)
    assert m.l2_bytes == 50 * 2**20
    # 132 CUs x 1.98 GHz x 1 wavefront x 128 B = 33.45 TB/s
    assert m.l1_bytes_per_s == pytest.approx(132 * 1.98e9 * 128, rel=1e-12)


# ------------------------------------------------------------------------- guesses
def warned_names(model: DeviceModel) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.warn_guesses()
    assert all(issubclass(w.category, GuessedValueWarning) for w in caught)
    names = []
    for w in caught:
        found = re.search(r": (\w+) = ", str(w.message))
        assert found, str(w.message)
        names.append(found.group(1))
    return names


def test_generic_model_warns_a_guessed_value_warning():
    with pytest.warns(GuessedValueWarning, match="generic-gpu"):
        GENERIC_GPU_MODEL.warn_guesses()
    names = warned_names(GENERIC_GPU_MODEL)
    assert sorted(names) == sorted(GENERIC_GPU_MODEL.guessed)
    # 17, l2_partitions (guessed: 1), and the 5 register and issue values (NVIDIA's); the
    # strided-request costs and the DRAM round trip are left out (0, documented), not guessed
    assert len(names) == len(set(names)) == 23
    assert {"compute_units", "l2_bytes", "dram_bytes_per_s", "fp32_flop_per_s"} <= set(names)


def test_h200_warns_only_for_its_listed_guesses():
    names = warned_names(NVIDIA_H200)
    assert sorted(names) == sorted(NVIDIA_H200.guessed)
    assert len(names) == len(set(names))
    # the values with a documented source are not guesses
    documented = {"compute_units", "sub_group_size", "sector_bytes", "line_bytes",
                  "local_banks", "bank_bytes", "l2_bytes", "dram_bytes_per_s",
                  "fp32_flop_per_s", "clock_hz", "local_mem_bytes_per_cu"}
    assert not documented & set(names)
    with pytest.warns(GuessedValueWarning) as record:
        NVIDIA_H200.warn_guesses()
    assert any("nvidia-h200: l2_bytes_per_s = " in str(w.message) for w in record)


def test_a_model_without_guesses_warns_nothing():
    quiet = replace(NVIDIA_H200, guessed=())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet.warn_guesses()
        model_launch(build("gemm-naive", 8, 8, 8, tile=4), quiet)


def test_model_launch_reports_guesses():
    with pytest.warns(GuessedValueWarning):
        model_launch(build("gemm-naive", 8, 8, 8, tile=4), GENERIC_GPU_MODEL)


def test_device_model_lookup():
    assert device_model("nvidia-h200") is NVIDIA_H200
    assert set(DEVICE_MODELS) >= {"nvidia-h200", "generic-gpu"}
    with pytest.raises(KeyError, match="nvidia-h200"):
        device_model("no-such-gpu")


# ------------------------------------------------------------------------ footprint
def run_observed(schedule, classes: bool = False):
    memory, footprint = MemoryObserver(), FootprintObserver()
    res = simulate(schedule, compute_values=False, observers=[memory, footprint],
                   accelerators=Accelerators(work_group_classes=classes))
    return res.counts, memory, footprint


def test_gemm_tiled_footprint_has_no_l1_hits_by_hand():
    # gemm-tiled M = N = K = 32, B = 16: 4 work-groups. A work-group loads A[r, 16t + lc]
    # for its 16 rows and t = 0, 1: every element of its 16 x 32 strip of A exactly once,
    # and B[16t + lr, c]: every element of its 32 x 16 strip of B once. A sub-group (2 rows
    # x 16 columns, 64-byte aligned) touches 4 sectors; different requests of one group
    # touch different (row, 64-byte half) pairs, so no sector is loaded twice by a group:
    #   A: 16 rows x 128 B = 64 sectors, B: 32 rows x 64 B = 64 sectors per group,
    #   512 for 4 groups = global load sectors (16 requests per array per group x 4).
    counts, memory, footprint = run_observed(build("gemm-tiled", 32, 32, 32, tile=16))
    assert footprint.sectors_by_buffer == {"A": 256, "B": 256}
    assert memory.counts.global_load_sectors == 512
    pred = predict(LaunchObservation(build("gemm-tiled", 32, 32, 32, tile=16), counts,
                                     memory.counts, footprint), NVIDIA_H200)
    assert pred.l2_read_sectors == 512
    assert pred.l1_load_hit_rate == 0.0


def test_gemm_naive_footprint_by_hand():
    # gemm-naive M = N = K = 32, B = 16: per work-group distinct sectors: A 16 rows x 128 B
    # = 64, B 32 rows x 64 B (its 16 columns) = 64 -> 128 per group, 512 for 4 groups.
    # Global load sectors (test_memory): 4096 -> hit rate 1 - 512/4096 = 0.875.
    schedule = build("gemm-naive", 32, 32, 32, tile=16)
    counts, memory, footprint = run_observed(schedule)
    assert footprint.sectors_by_buffer == {"A": 256, "B": 256}
    pred = predict(LaunchObservation(schedule, counts, memory.counts, footprint), NVIDIA_H200)
    assert pred.l2_read_sectors == 512
    assert pred.l1_load_hit_rate == pytest.approx(0.875, abs=1e-15)


def test_footprint_observer_on_hand_built_events():
    # batch of 2 groups, 32 work-items, 1 iteration. Event 1: group 0 reads floats 0..31
    # (sectors 0..3), group 1 floats 8..39 (sectors 1..4). Event 2: both read float 0 again
    # (sector 0: new for group 1, old for group 0). Per group: {0,1,2,3} and {0,1,2,3,4}
    # -> 4 + 5 = 9; with weights (3, 10): 12 + 50 = 62. Stores and local loads are ignored.
    lane = np.arange(32).reshape(1, 32, 1)
    idx = lane + np.array([0, 8]).reshape(2, 1, 1)
    ev1 = AccessEvent("global", "load", "X", 64, idx, np.array(True), (2, 32, 1), np.arange(2))
    ev2 = AccessEvent("global", "load", "X", 64, np.zeros((1, 1, 1), dtype=np.int64),
                      np.array(True), (2, 32, 1), np.arange(2))
    store = AccessEvent("global", "store", "X", 64, lane + 32, np.array(True), (2, 32, 1),
                        np.arange(2))
    local = AccessEvent("local", "load", "T", 64, lane + 32, np.array(True), (2, 32, 1),
                        np.arange(2))
    for weights, expected in ((None, 9), (np.array([3, 10]), 62)):
        fp = FootprintObserver()
        fp.on_batch(np.arange(2), 32, weights)
        for ev in (ev1, ev2, store, local):
            fp.on_access(ev)
        fp.on_finish()
        assert fp.sectors_by_buffer == {"X": expected}
    # a second batch adds to the first (the flush happens on the next batch's start):
    # event 1 alone is 4 + 4 sectors per batch (floats 8..39 = bytes 32..159 = sectors 1..4)
    fp = FootprintObserver()
    fp.on_batch(np.arange(2), 32, None)
    fp.on_access(ev1)
    fp.on_batch(np.arange(2, 4), 32, None)
    fp.on_access(ev1)
    fp.on_finish()
    assert fp.sectors_by_buffer == {"X": 16}


# ---------------------------------------------------------------------------- predict
H200_L1_RATE = 132 * 1.98e9 * 1.0   # wavefronts per second


def test_predict_gemm_tiled_64_on_h200_by_hand():
    # gemm-tiled M = N = K = 64, B = 16: 16 work-groups of 8 sub-groups, 4 K-tiles.
    # A, B, C are 16 KiB each: 48 KiB fit in 50 MiB of L2 -> "dram: compulsory":
    #   dram_read = 4 (M K + K N) = 32768 B; C stays in L2 during the kernel: dram_write 0.
    # flop = 2 per work-item per k (multiply, accumulate) = 2 x 64^3 = 524288.
    # L2 -> L1: per group A 16 rows x 256 B = 128 sectors, B 64 rows x 64 B = 128 sectors;
    #   x 16 = 4096 = global load sectors (64 requests x 4 sectors per group): hit rate 0.
    # L1 wavefronts: global load lines 16 x 64 requests x 2 lines = 2048, store lines
    #   16 x 8 x 2 = 256, local store wavefronts 16 x 4 x 8 x 2 = 1024, local loads:
    #   tile_A[lr][k] reads 4 consecutive aligned words in 4 iterations -> one vector load
    #   (2 rows x 4 words, banks 16 apart: 1 wavefront by banks, but a 128-bit load takes at
    #   least 2 on the H200): 16 x 4 x 8 x 4 x 2 = 4096; tile_B: one wavefront per k:
    #   16 x 4 x 8 x 16 = 8192; two barriers per K-tile at 2 wavefronts per work-group
    #   (barrier_wavefronts_per_work_group, read off the H200's counters): 16 x 4 x 2 x 2 = 256.
    #   Total 15872.
    #   (The CUDA build's machine code: nvidia-h200-cuda merges local loads into 128-bit ones.)
    # 16 work-groups run on 16 of the 132 compute units.
    # Terms: fp32 524288 / 67e12, dram 32768 / 4.8e12, l2 4096 x 32 / 12e12,
    #   l1 15872 / (16 x 1.98e9) = 501 ns -> bound l1; global requests 16 x 64 loads +
    #   16 x 8 stores = 1152 at 0.76 per cycle: 1152 / (16 x 1.98e9 x 0.76) = 48 ns;
    #   barrier latency: 64 load phases (16 groups x 4 K-tiles) / 16 active CUs = 4 per CU,
    #   and one work-group per CU (16 groups, 16 CUs; 8 could be resident): nothing overlaps
    #   its waits, mean value analysis with one customer gives 4 x (D + 550 ns) for 4 x D of
    #   work: 4 x 550 ns = 2.2 us exposed (memory_latency_s, measured: 550 ns); no tail (one
    #   work-group per compute unit: it never runs short of companions it had).
    schedule = build("gemm-tiled", 64, 64, 64, tile=16)
    # per-work-group L1 footprint (no sharing between work-groups), for these hand values
    unshared = replace(NVIDIA_H200_CUDA, l1_sharing_work_groups=1)
    with pytest.warns(GuessedValueWarning):
        launch = model_launch(schedule, unshared)
    p = launch.prediction
    assert launch.counts.flop == 524288
    assert p.dram_read_bytes == 4 * (64 * 64 + 64 * 64) == 32768
    assert p.dram_write_bytes == 0
    assert p.methods["dram_read_bytes"] == "dram: compulsory"
    assert p.l2_read_sectors == 4096
    assert p.l1_load_hit_rate == 0.0
    assert p.l1_wavefronts == 15872
    expected = {"fp32_s": 524288 / 67e12, "dram_s": 32768 / 4.8e12,
                "l2_s": 4096 * 32 / 12e12, "l1_s": 15872 / (16 * 1.98e9),
                "l1_requests_s": 1152 / (16 * 1.98e9 * 0.76),
                # issue: per work-group and sub-group (8 of them), 4 K-steps of 16 FMAs, 4
                # merged local loads of A_tile[lr][k..k+3] and 16 of B_tile[k][lc], 2 local
                # stores, 2 barriers, then 9 global requests (8 loads, 1 store): 1352 warp
                # instructions on 4 schedulers issuing one per cycle
                "issue_s": 8 * (4 * (16 + 4 + 16 + 2 + 2) + 9) / (4 * 1.98e9),
                "barrier_latency_s": 4 * 550e-9, "tail_s": 0.0, "launch_overhead_s": 3e-6}
    assert p.time_terms_s == pytest.approx(expected, rel=1e-9)
    assert all(v > 0 for k, v in p.time_terms_s.items() if k != "tail_s")
    assert p.bound == "l1"
    ceilings = {k: v for k, v in p.time_terms_s.items()
                if k not in ADDED_TIME_TERMS}
    assert max(ceilings, key=ceilings.get) == "l1_s"
    assert p.predicted_time_s == pytest.approx(15872 / (16 * 1.98e9) + 2.2e-6 + 3e-6,
                                               rel=1e-9)
    assert p.arithmetic_intensity_flop_per_byte == pytest.approx(524288 / 32768, rel=1e-15)
    # occupancy: 256 work-items and 2 KiB -> 8 per CU; waves 16 / (8 x 132)
    assert p.resident_work_groups_per_cu == 8
    assert p.waves == pytest.approx(16 / 1056, rel=1e-15)
    assert p.device_model == "nvidia-h200-cuda"


def test_model_launch_by_classes_equals_full_execution():
    # 150 x 150 x 20, B = 16: 10 x 10 work-groups with edge tiles; by classes (default) and
    # by executing every work-group the prediction must be identical.
    schedule = build("gemm-tiled", 150, 20, 150, tile=16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GuessedValueWarning)
        by_class = model_launch(schedule, NVIDIA_H200)
        full = model_launch(schedule, NVIDIA_H200,
                            accelerators=ALL.replace(work_group_classes=False))
    assert by_class.to_dict() == full.to_dict()


def test_one_observation_serves_every_prediction_of_a_schedule():
    # observe_for_model is what model_launch predicts from: predicting from it again, with
    # any registers, gives model_launch's prediction (through K extrapolation, which applies
    # to gemm-register-blocked at K = 512 with BK = 16, and without it: K = 64 is too short)
    from tiletraffic.simulator.engine.accelerators import k_extrapolation
    from tiletraffic.simulator.model.launch import observe_for_model

    long_k, short_k = (build("gemm-register-blocked", 64, k, 64, tile=16) for k in (512, 64))
    assert k_extrapolation.applies(long_k) and not k_extrapolation.applies(short_k)
    for schedule in (long_k, short_k):
        seen = observe_for_model(schedule, NVIDIA_H200)
        for registers in (64, 128):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", GuessedValueWarning)
                want = model_launch(schedule, NVIDIA_H200,
                                    registers_per_work_item=registers).prediction
            got = predict(seen, NVIDIA_H200, registers)
            got.methods = want.methods   # model_launch adds how the registers were given
            assert got.to_dict() == want.to_dict()


def test_dram_reuse_distance_by_hand():
    # gemm-tiled M = K = N = 64, B = 16: 4 x 4 work-groups, 4 per row (groups_0 = 4).
    # Each work-group asks L2 for its A stripe (16 rows x 64 floats = 4096 B) and its B strip
    # (64 rows x 16 floats = 4096 B): requested A = B = 16 x 4096 = 65536 B; each buffer is
    # 16384 B; C is 16384 B (1024 B per work-group). Inputs + output = 49152 B.
    # A does not move between neighbours in dimension 0 (offset 0): re-read by the next
    # work-group, gap 1. B moves by 16 floats in dimension 0 and not at all in dimension 1:
    # re-read one row of work-groups later, gap 4.
    # Distinct bytes of a window of consecutive work-groups: A's stripe is shared by the
    # work-groups of a row in the window, B's strip by one work-group per row, plus C.
    #   window 1 (A's gap): 4096 + 4096 + 1024 = 9216;
    #   window 4 (B's gap): A 4096 x 4 / 4 + B 4096 x 4 / 1 + C 4 x 1024 = 24576;
    #   window 8: A 4096 x 8 / 4 + B min(16384, 4096 x 8 / 2) + C 8192 = 32768.
    # Steady state: A hits when 9216 <= L2, B when 24576 <= L2.
    # With one compute unit, 8 work-groups are resident (256 work-items, 2 KiB of local
    # memory) and start together: a re-reader below 8 shares. A is re-read by work-groups
    # 1..15, 7 of them in the first wave: 8/15 of A's re-reads can miss; B by 4..15, 4 of
    # them in the first wave: 8/12 = 2/3 of B's re-reads can miss. Re-reads: 65536 - 16384
    # = 49152 B per buffer.
    schedule = build("gemm-tiled", 64, 64, 64, tile=16)

    def predicted(l2_bytes, compute_units=1):
        # a fully associative LRU L2: a re-read misses exactly when its distance > L2
        model = replace(NVIDIA_H200, l2_bytes=l2_bytes, compute_units=compute_units,
                        l1_sharing_work_groups=1, guessed=(), l2_associativity=None,
                        l2_partitions=1)   # one L2 partition: no copies (write-back)
        return model_launch(schedule, model).prediction

    p = predicted(24576)   # B's reuse distance fits exactly: compulsory reads only
    assert p.methods["dram_read_bytes"] == "dram: reuse distance, steady-state dispatch"
    assert p.dram_read_bytes == 16384 + 16384
    # write-back: the last 4 work-groups bring A 4096 + B 16384 + C 4096 = 24576 B into L2,
    # so their 4 x 1024 B of C are still in it at the end; the other 12288 B were evicted
    assert p.dram_write_bytes == 16384 - 4096
    assert p.methods["dram_write_bytes"] == \
        "dram: write-back of output lines evicted before the kernel ends"
    p = predicted(24575)   # one byte less: B's later re-reads miss
    assert p.dram_read_bytes == 16384 + 16384 + 49152 * 2 // 3 == 65536
    p = predicted(9215)    # A's reuse distance (9216 B) no longer fits either
    assert p.dram_read_bytes == round(65536 + 49152 * 8 / 15) == 91750
    # Lock-step waves of 8: a wave's 32768 B do not fit in 24575 B, so each wave reads its
    # data afresh: A 65536 / 4 sharers = 16384; B 65536 / 2 sharers (rows) = 32768.
    p = predicted(24575)
    assert p.methods["dram_read_bytes_lockstep"] == "dram: lock-step waves"
    assert p.dram_read_bytes_lockstep == 16384 + 32768
    # With 132 compute units all 16 work-groups are resident at once: one wave, each
    # buffer read once by both estimates.
    p = predicted(9215, compute_units=132)
    assert p.dram_read_bytes == p.dram_read_bytes_lockstep == 32768
    # a wave's 32768 B fit: the next wave finds them, both estimates compulsory
    p = predicted(32768)
    assert p.dram_read_bytes == p.dram_read_bytes_lockstep == 32768
    assert p.methods["dram_read_bytes"] == "dram: reuse distance, steady-state dispatch"
    # everything fits (49152 B): compulsory, and no DRAM writes during the kernel
    p = predicted(49152)
    assert p.methods["dram_read_bytes"] == "dram: compulsory"
    assert p.dram_read_bytes == p.dram_read_bytes_lockstep == 32768
    assert p.dram_write_bytes == 0


def test_dram_set_associative_l2_by_hand():
    # The same 64^3 launch on one compute unit with a 2-way L2 of 24576 B: B's reuse
    # distance 24576 B gives lambda = 2 x 24576 / 24576 = 2 other lines in its set on
    # average; it is evicted when 2 or more: 1 - e^-2 (1 + 2) = 0.5940. A's distance 9216 B:
    # lambda = 0.75, 1 - e^-0.75 x 1.75 = 0.1734. Re-reads 49152 B each, of which 8/15 (A)
    # and 2/3 (B) by work-groups after the first wave of 8 (as in the test above).
    model = replace(NVIDIA_H200, l2_bytes=24576, compute_units=1, l1_sharing_work_groups=1,
                    guessed=(), l2_associativity=2)
    p = model_launch(build("gemm-tiled", 64, 64, 64, tile=16), model).prediction
    miss_b = 1 - math.exp(-2) * 3
    miss_a = 1 - math.exp(-0.75) * 1.75
    expected = 32768 + 49152 * (8 / 15 * miss_a + 2 / 3 * miss_b)
    assert p.dram_read_bytes == round(expected)
    # lock-step waves of 8: a wave's 32768 B, lambda = 2 x 32768 / 24576 = 8/3; each wave
    # would read A 16384 (= once) and B 32768 (16384 more than once): 16384 x miss more
    lam = 2 * 32768 / 24576
    assert p.dram_read_bytes_lockstep == round(32768 + 16384 * (1 - math.exp(-lam) * (1 + lam)))


def test_miss_probability_limits():
    from tiletraffic.simulator.model.dram import miss_probability
    # many ways: no underflow (lambda > 745), close to the fully associative threshold
    assert miss_probability(0.5e6, 1e6, 2048) < 1e-6
    assert miss_probability(1.5e6, 1e6, 2048) > 1 - 1e-6
    with pytest.raises(ValueError, match="associativity must be at least 1 way.*got 0"):
        miss_probability(1, 10, 0)
    with pytest.raises(ValueError, match="L2 size must be positive, got 0"):
        miss_probability(1, 0, 16)
    assert miss_probability(10, 10, None) == 0.0 and miss_probability(11, 10, None) == 1.0
    # more ways approach the fully associative threshold
    near = [miss_probability(0.8e6, 1e6, a) for a in (1, 4, 16, 64)]
    far = [miss_probability(1.25e6, 1e6, a) for a in (1, 4, 16, 64)]
    assert near == sorted(near, reverse=True) and far == sorted(far)
    assert near[-1] < 0.06 and far[-1] > 0.95
    assert miss_probability(0, 1e6, 16) == 0.0


def test_dram_b_rereads_start_after_the_first_row():
    # gemm-tiled M=32, K=256, N=2048, B=16: 128 x 2 work-groups; 8 resident per compute
    # unit (256 work-items) -> 128 at once on 16 compute units, exactly the first row.
    # B (2 MiB) is re-read by the whole second row (work-groups 128..255), all after the
    # first wave: with an L2 of 64 KiB every B re-read is a DRAM read: 2 MiB + 2 MiB.
    # A's reuse distance (next work-group: 16 KiB of A + 16 KiB of B + 1 KiB of C) fits.
    model = replace(NVIDIA_H200, l2_bytes=65536, l2_associativity=None, compute_units=16,
                    guessed=(), l1_sharing_work_groups=1)
    p = model_launch(build("gemm-tiled", 32, 256, 2048, tile=16), model).prediction
    b_bytes = 256 * 2048 * 4
    a_bytes = 32 * 256 * 4
    assert p.dram_read_bytes == a_bytes + 2 * b_bytes


def test_dram_reuse_distance_matvec_reads_the_matrix_once():
    # matvec-naive 2048 x 2048 on an L2 of 64 KiB: A (16 MiB) is streamed once (no re-reads);
    # x (8 KiB) is read by all 8 work-groups, which are resident at once on 132 compute
    # units and share it: both estimates read x once.
    schedule = build("matvec-naive", 2048, 2048, None, tile=256)
    model = replace(NVIDIA_H200, l2_bytes=64 * 1024, guessed=(), l1_sharing_work_groups=1)
    p = model_launch(schedule, model).prediction
    assert p.dram_read_bytes == 4 * (2048 * 2048 + 2048)
    assert p.dram_read_bytes_lockstep == p.dram_read_bytes


def test_arithmetic_intensity_is_flop_over_dram_bytes():
    # gemm-naive 32^3: flop 2 x 32^3 = 65536; DRAM 8192 B read, C stays in L2 -> 8
    p = model_launch(build("gemm-naive", 32, 32, 32, tile=16),
                     replace(NVIDIA_H200, guessed=())).prediction
    assert p.arithmetic_intensity_flop_per_byte == pytest.approx(65536 / 8192, rel=1e-15)
    assert p.dram_read_bytes == 4 * (32 * 32 + 32 * 32)


def test_bound_follows_the_largest_term():
    # A device with a very slow FP32 unit is compute-bound: fp32 term 524288 / 1e6 = 0.52 s.
    slow = replace(NVIDIA_H200, fp32_flop_per_s=1e6, guessed=())
    p = model_launch(build("gemm-tiled", 64, 64, 64, tile=16), slow).prediction
    assert p.bound == "fp32"
    assert p.predicted_time_s == pytest.approx(524288 / 1e6 + 2.2e-6 + 3e-6, rel=1e-12)
    # and a device with a slow DRAM is DRAM-bound: 32768 B / 1e6 B/s = 33 ms
    slow = replace(NVIDIA_H200, dram_bytes_per_s=1e6, guessed=())
    p = model_launch(build("gemm-tiled", 64, 64, 64, tile=16), slow).prediction
    assert p.bound == "dram"
    assert p.predicted_time_s == pytest.approx(32768 / 1e6 + 2.2e-6 + 3e-6, rel=1e-12)


# -------------------------------------------------------------------------------- CLI
def test_cli_simulate_with_device_model_json():
    result = CliRunner().invoke(main, ["simulate", "gemm-tiled", "--m", "64", "--n", "64",
                                       "--k", "64", "--device-model", "nvidia-h200", "--json"])
    assert result.exit_code == 0, (result.output, result.exception)
    data = json.loads(result.stdout)
    for key in ("global_load_requests", "global_load_sectors", "local_bank_conflicts",
                "l2_read_sectors", "dram_read_bytes", "dram_write_bytes", "predicted_time_s"):
        assert key in data, key
    # hand values of test_predict_gemm_tiled_64_on_h200_by_hand
    assert data["global_load_requests"] == 16 * 64
    assert data["global_load_sectors"] == 4096
    assert data["local_bank_conflicts"] == 0
    # pairs of consecutive work-groups share L1 (the H200 model): per work-group A 128
    # sectors (the pair's A rows are the same: half charged, 64) + B 128 (the neighbour's
    # columns are 2 sectors further: no overlap) = 192; x 16 work-groups = 3072
    assert data["l2_read_sectors"] == 3072
    assert data["dram_read_bytes"] == 32768
    assert data["dram_write_bytes"] == 0
    # nvidia-h200 is the OpenCL build: tile_A's loads stay 32-bit, one wavefront per k
    # (rows lr and lr + 1 sit 16 banks apart): 16 x 4 x 8 x 16 = 8192 instead of 4096 ->
    # 15872 + 4096 = 19968 wavefronts
    assert data["predicted_time_s"] == pytest.approx(19968 / (16 * 1.98e9) + 2.2e-6 + 3e-6,
                                                     rel=1e-9)
    assert data["closed_form_agrees"] is True
    assert len(data["guessed_values"]) == len(NVIDIA_H200.guessed)


def test_cli_simulate_text_shows_the_terms_that_add_up_to_the_time():
    args = ["simulate", "gemm-tiled", "--m", "1024", "--n", "1024", "--k", "1024",
            "--device-model", "nvidia-h200"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, (result.output, result.exception)
    data = json.loads(CliRunner().invoke(main, args + ["--json"]).stdout)
    total = re.search(r"predicted time \(ms\)\s+([\d.]+)\s+\((\w+)-bound\)", result.stdout)
    parts = re.search(r"of which \(us\)\s+(.*)", result.stdout).group(1)
    terms = dict(re.fullmatch(r"(.+) ([\d.]+)", p.strip()).groups() for p in parts.split(" + "))
    # the bound and the added terms by their shown names (L1, barrier latency), the
    # document's keys (l1_s, barrier_latency_s) in the JSON
    assert list(terms) == [term_name(data["bound"] + "_s"), "barrier latency", "tail",
                           "launch overhead"]
    assert total.group(2) == term_name(data["bound"] + "_s")
    keys = [data["bound"] + "_s", *ADDED_TIME_TERMS]
    assert [float(v) for v in terms.values()] == pytest.approx(
        [data["time_terms_s"][k] * 1e6 for k in keys], abs=0.05)
    # the parts add up to the total (both rounded to 0.1 us)
    assert sum(float(v) for v in terms.values()) == pytest.approx(
        float(total.group(1)) * 1e3, abs=0.2)
    assert data["predicted_time_s"] == pytest.approx(
        sum(data["time_terms_s"][k] for k in keys), rel=1e-12)
    assert data["time_terms_s"]["tail_s"] > 0 and data["time_terms_s"]["barrier_latency_s"] > 0


def test_cli_simulate_transposed_a_tile_reports_conflicts():
    # tile 32, 64^3, a_tile transposed: 7936 conflicts (test_memory)
    result = CliRunner().invoke(main, ["simulate", "gemm-tiled", "--m", "64", "--n", "64",
                                       "--k", "64", "--tile", "32", "--a-tile", "transposed",
                                       "--device-model", "nvidia-h200", "--json"])
    assert result.exit_code == 0, (result.output, result.exception)
    assert json.loads(result.stdout)["local_bank_conflicts"] == 7936


def test_cli_unknown_device_model_fails_cleanly():
    result = CliRunner().invoke(main, ["simulate", "gemm-tiled", "--m", "64", "--n", "64",
                                       "--k", "64", "--device-model", "no-such-gpu", "--json"])
    assert result.exit_code == 2
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    assert "no-such-gpu" in result.output
    assert "nvidia-h200" in result.output


def test_cli_device_model_over_the_limits_fails_cleanly():
    # tile 64: 4096 work-items per work-group, above the H200's 1024
    result = CliRunner().invoke(main, ["simulate", "gemm-tiled", "--m", "64", "--n", "64",
                                       "--k", "64", "--tile", "64", "--device-model",
                                       "nvidia-h200", "--json"])
    assert result.exit_code == 2
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "1024" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("items, expected", [
    (100, 16),   # 10 x 10: ceil(100/32) = 4 sub-groups -> 64 // 4 = 16 (model: 20)
    (200, 9),    # ceil(200/32) = 7 -> 64 // 7 = 9 (model: 10)
    (144, 12),   # 12 x 12: 5 sub-groups -> 12 (model: 14)
])
def test_resident_work_groups_count_whole_sub_groups(items, expected):
    assert NVIDIA_H200.resident_work_groups_per_cu(items, 0) == expected


# ------------------------------------------------------------- vector local loads
@pytest.mark.parametrize("family, size, tile, hardware_count", [
    # smsp__inst_executed_op_shared_ld.sum of the CUDA build on the H200 (reports/nvidia-h200):
    # per K-tile a work-item issues 16/4 vector loads of tile_A and 16 scalar loads of
    # tile_B: 20 instead of 32 -> 2 N^3 / 32 x 20/32 = 41943040.
    ("gemm-tiled", 1024, 16, 41943040),
    ("gemm-tiled", 1024, 8, 41943040),
    # matvec-local: x_chunk[j] in consecutive j -> one vector load per 4: M K / 32 / 4.
    ("matvec-local", 4096, 256, 131072),
])
def test_local_vector_loads_equal_the_hardware_count(family, size, tile, hardware_count):
    schedule = build(family, size, size, size if family.startswith("gemm") else None, tile)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GuessedValueWarning)
        launch = model_launch(schedule, NVIDIA_H200_CUDA)
        scalar = model_launch(schedule, NVIDIA_H200)
    assert launch.memory.local_load_requests == hardware_count
    assert scalar.memory.local_load_requests > hardware_count


@pytest.mark.parametrize("family, size, tile, hardware_count", [
    # smsp__inst_executed_op_shared_ld.sum of the OpenCL driver's own machine code (its
    # cubin, loaded through CUDA: reports/nvidia-h200/codegen, counters_cubin): every local
    # load 32-bit. gemm-tiled: two per multiply-add and sub-group, 2 N^3 / 32.
    ("gemm-tiled", 4096, 16, 2 * 4096 ** 3 // 32),
    # matvec-local: one per element of A and sub-group, M K / 32.
    ("matvec-local", 16384, 256, 16384 * 16384 // 32),
])
def test_opencl_build_local_loads_equal_its_hardware_count(family, size, tile, hardware_count):
    schedule = build(family, size, size, size if family.startswith("gemm") else None, tile)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GuessedValueWarning)
        launch = model_launch(schedule, NVIDIA_H200)
    assert NVIDIA_H200.local_vector_words == 1
    assert launch.memory.local_load_requests == hardware_count


def test_closed_network_throughput_by_hand():
    # one customer: throughput 1 / (D + Z)
    assert closed_network_throughput(1, 2.0, 3.0) == pytest.approx(1 / 5)
    # two customers, D = Z = 1: n = 1: R 1, X 1/2, Q 1/2; n = 2: R = 1 x 1.5, X = 2 / 2.5
    assert closed_network_throughput(2, 1.0, 1.0) == pytest.approx(0.8)
    # no delay: the queue is always busy, X = 1 / D for any population
    assert closed_network_throughput(7, 0.5, 0.0) == pytest.approx(2.0)
    # many customers: X approaches the bound 1 / D from below; never above either bound
    x = closed_network_throughput(64, 1.0, 10.0)
    assert 0.99 < x <= 1.0 and x <= 64 / 11
    with pytest.raises(ValueError, match="customers"):
        closed_network_throughput(0, 1.0, 1.0)


def test_one_more_work_group_never_shortens_the_prediction():
    # 132 work-groups of gemm-tiled B = 16 (M = 2112, N = 16) fill the H200's 132 compute units
    # one each; the 133rd puts two on one unit, whose time bounds the kernel: the prediction
    # must not fall, and stays above one work-group's serial waits (256 K-tiles x latency).
    quiet = replace(NVIDIA_H200, guessed=())
    times = [model_launch(build("gemm-tiled", m, 4096, 16, 16), quiet).prediction
             for m in (2096, 2112, 2128, 2144)]
    assert all(a.predicted_time_s <= b.predicted_time_s for a, b in zip(times, times[1:]))
    assert times[2].predicted_time_s >= 256 * quiet.memory_latency_s


def test_exposed_latency_falls_with_resident_work_groups():
    # 100 intervals of 1 us of work, 300 ns latency: one work-group exposes all 100 x 300 ns,
    # more work-groups hide more of it, and a kernel without intervals exposes nothing.
    one = exposed_latency_s(100e-6, 100, 1, 300e-9)
    assert one == pytest.approx(100 * 300e-9)
    exposed = [exposed_latency_s(100e-6, 100, r, 300e-9) for r in (1, 2, 4, 8)]
    assert all(a > b for a, b in zip(exposed, exposed[1:]))
    assert exposed_latency_s(100e-6, 0, 8, 300e-9) == 0.0


def test_tail_by_hand():
    # Pure delay (no work): X(n) = n / Z. P = 100 / 10 = 10 intervals per work-group, R = 4,
    # Z = 1 us: the drain takes sum_n (10 / 4) n / (n / 1 us) = 4 x 2.5 us = 10 us; had four
    # stayed resident, the same 10 x 5 / 2 = 25 intervals at 4 per us: 6.25 us. Tail 3.75 us.
    assert tail_latency_s(0.0, 100, 10, 4, 1e-6) == pytest.approx(3.75e-6, rel=1e-12)
    # R = 2, demand 16 s / 16 intervals = 1 s, delay 1 s: X(1) = 1/2, X(2) = 2 / (1 x 1.5 + 1)
    # = 0.8. P = 16 / 4 = 4: drain 2 x (1 / 0.5 + 2 / 0.8) = 9 s, steady 4 x 3 / 2 / 0.8 = 7.5 s.
    assert tail_latency_s(8.0, 8, 2 * 1, 2, 1.0) == 0.0          # 2 groups, 2 resident
    assert tail_latency_s(16.0, 16, 4, 2, 1.0) == pytest.approx(1.5, rel=1e-12)
    # a non-finite time is refused, not turned into a silent 0
    with pytest.raises(ValueError, match="finite"):
        tail_latency_s(float("nan"), 16, 4, 2, 1.0)
    with pytest.raises(ValueError, match="finite"):
        tail_latency_s(16.0, 16, 4, 2, float("inf"))


def test_predict_charges_the_tail_when_a_unit_gets_more_than_it_holds():
    # One compute unit: gemm-tiled 64^3, B = 16 puts all 16 work-groups on it, 8 resident.
    # The prediction is the busy term + the exposed latency + the tail + the launch overhead,
    # the tail being tail_latency_s of the same busy term and intervals (16 x 4 K-tiles).
    one_cu = replace(NVIDIA_H200, compute_units=1, guessed=())
    p = model_launch(build("gemm-tiled", 64, 64, 64, tile=16), one_cu).prediction
    assert (p.work_groups_per_cu, p.resident_work_groups_per_cu) == (16, 8)
    assert p.barrier_intervals_per_cu == 16 * 4
    busy = p.time_terms_s[p.bound + "_s"]
    assert p.time_terms_s["tail_s"] > 0
    assert p.time_terms_s["tail_s"] == pytest.approx(
        tail_latency_s(busy, 64, 16, 8, one_cu.memory_latency_s), rel=1e-12)
    assert p.predicted_time_s == pytest.approx(
        busy + p.time_terms_s["barrier_latency_s"] + p.time_terms_s["tail_s"]
        + one_cu.launch_overhead_s, rel=1e-12)
    # the listed terms add up to the prediction: the bound's ceiling + the added terms
    assert p.time_terms_s["launch_overhead_s"] == one_cu.launch_overhead_s
    assert p.predicted_time_s == pytest.approx(
        busy + sum(p.time_terms_s[k] for k in ADDED_TIME_TERMS), rel=1e-12)


def test_the_tail_starts_at_one_work_group_more_than_the_units_hold():
    # gemm-tiled B = 16, N = 16: M / 16 work-groups; 132 x 8 = 1056 fill the H200 once
    # (no tail), 1057 put a ninth on one unit: the tail appears and the time does not fall.
    quiet = replace(NVIDIA_H200, guessed=())
    full, more = (model_launch(build("gemm-tiled", m, 64, 16, 16), quiet).prediction
                  for m in (1056 * 16, 1057 * 16))
    assert full.time_terms_s["tail_s"] == 0.0 < more.time_terms_s["tail_s"]
    assert more.predicted_time_s >= full.predicted_time_s
    # no latency: X(n) = 1 / demand for every n, nothing to lose; no intervals: nothing
    assert tail_latency_s(1e-3, 100, 10, 4, 0.0) == pytest.approx(0.0, abs=1e-18)
    assert tail_latency_s(1e-3, 0, 10, 4, 1e-6) == 0.0


def test_drain_time_by_hand():
    # Pure delay: X(n) = n / Z, so each of the R stages of P / R intervals takes (P / R) Z:
    # the last work-group's P intervals take P Z, whatever R. P = 100 / 10 = 10, Z = 1 us.
    for resident in (1, 4, 32):
        assert drain_time_s(0.0, 100, 10, resident, 1e-6) == pytest.approx(10e-6, rel=1e-12)
    # no latency: n / X(n) = n D, sum over n of (P / R) n D = P D (R + 1) / 2; D = 1 ms / 100
    assert drain_time_s(1e-3, 100, 10, 4, 0.0) == pytest.approx(10 * 1e-5 * 5 / 2, rel=1e-12)
    assert drain_time_s(1e-3, 0, 10, 4, 1e-6) == 0.0
    with pytest.raises(ValueError, match="resident"):
        drain_time_s(1e-3, 100, 10, 0, 1e-6)


def test_tail_is_bounded_by_one_work_groups_waits():
    # The last work-group alone waits at most its own P latencies; the tail is never
    # negative and never more than that, whatever the work and population.
    rng = np.random.default_rng(4)
    for _ in range(500):
        resident = int(rng.integers(1, 33))
        groups = resident + int(rng.integers(1, 200))
        phases = groups * int(rng.integers(1, 600))
        busy, latency = float(rng.uniform(0, 1e-2)), float(rng.uniform(0, 2e-6))
        tail = tail_latency_s(busy, phases, groups, resident, latency)
        assert 0.0 <= tail <= phases / groups * latency * (1 + 1e-9)


def test_pairs_of_work_groups_share_l1_by_hand():
    # gemm-naive 32^3, B = 16: 2 x 2 work-groups. Per work-group: A 16 rows x 128 B = 64
    # sectors, B 32 rows x 64 B = 64 sectors. The dimension-0 neighbour reads the same A rows
    # (offset 0: shared, each charged 32) and B columns 64 B = 2 sectors further (no
    # overlap: 64). (32 + 64) x 4 = 384; without sharing 128 x 4 = 512.
    quiet = replace(NVIDIA_H200, guessed=())
    schedule = build("gemm-naive", 32, 32, 32, tile=16)
    assert model_launch(schedule, quiet).prediction.l2_read_sectors == 384
    assert model_launch(schedule, replace(quiet, l1_sharing_work_groups=1)
                        ).prediction.l2_read_sectors == 512
    assert model_launch(schedule, quiet).prediction.methods["l2_read_sectors"] == \
        "l1: footprint shared by pairs of consecutive work-groups"


def test_interval_latency_mixes_the_l2_and_dram_round_trips_by_the_chance_of_a_miss():
    from dataclasses import replace

    m = replace(NVIDIA_H200, memory_latency_s=200e-9, memory_latency_dram_s=600e-9,
                sector_bytes=32)
    # f = 3200 B / (1000 sectors x 32 B) = 0.1 per sector; s = 1000 / 500 = 2 sectors per
    # interval: p = 1 - 0.9^2 = 0.19 -> 200 + 0.19 x 400 = 276 ns
    assert interval_latency_s(m, 3200, 1000, 500) == pytest.approx(276e-9)
    # every sector misses: the DRAM round trip; none does: the L2 one
    assert interval_latency_s(m, 32_000, 1000, 500) == pytest.approx(600e-9)
    assert interval_latency_s(m, 0, 1000, 500) == pytest.approx(200e-9)
    # more DRAM bytes than L2 sectors carry (write-allocate, rounding): capped at 1
    assert interval_latency_s(m, 10**9, 1000, 500) == pytest.approx(600e-9)
    # not measured (0), or no interval with loads: memory_latency_s
    assert interval_latency_s(replace(m, memory_latency_dram_s=0.0), 3200, 1000, 500) == 200e-9
    assert interval_latency_s(m, 3200, 1000, 0) == 200e-9


# ---------------------------------------------------- model text: stores and DRAM writes
NAIVE_TRANSPOSE = """
__kernel void transpose_naive(__global const float *A, __global float *B, const int N)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    B[x * N + y] = A[y * N + x];
}
"""


@pytest.fixture(scope="module")
def naive_transpose(tmp_path_factory) -> str:
    """A launch file of a naive transpose, N x N at N = 4096: a sub-group's 32 loads read
    one row (4 sectors), its 32 stores write one column (32 sectors, 32 lines)."""
    folder = tmp_path_factory.mktemp("transpose")
    (folder / "transpose_naive.cl").write_text(NAIVE_TRANSPOSE)
    (folder / "transpose_naive.toml").write_text(
        'source = "transpose_naive.cl"\nkernel = "transpose_naive"\n[sizes]\nN = 4096\n'
        '[launch]\nglobal_size = ["N", "N"]\nlocal_size = [32, 8]\n[args]\n'
        'A = { shape = ["N", "N"], access = "in" }\nB = { shape = ["N", "N"], access = "out" }\n'
        'N = "N"\n')
    return str(folder / "transpose_naive.toml")


def model_rows(*args: str) -> tuple[dict[str, str], dict]:
    """``tiletraffic model ARGS``: its table's rows (label -> value text) and its JSON."""
    result = CliRunner().invoke(main, ["model", *args])
    assert result.exit_code == 0, (result.output, result.exception)
    rows = {line[2:34].strip(): line[35:] for line in result.stdout.splitlines()
            if line.startswith("  ") and not line.startswith("  methods")}
    data = json.loads(CliRunner().invoke(main, ["model", *args, "--json"]).stdout)
    return rows, data


def test_cli_model_text_shows_the_stores_sectors_per_request_as_the_loads(naive_transpose):
    rows, data = model_rows(naive_transpose)
    requests = 4096 * 4096 // 32
    assert data["global_store_requests"] == requests
    assert data["global_store_sectors"] == 32 * requests
    assert rows["global stores (elements)"] == str(4096 * 4096)
    assert rows["global store requests"] == str(requests)
    assert rows["global store sectors"] == str(32 * requests)
    assert rows["sectors per store request"] == "32.00"
    assert rows["global load sectors"] == str(4 * requests)
    assert rows["sectors per load request"] == "4.00"


@pytest.mark.parametrize("args, output_lines", [
    (("matvec-naive", "--m", "4096", "--k", "4096"), 128),     # y: 16 KiB
    (("TRANSPOSE",), 4096 * 4096 * 4 // 128),                  # B: 64 MiB
])
def test_cli_model_shows_dram_writes_in_whole_lines_and_where_the_rest_is(
        naive_transpose, args, output_lines):
    args = tuple(naive_transpose if a == "TRANSPOSE" else a for a in args)
    rows, data = model_rows(*args)
    shown = rows["DRAM write bytes (predicted)"]
    written = int(shown.split()[0])
    lines = round(data["dram_write_bytes"] / 128)
    assert 0 < lines < output_lines
    assert written == 128 * lines                    # whole lines of the model's bytes
    assert (f"{lines} of the output's {output_lines} lines of 128 B are evicted during the "
            f"kernel; the other {output_lines - lines} are still in the L2 when it ends "
            "and reach DRAM after it") in shown
    if data["dram_write_bytes"] != written:          # the model's value is named beside it
        assert f"the model's expected {data['dram_write_bytes']} B in whole lines" in shown
    # the time is the model's, from its own write bytes (not the rounded ones shown)
    assert data["time_terms_s"]["dram_s"] == pytest.approx(
        (data["dram_read_bytes"] + data["dram_write_bytes"]) / NVIDIA_H200.dram_bytes_per_s,
        rel=1e-12)
    assert rows["predicted time (ms)"].split()[0] == f"{data['predicted_time_s'] * 1e3:.4f}"


def test_cli_model_says_an_output_that_fits_stays_in_l2():
    rows, data = model_rows("gemm-tiled", "--m", "64", "--n", "64", "--k", "64")
    assert data["dram_write_bytes"] == 0
    # C: 64 x 64 floats = 128 lines
    assert rows["DRAM write bytes (predicted)"] == (
        "0  (the output's 128 lines of 128 B are still in the L2 when the kernel ends and "
        "reach DRAM after it)")
