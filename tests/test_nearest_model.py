"""A device without a built-in model: the nearest built-in model, its documented values
replaced by the device's datasheet's and OpenCL's, with a note; datasheet files. No GPU:
the devices are OpenCL device descriptions written here."""
from dataclasses import replace

import pytest
from click.testing import CliRunner

from tiletraffic.analysis.cli import main
from tiletraffic.analysis.device_model import default_model_name
from tiletraffic.gpu.devices.device import DeviceInfo
from tiletraffic.gpu.devices.device_models import model_describes_device, model_from_opencl
from tiletraffic.gpu.devices.nearest_model import nearest_built_in, vendor_of
from tiletraffic.simulator.model.datasheet import DATASHEETS, load_datasheet, read_datasheet
from tiletraffic.simulator.model.device_model import (DEVICE_MODELS, GENERIC_GPU_MODEL,
                                                      DeviceModelError, read_device_model,
                                                      to_toml)

MIB = 2**20

H100 = DeviceInfo(
    id="0:0", platform_index=0, device_index=0, platform_name="NVIDIA CUDA",
    platform_vendor="NVIDIA Corporation", platform_version="OpenCL 3.0 CUDA 13.0.88",
    device_name="NVIDIA H100 80GB HBM3", device_vendor="NVIDIA Corporation", type="GPU",
    is_gpu=True, is_simulator=False, is_pocl=False, max_work_group_size=1024,
    max_work_item_sizes=(1024, 1024, 64), local_mem_bytes=49152, compute_units=132,
    global_mem_bytes=85_045_477_376, driver_version="580.159.04",
    device_version="OpenCL 3.0 CUDA", max_clock_mhz=1980, global_mem_cache_bytes=50 * MIB,
    compute_capability=(9, 0), sub_group_size=32)
A100 = replace(H100, device_name="NVIDIA A100-SXM4-80GB", compute_units=108,
               max_clock_mhz=1410, global_mem_cache_bytes=40 * MIB, compute_capability=(8, 0))
AMD = replace(H100, platform_name="AMD Accelerated Parallel Processing",
              platform_vendor="Advanced Micro Devices, Inc.", device_name="gfx90a:sramecc+:xnack-",
              device_vendor="Advanced Micro Devices, Inc.", compute_units=104,
              max_clock_mhz=1700, global_mem_cache_bytes=8 * MIB, compute_capability=None,
              sub_group_size=64)
INTEL = replace(H100, platform_name="Intel(R) OpenCL Graphics", platform_vendor="Intel(R) Corporation",
                device_name="Intel(R) Data Center GPU Max 1550", device_vendor="Intel(R) Corporation",
                compute_units=448, max_clock_mhz=1600, global_mem_cache_bytes=None,
                compute_capability=None, sub_group_size=None)
CPU = replace(H100, platform_name="Portable Computing Language", platform_vendor="The pocl project",
              device_name="pthread-AMD EPYC", device_vendor="AuthenticAMD", type="CPU",
              is_gpu=False, is_pocl=True, compute_units=2, max_clock_mhz=2596,
              global_mem_cache_bytes=32 * MIB, compute_capability=None, sub_group_size=None)
UNKNOWN = replace(H100, platform_name="MUSA", platform_vendor="Moore Threads",
                  device_name="MTT S4000", device_vendor="Moore Threads", compute_capability=None,
                  sub_group_size=None)


def test_an_h100_takes_the_h200_model_of_the_same_die_with_its_datasheet_and_queries():
    model = model_from_opencl(H100)
    h200 = DEVICE_MODELS["nvidia-h200"]
    assert model.name == "nvidia-h100-80gb-hbm3"
    assert model.dram_bytes_per_s == 3.35e12 != h200.dram_bytes_per_s
    src = model.value_sources["dram_bytes_per_s"]
    assert (src.kind, src.ref) == ("documented", "nvidia-h100-sxm5-80gb: H100")
    assert "3.35 TB/s" in model.references[src.ref]
    assert model.clock_hz == 1.98e9 and model.value_sources["clock_hz"].kind == "queried"
    # the L2 the datasheet documents, not the driver's answer (drivers' cache sizes differ)
    assert model.l2_bytes == 50 * MIB and model.value_sources["l2_bytes"].kind == "documented"
    # what neither the datasheet nor OpenCL gives stays the H200's
    assert model.local_vector_words == h200.local_vector_words
    assert model.l2_partitions == h200.l2_partitions
    note = model.description
    assert note.startswith("NVIDIA H100 80GB HBM3: started from the built-in model "
                           "nvidia-h200 (the same architecture: NVIDIA Hopper, compute "
                           "capability 9.0)")
    assert "l2_bytes, dram_bytes_per_s, fp32_flop_per_s from the datasheet " \
           "nvidia-h100-sxm5-80gb" in note
    assert "max_work_group_size, clock_hz from OpenCL queries" in note and "\n" not in note
    assert read_device_model(to_toml(model), "printed") == model   # a valid model file


