"""Batched GEMM: a batch of products in one launch (simulator/kernels/batch.py), through the
counts, the closed forms (hand-written and derived), the fast path, the code generator,
PoCL, the command line and case files."""
from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st

from tiletraffic.analysis.cli import main
from tiletraffic.analysis.validation.cases import Case, CaseError
from tiletraffic.gpu.codegen.generate import generate
from tiletraffic.simulator.engine.accelerators import Accelerators
from tiletraffic.simulator.engine.fast_path import count_launch
from tiletraffic.simulator.ir.sequence import kernels_of
from tiletraffic.simulator.kernels import closed_forms
from tiletraffic.simulator.kernels.batch import batched
from tiletraffic.simulator.kernels.families import ALL_GEMM_FAMILIES, ScheduleError, build
from tiletraffic.simulator.model import derived_counts
from tiletraffic.simulator.model.sequence_run import simulate
from tiletraffic.simulator.engine.data_inputs import random_inputs

EVERY_GEMM = ALL_GEMM_FAMILIES + ("gemm-split-k",)
SIZES = (40, 112, 36)   # M, K, N: edge tiles in M and N, 7 K steps of 16 (uneven split-K)


def _times(single: dict, batch: int) -> dict:
    return {key: ({name: batch * v for name, v in value.items()} if isinstance(value, dict)
                  else value if key == "global_load_elems_per_tile" else batch * value)
            for key, value in single.items()}


@pytest.mark.parametrize("family", EVERY_GEMM)
@pytest.mark.parametrize("shared_b", [False, True])
def test_batched_counts_are_batch_times_one_product(family, shared_b):
    one = count_launch(build(family, *SIZES)).counts.to_dict()
    sch = build(family, *SIZES, batch=3, shared_b=shared_b)
    counted = count_launch(sch).counts.to_dict()
    assert counted == _times(one, 3)
    assert closed_forms.counts(sch) == counted
    for kernel in kernels_of(sch):
        assert kernel.params[-1] == ("BATCH", 3)
        b = kernel.array("B") if "B" in {a.name for a in kernel.arrays} else None
        if b is not None:
            assert b.shape == (("K", "N") if shared_b else ("BATCH", "K", "N"))


@pytest.mark.parametrize("family", ["gemm-tiled", "gemm-register-blocked", "gemm-split-k"])
def test_batched_values_equal_numpy_matmul(family):
    for shared_b in (False, True):
        sch = build(family, *SIZES, batch=3, shared_b=shared_b)
        inputs = random_inputs(sch, np.random.default_rng(7))
        assert inputs["A"].shape == (3, 40, 112)
        assert inputs["B"].shape == ((112, 36) if shared_b else (3, 112, 36))
        out = simulate(sch, inputs, hazards="raise").outputs["C"].reshape(3, 40, 36)
        want = np.matmul(inputs["A"].astype(np.float64), inputs["B"].astype(np.float64))
        assert np.abs(out - want).max() < 1e-3 * np.abs(want).max()
        # every matrix differs from the others: a batch index ignored would show
        assert np.abs(out[1] - out[0]).max() > 1.0


@settings(max_examples=12, deadline=None)
@given(family=st.sampled_from(["gemm-naive", "gemm-tiled", "gemm-register-blocked"]),
       m=st.integers(1, 40), k=st.integers(1, 40), n=st.integers(1, 40),
       batch=st.integers(2, 6), shared_b=st.booleans())
def test_closed_forms_equal_full_execution_over_drawn_shapes(family, m, k, n, batch,
                                                             shared_b):
    sch = build(family, m, k, n, tile=8, batch=batch, shared_b=shared_b)
    full = count_launch(sch, accelerators=Accelerators()).counts.to_dict()
    assert count_launch(sch).counts.to_dict() == full     # classes and K extrapolation
    assert closed_forms.counts(sch) == full


def test_derived_closed_forms_take_the_batch_as_a_size():
    sch = build("gemm-tiled", *SIZES, batch=3, shared_b=True)
    derived = derived_counts.derive(sch, derived_counts.builtin_binding(sch))
    assert derived.sizes["BATCH"] == 3
    assert "BATCH" in derived.text("global_load_elems_by_buffer[B]")
    other = derived.evaluate({"M": 40, "K": 112, "N": 36, "BATCH": 7})
    want = closed_forms.counts(build("gemm-tiled", *SIZES, batch=7, shared_b=True))
    assert {key: other[key] for key in derived_counts.COUNTERS} == \
        {key: want[key] for key in derived_counts.COUNTERS}


