"""Half-precision storage (simulator/kernels/storage.py, GlobalArray dtype "half"): values
rounded to float16 when stored, bytes of 2 in every address (requests, sectors, closed
forms, the model), the tolerance, the generated OpenCL C on PoCL, Oclgrind's counts, the
OpenCL front end's vload_half/vstore_half, the command line and case files."""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st

from tiletraffic.analysis.cli import main
from tiletraffic.analysis.validation.cases import Case
from tiletraffic.gpu.codegen.generate import generate
from tiletraffic.simulator.engine.accelerators import Accelerators
from tiletraffic.simulator.engine.fast_path import count_launch
from tiletraffic.simulator.engine.reference import error_over_tolerance, reference
from tiletraffic.simulator.engine.data_inputs import random_inputs
from tiletraffic.simulator.engine.tolerance import check_result
from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.kernels import closed_forms
from tiletraffic.simulator.kernels.families import FAMILIES, ScheduleError, build
from tiletraffic.simulator.model.sequence_run import simulate

REPO = Path(__file__).resolve().parents[1]
MATVEC = ("matvec-naive", "matvec-local", "matvec-local-whole", "matvec-rows-reduce",
          "matvec-relu")


def _sizes(family):
    return (40, 48) if family in MATVEC else (40, 112, 36)


def _is_half(values) -> bool:
    values = np.asarray(values, np.float32)
    return bool((values.astype(np.float16).astype(np.float32) == values).all())


@pytest.mark.parametrize("family", FAMILIES + ("gemm-split-k",))
def test_half_storage_keeps_the_elements_and_halves_the_bytes(family):
    single, half = build(family, *_sizes(family)), build(family, *_sizes(family),
                                                         dtype="float16")
    assert {a.dtype for a in half.arrays} == {"half"}
    one, two = count_launch(single).counts.to_dict(), count_launch(half).counts.to_dict()
    for key in ("global_load_elems", "global_store_elems", "flop", "local_load_elems"):
        assert two[key] == one[key], key
    halves = {a.name for a in half.arrays}      # split-K's scratch C_partial stays float
    for direction in ("load", "store"):
        by_buffer = two[f"global_{direction}_elems_by_buffer"]
        assert two[f"global_{direction}_bytes"] == sum(
            elems * (2 if name in halves else 4) for name, elems in by_buffer.items())
        assert two[f"global_{direction}_bytes"] < one[f"global_{direction}_bytes"]
    if family != "gemm-split-k":
        assert 2 * two["global_load_bytes"] == one["global_load_bytes"]
    assert closed_forms.counts(half) == two


@pytest.mark.parametrize("family", ["matvec-rows-reduce", "gemm-tiled", "gemm-vectorized",
                                    "gemm-split-k"])
def test_simulated_outputs_are_halves_within_the_tolerance(family):
    sch = build(family, *_sizes(family), dtype="float16")
    inputs = random_inputs(sch, np.random.default_rng(5))
    assert all(_is_half(v) for v in inputs.values())
    out = simulate(sch, inputs, hazards="raise").outputs
    name = "y" if family in MATVEC else "C"
    assert _is_half(out[name])
    ref = reference(sch, inputs)
    assert ref.stored_half
    assert error_over_tolerance(out[name], ref) <= 1.0
    # the float32 result differs from the stored one by half's rounding: without the
    # half term the float32 tolerance refuses it
    k_scaled = check_result(out[name].reshape(ref.value.shape), ref.value, ref.k,
                            ref.abs_product)
    assert not k_scaled.ok


def test_the_tolerance_adds_half_rounding_and_still_catches_a_wrong_value():
    ref = np.array([1.0, 1000.0, 3e-6])
    stored = ref.astype(np.float16).astype(np.float32)
    good = check_result(stored, ref, 1, np.abs(ref), stored_half=True)
    assert good.ok and good.stored_half and "then rounded to half" in good.message()
    assert not check_result(stored, ref, 1, np.abs(ref)).ok     # float32's tolerance alone
    wrong = stored.copy()
    wrong[1] = np.float16(1001.0)     # one half ulp of 1000 is 0.25: 1001 is 4 ulps off
    assert not check_result(wrong, ref, 1, np.abs(ref), stored_half=True).ok


