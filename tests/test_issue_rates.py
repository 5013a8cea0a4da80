"""The issue-rate table: its file form and checks, its interpolation (hand values), the
calibrate benchmark that measures it (its arithmetic by hand, its kernels on PoCL, the
refusal of a rate above one per scheduler)."""
import math
import warnings

import numpy as np
import pytest

from tiletraffic.analysis.calibrate import calibrate as cal
from tiletraffic.analysis.calibrate.issue_rate import measure_issue_rates, mix_rate
from tiletraffic.simulator.model.device_model import (DEVICE_MODELS, GENERIC_GPU_MODEL,
                                                      DeviceModelError, ValueSource,
                                                      read_device_model, to_toml)
from tiletraffic.simulator.model.issue_rates import IssueRates, issue_rates_from_table

TABLE = {"warps_per_scheduler": [1, 2, 3, 4, 8], "local_128": [0.4, 0.6, 0.7, 0.8, 0.9],
         "local_32": [0.5, 0.7, 0.8, 0.85, 0.95]}


def _rates() -> IssueRates:
    problems = []
    rates = issue_rates_from_table(TABLE, problems)
    assert problems == []
    return rates


def test_the_rate_is_linear_between_points_and_held_outside_them():
    rates = _rates()
    assert rates.rate(2, 1.0) == pytest.approx(0.6)
    assert rates.rate(2.5, 1.0) == pytest.approx(0.65)        # halfway from 0.6 to 0.7
    assert rates.rate(6, 1.0) == pytest.approx(0.85)          # halfway from 0.8 (4) to 0.9 (8)
    assert rates.rate(0.5, 1.0) == 0.4 and rates.rate(16, 1.0) == 0.9
    assert rates.rate(2, 0.0) == pytest.approx(0.7)           # the 32-bit column
    # a quarter of the local loads 128-bit: 0.25 x 0.6 + 0.75 x 0.7
    assert rates.rate(2, 0.25) == pytest.approx(0.675)
    assert rates.largest == 0.95


def test_a_model_file_keeps_the_table_with_its_source_and_a_file_without_it_has_none():
    base = DEVICE_MODELS["nvidia-h200-calibrated"]
    assert base.issue_rates is None and "issue_rates" not in to_toml(base)
    source = ValueSource("measured", "TT-TERMS", "issue_rate: 0.95 instructions/cycle")
    model = base.with_values({"issue_rates": (TABLE, source)})
    text = to_toml(model)
    back = read_device_model(text, "x.toml")
    assert back == model and back.issue_rates == _rates()
    assert back.value_sources["issue_rates"] == source and "issue_rates" not in back.guessed
    # a table set without a source is written as a guess, not dropped
    from dataclasses import replace
    bare = replace(base, issue_rates=_rates())
    assert read_device_model(to_toml(bare), "y.toml").issue_rates == _rates()


@pytest.mark.parametrize("table, message", [
    ({**TABLE, "warps_per_scheduler": [2, 1, 3, 4, 8]}, "warps_per_scheduler: must be ascending"),
    ({**TABLE, "local_32": [0.5, 0.7]}, "must be lists of one length, got 5, 5, 2"),
    ({**TABLE, "local_128": [0.4, -0.6, 0.7, 0.8, 0.9]}, "local_128: must be a non-empty list "
     "of positive finite numbers, got -0.6 (element 2)"),
    ({**TABLE, "local_32": ["true", 0.7, 0.8, 0.85, 0.95]}, "local_32: must be a non-empty "
     "list of positive finite numbers, got true (element 1)"),
    ({**TABLE, "warps_per_scheduler": [1, 2, 3, 4, "inf"]}, "warps_per_scheduler: must be a "
     "non-empty list of positive finite numbers, got inf (element 5)"),
    ({**TABLE, "local_32": []}, "local_32: must be a non-empty list of positive finite "
     "numbers, got an empty list"),
    ({k: v for k, v in TABLE.items() if k != "local_32"}, "local_32: must be a non-empty list "
     "of positive finite numbers, got nothing (the key is missing)"),
    ({**TABLE, "fp64": [1]}, "unknown key(s) 'fp64'"),
    (0.9, "must be a table with warps_per_scheduler, local_128, local_32, got 0.9"),
])
def test_a_malformed_table_is_refused_naming_the_key(table, message):
    text = to_toml(DEVICE_MODELS["nvidia-h200-calibrated"]) + (
        "\n[values.issue_rates]\nvalue = " + _toml(table) + '\nsource = "guessed"\nref = "x"\n')
    with pytest.raises(DeviceModelError, match="values.issue_rates.value") as err:
        read_device_model(text, "x.toml")
    assert message in str(err.value) and "\n" not in str(err.value)


