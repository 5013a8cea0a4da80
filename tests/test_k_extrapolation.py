"""Tests of simulator.engine.accelerators.k_extrapolation: the traffic model of a long K loop from three short
ones equals executing the whole loop, figure by figure, for every family over drawn shapes
(edges in M, N and K, small and medium sizes); where it cannot be proved it falls back."""
from __future__ import annotations

import math
import warnings
from pathlib import Path

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

import tiletraffic as tt

from tiletraffic.simulator.engine.accelerators import ALL, NotApplicable
from tiletraffic.simulator.engine.accelerators import k_extrapolation as kx
from tiletraffic.simulator.model.device_model import (DEVICE_MODELS, NVIDIA_H200,
                                                      GuessedValueWarning)
from tiletraffic.simulator.observers.hazards import HazardError
from tiletraffic.simulator.ir.nodes import Schedule
from tiletraffic.simulator.kernels.families import FAMILIES, REGISTER_BLOCKED_FAMILIES, build
from tiletraffic.simulator.model.launch import model_launch
from tiletraffic.simulator.model.observation import observe_launch
from tiletraffic.simulator.kernels.variants import build_any

from strategies import register_block_options


H200, CUDA = "nvidia-h200", "nvidia-h200-cuda"


def _depth(family: str, options: dict) -> int:
    if family in REGISTER_BLOCKED_FAMILIES:
        return options["bk"]
    if family in ("gemm-tiled", "matvec-rows-reduce", "matvec-local-whole"):
        return options["tile"]
    if family == "matvec-local":
        return options["chunk"]
    return 1


@st.composite
def long_k_schedules(draw) -> Schedule:
    """A schedule of any family whose K is long enough for three shorter K."""
    family = draw(st.sampled_from(FAMILIES))
    if family == "gemm-warp-tiled":
        options = dict(draw(register_block_options(family)))
    elif family in REGISTER_BLOCKED_FAMILIES:
        four = family == "gemm-vectorized"
        options = {"tile": draw(st.integers(1, 8)), "wg_rows": draw(st.integers(1, 8)),
                   "tm": draw(st.sampled_from((4, 8) if four else (1, 2, 3, 4))),
                   "tn": draw(st.sampled_from((4, 8) if four else (1, 2, 3, 5))),
                   "bk": draw(st.sampled_from((4, 8, 12, 16) if four else (1, 2, 3, 8, 16)))}
    elif family.startswith("gemm"):
        options = {"tile": draw(st.integers(1, 16))}
        if family == "gemm-tiled":
            options["padding"] = draw(st.sampled_from((0, 0, 1)))
            options["a_tile"] = draw(st.sampled_from(("row-major", "transposed")))
        else:
            options["mapping"] = draw(st.sampled_from(("row-major", "transposed")))
    elif family == "matvec-local":
        options = {"tile": draw(st.integers(1, 96)),
                   "chunk": draw(st.sampled_from((1, 3, 8, 24, 32, 48, 64)))}
    elif family == "matvec-rows-reduce":
        options = {"tile": draw(st.integers(1, 16)), "wg_rows": draw(st.integers(1, 8))}
    else:
        options = {"tile": draw(st.integers(1, 96))}
    depth = _depth(family, options)
    period = math.lcm(depth, kx.LINE_ELEMS)
    low = max(kx.MIN_STEPS * depth, period) + 4 * period
    k = draw(st.integers(low, low + 2 * period))
    if family in ("gemm-vectorized", "gemm-warp-tiled"):
        k -= k % 4
    if family.startswith("gemm"):
        m, n = draw(st.integers(1, 120)), draw(st.integers(1, 120))
        if family in ("gemm-vectorized", "gemm-warp-tiled"):
            n = max(4, n - n % 4)
        return build(family, m, k, n, **options)
    if family == "matvec-local-whole":   # x whole in local memory: at most 48 KiB of it
        assume(k * 4 <= NVIDIA_H200.local_mem_bytes_per_work_group)
    m = draw(st.integers(1, 600))
    return build(family, m, k, **options)


