"""`tiletraffic calibrate`: benchmark arithmetic, sizes, the pointer-chase permutation, and a
quick calibration of the PoCL CPU device whose file simulate reads."""
import dataclasses
import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from tiletraffic.analysis.calibrate import calibrate as cal
from tiletraffic.analysis.cli import main
from tiletraffic.simulator.model.device_model import (GENERIC_GPU_MODEL, ValueSource,
                                                      load_device_model, read_device_model,
                                                      to_toml)

MIB = 2**20


def _pocl_target():
    from tiletraffic.gpu.devices.device import list_devices, select_device
    found = [d for d in list_devices() if d.is_pocl]
    if not found:
        pytest.skip("no PoCL device")
    return select_device(found[0].id)


# ---------------------------------------------------------------- arithmetic, by hand

def test_bandwidth_is_bytes_over_seconds():
    assert cal.bytes_per_s(256 * MIB, 0.1) == pytest.approx(2684354560.0)   # 268435456/0.1
    # l2_read: 8 passes over 256 KiB in 1 ms = 2 MiB / 1e-3 s
    assert cal.bytes_per_s(8 * 256 * 1024, 1e-3) == pytest.approx(2097152000.0)


def test_fma_rate_counts_two_flop_per_fma():
    # 512 work-items x 2048 FMAs x 2 flop = 2097152 flop in 1 ms
    assert cal.fma_flop_per_s(512, 2048, 1e-3) == pytest.approx(2.097152e9)


def test_latency_is_the_difference_per_extra_step():
    # 20000 more loads took 0.9 ms - 0.5 ms = 0.4 ms: 20 ns each; the launch cancels
    assert cal.per_step_s(0.9e-3, 0.5e-3, 20000) == pytest.approx(20e-9)


def test_barrier_cost_is_per_work_group_on_one_compute_unit():
    # 100 more barriers took 40 us; 8 work-groups on 2 compute units (4 after another on
    # each): 40e-6 / 100 * 2 / 8 = 1e-7 s per barrier of one work-group
    assert cal.barrier_s_per_work_group(90e-6, 50e-6, 100, 8, 2) == pytest.approx(1e-7)
    # fewer work-groups than compute units: each one alone on its unit
    assert cal.barrier_s_per_work_group(90e-6, 50e-6, 100, 2, 8) == pytest.approx(4e-7)


def test_local_bandwidth_and_barrier_in_l1_wavefronts():
    # 132 units x 1.98e9 Hz x 128 B = 33.45408e12 B/s at one wavefront per cycle
    assert cal.l1_wavefronts_per_cycle(33.45408e12, 132, 1.98e9, 128) == pytest.approx(1.0)
    assert cal.l1_wavefronts_per_cycle(16.72704e12, 132, 1.98e9, 128) == pytest.approx(0.5)
    # one unit serves 33.45408e12 / 132 / 128 = 1.98e9 wavefronts/s; 2.02 ns of it = 4.0
    assert cal.barrier_wavefronts(2.02e-9, 33.45408e12, 132, 128) == 4
    assert cal.barrier_wavefronts(0.2e-9, 33.45408e12, 132, 128) == 0


# ---------------------------------------------------------------- sizes and guard

def test_sizes_follow_the_queried_l2_and_refuse_a_small_device():
    s = cal.plan_sizes(132, 60 * MIB, 141 * 2**30, 35 * 2**30, 48 * 1024, 256, quick=False)
    assert s.dram_bytes == 480 * MIB and s.l2_footprint_bytes == 30 * MIB
    assert s.l2_passes == 16 and s.chase_elems == 120 * MIB
    assert s.stream_work_items == 132 * 2048 and s.work_groups == 528
    small = cal.plan_sizes(4, 1 * MIB, 8 * 2**30, 2**30, 48 * 1024, 256, quick=False)
    assert small.dram_bytes == 256 * MIB          # at least 256 MiB
    with pytest.raises(cal.CalibrationError, match=r"503316480 bytes.*\b268435456 bytes"):
        cal.plan_sizes(132, 60 * MIB, 2**30, 2**30, 48 * 1024, 256, quick=False)
    with pytest.raises(cal.CalibrationError, match=r"16384 bytes of local memory.*8192"):
        cal.plan_sizes(4, MIB, 2**30, 2**30, 8192, 256, quick=True)