def _toml(value) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(map(str, value)) + "]"
    return str(value)


def test_mix_rate_by_hand():
    # 8 sub-groups x 548 instructions in 2.5 us at 1.98 GHz on 4 schedulers
    assert mix_rate(8, 548, 2.5e-6, 1.98e9, 4) == pytest.approx(4384 / (4950 * 4))
    # one sub-group per scheduler issuing every other cycle: 0.5
    assert mix_rate(4, 1000, 2000 / 1e9, 1e9, 4) == pytest.approx(0.5)


def test_a_table_above_one_instruction_per_scheduler_is_refused_naming_the_benchmark():
    table = IssueRates((1.0, 2.0), (0.7, 1.12), (0.8, 0.9))
    m = cal.Measurement("issue_rate", "injected", table.largest, "instructions/cycle",
                        "issue_rates", table)
    (refused,) = cal.refuse_impossible([m], GENERIC_GPU_MODEL)
    assert refused.field is None and refused.refused.startswith(
        "issue_rate: issue_rates (its largest rate) = 1.12 is above what the hardware can "
        "do, 1 (one warp instruction per cycle per scheduler); not written to the model")
    kept = cal.Measurement("issue_rate", "injected", 0.9, "instructions/cycle",
                           "issue_rates", IssueRates((1.0, 2.0), (0.7, 0.9), (0.8, 0.9)))
    assert cal.refuse_impossible([kept], GENERIC_GPU_MODEL) == [kept]
    model = cal.calibrated_model(GENERIC_GPU_MODEL, [kept], "a device")
    assert model.issue_rates == kept.field_value
    assert model.value_sources["issue_rates"].ref.startswith("tiletraffic calibrate: issue_rate")


def test_the_issue_mix_kernels_check_their_result_on_pocl(monkeypatch):
    from tiletraffic.gpu.devices import microbench as mb
    from tiletraffic.gpu.devices.device import list_devices, select_device
    found = [d for d in list_devices() if d.is_pocl]
    if not found:
        pytest.skip("no PoCL device")
    target = select_device(found[0].id)
    for vector in (True, False):
        times = mb.issue_mix(target, 2, 64, 2, 1, vector)
        assert len(times) == 1 and times[0] > 0
    # lane 0 (lr = lc = 0), 32-bit: A words 0, 4, .., 28 and B words 0, 8, .., 56 of row kk
    a = lambda kk, c: ((3 * (32 * kk + c) + 1) & 3) / 4              # noqa: E731
    b = lambda kk, c: ((5 * (64 * kk + c) + 2) & 3) / 4              # noqa: E731
    by_hand = sum(a(kk, 4 * i) * b(kk, 8 * j)
                  for kk in range(8) for i in range(8) for j in range(8))
    assert mb.issue_mix_sums(3, False)[0] == 3 * by_hand
    # lane 9 (lr = 1, lc = 1), 128-bit: A floats 4..7 and 20..23, B floats 4..7 and 36..39
    by_hand = sum(a(kk, c) * b(kk, d) for kk in range(8)
                  for c in (4, 5, 6, 7, 20, 21, 22, 23) for d in (4, 5, 6, 7, 36, 37, 38, 39))
    assert mb.issue_mix_sums(1, True)[9] == by_hand
    # per step: 8 depths x (4 float4 or 16 scalar loads + 64 FMAs) + barrier + 3 loop
    assert mb.ISSUE_MIX_INSTRUCTIONS_PER_STEP == {"local_128": 548, "local_32": 644}
    with pytest.raises(ValueError, match="issue_mix_32"):
        mb.issue_mix(target, 2, 48, 2, 1, False)
    monkeypatch.setattr(mb, "issue_mix_sums", lambda steps, vector: np.zeros(32))
    with pytest.raises(mb.MicrobenchResultError, match="issue_mix_128"):
        mb.issue_mix(target, 2, 64, 2, 1, True)
    # a device error leaves the table unset with the reason; the other values stand
    m = measure_issue_rates(target, GENERIC_GPU_MODEL, 2, 1)
    assert m.field is None and math.isnan(m.value)
    assert m.why_unmapped.startswith("the benchmark did not run: microbenchmark issue_mix_128")