def _copy_schedule(dtype: str) -> S.Schedule:
    """32 work-items: y[i] = x[i] (one sub-group reading 32 consecutive elements)."""
    x = S.GlobalArray("x", "in", ("N",), dtype)
    y = S.GlobalArray("y", "out", ("N",), dtype)
    i = S.global_id(0)
    return S.Schedule("copy", "copy", (("N", 32),), (x, y), (), (32,), (32,),
                      (S.store(y, i, x[i]),), 32, "y = x")


@pytest.mark.parametrize("dtype, sectors", [("float", 4), ("half", 2)])
def test_32_consecutive_halves_are_one_request_of_two_sectors(dtype, sectors):
    from tiletraffic.simulator.model.device_model import device_model
    from tiletraffic.simulator.model.launch import model_launch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = model_launch(_copy_schedule(dtype), device_model("nvidia-h200")).to_dict()
    assert got["global_load_requests"] == 1 and got["global_load_sectors"] == sectors
    assert got["global_store_requests"] == 1 and got["global_store_sectors"] == sectors
    assert got["global_load_bytes"] == 32 * (2 if dtype == "half" else 4)


@settings(max_examples=12, deadline=None)
@given(family=st.sampled_from(["gemm-naive", "gemm-tiled", "gemm-register-blocked",
                               "matvec-naive", "matvec-rows-reduce", "matvec-local"]),
       m=st.integers(1, 40), k=st.integers(1, 40), n=st.integers(1, 40))
def test_closed_forms_equal_full_execution_in_float16_over_drawn_shapes(family, m, k, n):
    sizes = (m, k) if family in MATVEC else (m, k, n)
    sch = build(family, *sizes, tile=8, dtype="float16")
    full = count_launch(sch, accelerators=Accelerators()).counts.to_dict()
    assert count_launch(sch).counts.to_dict() == full
    assert closed_forms.counts(sch) == full


def test_model_predicts_about_twice_as_fast_for_a_bandwidth_bound_matvec():
    from tiletraffic.simulator.model.device_model import device_model
    from tiletraffic.simulator.model.launch import model_launch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        h200 = device_model("nvidia-h200")
        t32 = model_launch(build("matvec-rows-reduce", 8192, 4096), h200)
        t16 = model_launch(build("matvec-rows-reduce", 8192, 4096, dtype="float16"), h200)
    assert t16.prediction.dram_read_bytes < 0.51 * t32.prediction.dram_read_bytes
    ratio = t32.prediction.predicted_time_s / t16.prediction.predicted_time_s
    assert 1.5 < ratio < 2.05


def test_generated_code_reads_and_writes_halves():
    src = generate(build("gemm-vectorized", 64, 64, 64, dtype="float16")).source
    assert "__global const half *restrict A" in src and "__global half *restrict C" in src
    assert "vload_half4(" in src and "vstore_half4(" in src
    src = generate(build("matvec-naive", 64, 64, dtype="float16")).source
    assert "vload_half(" in src and "vstore_half(" in src and "cl_khr_fp16" not in src


@pytest.mark.parametrize("family", ["matvec-rows-reduce", "gemm-vectorized", "gemm-split-k"])
def test_pocl_runs_half_storage_against_float64(pocl, family):
    from tiletraffic.gpu.devices.device import select_device
    from tiletraffic.gpu.runtime.checked_run import run_on_device

    sch = build(family, *_sizes(family), dtype="float16")
    result = run_on_device(select_device(pocl), sch, repeat=10, warmup=1)
    out = next(iter(result.run.outputs.values()))
    assert _is_half(out) and np.isfinite(out).all()
    assert result.check.ok and result.check.stored_half