def test_the_architecture_comes_from_the_datasheet_where_opencl_does_not_give_it():
    info = replace(H100, compute_capability=None, sub_group_size=None)
    assert nearest_built_in(info, DATASHEETS["nvidia-h100-sxm5-80gb"]) == (
        "nvidia-h200", "the same architecture: NVIDIA Hopper, compute capability 9.0")
    name, why = nearest_built_in(replace(info, device_name="NVIDIA H20"))
    assert name == "nvidia-h200" and why.startswith("the nearest NVIDIA GPU built in")


def test_an_a100_takes_the_nearest_nvidia_model_and_says_it_is_another_architecture():
    model = model_from_opencl(A100)
    assert model.name == "nvidia-a100-sxm4-80gb"
    assert (model.dram_bytes_per_s, model.fp32_flop_per_s) == (2.039e12, 1.95e13)
    assert model.l1_bytes_per_cu == 196608 and model.local_mem_bytes_per_cu == 167936
    assert (model.compute_units, model.clock_hz) == (108, 1.41e9)
    assert "the nearest NVIDIA GPU built in (NVIDIA Hopper, compute capability 9.0; this " \
           "device: NVIDIA Ampere, compute capability 8.0)" in model.description
    # the datasheet's CPG is compute capability 8.0's, kept apart from the base's (9.0)
    cpg = model.value_sources["local_mem_bytes_per_cu"].ref
    assert cpg == "nvidia-a100-sxm4-80gb: CPG" and "(8.0)" in model.references[cpg]
    assert "(9.0)" in model.references["CPG"]


@pytest.mark.parametrize("info, why", [
    (AMD, "no built-in model is of an AMD GPU"),
    (INTEL, "no built-in model is of an Intel GPU"),
    (CPU, "pthread-AMD EPYC is a cpu device, and every built-in model is a GPU's"),
    (UNKNOWN, "the vendor of MTT S4000 (Moore Threads) is none that a built-in model is of"),
    (replace(H100, device_name="NVIDIA Future GPU", sub_group_size=64),
     "no built-in NVIDIA model has its sub-group size 64"),
])
def test_a_device_no_built_in_model_is_near_takes_generic_gpu_with_a_note(info, why):
    model = model_from_opencl(info)
    assert model.name == f"opencl:{info.slug}"
    assert model.description.startswith(f"{info.device_name}: started from generic-gpu, "
                                         f"every other value a guess ({why}")
    assert model.dram_bytes_per_s == GENERIC_GPU_MODEL.dram_bytes_per_s
    assert model.compute_units == info.compute_units
    assert model.clock_hz == info.max_clock_mhz * 1e6
    if info.global_mem_cache_bytes:                      # no datasheet: the driver's L2
        assert model.l2_bytes == info.global_mem_cache_bytes
    assert default_model_name(info) == "generic-gpu"
    assert model_describes_device(model, info)[0] is False


def test_vendors_are_read_from_the_vendor_strings():
    assert [vendor_of(i) for i in (H100, AMD, INTEL, UNKNOWN)] == ["NVIDIA", "AMD", "Intel",
                                                                   None]
    mali = replace(UNKNOWN, device_name="Mali-G78", device_vendor="ARM", platform_vendor="ARM")
    assert vendor_of(mali) == "ARM"
    assert vendor_of(replace(UNKNOWN, device_vendor="Charming Devices")) is None


