"""Vector accesses (float2/float4) in the IR, the engine and the memory model, on launches
computed by hand.

Conventions of the hand computations (simulator/observers/memory.py docstring): a sub-group is 32
consecutive flattened local ids; a float is 4 B, a sector 32 B, a line 128 B, buffers start
256-byte aligned; local word w lies in bank w mod 32. A vector access is one instruction
per work-item: one request per sub-group; sectors, lines and bank wavefronts count every
word it touches; a vector local access is served in phases of 32 / width work-items, each
taking its largest per-bank count of distinct words, two neighbouring phases sharing one
wavefront when together conflict-free (at least ``vector_min_wavefronts`` for 128-bit
ones); bank conflicts = the wavefronts of each phase beyond one; ideal = wavefronts -
conflicts.
"""
from __future__ import annotations

import numpy as np
import pytest

from tiletraffic.gpu.codegen.generate import generate
from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.engine.simulation import simulate
from tiletraffic.simulator.observers.hazards import HazardError
from tiletraffic.simulator.observers.memory import MemoryObserver
from tiletraffic.simulator.ir.nodes import (Barrier, Const, DeclareFloat, GlobalArray, Let,
                                            LocalArray, Private, Schedule, ScheduleError,
                                            global_id, local_id, store, vload, vstore)


def copy_kernel(items: int, width: int, stride: int = 1, offset: int = 0,
                via_local: bool = False, local_stride: int | None = None) -> Schedule:
    """``items`` work-items in one work-group; work-item i moves ``width`` floats from
    x[stride·width·i + offset] to y[width·i] with one vector load and one vector store
    (through a local array, read back at ``local_stride``·width·i, when ``via_local``)."""
    n_in = stride * width * items + offset + width
    x = GlobalArray("x", "in", ("NX",))
    y = GlobalArray("y", "out", ("NY",))
    i = Let("i", global_id(0))
    names = [f"v{w}" for w in range(width)]
    body = [i, *[DeclareFloat(nm, None) for nm in names],
            vload(names, x, i.var * (stride * width) + offset)]
    local_arrays = ()
    if via_local:
        ls = local_stride or 1
        buf = LocalArray("buf", (Const(ls * width * items + width),))
        local_arrays = (buf,)
        lid = Let("lid", local_id(0))
        body += [lid, vstore(buf, lid.var * (ls * width), [Private(nm) for nm in names]),
                 Barrier(), vload(names, buf, lid.var * (ls * width))]
    body.append(vstore(y, i.var * width, [Private(nm) for nm in names]))
    return Schedule(family="vector-copy", kernel_name="vector_copy",
                    params=(("NX", n_in), ("NY", width * items)), arrays=(x, y),
                    local_arrays=local_arrays, local_size=(items,), global_size=(items,),
                    body=S.block(*body), tile=items)


def run(schedule: Schedule, **observer_options):
    obs = MemoryObserver(**observer_options)
    x = np.arange(schedule.param_values["NX"], dtype=np.float32)
    res = simulate(schedule, {"x": x}, observers=[obs], hazards="report")
    return res, obs.counts, x


# --------------------------------------------------------------------------- global
def test_float4_load_of_32_work_items_is_one_request_of_16_sectors():
    # 32 work-items x 16 B = 512 contiguous bytes from byte 0: 1 request, 512/32 = 16
    # sectors, 512/128 = 4 lines; the float4 store of y likewise.
    res, c, x = run(copy_kernel(32, 4))
    assert (c.global_load_requests, c.global_load_sectors, c.global_load_lines) == (1, 16, 4)
    assert (c.global_store_requests, c.global_store_sectors, c.global_store_lines) == (1, 16, 4)
    assert res.counts.global_load_elems == 128  # elements: 4 per float4
    np.testing.assert_array_equal(res.outputs["y"], x[:128])


def test_float2_load_of_64_work_items_is_two_requests_of_8_sectors():
    # two sub-groups, each 32 x 8 B = 256 B: 8 sectors and 2 lines per request
    res, c, x = run(copy_kernel(64, 2))
    assert (c.global_load_requests, c.global_load_sectors, c.global_load_lines) == (2, 16, 4)
    np.testing.assert_array_equal(res.outputs["y"], x[:128])


