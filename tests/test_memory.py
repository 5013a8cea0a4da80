"""Tests of simulator.observers.memory: sub-group coalescing (requests, sectors, lines) and local-memory
bank conflicts (wavefronts), against values computed by hand on small launches.

Conventions used in every hand computation below (simulator/observers/memory.py docstring):
- work-items are flattened with NDRange dimension 0 fastest; a sub-group is 32 consecutive
  flattened local ids; a load/store statement executed by a sub-group with >= 1 active lane
  is one request (per loop iteration);
- a float is 4 B, a sector 32 B (8 floats), a line 128 B (32 floats); buffers start on a
  256-byte boundary, so element e lies in sector 4e // 32 and line 4e // 128;
- local word w lies in bank w mod 32; a request takes as many wavefronts as the largest
  number of *distinct* words it touches in one bank; conflicts = wavefronts - 1.
"""
from __future__ import annotations

import numpy as np
import pytest

from tiletraffic.simulator.observers.counters import AccessEvent
from tiletraffic.simulator.engine.simulation import simulate
from tiletraffic.simulator.observers.memory import MemoryCounts, MemoryObserver
from tiletraffic.simulator.kernels.families import ScheduleError, build


def memory_counts(family: str, *sizes: int, **kw) -> MemoryCounts:
    """Full execution (every work-group, counts only) with a default NVIDIA-like observer."""
    obs = MemoryObserver()
    simulate(build(family, *sizes, **kw), compute_values=False, observers=[obs])
    return obs.counts


# ------------------------------------------------------------------------ gemm-naive
def test_gemm_naive_32_tile_16_coalescing_by_hand():
    # M = N = K = 32, tile 16: 2 x 2 = 4 work-groups of 16 x 16 = 256 work-items = 8
    # sub-groups each, 32 sub-groups in all. Flattened id = lx + 16*ly, so sub-group s of a
    # work-group holds rows ly = 2s, 2s+1 and columns lx = 0..15: 2 rows x 16 columns.
    # Every work-item is in range (32 is a multiple of 16): no lane is masked.
    #
    # Loop k = 0..31, one request per sub-group and k for A and one for B:
    #   requests A = 32 sub-groups x 32 k = 1024, requests B = 1024.
    # A[r, k]: the 16 lanes of a row read the same element; the 2 rows are K*4 = 128 B apart
    #   -> 2 distinct sectors and 2 distinct lines per request: 2048 sectors, 2048 lines.
    # B[k, c]: c = 16*gx + lx: 16 consecutive floats = 64 B starting at byte
    #   128*k + 64*gx (64-byte aligned), the same for both rows
    #   -> 2 sectors, 1 line per request: 2048 sectors, 1024 lines.
    # C[r, c] store: one request per sub-group (32), 2 rows x 64 B, each row 64-byte
    #   aligned at 128*r + 64*gx -> 2 sectors per row = 4 sectors and 2 lines per request:
    #   128 sectors, 64 lines. (Not 2 sectors: the sub-group writes two rows of C.)
    c = memory_counts("gemm-naive", 32, 32, 32, tile=16)
    assert c.requests_by_buffer == {"A:load": 1024, "B:load": 1024, "C:store": 32}
    assert c.sectors_by_buffer == {"A:load": 2048, "B:load": 2048, "C:store": 128}
    assert c.global_load_requests == 2048
    assert c.global_load_sectors == 4096
    assert c.global_load_lines == 2048 + 1024
    assert c.global_store_requests == 32
    assert c.global_store_sectors == 128
    assert c.global_store_lines == 64
    assert c.global_load_sectors_per_request == 2.0
    # no local memory at all
    assert (c.local_load_requests, c.local_store_requests, c.local_bank_conflicts) == (0, 0, 0)