# ---------------------------------------------------------------- the model's issue term

def _launch(family, m, k, n, model, **options):
    import tiletraffic as tt
    from tiletraffic.simulator.model.launch import model_launch

    schedule = tt.build(family, m=m, k=k, n=n, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return schedule, model_launch(schedule, model, registers_per_work_item=64)


def test_the_issue_term_uses_the_table_at_the_launch_s_sub_groups_per_scheduler():
    from tiletraffic.simulator.model.instruction_estimate import estimate_extra
    from tiletraffic.simulator.model.issue_term import (sub_groups_per_scheduler,
                                                        vector_local_share)
    from tiletraffic.simulator.model.prediction import issued_instructions

    base = DEVICE_MODELS["nvidia-h200-calibrated"]
    table = base.with_values({"issue_rates": (TABLE, ValueSource("guessed", "test"))})
    # gemm-tiled 64^3, tile 16: 16 work-groups of 256 (8 sub-groups) on 132 units: one per
    # unit, 8 / 4 = 2 sub-groups per scheduler; scalar local loads: the 32-bit column, 0.7
    schedule, plain = _launch("gemm-tiled", 64, 64, 64, base, tile=16)
    _, tabled = _launch("gemm-tiled", 64, 64, 64, table, tile=16)
    assert vector_local_share(schedule) == 0.0
    assert sub_groups_per_scheduler(schedule, table, 1) == 2.0
    counted = issued_instructions(schedule, plain.counts, plain.memory, base)
    # without a table: today's term, the counted instructions at the one rate
    rate = base.warp_instructions_per_cycle_per_sub_partition
    assert plain.prediction.time_terms_s["issue_s"] == pytest.approx(
        counted / 16 / (1.98e9 * 4 * rate))
    assert "issue_s" not in plain.prediction.methods
    # with it: + 16 x 8 sub-groups x the estimate per sub-group, at 0.7 per cycle
    extra = estimate_extra(schedule).total
    assert tabled.prediction.time_terms_s["issue_s"] == pytest.approx(
        (counted + 128 * extra) / 16 / (1.98e9 * 4 * 0.7))
    assert tabled.prediction.methods["issue_s"].endswith(
        "at the measured rate for 2 sub-groups per scheduler and 0% 128-bit local loads: "
        "0.7 per cycle (issue_rates)")


def test_the_issue_term_of_vector_local_loads_reads_the_128_bit_column():
    from tiletraffic.simulator.model.issue_term import vector_local_share

    table = DEVICE_MODELS["nvidia-h200-calibrated"].with_values(
        {"issue_rates": (TABLE, ValueSource("guessed", "test"))})
    # warp-tiled 8x8 at 256^3, tile 16, 8 rows: blocks of 64 x 128, 8 work-groups of 128
    # (4 sub-groups), one per unit: 1 sub-group per scheduler; every local load a float4: 0.4
    schedule, launch = _launch("gemm-warp-tiled", 256, 256, 256, table, tile=16, tm=8, tn=8,
                               bk=16, wg_rows=8)
    assert schedule.work_group_items == 128 and launch.counts.work_groups == 8
    assert vector_local_share(schedule) == 1.0
    assert "for 1 sub-groups per scheduler and 100% 128-bit local loads: 0.4 per cycle" in \
        launch.prediction.methods["issue_s"]


def test_the_model_command_says_the_issue_term_took_the_table(tmp_path):
    from click.testing import CliRunner

    from tiletraffic.analysis.cli import main

    path = tmp_path / "m.toml"
    path.write_text(to_toml(DEVICE_MODELS["nvidia-h200-calibrated"].with_values(
        {"issue_rates": (TABLE, ValueSource("guessed", "test"))})))
    args = ["model", "gemm-tiled", "--m", "64", "--k", "64", "--n", "64"]
    res = CliRunner().invoke(main, [*args, "--device-model", str(path)])
    assert res.exit_code == 0, res.output
    assert "(instructions: FMAs, requests, barriers + estimated rest, at the measured rate " \
        "of its sub-groups per scheduler)" in res.output
    res = CliRunner().invoke(main, [*args, "--device-model", "nvidia-h200-calibrated"])
    assert "(instructions: FMAs, requests, barriers)" in res.output


def test_a_work_group_too_large_for_the_kernel_drops_its_point_and_keeps_the_others(
        monkeypatch):
    """A kernel of many registers does not launch at the device's largest work-group (8
    sub-groups per scheduler of 4: 1024 work-items): that point is left out of the table
    (said in the detail), the smaller ones are measured; the OpenCL error is not raised."""
    import dataclasses

    import pyopencl as cl

    from tiletraffic.gpu.devices import microbench as mb
    from tiletraffic.gpu.devices.device import list_devices, select_device
    found = [d for d in list_devices() if d.is_pocl]
    if not found:
        pytest.skip("no PoCL device")
    target = select_device(found[0].id)
    real_time = mb._time

    def time_or_refuse(target, kernel, global_size, local, args, repeat, warmup=1):
        # the kernel runs (its result is checked), timed by a clock linear in its steps
        # (its second argument), so that the dropped point and not the host's timing
        # noise decides the table
        if local > 256:
            raise cl.RuntimeError("clEnqueueNDRangeKernel failed: OUT_OF_RESOURCES")
        real_time(target, kernel, global_size, local, args, repeat, warmup)
        return [1e-6 * (1 + int(args[1]))] * repeat

    monkeypatch.setattr(mb, "_time", time_or_refuse)
    base = dataclasses.replace(GENERIC_GPU_MODEL, compute_units=2)
    with pytest.raises(mb.MicrobenchLaunchError, match=r"issue_mix_32: 384 work-items per "
                       r"work-group did not launch on .*OUT_OF_RESOURCES"):
        mb.issue_mix(target, 2, 384, 2, 1, False)
    m = measure_issue_rates(target, base, 2, 1)
    assert m.field == "issue_rates" and m.field_value.warps_per_scheduler == (1.0, 2.0)
    assert "3 sub-groups per scheduler (384 work-items) did not launch" in m.detail
    # fewer than two points launch: unset, saying why
    monkeypatch.setattr(mb, "_time", lambda *a, **k: (_ for _ in ()).throw(
        cl.RuntimeError("clEnqueueNDRangeKernel failed: OUT_OF_RESOURCES")))
    m = measure_issue_rates(target, base, 2, 1)
    assert m.field is None and "1 sub-groups per scheduler (128 work-items) did not " \
        "launch" in m.why_unmapped and "\n" not in m.why_unmapped
