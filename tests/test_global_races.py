"""Races in global memory (simulator.observers.global_races): between work-groups,
and within a work-group where only a global-fence barrier would order the accesses."""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from tiletraffic.analysis.cli import main
from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.kernels.demos import neighbour_demo, reduction_demo
from tiletraffic.simulator.engine.accelerators import Accelerators
from tiletraffic.simulator.engine.simulation import simulate
from tiletraffic.simulator.observers.hazards import HazardError
from tiletraffic.simulator.ir.nodes import (Barrier, GlobalArray, If, Let, Schedule, block,
                                            global_id, group_id, local_id, store)
from strategies import random_inputs


def run_report(schedule: Schedule, seed: int = 0, **kw):
    inputs = random_inputs(schedule, np.random.default_rng(seed))
    return simulate(schedule, inputs, hazards="report", **kw), inputs


def races(result):
    return [h for h in result.hazards if h.kind == "data-race"]


@pytest.mark.parametrize("batch_work_items", [1 << 20, 8])
def test_in_place_reduction_races_between_work_groups(batch_work_items):
    """n = 64, work-group 8: work-groups 1..3 store their sums into buf[1..3], which
    work-items 1..3 of work-group 0 read. Found whether the four work-groups run in one
    batch (lock-step: work-group 0 reads before anyone stores, so its sum comes out right)
    or one per batch (work-group 0 runs first)."""
    sch = reduction_demo(64, tile=8, in_place_at_group=True)
    assert sch.work_groups == 4
    result, inputs = run_report(sch, batch_work_items=batch_work_items)
    (h,) = result.hazards
    assert h.kind == "data-race" and h.array == "buf"
    assert h.site.startswith("global read-write between work-groups")
    assert h.count == 3, "buf[1], buf[2], buf[3]"
    assert h.group_counts == (((1,), 1), ((2,), 1), ((3,), 1)) and h.work_groups == 3
    assert h.index == 1 and h.group_id == (1,) and h.local_ids == (0, 1)
    # the result hides the race: work-group 0 read its chunk before the others stored
    buf = inputs["buf"].astype(np.float64)
    assert result.outputs["buf"][0] == pytest.approx(buf[:16].sum(), rel=1e-5, abs=1e-5)


def test_in_place_reduction_raises_in_default_mode():
    sch = reduction_demo(64, tile=8, in_place_at_group=True)
    with pytest.raises(HazardError, match="data-race"):
        simulate(sch, random_inputs(sch, np.random.default_rng(1)))


@pytest.mark.parametrize("m, tile", [(64, 8), (100, 7), (5, 2), (300, 16)])
def test_correct_in_place_reduction_is_clean_and_sums_each_chunk(m, tile):
    sch = reduction_demo(m, tile=tile)
    result, inputs = run_report(sch)
    assert result.hazards == []
    buf, out = inputs["buf"].astype(np.float64), result.outputs["buf"]
    for start in range(0, m, 2 * tile):
        assert out[start] == pytest.approx(buf[start:start + 2 * tile].sum(), rel=1e-5,
                                           abs=1e-5)


def test_local_fence_does_not_order_global_memory_within_a_work_group():
    sch = neighbour_demo(64, tile=16, global_fence=False)
    result, _ = run_report(sch)
    (h,) = result.hazards
    assert h.kind == "data-race" and h.array == "y"
    assert h.site.startswith("global read-write within a work-group")
    assert h.count == 64 and h.work_groups == 4, "every word of y, 16 per work-group"
    assert h.group_counts == (((0,), 16), ((1,), 16), ((2,), 16))
    assert h.group_id == (0,) and h.local_ids == (0, 15), "work-item 15 reads y[0]"


