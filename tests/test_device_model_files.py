"""Device models as data files: the built-in TOML files, a user's file, and their errors."""
from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner

import tiletraffic
from tiletraffic.analysis.cli import main
from tiletraffic.simulator.model.device_model import (DEVICE_MODELS, GENERIC_GPU_MODEL,
                                                      NVIDIA_H200, NVIDIA_H200_CALIBRATED,
                                                      NVIDIA_H200_CUDA, SOURCE_KINDS,
                                                      VALUE_FIELDS, DeviceModelError,
                                                      GuessedValueWarning, ValueSource,
                                                      built_in_file, device_model,
                                                      load_device_model, read_device_model,
                                                      to_toml)

# The values of simulator/model/device_model.py at commit 34a001f, when the models were Python
# (checked against `git show 34a001f:simulator/model/device_model.py` when the files were written).
H200_AT_34A001F = {
    "compute_units": 132, "sub_group_size": 32, "sector_bytes": 32, "line_bytes": 128,
    "local_banks": 32, "bank_bytes": 4, "max_work_group_size": 1024,
    "max_work_items_per_cu": 2048, "max_work_groups_per_cu": 32,
    "local_mem_bytes_per_work_group": 49152, "local_mem_bytes_per_cu": 233472,
    "local_mem_reserved_bytes_per_work_group": 1024, "l1_bytes_per_cu": 262144,
    "l2_bytes": 52428800, "l2_associativity": 16, "dram_bytes_per_s": 4800000000000.0,
    "l2_bytes_per_s": 12000000000000.0, "clock_hz": 1980000000.0,
    "l1_wavefronts_per_cycle_per_cu": 1.0, "l1_requests_per_cycle_per_cu": 0.76,
    "fp32_flop_per_s": 67000000000000.0, "launch_overhead_s": 3e-06, "local_vector_words": 1,
    "local_vector_min_wavefronts": 2, "barrier_wavefronts_per_work_group": 2,
    "memory_latency_s": 5.5e-07, "l1_sharing_work_groups": 2,
    "l2_partitions": 2,   # added after 34a001f (the DRAM write-back model)
}
H200_GUESSED = ("l2_bytes_per_s", "l1_wavefronts_per_cycle_per_cu",
                "l1_requests_per_cycle_per_cu", "launch_overhead_s", "memory_latency_s",
                "l1_sharing_work_groups", "l2_associativity")
# Values added after 34a001f (register-limited occupancy and instruction issue), the same in every built-in file: documented for the H200 models, guessed (the
# H200's) for generic-gpu.
REGISTERS = {"registers_per_cu": 65536, "register_allocation_unit": 256,
             "max_registers_per_work_item": 255, "sub_partitions_per_cu": 4,
             "warp_instructions_per_cycle_per_sub_partition": 1.0}
# The strided-request costs (the stride family), added later still: 0 (the term
# left out, documented as such: TT-TERMS) in every built-in file.
STRIDED = {"l1_strided_cycles_per_line": 0.0, "l1_strided_cycles_per_busiest_bank_line": 0.0}
# and the DRAM round trip of a barrier interval (0: left out, likewise)
DRAM_LATENCY = {"memory_latency_dram_s": 0.0}
# and the strided requests' fills from DRAM (0: left out, likewise)
STRIDED_FILL = {"strided_dram_fill_sub_group_cycles_per_line": 0.0}
H200_AT_34A001F = {**H200_AT_34A001F, **REGISTERS, **STRIDED, **DRAM_LATENCY, **STRIDED_FILL}
# and no floor on a 128-bit local load's wavefronts beyond the phase-pair rule (the partial
# last sub-group of matvec-local took one wavefront: the local-counter check)
H200_AT_34A001F = {**H200_AT_34A001F, "local_vector_min_wavefronts": 1}
AT_34A001F = {
    "nvidia-h200": (H200_AT_34A001F, H200_GUESSED),
    "nvidia-h200-cuda": ({**H200_AT_34A001F, "local_vector_words": 4}, H200_GUESSED),
    "generic-gpu": ({**H200_AT_34A001F, "compute_units": 64, "local_mem_bytes_per_cu": 65536,
                     "l1_bytes_per_cu": 131072, "l2_bytes": 4194304,
                     "dram_bytes_per_s": 1000000000000.0, "l2_bytes_per_s": 3000000000000.0,
                     "clock_hz": 1500000000.0, "l1_requests_per_cycle_per_cu": 1.0,
                     "fp32_flop_per_s": 20000000000000.0, "local_vector_words": 4,
                     "memory_latency_s": 3e-07, "l2_partitions": 1},
                    ("compute_units", "l1_bytes_per_cu", "l2_bytes", "dram_bytes_per_s",
                     "l2_bytes_per_s", "clock_hz", "fp32_flop_per_s", "local_mem_bytes_per_cu",
                     "l1_wavefronts_per_cycle_per_cu", "l1_requests_per_cycle_per_cu",
                     "launch_overhead_s", "memory_latency_s", "local_vector_words",
                     "local_vector_min_wavefronts", "barrier_wavefronts_per_work_group",
                     "l1_sharing_work_groups", "l2_associativity", "l2_partitions",
                     *REGISTERS)),
}


