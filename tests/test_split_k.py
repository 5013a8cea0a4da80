"""Kernel sequences and gemm-split-k: results against numpy at drawn sizes, counts against
the closed forms, the sum length across kernels, the sequence contract's refusals, a fault
in the second kernel found, the model's sum, the tuning space, the CLI and a run on PoCL."""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, strategies as st

from strategies import assert_matches_reference, random_inputs
from tiletraffic.simulator.kernels import closed_forms as closed_form
from tiletraffic.analysis.cli import main
from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.model.device_model import device_model
from tiletraffic.simulator.engine.simulation import simulate as simulate_kernel
from tiletraffic.simulator.engine.launch_check import check_launch
from tiletraffic.simulator.model.launch import model_launch
from tiletraffic.simulator.kernels.families import ScheduleError, build
from tiletraffic.simulator.kernels.split_k import split_k_reduce
from tiletraffic.simulator.kernels.warp_tiled import nearest_splits, slices_fit
from tiletraffic.simulator.ir.sequence import KernelSequence, kernels_of
from tiletraffic.simulator.observers.counters import add_counts
from tiletraffic.simulator.model.sequence_run import model_sequence, registers_of, simulate

SMALL = {"tile": 8, "wg_rows": 8, "tm": 4, "tn": 4, "bk": 8}   # 32 x 32 blocks, BK = 8