def test_global_fence_orders_it():
    sch = neighbour_demo(61, tile=16, global_fence=True)
    result, inputs = run_report(sch)
    assert result.hazards == []
    x = inputs["x"]
    neighbour = [(i // 16) * 16 + (i % 16 + 1) % 16 for i in range(61)]
    expected = np.array([x[j] if j < 61 else x[i] for i, j in enumerate(neighbour)],
                        dtype=np.float32)
    np.testing.assert_array_equal(result.outputs["z"], expected)


def _after_the_fence(global_fence: bool) -> Schedule:
    """y[i] = x[i]; barrier; z[i] = y[neighbour]; y[i] = 0 -- the last store races with
    the neighbour's load of y[i] in the same interval, fence or not."""
    x, y, z = (GlobalArray("x", "in", ("M",)), GlobalArray("y", "out", ("M",)),
               GlobalArray("z", "out", ("M",)))
    i, t = Let("i", global_id(0)), Let("t", local_id(0))
    j = Let("j", group_id(0) * 8 + (t.var + 1) % 8)
    body = block(i, t, j, store(y, i.var, x[i.var]), Barrier(global_fence=global_fence),
                 store(z, i.var, y[j.var]), store(y, i.var, 0.0))
    return Schedule("after-fence", "after_fence", (("M", 16),), (x, y, z), (), (8,), (16,),
                    body, 8)


@pytest.mark.parametrize("global_fence", [False, True])
def test_a_race_after_the_fence_is_still_found(global_fence):
    result, _ = run_report(_after_the_fence(global_fence))
    (h,) = races(result)
    assert h.array == "y" and h.site.startswith("global read-write within a work-group")
    assert h.count == 16


def _store_everywhere(value_index) -> Schedule:
    x, y = GlobalArray("x", "in", ("M",)), GlobalArray("y", "out", ("M",))
    i = Let("i", global_id(0))
    body = block(i, If(i.var < 16, (store(y, value_index, x[i.var]),)))
    return Schedule("store-everywhere", "store_everywhere", (("M", 16),), (x, y), (), (8,),
                    (16,), body, 8)


def test_write_write_between_work_groups():
    """Both work-groups store y[local id]: 8 words, each stored by two work-groups."""
    result, _ = run_report(_store_everywhere(local_id(0)))
    (h,) = races(result)
    assert h.site.startswith("global write-write between work-groups")
    assert h.count == 8 and h.group_counts == (((0,), 8), ((1,), 8)), "by every storer"
    assert h.local_ids == (0, 0) and h.group_id == (0,)


def test_write_write_within_a_work_group():
    """Every work-item stores y[group id]: one word per work-group, 8 writers each."""
    result, _ = run_report(_store_everywhere(group_id(0)))
    (h,) = races(result)
    assert h.site.startswith("global write-write within a work-group")
    assert h.count == 2 and h.group_counts == (((0,), 1), ((1,), 1))
    assert h.local_ids == (0, 7)


def test_a_race_of_many_stores_names_the_first_three_and_counts_the_others():
    """Six stores of y[local id + j]: the message names three and counts three more; the
    hazard's site (its identity) keeps all six."""
    x, y = GlobalArray("x", "in", ("M",)), GlobalArray("y", "out", ("M",))
    i = Let("i", global_id(0))
    body = block(i, If(i.var < 16, tuple(store(y, local_id(0) + j, x[i.var])
                                         for j in range(6))))
    sch = Schedule("many-stores", "many_stores", (("M", 16),), (x, y), (), (8,), (16,), body, 8)
    result, _ = run_report(sch)
    (h,) = races(result)
    assert ("(store y[local_id(0) + 0], store y[local_id(0) + 1], store y[local_id(0) + 2], "
            "... (3 more stores)): e.g.") in h.detail
    assert "y[local_id(0) + 3]" not in h.detail and "y[local_id(0) + 5]" in h.site


def test_one_work_item_touching_a_word_many_times_is_no_race():
    x, y = GlobalArray("x", "in", ("M",)), GlobalArray("y", "inout", ("M",))
    i = Let("i", global_id(0))
    body = block(i, store(y, i.var, x[i.var]), Barrier(),
                 S.For("r", S.Const(0), S.Const(3), S.Const(1),
                       (store(y, i.var, y[i.var] + x[i.var]),)))
    sch = Schedule("own-word", "own_word", (("M", 16),), (x, y), (), (8,), (16,), body, 8)
    result, inputs = run_report(sch)
    assert result.hazards == []
    np.testing.assert_allclose(result.outputs["y"], 4 * inputs["x"], rtol=1e-6)


def test_counting_by_work_group_classes_skips_global_races_and_check_does_not():
    """Work-group classes execute representatives only: no global race can be seen there;
    `check` runs the full launch."""
    sch = reduction_demo(64, tile=8, in_place_at_group=True)
    by_classes = simulate(sch, compute_values=False, hazards="report",
                          accelerators=Accelerators(work_group_classes=True))
    assert races(by_classes) == []
    full = simulate(sch, compute_values=False, hazards="report")
    assert [h.count for h in races(full)] == [3]
    out = CliRunner().invoke(main, ["check", "demo-reduction:in-place", "--json"])
    assert out.exit_code == 1
    (h,) = json.loads(out.output)
    assert h["kind"] == "data-race" and h["count"] == 3 and h["array"] == "buf"


@pytest.mark.parametrize("name, output", [("demo-shift", "y"), ("demo-reduction", "buf"),
                                          ("demo-neighbour", "z")])
def test_the_correct_demos_carry_their_reference(name, output):
    """simulate checks each correct demo's result (each gives its own reference), and so
    can run; the reference is each demo's meaning, worked in numpy."""
    import tiletraffic as tt
    from tiletraffic.simulator.engine.reference import checked_output, reference

    sch = tt.build(name)
    assert checked_output(sch) == output
    p = sch.param_values
    rng = np.random.default_rng()
    inputs = {a.name: rng.standard_normal([p[d] for d in a.shape]).astype(np.float32)
              for a in sch.arrays if a.is_input}
    ref = reference(sch, inputs)
    x = inputs.get("x", inputs.get("buf")).astype(np.float64)
    if name == "demo-shift":            # y[t] = x[t - 32] from t = 32
        assert np.array_equal(ref.value[32:], x[:-32]) and np.array_equal(ref.value[:32], x[:32])
    elif name == "demo-reduction":      # chunks of 2 x 8: their sums at 0, 16, 32, 48
        assert np.allclose(ref.value[::16], x.reshape(4, 16).sum(axis=1))
        rest = np.ones(64, bool)
        rest[::16] = False
        assert np.array_equal(ref.value[rest], x[rest])
    else:                               # z[i] = x of the next work-item of its group of 16
        assert ref.value[0] == x[1] and ref.value[15] == x[0] and ref.value[16] == x[17]
    result = CliRunner().invoke(main, ["simulate", name])
    assert result.exit_code == 0, result.output
    assert f"at {output}[" in result.output and "(ok)" in result.output
