"""Strided global requests (simulator/observers/strides.py): counts by hand and the declaration."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tiletraffic
from tiletraffic.simulator.observers.counters import AccessEvent
from tiletraffic.simulator.model.device_model import GuessedValueWarning
from tiletraffic.simulator.observers.strides import (StridedRequests, StridedRequestWarning,
                                                     StrideObserver, busiest_bank_lines,
                                                     strided_declaration,
                                                     strided_dram_fill_cycles,
                                                     strided_l1_cycles)


def event(index, mask=True, space="global", vector_width=1, direction="load"):
    """One work-group's access; ``index`` per work-item, or (work-items, elements) for a
    vector access."""
    index = np.asarray(index, dtype=np.int64)
    index = index.reshape(1, index.shape[0], -1)
    return AccessEvent(space, direction, "A", 1 << 30, index,
                       np.broadcast_to(np.asarray(mask), index.shape), index.shape,
                       np.arange(1), vector_width=vector_width)


def observe(*events, weights=None):
    obs = StrideObserver(32, 128)
    obs.on_batch(np.arange(1), 32, weights)
    for ev in events:
        obs.on_access(ev)
    return obs.counts


def test_row_per_work_item_requests_by_hand():
    # 32 work-items, each at the start of its own row of K floats
    # K = 4096: 32 lines, all at offset 0 -> 32 aligned lines, all 32 words in bank 0
    assert observe(event(np.arange(32) * 4096)) == StridedRequests(32, 0, 32, {"A"})
    # K = 4097: row r starts at byte 16388 r, offset 4 r mod 128: 32 lines, offsets differ,
    # word r in bank r: one line per bank
    assert observe(event(np.arange(32) * 4097)) == StridedRequests(0, 32, 1, {"A"})
    # K = 4112 (16 words past 4096): banks 0 and 16 alternate, 16 lines in each
    assert observe(event(np.arange(32) * 4112)) == StridedRequests(0, 32, 16, {"A"})
    # K = 4104 (8 words past): banks 0, 8, 16, 24, 8 lines each
    assert observe(event(np.arange(32) * 4104)) == StridedRequests(0, 32, 8, {"A"})
    # K = 32 floats = 128 B: 32 adjacent lines at one offset -> aligned too
    assert observe(event(np.arange(32) * 32)) == StridedRequests(32, 0, 32, {"A"})
    # only 7 distinct rows (work-items 7 apart share a row): 7 lines < 8 -> not strided
    assert observe(event((np.arange(32) % 7) * 4096)) == StridedRequests(0, 0)


def test_contiguous_broadcast_and_local_requests_are_not_strided():
    assert observe(event(np.arange(32))) == StridedRequests()            # one line
    assert observe(event(np.arange(32) + 5)) == StridedRequests()        # two lines
    assert observe(event(np.zeros(32))) == StridedRequests()             # broadcast
    assert observe(event(np.arange(32) * 4096, space="local")) == StridedRequests()
    # float4: 32 work-items x 4 floats = 512 B, 4 lines
    assert observe(event(np.arange(128).reshape(32, 4), vector_width=4)) == StridedRequests()
    # float4 rows 4096 floats apart: 32 lines at offset 0
    rows = np.arange(32)[:, None] * 4096 + np.arange(4)
    # (each line's words in banks 0-3: 32 lines in each of them)
    assert observe(event(rows, vector_width=4)) == StridedRequests(32, 0, 32, {"A"})
    # GEMM with B = 8: a sub-group reads 4 rows of A (8 work-items each): 4 lines
    assert observe(event(np.repeat(np.arange(4), 8) * 4096)) == StridedRequests()


def test_masked_work_items_and_class_weights():
    # 16 of 32 active: 16 lines; the work-group stands for 3 (class weight)
    mask = np.arange(32) < 16
    assert observe(event(np.arange(32) * 4096, mask.reshape(32, 1)),
                   weights=np.array([3])) == \
        StridedRequests(48, 0, 48, {"A"})


def test_declaration_threshold_and_text():
    assert strided_declaration(StridedRequests(9, 0), 100) is None       # 9% < 10%
    text = strided_declaration(StridedRequests(10, 0), 100)
    assert text.startswith("outside the model: 10% of the L1 wavefronts")
    assert "a row stride that is a multiple of 128 B" in text
    # the contract, never a past measurement: what the model lacks and what measures it
    assert "no strided-request costs" in text and "tiletraffic calibrate" in text
    assert not any(word in text for word in ("H200", "took", "16384", "16388"))
    text = strided_declaration(StridedRequests(3, 30), 100)
    assert "not a multiple of 128 B" in text
    assert strided_declaration(StridedRequests(5, 0), 0) is None


def test_model_declares_matvec_naive_and_not_gemm():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GuessedValueWarning)
        with pytest.warns(StridedRequestWarning, match="matvec_naive: outside the model"):
            m = tiletraffic.model(tiletraffic.build("matvec-naive", m=256, k=512, tile=64))
        assert "multiple of 128 B" in m.prediction.methods["l1_strided_requests"]
        with warnings.catch_warnings():
            warnings.simplefilter("error", StridedRequestWarning)
            g = tiletraffic.model(tiletraffic.build("gemm-tiled", m=64, k=64, n=64, tile=16))
    assert "l1_strided_requests" not in g.prediction.methods


def test_cli_model_prints_the_declaration_apart_from_the_guesses():
    import json

    from click.testing import CliRunner

    from tiletraffic.analysis.cli import main

    res = CliRunner().invoke(main, ["model", "matvec-naive", "--m", "256", "--k", "512",
                                    "--tile", "64", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert len(out["model_warnings"]) == 1
    assert "outside the model" in out["model_warnings"][0]
    assert all("is a guess" in g for g in out["guessed_values"])
    assert "multiple of 128 B" in out["methods"]["l1_strided_requests"]


def test_busiest_bank_lines_by_hand():
    # bytes: two requests of 4 elements; -1 inactive
    rows = np.array([[0, 128, 256, 384],        # 4 lines, all words in bank 0 -> 4
                     [0, 4, 132, -1],           # line 0 banks 0, 1; line 1 bank 1 -> 2
                     [8, 8, 8, 8],              # one word: 1
                     [-1, -1, -1, -1]])         # nothing active: 0
    assert busiest_bank_lines(rows).tolist() == [4, 2, 1, 0]
    # 2 banks of 8 bytes: bytes 0 and 16 share bank 0 (lines 0 and 0: one line)
    assert busiest_bank_lines(np.array([[0, 16, 144]]), 128, 8, 2).tolist() == [2]


def test_strided_l1_cycles_by_hand():
    counts = StridedRequests(aligned_lines=64, other_lines=32, busiest_bank_lines=65)
    # 0.5 cycles per line x 96 + 0.75 per busiest-bank line x 65 = 48 + 48.75
    assert strided_l1_cycles(counts, 0.5, 0.75) == pytest.approx(96.75)
    assert strided_l1_cycles(counts, 0.0, 0.0) is None            # not modelled


def _h200_with_strided(per_line, per_bank):
    from tiletraffic.simulator.model.device_model import NVIDIA_H200, ValueSource

    src = ValueSource("measured", "test", "by hand")
    return NVIDIA_H200.with_values({"l1_strided_cycles_per_line": (per_line, src),
                                    "l1_strided_cycles_per_busiest_bank_line":
                                        (per_bank, src)})


def test_modelled_strided_requests_replace_their_wavefronts_in_the_l1_time():
    """matvec-naive M = 1024 (4 work-groups of 256, one per compute unit): the strided A
    requests' lines are taken out of the L1 wavefronts and charged a x lines + b x busiest
    bank lines instead; with a = 1 / rate and b = 0 the time is the old one."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = tiletraffic.build("matvec-naive", m=1024, k=1024, tile=256)
        old = tiletraffic.model(s, "nvidia-h200")
        from tiletraffic.simulator.model.device_model import NVIDIA_H200
        same = tiletraffic.model(s, _h200_with_strided(
            1 / NVIDIA_H200.l1_wavefronts_per_cycle_per_cu, 0.0))
        new = tiletraffic.model(s, _h200_with_strided(0.5, 0.7))
    assert "outside the model" in old.prediction.methods["l1_strided_requests"]
    assert same.prediction.time_terms_s["l1_s"] == pytest.approx(
        old.prediction.time_terms_s["l1_s"], rel=1e-12)
    assert "busiest bank" in new.prediction.methods["l1_strided_requests"]
    # by hand: 4 work-groups of 8 sub-groups, each 1024 requests of 32 lines in one bank
    # (K = 1024: every row at offset 0) + 1024 x-vector requests of 1 line; each on its
    # own compute unit (share = 1/4)
    per_cu_requests = 8 * 1024
    strided = per_cu_requests * (0.5 * 32 + 0.7 * 32)
    rest = (new.prediction.l1_wavefronts / 4 - per_cu_requests * 32) \
        / NVIDIA_H200.l1_wavefronts_per_cycle_per_cu
    assert new.prediction.time_terms_s["l1_s"] == pytest.approx(
        (strided + rest) / NVIDIA_H200.clock_hz, rel=1e-9)