# ---------------------------------------------------------------- pointer chase

@pytest.mark.parametrize("n", [2, 3, 1000, 65537])
def test_chase_permutation_is_one_cycle_over_the_buffer(n):
    from tiletraffic.gpu.devices.microbench import chase_end, chase_permutation
    nxt = chase_permutation(n, seed=n)
    assert nxt.dtype == np.uint32 and sorted(nxt.tolist()) == list(range(n))
    seen, j = set(), 0
    for _ in range(n):
        seen.add(j)
        j = int(nxt[j])
    assert j == 0 and len(seen) == n          # back at 0 after exactly n loads, all visited
    assert chase_end(nxt, n) == 0 and chase_end(nxt, 1) == int(nxt[0])
    with pytest.raises(ValueError, match="n = 1"):
        chase_permutation(1)


# ---------------------------------------------------------------- model assembly

def test_calibrated_model_marks_measured_values_and_keeps_the_rest():
    ms = [cal.Measurement("dram_read", "stream of 8 MiB, median of 3", 5e9, "B/s",
                          "dram_bytes_per_s", 5e9),
          cal.Measurement("dram_write", "stream of 8 MiB, median of 3", 2e9, "B/s")]
    model = cal.calibrated_model(GENERIC_GPU_MODEL, ms, "a device")
    key = "tiletraffic calibrate: dram_read (stream of 8 MiB, median of 3)"
    assert model.dram_bytes_per_s == 5e9
    assert model.value_sources["dram_bytes_per_s"] == ValueSource("measured", key,
                                                                   "dram_read: 5e+09 B/s")
    assert "dram_bytes_per_s" not in model.guessed and "l2_bytes_per_s" in model.guessed
    assert model.l2_bytes_per_s == GENERIC_GPU_MODEL.l2_bytes_per_s
    back = read_device_model(to_toml(model), "t")    # long quoted [references] keys
    assert back == model and back.value_sources == model.value_sources


# ---------------------------------------------------------------- on PoCL

def test_a_wrong_result_is_refused(monkeypatch):
    from tiletraffic.gpu.devices import microbench as mb
    target = _pocl_target()
    nxt = mb.chase_permutation(1024)
    assert len(mb.pointer_chase(target, nxt, 100, 1)) == 1
    monkeypatch.setattr(mb, "chase_end", lambda nxt, steps: -1)
    with pytest.raises(mb.MicrobenchResultError, match="pointer_chase"):
        mb.pointer_chase(target, nxt, 100, 1)


def test_staging_round_trip_checks_its_result_and_its_sizes(monkeypatch):
    from tiletraffic.gpu.devices import microbench as mb
    target = _pocl_target()
    times = mb.staging_round_trip(target, 64 * 1024, 50, 2, 2)
    assert len(times) == 2 and all(t > 0 for t in times)
    for nbytes, steps in ((48 * 1024, 50), (64 * 1024, 0), (8, 5)):
        with pytest.raises(ValueError, match="staging_round_trip"):
            mb.staging_round_trip(target, nbytes, steps, 2, 1)
    monkeypatch.setattr(mb, "_read", lambda target, buf, shape, dtype=None:
                        np.arange(shape, dtype=np.float32))   # not 4 x steps everywhere
    with pytest.raises(mb.MicrobenchResultError, match="staging_round_trip"):
        mb.staging_round_trip(target, 64 * 1024, 50, 2, 1)


def test_strided_read_checks_its_result_and_its_sizes(monkeypatch):
    from tiletraffic.gpu.devices import microbench as mb
    target = _pocl_target()
    times = mb.strided_read(target, 129, 64, 2, 2)
    assert len(times) == 2 and all(t > 0 for t in times)
    # row 1 of stride 3, length 4: words 3..6 hold 4, 5, 6, 7
    assert mb.strided_rows_sum(3, 4, 2).tolist() == [1 + 2 + 3 + 4, 4 + 5 + 6 + 7]
    for stride, length in ((129, 63), (129, 0), (32, 64)):
        with pytest.raises(ValueError, match="strided_read"):
            mb.strided_read(target, stride, length, 2, 1)
    monkeypatch.setattr(mb, "strided_rows_sum", lambda *a: np.zeros(a[2]))
    with pytest.raises(mb.MicrobenchResultError, match="strided_read"):
        mb.strided_read(target, 129, 64, 2, 1)