@pytest.mark.parametrize("spec", ["matvec-rows-reduce --m 64 --k 64",
                                  "gemm-vectorized --m 64 --k 64 --n 64"])
def test_oclgrind_counts_equal_the_simulators_in_half(spec):
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available

    if not oclgrind_available():
        pytest.skip("no Oclgrind")
    res = CliRunner().invoke(main, ["crosscheck", *spec.split(), "--dtype", "float16"])
    assert res.exit_code == 0, res.output
    assert "counts identical" in res.output


def test_front_end_reads_a_users_half_kernel():
    from tiletraffic.frontend import launch_file

    sch = launch_file.load(str(REPO / "examples/opencl/matvec_half.toml"))
    assert {a.name: a.dtype for a in sch.arrays} == {"A": "half", "x": "half", "y": "half"}
    res = CliRunner().invoke(main, ["simulate", str(REPO / "examples/opencl/matvec_half.toml"),
                                    "--json"])
    assert res.exit_code == 0, res.output
    import json
    doc = json.loads(res.stdout)
    assert doc["global_load_bytes"] == 2 * doc["global_load_elems"]
    assert doc["closed_form_agrees"] is True
    assert doc["result_error_over_tolerance"] <= 1.0


def test_front_end_refuses_a_rounding_mode_it_does_not_model(tmp_path):
    from tiletraffic.frontend import launch_file

    cl = (REPO / "examples/opencl/matvec_half.cl").read_text().replace(
        "vstore_half(acc, row, y)", "vstore_half_rtz(acc, row, y)")
    (tmp_path / "matvec_half.cl").write_text(cl)
    toml = (REPO / "examples/opencl/matvec_half.toml").read_text()
    (tmp_path / "k.toml").write_text(toml.replace('function = "references.py:matvec"', ""))
    with pytest.raises(Exception, match="vstore_half_rtz: half stores round to nearest even"):
        launch_file.load(str(tmp_path / "k.toml"))


@pytest.mark.parametrize("command", ["simulate", "check", "model", "run", "crosscheck",
                                     "explain"])
def test_cli_bad_dtype_is_one_line_exit_2(command):
    res = CliRunner().invoke(main, [command, "gemm-tiled", "--m", "16", "--k", "16", "--n",
                                    "16", "--dtype", "bfloat16"])
    assert res.exit_code == 2
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "'bfloat16' is not one of float32, float16" in lines[0]


def test_api_and_tune_refuse_a_bad_dtype():
    from tiletraffic.analysis.tune.options import TuneError, TuneOptions

    with pytest.raises(ScheduleError, match="dtype 'fp8' is not one of float32, float16"):
        build("matvec-naive", 64, 64, dtype="fp8")
    with pytest.raises(TuneError, match="dtype 'fp8'"):
        TuneOptions(64, 64, 64, dtype="fp8")
    res = CliRunner().invoke(main, ["simulate", "demo-reduction", "--dtype", "float16"])
    assert res.exit_code == 2 and "dtype applies to" in res.output


def test_cli_simulate_names_half_storage_and_agrees_with_the_closed_form():
    res = CliRunner().invoke(main, ["simulate", "matvec-rows-reduce", "--m", "64", "--k",
                                    "64", "--dtype", "float16"])
    assert res.exit_code == 0, res.output
    assert "dtype=float16" in res.output.splitlines()[0]
    assert "DIFFERS" not in res.output and "result" in res.output


def test_case_files_and_tuner_take_a_dtype():
    from tiletraffic.analysis.tune.space import load_space
    from tiletraffic.analysis.tune.tuner import screen
    from tiletraffic.simulator.engine.limits import GENERIC_GPU

    case = Case.from_dict({"family": "matvec-rows-reduce", "m": 64, "k": 64,
                           "dtype": "float16"})
    assert case.problem == "matvec 64×64 float16"
    assert case.build().arrays[0].dtype == "half"
    valid, _ = screen(load_space(), 64, 64, 64, GENERIC_GPU, dtype="float16")
    assert valid and all(a.dtype == "half" for _, sch in valid for a in sch.arrays)


