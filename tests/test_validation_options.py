"""The options of a built-in case list of `tiletraffic validate` (`--dtype`, `--batch`,
`--shared-b`, and `tt.validate(..., dtype=...)`): the cases they make, the name and folder
they are recorded under, their refusals, and the quick list run in half storage on PoCL,
checked against float64 with half's tolerance."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import tiletraffic as tt
from tiletraffic.analysis.cli import main
from tiletraffic.analysis.validation import cases as v
from tiletraffic.analysis.validation import predict as vp
from tiletraffic.analysis.validation import run as vr
from tiletraffic.gpu.devices.device import list_devices

HAS_POCL = any(d.is_pocl for d in list_devices())
needs_pocl = pytest.mark.skipif(not HAS_POCL, reason="PoCL is not installed")


def _error_line(res) -> str:
    """The one line a refused command printed (exit status 2, one non-empty line)."""
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert res.exit_code == 2, res.output
    assert len(lines) == 1, res.output
    return lines[0]


def _one_line_error(res, *pieces):
    line = _error_line(res)
    for piece in pieces:
        assert piece in line, line


def test_a_half_list_is_the_float32_list_with_every_case_stored_as_half():
    plain, half = v.case_list("quick"), v.case_list("quick", dtype="float16")
    assert len(half) == len(plain)
    for a, b in zip(plain, half):
        assert dict(b.options) == {**dict(a.options), "dtype": "float16"}
        assert (b.family, b.m, b.k, b.n, b.tile) == (a.family, a.m, a.k, a.n, a.tile)
        assert b.problem == a.problem + " float16"
        assert {arr.dtype for arr in b.build().arrays} == {"half"}
    assert v.case_list("quick", dtype="float32") == plain
    assert tt.validation_cases("quick", dtype="float16") == half


def test_a_batch_applies_to_the_gemm_cases_only():
    cases = v.case_list("quick", batch=4, shared_b=True)
    gemm = [c for c in cases if c.kind == "gemm"]
    matvec = [c for c in cases if c.kind == "matvec"]
    assert gemm and matvec
    assert all(dict(c.options)["batch"] == 4 and dict(c.options)["shared_b"] is True
               for c in gemm)
    assert all("batch" not in dict(c.options) for c in matvec)
    assert matvec == [c for c in v.case_list("quick") if c.kind == "matvec"]
    assert gemm[0].problem.startswith("gemm 4 × ") and "shared B" in gemm[0].problem
    assert v.case_list("quick", batch=1) == v.case_list("quick")


def test_the_list_s_recorded_name_and_folder_name_its_options():
    assert v.case_list_label("quick") == "quick"
    assert v.case_list_label("gpu", dtype="float16", batch=8, shared_b=True) == \
        "gpu --dtype float16 --batch 8 --shared-b"
    assert v.case_list_label("cpu", dtype="float32", batch=1) == "cpu"
    assert vr.default_out_dir("dev", "quick", "r").as_posix() == "r/dev-quick/validate"
    assert vr.default_out_dir("dev", "gpu", "r").as_posix() == "r/dev/validate"
    assert vr.default_out_dir("dev", "quick --dtype float16", "r").as_posix() == \
        "r/dev-quick-float16/validate"
    assert vr.default_out_dir("dev", "gpu --dtype float16 --batch 8 --shared-b",
                              "r").as_posix() == "r/dev-float16-batch8-shared-b/validate"
    assert vr.default_out_dir("dev", None, "r").as_posix() == "r/dev/validate"


@pytest.mark.parametrize("options, message", [
    ({"dtype": "float64"}, "dtype 'float64' is not one of float32, float16"),
    ({"batch": 0}, "batch must be a positive integer, got 0"),
    ({"batch": True}, "batch must be a positive integer, got True"),
    ({"shared_b": True}, "shared_b applies to a batch of 2 or more products, got batch = 1"),
])
def test_bad_list_options_are_refused_naming_the_value(options, message):
    with pytest.raises(v.CaseError, match=message):
        v.case_list("quick", **options)
    with pytest.raises(ValueError, match=message):
        vr.ValidationOptions(quick=True, **options)


def test_list_options_are_refused_with_the_users_own_cases():
    with pytest.raises(v.CaseError, match="not with your own cases"):
        vr.ValidationOptions(cases=v.case_list("quick")[:1], dtype="float16")
    with pytest.raises(v.CaseError, match="not with a predictions file and no case list"):
        vr.ValidationOptions(predictions_file="p.json", batch=2)
    vr.ValidationOptions(predictions_file="p.json", quick=True, dtype="float16")   # a list
    with pytest.raises(v.CaseError, match="not to your own cases"):
        tt.write_predictions("p.json", "generic-gpu", v.case_list("quick")[:1],
                             dtype="float16")


@pytest.mark.parametrize("args, pieces", [
    (["--dtype", "float64"], ["'float64' is not one of float32, float16", "--dtype"]),
    (["--batch", "0"], ["'--batch'", "0 is not in the range x>=1"]),
    (["--shared-b"], ["--shared-b applies to a batch of 2 or more", "--batch 1"]),
    (["--dtype", "float16", "--render", "x"], ["--quick, --dtype have no effect with --render"]),
])
def test_cli_bad_list_options_are_one_line_exit_2(args, pieces):
    line = _error_line(CliRunner().invoke(main, ["validate", "--quick", *args]))
    assert all(piece in line for piece in pieces), (line, pieces)


def test_cli_refuses_list_options_with_a_case_file_or_a_predictions_file_alone(tmp_path):
    cases = tmp_path / "cases.toml"
    cases.write_text(v.cases_toml(v.case_list("quick")[:1]))
    pred = tmp_path / "pred.json"
    pred.write_text("{}")
    refused = {
        ("--cases", str(cases), "--dtype", "float16", "--print-cases"):
            ("--dtype has no effect with --cases", "set them in the file"),
        ("--predictions", str(pred), "--batch", "2"):
            ("--batch has no effect with --predictions and no case list",),
        # --shared-b alone: refused as an option of no effect there, not sent to --batch 2
        ("--cases", str(cases), "--shared-b", "--print-cases"):
            ("--shared-b has no effect with --cases",),
        ("--predictions", str(pred), "--shared-b"):
            ("--shared-b has no effect with --predictions and no case list",),
    }
    for args, pieces in refused.items():
        line = _error_line(CliRunner().invoke(main, ["validate", *args]))
        assert all(piece in line for piece in pieces), (args, line)


def test_cli_prints_the_list_in_half_storage_and_predicts_it_without_a_device(
        tmp_path, monkeypatch):
    res = CliRunner().invoke(main, ["validate", "--print-cases", "--quick", "--dtype",
                                    "float16", "--batch", "3"])
    assert res.exit_code == 0, res.output
    printed = tmp_path / "cases.toml"
    printed.write_text(res.stdout)
    assert v.read_cases(printed) == v.case_list("quick", dtype="float16", batch=3)

    import tiletraffic.gpu.devices.device as device

    def no_device(*a, **k):
        raise AssertionError("--predict-only must not open a device")
    monkeypatch.setattr(device, "select_device", no_device)
    monkeypatch.setitem(v.CASE_SIZES, "gpu", ((64,), (256,)))   # a small "gpu" list
    out = tmp_path / "pred.json"
    res = CliRunner().invoke(main, ["validate", "--predict-only", "--dtype", "float16",
                                    "--device-model", "nvidia-h200", "--out", str(out)])
    assert res.exit_code == 0, res.output
    pf = vp.read_predictions(out)
    assert pf.cases == v.case_list("gpu", dtype="float16")
    assert pf.document["case_list"] == "gpu --dtype float16"
    # half storage moves half the bytes: the matrix-vector products' DRAM time about halves
    plain = tmp_path / "plain.json"
    single = tt.write_predictions(plain, "nvidia-h200", case_list="gpu")["predictions"]
    pairs = [(pf.predictions[h.id]["time_terms_s"]["dram_s"],
              single[s.id]["time_terms_s"]["dram_s"])
             for h, s in zip(pf.cases, v.case_list("gpu")) if h.kind == "matvec"]
    assert pairs and all(0.4 < half / full < 0.6 for half, full in pairs), pairs


@pytest.fixture(scope="module")
def half_quick_run(tmp_path_factory):
    """`tiletraffic validate --quick --dtype float16` on PoCL, one round (the quick list's
    smaller size of each kind, to keep the suite short): (output folder, CLI output)."""
    if not HAS_POCL:
        pytest.skip("PoCL is not installed")
    out = tmp_path_factory.mktemp("validate-half") / "v"
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(v.CASE_SIZES, "quick", ((64,), (256,)))
        res = CliRunner().invoke(main, ["validate", "--quick", "--dtype", "float16",
                                        "--device", "pocl", "--device-model", "generic-gpu",
                                        "--rounds", "1", "--out", str(out)])
        cases = v.case_list("quick", dtype="float16")
    assert res.exit_code == 0, res.output
    return out, res.output, cases


@needs_pocl
def test_quick_list_in_half_storage_runs_on_pocl_checked_with_half_tolerance(half_quick_run):
    out, output, cases = half_quick_run
    data = json.loads((out / "validation.json").read_text())
    assert data["meta"]["case_list"] == "quick --dtype float16"
    assert data["meta"]["complete"] is True
    assert data["cases"] == [c.to_dict() for c in cases]
    assert all(c["dtype"] == "float16" for c in data["cases"])
    assert {c.kind for c in cases} == {"gemm", "matvec"}
    for c in cases:
        (r,) = data["measurements"][c.id]["rounds"]
        check = r["check"]
        assert check["ok"] is True and check["stored_half"] is True, (c.id, check)
        assert 0 <= check["error_over_tolerance"] <= 1, (c.id, check)
        assert len(r["kernel_times_s"]) == 10 and min(r["kernel_times_s"]) > 0
    assert f"{len(cases)} of {len(cases)} cases compared" in output
    md = (out / "validation.md").read_text()
    assert "quick --dtype float16" in md and "float16" in md


@needs_pocl
def test_the_plan_records_the_list_with_its_options_and_applies_them_to_the_default():
    from tiletraffic.gpu.devices.device import select_device

    info = select_device("pocl").info
    plan = vr._plan(info, vr.ValidationOptions(quick=True, dtype="float16",
                                               model="generic-gpu"))
    assert plan.list_name == "quick --dtype float16"
    assert plan.cases == v.case_list("quick", dtype="float16")
    plan = vr._plan(info, vr.ValidationOptions(batch=2, model="generic-gpu"))   # the default
    assert plan.list_name == "cpu --batch 2" and plan.cases == v.case_list("cpu", batch=2)


def test_tune_shapes_in_half_storage_write_their_own_files(tmp_path):
    """`tune gemm --shapes FILE --dtype float16` names each shape's file as `tune gemm
    --m --n --k --dtype float16` does (gemm-MxNxK-float16.json), not the float32 file's."""
    from test_tuner import SMALL_SPACE, write

    space = write(tmp_path, SMALL_SPACE)
    shapes = write(tmp_path, "[[shape]]\nm = 32\nn = 32\nk = 32\n", "shapes.toml")
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "gemm-32x32x32.json").write_text("{}")   # a float32 tuning's file
    res = CliRunner().invoke(main, ["tune", "gemm", "--shapes", str(shapes), "--space",
                                    str(space), "--top", "0", "--dtype", "float16",
                                    "--batch", "2", "--out", str(tmp_path / "t")])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "t" / "gemm-32x32x32-batch2-float16.json").read_text())
    assert doc["meta"]["dtype"] == "float16" and doc["meta"]["batch"] == 2
    assert (tmp_path / "t" / "gemm-32x32x32.json").read_text() == "{}", "left alone"
    assert "gemm-32x32x32-batch2-float16.json" in res.stdout


@needs_pocl
def test_a_batch_beyond_the_hosts_memory_is_refused_before_any_work(monkeypatch, tmp_path):
    from tiletraffic.simulator.engine import budget

    monkeypatch.setattr(budget, "available_memory_bytes", lambda: 64 * 2**20)
    res = CliRunner().invoke(main, ["validate", "--quick", "--batch", "2000", "--device",
                                    "pocl", "--out", str(tmp_path / "v")])
    _one_line_error(res, "case list: case 1 (gemm-naive m=64 k=64 n=64 tile=16 batch=2000)",
                    "of memory is available")
    assert not (tmp_path / "v").exists(), "refused before anything is written"
    res = CliRunner().invoke(main, ["validate", "--quick", "--batch", "10000000"])
    _one_line_error(res, "exceeds the 32-bit int index limit")


@needs_pocl
def test_a_model_of_another_device_says_so_before_its_error_figures(half_quick_run):
    # generic-gpu is no model of a CPU: the "no verdicts" line comes before the figures
    lines = half_quick_run[1].splitlines()
    said = next(i for i, x in enumerate(lines) if x.startswith("no verdicts: "))
    assert lines[said].endswith("; the model's errors here, for information:"), lines[said]
    figure = next(i for i, x in enumerate(lines) if x.startswith("median-abs-error"))
    assert said < figure, lines