@st.composite
def split_k_launches(draw):
    m = draw(st.integers(1, 70))
    n = 4 * draw(st.integers(1, 20))
    k = 4 * draw(st.integers(4, 40))
    splits = draw(st.integers(2, max(2, -(-k // 8))))   # at most one slice per K step
    return m, k, n, splits


@given(split_k_launches(), st.integers(0, 2**32 - 1))
def test_drawn_sizes_match_numpy_the_closed_forms_and_are_hazard_free(launch, seed):
    m, k, n, splits = launch
    try:
        seq = build("gemm-split-k", m, k, n, splits=splits, **SMALL)
    except ScheduleError as err:   # an empty last slice: refused, never run
        assert "empty" in str(err)
        return
    inputs = random_inputs(seq, np.random.default_rng(seed))
    result = simulate(seq, inputs)          # raises on any hazard of either kernel
    assert_matches_reference(seq, inputs, result.outputs["C"])
    assert result.counts.to_dict() == closed_form.counts(seq)
    assert set(result.outputs) == {"C"}     # the scratch buffer is not an output


def test_counts_by_hand():
    # M = 40, K = 64, N = 64, S = 2; 32 x 32 blocks (8 x 8 work-items, 4 x 4 each), BK = 8:
    # 8 K steps, 4 per slice; 2 x 2 blocks x 2 slices = 8 work-groups in kernel 1.
    # A: 40·64 read by 2 column blocks = 5120; B: 64·64 by 2 row blocks = 8192;
    # C_partial stores 2·40·64 = 5120, kernel 2 loads them all and stores C 40·64 = 2560;
    # kernel 2: work-groups of 64 along N/4 = 16 float4 columns: 1 x 40 rows = 40;
    # FLOP: kernel 1 2·(4 blocks · 64 items · 8 steps · 8 · 16) = 524288, kernel 2 1 add per
    # element (S - 1 = 1): 2560; barriers one per K step of a work-group: 4 blocks · 8 = 32.
    seq = build("gemm-split-k", 40, 64, 64, splits=2, **SMALL)
    c = simulate(seq, compute_values=False).counts
    assert c.global_load_elems_by_buffer == {"A": 5120, "B": 8192, "C_partial": 5120, "C": 0}
    assert c.global_store_elems_by_buffer == {"A": 0, "B": 0, "C_partial": 5120, "C": 2560}
    assert (c.work_groups, c.flop, c.barriers) == (8 + 40, 524288 + 2560, 32)
    assert [k.global_size for k in seq.kernels] == [(16, 16, 2), (64, 40)]


@pytest.mark.parametrize("k,splits", [(64, 2), (200, 3), (100, 4)])
def test_sum_length_is_the_longest_slice_plus_the_adds(k, splits):
    # slice 0 adds min(P·BK, K) products, P = ⌈⌈K/BK⌉/S⌉; kernel 2 adds S - 1 partials to it
    seq = build("gemm-split-k", 20, k, 16, splits=splits, **SMALL)
    slice_terms = min(-(-(-(-k // 8)) // splits) * 8, k)
    assert check_launch(seq).sum_length == slice_terms + splits - 1
    assert slice_terms + splits - 1 < k   # a tighter tolerance than one K-long sum


def test_input_sum_lengths_seed_a_kernel_that_reads_an_earlier_kernels_output():
    reduce = split_k_reduce(4, 8, 3)
    partial = {"C_partial": np.ones((3, 4, 8), np.float32)}
    plain = simulate_kernel(reduce, partial, sum_lengths=True).sum_lengths["C"]
    seeded = simulate_kernel(reduce, partial, sum_lengths=True,
                             input_sum_lengths={"C_partial": 10}).sum_lengths["C"]
    assert plain.max() == 2 and seeded.max() == 12   # S - 1 adds, on top of 10


def test_splits_refused_with_the_limit():
    with pytest.raises(ScheduleError, match="splits >= 2"):
        build("gemm-split-k", 16, 64, 16, splits=1, **SMALL)
    # K = 40, BK = 8: 5 steps; S = 4 gives slices of 2 steps, 2 + 2 + 1 and an empty one
    # (S = 3: 2 + 2 + 1, S = 5: 1 each)
    with pytest.raises(ScheduleError, match=r"empty; choose 3 or 5 \(the nearest"):
        build("gemm-split-k", 16, 40, 16, splits=4, **SMALL)
    with pytest.raises(ScheduleError, match=r"empty; choose 5 \(the nearest"):
        build("gemm-split-k", 16, 40, 16, splits=9, **SMALL)
    assert [s for s in range(2, 6) if slices_fit(5, s)] == [2, 3, 5]
    assert nearest_splits(10, 7) == [5, 10]   # S = 6..9 leave a slice of 10 steps empty
    with pytest.raises(ScheduleError, match="multiple of 32"):
        split_k_reduce(4, 8, 2, reduce_items=48)


def _kernel(name, arrays, body=(), params=(("M", 4),)):
    return S.Schedule(family="demo", kernel_name=name, params=params, arrays=arrays,
                      local_arrays=(), local_size=(4,), global_size=(4,), body=body, tile=4)


def test_the_sequence_contract_is_checked():
    a = S.GlobalArray("A", "in", ("M",))
    w_out, w_in = S.GlobalArray("W", "out", ("M",)), S.GlobalArray("W", "in", ("M",))
    c = S.GlobalArray("C", "out", ("M",))
    first, second = _kernel("first", (a, w_out)), _kernel("second", (w_in, c))
    scratch = (S.GlobalArray("W", "out", ("M",)),)
    KernelSequence("demo", (first, second), (a, c), scratch)   # valid
    with pytest.raises(ScheduleError, match="before any kernel wrote it"):
        KernelSequence("demo", (second, first), (a, c), scratch)
    with pytest.raises(ScheduleError, match="neither an argument nor scratch"):
        KernelSequence("demo", (first, second), (a, c))
    with pytest.raises(ScheduleError, match="no kernel writes output 'C'"):
        KernelSequence("demo", (first,), (a, c), scratch)
    with pytest.raises(ScheduleError, match="has M = 8, an earlier kernel M = 4"):
        KernelSequence("demo", (first, _kernel("second", (w_in, c), params=(("M", 8),))),
                       (a, c), scratch)
    with pytest.raises(ScheduleError, match="shape"):
        KernelSequence("demo", (first, second), (a, c), (S.GlobalArray("W", "out", ("N",)),))
    with pytest.raises(ScheduleError, match="writes 'A', an input"):
        KernelSequence("demo", (_kernel("w", (S.GlobalArray("A", "out", ("M",)),)), second),
                       (a, c), scratch)


def test_a_fault_in_the_second_kernel_is_found():
    # the reduction reads one partial too many: C_partial[S] is out of bounds
    seq = build("gemm-split-k", 8, 64, 8, splits=2, **SMALL)
    good = seq.kernels[1]
    loop = good.body[2].then[-2]
    broken_loop = S.For(loop.var, loop.start, loop.stop + 1, loop.step, loop.body)
    then = good.body[2].then[:-2] + (broken_loop,) + good.body[2].then[-1:]
    broken = S.Schedule(**{**good.__dict__, "body": good.body[:2] + (
        S.If(good.body[2].cond, then, good.body[2].orelse),)})
    faulty = KernelSequence(seq.family, (seq.kernels[0], broken), seq.arrays, seq.scratch)
    found = check_launch(faulty).hazards
    assert {h.kind for h in found} == {"out-of-bounds"}
    assert not check_launch(seq).hazards


def test_add_counts_adds_every_count_and_keeps_the_busiest_tile():
    seq = build("gemm-split-k", 20, 64, 16, splits=2, **SMALL)
    parts = [simulate_kernel(k, compute_values=False).counts for k in seq.kernels]
    total = add_counts(parts)
    assert total.flop == parts[0].flop + parts[1].flop
    assert total.global_load_elems_per_tile == max(p.global_load_elems_per_tile for p in parts)
    assert total.global_load_elems_by_buffer["C_partial"] == \
        parts[1].global_load_elems_by_buffer["C_partial"]


def test_the_model_of_a_sequence_is_the_sum_of_its_kernels():
    seq = build("gemm-split-k", 128, 1024, 512, splits=4, tile=16, wg_rows=8, tm=8, tn=4,
                bk=32)
    model = device_model("nvidia-h200")
    whole = model_sequence(seq, model, registers_per_work_item=[128, None])
    parts = [model_launch(k, model, registers_per_work_item=r)
             for k, r in zip(seq.kernels, (128, None))]
    assert whole.prediction.predicted_time_s == pytest.approx(
        sum(p.prediction.predicted_time_s for p in parts), rel=1e-12)
    assert whole.memory.global_load_sectors == sum(p.memory.global_load_sectors for p in parts)
    assert whole.prediction.bound == max(parts, key=lambda p: p.prediction.predicted_time_s
                                         ).prediction.bound
    assert "sum of 2 kernels" in whole.prediction.methods["predicted_time_s"]
    assert json.loads(json.dumps(whole.to_dict()))["kernels"][1]["flop"] == parts[1].counts.flop
    assert registers_of(seq, 96) == [96, None] and registers_of(seq.kernels[0], 96) == [96]
    with pytest.raises(ValueError, match="3 register counts for 2 kernel"):
        registers_of(seq, [1, 2, 3])


def test_kernels_of_a_schedule_is_itself():
    sch = build("gemm-warp-tiled", 16, 16, 16, tile=8, wg_rows=4, tm=4, tn=4, bk=8)
    assert kernels_of(sch) == (sch,)


def test_the_tuning_space_tries_split_k_only_with_few_blocks():
    from tiletraffic.analysis.tune.tuner import screen
    from tiletraffic.analysis.tune.space import load_space
    from tiletraffic.simulator.engine.limits import GENERIC_GPU

    space = load_space()
    few, _ = screen(space, 128, 4096, 1024, GENERIC_GPU)
    many, rejected = screen(space, 4096, 4096, 4096, GENERIC_GPU)
    assert any(c.family == "gemm-split-k" for c, _ in few)
    assert not any(c.family == "gemm-split-k" for c, _ in many)
    assert any("split_k_max_blocks" in " ".join(r["reasons"]) for r in rejected
               if r["family"] == "gemm-split-k")


ARGS = ("gemm-split-k", "--m", "37", "--k", "200", "--n", "44", "--tile", "8",
        "--splits", "3")


@pytest.mark.parametrize("command", ["simulate", "check", "model"])
def test_cli_commands_take_a_split_k_gemm(command):
    res = CliRunner().invoke(main, [command, *ARGS])
    assert res.exit_code == 0, res.output
    assert "S=3" in res.output


def test_cli_simulate_json_lists_both_kernels():
    res = CliRunner().invoke(main, ["simulate", *ARGS, "--json"])
    doc = json.loads(res.output)
    assert [k["kernel"] for k in doc["kernels"]] == ["gemm_split_k_slices",
                                                      "gemm_split_k_reduce"]
    assert doc["closed_form_agrees"] is True and doc["result_error_over_tolerance"] <= 1


def test_cli_refuses_bad_splits_with_one_line():
    res = CliRunner().invoke(main, ["simulate", "gemm-split-k", "--m", "16", "--k", "40",
                                    "--n", "16", "--tile", "8", "--bk", "8", "--splits", "9"])
    assert res.exit_code == 2
    assert "choose 5 (the nearest" in res.output and "Traceback" not in res.output


def test_runs_on_pocl_as_one_checked_launch():
    from tiletraffic.gpu.devices.device import list_devices, select_device
    from tiletraffic.gpu.runtime.checked_run import run_on_device

    if not any(d.is_pocl for d in list_devices()):
        pytest.skip("PoCL is not installed (pip install pocl-binary-distribution)")
    seq = build("gemm-split-k", 37, 200, 44, splits=3, tile=8)
    run = run_on_device(select_device("pocl"), seq, repeat=10, warmup=1,
                        rng=np.random.default_rng(3))
    assert run.check.ok and run.check.k == check_launch(seq).sum_length
    assert run.run.kernel_name == "gemm_split_k_slices+gemm_split_k_reduce"
    assert len(run.run.kernel_resources) == 2 and len(run.run.kernel_times_s) == 10
    assert set(run.run.outputs) == {"C"}


@pytest.mark.parametrize("m,k,n,splits", [(100, 1000, 200, 3), (37, 516, 44, 2)])
def test_k_extrapolation_of_the_slices_equals_executing_every_step(m, k, n, splits):
    # the slice kernel's K grows by S·BK per step of every slice: three short K give its
    # counts exactly, on both H200 models (one merges local loads, one does not)
    from tiletraffic.simulator.engine.accelerators import ALL
    from tiletraffic.simulator.engine.accelerators import k_extrapolation

    seq = build("gemm-split-k", m, k, n, splits=splits, tile=8, wg_rows=8, tm=4, tn=4, bk=16)
    assert k_extrapolation.k_step_elems(seq.kernels[0]) == 16 * splits
    for name in ("nvidia-h200", "nvidia-h200-cuda"):
        model = device_model(name)
        fast = model_sequence(seq, model, registers_per_work_item=[64, None])
        full = model_sequence(seq, model, registers_per_work_item=[64, None],
                              accelerators=ALL.replace(k_extrapolation=False))
        assert k_extrapolation.applies(seq.kernels[0], model.local_vector_words)
        assert fast.counts == full.counts and fast.memory == full.memory
        assert fast.prediction.predicted_time_s == full.prediction.predicted_time_s


def test_more_contract_breaks_are_refused():
    seq = build("gemm-split-k", 37, 200, 44, splits=3, tile=8)
    extra = S.GlobalArray("D", "in", ("Q", "N"))
    with pytest.raises(ScheduleError, match=r"no kernel has the size parameter\(s\) Q"):
        KernelSequence("x", seq.kernels, seq.arrays + (extra,), seq.scratch)
    reduce = seq.kernels[1]
    reads_c = S.Schedule(**{**reduce.__dict__, "arrays": (
        reduce.arrays[0], S.GlobalArray("C", "inout", ("M", "N")))})
    with pytest.raises(ScheduleError, match="reads output 'C' before any kernel wrote it"):
        KernelSequence("x", (seq.kernels[0], reads_c), seq.arrays, seq.scratch)


def test_one_k_step_is_refused_and_only_valid_splits_are_suggested():
    with pytest.raises(ScheduleError, match="needs at least 2 K steps to split, got K = 16"):
        build("gemm-split-k", 1, 16, 4, splits=2)
    assert nearest_splits(3, 2) == [3] and nearest_splits(5, 4) == [3, 5]


def test_a_users_file_may_return_a_sequence(tmp_path):
    path = tmp_path / "seq.py"
    path.write_text("import dataclasses\nimport tiletraffic as tt\n\n"
                    "def seq(m, k, n, tile=None):\n"
                    "    s = tt.build('gemm-split-k', m=m, k=k, n=n, splits=2, tile=8)\n"
                    "    return dataclasses.replace(s, family='my-split')\n")
    res = CliRunner().invoke(main, ["simulate", f"{path}:seq", "--m", "20", "--k", "64",
                                    "--n", "16", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["schedule"] == "my-split"


def test_explain_names_the_sizes_whose_product_is_too_large(tmp_path):
    res = CliRunner().invoke(main, ["explain", "gemm-split-k", "--m", "37", "--k", "64",
                                    "--n", "44", "--splits", "2", "--kernel", "2",
                                    "--out", str(tmp_path / "x.html")])
    assert res.exit_code == 2
    assert "use --splits and --m whose product (S x M) is at most 64" in res.output


def test_check_with_an_option_and_sizes_builds_what_simulate_builds():
    for command in ("check", "simulate"):
        res = CliRunner().invoke(main, [command, "gemm-split-k", "--m", "37", "--k", "200",
                                        "--n", "44", "--splits", "3"])
        assert res.exit_code == 0 and "tile=16" in res.output, res.output