def test_strided_float4_load_touches_twice_the_sectors():
    # work-item i reads bytes 32i .. 32i+15: one sector each, 32 distinct sectors, 8 lines
    res, c, x = run(copy_kernel(32, 4, stride=2))
    assert (c.global_load_requests, c.global_load_sectors, c.global_load_lines) == (1, 32, 8)
    np.testing.assert_array_equal(res.outputs["y"].reshape(32, 4),
                                  x[:256].reshape(32, 8)[:, :4])


def test_scalar_loads_of_the_same_bytes_take_four_times_the_requests():
    # the same 512 bytes as four scalar loads per work-item (x[4i + w]): 4 requests, each
    # touching every 4th float of 512 bytes, i.e. all 16 sectors: 64 sectors in all
    x, y = GlobalArray("x", "in", ("NX",)), GlobalArray("y", "out", ("NY",))
    i = Let("i", global_id(0))
    body = S.block(i, [store(y, i.var * 4 + w, x[i.var * 4 + w]) for w in range(4)])
    sch = Schedule("scalar-copy", "scalar_copy", (("NX", 128), ("NY", 128)), (x, y), (),
                   (32,), (32,), body, 32)
    obs = MemoryObserver()
    simulate(sch, {"x": np.zeros(128, np.float32)}, observers=[obs])
    assert (obs.counts.global_load_requests, obs.counts.global_load_sectors) == (4, 64)


# ----------------------------------------------------------------------- alignment
def test_misaligned_float4_load_is_reported_with_its_address():
    # offset 2: work-item i reads x[4i + 2 ..]: element 2 = byte 8, not a multiple of 16
    res, c, _ = run(copy_kernel(32, 4, offset=2))
    (h,) = [h for h in res.hazards if h.kind == "misaligned-vector-access"]
    assert (h.array, h.index, h.count, h.local_ids) == ("x", 2, 32, (0,))
    assert h.group_id == (0,)
    assert c.global_load_requests == 0  # skipped accesses are not counted


def test_misaligned_float2_is_reported_aligned_float2_is_not():
    res, _, _ = run(copy_kernel(8, 2, offset=1))
    assert {h.kind for h in res.hazards} == {"misaligned-vector-access"}
    assert [h.index for h in res.hazards] == [1]
    res, _, _ = run(copy_kernel(8, 2, offset=2))  # element 2 = byte 8: float2-aligned
    assert res.hazards == []


def test_misaligned_access_raises_by_default():
    with pytest.raises(HazardError, match="misaligned-vector-access"):
        simulate(copy_kernel(4, 4, offset=1), {"x": np.zeros(21, np.float32)})


def test_vector_access_reaching_past_the_last_dimension_is_out_of_bounds():
    # x has 4*4 + 4 = 20 elements; work-item i reads x[4i + 4 .. 4i + 7] with offset 4:
    # in bounds. With an array of 17 elements the last float4 (16..19) runs past it.
    x, y = GlobalArray("x", "in", ("NX",)), GlobalArray("y", "out", ("NY",))
    i = Let("i", global_id(0))
    body = S.block(i, [DeclareFloat(f"v{w}", None) for w in range(4)],
                   vload([f"v{w}" for w in range(4)], x, i.var * 4),
                   vstore(y, i.var * 4, [Private(f"v{w}") for w in range(4)]))
    sch = Schedule("oob", "oob", (("NX", 15), ("NY", 16)), (x, y), (), (4,), (4,), body, 4)
    res = simulate(sch, {"x": np.zeros(15, np.float32)}, hazards="report")
    (h,) = [h for h in res.hazards if h.kind == "out-of-bounds"]
    assert h.array == "x" and h.count == 1 and h.local_ids == (3,)


def test_vector_width_must_be_2_or_4():
    x = GlobalArray("x", "in", ("N",))
    with pytest.raises(ScheduleError, match="3"):
        vload(["a", "b", "c"], x, Const(0))


