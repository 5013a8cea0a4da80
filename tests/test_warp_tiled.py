"""gemm-warp-tiled: results against numpy at odd sizes, counts against the closed forms,
hand-computed sub-group tiles, conflict-free float4 local reads and stores, the order of a
K step, its broken forms caught, option errors, the CLI and a run on PoCL. (The drawn
configurations of every register-blocked family, this one included, are in
test_register_blocked.py.)"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st

from strategies import assert_matches_reference, random_inputs, warp_tiled_configurations
from tiletraffic.simulator.kernels import closed_forms as closed_form
from tiletraffic.analysis.cli import main
from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.observers.counters import Observer
from tiletraffic.simulator.engine.simulation import simulate
from tiletraffic.simulator.observers.memory import MemoryObserver
from tiletraffic.simulator.kernels.families import ScheduleError, build
from tiletraffic.simulator.kernels.warp_tiled import skew_floats, warp_geometry

ODD = [  # (m, k, n, options): edge blocks in M and N, K not a multiple of BK, K < BK
    ((37, 44, 68), {"tile": 8, "wg_rows": 4, "tm": 4, "tn": 4, "bk": 8}),
    ((70, 4, 36), {"tile": 8, "wg_rows": 8, "tm": 4, "tn": 8, "bk": 8, "wn": 32}),
    ((33, 52, 40), {"tile": 4, "wg_rows": 8, "tm": 4, "tn": 4, "bk": 16}),
    ((9, 16, 20), {"tile": 16, "wg_rows": 2, "tm": 4, "tn": 4, "bk": 16}),
    ((130, 20, 132), {"tile": 16, "wg_rows": 16, "tm": 8, "tn": 8, "bk": 16}),
]


@pytest.mark.parametrize("sizes,options", ODD)
def test_odd_sizes_match_numpy_and_the_closed_forms(sizes, options):
    sch = build("gemm-warp-tiled", *sizes, **options)
    inputs = random_inputs(sch, np.random.default_rng(sum(sizes)))
    result = simulate(sch, inputs)  # raises on any hazard
    assert_matches_reference(sch, inputs, result.outputs["C"])
    assert result.counts.to_dict() == closed_form.counts(sch)


def test_counts_by_hand():
    # M = 40, K = 24, N = 64; work-group 8 x 4 = 32 work-items (one sub-group), TM = TN = 4,
    # BK = 8: BM = 16, BN = 32; 3 x 2 = 6 work-groups, S = 3 K steps.
    # A: 40·24 read by 2 column blocks = 1920; B: 24·64 by 3 row blocks = 4608.
    # local stores per work-group and step: 16·8 + 8·32 = 384 -> 6·3·384 = 6912.
    # local loads per work-item and step: 8·(4 + 4) = 64 -> 6·32·3·64 = 36864, as float4s:
    # 2 float4s of each tile per depth, 8 depths, one request per sub-group: 6·3·8·2 = 288.
    # FLOP: 6·32 items · 3 · 8 · 16 · 2 = 147456; barriers: one per step, 3·6 = 18.
    sch = build("gemm-warp-tiled", 40, 24, 64, tile=8, wg_rows=4, tm=4, tn=4, bk=8)
    mem = MemoryObserver()
    c = simulate(sch, compute_values=False, observers=[mem]).counts
    assert c.global_load_elems_by_buffer == {"A": 1920, "B": 4608, "C": 0}
    assert (c.local_store_elems, c.local_load_elems, c.flop, c.barriers, c.work_groups) == \
        (6912, 36864, 147456, 18, 6)
    assert mem.counts.local_load_requests == 288
    # sub-group tile 16 x 32 (default wn = 8·TN: 4 x 8 lanes), the whole block
    assert (sch.extra["wm"], sch.extra["wn"]) == (16, 32)
    # the A tile's rows: BM + SKEW·(BK/4 - 1) = 16 + 16·1 = 32 floats
    assert sch.local_mem_bytes == 2 * 4 * (8 * 32 + 8 * 32)


def test_each_work_item_owns_its_4x4_blocks_of_the_sub_group_tile():
    """Work-item tid of a 16 x 16 work-group with TM = TN = 8 (128 x 128 block, default
    wn = 64: sub-group tiles 32 x 64 of 4 x 8 lanes, 4 x 2 of them): sub-group sg = tid / 32
    sits at rows 32·(sg / 2), columns 64·(sg % 2); lane l at rows 4·(l / 8) + 16·i4 and
    columns 4·(l % 8) + 32·j4 of it. With B the identity C = A, so every element of C
    carries its own row and column; the ownership is read off the order of the stores."""
    sch = build("gemm-warp-tiled", 128, 128, 128, tile=16, tm=8, tn=8, bk=16)

    class Owners(Observer):
        def __init__(self):
            self.owner = np.full((128, 128), -1)

        def on_access(self, ev):
            if ev.space == "global" and ev.direction == "store":
                mask = np.broadcast_to(ev.mask, ev.shape)
                flat = np.broadcast_to(ev.index, ev.shape)[mask]
                tids = np.broadcast_to(np.arange(ev.shape[1])[None, :, None], ev.shape)[mask]
                self.owner[flat // 128, flat % 128] = tids

    owners = Owners()
    simulate(sch, compute_values=False, observers=[owners])
    for tid in (0, 1, 7, 8, 31, 32, 100, 255):
        sg, lane = divmod(tid, 32)
        rows = [32 * (sg // 2) + 4 * (lane // 8) + 16 * i4 + i for i4 in (0, 1) for i in range(4)]
        cols = [64 * (sg % 2) + 4 * (lane % 8) + 32 * j4 + j for j4 in (0, 1) for j in range(4)]
        assert np.all(owners.owner[np.ix_(rows, cols)] == tid), tid
        assert (owners.owner == tid).sum() == 64


CONFLICT_FREE = [c for c in warp_tiled_configurations()
                 if c["tm"] * c["wg_rows"] % 32 == 0 and c["bk"] <= 32 and 32 % c["bk"] == 0]


@settings(max_examples=12, deadline=None)
@given(options=st.sampled_from(CONFLICT_FREE))
def test_local_reads_and_stores_are_conflict_free_float4s(options):
    """BM a multiple of 32 and BK dividing 32: no local load or store meets another lane's
    word in one bank (the A tile's skew spreads its transposing stores), and every local
    read is a 128-bit load: requests = sub-groups · steps · BK · (TM + TN) / 4."""
    g = warp_geometry(options["tile"], options["wg_rows"], options["tm"], options["tn"],
                      options["bk"], options["wn"])
    m, n, k = 2 * g["bm"], g["bn"], 3 * options["bk"]
    sch = build("gemm-warp-tiled", m, k, n, **options)
    mem = MemoryObserver()
    simulate(sch, compute_values=False, observers=[mem])
    assert mem.counts.local_load_bank_conflicts == 0
    assert mem.counts.local_store_bank_conflicts == 0
    groups = 2
    want = groups * g["sub_groups"] * 3 * options["bk"] * (options["tm"] + options["tn"]) // 4
    assert mem.counts.local_load_requests == want


def test_without_the_skew_the_a_tile_stores_conflict():
    """The same kernel with the A tile's skew taken out (SKEW = 0, rows of BM floats)
    stores the transposed A tile with bank conflicts (BK = 16: four values of k per row of
    A, at columns BM = 128 floats apart: the 32 lanes write 8 rows of 4 values of k into 8
    banks, 4-way), which the skew removes."""
    sch = build("gemm-warp-tiled", 128, 48, 128, tile=16, tm=8, tn=8, bk=16)
    assert skew_floats(16) == 8

    def unskewed(e):
        if isinstance(e, S.Const) and e.name == "SKEW":
            return S.Const(0, "SKEW")
        if isinstance(e, S.BinOp):
            return S.BinOp(e.op, unskewed(e.left), unskewed(e.right))
        return e

    from tiletraffic.simulator.kernels.variants import rewrite

    rows = S.LocalArray("A_tile", sch.local_arrays[0].dims[:2] + (S.Const(128, "A_ROW"),))

    def fn(s):
        if isinstance(s, S.Store) and s.array.name == "A_tile":
            return (S.Store(rows, tuple(unskewed(i) for i in s.index), s.value),)
        if isinstance(s, S.VectorLoad) and s.array.name == "A_tile":
            return (S.VectorLoad(s.names, rows, tuple(unskewed(i) for i in s.index)),)
        return None

    import dataclasses
    plain = dataclasses.replace(sch, body=rewrite(sch.body, fn),
                                local_arrays=(rows, sch.local_arrays[1]))
    counts = {}
    for name, s in (("skewed", sch), ("plain", plain)):
        mem = MemoryObserver()
        simulate(s, compute_values=False, observers=[mem])
        counts[name] = mem.counts
    assert counts["skewed"].local_store_bank_conflicts == 0
    assert counts["plain"].local_store_bank_conflicts > 0
    assert counts["plain"].local_load_bank_conflicts == 0   # reads: one k, any skew


class _Order(Observer):
    """Per barrier interval the kinds of access (G global load, S local store, C local load
    or multiply-add), repeats merged."""

    def __init__(self):
        self.intervals, self.now = [], ""

    def _add(self, kind):
        if not self.now.endswith(kind):
            self.now += kind

    def on_access(self, ev):
        self._add({("global", "load"): "G", ("local", "store"): "S",
                   ("local", "load"): "C"}.get((ev.space, ev.direction), ""))

    def on_flop(self, group_index, flop_per_group):
        self._add("C")

    def on_barrier(self, group_index, arrived):
        self.intervals.append(self.now)
        self.now = ""


def test_a_k_step_issues_the_next_loads_computes_then_stores():
    # K = 64, BK = 16: 4 steps; the first staged before the loop, steps 0..2 prefetch the
    # next one around their multiply-adds, step 3 only computes
    order = _Order()
    simulate(build("gemm-warp-tiled", 128, 64, 128), compute_values=False, observers=[order])
    assert order.intervals == ["GS", "GCS", "GCS", "GCS"]
    assert order.now == "C"


def test_fragments_of_depth_kk_plus_1_are_loaded_before_the_multiply_adds_of_kk():
    """Register double buffering, in the generated source: inside the kk loop the second
    fragment set (depth kk + 1) is read from local memory before the first set's
    multiply-adds, and the first set is refilled (depth kk + 2) before the second set's."""
    from tiletraffic.gpu.codegen.generate import generate

    source = generate(build("gemm-warp-tiled", 128, 64, 128)).source
    loop = source[source.index("for (int kk = 0;"):]
    assert loop.index("b1_0 = ") < loop.index("acc[0][0] += a0_0 * b0_0;") \
        < loop.index("b0_0 = ", loop.index("b1_0 = ")) < loop.index("acc[0][0] += a1_0 * b1_0;")
    assert source.count("barrier(") == 1


def _in_the_k_loop(sch, change):
    import dataclasses

    from tiletraffic.simulator.kernels.variants import rewrite

    def fn(s):
        if isinstance(s, S.For) and s.var == "t":
            return (S.For(s.var, s.start, s.stop, s.step, tuple(change(list(s.body)))),)
        return None
    return dataclasses.replace(sch, body=rewrite(sch.body, fn))


def _into_the_current_buffer(body):
    last = body[-1]          # if (t + 1 < steps) { the stores into buffer (t + 1) % 2 }
    assert isinstance(last, S.If)

    def current(x):
        if isinstance(x, S.Store):
            return S.Store(x.array, (S.Var("cur"),) + x.index[1:], x.value)
        return S.VectorStore(x.array, (S.Var("cur"),) + x.index[1:], x.values)
    body[-1] = S.If(last.cond, tuple(current(x) for x in last.then))
    return body


@pytest.mark.parametrize("sizes,options", ODD)
def test_broken_forms_are_caught(sizes, options):
    """Without its one barrier it races; storing the next step into the buffer being read
    races whenever there is a next step."""
    from tiletraffic.simulator.engine.limits import UNLIMITED
    from tiletraffic.simulator.kernels.variants import drop_barrier

    def kinds(sch):
        res = simulate(sch, random_inputs(sch, np.random.default_rng(1)), hazards="report",
                       limits=UNLIMITED)
        return {h.kind for h in res.hazards}

    sch = build("gemm-warp-tiled", *sizes, **options)
    assert "data-race" in kinds(drop_barrier(sch, 1))
    steps = math.ceil(sizes[1] / options["bk"])
    wrong_buffer = kinds(_in_the_k_loop(sch, _into_the_current_buffer))
    assert ("data-race" in wrong_buffer) == (steps > 1), wrong_buffer


@pytest.mark.parametrize("kw,words", [
    ({"k": 6}, "K to be a multiple of 4"),
    ({"n": 30}, "N to be a multiple of 4"),
    ({"tm": 6}, "tm to be a multiple of 4"),
    ({"bk": 10}, "bk to be a multiple of 4"),
    ({"tile": 4, "wg_rows": 4}, "multiple of 32 work-items"),
    ({"wn": 24}, "wn to be tn times a divisor of 32"),
    ({"wn": 256}, "do not tile the 128 x 128 block"),
    ({"bk": 4, "tile": 32, "wg_rows": 32, "tm": 4, "tn": 4}, "whole float4s"),
    ({"wn": 0}, "wn must be a positive integer"),
])
def test_bad_options_name_the_value(kw, words):
    args = {"m": 64, "k": 64, "n": 64, "tile": 16, "tm": 8, "tn": 8, "bk": 16, **kw}
    m, k, n = args.pop("m"), args.pop("k"), args.pop("n")
    with pytest.raises(ScheduleError, match=words):
        build("gemm-warp-tiled", m, k, n, **args)


def invoke(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=True)


def test_cli_simulate_takes_wn():
    res = invoke("simulate", "gemm-warp-tiled", "--m", "37", "--k", "40", "--n", "68",
                 "--tile", "8", "--wg-rows", "8", "--tm", "4", "--tn", "8", "--bk", "8",
                 "--wn", "32", "--json", "--seed", "1")
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    want = closed_form.gemm_warp_tiled(37, 40, 68, 8, 8, 4, 8, 8)
    assert data["local_load_elems"] == want["local_load_elems"]
    assert data["closed_form_agrees"] is True and data["hazards"] == []
    assert data["result_error_over_tolerance"] < 1


@pytest.mark.parametrize("args", [
    ("simulate", "gemm-warp-tiled", "--m", "64", "--k", "64", "--n", "64", "--wn", "24"),
    ("simulate", "gemm-vectorized", "--m", "64", "--k", "64", "--n", "64", "--wn", "32"),
])
def test_cli_refuses_a_bad_or_misplaced_wn_with_exit_2(args):
    res = invoke(*args)
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output


def test_cli_check_finds_no_hazard():
    res = invoke("check", "gemm-warp-tiled", "--json")
    assert res.exit_code == 0, res.output


def _pocl_present() -> bool:
    try:
        from tiletraffic.gpu.runtime.launch import list_devices
        return any(d.is_pocl for d in list_devices())
    except Exception:
        return False


@pytest.mark.skipif(not _pocl_present(), reason="PoCL is not installed")
@pytest.mark.parametrize("sizes,options", [
    (("37", "44", "68"), ("--tile", "8", "--wg-rows", "4", "--tm", "4", "--tn", "4",
                          "--bk", "8")),
    (("70", "4", "36"), ("--tile", "8", "--wg-rows", "8", "--tn", "8", "--tm", "4",
                         "--bk", "8", "--wn", "32")),
    (("130", "36", "132"), ()),
    (("80", "16", "96"), ("--tile", "8", "--wg-rows", "4", "--tm", "4", "--tn", "4",
                          "--bk", "8", "--group-rows", "2")),
])
def test_run_on_pocl_checks_the_result_against_numpy(sizes, options):
    m, k, n = sizes
    res = invoke("run", "gemm-warp-tiled", "--m", m, "--k", k, "--n", n, *options,
                 "--device", "pocl", "--json", "--seed", "3")
    assert res.exit_code == 0, res.output
    data = json.loads(res.output[res.output.index("{"):])
    assert data["check"]["ok"] is True
    assert data["check"]["nan_count"] == 0
    assert data["check"]["error_over_tolerance"] < 1


# ------------------------------------------------------------------ work-group order
def _block_of_each_work_group(sch):
    """(work-group linear id -> (block row, block column)) read off the stores of C."""
    bm, bn = sch.extra["bm"], sch.extra["bn"]
    n = sch.param_values["N"]
    seen = {}

    class Blocks(Observer):
        def on_access(self, ev):
            if ev.space == "global" and ev.direction == "store":
                mask = np.broadcast_to(ev.mask, ev.shape)
                flat = np.broadcast_to(ev.index, ev.shape)
                for g, group in enumerate(ev.group_index):
                    rows, cols = divmod(flat[g][mask[g]], n)
                    seen.setdefault(int(group), set()).update(
                        zip((rows // bm).tolist(), (cols // bn).tolist()))

    simulate(sch, compute_values=False, observers=[Blocks()])
    assert all(len(v) == 1 for v in seen.values())
    return {g: v.pop() for g, v in seen.items()}


def test_group_rows_orders_the_blocks_by_hand():
    # 5 block rows x 3 block columns (M = 80, N = 96 with 16 x 32 blocks), groups of 2 rows:
    # linear ids 0..5 walk rows 0-1 column by column, 6..11 rows 2-3, 12..14 the last row
    sch = build("gemm-warp-tiled", 80, 16, 96, tile=8, wg_rows=4, tm=4, tn=4, bk=8,
                group_rows=2)
    blocks = _block_of_each_work_group(sch)
    assert [blocks[p] for p in range(15)] == [
        (0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2),
        (2, 0), (3, 0), (2, 1), (3, 1), (2, 2), (3, 2),
        (4, 0), (4, 1), (4, 2)]
    plain = _block_of_each_work_group(build("gemm-warp-tiled", 80, 16, 96, tile=8, wg_rows=4,
                                            tm=4, tn=4, bk=8))
    assert [plain[p] for p in range(15)] == [(r, c) for r in range(5) for c in range(3)]


@pytest.mark.parametrize("group_rows", [2, 3, 8])
def test_group_rows_keeps_the_results_and_the_counts(group_rows):
    sch = build("gemm-warp-tiled", 70, 40, 132, tile=8, wg_rows=4, tm=4, tn=4, bk=8,
                group_rows=group_rows)
    inputs = random_inputs(sch, np.random.default_rng(group_rows))
    result = simulate(sch, inputs)  # raises on any hazard (a block computed twice races)
    assert_matches_reference(sch, inputs, result.outputs["C"])
    assert result.counts.to_dict() == closed_form.counts(sch)
    assert sorted(_block_of_each_work_group(sch).values()) == [
        (r, c) for r in range(5) for c in range(5)]


def test_cli_takes_group_rows():
    res = invoke("simulate", "gemm-warp-tiled", "--m", "80", "--k", "16", "--n", "96",
                 "--tile", "8", "--wg-rows", "4", "--tm", "4", "--tn", "4", "--bk", "8",
                 "--group-rows", "2", "--json", "--seed", "1")
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["closed_form_agrees"] is True and data["hazards"] == []
    bad = invoke("simulate", "gemm-warp-tiled", "--m", "80", "--k", "16", "--n", "96",
                 "--group-rows", "0")
    assert bad.exit_code == 2 and "--group-rows must be a positive integer" in bad.output