def test_gemm_naive_transposed_mapping_is_uncoalesced_by_hand():
    # mapping="transposed": NDRange dimension 0 runs over rows: row = 16*g0 + l0,
    # col = 16*g1 + l1, flattened id = l0 + 16*l1. Sub-group s holds l1 = 2s, 2s+1 (two
    # columns c, c+1 with c even) and l0 = 0..15 (sixteen rows). Still 32 sub-groups.
    #
    # A[r, k]: 16 distinct rows, 128 B apart, the two columns read the same element
    #   -> 16 sectors, 16 lines per request; 1024 requests -> 16384 sectors and lines.
    # B[k, c], B[k, c+1]: 8 bytes at 128*k + 4*c with c even, so c*4 mod 32 is in
    #   {0, 8, 16, 24}: both in one sector -> 1 sector, 1 line per request: 1024, 1024.
    # C[r, c] store: 16 rows (128 B apart) x 2 adjacent columns -> 16 sectors, 16 lines per
    #   request; 32 requests -> 512 sectors, 512 lines.
    c = memory_counts("gemm-naive", 32, 32, 32, tile=16, mapping="transposed")
    assert c.requests_by_buffer == {"A:load": 1024, "B:load": 1024, "C:store": 32}
    assert c.sectors_by_buffer == {"A:load": 16384, "B:load": 1024, "C:store": 512}
    assert c.global_load_sectors == 16384 + 1024
    assert c.global_load_lines == 16384 + 1024
    assert c.global_store_sectors == 512
    assert c.global_store_lines == 512
    assert c.global_load_sectors_per_request == 17408 / 2048


def test_gemm_naive_mappings_differ_in_sectors_not_in_requests():
    # Same element counts and the same number of requests; the transposed mapping needs
    # 17408 / 4096 = 4.25 times the load sectors (hand values of the two tests above).
    row = memory_counts("gemm-naive", 32, 32, 32, tile=16)
    col = memory_counts("gemm-naive", 32, 32, 32, tile=16, mapping="transposed")
    assert row.global_load_requests == col.global_load_requests == 2048
    assert col.global_load_sectors * 4 == row.global_load_sectors * 17


# ------------------------------------------------------------------------ matvec-naive
def test_matvec_naive_rows_32_bytes_apart_and_broadcast_x():
    # M = 64, K = 8, 32 work-items per work-group: 2 work-groups of exactly one sub-group,
    # one row per lane. Loop k = 0..7: requests A = requests x = 2 x 8 = 16.
    # A[r, k]: 32 rows K*4 = 32 B apart -> 32 distinct sectors per request (512 in all);
    #   they span 32 x 32 B = 1024 B = 8 lines per request (128 in all).
    # x[k]: every lane reads the same element (a broadcast) -> 1 sector, 1 line: 16, 16.
    # y[r] store: 32 consecutive floats = 128 B at byte 0 or 128 -> 4 sectors, 1 line per
    #   request; 2 requests -> 8 sectors, 2 lines.
    c = memory_counts("matvec-naive", 64, 8, tile=32)
    assert c.requests_by_buffer == {"A:load": 16, "x:load": 16, "y:store": 2}
    assert c.sectors_by_buffer == {"A:load": 512, "x:load": 16, "y:store": 8}
    assert c.global_load_lines == 128 + 16
    assert c.global_store_sectors == 8
    assert c.global_store_lines == 2


# --------------------------------------------------- partial sub-groups, masked lanes
def test_partial_sub_group_and_masked_lanes_by_hand():
    # matvec-naive M = 50, K = 4, 48 work-items per work-group -> 2 work-groups (NDRange 96).
    # Sub-groups: lanes 0..31 and lanes 32..47 (a half-full sub-group of 16).
    #   group 0: rows 0..31 (sub-group 0), rows 32..47 (sub-group 1): all active.
    #   group 1: sub-group 0 holds rows 48..79, active only 48 and 49 (r < 50);
    #            sub-group 1 holds rows 80..95: all returned -> no request at all.
    # -> 3 requests per statement and iteration: A 3 x 4 = 12, x 12, y 3.
    # A[r, k] at byte 4*(4r + k) = 16r + 4k with 4k <= 12: sector r // 2, line r // 8.
    #   per k: rows 0..31 -> 16 sectors, 4 lines; rows 32..47 -> 8 sectors, 2 lines;
    #   rows 48, 49 -> 1 sector, 1 line. Per k 25 sectors, 7 lines; x 4: 100 and 28.
    # x[k]: broadcast -> 1 sector and 1 line per request: 12 and 12.
    # y[r] at byte 4r: rows 0..31 bytes 0..127 (4 sectors, 1 line); rows 32..47 bytes
    #   128..191 (2 sectors, 1 line); rows 48, 49 bytes 192..199 (1 sector, 1 line):
    #   7 sectors, 3 lines.
    c = memory_counts("matvec-naive", 50, 4, tile=48)
    assert c.requests_by_buffer == {"A:load": 12, "x:load": 12, "y:store": 3}
    assert c.sectors_by_buffer == {"A:load": 100, "x:load": 12, "y:store": 7}
    assert c.global_load_requests == 24
    assert c.global_load_sectors == 112
    assert c.global_load_lines == 28 + 12
    assert c.global_store_lines == 3