# ------------------------------------------------------------- local, 128-bit banks
def test_conflict_free_128_bit_local_load_of_512_bytes_has_4_wavefronts_0_conflicts():
    # 32 work-items, float4 at local word 4l: 128 distinct words, 4 per bank: 4 wavefronts,
    # ideal ⌈512 / 128⌉ = 4: 0 conflicts (not 2). The float4 store is the same pattern.
    res, c, x = run(copy_kernel(32, 4, via_local=True))
    assert (c.local_load_requests, c.local_load_wavefronts, c.local_load_bank_conflicts) \
        == (1, 4, 0)
    assert (c.local_store_requests, c.local_store_wavefronts, c.local_store_bank_conflicts) \
        == (1, 4, 0)
    np.testing.assert_array_equal(res.outputs["y"], x[:128])


def test_strided_128_bit_local_load_conflicts_by_hand():
    # work-item l at word 8l: words 8l + w, banks (8l + w) mod 32 -> l mod 4 and w pick
    # one of 16 banks, each holding 8 distinct words: 8 wavefronts; 512 distinct bytes:
    # ideal 4; 4 conflicts.
    _, c, _ = run(copy_kernel(32, 4, via_local=True, local_stride=2))
    assert (c.local_load_wavefronts, c.local_load_bank_conflicts) == (8, 4)


def test_128_bit_local_load_minimum_wavefronts():
    # with vector_min_wavefronts = 2 (the H200's measured minimum for LDS.128) 8 work-items
    # reading 128 distinct bytes take 2 wavefronts, ideal 2: still 0 conflicts; 32
    # work-items reading 512 bytes take 4, ideal 4.
    _, c, _ = run(copy_kernel(8, 4, via_local=True), vector_min_wavefronts=2)
    assert (c.local_load_wavefronts, c.local_load_bank_conflicts) == (2, 0)
    _, c, _ = run(copy_kernel(32, 4, via_local=True), vector_min_wavefronts=2)
    assert (c.local_load_wavefronts, c.local_load_bank_conflicts) == (4, 0)


def test_64_bit_local_load_of_256_bytes_has_2_wavefronts():
    _, c, _ = run(copy_kernel(32, 2, via_local=True))
    assert (c.local_load_requests, c.local_load_wavefronts, c.local_load_bank_conflicts) \
        == (1, 2, 0)


def test_merged_128_bit_loads_of_the_cuda_build_use_the_same_rule():
    # matvec-local reads x_chunk[j] in a loop; with local_vector_words = 4 (the CUDA
    # build) four iterations are one LDS.128 whose lanes all read the same 16 bytes (a
    # broadcast): 1 wavefront, at least vector_min_wavefronts = 2, ideal 2: 0 conflicts,
    # as before the explicit vector loads existed.
    from tiletraffic.simulator.kernels.families import build
    obs = MemoryObserver(local_vector_words=4, vector_min_wavefronts=2)
    simulate(build("matvec-local", 32, 64, tile=32, chunk=32), compute_values=False,
             observers=[obs])
    c = obs.counts
    # chunks of 32: 2 chunks x 8 merged loads, one sub-group
    assert c.local_load_requests == 16
    assert (c.local_load_wavefronts, c.local_load_bank_conflicts) == (32, 0)


@pytest.mark.parametrize("family, k, loads, wavefronts", [
    # chunks of 32 words: 8 LDS.128, then 9 words: 2 LDS.128 and one more for the last
    # word, whose 16 bytes lie inside the 32-word chunk: 11 loads of 2 wavefronts
    ("matvec-local", 41, 11, 22),
    # x_local holds exactly K words: 10 LDS.128 of 2 wavefronts, then the last word
    # (K = 41) or three (K = 43) scalar, 1 wavefront each: a 16-byte load from word 40
    # would pass the array's end
    ("matvec-local-whole", 41, 11, 21),
    ("matvec-local-whole", 43, 13, 23),
])
def test_a_merged_loop_ends_with_one_vector_load_where_the_array_has_room(
        family, k, loads, wavefronts):
    from tiletraffic.simulator.kernels.families import build
    options = {"chunk": 32} if family == "matvec-local" else {}
    obs = MemoryObserver(local_vector_words=4)
    simulate(build(family, 32, k, tile=32, **options), compute_values=False, observers=[obs])
    c = obs.counts
    assert (c.local_load_requests, c.local_load_wavefronts, c.local_load_bank_conflicts) \
        == (loads, wavefronts, 0)


