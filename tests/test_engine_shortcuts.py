"""The engine's shortcuts keep full execution's counts, values and hazards.

- a private float assigned under the very mask of its declaration takes the value without
  a masked merge and counts as set in full; assigned under a narrower mask, the work-items
  left out still read it unset;
- an integer assigned under a mask (kept for the whole batch) that comes out equal in every
  work-group is checked for races in local memory on one table, and the race it makes is
  reported as when the index is a plain expression of the local id;
- loads of local memory whose stored words differ between work-groups are checked for
  unstored words per work-group;
- a kernel whose counts follow floats of the data (pyFAI's CSR integration: ``continue``
  on a non-finite value, two more loads where a bin's weight sum is positive) is counted
  by the fast path as by full execution, and its counts move with the data;
- a vector load past the end of its array reads element 0 in every component (global and
  local memory);
- a private taken from a private array's element keeps its value when the element changes
  (also with sum lengths, where the element is read as a slice);
- a batch of work-groups reuses the local memory of the one before, but reads neither its
  values nor its stores.
"""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from tiletraffic.frontend import launch_file
from tiletraffic.simulator.engine.accelerators import Accelerators
from tiletraffic.simulator.engine.data_inputs import launch_inputs
from tiletraffic.simulator.engine.fast_path import count_launch
from tiletraffic.simulator.engine.simulation import simulate
from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.nodes import (Assign, AssignInt, Barrier, Const, DeclareFloat,
                                            DeclareInt, GlobalArray, If, Let, LocalArray,
                                            Private, Schedule, block, global_id, group_id,
                                            local_id, store)

CORPUS = Path(__file__).parent / "corpora" / "opencl" / "pyfai"
GROUPS, LOCAL = 4, 8
NONE = Accelerators(work_group_classes=False, private_nests=False, loop_blocks=False,
                    k_extrapolation=False)


def _schedule(family: str, body, arrays, local_arrays=()) -> Schedule:
    items = GROUPS * LOCAL
    return Schedule(family=family, kernel_name=family.replace("-", "_"), body=body,
                    params=(("M", items),), arrays=arrays, local_arrays=local_arrays,
                    local_size=(LOCAL,), global_size=(items,), tile=LOCAL)


def _scoped_private(assign_mask_narrower: bool) -> Schedule:
    """if (x[i] > 0) { float v; [if (i % 2 == 0)] v = 2 x[i]; y[i] = v; } else y[i] = 0"""
    x, y = GlobalArray("x", "in", ("M",)), GlobalArray("y", "out", ("M",))
    i = Let("i", global_id(0))
    assign = Assign("v", S.FConst(2.0) * x[i.var])
    if assign_mask_narrower:
        assign = If(S.Compare("==", i.var % 2, Const(0)), (assign,))
    inner = (DeclareFloat("v", init=None), assign, store(y, i.var, Private("v")))
    body = block(i, If(S.FloatCompare(">", x[i.var], S.FConst(0.0)), inner,
                       (store(y, i.var, S.FConst(0.0)),)))
    return _schedule("scoped-private", body, (x, y))


def test_a_private_assigned_under_its_declarations_mask_has_its_value_and_no_hazard():
    sch = _scoped_private(assign_mask_narrower=False)
    x = np.linspace(-1.0, 1.0, GROUPS * LOCAL, dtype=np.float32)
    res = simulate(sch, {"x": x}, hazards="report")
    assert res.hazards == []
    positive = x > 0
    np.testing.assert_array_equal(res.outputs["y"][positive], 2 * x[positive])
    assert (res.outputs["y"][~positive] == 0).all()


def test_a_private_assigned_under_a_narrower_mask_is_read_unset_by_the_others():
    sch = _scoped_private(assign_mask_narrower=True)
    x = np.linspace(-1.0, 1.0, GROUPS * LOCAL, dtype=np.float32)
    res = simulate(sch, {"x": x}, hazards="report")
    (h,) = res.hazards
    odd_positive = int(np.count_nonzero((x > 0) & (np.arange(x.size) % 2 == 1)))
    assert h.kind == "uninitialized-private-read" and h.array == "v"
    assert h.count == odd_positive > 0