# ------------------------------------------------------------------- built-in files
@pytest.mark.parametrize("name", sorted(AT_34A001F))
def test_built_in_values_are_those_of_the_python_table_field_by_field(name):
    values, guessed = AT_34A001F[name]
    model = DEVICE_MODELS[name]
    assert model.name == name
    assert set(values) == set(VALUE_FIELDS)
    for key, expected in values.items():
        got = getattr(model, key)
        assert (got, type(got)) == (expected, type(expected)), key
    assert model.guessed == guessed  # same order: the order of the warnings and tables


def test_the_module_names_are_the_built_in_files():
    assert ((NVIDIA_H200, NVIDIA_H200_CALIBRATED, NVIDIA_H200_CUDA, GENERIC_GPU_MODEL)
            == tuple(DEVICE_MODELS.values()))
    assert device_model("nvidia-h200") is NVIDIA_H200
    assert device_model("nvidia-h200-calibrated") is NVIDIA_H200_CALIBRATED


H200_CALIBRATION = (Path(__file__).resolve().parents[1] / "reports" / "nvidia-h200"
                    / "preregistered6" / "h200-calibrated.toml")
"""The file `tiletraffic calibrate --device NVIDIA` wrote on the H200 (its log beside it)."""


def test_the_calibrated_h200_holds_the_values_and_sources_of_the_h200_calibration():
    measured = load_device_model(H200_CALIBRATION)
    assert NVIDIA_H200_CALIBRATED.name == "nvidia-h200-calibrated"
    for key in VALUE_FIELDS:
        got, expected = getattr(NVIDIA_H200_CALIBRATED, key), getattr(measured, key)
        assert (got, type(got)) == (expected, type(expected)), key
    # the sources of what calibrate measured or queried are the calibration's; those of the
    # values it took from its base, nvidia-h200's (same values, its current wording)
    for key, source in NVIDIA_H200_CALIBRATED.value_sources.items():
        expected = (measured.value_sources[key] if source.kind in ("measured", "queried")
                    else NVIDIA_H200.value_sources[key])
        assert source == expected, key
        if source.kind in ("measured", "documented"):
            expected_text = (measured.references if source.kind == "measured"
                             else NVIDIA_H200.references)[source.ref]
            assert NVIDIA_H200_CALIBRATED.references[source.ref] == expected_text, key
    assert NVIDIA_H200_CALIBRATED.guessed == measured.guessed


def test_the_calibrated_h200_differs_from_nvidia_h200_in_measured_and_queried_values_only():
    changed = {key for key in VALUE_FIELDS
               if getattr(NVIDIA_H200_CALIBRATED, key) != getattr(NVIDIA_H200, key)}
    kinds = {NVIDIA_H200_CALIBRATED.value_sources[key].kind for key in changed}
    assert {"fp32_flop_per_s", "dram_bytes_per_s", "memory_latency_s"} <= changed
    assert kinds <= {"measured", "queried"}
    sch = tiletraffic.build("gemm-tiled", m=256, k=256, n=256, tile=16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GuessedValueWarning)
        times = {str(name): tiletraffic.model(sch, name).prediction.predicted_time_s
                 for name in ("nvidia-h200", "nvidia-h200-calibrated", H200_CALIBRATION)}
    assert times["nvidia-h200"] != times["nvidia-h200-calibrated"]
    assert times[str(H200_CALIBRATION)] == times["nvidia-h200-calibrated"]