def test_masked_gemm_edge_counts_only_active_lanes():
    # gemm-naive M = 17, N = 16, K = 1, tile 16: 1 x 2 work-groups (16 columns, 32 rows of
    # NDRange). Group (0, 0): rows 0..15, 8 full sub-groups. Group (0, 1): rows 16..31;
    # only row 16 is in range, i.e. sub-group 0 (rows 16, 17) has 16 active lanes (row 16),
    # sub-groups 1..7 have none. Requests per statement: 8 + 1 = 9.
    # A[r, 0] at byte 4r (K = 1): a sub-group's rows r, r+1 (r even) -> one sector.
    #   9 requests -> 9 sectors; lines: 9.
    # B[0, c]: 16 floats = 64 B at byte 0 -> 2 sectors, 1 line per request: 18, 9.
    # C[r, c] store: rows r, r+1 of 16 floats (64 B at 64*r) -> 4 sectors, 1 line (2 rows of
    #   64 B fill one aligned 128-byte line) per full request; the masked request writes
    #   one row -> 2 sectors, 1 line. 8*4 + 2 = 34 sectors, 9 lines.
    c = memory_counts("gemm-naive", 17, 1, 16, tile=16)
    assert c.requests_by_buffer == {"A:load": 9, "B:load": 9, "C:store": 9}
    assert c.sectors_by_buffer == {"A:load": 9, "B:load": 18, "C:store": 34}
    assert c.global_load_lines == 9 + 9
    assert c.global_store_lines == 9


# ----------------------------------------------------------------------- bank conflicts
def test_gemm_tiled_32_default_layout_has_no_bank_conflicts():
    # gemm-tiled M = N = K = 64, tile 32: 2 x 2 = 4 work-groups of 32 x 32 = 1024 work-items,
    # 32 sub-groups each; sub-group = one row lr with lanes lc = 0..31. K-tiles: 64/32 = 2.
    # Nothing is out of range, so the zero-fill branches never run.
    # Stores per K-tile and sub-group: tile_A[lr][lc] and tile_B[lr][lc], words
    #   32*lr + lc: 32 distinct banks -> 1 wavefront each.
    #   local store requests = 4 groups x 2 K-tiles x 32 sub-groups x 2 = 512.
    # Loads, k = 0..31: tile_A[lr][k] (one word for all lanes: broadcast, 1 wavefront) and
    #   tile_B[k][lc] (32 banks, 1 wavefront): 4 x 2 x 32 x 32 x 2 = 16384 requests.
    c = memory_counts("gemm-tiled", 64, 64, 64, tile=32)
    assert c.local_store_requests == 512
    assert c.local_store_wavefronts == 512
    assert c.local_load_requests == 16384
    assert c.local_load_wavefronts == 16384
    assert c.local_bank_conflicts == 0
    assert c.local_load_bank_conflicts == c.local_store_bank_conflicts == 0


def test_gemm_tiled_32_transposed_a_tile_has_31_conflicts_per_a_store():
    # a_tile="transposed": tile_A[lc][lr] is word 32*lc + lr: for one sub-group (fixed lr)
    # all 32 lanes hit bank lr with 32 distinct words -> 32 wavefronts, 31 conflicts.
    # A-tile store requests: 4 groups x 2 K-tiles x 32 sub-groups = 256
    #   -> 256 x 31 = 7936 conflicts, 256 x 32 = 8192 wavefronts.
    # tile_B stores unchanged: 256 requests, 256 wavefronts.
    # Loads tile_A[k][lr] (word 32k + lr, the same for all lanes): broadcast, 1 wavefront.
    # No zero-fill store runs (64 is a multiple of 32).
    c = memory_counts("gemm-tiled", 64, 64, 64, tile=32, a_tile="transposed")
    assert c.local_store_requests == 512
    assert c.local_store_wavefronts == 8192 + 256
    assert c.local_store_bank_conflicts == 7936
    assert c.local_load_requests == c.local_load_wavefronts == 16384
    assert c.local_load_bank_conflicts == 0
    assert c.local_bank_conflicts == 4 * 2 * 32 * 31 == 7936


