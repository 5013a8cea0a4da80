"""Device models filled from OpenCL queries."""
import warnings
from dataclasses import replace

import pytest

from click.testing import CliRunner

from tiletraffic.analysis.cli import main
from tiletraffic.gpu.devices.device_models import model_from_opencl
from tiletraffic.gpu.devices.device import list_devices
from tiletraffic.simulator.model.device_model import (NVIDIA_H200, GuessedValueWarning,
                                                      read_device_model)


def _pocl():
    found = [d for d in list_devices() if d.is_pocl]
    if not found:
        pytest.skip("no PoCL device")
    return found[0]


def test_queried_values_replace_the_table_and_stop_being_guesses():
    info = _pocl()
    model = model_from_opencl(info, global_cache_bytes=1 << 20)
    assert model.compute_units == info.compute_units
    assert model.local_mem_bytes_per_work_group == info.local_mem_bytes
    assert model.max_work_group_size == info.max_work_group_size
    assert model.l2_bytes == 1 << 20
    assert "compute_units" not in model.guessed and "l2_bytes" not in model.guessed
    assert "dram_bytes_per_s" in model.guessed  # OpenCL does not report it
    sources = model.value_sources
    assert {k for k, s in sources.items() if s.kind == "queried"} == {
        "compute_units", "local_mem_bytes_per_work_group", "max_work_group_size",
        "l2_bytes"} | ({"clock_hz"} if info.max_clock_mhz else set())
    assert sources["compute_units"].ref == "CL_DEVICE_MAX_COMPUTE_UNITS"
    if info.max_clock_mhz:
        assert model.clock_hz == info.max_clock_mhz * 1e6
        assert sources["clock_hz"].ref == "CL_DEVICE_MAX_CLOCK_FREQUENCY"
    assert sources["dram_bytes_per_s"].kind == "guessed"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.warn_guesses()
    names = {str(w.message).split(": ")[1].split(" = ")[0] for w in caught
             if issubclass(w.category, GuessedValueWarning)}
    assert names == set(model.guessed) and "dram_bytes_per_s" in names
    assert model.name.startswith("opencl:")


def test_a_known_device_name_takes_the_documented_entry():
    info = replace(_pocl(), device_name="NVIDIA H200", compute_units=132,
                   local_mem_bytes=49152, max_work_group_size=1024)
    model = model_from_opencl(info)
    assert model.name == "nvidia-h200"
    assert model.dram_bytes_per_s == NVIDIA_H200.dram_bytes_per_s
    assert model.guessed == NVIDIA_H200.guessed
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        replace(model, guessed=()).warn_guesses()


def test_cli_prints_the_queried_model_as_a_file_that_reads_back():
    info = _pocl()
    result = CliRunner().invoke(main, ["device-model", "--device", info.id])
    assert result.exit_code == 0, result.output
    model = read_device_model(result.stdout, "printed")
    assert model.compute_units == info.compute_units
    assert model.value_sources["compute_units"].kind == "queried"
    assert "compute_units" not in model.guessed and "dram_bytes_per_s" in model.guessed
    assert model == model_from_opencl(info)