@pytest.mark.parametrize("name", sorted(DEVICE_MODELS))
def test_every_value_has_a_source_and_guessed_follows_from_them(name):
    model = DEVICE_MODELS[name]
    assert list(model.value_sources) != [] and set(model.value_sources) == set(VALUE_FIELDS)
    for key, source in model.value_sources.items():
        assert source.kind in SOURCE_KINDS and source.ref.strip(), key
        if source.kind in ("documented", "measured"):
            assert model.references[source.ref].strip(), (key, source.ref)
    assert model.guessed == tuple(k for k, s in model.value_sources.items()
                                  if s.kind == "guessed")


@pytest.mark.parametrize("name", sorted(DEVICE_MODELS))
def test_to_toml_reads_back_to_the_same_model_and_sources(name, tmp_path):
    model = DEVICE_MODELS[name]
    path = tmp_path / "copy.toml"
    path.write_text(to_toml(model), encoding="utf-8")
    again = load_device_model(path)
    assert again == model
    assert again.value_sources == model.value_sources
    assert again.references == model.references
    assert again.description == model.description
    assert str(path) in again.sources


def _fields(model) -> dict:
    return {k: getattr(model, k) for k in model.__dataclass_fields__}


def test_warnings_name_the_same_values_in_the_same_order():
    for name, (values, guessed) in AT_34A001F.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            DEVICE_MODELS[name].warn_guesses()
        assert all(w.category is GuessedValueWarning for w in caught)
        said = [re.search(r"device model (\S+): (\w+) = (\S+) is a guess", str(w.message))
                .groups() for w in caught]
        assert said == [(name, g, str(values[g])) for g in guessed]


# --------------------------------------------------------------------- a user's file
def h200_file(tmp_path: Path, edit=None, name: str = "my.toml") -> Path:
    """The nvidia-h200 file, optionally changed by ``edit(text) -> text``."""
    text = built_in_file("nvidia-h200").read_text(encoding="utf-8")
    path = tmp_path / name
    path.write_text(edit(text) if edit else text, encoding="utf-8")
    return path


def test_a_users_file_is_taken_by_device_model_and_the_facade(tmp_path):
    path = h200_file(tmp_path, lambda t: t.replace('name = "nvidia-h200"', 'name = "mine"')
                     .replace("value = 132\n", "value = 66\n"))
    mine = device_model(path)
    assert (mine.name, mine.compute_units) == ("mine", 66)
    assert device_model(str(path)) == mine
    sch = tiletraffic.build("gemm-tiled", m=64, k=64, n=64, tile=16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GuessedValueWarning)
        assert tiletraffic.model(sch, str(path)).prediction.device_model == "mine"


def test_an_unknown_name_that_is_no_file_lists_the_built_in_names(tmp_path):
    with pytest.raises(KeyError) as err:
        device_model(str(tmp_path / "nothing.toml"))
    assert all(name in str(err.value) for name in DEVICE_MODELS)


