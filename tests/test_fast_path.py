"""Tests of the fastest exact path every command takes (simulator.engine.fast_path, and the
choices of ``simulate``, ``model`` and ``check``): a launch file's large launch is counted
by work-group classes with the exact counts; the fast path's counts equal full execution's
for every OpenCL example and every built-in family; what is not proved falls back to full
execution with a note naming it and its estimated time; ``check`` of a large launch keeps
every hazard check of the full launch."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings

import tiletraffic as tt
from tiletraffic.analysis.cli import main
from tiletraffic.analysis.cli.common import work
from tiletraffic.simulator.engine.budget import VALUES_WORK
from tiletraffic.frontend import launch_file
from tiletraffic.frontend.resolver import resolve
from tiletraffic.simulator.engine import fast_path
from tiletraffic.simulator.engine.accelerators import k_extrapolation as kx
from tiletraffic.simulator.engine.budget import estimate_simulation, work_item_steps
from tiletraffic.simulator.engine.simulation import simulate
from tiletraffic.simulator.kernels.families import FAMILIES, build
from tiletraffic.simulator.model.sequence_run import simulate as simulate_any

from test_k_extrapolation import long_k_schedules

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "opencl"
MM_TILED = EXAMPLES / "mm_tiled.toml"


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def tile_of(path: Path) -> int:
    """TS of a launch file, from its build options (``-DTS=16``)."""
    options = launch_file.read(path).data["build_options"].split()
    return int(next(o.split("=")[1] for o in options if o.startswith("-DTS=")))


def test_a_large_launch_file_is_counted_exactly_by_classes_through_the_command_line():
    n, ts = 4096, tile_of(MM_TILED)
    result = invoke("simulate", MM_TILED, "--set", f"N={n}", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["global_load_elems"] == 2 * n ** 3 // ts
    assert out["global_load_elems_by_buffer"] == {"A": n ** 3 // ts, "B": n ** 3 // ts,
                                                  "C": 0}
    assert out["global_store_elems"] == n * n and out["flop"] == 2 * n ** 3
    assert out["work_group_classes"] is True and out["result_check_skipped"] == "counts only"


def test_a_launch_file_is_sized_by_its_loop_steps_not_by_its_work_items():
    # mm_tiled has no parameter K: its N-long loop is what makes N = 1024 large
    sch = tt.build(str(MM_TILED), set={"N": 1024})
    assert work(sch) == work_item_steps(sch) == 1024 ** 3 > VALUES_WORK
    small = tt.build(str(MM_TILED), set={"N": 64})
    assert work(small) == 64 ** 3 <= VALUES_WORK


def test_a_launch_of_many_short_work_items_is_counted_without_values():
    # a transpose has no loop: 2048² work-items are 2**22 loop steps, but many work-items
    path = EXAMPLES / "transpose_padded.toml"
    assert work_item_steps(tt.build(str(path), set={"N": 2048})) <= VALUES_WORK
    out = json.loads(invoke("simulate", path, "--set", "N=2048", "--json").stdout)
    assert out["result_check_skipped"] == "counts only" and out["work_group_classes"]
    assert out["global_load_elems"] == out["global_store_elems"] == 2048 ** 2
    small = json.loads(invoke("simulate", path, "--set", "N=256", "--json").stdout)
    assert small["result_check_skipped"] is None and small["result_error_over_tolerance"] <= 1


# Sizes with at least 5 work-groups per dimension (classes of first, interior and last
# work-groups) and partial edge work-groups where the launch allows them.
EXAMPLE_SIZES = {"mm_tiled": {"N": 160}, "matvec_chunked": {"M": 1000, "K": 150},
                 "mm_helper": {"M": 100, "K": 21, "N": 90},
                 "mm_reg2x2": {"M": 192, "K": 20, "N": 224},
                 "reduce_local": {"n": 12700}, "transpose_padded": {"N": 256},
                 "matvec_half": {"M": 1000, "K": 128}}


def test_every_example_has_sizes_here():
    assert sorted(EXAMPLE_SIZES) == sorted(p.stem for p in EXAMPLES.glob("*.toml"))


@pytest.mark.parametrize("name", sorted(EXAMPLE_SIZES))
def test_the_fast_path_counts_every_example_as_full_execution_does(name):
    sch = tt.build(str(EXAMPLES / f"{name}.toml"), set=EXAMPLE_SIZES[name])
    fast = fast_path.count_launch(sch)
    full = simulate(sch, compute_values=False)
    assert fast.by_classes, fast.why_every_work_group   # proved for every example
    assert fast.work_groups_executed < sch.work_groups
    assert fast.counts == full.counts
    assert fast.hazards == full.hazards == []


@settings(max_examples=10, deadline=None)
@given(long_k_schedules())
def test_extrapolated_counts_equal_full_execution(schedule):
    fast = fast_path.count_launch(schedule)
    full = simulate(schedule, compute_values=False)
    assert fast.counts == full.counts


@pytest.mark.parametrize("family", [f for f in FAMILIES if f.startswith("gemm")])
def test_each_gemm_family_is_extrapolated_and_exact_at_a_long_k(family):
    schedule = build(family, 40, 1000, 36, tile=8) if family != "gemm-warp-tiled" else \
        build(family, 64, 1000, 64)
    fast = fast_path.count_launch(schedule)
    assert fast.by_classes and fast.k_extrapolated, fast.why_whole_k_loop
    assert fast.counts == simulate(schedule, compute_values=False).counts


@pytest.mark.parametrize("name,sizes", [
    ("mm_helper", {"M": 40, "K": 300, "N": 36}), ("mm_helper", {"M": 64, "K": 517, "N": 72}),
    ("mm_reg2x2", {"M": 48, "K": 333, "N": 64}), ("mm_reg2x2", {"M": 64, "K": 256, "N": 80})])
def test_a_launch_files_k_loop_is_counted_from_three_short_k_exactly(name, sizes):
    sch = tt.build(str(EXAMPLES / f"{name}.toml"), set=sizes)
    fast = fast_path.count_launch(sch)
    assert fast.by_classes and fast.k_extrapolated, fast.why_whole_k_loop
    assert fast.counts == simulate(sch, compute_values=False).counts


def test_simulate_takes_k_extrapolation_where_asked():
    sch = tt.build(str(EXAMPLES / "mm_reg2x2.toml"), set={"M": 80, "K": 1000, "N": 96})
    classes = tt.Accelerators(work_group_classes=True)
    fast = tt.simulate(sch, compute_values=False,
                       accelerators=classes.replace(k_extrapolation=True))
    whole = tt.simulate(sch, compute_values=False, accelerators=classes)
    assert fast.counts == whole.counts == simulate(sch, compute_values=False).counts
    assert (fast.global_loads_per_group == whole.global_loads_per_group).all()
    assert list(fast.representatives) == list(whole.representatives)


def test_a_kernel_sequence_is_counted_kernel_by_kernel():
    sch = tt.build("gemm-split-k", 40, 600, 36, tile=8, splits=2)
    fast = fast_path.count_launch(sch)
    assert fast.counts == simulate_any(sch, compute_values=False).counts
    assert len(fast.why_every_work_group) == 2 and fast.by_classes


def test_counts_that_are_not_affine_fall_back_to_the_whole_k_loop(monkeypatch):
    schedule = build("gemm-tiled", 40, 700, 40, tile=8)

    def not_affine(s, count):
        raise kx.NotAffine("1, 2, 4")

    monkeypatch.setattr(kx, "extrapolated_counts", not_affine)
    fast = fast_path.count_launch(schedule)
    assert fast.by_classes and not fast.k_extrapolated
    assert "not affine" in fast.why_whole_k_loop[0]
    assert fast.counts == simulate(schedule, compute_values=False).counts


def test_a_hazard_of_a_short_k_runs_the_real_launch_and_raises_its_hazard(monkeypatch):
    # a short run reporting a hazard: the real K is counted and its own result returned
    schedule = build("gemm-tiled", 40, 700, 40, tile=8)
    real = fast_path._by_classes

    def short_with_hazard(kernel, hazards, limits, race_checks, accelerators):
        res = real(kernel, hazards, limits, race_checks, accelerators)
        if kernel.param_values["K"] != 700:
            res.hazards.append("a hazard")
        return res

    monkeypatch.setattr(fast_path, "_by_classes", short_with_hazard)
    fast = fast_path.count_launch(schedule)
    assert "short K has a hazard" in fast.why_whole_k_loop[0]
    assert fast.counts == simulate(schedule, compute_values=False).counts


def test_a_variant_with_a_hazard_raises_it_on_the_fast_path():
    variant = tt.build("gemm-tiled:no-guards", 100, 400, 100, 16)
    with pytest.raises(tt.HazardError, match="out-of-bounds"):
        fast_path.count_launch(variant)
    kinds = {h.kind for h in fast_path.count_launch(variant, hazards="report").hazards}
    assert kinds == {"out-of-bounds"}


UNPROVED_CL = ("__kernel void k(int N, __global const float* x, __global float* y) {\n"
               "  int i = get_global_id(0);\n  float acc = x[i];\n"
               "  if (get_group_id(0) % 3 == 1) { for (int j = 0; j < N; j++) acc += x[j]; }\n"
               "  y[i] = acc;\n}\n")


def unproved_launch(tmp_path: Path, n: int) -> Path:
    (tmp_path / "g.cl").write_text(UNPROVED_CL)
    (tmp_path / "g.toml").write_text(
        f'source = "g.cl"\nkernel = "k"\n[sizes]\nN = {n}\n[launch]\nglobal_size = ["N"]\n'
        'local_size = ["64"]\n[args]\nN = "N"\nx = { shape = ["N"], access = "in" }\n'
        'y = { shape = ["N"], access = "out" }\n')
    return tmp_path / "g.toml"


def test_unproved_classes_run_every_work_group_with_a_note_of_why_and_its_time(tmp_path):
    path = unproved_launch(tmp_path, 2 ** 13)
    assert work_item_steps(tt.build(str(path))) > VALUES_WORK
    result = invoke("simulate", path, "--json")
    assert result.exit_code == 0, result.output
    notes = [line for line in result.stderr.splitlines() if line.startswith("note:")]
    assert len(notes) == 1, result.stderr
    assert "work-group classes not proved for k (" in notes[0]
    assert "(group_id(0) % 3)" in notes[0]
    assert "every work-group executed, estimated " in notes[0]
    out = json.loads(result.stdout)
    # exact: one load per work-item, and the 64 work-items of each of work-groups 1, 4, ...,
    # 127 (43 of them) read all of x
    assert out["global_load_elems"] == 2 ** 13 + 43 * 64 * 2 ** 13
    assert out["work_group_classes"] is False


def test_a_whole_k_loop_is_noted_only_where_it_is_slow(capsys):
    from tiletraffic.analysis.cli.model import SLOW_PATH_NOTE_S, note_unproved

    slow = tt.build(str(EXAMPLES / "matvec_chunked.toml"), set={"K": 2 ** 22})
    est = estimate_simulation(slow, compute_values=False, work_group_classes=True)
    assert est.time_s > SLOW_PATH_NOTE_S
    note_unproved(slow, (None,))
    said = capsys.readouterr().err
    assert said.startswith("note: K extrapolation not proved for matvec_chunked (xs (local "
                           "memory) is indexed by j, which depends on K)")
    assert f"the whole K loop executed, estimated {est.time_text()}" in said
    note_unproved(tt.build(str(MM_TILED), set={"N": 1024}), (None,))
    note_unproved(build("gemm-tiled", 4096, 4096, 4096, tile=16), (None,))
    assert capsys.readouterr().err == ""


def test_the_estimate_of_the_fast_path_is_that_of_three_short_k():
    schedule = build("gemm-warp-tiled", 2048, 4096, 2048)
    fast = estimate_simulation(schedule, compute_values=False, work_group_classes=True,
                               k_extrapolation=True)
    whole = estimate_simulation(schedule, compute_values=False, work_group_classes=True)
    values, _, _ = kx.schedule_short_k_values(schedule)
    parts = [estimate_simulation(kx.with_k(schedule, k), compute_values=False,
                                 work_group_classes=True) for k in values]
    assert fast.time_s == pytest.approx(sum(e.time_s for e in parts))
    assert fast.time_s < whole.time_s / 5 and fast.work_groups == schedule.work_groups


# ------------------------------------------------------------------------------- check
def test_hazards_do_not_depend_on_values_for_any_name():
    """What lets ``check`` run a large launch without values: every hazard, detail and
    count included, is the same with values and without, for every built-in name."""
    from tiletraffic.simulator.engine.data_inputs import random_inputs
    from tiletraffic.simulator.kernels.variants import names
    import numpy as np

    for name in names():
        sch = resolve(name, example_shape=True)
        inputs = random_inputs(sch, np.random.default_rng(1))
        with_values = simulate_any(sch, inputs, hazards="report", limits=None).hazards
        without = simulate_any(sch, compute_values=False, hazards="report",
                               limits=None).hazards
        assert [h.__dict__ for h in with_values] == [h.__dict__ for h in without], name


@pytest.mark.parametrize("name, kind", [("gemm-tiled:floor-grid", "unwritten-output"),
                                        ("gemm-naive:accumulate-into-output",
                                         "uninitialized-global-read")])
def test_check_of_a_large_launch_keeps_the_checks_that_need_every_work_group(name, kind):
    # unwritten outputs and reads of outputs before a store need the full launch: a check
    # of representative work-groups could not see them, the full launch without values does
    sch = tt.build(name, 264, 264, 264, 16)
    assert work_item_steps(sch) > VALUES_WORK
    assert kind in {h.kind for h in tt.check(sch)}
    result = invoke("check", name, "--m", 264, "--k", 264, "--n", 264, "--tile", 16, "--json")
    assert result.exit_code == 1
    assert kind in {h["kind"] for h in json.loads(result.stdout)}


def test_check_refuses_a_seed_where_no_values_are_computed():
    args = ("check", "gemm-tiled", "--m", 264, "--k", 264, "--n", 264)
    assert invoke(*args).exit_code == 0
    result = invoke(*args, "--seed", 3)
    assert result.exit_code == 2
    assert "--seed has no effect here" in result.output
    assert "checked without computing values" in result.output
    assert invoke("check", "gemm-tiled", "--m", 64, "--k", 64, "--n", 64, "--seed", 3
                  ).exit_code == 0


def test_check_refuses_an_unknown_kind_of_inputs_at_any_size():
    sch = tt.build("gemm-tiled", 264, 264, 264, 16)
    with pytest.raises(ValueError, match="inputs 'zeros' is not one of"):
        tt.check(sch, inputs="zeros")
