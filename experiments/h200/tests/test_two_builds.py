"""The two builds of one source on the H200 (reports/nvidia-h200/codegen/, written on the
device by experiments/h200/codegen/driver.py): the OpenCL driver's machine code against the
CUDA build's, and the device models of both builds. No GPU needed: the raw data are
committed."""
from __future__ import annotations

import warnings

import pytest

from experiments.h200.hardware import counter_model_for
from tiletraffic.simulator.model.device_model import (DEVICE_MODELS, VALUE_FIELDS,
                                                      GuessedValueWarning)

from experiments.h200.barrier_wait.analysis import load_barrier_wait
from experiments.h200.codegen.analysis import (code_rows, codegen_section, cubin_checks,
                                               load_codegen)

from experiments.h200.tests.conftest import committed, load_committed

NVIDIA_H200, NVIDIA_H200_CUDA = DEVICE_MODELS["nvidia-h200"], DEVICE_MODELS["nvidia-h200-cuda"]
GENERIC_GPU_MODEL = DEVICE_MODELS["generic-gpu"]


@pytest.fixture(scope="module")
def data():
    return load_committed("codegen", load_codegen)


def test_the_run_checked_every_result(data):
    for t in data["times"]["cases"]:
        for build in ("opencl", "cuda", "opencl_ptx"):
            if build in t:
                assert t[build]["check"]["ok"], (t["id"], build)
    assert all(r["check"]["ok"] for r in data["opencl_cubin"]["cases"])
    assert all(r["check"]["ok"] for r in data["opencl_occupancy"]["cases"])


def test_only_the_opencl_driver_leaves_local_loads_scalar(data):
    rows = {r["kernel"]: r for r in code_rows(data)}
    for name in ("gemm-tiled-T8", "gemm-tiled-T16", "gemm-tiled-T32", "matvec-local-T256"):
        r = rows[name]
        assert r["opencl_driver"]["LDS.128"] == 0 and r["opencl_driver"]["LDS"] > 0, name
        assert r["cuda_driver_same_ptx"]["LDS.128"] > 0, name
        assert r["nvrtc_build"]["LDS.128"] > 0, name


def test_opencl_time_is_the_opencl_machine_codes_time(data):
    # the OpenCL driver's cubin launched through CUDA runs as long as the OpenCL launch
    times = {t["id"]: t for t in data["times"]["cases"]}
    for r in data["opencl_cubin"]["cases"]:
        assert r["median_s"] == pytest.approx(times[r["id"]]["opencl"]["median_s"], rel=0.01)
    # and the tiled kernels of the CUDA driver's code of the same PTX are faster by > 10%
    for cid in ("gemm-tiled-M4096-K4096-N4096-T16", "gemm-tiled-M4096-K4096-N4096-T32"):
        assert times[cid]["opencl_ptx"]["median_s"] < 0.9 * times[cid]["opencl"]["median_s"]


def test_opencl_model_counts_the_opencl_machine_codes_local_loads(data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GuessedValueWarning)
        checks = cubin_checks(data, NVIDIA_H200)
    assert len(checks) == 5
    assert all(c["predicted"] == c["measured"] for c in checks), checks
    assert any(c["measured"] > 0 for c in checks)


def test_the_two_h200_models_differ_only_in_the_builds_local_loads():
    assert NVIDIA_H200.local_vector_words == 1 and NVIDIA_H200_CUDA.local_vector_words == 4
    differ = {k for k in ("name", *VALUE_FIELDS, "guessed")
              if getattr(NVIDIA_H200, k) != getattr(NVIDIA_H200_CUDA, k)}
    assert differ == {"name", "local_vector_words"}
    assert counter_model_for(NVIDIA_H200) is NVIDIA_H200_CUDA
    assert counter_model_for(GENERIC_GPU_MODEL) is GENERIC_GPU_MODEL


def test_counters_are_compared_with_the_cuda_build_and_times_with_the_opencl_one(cases):
    (tiled,) = [c for c in cases if c.case_id == "gemm-tiled-M4096-K4096-N4096-T16"]
    assert tiled.launch.prediction.device_model == "nvidia-h200"
    assert tiled.counted.prediction.device_model == "nvidia-h200-cuda"
    rows = {r["quantity"]: r for r in tiled.rows()}
    assert rows["local load instructions"]["predicted"] == \
        tiled.counted.memory.local_load_requests == rows["local load instructions"]["measured"]
    assert rows["kernel time (s)"]["predicted"] == tiled.launch.prediction.predicted_time_s
    # the OpenCL build issues more local loads than the CUDA build
    assert tiled.launch.memory.local_load_requests > tiled.counted.memory.local_load_requests


def test_section_renders_the_figures_and_nothing_without_data(data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GuessedValueWarning)
        lines, summary = codegen_section(data, NVIDIA_H200)
    # the machine-code table: per kernel, LDS / LDS.128 of each build
    table = {c[0]: c[1:4] for c in ([x.strip() for x in ln.strip("|").split("|")]
                                    for ln in lines if ln.startswith("| gemm-"))}
    assert table["gemm-tiled-T16"] == ["32 / 0", "16 / 4", "16 / 4"]
    assert summary["cubin_local_loads_exact"] == "5/5"
    assert codegen_section(None, NVIDIA_H200) == ([], {})


def test_memory_latency_is_the_measured_wait_per_k_tile(report_dir):
    # reports/nvidia-h200/barrier_wait (experiments/h200/barrier_wait/driver.py): the OpenCL
    # build of gemm-tiled B = 16, N = 4096 waits ~554 ns per K-tile for its loads and barrier
    committed("barrier_wait")
    data = load_barrier_wait(report_dir)
    cases = {c["id"]: c for c in data["cases"]}
    assert all(c["instrumented"]["check"]["ok"] and c["plain"]["check"]["ok"]
               for c in cases.values())
    named = cases["gemm-tiled-M4096-K4096-N4096-T16"]
    assert named["tiles_per_work_group"] == 4096 // 16
    assert NVIDIA_H200.memory_latency_s == pytest.approx(
        named["wait_ns_per_tile"]["mean"] * 1e-9, rel=0.01)
    assert "memory_latency_s" in NVIDIA_H200.guessed  # one kernel's value, warned about
    # the instrumentation costs little: the instrumented kernel within 5% of the plain one
    for c in cases.values():
        assert min(c["instrumented"]["event_s"]) <= 1.05 * c["plain"]["median_s"], c["id"]