def _model(schedule: Schedule, device=NVIDIA_H200, k_extrapolation: bool = True):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GuessedValueWarning)
        return model_launch(schedule, device,
                            accelerators=ALL.replace(k_extrapolation=k_extrapolation))


@settings(max_examples=6)   # each draw runs a whole long K loop; four examples below
@given(long_k_schedules(), st.sampled_from((H200, CUDA)))
@example(build("gemm-prefetch", 130, 611, 140, tile=4, tm=3, tn=5, bk=3, wg_rows=5), H200)
@example(build("gemm-tiled", 150, 500, 150, tile=16, padding=1), CUDA)
@example(build("matvec-local", 300, 500, tile=64, chunk=48), H200)
@example(build("matvec-local-whole", 300, 500, tile=64), CUDA)
def test_extrapolated_model_equals_full_execution(schedule, device):
    model = DEVICE_MODELS[device]

    def observe(s):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", GuessedValueWarning)
            return observe_launch(s, model)

    # exact whether the extrapolation applies or falls back (it may decline: e.g.
    # gemm-register-blocked M=3, K=161, N=1, tile=1, wg_rows=3, tm=tn=1, bk=8 is not affine)
    fast = _model(schedule, model)
    full = _model(schedule, model, k_extrapolation=False)
    assert fast.to_dict() == full.to_dict()
    assert fast.buffers == full.buffers


@pytest.mark.parametrize("schedule", [
    build("gemm-register-blocked", 70, 333, 90, tile=8, tm=2, tn=4, bk=8, wg_rows=4),
    build("gemm-prefetch", 70, 333, 90, tile=8, tm=2, tn=4, bk=8, wg_rows=4),
    build("gemm-vectorized", 70, 336, 96, tile=8, tm=4, tn=4, bk=8, wg_rows=4),
    build("gemm-tiled", 100, 1001, 90, tile=7, a_tile="transposed"),
    build("gemm-naive", 90, 301, 70, tile=5, mapping="transposed"),
    build("matvec-local-whole", 1, 1000, tile=10),   # found by hypothesis
    build("matvec-rows-reduce", 300, 2500, tile=15, wg_rows=3)])
def test_it_applies_to_tuner_like_shapes_and_equals_full_execution(schedule, monkeypatch):
    """At these shapes the model is extrapolated from three short K (no fallback to the
    whole K loop) and equals the model of the whole K loop, figure by figure."""
    extrapolated = []
    extrapolate = kx.extrapolated_observation

    def recorded(s, *args, **kw):
        observation = extrapolate(s, *args, **kw)   # NotApplicable: the model falls back
        extrapolated.append(observation)
        return observation

    monkeypatch.setattr(kx, "extrapolated_observation", recorded)
    assert kx.applies(schedule)
    fast = _model(schedule)
    assert [o.schedule for o in extrapolated] == [schedule], "the model fell back"
    monkeypatch.undo()
    full = _model(schedule, k_extrapolation=False)
    assert fast.to_dict() == full.to_dict()
    assert fast.buffers == full.buffers


def test_short_k_values_share_line_alignment_and_reach_k():
    values, period, steps = kx.short_k_values(4096, 8)
    assert period == 32 and values == [32, 64, 96] and values[0] + steps * period == 4096
    values, period, steps = kx.short_k_values(1001, 7)   # lcm(7, 32) = 224
    assert period == 224 and all(v % 224 == 1001 % 224 for v in values)
    assert values[0] >= 4 * 7 and values[0] + steps * period == 1001
    assert kx.short_k_values(100, 8) is None   # too short to gain anything


def test_figures_that_are_not_affine_refuse():
    with pytest.raises(kx.NotAffine):
        kx.extrapolate([1, 2, 4], 10)
    with pytest.raises(kx.NotAffine):
        kx.extrapolate([{"A": 1}, {"A": 2}, {"B": 3}], 10)
    with pytest.raises(kx.NotAffine):
        kx.extrapolate([4, None, None], 10)
    assert kx.extrapolate([{"A": 1, "B": None}, {"A": 3, "B": None}, {"A": 5, "B": None}],
                           10) == {"A": 21, "B": None}
    assert kx.extrapolate([0.5, 1.0, 1.5], 4) == 2.5