def test_a_given_base_or_datasheet_overrides_the_choice():
    generic = model_from_opencl(H100, base=GENERIC_GPU_MODEL)
    assert generic.name == "opencl:nvidia-h100-80gb-hbm3"
    assert generic.dram_bytes_per_s == GENERIC_GPU_MODEL.dram_bytes_per_s
    calibrated = DEVICE_MODELS["nvidia-h200-calibrated"]
    kept = model_from_opencl(H100, base=calibrated)
    assert kept.name == calibrated.name and kept.dram_bytes_per_s == calibrated.dram_bytes_per_s
    # with the H100's datasheet, the H200's measured DRAM rate is scaled by 3.35 / 4.8
    scaled = model_from_opencl(H100, base=calibrated,
                               datasheet=DATASHEETS["nvidia-h100-sxm5-80gb"])
    assert calibrated.value_sources["dram_bytes_per_s"].kind == "measured"
    assert scaled.dram_bytes_per_s == pytest.approx(calibrated.dram_bytes_per_s * 3.35 / 4.8)
    src = scaled.value_sources["dram_bytes_per_s"]
    assert src.kind == "guessed" and "the ratio of the datasheets' values" in src.ref
    assert "dram_bytes_per_s, fp32_flop_per_s scaled by the datasheets' ratio" in \
        scaled.description
    # the device's own built-in model is taken as before, no datasheet, its clock kept
    h200 = replace(H100, device_name="NVIDIA H200", max_clock_mhz=1755)
    own = model_from_opencl(h200)
    assert own.name == "nvidia-h200" and own.clock_hz == 1.98e9
    assert default_model_name(h200) == "nvidia-h200"