def test_register_tile_checks_its_result_and_counts_instructions_as_the_model(monkeypatch):
    from tiletraffic.gpu.devices import microbench as mb
    target = _pocl_target()
    times = mb.register_tile(target, 4, 2, 2)
    assert len(times) == 2 and all(t > 0 for t in times)
    # work-item (lx, ly) = (0, 0): rows 0, 16, ..., 112 of At times columns 0, 16, ... of Bt
    at = lambda r, c: ((r + c) & 3) / 4                                    # noqa: E731
    bt = lambda r, c: ((r + 2 * c) & 3) / 4                                # noqa: E731
    by_hand = sum(at(16 * i, kk) * bt(kk, 16 * j)
                  for i in range(8) for j in range(8) for kk in range(8))
    assert mb.register_tile_sums(3)[0, 0] == 3 * by_hand
    # per step: 8 kk x (8 + 8 local loads + 64 FMAs) + 1 barrier
    assert mb.REGISTER_TILE_INSTRUCTIONS_PER_STEP == 641
    with pytest.raises(ValueError, match="register_tile"):
        mb.register_tile(target, 0, 2, 1)
    monkeypatch.setattr(mb, "register_tile_sums", lambda steps: np.zeros((16, 16)))
    with pytest.raises(mb.MicrobenchResultError, match="register_tile"):
        mb.register_tile(target, 4, 2, 1)


def test_issue_rate_is_instructions_per_cycle_per_scheduler():
    # 2 x 132 x 4 schedulers x 1e9 cycles' worth in 1 s at 1 GHz: 2 per cycle per scheduler
    assert cal.issue_rate(2 * 132 * 4 * 1e9, 1.0, 1e9, 132, 4) == pytest.approx(2.0)


def test_distinct_banks_and_the_strided_fit_by_hand():
    # row strides 4096 + d words: 32 lanes' words in 32 / gcd(d, 32) banks
    assert [cal.distinct_banks(d) for d in cal.STRIDE_OFFSETS_WORDS] == [1, 2, 4, 8, 16, 32]
    assert cal.distinct_banks(3) == 32 and cal.distinct_banks(24) == 4
    assert cal.distinct_banks(1, lanes=8) == 8                  # at most one bank per lane
    # cycles = 0.5 x 32 lines + 0.75 x busiest: exact for every stride -> the same two costs
    busiest = [32, 16, 8, 4, 2, 1]
    cycles = [0.5 * 32 + 0.75 * b for b in busiest]
    assert cal.strided_fit(32, busiest, cycles) == pytest.approx((0.5, 0.75))
    # noise on two points: least squares, between them
    a, b = cal.strided_fit(32, [32, 1], [41.0, 17.0])
    assert a * 32 + b * 32 == pytest.approx(41.0) and a * 32 + b == pytest.approx(17.0)
    for bad in (([32], [40.0]), ([8, 8], [20.0, 21.0]), ([32, 1], [40.0])):
        with pytest.raises(ValueError, match="strided fit"):
            cal.strided_fit(32, *bad)


def test_staging_footprint_is_the_largest_power_of_two_in_half_the_l2():
    sizes = cal.plan_sizes(132, 60 * 2**20, 140 * 2**30, 35 * 2**30, 48 * 1024, 256, False)
    assert sizes.staging_bytes == 16 * 2**20 and sizes.staging_steps == 20_000
    # the DRAM round trip: the largest power of two within dram_read's 480 MiB (8 x the L2)
    assert sizes.dram_bytes == 480 * 2**20 and sizes.staging_dram_bytes == 256 * 2**20
    quick = cal.plan_sizes(2, 4 * 2**20, 16 * 2**30, 4 * 2**30, 64 * 1024, 256, True)
    assert quick.staging_bytes == 256 * 1024