def test_gemm_tiled_32_transposed_a_tile_zero_fill_stores_conflict_too():
    # K = 40 instead of 64: K-tiles 2. Each work-item chooses its element (the load, or 0
    # outside the matrix) and stores it with one statement: one request per sub-group, tile
    # and K-tile, whichever lanes load. tile_A[lc][lr] (transposed): the 32 lanes of a
    # sub-group (lc = 0..31, one lr) store 32 words in bank lr: 32 wavefronts, 31 conflicts,
    # in K-tile 0 (all loaded) and K-tile 1 (8 loaded, 24 zeros) alike.
    # tile_B[lr][lc]: 32 consecutive words, 1 wavefront per request.
    # Per sub-group: A 2 requests, 64 wavefronts, 62 conflicts; B 2 requests, 2 wavefronts.
    # 4 groups x 32 sub-groups = 128 sub-groups:
    #   store requests = 128 x 4 = 512, wavefronts = 128 x 66 = 8448,
    #   conflicts = 128 x 62 = 7936.
    c = memory_counts("gemm-tiled", 64, 40, 64, tile=32, a_tile="transposed")
    assert c.local_store_requests == 512
    assert c.local_store_wavefronts == 8448
    assert c.local_store_bank_conflicts == 7936
    assert c.local_bank_conflicts == 7936
    # loads: the compute loop runs k = 0..31 in both K-tiles: 16384 broadcast/linear loads
    assert c.local_load_requests == c.local_load_wavefronts == 16384


@pytest.mark.parametrize("a_tile", ["row-major", "transposed"])
def test_gemm_tiled_padding_one_word_removes_every_conflict(a_tile):
    # padding = 1: rows of 33 words. Transposed store: word 33*lc + lr -> bank
    # (lc + lr) mod 32, 32 distinct banks for lc = 0..31: 1 wavefront. Row-major store
    # 33*lr + lc: 32 distinct banks. Loads tile_B[k][lc] = 33k + lc: 32 banks; tile_A loads
    # are broadcasts. So 0 conflicts, wavefronts == requests.
    c = memory_counts("gemm-tiled", 64, 64, 64, tile=32, a_tile=a_tile, padding=1)
    assert c.local_bank_conflicts == 0
    assert c.local_store_requests == c.local_store_wavefronts == 512
    assert c.local_load_requests == c.local_load_wavefronts == 16384


def test_gemm_tiled_16_two_rows_per_sub_group_have_no_conflicts():
    # tile 16: a sub-group is rows lr, lr+1 (lr even) x lc = 0..15.
    # tile_A[lr][k]: words 16*lr + k and 16*lr + 16 + k -> banks b and b+16: distinct, so
    #   one wavefront (a broadcast within each row). tile_B[k][lc]: 16 words, both rows the
    #   same -> 1 wavefront. Stores 16*lr + lc for 2 rows: 32 consecutive words.
    # M = N = K = 32: 4 groups x 8 sub-groups x 2 K-tiles = 64 (sub-group, K-tile) pairs
    #   -> 128 store requests, 64 x 16 k x 2 = 2048 load requests, all single wavefronts.
    c = memory_counts("gemm-tiled", 32, 32, 32, tile=16)
    assert c.local_store_requests == c.local_store_wavefronts == 128
    assert c.local_load_requests == c.local_load_wavefronts == 2048
    assert c.local_bank_conflicts == 0


# -------------------------------------------------- the observer on hand-built events
def event(index, space="global", direction="load", mask=True, shape=(1, 32, 1), size=4096):
    index = np.asarray(index, dtype=np.int64)
    index = index.reshape((1,) * (3 - index.ndim) + index.shape) if index.ndim < 3 else index
    return AccessEvent(space, direction, "X", size, index, np.asarray(mask, dtype=bool),
                       shape, np.arange(shape[0]))