def test_a_datasheet_file_of_the_users_replaces_the_values_it_gives(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text('name = "mine"\nvendor = "AMD"\ndevices = ["gfx90a"]\n'
                    'sub_group_size = 64\n[references]\nDS = "MI250X datasheet"\n'
                    '[values.dram_bytes_per_s]\nvalue = 1.6e12\nref = "DS"\n')
    sheet = load_datasheet(path)
    model = model_from_opencl(AMD, datasheet=sheet)
    assert model.dram_bytes_per_s == 1.6e12
    assert model.value_sources["dram_bytes_per_s"].kind == "documented"
    assert "dram_bytes_per_s from the datasheet mine" in model.description
    assert read_device_model(to_toml(model), "printed") == model


@pytest.mark.parametrize("text, problem", [
    ('name = "x"\nvendor = "AMD"\ndevices = ["a"]\nspeed = 3\n[values.clock_hz]\n'
     'value = 1e9\nref = "DS"\n[references]\nDS = "d"', "unknown field(s) 'speed'"),
    ('name = "x"\nvendor = "AMD"\ndevices = ["a"]\n[values.clock_hz]\nvalue = 1e9\n'
     'ref = "nope"\n', 'ref the string "nope" is not a key of [references]'),
    ('name = "x"\nvendor = "AMD"\ndevices = []\n[values.clock_hz]\nvalue = 1e9\n'
     'ref = "DS"\n[references]\nDS = "d"', "devices must be a non-empty list"),
    ('name = "x"\nvendor = "AMD"\ndevices = ["a"]\ncompute_capability = "9"\n'
     '[values.clock_hz]\nvalue = -1\nref = "DS"\n[references]\nDS = "d"',
     'compute_capability must be "major.minor"'),
    ('name = "x"\nvendor = "AMD"\ndevices = ["a"]\n[values.warp_speed]\nvalue = 1\n'
     'ref = "DS"\n[references]\nDS = "d"', "warp_speed"),
])
def test_a_malformed_datasheet_names_its_file_and_problem(text, problem):
    with pytest.raises(DeviceModelError) as err:
        read_datasheet(text, "mine.toml")
    assert str(err.value).startswith("datasheet file mine.toml: ")
    assert problem in str(err.value)


def test_the_transferred_model_describes_the_device_and_the_report_says_so():
    from tiletraffic.analysis.report.build import _model_verdict

    model = default_model_name(H100)
    assert model.name == "nvidia-h100-80gb-hbm3"
    describes, why = model_describes_device(model, H100)
    assert describes and "a built-in model transferred to this device: started from the " \
                         "built-in model nvidia-h200" in why
    assert model_describes_device(model, A100)[0] is False      # another device's
    # written to a file (device-model --device > FILE) and read back: still this device's
    assert model_describes_device(read_device_model(to_toml(model), "h100.toml"), H100)[0]
    verdict = _model_verdict(H100, None, None)
    assert verdict["describes_device"] and verdict["transferred"]
    assert verdict["name"] == "nvidia-h100-80gb-hbm3" and verdict["source"] == "object"
    assert verdict["description"] == model.description


def test_the_cli_refuses_a_datasheet_without_a_device_and_a_bad_file(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('name = "x"\n')
    res = CliRunner().invoke(main, ["device-model", "--datasheet", str(path)])
    assert res.exit_code == 2 and "datasheet file" in res.output
    good = tmp_path / "good.toml"
    good.write_text('name = "x"\nvendor = "AMD"\ndevices = ["a"]\n[references]\nDS = "d"\n'
                    '[values.clock_hz]\nvalue = 1e9\nref = "DS"\n')
    res = CliRunner().invoke(main, ["device-model", "--datasheet", str(good)])
    assert res.exit_code == 2 and "--datasheet goes with --device" in res.output


def test_every_shipped_datasheet_fits_its_devices_and_names_built_in_models():
    for sheet in DATASHEETS.values():
        assert all(sheet.fits(f"NVIDIA {part}") for part in sheet.devices)
        assert all(m in DEVICE_MODELS for m in sheet.models)
        for key, (value, source) in sheet.values.items():
            assert source.ref in sheet.references, (sheet.name, key)
    h200 = DEVICE_MODELS["nvidia-h200"]
    for key, (value, _) in DATASHEETS["nvidia-h200-sxm"].values.items():
        assert getattr(h200, key) == value, key     # the built-in model's own documents


def test_the_api_and_cli_give_a_cpu_generic_gpu_with_the_note():
    import tiletraffic as tt
    from tiletraffic.gpu.devices.device import list_devices

    found = [d for d in list_devices() if d.is_pocl]
    if not found:
        pytest.skip("no PoCL device")
    info = found[0]
    model = tt.device_model_of(info.id)
    assert model.name == f"opencl:{info.slug}"
    assert model.description.startswith(f"{info.device_name}: started from generic-gpu")
    res = CliRunner().invoke(main, ["device-model", "--device", info.id])
    assert res.exit_code == 0
    assert f"note: {model.description}" in res.stderr
    assert read_device_model(res.stdout, "printed") == model


def test_the_report_markdown_names_the_transferred_model_and_its_note(monkeypatch, tmp_path):
    from tiletraffic.analysis.report import text
    from tiletraffic.analysis.validation import render, results

    (tmp_path / text.VALIDATION_DIR).mkdir()
    (tmp_path / text.VALIDATION_DIR / "validation.json").write_text("{}")
    monkeypatch.setattr(results, "load", lambda folder: {})
    monkeypatch.setattr(render, "section", lambda data, image, raw_data: ["## heading", "",
                                                                          "table"])
    meta = {"model": {"name": "nvidia-h100-80gb-hbm3", "describes_device": True,
                      "transferred": True, "description": "NVIDIA H100 80GB HBM3: started "
                      "from the built-in model nvidia-h200 (...); replaced: ..."}}
    lines = text._model_section(meta, tmp_path)
    assert lines[0] == "## heading" and lines[3] == "" and lines[4] == "table"
    assert lines[2].startswith("This device has no built-in model: the model "
                               "`nvidia-h100-80gb-hbm3` is the nearest one transferred to it. "
                               "NVIDIA H100 80GB HBM3: started from the built-in model")
    meta["model"]["transferred"] = False
    assert text._model_section(meta, tmp_path)[:3] == ["## heading", "", "table"]


def test_validate_and_report_take_a_datasheet_for_the_default_model_only(tmp_path):
    from tiletraffic.analysis.report.build import _model_verdict
    from tiletraffic.analysis.validation.run import ValidationOptions, _plan

    path = tmp_path / "h100.toml"
    path.write_text('name = "my-h100"\nvendor = "NVIDIA"\ncompute_capability = "9.0"\n'
                    'devices = ["H100"]\n[references]\nDS = "my measurements of the sheet"\n'
                    '[values.dram_bytes_per_s]\nvalue = 3.0e12\nref = "DS"\n')
    sheet = load_datasheet(path)
    plan = _plan(H100, ValidationOptions(quick=True, datasheet=sheet))
    assert plan.model.dram_bytes_per_s == 3.0e12
    assert "from the datasheet my-h100" in plan.model.description
    verdict = _model_verdict(H100, None, None, sheet)
    assert verdict["transferred"] and "my-h100" in verdict["description"]
    for args in (["report", "--device-model", "nvidia-h200", "--datasheet", str(path)],
                 ["validate", "--device-model", "nvidia-h200", "--datasheet", str(path)],
                 ["validate", "--predict-only", "--device-model", "nvidia-h200",
                  "--datasheet", str(path)]):
        res = CliRunner().invoke(main, args)
        assert res.exit_code == 2 and "--datasheet has no effect" in res.output, args
