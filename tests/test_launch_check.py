"""`run` never launches what `check` rejects; the tolerance from the counted sum length;
crosscheck and messages for a user's own kernels (the faulty schedules of
tests/user_schedules/, from public bug reports). The two crashing kernels are never
launched unless --unchecked (then inside guard zones): ``run_kernel`` is replaced by a
function that fails the test if it is called."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import tiletraffic as tt
from tiletraffic.gpu.runtime import checked_run as validate
from tiletraffic.analysis.cli import main
from tiletraffic.gpu.devices.device import list_devices
from tiletraffic.simulator.engine.launch_check import check_launch
from tiletraffic.simulator.engine.data_inputs import random_inputs

HERE = Path(__file__).parent / "user_schedules"
HAS_POCL = any(d.is_pocl for d in list_devices())
needs_pocl = pytest.mark.skipif(not HAS_POCL, reason="PoCL is not installed "
                                "(pip install pocl-binary-distribution)")


def spec(name: str) -> str:
    return f"{HERE / name}.py:make_schedule"


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def no_launch(monkeypatch):
    """Fail the test if anything is launched on a device."""
    def refuse(*args, **kwargs):
        raise AssertionError("a kernel was launched")
    monkeypatch.setattr(validate, "run_kernel", refuse)


# ---------------------------------------------------------------- crashing kernels
@needs_pocl
@pytest.mark.parametrize("name, kind", [("reduction_early_return", "barrier-divergence"),
                                        ("fixed_block_unguarded", "out-of-bounds")])
def test_crashing_kernels_are_refused_before_launch(no_launch, name, kind):
    result = cli("run", spec(name), "--device", "pocl")
    assert result.exit_code == 1, result.output
    assert "not launched" in result.stderr and f"[{kind}]" in result.stderr
    assert "could corrupt memory or hang" in result.stderr
    assert "full launch" in result.stdout and "result equals" not in result.stdout


@needs_pocl
def test_the_python_run_refuses_too(no_launch):
    with pytest.raises(validate.UnsafeLaunchError) as err:
        tt.run(tt.build(spec("reduction_early_return")), device="pocl")
    assert {h.kind for h in err.value.check.hazards} >= {"barrier-divergence"}


# ------------------------------------------------------------------ racy tutorial
@needs_pocl
def test_the_racy_tutorial_is_refused(no_launch):
    result = cli("run", spec("rect_tile_gemm_one_barrier"), "--device", "pocl")
    assert result.exit_code == 1, result.output
    assert "[data-race] write-after-read race on local memory" in result.stderr
    assert "not those of the kernel" in result.stderr
    assert "2 hazard(s) (data-race)" in result.stdout   # a count always with what it counts


@needs_pocl
def test_the_racy_tutorial_is_timed_only_unchecked_and_marked():
    result = cli("run", spec("rect_tile_gemm_one_barrier"), "--device", "pocl",
                 "--unchecked")
    assert result.exit_code == 1, result.output + result.stderr   # launched; a fault found
    lines = result.stdout.splitlines()
    assert "launched anyway: --unchecked" in lines[0]
    assert len(lines) >= 4
    assert all(line.endswith("[unchecked: hazards found: data-race]") for line in lines[1:])
    result = cli("run", spec("rect_tile_gemm_one_barrier"), "--device", "pocl",
                 "--unchecked", "--json")
    data = json.loads(result.stdout)
    assert data["unchecked"] == "unchecked: hazards found: data-race"
    assert {h["kind"] for h in data["launch_check"]["hazards"]} == {"data-race"}
    assert data["stores_outside"] == {}     # its race stays inside the buffers


@needs_pocl
def test_an_out_of_bounds_kernel_runs_unchecked_with_its_stores_caught_in_guard_zones():
    """fixed_block_unguarded at 40x24x40 stores C[row * 40 + col] for row, col < 64: the
    flat indices 1600 .. 63 * 40 + 63 = 2583 are past C's end, 984 distinct words, which
    the device stores into C's guard zone (without the zones PoCL aborts the process after
    the run). Run in a child process, so that a corrupted heap fails this test only."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "tiletraffic", "run",
                           spec("fixed_block_unguarded"), "--device", "pocl", "--unchecked"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr    # a wrong result, no signal
    error = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(error) == 1 and "out of tolerance" in error[0]
    assert error[0].endswith("stores outside the buffers, caught in their guard zones: "
                             "C 984 words")
    assert "corruption" not in done.stderr and "Fatal" not in done.stderr


def test_guard_zones_are_the_buffers_size_within_limits_and_aligned():
    from tiletraffic.gpu.runtime.guard_zones import (MAX_GUARD_BYTES, MIN_GUARD_BYTES,
                                                     describe, guard_bytes)

    assert guard_bytes(6400, 128) == MIN_GUARD_BYTES
    assert guard_bytes(3 * MIN_GUARD_BYTES + 4, 128) == 3 * MIN_GUARD_BYTES + 128
    assert guard_bytes(10 * MAX_GUARD_BYTES, 4096) == MAX_GUARD_BYTES
    assert guard_bytes(100_000, 1000) == 100_000
    with pytest.raises(ValueError, match="align_bytes must be at least 1, got 0"):
        guard_bytes(64, 0)
    assert describe({}) == "no store outside the buffers seen in their guard zones"
    assert describe({"C": 1, "B": 7}) == ("stores outside the buffers, caught in their guard "
                                          "zones: B 7 words, C 1 word")