def test_non_affine_runs_fall_back_to_full_execution():
    schedule = build("gemm-tiled", 40, 700, 40, tile=8)
    seen = []

    def observe(s):
        seen.append(s.param_values["K"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", GuessedValueWarning)
            obs = observe_launch(s, NVIDIA_H200)
        if len(seen) == 3:
            obs.counts.flop += 1     # break the equal differences
        return obs

    with pytest.raises(kx.NotAffine):
        kx.extrapolated_observation(schedule, observe)
    assert len(seen) == 3 and max(seen) < 700
    assert issubclass(kx.NotAffine, NotApplicable)


EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "opencl"


def test_schedules_it_does_not_apply_to():
    # a local array indexed along K, no parameter K, and a K too short
    chunked = tt.build(str(EXAMPLES / "matvec_chunked.toml"), set={"M": 64, "K": 4096})
    assert kx.k_step_elems(chunked) is None
    assert kx.k_extrapolation_problem(chunked) == \
        "xs (local memory) is indexed by j, which depends on K"
    with pytest.raises(NotApplicable):
        kx.extrapolated_observation(chunked, lambda s: pytest.fail("ran"))
    square = tt.build(str(EXAMPLES / "mm_tiled.toml"), set={"N": 4096})
    assert kx.k_extrapolation_problem(square) == "opencl:mmul_tiled has no parameter K"
    short = build("gemm-tiled", 20, 64, 20, tile=16)
    assert not kx.applies(short)
    with pytest.raises(NotApplicable):
        kx.extrapolated_observation(short, lambda s: pytest.fail("ran"))


def test_a_hazard_is_raised_as_by_full_execution():
    # the out-of-bounds variant at a long K: the fast path must raise the same error
    variant = build_any("gemm-tiled:no-guards", 20, 400, 20, 16, None)
    with pytest.raises(HazardError) as fast:
        _model(variant)
    with pytest.raises(HazardError) as full:
        _model(variant, k_extrapolation=False)
    assert str(fast.value) == str(full.value)


def test_vector_merging_models_fall_back_where_blocks_depend_on_k():
    # nvidia-h200-cuda merges 4 consecutive local loads into one vector load, per block of
    # iterations of a loop run in blocks: matvec-local-whole's K loop over x_local falls
    # into blocks whose lengths depend on K (not periodic in it), so its counts need the
    # whole loop. Here (K = 1025, 128-work-item work-groups) three short K would give 2056
    # local load wavefronts against the whole loop's 2052.
    from tiletraffic.simulator.model.observation import observe_launch

    cuda = DEVICE_MODELS["nvidia-h200-cuda"]
    schedule = build("matvec-local-whole", 128, 1025, tile=128)
    assert kx.applies(schedule), "without merging, K extrapolation would apply"
    assert kx.merges_k_dependent_blocks(schedule)
    assert not kx.merges_k_dependent_blocks(build("gemm-tiled", 64, 64, 64, tile=16))
    assert not kx.applies(schedule, cuda.local_vector_words)
    with pytest.raises(NotApplicable):
        kx.extrapolated_observation(schedule, lambda s: pytest.fail("ran"),
                                    cuda.local_vector_words)

    def observe(s):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return observe_launch(s, cuda)

    unguarded = kx.extrapolated_observation(schedule, observe)   # merging not declared
    assert unguarded.memory != observe(schedule).memory, "the guard is needed here"
    full = _model(schedule, device=cuda, k_extrapolation=False)
    assert _model(schedule, device=cuda).to_dict() == full.to_dict()


def test_a_launch_files_k_step_is_derived_from_its_loops_and_divisors():
    # mm_helper: for (t = 0; t < ceil_div(K, 8); ++t): the divisor 8; mm_reg2x2: k++ (1)
    helper = tt.build(str(EXAMPLES / "mm_helper.toml"), set={"M": 64, "K": 4096, "N": 64})
    assert kx.k_step_elems(helper) == 8 and kx.applies(helper)
    reg = tt.build(str(EXAMPLES / "mm_reg2x2.toml"), set={"M": 64, "K": 4096, "N": 64})
    assert kx.k_step_elems(reg) == 1 and kx.applies(reg)


def test_a_faulty_variant_with_a_race_falls_back_and_reports_the_real_launchs_hazards():
    from tiletraffic.simulator.engine.fast_path import count_launch
    from tiletraffic.simulator.engine.simulation import simulate

    variant = build_any("gemm-tiled:no-second-barrier", 20, 400, 20, 16, None)
    assert kx.applies(variant)
    fast = count_launch(variant, hazards="report")
    assert not fast.k_extrapolated and "short K has a hazard" in fast.why_whole_k_loop[0]
    whole = simulate(variant, compute_values=False, hazards="report",
                     accelerators=ALL.replace(k_extrapolation=False, loop_blocks=False))
    assert fast.hazards and [h.kind for h in fast.hazards] == [h.kind for h in whole.hazards]
    assert fast.counts == whole.counts


@pytest.mark.parametrize("name,sizes", [("mm_helper", {"M": 40, "K": 300, "N": 36}),
                                        ("mm_reg2x2", {"M": 48, "K": 333, "N": 64})])
def test_a_launch_files_model_from_three_short_k_equals_full_execution(name, sizes):
    sch = tt.build(str(EXAMPLES / f"{name}.toml"), set=sizes)
    assert kx.applies(sch)
    fast, full = _model(sch), _model(sch, k_extrapolation=False)
    assert fast.to_dict() == full.to_dict()
    assert fast.buffers == full.buffers


# ------------------------------------------------- comparisons with K that settle late
K_LOOPS = {   # the loop of a row sum over K, and its global loads per row at K = 8192
    "k_sub": ("for (int k = 0; k < K - 2000; k++) s += A[r*K+k];", 8192 - 2000),
    "k_if": ("for (int k = 0; k < K; k++) if (k < 3000) s += A[r*K+k];", 3000),
    "k_end": ("for (int k = 0; k < K; k++) if (k >= K - 300) s += A[r*K+k];", 300),
    "k_eq": ("for (int k = 0; k < K; k++) { s += A[r*K+k]; if (k == 2500) s += A[r*K]; }",
             8192 + 1),
    "k_uwrap": ("for (uint k = 0; k < (uint)K; k++) if (k - 5000u < 100u) s += A[r*K+k];",
                100),
    "k_square": ("for (int k = 0; k < K; k++) if (k*k < 4*K) s += A[r*K+k];", 182),
    "k_big": ("if (K > 100) { for (int k = 0; k < K; k += 2) s += A[r*K+k]; } "
              "else { for (int k = 0; k < K; k++) s += A[r*K+k]; }", 4096),
}


@pytest.mark.parametrize("name", sorted(K_LOOPS))
def test_a_comparison_with_k_that_settles_late_is_counted_exactly(name, tmp_path):
    """The short K values exceed every comparison's crossing (``k_floor``), or the
    extrapolation is refused (a comparison not affine in K): the default counts of a launch
    file whose size K the kernel compares equal the hand count."""
    from tiletraffic.simulator.engine.fast_path import count_launch
    loop, per_row = K_LOOPS[name]
    (tmp_path / "k.cl").write_text(
        f"__kernel void {name}(const int M, const int K, __global const float *A, "
        f"__global float *y) {{ int r = get_global_id(0); float s = 0.0f; {loop} "
        "y[r] = s; }\n")
    (tmp_path / "k.toml").write_text(f"""source = "k.cl"
kernel = "{name}"
[sizes]
M = 4096
K = 8192
[launch]
global_size = ["M"]
local_size = [64]
[args]
M = "M"
K = "K"
A = {{ shape = ["M", "K"], access = "in" }}
y = {{ shape = ["M"], access = "out" }}
""")
    sch = tt.build(str(tmp_path / "k.toml"))
    floor, why = kx.k_floor(sch)
    assert (floor is None) == (name == "k_square"), why
    assert count_launch(sch).counts.global_load_elems == 4096 * per_row