def test_large_batch_takes_the_fast_path():
    sch = build("gemm-tiled", 1024, 1024, 1024, batch=64)
    counted = count_launch(sch)
    assert counted.by_classes and counted.k_extrapolated
    assert counted.work_groups_executed < 200          # of 262144
    assert counted.counts.work_groups == 64 * 64 * 64
    assert counted.counts.to_dict() == closed_forms.counts(sch)


def test_split_k_folds_the_batch_into_its_slices_and_proves_it_as_any_kernel():
    sch = build("gemm-split-k", *SIZES, batch=2)
    slices, reduce = sch.kernels
    assert slices.global_size[2] == 2 * 4 and reduce.global_size[2] == 2
    why = count_launch(sch).why_every_work_group
    assert why[0] is not None and why[1] is None


def test_a_batch_of_one_is_the_single_product():
    one = build("gemm-tiled", *SIZES)
    again = build("gemm-tiled", *SIZES, batch=1)
    assert generate(again).source == generate(one).source
    assert again.params == one.params and "batch" not in again.extra


def test_generated_kernel_selects_the_matrix_by_group_id_2():
    source = generate(build("gemm-tiled", *SIZES, batch=4, shared_b=True)).source
    assert "get_group_id(2)" in source and "const int BATCH" in source
    assert "B[(int)get_group_id(2)" not in source          # shared B: no batch offset


@pytest.mark.parametrize("bad, message", [
    (dict(batch=0), "batch must be a positive integer, got 0"),
    (dict(batch=-2), "batch must be a positive integer, got -2"),
    (dict(batch=True), "batch must be a positive integer, got True"),
    (dict(batch=2, shared_b="yes"), "shared_b must be true or false"),
    (dict(batch=1, shared_b=True), "shared_b applies to a batch of 2 or more"),
])
def test_bad_batch_is_refused(bad, message):
    with pytest.raises(ScheduleError, match=message):
        build("gemm-tiled", *SIZES, **bad)


def test_batch_refuses_a_schedule_without_a_b():
    with pytest.raises(ScheduleError, match="applies to C = A·B"):
        batched(build("matvec-naive", 64, 64), 2)


@pytest.mark.parametrize("args, message", [
    (["--batch", "0"], "error: --batch must be a positive integer, got 0"),
    (["--batch", "-1"], "error: --batch must be a positive integer, got -1"),
    (["--shared-b"], "error: --shared-b applies to a batch of 2 or more"),
])
def test_cli_bad_batch_is_one_line_exit_2(args, message):
    res = CliRunner().invoke(main, ["simulate", "gemm-tiled", "--m", "16", "--k", "16",
                                    "--n", "16", *args])
    assert res.exit_code == 2
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(message)


def test_cli_batch_of_a_matrix_vector_product_is_refused():
    res = CliRunner().invoke(main, ["simulate", "matvec-naive", "--m", "16", "--k", "16",
                                    "--batch", "2"])
    assert res.exit_code == 2 and "--batch applies to gemm-naive" in res.output
    assert "matvec-rows-reduce" not in res.output      # it takes --wg-rows, not --batch


def test_cli_simulate_prints_the_batch_and_agrees_with_the_closed_form():
    res = CliRunner().invoke(main, ["simulate", "gemm-tiled", "--m", "32", "--k", "32",
                                    "--n", "32", "--batch", "3", "--shared-b"])
    assert res.exit_code == 0, res.output
    assert "BATCH=3" in res.output and "NDRange 32 x 32 x 3" in res.output
    row = next(line for line in res.output.splitlines()
               if line.startswith("global_load_elems "))
    assert row.split()[1:] == [str(3 * 2 * 32 * 32 * 2)] * 2


def test_case_files_take_a_batch():
    case = Case.from_dict({"family": "gemm-tiled", "m": 64, "k": 64, "n": 64, "batch": 8,
                           "shared_b": True})
    assert case.build().global_size == (64, 64, 8)
    assert case.problem == "gemm 8 × 64×64×64 shared B"
    assert "batch=8" in case.id and Case.from_dict(case.to_dict()) == case
    with pytest.raises(CaseError, match="batch must be a positive integer, got 0"):
        Case.from_dict({"family": "gemm-tiled", "m": 64, "k": 64, "n": 64, "batch": 0})


def test_model_waves_cover_the_whole_batch():
    from tiletraffic.simulator.model.device_model import device_model
    from tiletraffic.simulator.model.launch import model_launch

    h200 = device_model("nvidia-h200")
    one = model_launch(build("gemm-tiled", 128, 128, 128), h200)
    many = model_launch(build("gemm-tiled", 128, 128, 128, batch=64), h200)
    shared = model_launch(build("gemm-tiled", 128, 128, 128, batch=64, shared_b=True), h200)
    t1, t64 = one.prediction.predicted_time_s, many.prediction.predicted_time_s
    assert t1 < t64 < 64 * t1 / 5        # one launch fills the device 64 do not
    assert shared.prediction.dram_read_bytes < many.prediction.dram_read_bytes


