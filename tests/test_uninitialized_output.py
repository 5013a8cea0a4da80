"""Reads of an output buffer (role ``out``) before anything stored the element
(``uninitialized-global-read``, simulator.observers.local_races.UninitializedOutputRead)."""
from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from tiletraffic.analysis.cli import main
from tiletraffic.simulator.engine.simulation import simulate
from tiletraffic.simulator.observers.hazards import HazardError
from tiletraffic.simulator.ir.nodes import (GlobalArray, If, Let, Param, Schedule, block,
                                            global_id, store)
from tiletraffic.simulator.kernels.variants import VARIANTS, build_any
from strategies import random_inputs

KIND = "uninitialized-global-read"


def _schedule(m: int, items: int, body_of, role: str = "out") -> Schedule:
    """x (in), y (``role``) of M elements; ``body_of(i, x, y)`` gives the guarded body."""
    M = Param("M")
    x, y = GlobalArray("x", "in", ("M",)), GlobalArray("y", role, ("M",))
    i = Let("i", global_id(0))
    groups = -(-m // items)
    return Schedule("y-test", "y-test", (("M", m),), (x, y), (), (items,), (groups * items,),
                    block(i, If(i.var < M, body_of(i.var, x, y))), items, "test kernel")


def _report(sch, seed=0, **kw):
    inputs = random_inputs(sch, np.random.default_rng(seed))
    return simulate(sch, inputs, hazards="report", **kw), inputs


@pytest.mark.parametrize("m, items", [(1, 1), (37, 8), (256, 64)])
def test_accumulating_into_an_output_reads_every_element_before_its_store(m, items):
    sch = _schedule(m, items, lambda i, x, y: (store(y, i, y[i] + x[i]),))
    result, _ = _report(sch)
    (h,) = result.hazards
    assert h.kind == KIND and h.array == "y" and h.count == m
    assert h.index == 0 and h.group_id == (0,) and h.local_ids == (0,)
    assert h.work_groups == -(-m // items)
    assert "declare y inout" in h.detail and "reads y[0]" in h.detail


def test_the_same_kernel_with_y_inout_is_clean_and_adds():
    sch = _schedule(37, 8, lambda i, x, y: (store(y, i, y[i] + x[i]),), role="inout")
    result, inputs = _report(sch)
    assert result.hazards == []
    np.testing.assert_allclose(result.outputs["y"], inputs["y"] + inputs["x"], rtol=1e-6)


def test_reading_back_the_own_store_is_clean():
    sch = _schedule(37, 8, lambda i, x, y: (store(y, i, x[i]), store(y, i, y[i] * 2.0)))
    result, inputs = _report(sch)
    assert result.hazards == []
    np.testing.assert_allclose(result.outputs["y"], 2 * inputs["x"], rtol=0)


def test_default_mode_raises_on_the_first_uninitialized_read():
    sch = _schedule(16, 8, lambda i, x, y: (store(y, i, y[i] + x[i]),))
    with pytest.raises(HazardError, match=KIND):
        simulate(sch, random_inputs(sch, np.random.default_rng(1)))


def test_a_read_of_an_element_a_later_work_group_stores_is_both_kinds():
    """Work-item i stores y[i], then reads y[i + 1]: the last work-item of each work-group
    reads what the next work-group stores. Run one work-group per batch, the next one has
    not run: an uninitialized read and a race between work-groups."""
    m, items = 32, 8

    def body(i, x, y):
        return (store(y, i, x[i]), If(i + 1 < Param("M"), (store(y, i, y[i + 1]),)))

    sch = _schedule(m, items, body)
    result, _ = _report(sch, batch_work_items=items)
    kinds = {h.kind for h in result.hazards}
    assert KIND in kinds and "data-race" in kinds
    (h,) = [h for h in result.hazards if h.kind == KIND]
    assert h.count == m // items - 1, "the last work-item of every work-group but the last"
    assert h.index == items and h.local_ids == (items - 1,)


def test_the_variant_is_found_and_run_refuses_to_launch_it():
    variant = VARIANTS["gemm-naive:accumulate-into-output"]
    assert variant.expected == (KIND,)
    result, _ = _report(build_any("gemm-naive:accumulate-into-output"))
    (h,) = result.hazards
    assert h.kind == KIND and h.array == "C" and h.count == 20 * 20
    out = CliRunner().invoke(main, ["check", "gemm-naive:accumulate-into-output"])
    assert out.exit_code == 1 and KIND in out.output


def test_an_opencl_kernel_reading_its_output_is_found_and_inout_is_clean(tmp_path):
    (tmp_path / "acc.cl").write_text(
        "__kernel void acc(__global const float *x, __global float *y, const int N) {\n"
        "    int i = get_global_id(0);\n"
        "    if (i < N) y[i] = y[i] + x[i];\n"
        "}\n")
    launch = ('source = "acc.cl"\nkernel = "acc"\n[sizes]\nN = 100\n[launch]\n'
              'global_size = ["128"]\nlocal_size = ["32"]\n[args]\n'
              'x = { shape = ["N"], access = "in" }\n'
              'y = { shape = ["N"], access = "ACCESS" }\nN = "N"\n')
    (tmp_path / "out.toml").write_text(launch.replace("ACCESS", "out"))
    (tmp_path / "inout.toml").write_text(launch.replace("ACCESS", "inout"))
    found = CliRunner().invoke(main, ["check", str(tmp_path / "out.toml")])
    assert found.exit_code == 1 and f"[{KIND}] load y[i]" in found.output, found.output
    assert "100 reads in 4 work-group(s)" in found.output
    clean = CliRunner().invoke(main, ["check", str(tmp_path / "inout.toml")])
    assert clean.exit_code == 0 and "clean" in clean.output, clean.output