def test_strided_dram_fill_cycles_by_hand():
    # 8200 lines, 3/4 of them from DRAM, 150 sub-group cycles each, shared by 8 sub-groups
    assert strided_dram_fill_cycles(8200, 0.75, 150.0, 8) == pytest.approx(
        8200 * 0.75 * 150 / 8)
    assert strided_dram_fill_cycles(8200, 0.0, 150.0, 8) == 0.0       # all from L2
    for bad in ((8200, 0.75, 150.0, 0), (-1, 0.75, 150.0, 8), (8200, 1.5, 150.0, 8)):
        with pytest.raises(ValueError, match="sub_groups = "):
            strided_dram_fill_cycles(*bad)


def test_strided_requests_fills_from_dram_are_a_ceiling_of_their_own():
    """matvec-naive M = 1024, K = 1025 (4 work-groups of 256, one per compute unit): A is
    4 198 400 contiguous bytes = 131 200 sectors, 32 800 per work-group (its 256 rows end
    on a sector boundary: 256 x 1025 x 4 = 1 049 600 B), so each compute unit fills 8200
    lines of A. Everything fits in L2 (compulsory DRAM reads: A + x = 4 202 500 B), and L2
    sends 131 200 + 2 x 129 sectors of x (4100 B from byte 0, once per pair of work-groups
    sharing an L1: l1_sharing_work_groups = 2) = 131 458 sectors: a miss fraction of
    4 202 500 / (131 458 x 32). With 150 sub-group cycles per line and the 8
    sub-groups of one work-group: 8200 x f x 150 / 8 cycles."""
    from tiletraffic.simulator.model.device_model import NVIDIA_H200, ValueSource

    src = ValueSource("measured", "test", "by hand")
    fill = _h200_with_strided(0.3, 0.7).with_values(
        {"strided_dram_fill_sub_group_cycles_per_line": (150.0, src)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = tiletraffic.build("matvec-naive", m=1024, k=1025, tile=256)
        without = tiletraffic.model(s, _h200_with_strided(0.3, 0.7)).prediction
        got = tiletraffic.model(s, fill).prediction
    assert got.l2_read_sectors == 131_458 and got.dram_read_bytes == 4_202_500
    miss = 4_202_500 / (131_458 * 32)
    expected_s = 8200 * miss * 150 / 8 / NVIDIA_H200.clock_hz
    assert got.time_terms_s["l1_strided_dram_s"] == pytest.approx(expected_s, rel=1e-12)
    assert "resident sub-groups" in got.methods["l1_strided_dram"]
    # the L1 time of the unaligned requests (0.3 x 32 + 0.7 x 1 cycles each) is below the
    # fills': the fills bound the launch, and nothing else changes
    assert got.bound == "l1_strided_dram" and without.bound == "l1"
    assert got.time_terms_s["l1_s"] < expected_s
    assert "l1_strided_dram_s" not in without.time_terms_s
    assert got.predicted_time_s == pytest.approx(
        without.predicted_time_s - without.time_terms_s["l1_s"] + expected_s, rel=1e-12)


def test_strided_stores_count_their_lines_but_name_no_array_to_fill():
    """A strided store costs its L1 lines like a load, but fills no L1 line from DRAM (the
    footprint counts loads only): its array is not among those the fills charge."""
    assert observe(event(np.arange(32) * 4097, direction="store")) == \
        StridedRequests(0, 32, 1, set())
    assert observe(event(np.arange(32) * 4097, direction="store"),
                   event(np.arange(32) * 4097)).arrays == {"A"}


def _coalesced_loads_strided_stores(m=256, k=1025, tile=64):
    """y (inout, (M + K) x K): work-item g reads y[M + j, g] (a sub-group: 32 neighbouring
    words, coalesced) and stores y[g, j] (its own row: strided) for j < K; no work-item
    reads what another writes."""
    from tiletraffic.simulator.ir.nodes import (Accumulate, Const, DeclareFloat, For,
                                                GlobalArray, Let, Param, Schedule, Var,
                                                block, global_id, store)

    y = GlobalArray("y", "inout", ("R", "K"))
    g, acc, j = Let("g", global_id(0)), DeclareFloat("acc"), Var("j")
    body = block(g, acc, For("j", Const(0), Param("K"), Const(1), (
        Accumulate("acc", y[Param("M") + j, g.var]), store(y, (g.var, j), acc.ref))))
    return Schedule("coalesced-loads-strided-stores", "coalesced_loads_strided_stores",
                    (("M", m), ("K", k), ("R", m + k)), (y,), (), (tile,), (m,), body, tile)


def test_fills_from_dram_leave_out_coalesced_loads_of_an_array_stored_strided():
    """Only y's stores are strided; its loads are coalesced: no strided fills to charge
    (the fills term charged all of y's L1 misses at the strided rate, 81.9 us against an
    L1 time of 35.2 us, before stores stopped naming their array)."""
    from tiletraffic.simulator.model.device_model import NVIDIA_H200, ValueSource

    src = ValueSource("measured", "test", "by hand")
    fill = NVIDIA_H200.with_values(
        {"strided_dram_fill_sub_group_cycles_per_line": (150.0, src)})
    s = _coalesced_loads_strided_stores()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = tiletraffic.model(s, fill).prediction
        without = tiletraffic.model(s, NVIDIA_H200).prediction
    assert "l1_strided_requests" in got.methods          # the stores are strided
    assert "l1_strided_dram_s" not in got.time_terms_s
    assert got.predicted_time_s == without.predicted_time_s and got.bound == without.bound


def test_fills_from_dram_of_a_work_group_that_just_fits_count_its_sub_groups():
    """gemm-vectorized 32 x 32 work-items with 8 x 8 outputs each: estimated 122 registers
    per work-item, capped at 64 (the most with which one work-group of 1024 fits the
    H200's 65 536 registers), so one work-group is resident and the fills count its 32
    sub-groups, exactly as with 64 registers given."""
    from tiletraffic.simulator.model.device_model import NVIDIA_H200, ValueSource

    src = ValueSource("measured", "test", "by hand")
    fill = NVIDIA_H200.with_values(
        {"strided_dram_fill_sub_group_cycles_per_line": (150.0, src)})
    s = tiletraffic.build("gemm-vectorized", m=256, n=256, k=256, tile=32, tm=8, tn=8, bk=16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimated = tiletraffic.model(s, fill).prediction
        given = tiletraffic.model(s, fill, registers_per_work_item=64).prediction
    assert (estimated.registers_per_work_item, estimated.resident_work_groups_per_cu) == (64, 1)
    assert given.resident_work_groups_per_cu == 1
    assert estimated.time_terms_s["l1_strided_dram_s"] > 0
    assert estimated.time_terms_s["l1_strided_dram_s"] == pytest.approx(
        given.time_terms_s["l1_strided_dram_s"], rel=1e-12)


def test_a_few_strided_requests_do_not_make_all_of_an_arrays_fills_strided():
    """matvec-rows-reduce with 8 work-items per row (4 rows of 32 B per sub-group): at
    K = 4096 and 4100 its requests touch at most 7 lines (none strided); at K = 4097 the
    rows' 32-B pieces straddle lines and 17% of A's request lines are in requests of 8
    lines. Every request still fills 4 x 32 B = one line per sub-group, so the fills from
    DRAM cost the same at the three K; the prediction at 4097 was 2.3 x the others
    (fills-bound, 0.0385 ms against 0.0170 ms, dram-bound) with round 6's H200 values
    while every L1 miss of an array with any strided load counted; now an array's fills
    count by the share of its load requests that are strided."""
    from tiletraffic.simulator.model.device_model import NVIDIA_H200, ValueSource

    src = ValueSource("measured", "test", "round 6's H200 calibration")
    model = NVIDIA_H200.with_values({
        "strided_dram_fill_sub_group_cycles_per_line": (154.3, src),
        "l1_strided_cycles_per_line": (0.284, src),
        "l1_strided_cycles_per_busiest_bank_line": (0.731, src)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = {k: tiletraffic.model(tiletraffic.build("matvec-rows-reduce", m=4096, k=k,
                                                    tile=8), model).prediction.predicted_time_s
             for k in (4096, 4097, 4100)}
    assert t[4097] == pytest.approx((t[4096] + t[4100]) / 2, rel=0.25)


def test_strided_share_counts_each_arrays_load_requests_by_hand():
    # two loads of A: one request of 32 rows (strided), one of 32 consecutive words (not)
    obs = StrideObserver(32, 128)
    obs.on_batch(np.arange(1), None, np.array([3]))
    for index in (np.arange(32) * 4096, np.arange(32)):
        obs.on_access(event(index))
    # the class weight 3 counts each request 3 times; half of A's requests are strided
    assert obs.counts.load_requests == {"A": 6}
    assert obs.counts.strided_load_requests == {"A": 3}
    assert obs.counts.strided_share("A") == 0.5 and obs.counts.strided_share("x") == 0.0


def test_multi_line_requests_by_hand():
    """Requests of 2 to 7 lines: their lines and busiest-bank lines, which the strided fit
    prices (gemm-naive at 3200 and 3201: Nsight counts 2 data-pipe wavefronts for two rows of
    A at one offset, about 1 for two rows one word apart)."""
    def counts(index):
        c = observe(event(index))
        return c.multi_lines, c.multi_busiest_bank_lines, c.lines

    half = np.arange(32) // 16
    # two rows 3200 words apart (12 800 B, a multiple of 128 B): 2 lines, both in bank 0
    assert counts(half * 3200) == (2, 2, 0)
    # 3201 words apart: word 0 (bank 0) and word 3201 (bank 1): 2 lines, 1 per bank
    assert counts(half * 3201) == (2, 1, 0)
    # 16 consecutive words from word 24 (straddling lines 0 and 1), both halves the same:
    # 2 lines, every bank one line
    assert counts(np.tile(np.arange(24, 40), 2)) == (2, 1, 0)
    # a float4 row: 512 B = 4 lines, each bank holding a word of all 4
    assert observe(event(np.arange(128).reshape(32, 4), vector_width=4)).multi_lines == 4
    assert observe(event(np.arange(128).reshape(32, 4),
                         vector_width=4)).multi_busiest_bank_lines == 4
    # one line: nothing; 32 lines: strided, not multi-line
    assert counts(np.arange(32)) == (0, 0, 0)
    assert counts(np.arange(32) * 4096) == (0, 0, 32)
    # the fit prices strided and multi-line lines alike
    c = StridedRequests(32, 0, 32, {"A"}, multi_lines=2, multi_busiest_bank_lines=1)
    assert strided_l1_cycles(c, 0.5, 0.75) == pytest.approx(0.5 * 34 + 0.75 * 33)