def test_quick_calibration_on_pocl_writes_a_model_simulate_uses(pocl_model):
    # pocl_model: conftest's `calibrate --quick --device pocl` (exit 0), run once per test run
    target = _pocl_target()
    out = pocl_model
    runner = CliRunner()
    model = load_device_model(out)
    measured = {k: s for k, s in model.value_sources.items() if s.kind == "measured"}
    assert {"dram_bytes_per_s", "l2_bytes_per_s", "l1_wavefronts_per_cycle_per_cu",
            "fp32_flop_per_s", "launch_overhead_s"} <= set(measured)
    assert set(measured) <= {"dram_bytes_per_s", "l2_bytes_per_s", "fp32_flop_per_s", "l2_bytes",
                             "l1_wavefronts_per_cycle_per_cu", "memory_latency_s",
                             "launch_overhead_s", "barrier_wavefronts_per_work_group",
                             "l2_bytes", "l1_strided_cycles_per_line",
                             "l1_strided_cycles_per_busiest_bank_line",
                             "warp_instructions_per_cycle_per_sub_partition",
                             "memory_latency_dram_s",
                             "strided_dram_fill_sub_group_cycles_per_line", "issue_rates"}
    for key, source in measured.items():
        value = getattr(model, key)
        value = value.largest if key == "issue_rates" else value
        assert value > 0 and math.isfinite(value), key
        assert source.ref.startswith("tiletraffic calibrate: ") and source.ref in \
            model.references
    assert model.value_sources["compute_units"].kind == "queried"
    assert model.compute_units == target.info.compute_units
    res = runner.invoke(main, ["simulate", "matvec-naive", "--m", "64", "--k", "64",
                               "--device-model", str(out), "--json"])
    assert res.exit_code == 0, res.output
    predicted = json.loads(res.stdout)
    assert predicted["time_terms_s"]["launch_overhead_s"] == model.launch_overhead_s
    assert predicted["predicted_time_s"] > 0


def test_cli_refuses_a_device_too_small_with_one_line(monkeypatch):
    _pocl_target()

    def too_small(*args, **kwargs):
        raise cal.CalibrationError("dram_read needs one buffer of 503316480 bytes, more "
                                   "than this device allows (268435456 bytes)")
    monkeypatch.setattr(cal, "plan_sizes", too_small)
    res = CliRunner().invoke(main, ["calibrate", "--quick", "--device", "pocl"])
    assert res.exit_code == 1
    assert res.output.strip().splitlines()[-1].startswith("error: dram_read needs")


def test_the_base_model_is_the_matching_built_in_one_unless_given():
    """An H200 completes nvidia-h200 by default; --base generic-gpu keeps none of its
    values (a model that owes nothing to earlier measurements of the device)."""
    from dataclasses import replace

    from tiletraffic.gpu.devices.device_models import model_from_opencl
    from tiletraffic.simulator.model.device_model import DEVICE_MODELS
    info = replace(_pocl_target().info, device_name="NVIDIA H200", compute_units=132,
                   local_mem_bytes=49152, max_work_group_size=1024, max_clock_mhz=1755)
    default = model_from_opencl(info, global_cache_bytes=60 * MIB)
    generic = model_from_opencl(info, global_cache_bytes=60 * MIB, base=GENERIC_GPU_MODEL)
    h200 = DEVICE_MODELS["nvidia-h200"]
    assert default.name == "nvidia-h200" and default.clock_hz == h200.clock_hz
    # a given base takes the queried clock; the device's own built-in model keeps its own
    assert generic.clock_hz == 1.755e9 != h200.clock_hz
    assert generic.value_sources["clock_hz"].kind == "queried"
    for m in (default, generic):
        assert (m.compute_units, m.l2_bytes) == (132, 60 * MIB)
        assert m.value_sources["l2_bytes"].kind == "queried"
    assert generic.name.startswith("opencl:")
    assert generic.local_vector_words == GENERIC_GPU_MODEL.local_vector_words


def test_cli_base_option_names_a_bad_model():
    res = CliRunner().invoke(main, ["calibrate", "--quick", "--base", "no-such-model"])
    assert res.exit_code == 2 and "no-such-model" in res.output


# ---------------------------------------------------------------- L2 size by footprint sweep

