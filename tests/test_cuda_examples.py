"""The CUDA examples (examples/cuda/): each kernel, read from its own CUDA source through its
launch file, is counted as its family's closed forms say, is clean and modelled, its
generated OpenCL C runs on PoCL equal to its numpy reference, and Oclgrind's counts of that
OpenCL C equal the simulator's.
"""
from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import tiletraffic as tt
from tiletraffic.frontend import launch_file
from tiletraffic.simulator.kernels import closed_forms as CF

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "cuda"
KEYS = ("global_load_elems", "global_store_elems", "local_load_elems", "local_store_elems",
        "barriers", "flop")


def closed_forms(name: str, s: dict) -> dict:
    """The counts of each example at its launch file's names ``s``, from the closed forms of
    the family it belongs to."""
    if name == "sgemm_naive":
        return CF.gemm_naive(s["M"], s["K"], s["N"], 16)
    if name == "sgemm_tiled":
        return CF.gemm_tiled(s["N"], s["N"], s["N"], s["TILE"])
    if name in ("sgemm_register_blocked", "sgemm_float4"):
        tn = s.get("TN", 4)
        return CF.gemm_register_blocked(s["M"], s["K"], s["N"], s["BN"] // tn,
                                        s["BM"] // s["TM"], s["TM"], tn, s["BK"])
    if name == "transpose_shared":
        n = s["N"]
        return {"global_load_elems": n * n, "global_store_elems": n * n,
                "local_store_elems": n * n, "local_load_elems": n * n,
                "barriers": (n // 32) ** 2, "flop": 0}
    if name == "gemv_warp_shuffle":
        m, k = s["M"], s["K"]
        return {"global_load_elems": 2 * m * k, "global_store_elems": m,
                "local_store_elems": 0, "local_load_elems": 0, "barriers": 0,
                "flop": 2 * m * k + 5 * 32 * m}   # 5 shuffle-down additions per lane
    raise KeyError(name)


NAMES = tuple(sorted(p.stem for p in EXAMPLES.glob("*.toml")))
SHUFFLING = ("gemv_warp_shuffle",)


def load(name, **sets):
    return launch_file.load(EXAMPLES / f"{name}.toml", sets or None)


def test_the_examples_are_there():
    assert {"sgemm_naive", "sgemm_tiled", "sgemm_register_blocked", "sgemm_float4",
            "transpose_shared", "gemv_warp_shuffle"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_counts_equal_closed_forms(name):
    sch = load(name)
    assert sch.family == f"cuda:{launch_file.read(EXAMPLES / f'{name}.toml').kernel}"
    counts = tt.simulate(sch, compute_values=False).counts.to_dict()
    expected = closed_forms(name, launch_file.read(EXAMPLES / f"{name}.toml").names)
    assert {k: counts[k] for k in KEYS} == {k: expected[k] for k in KEYS}


def test_template_parameter_tuned_changes_the_counts():
    eight = launch_file.load(EXAMPLES / "sgemm_tiled.toml", None, {"TILE": 8})
    counts = tt.simulate(eight, compute_values=False).counts.to_dict()
    expected = CF.gemm_tiled(64, 64, 64, 8)
    assert eight.local_size == (8, 8)
    assert {k: counts[k] for k in KEYS} == {k: expected[k] for k in KEYS}


@pytest.mark.parametrize("name", NAMES)
def test_clean_and_modelled(name):
    sch = load(name)
    assert tt.check(sch, seed=3) == []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        launch = tt.model(sch, "nvidia-h200")
    assert launch.prediction.predicted_time_s > 0


@pytest.mark.parametrize("name", NAMES)
def test_generated_opencl_runs_on_pocl_equal_to_numpy(name, pocl):
    sch = load(name)
    ref = launch_file.reference_function(EXAMPLES / f"{name}.toml")
    result = tt.run(sch, pocl, repeat=10, warmup=1, reference=ref, seed=5)
    assert result.check.ok


@pytest.mark.parametrize("name", NAMES)
def test_oclgrind_counts_of_the_generated_opencl_equal_the_simulator(name):
    from tiletraffic.gpu.oclgrind.crosscheck import compare_counts
    from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available
    if not oclgrind_available():
        pytest.skip("no Oclgrind platform")
    gemm = {"M": 32, "N": 32, "K": 16}
    small = {"sgemm_naive": gemm, "sgemm_tiled": {"N": 32}, "sgemm_register_blocked": gemm,
             "sgemm_float4": gemm, "transpose_shared": {"N": 32},
             "gemv_warp_shuffle": {"M": 16, "K": 64}}.get(name, {})
    comparison = compare_counts(load(name, **small))
    assert comparison.equal, comparison.to_dict()
    assert comparison.oclgrind["global_load_elems"] > 0
    if name in SHUFFLING:       # the generated OpenCL C shuffles through local memory
        assert comparison.oclgrind["barriers"] > 0


def test_run_says_in_one_line_that_the_generated_opencl_runs(pocl):
    from click.testing import CliRunner
    from tiletraffic.analysis.cli import main
    from tiletraffic.gpu.runtime.cuda_run import nvrtc_problem
    result = CliRunner().invoke(main, ["run", str(EXAMPLES / "transpose_shared.toml"),
                                       "--device", pocl])
    assert result.exit_code == 0, result.output
    first = result.output.splitlines()[0]
    assert first.startswith("cuda:transpose_shared: its CUDA source is not compiled here (")
    assert first.endswith("): running the schedule's generated OpenCL C")
    assert nvrtc_problem() is None or "--device names an OpenCL device" in first


def test_nvrtc_compiles_and_launches_the_cuda_source():
    from tiletraffic.gpu.runtime.cuda_run import nvrtc_problem
    problem = nvrtc_problem()
    if problem is not None:
        pytest.skip(f"NVRTC launch not tested: {problem}")
    for name in NAMES:
        ref = launch_file.reference_function(EXAMPLES / f"{name}.toml")
        run = tt.run_cuda(load(name), repeat=10, warmup=1, reference=ref, seed=4)
        assert run.checks and all(c.ok for c in run.checks.values()), name
        assert len(run.times_s) == 10 and run.median_s > 0


def test_api_run_warns_that_the_generated_opencl_runs(pocl):
    from tiletraffic.gpu.runtime.shader_runner import TranslationRunWarning
    ref = launch_file.reference_function(EXAMPLES / "transpose_shared.toml")
    with pytest.warns(TranslationRunWarning, match="cuda:transpose_shared: run launches the "
                                                   "schedule's generated OpenCL C"):
        result = tt.run(load("transpose_shared", N=32), pocl, repeat=10, warmup=1,
                        reference=ref, seed=1)
    assert result.check.ok