def _pair_race(index_assigned: bool) -> Schedule:
    """t[lid / 2] = x[i] (work-items 2k and 2k+1 store one word, no barrier between): the
    index a plain expression, or an integer assigned under a mask of every work-group."""
    x, y = GlobalArray("x", "in", ("M",)), GlobalArray("y", "out", ("M",))
    t = LocalArray("t", (Const(LOCAL),))
    i = Let("i", global_id(0))
    if index_assigned:
        index = (DeclareInt("j", Const(0)),
                 If(group_id(0) >= 0,
                    (AssignInt("j", local_id(0) // 2),)))
        word = S.Var("j")
    else:
        index, word = (), local_id(0) // 2
    body = block(i, *index, store(t, (word,), x[i.var]), Barrier(),
                 store(y, i.var, t[local_id(0)]))
    return _schedule("pair-race", body, (x, y), (t,))


def test_a_race_through_an_assigned_index_equal_in_every_work_group_is_reported_alike():
    x = np.arange(GROUPS * LOCAL, dtype=np.float32)
    plain = simulate(_pair_race(False), {"x": x}, hazards="report").hazards
    assigned = simulate(_pair_race(True), {"x": x}, hazards="report").hazards
    races = [h for h in plain if h.kind == "data-race"]
    assert races, "the plain index must race"
    got = [h for h in assigned if h.kind == "data-race"]
    assert [(h.count, h.work_groups, h.occurrences) for h in got] == \
        [(h.count, h.work_groups, h.occurrences) for h in races]


def test_unstored_local_words_that_differ_between_work_groups_are_each_reported():
    # work-items lid <= group store t[lid]; after the barrier every work-item reads t[lid]
    x, y = GlobalArray("x", "in", ("M",)), GlobalArray("y", "out", ("M",))
    t = LocalArray("t", (Const(LOCAL),))
    i = Let("i", global_id(0))
    body = block(i, If(local_id(0) <= group_id(0),
                       (store(t, (local_id(0),), x[i.var]),)),
                 Barrier(), store(y, i.var, t[local_id(0)]))
    sch = _schedule("partly-stored-tile", body, (x, y), (t,))
    res = simulate(sch, {"x": np.ones(GROUPS * LOCAL, np.float32)}, hazards="report")
    (h,) = res.hazards
    assert h.kind == "uninitialized-local-read"
    assert h.count == sum(LOCAL - (g + 1) for g in range(GROUPS))
    assert h.work_groups == GROUPS


def _csr(kernel: str, rows: int):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return launch_file.load(CORPUS / f"{kernel}.toml", {"B": rows, "P": 64,
                                                            "NNZ": _nnz(rows)})


def _nnz(rows: int) -> int:
    lengths = (5, 0, 35, 3, 7, 6)       # the corpus's generated rows (an empty one too)
    return sum(lengths[r % 6] for r in range(rows))


def test_csr_counts_follow_the_floats_and_equal_full_execution():
    sch = _csr("csr_integrate", 12)
    inputs = launch_inputs(sch)
    full = simulate(sch, inputs, accelerators=NONE, hazards="report")
    counted = count_launch(sch, hazards="report")
    assert counted.counts == full.counts and counted.hazards == full.hazards == []
    positive = full.outputs["sum_count"] > 0
    assert positive.any() and not positive.all(), "the float condition must flip"
    by_buffer = full.counts.global_load_elems_by_buffer
    assert by_buffer["sum_data"] == int(positive.sum())    # loaded where sum_count > 0
    assert by_buffer["sum_count"] == sch.param_values["B"] + int(positive.sum())

    # non-finite data: the work-items that meet it skip their sums (fewer FLOPs)
    weights = inputs["weights"].copy()
    weights[::3] = np.nan
    nan_full = simulate(sch, {**inputs, "weights": weights}, accelerators=NONE,
                        hazards="report")
    again = simulate(sch, {**inputs, "weights": weights}, hazards="report")
    assert again.counts == nan_full.counts
    assert nan_full.counts.flop < full.counts.flop


def test_csr_per_work_item_counts_equal_full_execution():
    sch = _csr("csr_integrate4_single", 40)
    inputs = launch_inputs(sch)
    full = simulate(sch, inputs, accelerators=NONE, hazards="report")
    assert count_launch(sch, hazards="report").counts == full.counts
    averaged = full.counts.global_store_elems_by_buffer["averint"]
    assert averaged == sch.param_values["B"]


def _opencl(tmp_path: Path, name: str, source: str, n: int, items: int, local: int):
    """The schedule of kernel ``name`` (``source``; arguments ``x`` of ``n`` floats in, ``y``
    of ``items`` floats out) over ``items`` work-items in work-groups of ``local``."""
    (tmp_path / f"{name}.cl").write_text(source)
    (tmp_path / f"{name}.toml").write_text(
        f'source = "{name}.cl"\nkernel = "{name}"\n[sizes]\nN = {n}\nG = {items}\n'
        f'[launch]\nglobal_size = ["G"]\nlocal_size = [{local}]\n[args]\n'
        'x = { shape = ["N"], access = "in" }\ny = { shape = ["G"], access = "out" }\n')
    return launch_file.load(tmp_path / f"{name}.toml")


VLOAD_PAST_THE_END = """\
__kernel void vload_past_the_end(__global const float *x, __global float *y)
{
    __local float t[6];
    int i = get_global_id(0);
    int l = get_local_id(0);
    if (l < 2) { t[3 * l] = x[i]; t[3 * l + 1] = x[i] + 1.0f; t[3 * l + 2] = x[i] + 2.0f; }
    barrier(CLK_LOCAL_MEM_FENCE);
    float4 v = vload4(l, t);
    float4 w = vload4(i, x);
    y[i] = v.x + v.y * 10.0f + v.z * 100.0f + v.w * 1000.0f + w.x + w.y + w.z + w.w;
}
"""


def test_an_out_of_bounds_vector_load_reads_element_0_in_every_component(tmp_path):
    # x has 30 floats: vload4(7, x) runs past its end; t has 6: vload4(l, t) for l >= 1
    sch = _opencl(tmp_path, "vload_past_the_end", VLOAD_PAST_THE_END, 30, 8, 4)
    x = np.linspace(0.5, 2.0, 30, dtype=np.float32)
    res = simulate(sch, {"x": x}, hazards="report")
    assert {h.kind for h in res.hazards} == {"out-of-bounds"}
    f = np.float32
    for i in range(8):
        g, lid = divmod(i, 4)
        t = np.array([x[4 * g], x[4 * g] + f(1), x[4 * g] + f(2),
                      x[4 * g + 1], x[4 * g + 1] + f(1), x[4 * g + 1] + f(2)], f)
        v = t[0:4] if lid == 0 else np.full(4, t[0])         # past the end: t[0] each
        w = x[4 * i:4 * i + 4] if i < 7 else np.full(4, x[0])  # past the end: x[0] each
        want = v[0] + v[1] * f(10) + v[2] * f(100) + v[3] * f(1000) + w[0] + w[1] + w[2] + w[3]
        assert res.outputs["y"][i] == want, i


PRIVATE_FROM_ARRAY = """\
__kernel void private_from_array(__global const float *x, __global float *y)
{
    int i = get_global_id(0);
    float a[2];
    a[0] = x[i];
    a[1] = x[i] * 2.0f;
    float v = a[0];
    a[0] = a[0] + 1.0f;
    a[1] += 3.0f;
    float w = a[1];
    y[i] = v + w * 100.0f + a[0] * 10000.0f;
}
"""


def test_a_private_taken_from_a_private_array_keeps_its_value_when_the_array_changes(
        tmp_path):
    sch = _opencl(tmp_path, "private_from_array", PRIVATE_FROM_ARRAY, 8, 8, 4)
    x = np.arange(1, 9, dtype=np.float32)
    f = np.float32
    want = x + (x * f(2) + f(3)) * f(100) + (x + f(1)) * f(10000)
    for sum_lengths in (False, True):   # with sum lengths, element reads are slices
        res = simulate(sch, {"x": x}, hazards="report", sum_lengths=sum_lengths)
        assert res.hazards == []
        np.testing.assert_array_equal(res.outputs["y"], want)


LATER_BATCHES_STORE_NOTHING = """\
__kernel void later_batches_store_nothing(__global const float *x, __global float *y)
{
    __local float t[4];
    int i = get_global_id(0);
    int l = get_local_id(0);
    if (get_group_id(0) < 4 || l < 2)
        t[l] = x[i];
    barrier(CLK_LOCAL_MEM_FENCE);
    y[i] = t[3 - l];
}
"""


def test_a_later_batch_sees_neither_the_values_nor_the_stores_of_an_earlier_one(tmp_path):
    # batches of 4 work-groups: the first stores all of t, the second only t[0] and t[1]
    sch = _opencl(tmp_path, "later_batches_store_nothing", LATER_BATCHES_STORE_NOTHING,
                  32, 32, 4)
    x = np.arange(1, 33, dtype=np.float32)
    res = simulate(sch, {"x": x}, hazards="report", batch_work_items=16)
    (h,) = res.hazards
    assert h.kind == "uninitialized-local-read" and h.array == "t"
    assert h.count == 4 * 2 and h.work_groups == 4       # lid 0 and 1 of groups 4..7
    y = res.outputs["y"].reshape(8, 4)
    np.testing.assert_array_equal(y[:4], x.reshape(8, 4)[:4, ::-1])
    assert np.isnan(y[4:, :2]).all()                      # nothing stored in this batch
    np.testing.assert_array_equal(y[4:, 2:], x.reshape(8, 4)[4:, 1::-1])