def observe(*events, weights=None, groups=1, work_items=32, **kw) -> MemoryCounts:
    obs = MemoryObserver(**kw)
    obs.on_batch(np.arange(groups), work_items, weights)
    for ev in events:
        obs.on_access(ev)
    return obs.counts


LANE = np.arange(32).reshape(1, 32, 1)


def test_stride_two_floats_spans_eight_sectors_two_lines():
    # index 2*lane: floats 0, 2, ..., 62 -> bytes 0..248 (+4) -> sectors 0..7, lines 0..1
    c = observe(event(2 * LANE))
    assert (c.global_load_requests, c.global_load_sectors, c.global_load_lines) == (1, 8, 2)
    assert c.requests_by_buffer == {"X:load": 1}
    assert c.sectors_by_buffer == {"X:load": 8}


def test_unit_stride_aligned_and_misaligned():
    # 32 consecutive floats from element 0: bytes 0..127 -> 4 sectors, 1 line.
    # From element 4 (byte 16): bytes 16..143 -> sectors 0..4 (5), lines 0..1 (2).
    c = observe(event(LANE))
    assert (c.global_load_sectors, c.global_load_lines) == (4, 1)
    c = observe(event(LANE + 4))
    assert (c.global_load_sectors, c.global_load_lines) == (5, 2)


def test_global_store_counts_go_to_store_fields():
    c = observe(event(LANE * 8, direction="store"))
    # stride 8 floats = 32 B: 32 sectors, 32*32 B = 1024 B = 8 lines
    assert (c.global_store_requests, c.global_store_sectors, c.global_store_lines) == (1, 32, 8)
    assert (c.global_load_requests, c.global_load_sectors) == (0, 0)
    assert c.sectors_by_buffer == {"X:store": 32}


def test_masked_lanes_are_not_counted_and_empty_mask_is_no_request():
    # only lanes 0 and 31 active, index 8*lane: bytes 0 and 992 -> 2 sectors, 2 lines
    mask = np.zeros((1, 32, 1), dtype=bool)
    mask[0, [0, 31], 0] = True
    c = observe(event(8 * LANE, mask=mask))
    assert (c.global_load_requests, c.global_load_sectors, c.global_load_lines) == (1, 2, 2)
    c = observe(event(8 * LANE, mask=False))
    assert (c.global_load_requests, c.global_load_sectors, c.global_load_lines) == (0, 0, 0)


def test_partial_last_sub_group_is_one_request():
    # 40 work-items, index = lane: sub-group 0 floats 0..31 (4 sectors, 1 line), sub-group 1
    # floats 32..39 = bytes 128..159 (1 sector, 1 line): 2 requests, 5 sectors, 2 lines.
    idx = np.arange(40).reshape(1, 40, 1)
    c = observe(event(idx, shape=(1, 40, 1)), work_items=40)
    assert (c.global_load_requests, c.global_load_sectors, c.global_load_lines) == (2, 5, 2)


def test_iterations_and_weights_multiply_requests():
    # shape (2, 32, 3): 2 work-groups, 3 iterations; index = lane + 32*iteration (each
    # iteration one full line: 4 sectors). Per group: 3 requests, 12 sectors, 3 lines.
    # Weights (5, 7): requests 3*12 = 36, sectors 12*12 = 144, lines 36.
    idx = np.arange(32).reshape(1, 32, 1) + 32 * np.arange(3).reshape(1, 1, 3)
    ev = event(idx, shape=(2, 32, 3))
    c = observe(ev, groups=2)
    assert (c.global_load_requests, c.global_load_sectors, c.global_load_lines) == (6, 24, 6)
    c = observe(ev, groups=2, weights=np.array([5, 7]))
    assert (c.global_load_requests, c.global_load_sectors, c.global_load_lines) == (36, 144, 36)


def test_local_broadcast_is_one_wavefront():
    c = observe(event(np.full((1, 32, 1), 5), space="local"))
    assert (c.local_load_requests, c.local_load_wavefronts, c.local_bank_conflicts) == (1, 1, 0)
    # nothing global was counted
    assert c.global_load_requests == 0 and c.requests_by_buffer == {}