def test_l2_capacity_from_a_sweep_by_hand():
    f = [1 * MIB, 2 * MIB, 4 * MIB, 8 * MIB]
    # DRAM 2 B/s, threshold 1.5 x 2 = 3: the last footprint at >= 3 is 4 MiB (exactly 3),
    # the next (8 MiB) below -> 4 MiB
    assert cal.l2_capacity_from_sweep(f, [10, 10, 3, 1], 2) == pytest.approx(4 * MIB)
    # 5 at 4 MiB, 1 at 8 MiB: (5 - 3) / (5 - 1) = half way in log -> 4 x 2^0.5 MiB
    assert cal.l2_capacity_from_sweep(f, [10, 10, 5, 1], 2) == \
        pytest.approx(4 * MIB * 2**0.5)
    # an L1 plateau (40) above the L2 one (6) does not matter: searched from the top
    assert cal.l2_capacity_from_sweep(f, [40, 6, 6, 1], 2) == \
        pytest.approx(4 * MIB * 2 ** (3 / 5))
    # never fast enough, or still fast at the largest: no capacity
    assert cal.l2_capacity_from_sweep(f, [2, 2, 2, 1], 2) is None
    assert cal.l2_capacity_from_sweep(f, [10, 10, 10, 10], 2) is None
    with pytest.raises(ValueError, match="ascending"):
        cal.l2_capacity_from_sweep([2, 1], [1, 1], 1)


def test_l2_size_is_the_capacity_the_sweep_sees(monkeypatch):
    # a made-up device: re-reads at 10 GB/s up to 4 MiB, 1 GB/s beyond; DRAM 1 GB/s.
    # Crossing between 4 MiB (10) and 8 MiB (1) at (10 - 1.5) / 9 of the octave.
    from dataclasses import replace as dc_replace

    from tiletraffic.gpu.devices import microbench as mb

    def fake_read_sum(target, nbytes, passes, work_items, repeat):
        rate = 10e9 if nbytes <= 4 * MIB else 1e9
        return [nbytes * passes / rate] * repeat
    monkeypatch.setattr(mb, "read_sum", fake_read_sum)
    sizes = dc_replace(cal.plan_sizes(4, MIB, 2**33, 2**31, 48 * 1024, 64, quick=True),
                       l2_sweep_footprints=(2 * MIB, 4 * MIB, 8 * MIB), l2_sweep_bytes=64 * MIB)
    seen = 4 * MIB * 2 ** (8.5 / 9)
    one = cal._l2_size(None, sizes, 1e9)
    assert one.field == "l2_bytes" and one.value == pytest.approx(seen)
    assert one.field_value == round(seen)
    assert "8 MiB 1 GB/s" in one.detail
    # no partition copies are added (the H200's sweep fell at 62.8 MiB, which copies in
    # both partitions would have made a 126 MiB L2): the capacity is the sweep's


def test_table_prints_a_benchmarks_size_and_detail_under_its_row():
    rows = cal.table([cal.Measurement("a", "x", 1.0, "B/s", "dram_bytes_per_s", 1.0,
                                      detail="rates: 1 MiB 2 GB/s"),
                      cal.Measurement("b", "y", 2.0, "B/s", why_unmapped="none")])
    lines = rows.splitlines()
    assert lines[1].startswith("a ") and lines[2:4] == ["    x", "    rates: 1 MiB 2 GB/s"]
    assert lines[4].split() == ["b", "2", "B/s", "nothing"]
    assert lines[5:] == ["    y", "    not set: none"]


def test_table_keeps_long_notes_out_of_the_columns_and_wraps_them():
    why = ("the unloaded latency of one dependent load; the time model's latency is a "
           "barrier interval's (staging_round_trip)") * 2
    rows = cal.table([cal.Measurement("pointer_chase", "20000 more loads over 1 MiB, median "
                                      "of 3", 1e-8, "s", why_unmapped=why),
                      cal.Measurement("dram_read", "stream of 8 MiB", 5e9, "B/s",
                                      "dram_bytes_per_s", 5e9)])
    lines = rows.splitlines()
    assert max(map(len, lines)) <= cal.TABLE_WIDTH, rows
    assert lines[0].rstrip().endswith("sets") and lines[1].rstrip().endswith("nothing")
    assert " ".join(line.strip() for line in lines[3:-2]) == f"not set: {why}"


def test_local_read_refuses_a_step_count_not_a_multiple_of_8():
    from tiletraffic.gpu.devices import microbench as mb
    target = _pocl_target()
    with pytest.raises(ValueError, match="iters = 12"):
        mb.local_read(target, 12, 1, 1)
    assert len(mb.local_read(target, 16, 2, 1)) == 1   # checked result: 16 * (lid & 7)