def test_pocl_runs_a_batch_against_numpy(pocl):
    from tiletraffic.gpu.devices.device import select_device
    from tiletraffic.gpu.runtime.launch import run_kernel

    target = select_device(pocl)
    for family, shared_b in (("gemm-tiled", False), ("gemm-vectorized", True),
                             ("gemm-split-k", False)):
        sch = build(family, 40, 112, 36, batch=3, shared_b=shared_b)
        inputs = random_inputs(sch, np.random.default_rng(3))
        arrays = {**inputs, "C": np.empty((3, 40, 36), np.float32)}
        kernels = [generate(k) for k in kernels_of(sch)]
        scalars = {name: v for k in kernels_of(sch) for name, v in k.params}
        if family == "gemm-split-k":
            arrays["C_partial"] = np.empty((3, 4, 40, 36), np.float32)
        result = run_kernel(target, kernels, arrays, scalars, outputs=["C"])
        want = np.matmul(inputs["A"].astype(np.float64), inputs["B"].astype(np.float64))
        got = result.outputs["C"].reshape(3, 40, 36)
        assert np.abs(got - want).max() < 1e-3 * np.abs(want).max(), family


def test_tuner_builds_every_candidate_batched():
    from tiletraffic.analysis.tune.space import load_space
    from tiletraffic.analysis.tune.tuner import screen
    from tiletraffic.simulator.engine.limits import GENERIC_GPU

    valid, _ = screen(load_space(), 64, 64, 64, GENERIC_GPU, batch=4, shared_b=True)
    assert valid
    for _, sch in valid:
        for kernel in kernels_of(sch):
            assert kernel.param_values["BATCH"] == 4
            assert kernel.global_size[2] % 4 == 0
            if "B" in {a.name for a in kernel.arrays}:
                assert kernel.array("B").shape == ("K", "N")


@pytest.mark.parametrize("args, message", [
    (["--batch", "0"], "error: batch must be a positive integer, got 0"),
    (["--shared-b"], "error: shared_b applies to a batch of 2 or more products"),
])
def test_tune_refuses_a_bad_batch(tmp_path, args, message):
    res = CliRunner().invoke(main, ["tune", "gemm", "--m", "64", "--n", "64", "--k", "64",
                                    "--top", "0", "--out", str(tmp_path / "t.json"), *args])
    assert res.exit_code == 2
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(message)


@pytest.mark.parametrize("family", ALL_GEMM_FAMILIES)
def test_the_class_proof_holds_for_a_batch_without_trusting_the_family(family):
    import dataclasses

    from tiletraffic.simulator.engine.accelerators.class_safety import classes_problem

    sch = build(family, *SIZES, batch=3, shared_b=family == "gemm-tiled")
    assert classes_problem(dataclasses.replace(sch, family="a-users-kernel")) is None


def test_simulate_json_names_the_batch_only_when_there_is_one():
    import json

    argv = ["simulate", "gemm-tiled", "--m", "16", "--k", "16", "--n", "16", "--json"]
    batched_out = json.loads(CliRunner().invoke(main, argv + ["--batch", "2"]).stdout)
    single_out = json.loads(CliRunner().invoke(main, argv).stdout)
    assert (batched_out["batch"], batched_out["shared_b"]) == (2, False)
    assert batched_out["global_size"] == [16, 16, 2]
    assert "batch" not in single_out and single_out["global_size"] == [16, 16]


def test_model_counts_of_a_batch_are_batch_times_and_shared_b_is_read_once_from_dram():
    import warnings

    from tiletraffic.simulator.model.device_model import device_model
    from tiletraffic.simulator.model.launch import model_launch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        h200 = device_model("nvidia-h200")
        one = model_launch(build("gemm-tiled", 128, 128, 128), h200).to_dict()
        many = model_launch(build("gemm-tiled", 128, 128, 128, batch=64, shared_b=True),
                            h200).to_dict()
    for key in ("global_load_requests", "global_load_sectors", "global_store_requests",
                "global_store_sectors", "l2_read_sectors", "local_bank_conflicts",
                "global_load_elems", "flop"):
        assert many[key] == 64 * one[key], key
    # every buffer fits in the L2: compulsory reads, 64 matrices A and one B
    assert many["dram_read_bytes"] == (64 * 128 * 128 + 128 * 128) * 4
