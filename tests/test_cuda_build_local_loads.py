"""Local loads as the CUDA build (NVRTC) executes them, under the ``nvidia-h200-cuda``
device model: a work-item's loads of consecutive, aligned local words within an unrolled
loop body or across unrolled iterations become one 64- or 128-bit load, a word loaded again
in the same iteration is reused, and vector loads take wavefronts by the thread-pair rule.
Checked by hand on small launches and against the committed Nsight Compute counts of the
corpus's register-tiled SGEMM (``reports/nvidia-h100/cuda_corpus/call4``)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tiletraffic.frontend import launch_file
from tiletraffic.simulator.model.device_model import NVIDIA_H200_CUDA
from tiletraffic.simulator.model.observation import observe_launch
from tiletraffic.simulator.observers.counters import AccessEvent
from tiletraffic.simulator.observers.memory import MemoryObserver

REPO = Path(__file__).resolve().parents[1]
BX_LAUNCH = REPO / "tests" / "corpora" / "cuda" / "launch" / "bx_matmul_kernel.toml"
CALL4 = REPO / "reports" / "nvidia-h100" / "cuda_corpus" / "call4" / "results.json"


def load(array: str, site: str, words, size: int = 4096) -> AccessEvent:
    """One execution of a local load statement by one sub-group of 32 work-items."""
    index = np.asarray(words, dtype=np.int64).reshape(1, 32, 1)
    return AccessEvent("local", "load", array, size, index, np.ones((1, 32, 1), bool),
                       (1, 32, 1), np.array([0]), site)


def test_a_2x2_register_block_with_a_4_wide_unrolled_k_loop():
    # 32 work-items, tx = l mod 16 and ty = l // 16, each owning a 2x2 block of C: per k
    # it reads As[2ty][k] and As[2ty+1][k] (twice each, as the source writes them: the
    # second is the same word in the same iteration, reused) and Bs[k][2tx], Bs[k][2tx+1]
    # (rows of 32 words). Hand count for k = 0..3:
    #   As rows: one LDS.128 per row over the four k (words 128ty + 32i + 0..3, aligned):
    #     2 instructions; lanes l and l xor 1 read the same float4, so each is served in
    #     2 half-sub-group phases, one wavefront each (the 16 lanes of a half read one
    #     float4): 2 wavefronts each, 4 in all;
    #   Bs: per k one LDS.64 (words 32k + 2tx, 2tx + 1: even): 16 distinct pairs, no two
    #     neighbours share one, so 2 phases of 16 work-items (all 32 banks each): 2
    #     wavefronts, 4 instructions, 8 in all.
    #   12 wavefronts in 6 instructions (the source's 32 scalar loads: 24 wavefronts).
    lane = np.arange(32)
    tx, ty = lane % 16, lane // 16
    obs = MemoryObserver(local_vector_words=4)
    obs.on_batch(np.array([0]), 32)
    for k in range(4):
        for line, (i, j) in enumerate(((0, 0), (0, 1), (1, 1), (1, 0))):
            obs.on_access(load("As", f"As{line}", 32 * (2 * ty + i) + k))
            obs.on_access(load("Bs", f"Bs{line}", 32 * k + 2 * tx + j))
    obs.on_finish()
    c = obs.counts
    assert (c.local_load_requests, c.local_load_wavefronts, c.local_load_bank_conflicts) \
        == (6, 12, 0)


def test_without_vector_words_every_source_load_is_counted():
    # the OpenCL build's model (local_vector_words = 1) keeps the source's loads: 32 scalar
    # loads; As: 2 distinct words a sub-group, 64 words apart, in one bank (2 wavefronts);
    # Bs: 16 distinct even words (1): 16 x 2 + 16 x 1 = 48
    lane = np.arange(32)
    obs = MemoryObserver(local_vector_words=1)
    obs.on_batch(np.array([0]), 32)
    for k in range(4):
        for line in range(4):
            obs.on_access(load("As", f"As{line}", 32 * (2 * (lane // 16) + line // 2) + k))
            obs.on_access(load("Bs", f"Bs{line}", 32 * k + 2 * (lane % 16) + line % 2))
    obs.on_finish()
    assert (obs.counts.local_load_requests, obs.counts.local_load_wavefronts) == (32, 48)


def test_a_pair_needs_alignment_that_every_work_item_has():
    # a tree step: only work-item 0 of each row is active and reads words 32r and 32r + 1;
    # the compiler cannot prove the pair aligned (the index is 32r + lx for every lx), so
    # two scalar loads are counted, not one LDS.64
    lane = np.arange(32)
    words = 32 * (lane // 8) + lane % 8
    mask = np.zeros((1, 32, 1), bool)
    mask[0, lane % 8 == 0, 0] = True
    obs = MemoryObserver(local_vector_words=4)
    obs.on_batch(np.array([0]), 32)
    for site, offset in (("a", 0), ("b", 1)):
        index = (words + offset).reshape(1, 32, 1)
        obs.on_access(AccessEvent("local", "load", "p", 1024, index, mask, (1, 32, 1),
                                  np.array([0]), site))
    obs.on_finish()
    assert obs.counts.local_load_requests == 2


@pytest.mark.parametrize("word_of_lane, figures", [
    # the warp-tiled SGEMM's B fragment: lane l reads the float4 at word 8·(l mod 4); no
    # neighbour pair shares an address: 4 quarter-sub-group phases of 16 distinct words
    # in different banks, 1 wavefront each: 4, ideal 4
    (lambda l: 8 * (l % 4), (4, 4)),
    # its A fragment: lane l reads the float4 at word 32·(l // 4) (rows of 8 words, 4
    # rows apart): pairs share addresses, so 2 half-sub-group phases, each reading 4
    # distinct float4s in the same 4 banks: 4 wavefronts each, 8 in all, ideal 2
    (lambda l: 32 * (l // 4), (8, 2)),
])
def test_128_bit_loads_take_wavefronts_by_the_thread_pair_rule(word_of_lane, figures):
    lane = np.arange(32)
    first = np.array([word_of_lane(int(x)) for x in lane])
    index = (first[:, None] + np.arange(4)).reshape(1, 32, 4)
    ev = AccessEvent("local", "load", "s", 4096, index, np.ones((1, 32, 4), bool),
                     (1, 32, 4), np.array([0]), "s", vector_width=4)
    obs = MemoryObserver()
    obs.on_batch(np.array([0]), 32)
    obs.on_access(ev)
    obs.on_finish()
    c = obs.counts
    wavefronts, ideal = figures
    assert (c.local_load_wavefronts, c.local_load_bank_conflicts) \
        == (wavefronts, wavefronts - ideal)


def test_the_register_tiled_sgemm_equals_nsight_computes_shared_loads():
    # bitexact's matmul_kernel (32x32 tiles, 256 threads, a 2x2 block each): NVRTC reads a
    # thread's two tile_A rows with one LDS.128 per 4 k steps each and its two tile_B
    # columns with one LDS.64 per k step, 2 wavefronts each: 3 a warp per k step. At the
    # launch Nsight Compute counted (M = N = K = 1024, on the H100): 32 x 32 blocks x 8
    # warps x 1024 k steps x 3 = 25,165,824; the model equals it, and its shared stores
    # and global counts are unchanged (equal to Nsight's there too).
    schedule = launch_file.load(BX_LAUNCH, overrides={"M": 1024, "N": 1024, "K": 1024})
    obs = observe_launch(schedule, NVIDIA_H200_CUDA)
    measured = next(r for r in json.loads(CALL4.read_text())
                    if r["case"] == "bx_matmul_kernel")["ncu"]["metrics"]
    assert obs.memory.local_load_wavefronts \
        == measured["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] == 25165824
    assert obs.memory.local_load_requests \
        == measured["smsp__inst_executed_op_shared_ld.sum"]
    assert obs.memory.local_store_wavefronts \
        == measured["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"]
    assert (obs.memory.global_load_requests, obs.memory.global_load_sectors) == (
        measured["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"],
        measured["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"])
