"""The phase rule of 128-bit local loads (simulator/observers/memory.py) against the H200's own
per-instruction counters of the ladder's CUDA build (reports/nvidia-h200/ladder/codegen/,
experiments/h200/ladder/local_findings.md).

Nsight's SASS-attributed wavefronts (``smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_
op_ld``) and the per-instruction excessive wavefronts of the source page count only what the
local-load instructions themselves cause. Every sub-group of these launches does the same
work per K step, so wavefronts and conflicts per local-load instruction do not depend on N:
the model runs at N = 128 (one to four work-groups) and is compared per instruction with the
measured N = 1024 launch.
"""
from __future__ import annotations

import warnings

import pytest

from tiletraffic.simulator.model.device_model import DEVICE_MODELS
from tiletraffic.simulator.engine.simulation import simulate
from tiletraffic.simulator.observers.memory import MemoryObserver

from experiments.h200.data import load_json
from experiments.h200.validation.driver import build_case

from experiments.h200.tests.conftest import committed

EXACT = ("tiled", "vectorized", "vectorized 8x8 bk8", "vectorized 8x8 bk16",
         "vectorized 8x8 bk16 wg8x8")
"""Cases whose local-load instructions, per instruction, the model counts as that run's
CUDA build issued them. The register-blocked and prefetch kernels of that run were built
from an earlier source (their kk loops rolled or unrolled by two: LDS.64 pairs, scalar
LDS); today's source unrolls kk fully and NVRTC emits LDS.128 for the A tile, which the
model counts (``experiments/h200/local_counters/findings.md``)."""


@pytest.fixture(scope="module")
def measured() -> dict:
    """label -> (instructions, SASS-attributed wavefronts, excessive wavefronts of the LDS*
    rows), the CUDA build's, from the committed local_codegen run."""
    data = load_json(committed("ladder", "codegen", "local_codegen.json.gz"))
    labels = {c["id"]: c["label"] for c in data["meta"]["cases"]}
    ncu = data["ncu"]
    by_launch = {r["launch_index"]: r for r in ncu["records"] if r.get("metrics")}
    out = {}
    for kernel, rows in ncu["source_rows_by_kernel"].items():
        rec = by_launch.get(int(kernel))
        if rec is None or rec["id"] not in labels:
            continue
        m = {k: v["value"] for k, v in rec["metrics"].items()}
        excessive = sum(int(r["L1 Wavefronts Shared Excessive"]) for r in rows
                        if r["sass"].startswith("LDS"))
        out[labels[rec["id"]]] = (m["smsp__inst_executed_op_shared_ld.sum"],
                                  m["smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_"
                                    "op_ld.sum"], excessive)
    return out


def modelled(label: str):
    from experiments.h200.ladder.counters import case_dicts
    (case,) = [c for c in case_dicts((128,)) if c["label"] == label]
    m = DEVICE_MODELS["nvidia-h200-cuda"]
    obs = MemoryObserver(m.sub_group_size, m.sector_bytes, m.line_bytes, m.local_banks,
                         m.bank_bytes, m.local_vector_words, m.local_vector_min_wavefronts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        simulate(build_case(case), compute_values=False, observers=[obs])
    c = obs.counts
    return c.local_load_requests, c.local_load_wavefronts, c.local_load_bank_conflicts


@pytest.mark.parametrize("label", EXACT)
def test_wavefronts_and_conflicts_per_local_load_equal_the_h200s(label, measured):
    instructions, wavefronts, excessive = measured[label]
    requests, model_wavefronts, model_conflicts = modelled(label)
    # e.g. vectorized: 3 wavefronts per LDS.128 (2 for the A tile, 4 for the B tile), 0
    # conflicts; vectorized 8x8: 5 (2 and 8), 2 conflicts (0 and 4)
    assert model_wavefronts * instructions == wavefronts * requests
    assert model_conflicts * instructions == excessive * requests


def test_the_register_blocked_kernels_of_that_run_were_another_source(measured):
    # measured (N = 1024: 2048 warps x 64 K steps): 12 local loads per warp and two values
    # of kk (4 LDS.64 of the A tile, 8 LDS of the B tile), 96 per K step of 16: the source
    # of that run; today's CUDA build has 16 LDS.128 and 64 LDS per K step (offline SASS of
    # reports/nvidia-h200/local_counters/), 80, which the model counts (N = 128: 32 warps x
    # 8 K steps)
    instructions, wavefronts, excessive = measured["register-blocked"]
    assert (instructions, wavefronts, excessive) == (96 * 2048 * 64, 96 * 2048 * 64, 0)
    assert modelled("register-blocked") == (80 * 32 * 8, (16 * 2 + 64) * 32 * 8, 0)