def test_local_two_way_bank_conflict():
    # lanes 0..15 word i (banks 0..15), lanes 16..31 word 32 + (i - 16) (banks 0..15 again,
    # other words): every bank 0..15 holds 2 distinct words -> 2 wavefronts, 1 conflict.
    lane = np.arange(32)
    words = np.where(lane < 16, lane, 32 + lane - 16).reshape(1, 32, 1)
    c = observe(event(words, space="local"))
    assert (c.local_load_requests, c.local_load_wavefronts) == (1, 2)
    assert c.local_load_bank_conflicts == c.local_bank_conflicts == 1


def test_local_same_word_twice_in_a_bank_is_a_broadcast_not_a_conflict():
    # lanes 0..15 word 0, lanes 16..31 word 32: bank 0 holds 2 distinct words -> 2
    # wavefronts. Lanes all word 0 or 64 alternating: still 2 distinct words -> 2.
    lane = np.arange(32)
    c = observe(event(np.where(lane < 16, 0, 32).reshape(1, 32, 1), space="local"))
    assert c.local_load_wavefronts == 2
    c = observe(event(np.where(lane % 2 == 0, 0, 64).reshape(1, 32, 1), space="local"))
    assert c.local_load_wavefronts == 2


def test_local_stride_eight_words_is_eight_way():
    # word 8*lane: banks 0, 8, 16, 24, each with 8 distinct words -> 8 wavefronts, 7 conflicts
    c = observe(event(8 * LANE, space="local", direction="store"))
    assert (c.local_store_requests, c.local_store_wavefronts) == (1, 8)
    assert c.local_store_bank_conflicts == c.local_bank_conflicts == 7
    assert c.local_load_requests == 0


def test_local_stride_32_words_is_32_way_and_masking_reduces_it():
    # word 32*lane: all in bank 0, 32 distinct words -> 32 wavefronts, 31 conflicts;
    # with only lanes 0..9 active: 10 wavefronts, 9 conflicts.
    c = observe(event(32 * LANE, space="local"))
    assert (c.local_load_wavefronts, c.local_bank_conflicts) == (32, 31)
    mask = (LANE < 10)
    c = observe(event(32 * LANE, space="local", mask=mask))
    assert (c.local_load_requests, c.local_load_wavefronts, c.local_bank_conflicts) == (1, 10, 9)


def test_other_granularities():
    # 16-wide sub-groups, 64-byte sectors: index = lane (32 floats) -> 2 sub-groups of 64 B
    # each = 1 sector each; 16 banks: word 16*lane -> per sub-group 16 words in bank 0.
    c = observe(event(LANE), sub_group_size=16, sector_bytes=64)
    assert (c.global_load_requests, c.global_load_sectors, c.global_load_lines) == (2, 2, 2)
    c = observe(event(16 * LANE, space="local"), sub_group_size=16, local_banks=16)
    assert (c.local_load_requests, c.local_load_wavefronts, c.local_bank_conflicts) == \
        (2, 32, 30)


def test_to_dict_has_every_counter_and_the_ratio():
    c = observe(event(2 * LANE))
    d = c.to_dict()
    for key in ("global_load_requests", "global_load_sectors", "global_load_lines",
                "global_store_requests", "local_bank_conflicts", "local_load_wavefronts"):
        assert key in d
    assert d["global_load_sectors_per_request"] == 8.0
    assert d["sectors_by_buffer"] == {"X:load": 8}
    assert MemoryCounts().global_load_sectors_per_request == 0.0


@pytest.mark.parametrize("options, word", [({"a_tile": "column-major"}, "a_tile"),
                                           ({"a_tile": "Transposed"}, "a_tile"),
                                           ({"padding": -1}, "padding"),
                                           ({"padding": 1.5}, "padding")])
def test_gemm_tiled_refuses_unknown_layout_options(options, word):
    # An unknown a_tile must not silently select the transposed (bank-conflicting) layout;
    # a negative padding would make a tile too narrow for its own indices, a float one a
    # LocalArray of 22.0 elements. (gemm_naive refuses an unknown mapping the same way.)
    with pytest.raises(ScheduleError, match=word):
        build("gemm-tiled", 8, 8, 8, tile=4, **options)