# ------------------------------------------------------------------------- codegen
def test_vector_accesses_render_as_float4_pointer_casts_with_aligned_local_arrays():
    src = generate(copy_kernel(32, 4, via_local=True)).source
    assert "*(const __global float4 *)&x[" in src
    assert "*(__global float4 *)&y[" in src
    assert "*(LOCAL_VECTOR_SPACE float4 *)&buf[" in src
    assert "__attribute__((aligned(16)))" in src
    assert "#define LOCAL_VECTOR_SPACE __local" in src


# ------------------------------------- local, 128-bit phases (the H200 ladder counters)
def local_read_kernel(word_of_lid) -> Schedule:
    """One sub-group of 32 work-items; each stores a float4 to a 1024-word local array at
    word 4·lid, waits, then reads a float4 back at word ``word_of_lid(lid)`` (a multiple
    of 4) and stores it to y."""
    y = GlobalArray("y", "out", ("NY",))
    lid = Let("lid", local_id(0))
    buf = LocalArray("buf", (Const(1024),))
    names = [f"v{w}" for w in range(4)]
    body = [lid, *[DeclareFloat(nm, None) for nm in names],
            vstore(buf, lid.var * 4, [S.FConst(1.0)] * 4), Barrier(),
            vload(names, buf, word_of_lid(lid.var)),
            vstore(y, lid.var * 4, [Private(nm) for nm in names])]
    return Schedule(family="local-read", kernel_name="local_read",
                    params=(("NX", 4), ("NY", 128)), arrays=(GlobalArray("x", "in", ("NX",)), y),
                    local_arrays=(buf,), local_size=(32,), global_size=(32,),
                    body=S.block(*body), tile=32)


def local_load(word_of_lid):
    obs = MemoryObserver(vector_min_wavefronts=2)
    simulate(local_read_kernel(word_of_lid), {"x": np.zeros(4, np.float32)}, observers=[obs])
    c = obs.counts
    return c.local_load_requests, c.local_load_wavefronts, c.local_load_bank_conflicts


def test_128_bit_phases_of_8_work_items_pair_only_when_together_conflict_free():
    # work-item l reads the float4 at word 4·(l mod 16) (16 distinct float4s, 256 bytes;
    # the 4x4 gemm-vectorized B tile): each phase of 8 reads 128 contiguous bytes (1
    # wavefront), phases 0 and 1 together read words 0..63, two per bank: no sharing, 4
    # wavefronts; no phase conflicts in itself: ideal 4, 0 conflicts. (A whole-sub-group
    # count would say 2: 64 distinct words, 2 per bank.)
    assert local_load(lambda l: (l % 16) * 4) == (1, 4, 0)


def test_128_bit_broadcast_phases_share_a_wavefront():
    # work-item l reads word 8·(l // 8): each phase one float4 (a broadcast), phases 0 and 1
    # at words 0 and 8 (banks 0-3 and 8-11): one wavefront for both; 2 in all, 0 conflicts
    # (the wg 8x8 gemm-vectorized A tile)
    assert local_load(lambda l: (l // 8) * 8) == (1, 2, 0)


def test_128_bit_phase_with_a_conflict_never_shares():
    # work-item l reads word 8·(l mod 8) (8 distinct float4s; the wg 8x8 gemm-vectorized B
    # tile): in each phase lanes l and l+4 hit the same 4 banks (words 0 and 32): 2
    # wavefronts per phase, no sharing although phases 0 and 1 read the same words: 8
    # wavefronts, 1 conflict per phase: 4 (a whole-sub-group count would say 2 and 0)
    assert local_load(lambda l: (l % 8) * 8) == (1, 8, 4)
