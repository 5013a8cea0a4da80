"""gemm-register-blocked and gemm-vectorized: results against numpy,
counts against the closed forms, hand-computed register blocks, option errors, the CLI and
a run on PoCL."""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st

from strategies import (assert_matches_reference, random_inputs, register_block_options,
                        register_block_sizes, seeds)
from tiletraffic.simulator.kernels import closed_forms as closed_form
from tiletraffic.analysis.cli import main
from tiletraffic.simulator.observers.counters import Observer
from tiletraffic.simulator.engine.simulation import simulate
from tiletraffic.simulator.observers.memory import MemoryObserver
from tiletraffic.simulator.kernels.families import (REGISTER_BLOCKED_FAMILIES, ScheduleError,
                                                    build)


@st.composite
def blocked(draw, family):
    m, k, n = draw(register_block_sizes(family, 40))
    return build(family, m, k, n, **draw(register_block_options(family)))


@pytest.mark.parametrize("family", REGISTER_BLOCKED_FAMILIES)
def test_results_match_numpy_and_counts_match_closed_forms(family):
    @settings(max_examples=25, deadline=None)
    @given(schedule=blocked(family), seed=seeds)
    def check(schedule, seed):
        inputs = random_inputs(schedule, np.random.default_rng(seed))
        result = simulate(schedule, inputs)  # raises on any hazard
        assert_matches_reference(schedule, inputs, result.outputs["C"])
        assert result.counts.to_dict() == closed_form.counts(schedule)

    check()


def test_register_block_counts_by_hand():
    # M = K = N = 8, work-group 2 x 2, TM = TN = 2, BK = 4: BM = BN = 4, 2 x 2 = 4
    # work-groups of 4 work-items, S = 2 K steps.
    # A: each 4x4 A tile is read by the 2 work-group columns: 8·8·2 = 128 loads; B too.
    # local stores per work-group and step: 4·4 (A tile) + 4·4 (B tile) = 32 -> 4·2·32 = 256.
    # local loads per work-item, step and k: TM + TN = 4 -> 16 items · 2 · 4 · 4 = 512.
    # FLOP: 16 items · 2 steps · 4 k · 4 outputs · 2 = 1024 = 2·M·N·K. Barriers 2·2·4 = 16.
    # gemm-prefetch: the same with one barrier per step: 2·4 = 8.
    for family, barriers in (("gemm-register-blocked", 16), ("gemm-prefetch", 8)):
        sch = build(family, 8, 8, 8, tile=2, tm=2, tn=2, bk=4, wg_rows=2)
        c = simulate(sch, compute_values=False).counts
        assert c.global_load_elems_by_buffer == {"A": 128, "B": 128, "C": 0}
        assert (c.local_store_elems, c.local_load_elems, c.flop, c.barriers) == \
            (256, 512, 1024, barriers)
        assert (c.work_groups, sch.num_groups, sch.local_size) == (4, (2, 2), (2, 2))
    # gemm-vectorized, work-group 2 x 1, TM = TN = 4: BM = 4, BN = 8 -> 2 x 1 work-groups
    # (2 row blocks, 1 column block); A read once (one column block): 64; B twice: 128.
    sch = build("gemm-vectorized", 8, 8, 8, tile=2, tm=4, tn=4, bk=4, wg_rows=1)
    c = simulate(sch, compute_values=False).counts
    assert (c.work_groups, sch.num_groups) == (2, (1, 2))
    assert c.global_load_elems_by_buffer == {"A": 64, "B": 128, "C": 0}
    assert c.flop == 2 * 8 * 8 * 8


def test_prefetch_has_one_barrier_per_k_step_and_twice_the_local_memory():
    # K = 40, BK = 16: S = 3 steps; one work-group: 3 barriers (one before the loop, one
    # after steps 0 and 1), against 6 for gemm-register-blocked; local memory 2 x (64x16 +
    # 16x64) x 4 B = 16 KiB against 8 KiB.
    pre = build("gemm-prefetch", 64, 40, 64)
    reg = build("gemm-register-blocked", 64, 40, 64)
    assert simulate(pre, compute_values=False).counts.barriers == 3
    assert simulate(reg, compute_values=False).counts.barriers == 6
    assert (pre.local_mem_bytes, reg.local_mem_bytes) == (16384, 8192)


class _Order(Observer):
    """The order of a launch's statements: per barrier interval the kinds of access it
    executed (G global load, S local store, C compute: local loads and multiply-adds),
    repeats merged."""

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