def test_a_batch_keeps_half_storage():
    sch = build("gemm-tiled", 16, 16, 16, batch=3, shared_b=True, dtype="float16")
    assert {a.name: (a.dtype, a.shape[0]) for a in sch.arrays} == {
        "A": ("half", "BATCH"), "B": ("half", "K"), "C": ("half", "BATCH")}
    counts = count_launch(sch).counts.to_dict()
    assert closed_forms.counts(sch) == counts
    assert counts["global_load_bytes"] == 2 * counts["global_load_elems"]


@pytest.mark.parametrize("family, sizes", [("matvec-rows-reduce", (200, 300)),
                                           ("matvec-local", (300, 260)),
                                           ("gemm-vectorized", (128, 96, 64)),
                                           ("gemm-tiled", (70, 90, 50))])
def test_the_fast_path_models_half_storage_as_full_execution_does(family, sizes):
    from tiletraffic.simulator.model.device_model import device_model
    from tiletraffic.simulator.model.launch import model_launch

    sch = build(family, *sizes, dtype="float16")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        h200 = device_model("nvidia-h200")
        fast = model_launch(sch, h200).to_dict()
        full = model_launch(sch, h200, accelerators=Accelerators()).to_dict()
    for key in ("global_load_requests", "global_load_sectors", "global_store_sectors",
                "l2_read_sectors", "local_bank_conflicts", "dram_read_bytes"):
        assert fast[key] == full[key], key


@settings(max_examples=10, deadline=None)
@given(m=st.integers(1, 40), k4=st.integers(1, 30), tile=st.sampled_from([4, 8, 32]),
       vec=st.sampled_from([2, 4]), dtype=st.sampled_from(["float32", "float16"]))
def test_vectorized_rows_reduce_counts_as_its_closed_forms(m, k4, tile, vec, dtype):
    sch = build("matvec-rows-reduce", m, 4 * k4, tile=tile, vec=vec, dtype=dtype)
    full = count_launch(sch, accelerators=Accelerators()).counts.to_dict()
    assert count_launch(sch).counts.to_dict() == full
    assert closed_forms.counts(sch) == full
    assert full == count_launch(build("matvec-rows-reduce", m, 4 * k4, tile=tile,
                                      dtype=dtype)).counts.to_dict()


def test_vectorized_rows_reduce_reads_four_halves_per_instruction():
    src = generate(build("matvec-rows-reduce", 64, 256, vec=4, dtype="float16")).source
    assert "vload_half4(" in src
    with pytest.raises(ScheduleError, match="needs K to be a multiple of 4"):
        build("matvec-rows-reduce", 64, 258, vec=4)
    with pytest.raises(ScheduleError, match="vec must be 1, 2 or 4"):
        build("matvec-rows-reduce", 64, 256, vec=3)


def test_pocl_runs_the_vectorized_half_rows_reduce(pocl):
    from tiletraffic.gpu.devices.device import select_device
    from tiletraffic.gpu.runtime.checked_run import run_on_device

    sch = build("matvec-rows-reduce", 37, 204, tile=8, vec=4, dtype="float16")
    result = run_on_device(select_device(pocl), sch, repeat=10, warmup=1)
    assert _is_half(result.run.outputs["y"]) and result.check.ok


def test_the_class_proof_of_a_users_half_kernel_models_as_full_execution():
    import tiletraffic as tt
    from tiletraffic.simulator.model.device_model import device_model
    from tiletraffic.simulator.model.launch import model_launch

    sch = tt.build(str(REPO / "examples/opencl/matvec_half.toml"), set={"M": 640, "K": 72})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        h200 = device_model("nvidia-h200")
        fast = model_launch(sch, h200).to_dict()
        full = model_launch(sch, h200, accelerators=Accelerators()).to_dict()
    for key in ("global_load_requests", "global_load_sectors", "l2_read_sectors",
                "dram_read_bytes", "global_load_bytes"):
        assert fast[key] == full[key], key