def test_cli_refuses_an_unwritable_out_file_before_any_benchmark(tmp_path, monkeypatch):
    from tiletraffic.analysis.cli import calibrate
    ran = []
    monkeypatch.setattr(calibrate, "select_device", lambda spec: ran.append(spec))
    blocker = tmp_path / "file"
    blocker.write_text("a file where a folder should be")
    res = CliRunner().invoke(main, ["calibrate", "--quick", "--out", str(blocker / "x.toml")])
    assert res.exit_code == 2 and ran == []
    assert res.output.startswith("error: cannot write --out ") and len(res.output.splitlines()) == 1


def test_register_tile_is_left_unmapped_where_a_work_group_cannot_hold_256(monkeypatch):
    from dataclasses import replace

    target = _pocl_target()
    small = type("T", (), {"info": replace(target.info, max_work_group_size=128)})()
    sizes = cal.plan_sizes(2, 4 * 2**20, 16 * 2**30, 4 * 2**30, 64 * 1024, 128, True)
    m = cal._register_tile(small, GENERIC_GPU_MODEL, sizes)
    assert m.field is None and "256 work-items" in m.why_unmapped and "128" in m.why_unmapped


def test_strided_read_with_own_rows_reads_every_row_once():
    from tiletraffic.gpu.devices import microbench as mb
    target = _pocl_target()
    times = mb.strided_read(target, 130, 64, 3, 2, own_rows=True)
    assert len(times) == 2 and all(t > 0 for t in times)
    # the closed form of the host reference against summing the words one by one
    for stride, length, rows in ((3, 4, 2), (4097, 2048, 40), (129, 64, 300), (8, 13, 9)):
        starts = np.arange(rows)[:, None] * stride
        assert np.array_equal(mb.strided_rows_sum(stride, length, rows),
                              ((starts + np.arange(length)) % 7 + 1).sum(axis=1))


def test_python_calibrate_runs_every_benchmark_in_order_and_writes_the_model(tmp_path):
    """tiletraffic.calibrate (the facade of `tiletraffic calibrate`): the progress names are
    BENCHMARKS (what the CLI's progress bar counts), the file reads back as the model."""
    import tiletraffic
    target = _pocl_target()
    seen = []
    model, measured = cal.calibrate(target, True, seen.append)
    assert tuple(seen) == cal.BENCHMARKS
    assert {m.benchmark for m in measured} == set(cal.BENCHMARKS) | {"strided_read_dram",
                                                                     "strided_read_x"}
    out = tmp_path / "pocl.toml"
    again, _ = tiletraffic.calibrate(target.info.id, quick=True, base="generic-gpu", out=out)
    assert load_device_model(out) == again and again.name.startswith("calibrated:")
    info = target.info                             # base generic-gpu, its clock the device's
    assert again.clock_hz == (info.max_clock_mhz * 1e6 if info.max_clock_mhz
                              else GENERIC_GPU_MODEL.clock_hz)
    assert again.value_sources["memory_latency_dram_s"].kind in ("measured", "guessed")