def test_prefetch_loads_the_next_step_before_its_multiply_adds_and_stores_it_after():
    """gemm-prefetch's point (the seeds' "Prefetching": overlap loading the next tile with
    computing the current one): in every K step but the last, the next step's global loads
    are issued before this step's local loads and multiply-adds, and stored into local
    memory only after them, so a work-item's loads are in flight while it computes. Rounds
    1-7 stored them before the multiply-adds (every step waited for its loads first:
    experiments/h200/ladder/findings.md). gemm-register-blocked loads and stores, waits,
    computes. The generated kernel keeps the order (the JIT cannot move a local store past
    the reads of the other buffer)."""
    from tiletraffic.gpu.codegen.generate import generate

    order = _Order()
    simulate(build("gemm-prefetch", 64, 64, 64), compute_values=False, observers=[order])
    # S = 4 K steps: the first step staged before the loop, then steps 0..2 prefetch the
    # next one, step 3 only computes
    assert order.intervals == ["GS", "GCS", "GCS", "GCS"]
    assert order.now == "C"                        # the last step, after the last barrier
    order = _Order()
    simulate(build("gemm-register-blocked", 64, 64, 64), compute_values=False,
             observers=[order])
    assert order.intervals == ["GS", "C"] * 4
    source = generate(build("gemm-prefetch", 64, 64, 64)).source
    loop = source[source.index("for (int t = 0;"):]
    assert loop.index("sa0 = A[") < loop.index("acc[i][j] +=") \
        < loop.index("A_tile[(t + 1) % NBUF][ar0][ac0] = sa0;")


STAGED_PREFETCH = [  # (m, k, n, options): odd sizes, every path of the K loop
    ((70, 77, 66), {}),                                  # K not a multiple of BK: 5 steps
    ((70, 5, 66), {}),                                   # K < BK: one step, nothing prefetched
    ((70, 16, 66), {}),                                  # K = BK: one step
    ((70, 17, 66), {}),                                  # two steps, the second 1 deep
    ((37, 21, 45), {"tile": 8, "tm": 8, "tn": 8, "bk": 8}),
    ((17, 9, 23), {"tile": 3, "wg_rows": 5, "tm": 3, "tn": 5, "bk": 4}),
]


def _is_staged(options):
    from tiletraffic.simulator.kernels.register_blocked import _staged_counts

    o = {"tile": 16, "tm": 4, "tn": 4, "bk": 16, **options}
    return _staged_counts(o["tm"], o["tn"], o["bk"], o["tile"], o.get("wg_rows", o["tile"]), 1)


@pytest.mark.parametrize("sizes,options", STAGED_PREFETCH)
def test_staged_prefetch_at_odd_sizes_matches_numpy_and_the_closed_forms(sizes, options):
    """The staged path (loads into private floats before the multiply-adds, stores after:
    the kernel the H200 rounds measure) at sizes with edge tiles in M, N and K, K < BK and
    one K step; the hypothesis test above reaches it only when its draw has whole elements
    per work-item."""
    assert _is_staged(options)
    sch = build("gemm-prefetch", *sizes, **options)
    inputs = random_inputs(sch, np.random.default_rng(sum(sizes)))
    result = simulate(sch, inputs)  # raises on any hazard
    assert_matches_reference(sch, inputs, result.outputs["C"])
    assert result.counts.to_dict() == closed_form.counts(sch)


def _in_the_k_loop(sch, change):
    import dataclasses

    from tiletraffic.simulator.ir import nodes as S
    from tiletraffic.simulator.kernels.variants import rewrite

    def fn(s):
        if isinstance(s, S.For) and s.var == "t":
            return (S.For(s.var, s.start, s.stop, s.step, tuple(change(list(s.body)))),)
        return None
    return dataclasses.replace(sch, body=rewrite(sch.body, fn))


def _stores_into_the_current_buffer(body):
    from tiletraffic.simulator.ir import nodes as S

    last = body[-1]          # if (t + 1 < steps) { the stores into buffer (t + 1) % 2 }
    assert isinstance(last, S.If) and all(isinstance(x, S.Store) for x in last.then)
    body[-1] = S.If(last.cond, tuple(S.Store(x.array, (S.Var("cur"),) + x.index[1:], x.value)
                                     for x in last.then))
    return body


@pytest.mark.parametrize("sizes,options", STAGED_PREFETCH)
def test_staged_prefetch_broken_is_caught(sizes, options):
    """Without its one barrier the staged prefetch races (the next step's stores against
    this step's reads, or the first step's reads against the staging), and storing the next
    step into the buffer being read races whenever there is a next step."""
    import math

    from tiletraffic.simulator.engine.limits import UNLIMITED
    from tiletraffic.simulator.kernels.variants import drop_barrier

    def kinds(sch):
        res = simulate(sch, random_inputs(sch, np.random.default_rng(1)), hazards="report",
                       limits=UNLIMITED)
        return {h.kind for h in res.hazards}

    sch = build("gemm-prefetch", *sizes, **options)
    assert "data-race" in kinds(drop_barrier(sch, 1))
    steps = math.ceil(sizes[1] / options.get("bk", 16))
    wrong_buffer = kinds(_in_the_k_loop(sch, _stores_into_the_current_buffer))
    assert ("data-race" in wrong_buffer) == (steps > 1), wrong_buffer