BAD_FILES = {
    # edit of the nvidia-h200 file -> what the message must name
    "missing value": (lambda t: re.sub(r"\[values\.clock_hz\]\n(.+\n)+\n", "", t),
                      ["clock_hz"]),
    "missing name": (lambda t: t.replace('name = "nvidia-h200"\n', ""), ["'name'"]),
    "unknown value": (lambda t: t + '\n[values.l3_bytes]\nvalue = 1\nsource = "guessed"\n'
                                    'ref = "why"\n', ["'l3_bytes'", "l2_bytes", "clock_hz"]),
    "unknown top-level field": (lambda t: "vendor = 'x'\n" + t, ["'vendor'", "references"]),
    "unknown entry field": (lambda t: t.replace('value = 132\n', 'value = 132\nunit = "SM"\n'),
                            ["compute_units", "'unit'"]),
    "wrong type": (lambda t: t.replace("value = 132\n", 'value = "132"\n'),
                   ["compute_units", 'value must be an integer, got the string "132"']),
    "float for an int": (lambda t: t.replace("value = 132\n", "value = 132.0\n"),
                         ["compute_units", "got the float 132.0"]),
    "too many registers": (lambda t: re.sub(r"(\[values\.max_registers_per_work_item\]\n"
                                            r"value = )\d+", r"\g<1>1000000000000", t),
                           ["max_registers_per_work_item", "at most 65536",
                            "got 1000000000000"]),
    "L1 shared by 3": (lambda t: re.sub(r"(\[values\.l1_sharing_work_groups\]\nvalue = )\d+",
                                        r"\g<1>3", t),
                       ["l1_sharing_work_groups", "at most 2", "got 3"]),
    "negative": (lambda t: t.replace("value = 1.98e9\n", "value = -1.98e9\n"),
                 ["clock_hz", "value must be positive, got -1.98e+09"]),
    "zero divisor": (lambda t: t.replace("value = 4.8e12\n", "value = 0\n"),
                     ["dram_bytes_per_s", "0"]),
    "boolean": (lambda t: t.replace("value = 132\n", "value = true\n"),
                ["compute_units", "value must be an integer, got true"]),
    "source kind": (lambda t: t.replace('source = "measured"', 'source = "estimated"', 1),
                    ["local_vector_words", 'source the string "estimated"', *SOURCE_KINDS]),
    "ref not in references": (lambda t: t.replace('ref = "HWP"', 'ref = "HWP2"', 1),
                              ["compute_units", 'ref "HWP2"', "HWP", "CPG"]),
    "missing ref": (lambda t: t.replace('ref = "HWP"\n', "", 1), ["compute_units", "ref"]),
    "sub-group beyond any device's": (
        lambda t: t.replace("[values.sub_group_size]\nvalue = 32\n",
                            "[values.sub_group_size]\nvalue = 999999999999\n"),
        ["sub_group_size", "power of two", "128"]),
    "a line of part sectors": (
        lambda t: t.replace("[values.line_bytes]\nvalue = 128\n",
                            "[values.line_bytes]\nvalue = 16\n"),
        ["line_bytes", "multiple of sector_bytes"]),
    "associativity beyond any cache's": (
        lambda t: t.replace("[values.l2_associativity]\nvalue = 16\n",
                            "[values.l2_associativity]\nvalue = 99999999\n"),
        ["l2_associativity", "fully-associative"]),
    "not TOML": (lambda t: t.replace("value = 132\n", "value = = 132\n"), ["TOML"]),
    "a string for a number": (lambda t: t.replace("value = 1.98e9\n", 'value = "fast"\n'),
                              ['clock_hz: value must be a finite number, got the string "fast"']),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_a_bad_file_raises_a_device_model_error_naming_file_and_field(case, tmp_path):
    edit, needles = BAD_FILES[case]
    path = h200_file(tmp_path, edit)
    assert path.read_text() != built_in_file("nvidia-h200").read_text()
    with pytest.raises(DeviceModelError) as err:
        load_device_model(path)
    assert isinstance(err.value, ValueError)
    for needle in [str(path), *needles]:
        assert needle in str(err.value), (needle, str(err.value))
    # values in the file's words: no Python type names or reprs of what the file holds
    assert not re.search(r"\((str|int|float|bool)\)|True|'132'", str(err.value)), str(err.value)


def test_a_missing_file_is_a_device_model_error(tmp_path):
    with pytest.raises(DeviceModelError, match="nothing.toml"):
        load_device_model(tmp_path / "nothing.toml")


def test_fully_associative_l2_reads_as_none():
    text = to_toml(NVIDIA_H200).replace("value = 16\n", 'value = "fully-associative"\n')
    model = read_device_model(text, "test")
    assert model.l2_associativity is None
    assert read_device_model(to_toml(model), "again").l2_associativity is None


def test_with_values_marks_sources_and_refuses_bad_values():
    queried = ValueSource("queried", "CL_DEVICE_MAX_COMPUTE_UNITS")
    model = GENERIC_GPU_MODEL.with_values({"compute_units": (8, queried)}, name="eight")
    assert (model.name, model.compute_units, model.value_sources["compute_units"]) == \
        ("eight", 8, queried)
    assert model.guessed == tuple(g for g in GENERIC_GPU_MODEL.guessed if g != "compute_units")
    for bad in ({"compute_units": (-8, queried)}, {"compute_units": (8, ValueSource("x", "y"))},
                {"no_such_value": (8, queried)}):
        with pytest.raises(DeviceModelError, match=next(iter(bad))):
            GENERIC_GPU_MODEL.with_values(bad)


# ------------------------------------------------------------------------------- CLI
SIM = ["simulate", "gemm-tiled", "--m", "64", "--n", "64", "--k", "64", "--tile", "8"]


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_cli_simulate_with_a_copy_of_the_built_in_file_prints_the_same(json_flag, tmp_path):
    path = h200_file(tmp_path)
    by_name = CliRunner().invoke(main, [*SIM, "--device-model", "nvidia-h200", *json_flag])
    by_file = CliRunner().invoke(main, [*SIM, "--device-model", str(path), *json_flag])
    assert by_name.exit_code == by_file.exit_code == 0, (by_name.output, by_file.output)
    assert by_file.stdout == by_name.stdout
    if json_flag:
        assert json.loads(by_file.stdout)["predicted_time_s"] > 0


def test_cli_simulate_with_a_changed_file_changes_the_prediction(tmp_path):
    path = h200_file(tmp_path, lambda t: t.replace("value = 4.8e12\n", "value = 1.2e12\n"))
    runs = [json.loads(CliRunner().invoke(main, [*SIM, "--device-model", m, "--json"]).stdout)
            for m in ("nvidia-h200", str(path))]
    assert runs[1]["time_terms_s"]["dram_s"] == pytest.approx(4 * runs[0]["time_terms_s"]["dram_s"])


def test_cli_bad_file_is_a_usage_error_naming_the_field(tmp_path):
    path = h200_file(tmp_path, BAD_FILES["negative"][0])
    result = CliRunner().invoke(main, [*SIM, "--device-model", str(path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert str(path) in result.output and "clock_hz" in result.output


def test_cli_device_model_prints_a_file_that_reads_back():
    runner = CliRunner()
    listing = runner.invoke(main, ["device-model"])
    assert listing.exit_code == 0
    assert [line.split(":")[0] for line in listing.stdout.splitlines()
            if not line.startswith(" ")] == list(DEVICE_MODELS)
    for name, model in DEVICE_MODELS.items():
        shown = runner.invoke(main, ["device-model", name])
        assert shown.exit_code == 0
        again = read_device_model(shown.stdout, "shown")
        assert _fields(again) == {**_fields(model), "sources": again.sources}
        assert again.value_sources == model.value_sources
    assert runner.invoke(main, ["device-model", "no-such-gpu"]).exit_code == 2
    assert runner.invoke(main, ["device-model", "generic-gpu", "--device", "0"]).exit_code == 2


def test_a_file_written_before_the_added_fields_loads_with_the_older_models_values():
    """The committed calibrations of earlier rounds lack the fields added since
    (simulator.model.device_model.ADDED_FIELDS): they load, each such field at the value that
    gives the older model's predictions (0: not modelled), marked as a guess saying why."""
    from tiletraffic.simulator.model.device_model import ADDED_FIELDS

    text = to_toml(NVIDIA_H200)
    for key in ADDED_FIELDS:
        start = text.index(f"[values.{key}]")
        end = text.find("\n[values.", start + 1)
        text = text[:start] + (text[end + 1:] if end >= 0 else "")
    old = read_device_model(text, "old.toml")
    for key, (value, why) in ADDED_FIELDS.items():
        assert getattr(old, key) == value == 0.0
        assert old.value_sources[key] == ValueSource("guessed", why)
        assert key in old.guessed
    s = tiletraffic.build("matvec-naive", m=1024, k=1024, tile=256)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert tiletraffic.model(s, old).prediction.predicted_time_s == \
            tiletraffic.model(s, NVIDIA_H200).prediction.predicted_time_s
    # a missing field that is not a later addition is still an error
    start = text.index("[values.clock_hz]")
    end = text.index("\n[values.", start + 1)
    with pytest.raises(DeviceModelError, match="missing value.*clock_hz"):
        read_device_model(text[:start] + text[end + 1:], "old.toml")