# ---------------------------------------------------------------- tolerance
@needs_pocl
def test_n_only_gemm_passes_with_the_counted_sum_length():
    result = cli("run", spec("gemm_n_only"), "--n", 100, "--device", "pocl", "--json")
    assert result.exit_code == 0, result.output + result.stderr
    data = json.loads(result.stdout)
    assert data["check"]["ok"] and data["check"]["sum_length"] == 100
    assert data["check"]["sum_length_method"] == "counted in every work-group"
    text = cli("run", spec("gemm_n_only"), "--n", 100, "--device", "pocl").stdout
    # the launch has a reference function: each element is judged by its running error bound
    assert "the element's running error bound" in text and "sum length" not in text


@pytest.mark.parametrize("family, size", [("gemm-tiled", dict(m=33, k=45, n=17, tile=8)),
                                          ("gemm-vectorized", dict(m=37, k=44, n=44, tile=8)),
                                          ("matvec-local", dict(m=50, k=70, tile=16))])
def test_sum_length_is_k_for_sums_in_order(family, size):
    sch = tt.build(family, **size)
    assert check_launch(sch).sum_length == size["k"]


def test_a_tree_reduction_counts_fewer_roundings():
    """matvec-rows-reduce: 32 work-items per row each add ⌈50/32⌉ = 2 products, then five
    levels of a tree: 2 + 5 = 7 roundings, not K = 50."""
    sch = tt.build("matvec-rows-reduce", m=37, k=50, tile=32, wg_rows=2)
    assert check_launch(sch).sum_length == 7


def test_a_copy_is_checked_exactly():
    from tiletraffic.simulator.engine.reference import reference

    sch = tt.build(spec("misaligned_float4"))
    aligned = tt.vstore(sch.array("y"), (tt.Var("i") * 4,), [tt.DeclareFloat(f"v{w}").ref
                                                           for w in range(4)])
    sch = dataclasses.replace(sch, body=sch.body[:-1] + (aligned,))
    c = check_launch(sch)
    assert c.sum_length == 0 and [h.kind for h in c.hazards] == ["unwritten-output"]
    inputs = random_inputs(sch, np.random.default_rng())
    ref = reference(sch, inputs, lambda d: np.r_[d["x"], np.zeros(4)], sum_length=0)
    assert ref.k == 0


def test_representative_check_names_its_work_groups_and_extrapolates():
    sch = tt.build("gemm-vectorized", m=300, k=200, n=260, tile=8, wg_rows=8, tm=4, tn=4,
                   bk=8)
    full = check_launch(sch)
    reps = check_launch(sch, full_check_work=0)
    assert full.work_groups_checked is None and not full.hazards
    assert reps.work_groups_checked and not reps.hazards
    groups = set(reps.work_groups_checked)
    last = tuple(n - 1 for n in sch.num_groups)
    assert (0, 0) in groups and last in groups, "edges included"
    assert reps.sum_length == full.sum_length == 200
    assert "extrapolated" in reps.sum_length_method
    assert "races between work-groups" in reps.scope


# ---------------------------------------------------------------- messages
def test_unwritten_count_excludes_elements_of_the_reported_misaligned_store():
    hazards = {h.kind: h for h in tt.check(tt.build(spec("misaligned_float4")))}
    assert hazards["unwritten-output"].count == 4
    assert hazards["unwritten-output"].detail.startswith("4 of 68 elements of y")
    assert "store of y at y[1] (byte offset 4" in hazards["misaligned-vector-access"].detail


def test_write_write_race_names_2d_index_and_every_storing_work_group():
    (h,) = tt.check(tt.build(spec("write_write_race")))
    assert "stores to C[0, 0]" in h.detail
    assert h.work_groups == 8 and h.count == 16
    assert h.group_counts == (((0,), 16), ((1,), 16), ((2,), 16))
    assert "16 racing words (each counted for every work-group storing it) in 8 " \
           "work-group(s)" in h.detail and "(5 more)" in h.detail


def test_local_race_index_is_two_dimensional():
    found = tt.check(tt.build(spec("rect_tile_gemm_one_barrier")))
    assert any("local tile_A[0, 0]" in h.detail for h in found), [h.detail for h in found]


@pytest.mark.parametrize("args", [("--repeat", 3), ("--tile", 0), ("--warmup", 0)])
def test_bad_options_of_run_are_bad_input(args):
    result = cli("run", "gemm-tiled", "--m", 16, "--n", 16, "--k", 16, *args)
    assert result.exit_code == 2, result.output


# ---------------------------------------------------------------- crosscheck
@pytest.mark.parametrize("name, oclgrind", [("race_between_groups", ["data-race"]),
                                            ("write_write_race", ["data-race"]),
                                            ("misaligned_float4", ["misaligned"])])
def test_crosscheck_compares_hazards_of_user_schedules(name, oclgrind):
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available

    if not oclgrind_available():
        pytest.skip("no Oclgrind platform")
    result = cli("crosscheck", spec(name), "--json")
    assert result.exit_code == 0, result.output + result.stderr
    (data,) = json.loads(result.stdout)
    assert data["agree"] and data["oclgrind"] == oclgrind and data["simulator_details"]
    if name == "misaligned_float4":
        assert data["simulator"] == ["misaligned-vector-access", "unwritten-output"]
        assert data["difference"] == "Oclgrind cannot see unwritten-output (no memory error)"
    else:
        assert data["simulator"] == ["data-race"] and data["difference"] == ""
    text = cli("crosscheck", spec(name)).output
    assert "hazards agree" in text and "simulator:" in text and "oclgrind:" in text