def test_strided_read_dram_sets_the_fill_cost_per_line_of_one_sub_group(monkeypatch):
    """A fake strided_read whose extra length costs 10 ns per word from L2 and 20 ns from
    DRAM (own rows): at the base's clock a request of one sub-group costs 10e-9 x clock /
    sub-groups cycles; a request of 32 lanes advances 32 rows by 4 B = one 128-B line, so
    DRAM's line costs one sub-group 20e-9 x clock cycles (x sub-groups / sub-groups)."""
    from tiletraffic.gpu.devices import microbench as mb

    target = _pocl_target()
    monkeypatch.setattr(mb, "local_size", lambda target: 256)
    monkeypatch.setattr(mb, "strided_read", lambda target, stride, length, groups, repeat,
                        own_rows=False: [length * (20e-9 if own_rows else 10e-9)] * 3)
    monkeypatch.setattr(mb, "strided_read_x", lambda target, stride, length, groups, repeat,
                        space: [length * (30e-9 if space == "global" else 22e-9)] * 3)
    sizes = cal.plan_sizes(132, 60 * 2**20, 140 * 2**30, 35 * 2**30, 48 * 1024, 256, False)
    from tiletraffic.simulator.model.device_model import NVIDIA_H200 as base
    a, b, dram, x = cal._strided(target, base, sizes)
    # x from global memory over x from local: 8 ns per step of the 8 sub-groups: reported
    assert x.field is None and x.value == pytest.approx(8e-9 * base.clock_hz / 8)
    assert "x from global memory 7.42" in x.detail and "local memory 5.44" in x.detail
    assert dram.field == "strided_dram_fill_sub_group_cycles_per_line"
    assert dram.field_value == pytest.approx(20e-9 * base.clock_hz)
    assert dram.unit == "sub-group cycles/line" and "d = 1's" in dram.detail
    # every stride costs the same from L2: all per line, nothing per busiest-bank line
    assert a.field_value == pytest.approx(10e-9 * base.clock_hz / 8 / 32)
    assert b.field_value == pytest.approx(0.0, abs=1e-12)
    monkeypatch.setattr(mb, "strided_read", lambda target, stride, length, groups, repeat,
                        own_rows=False: [1e-3 if own_rows else length * 1e-8] * 3)
    dram = cal._strided(target, base, sizes)[2]      # no extra time: timing noise
    assert dram.field is None and "not positive" in dram.why_unmapped


def test_a_reported_value_that_timing_noise_made_negative_says_so():
    """pointer_chase at --quick sizes on PoCL printed a latency of -46 ns as if measured."""
    m = cal.Measurement("pointer_chase", "100 more loads", -4.6e-8, "s",
                        why_unmapped="the unloaded latency of one dependent load")
    got = cal._positive(m)
    assert got.field is None and got.why_unmapped.startswith("not positive: the timing noise")
    assert got.why_unmapped.endswith("the unloaded latency of one dependent load")
    assert cal._positive(dataclasses.replace(m, value=1.9e-7)).why_unmapped == m.why_unmapped
    mapped = cal.Measurement("staging_round_trip", "x", float("nan"), "s", "memory_latency_s")
    assert cal._positive(mapped).field is None


def test_strided_read_x_checks_its_result_and_its_sizes(monkeypatch):
    """The broadcast-operand variants of strided_read (x from global or local memory): both
    give the host's sums; the sums' closed form against a direct sum; bad sizes refused."""
    from tiletraffic.gpu.devices import microbench as mb
    target = _pocl_target()
    for space in ("global", "local"):
        times = mb.strided_read_x(target, 129, 64, 2, 2, space)
        assert len(times) == 2 and all(t > 0 for t in times)
    for stride, length, rows in ((129, 64, 9), (4097, 300, 20), (8, 8, 3)):
        starts = np.arange(rows)[:, None] * stride + np.arange(length)
        direct = ((starts % 7 + 1) * (np.arange(length) % 5 + 1)).sum(axis=1)
        assert np.array_equal(mb.strided_x_sums(stride, length, rows), direct)
    for args in ((129, 64, 2, 1, "shared"), (129, 0, 2, 1, "global"),
                 (32, 64, 2, 1, "local"), (8192, mb.LOCAL_FLOATS + 1, 2, 1, "local")):
        with pytest.raises(ValueError, match="strided_read_x"):
            mb.strided_read_x(target, *args)
    monkeypatch.setattr(mb, "strided_x_sums", lambda *a: np.zeros(a[2]))
    with pytest.raises(mb.MicrobenchResultError, match="strided_read_xglobal"):
        mb.strided_read_x(target, 129, 64, 2, 1, "global")


def test_a_wrong_result_names_its_first_wrong_entry():
    from tiletraffic.gpu.devices import microbench as mb
    mb._check_each("x", np.arange(3, dtype=np.float32), [0, 1, 2])        # all equal: passes
    with pytest.raises(mb.MicrobenchResultError, match=r"x \(work-item 2\): wrong result "
                       r"\(2.0 where 4.0"):
        mb._check_each("x", np.arange(3, dtype=np.float32), [0, 1, 4])
    with pytest.raises(mb.MicrobenchResultError,
                       match=r"y \(element \(0, 1\)\): wrong result \(0.0 where 1.0"):
        mb._check_each("y", np.eye(2, dtype=np.float32), 1.0, "element")