def test_work_item_owns_its_strided_block_of_c():
    # gemm-register-blocked, work-group 2 x 2, TM = TN = 2: work-item (lx, ly) of
    # work-group (0, 0) owns rows ly, ly + 2 and columns lx, lx + 2. Make B the identity
    # and A = arange: C = A, and the store of every element by its owner is checked by
    # the global race detector (no element is stored twice).
    sch = build("gemm-register-blocked", 4, 4, 4, tile=2, tm=2, tn=2, bk=4, wg_rows=2)
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    res = simulate(sch, {"A": a, "B": np.eye(4, dtype=np.float32)})
    np.testing.assert_array_equal(res.outputs["C"], a)


def test_vectorized_uses_a_quarter_of_the_requests_of_scalar_loads():
    # 64³ with the defaults (16 x 16 work-group, 4 x 4 per work-item, BK 16): one
    # work-group, 8 sub-groups, 4 K steps. Scalar: the 64x16 A tile is 1024 loads in 4
    # passes of 256 work-items, 8 requests each: 32 per step, 128 in all; B likewise:
    # 256 load requests. float4: one pass of 256 float4 loads per tile: 8 + 8 requests per
    # step, 64 in all. Same elements, same sectors for these aligned 64-float rows.
    scalar, vector = MemoryObserver(), MemoryObserver()
    simulate(build("gemm-register-blocked", 64, 64, 64), compute_values=False,
             observers=[scalar])
    simulate(build("gemm-vectorized", 64, 64, 64), compute_values=False, observers=[vector])
    assert (scalar.counts.global_load_requests, vector.counts.global_load_requests) == (256, 64)
    assert scalar.counts.global_load_sectors == vector.counts.global_load_sectors == 1024
    # C: 64 x 64 floats; scalar stores 16 per work-item -> 16 x 8 = 128 requests, float4
    # stores 4 per work-item -> 32 requests
    assert (scalar.counts.global_store_requests, vector.counts.global_store_requests) == (128, 32)


@pytest.mark.parametrize("what,kw", [("K", dict(k=6)), ("N", dict(n=10)), ("tm", dict(tm=3)),
                                     ("tn", dict(tn=2)), ("bk", dict(bk=6))])
def test_vectorized_refuses_values_that_are_not_multiples_of_4(what, kw):
    args = dict(m=8, k=8, n=8, tm=4, tn=4, bk=8)
    args.update(kw)
    with pytest.raises(ScheduleError) as info:
        build("gemm-vectorized", args["m"], args["k"], args["n"], tm=args["tm"],
              tn=args["tn"], bk=args["bk"])
    assert f"{what} = {kw[next(iter(kw))]}" in str(info.value)


@pytest.mark.parametrize("option", ["tm", "tn", "bk", "wg_rows"])
@pytest.mark.parametrize("value", [0, -2, 2.5])
def test_bad_options_name_the_value(option, value):
    with pytest.raises(ScheduleError) as info:
        build("gemm-register-blocked", 8, 8, 8, **{option: value})
    assert option in str(info.value) and repr(value) in str(info.value)


def invoke(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=True)


def test_cli_simulate_takes_the_tile_options():
    res = invoke("simulate", "gemm-vectorized", "--m", "37", "--k", "40", "--n", "44",
                 "--tile", "8", "--wg-rows", "4", "--tm", "4", "--tn", "8", "--bk", "8",
                 "--json", "--seed", "1")
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    want = closed_form.gemm_register_blocked(37, 40, 44, 8, 4, 4, 8, 8)
    assert data["global_load_elems"] == want["global_load_elems"]
    assert data["local_load_elems"] == want["local_load_elems"]
    assert data["closed_form_agrees"] is True
    assert data["local_size"] == [8, 4] and data["hazards"] == []
    assert data["result_error_over_tolerance"] < 1


@pytest.mark.parametrize("args", [
    ("simulate", "gemm-tiled", "--m", "8", "--k", "8", "--n", "8", "--tm", "2"),
    ("simulate", "gemm-vectorized", "--m", "8", "--k", "6", "--n", "8"),
    ("check", "gemm-naive", "--bk", "4"),
])
def test_cli_refuses_misplaced_or_bad_tile_options_with_exit_2(args):
    res = invoke(*args)
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output


