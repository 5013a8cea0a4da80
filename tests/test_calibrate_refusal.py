"""calibrate refuses a measured value beyond what the hardware can do: injected measurements,
no device."""
from dataclasses import replace
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from tiletraffic.analysis.calibrate import calibrate as cal
from tiletraffic.analysis.cli import main
from tiletraffic.simulator.model.device_model import DEVICE_MODELS, GENERIC_GPU_MODEL

from test_nearest_model import H100

ISSUE = "warp_instructions_per_cycle_per_sub_partition"


def _m(benchmark, field, value):
    return cal.Measurement(benchmark, "injected", value, "unit", field, value)


def test_an_issue_rate_above_one_per_scheduler_is_refused_naming_benchmark_value_limit():
    base = GENERIC_GPU_MODEL          # its issue rate is a guess: the limit is one per cycle
    (m,) = cal.refuse_impossible([_m("register_tile", ISSUE, 1.12)], base)
    assert m.field is None and m.field_value is None
    assert m.refused.startswith(f"register_tile: {ISSUE} = 1.12 is above what the hardware "
                                "can do, 1 (one warp instruction per cycle per scheduler); "
                                "not written to the model (computed with clock_hz = 1.5e+09 "
                                "(guessed), compute_units = 64 (guessed)")
    assert "\n" not in m.refused and m.why_unmapped.startswith("refused: ")
    model = cal.calibrated_model(base, [m], "a device")
    assert getattr(model, ISSUE) == getattr(base, ISSUE)
    assert model.value_sources[ISSUE].kind == "guessed"          # not written


def test_values_within_the_limits_and_their_slack_are_kept():
    base = DEVICE_MODELS["nvidia-h200"]
    kept = [_m("register_tile", ISSUE, 1.005), _m("dram_read", "dram_bytes_per_s", 4.2e12),
            _m("fp32_fma", "fp32_flop_per_s", 6.0e13), _m("l2_read", "l2_bytes_per_s", 9e13)]
    assert cal.refuse_impossible(kept, base) == kept     # l2_bytes_per_s: no documented peak


@pytest.mark.parametrize("benchmark, field, value, limit", [
    ("dram_read", "dram_bytes_per_s", 5.0e12, "4.8e+12"),
    ("fp32_fma", "fp32_flop_per_s", 7.0e13, "6.7e+13"),
])
def test_a_rate_above_the_documented_peak_is_refused(benchmark, field, value, limit):
    base = DEVICE_MODELS["nvidia-h200"]
    (m,) = cal.refuse_impossible([_m(benchmark, field, value)], base)
    assert m.field is None
    assert m.refused == (f"{benchmark}: {field} = {value:.4g} is above what the hardware can "
                         f"do, {limit} (the documented peak in nvidia-h200 (H200)); not "
                         "written to the model")
    # generic-gpu documents no peak: nothing to refuse it against
    assert cal.refuse_impossible([_m(benchmark, field, value)], GENERIC_GPU_MODEL)[0].field


def _fake_h100(monkeypatch, measurements):
    """calibrate() on a described H100 whose benchmarks return ``measurements``."""
    from tiletraffic.gpu.devices import microbench

    target = SimpleNamespace(info=H100, device=SimpleNamespace(
        global_mem_cache_size=50 * 2**20, max_mem_alloc_size=20 * 2**30))
    seen = {}

    def measure(target, base, sizes, progress):
        seen["base"] = base
        return list(measurements)
    monkeypatch.setattr(cal, "measure", measure)
    monkeypatch.setattr(microbench, "local_size", lambda target, wanted=256: 256)
    return target, seen


def test_calibrate_on_a_device_without_a_model_starts_from_the_transferred_one(monkeypatch):
    """The H100's base is the H200 model with the H100's datasheet and queries (its DRAM
    peak 3.35 TB/s): a DRAM rate of 3.6 TB/s and an issue rate of 1.12 are refused, a
    launch overhead is written."""
    injected = [_m("dram_read", "dram_bytes_per_s", 3.6e12), _m("register_tile", ISSUE, 1.12),
                _m("empty_kernel", "launch_overhead_s", 4e-6)]
    target, seen = _fake_h100(monkeypatch, injected)
    model, measured = cal.calibrate(target, quick=True)
    assert seen["base"].name == "nvidia-h100-80gb-hbm3"
    assert seen["base"].clock_hz == 1.98e9        # queried, not generic-gpu's 1.5 GHz
    assert model.name == "calibrated:nvidia-h100-80gb-hbm3"
    assert [m.benchmark for m in measured if m.refused] == ["dram_read", "register_tile"]
    assert model.dram_bytes_per_s == 3.35e12 and getattr(model, ISSUE) == 1.0
    assert model.launch_overhead_s == 4e-6
    assert model.value_sources["launch_overhead_s"].kind == "measured"
    assert "3.35e+12 (the documented peak in nvidia-h100-80gb-hbm3 (nvidia-h100-sxm5-80gb: " \
           "H100))" in measured[0].refused


def test_the_cli_prints_one_line_per_refusal_and_the_base_note(monkeypatch, tmp_path):
    from tiletraffic.analysis.cli import calibrate as cli_calibrate

    target, _ = _fake_h100(monkeypatch, [_m("register_tile", ISSUE, 1.12)])
    monkeypatch.setattr(cli_calibrate, "select_device", lambda spec: target)
    out = tmp_path / "h100.toml"
    res = CliRunner().invoke(main, ["calibrate", "--quick", "--out", str(out)])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    refused = [ln for ln in lines if ln.startswith("refused: ")]
    assert len(refused) == 1 and refused[0].startswith(f"refused: register_tile: {ISSUE} = 1.12")
    assert any(ln.startswith("model: NVIDIA H100 80GB HBM3") and "; NVIDIA H100 80GB HBM3: "
               "started from the built-in model nvidia-h200 (the same architecture" in ln
               for ln in lines)
    assert "value = 1.0" in out.read_text().split(f"[values.{ISSUE}]")[1].split("[")[0]


def test_a_refusal_survives_replace_and_reads_in_the_table():
    m = cal.refuse_impossible([_m("register_tile", ISSUE, 2.0)], GENERIC_GPU_MODEL)[0]
    assert "not set: refused: above what the hardware can do" in cal.table([m])
    assert replace(m, detail="x").refused == m.refused