def test_cli_check_takes_the_tile_options():
    res = invoke("check", "gemm-register-blocked", "--tm", "3", "--tn", "2", "--bk", "5",
                 "--json")
    assert res.exit_code == 0, res.output


def _pocl_present() -> bool:
    try:
        from tiletraffic.gpu.runtime.launch import list_devices
        return any(d.is_pocl for d in list_devices())
    except Exception:
        return False


@pytest.mark.skipif(not _pocl_present(), reason="PoCL is not installed")
@pytest.mark.parametrize("family,sizes,options", [
    ("gemm-register-blocked", ("37", "20", "45"), ("--tile", "8", "--tm", "3", "--tn", "2")),
    ("gemm-vectorized", ("37", "40", "44"), ("--tile", "8", "--wg-rows", "4", "--tn", "8")),
    # gemm-prefetch's staged path (the H200 rounds' kernel): K not a multiple of BK, K < BK,
    # two steps, 8x8 BK 8
    ("gemm-prefetch", ("70", "77", "66"), ()),
    ("gemm-prefetch", ("70", "5", "66"), ()),
    ("gemm-prefetch", ("70", "17", "66"), ()),
    ("gemm-prefetch", ("37", "21", "45"), ("--tile", "8", "--tm", "8", "--tn", "8", "--bk", "8")),
])
def test_run_on_pocl_checks_the_result_against_numpy(family, sizes, options):
    m, k, n = sizes
    res = invoke("run", family, "--m", m, "--k", k, "--n", n, *options, "--device", "pocl",
                 "--json", "--seed", "3")
    assert res.exit_code == 0, res.output
    data = json.loads(res.output[res.output.index("{"):])
    assert data["check"]["ok"] is True
    assert data["check"]["nan_count"] == 0
    assert data["check"]["error_over_tolerance"] < 1


# ---------------------------------------------------------------- matvec-rows-reduce
def test_matvec_rows_reduce_matches_numpy_and_closed_forms():
    @settings(max_examples=30, deadline=None)
    @given(m=st.integers(1, 60), k=st.integers(1, 60), tile=st.integers(1, 40),
           wg_rows=st.integers(1, 8), seed=seeds)
    def check(m, k, tile, wg_rows, seed):
        schedule = build("matvec-rows-reduce", m, k, tile=tile, wg_rows=wg_rows)
        inputs = random_inputs(schedule, np.random.default_rng(seed))
        result = simulate(schedule, inputs)  # raises on any hazard (races included)
        assert_matches_reference(schedule, inputs, result.outputs["y"])
        assert result.counts.to_dict() == closed_form.counts(schedule)

    check()


def test_matvec_rows_reduce_by_hand():
    # M = 5, K = 7, 5 work-items per row, 3 rows per work-group: G = 2 work-groups.
    # P = 4: one fold step (work-item 0 adds partial[4]) and 2 tree steps (2, 1): R = 3,
    # barriers 2 x 3 = 6. Reduction sums 2·3·4 = 24; local stores 2·3·5 + 24 = 54; local
    # loads 2·24 + 5 = 53; FLOP 2·5·7 + 24 = 94; A and x 35 loads each.
    c = simulate(build("matvec-rows-reduce", 5, 7, tile=5, wg_rows=3),
                 compute_values=False).counts
    assert (c.barriers, c.local_store_elems, c.local_load_elems, c.flop) == (6, 54, 53, 94)
    assert c.global_load_elems_by_buffer == {"A": 35, "x": 35, "y": 0}


def test_matvec_rows_reduce_reads_rows_coalesced():
    # 32 work-items per row read 32 consecutive floats of A per request: 4 sectors each.
    # M = 8, K = 64, one work-group of 32 x 8: 8 sub-groups (one per row), 2 k steps:
    # 16 requests of A, 4 sectors each.
    obs = MemoryObserver()
    simulate(build("matvec-rows-reduce", 8, 64, tile=32, wg_rows=8), compute_values=False,
             observers=[obs])
    assert obs.counts.requests_by_buffer["A:load"] == 16
    assert obs.counts.sectors_by_buffer["A:load"] == 64


@pytest.mark.parametrize("family", ["gemm-register-blocked", "gemm-vectorized",
                                    "gemm-prefetch", "gemm-warp-tiled"])
def test_a_block_no_device_could_hold_is_refused_before_it_is_built(family):
    with pytest.raises(ScheduleError, match="accumulators per work-item, above 1024"):
        build(family, 64, 64, 64, 8, tm=4096, tn=4)
    with pytest.raises(ScheduleError, match="bk = 100000 is above 1024"):
        build(family, 64, 64, 64, 8, bk=100000)
