"""Tests of analysis.report.build (the sweep, results.json, history, re-rendering) and of
analysis.report.plots.fit_power_law.

The quick sweep on PoCL takes a few seconds; it runs twice per test run (conftest's
``two_quick_reports``, which test_api_commands and test_no_history read too): once with the
default model, a GPU's, once more with a model calibrated on the device, which is validated,
and to see the first results.json moved into history/.
"""
from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tiletraffic.analysis.report import build as report
from tiletraffic.analysis.report.plots import fit_power_law
from tiletraffic.gpu.devices.device import list_devices
from tiletraffic.gpu.runtime.launch import MIN_REPEAT


HAS_POCL = any(d.is_pocl for d in list_devices())
needs_pocl = pytest.mark.skipif(not HAS_POCL, reason="PoCL is not installed "
                                "(pip install pocl-binary-distribution)")

FIGURES = ("reads_vs_n.png", "reads_per_tile_vs_b.png", "ratio_vs_speedup.png",
           "speedup_vs_n.png")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
VERDICT = re.compile(r"\b(not met|met)\b")


@pytest.fixture(scope="module")
def reports(two_quick_reports):
    """Two quick reports on PoCL into one directory (conftest's ``two_quick_reports``), the
    first with the default model (a GPU's), the second with a model calibrated on this
    device: (directory, directory of the second, first JSON, files after the first, second
    JSON, first report.md). The tests only read the directory."""
    r = two_quick_reports
    return r["out"], r["again"], r["first"], r["first_files"], r["second"], r["first_md"]


@needs_pocl
def test_report_writes_markdown_json_and_four_figures(reports):
    out, _, _, first_files, _, first_md = reports
    assert out.name.endswith("-quick") and out.name.startswith("pocl")
    assert {"report.md", "results.json", *FIGURES} <= first_files
    for fig in FIGURES:
        data = (out / fig).read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 1000
        assert f"]({fig})" in first_md
    assert not [p for p in out.iterdir() if p.name.startswith(".")], "no temporary file left"


@needs_pocl
def test_a_cases_check_before_launch_serves_all_its_rounds(reports):
    data = json.loads(reports[2])
    measured = [e for e in data["results"] if e.get("device_runs")]
    assert measured and report.ROUNDS >= 2
    for entry in measured:
        first, *later = entry["device_runs"]
        assert "reused" not in first["launch_check"]
        assert later and all(r["launch_check"]["reused"] for r in later)
        assert {r["launch_check"]["sum_length"] for r in later} == \
            {first["launch_check"]["sum_length"]}


@needs_pocl
def test_results_json_meta_names_the_device(reports):
    data = json.loads(reports[4])
    meta = data["meta"]
    assert meta["quick"] is True and meta["repeat"] == 10 and meta["rounds"] == report.ROUNDS
    assert meta["case_list"] == "quick"
    assert "Portable Computing Language" in meta["device"]["platform_name"]
    assert meta["device"]["device_name"] and meta["device_slug"] == reports[0].name[:-6]
    assert meta["created_utc"].endswith("Z")
    assert meta["software"]["numpy"] == np.__version__
    load = meta["machine_load"]    # other processes' CPU time while the cases were timed
    assert load["cpus"] >= 1 and load["wall_s"] > 0 and 0 <= load["other_cpu_share"] <= 1


@needs_pocl
def test_every_result_agrees_with_closed_forms_and_the_measured_ran_in_rounds(reports):
    data = json.loads(reports[4])
    expected = {p.key for p in report.default_sweep(True)}
    assert {(e["family"], e["m"], e["k"], e["n"], e["tile"]) for e in data["results"]} == expected
    assert all("counts" in e and e["closed_form_agrees"] is True for e in data["results"])
    measured = [e for e in data["results"] if e["measure"]]
    assert {e["n"] for e in measured if e["group"] == "square"} == \
        set(report.MEASURED_SIZES["quick"][0])
    for e in data["results"]:
        if not e["measure"]:
            assert "device_runs" not in e, "counted-only points never run"
            continue
        assert [r["round"] for r in e["device_runs"]] == list(range(report.ROUNDS)), e
        for run in e["device_runs"]:
            assert len(run["kernel_times_s"]) >= MIN_REPEAT
            assert run["check"]["ok"] is True


@needs_pocl
def test_a_cpu_under_a_gpu_model_gets_no_verdicts_and_no_validation(reports):
    out, _, first, first_files, _, first_md = reports
    assert "validate" not in first_files, "no model comparison ran"
    model = json.loads(first)["meta"]["model"]
    assert model["name"] == "generic-gpu" and model["describes_device"] is False
    assert "## The model on this device" in first_md
    assert "is not a model of" in first_md and "describes a GPU" in first_md
    assert not VERDICT.search(first_md), VERDICT.search(first_md)


@needs_pocl
def test_a_model_of_the_device_itself_is_validated_with_verdicts(reports):
    out, again, *_ = reports
    assert again == out
    data = json.loads((out / "validate" / "validation.json").read_text())
    assert data["meta"]["case_list"] == "quick" and data["meta"]["complete"] is True
    assert data["meta"]["device_model"]["describes_device"] is True
    families = {c["family"] for c in data["cases"]}
    from tiletraffic.simulator.kernels.families import FAMILIES
    assert families == set(FAMILIES)
    text = (out / "report.md").read_text()
    assert "## The model against " in text and "| target | asked | reached |" in text
    assert VERDICT.search(text)
    assert "](validate/predicted_vs_measured.png)" in text
    assert "Raw data: `validate/validation.json`." in text, "the path from report.md"
    assert "Timings on " in text, "how noisy the device was"


@needs_pocl
def test_report_table_gives_every_measured_time_with_its_spread(reports):
    text = reports[5]
    rows = [line for line in text.splitlines() if line.startswith("| square |")]
    assert rows and all(line.count(" ± ") == 2 for line in rows), rows
    assert "median ± spread" in text


@needs_pocl
def test_square_naive_counts_are_2_n_cubed_and_tiled_divides_by_b(reports):
    data = json.loads(reports[4])
    for e in data["results"]:
        if e["group"] != "square":
            continue
        loads = e["counts"]["global_load_elems"]
        n = e["n"]
        assert loads == (2 * n**3 if e["family"] == "gemm-naive" else 2 * n**3 // e["tile"])


@needs_pocl
def test_second_report_moves_the_first_results_into_history(reports):
    out, again, first, _, second, _ = reports
    assert again == out
    history = sorted((out / "history").glob("results-*.json"))
    assert len(history) == 1
    assert history[0].read_text() == first, "the earlier results are kept byte for byte"
    assert json.loads(second)["meta"]["created_utc"] >= json.loads(first)["meta"]["created_utc"]


@needs_pocl
def test_render_rewrites_the_report_from_json_only(reports, tmp_path, monkeypatch):
    src = reports[0]
    data = json.loads((src / "results.json").read_text())

    def no_device(*a, **k):
        raise AssertionError("render must not touch a device or the simulator")

    import tiletraffic.gpu.runtime.checked_run
    import tiletraffic.gpu.devices.device
    import tiletraffic.simulator.engine.simulation
    monkeypatch.setattr(tiletraffic.gpu.devices.device, "select_device", no_device)
    monkeypatch.setattr(tiletraffic.gpu.runtime.checked_run, "run_on_device", no_device)
    monkeypatch.setattr(tiletraffic.simulator.engine.simulation, "simulate", no_device)
    monkeypatch.setattr(report, "simulate", no_device)

    same, renamed = tmp_path / "same", tmp_path / "renamed"
    same.mkdir()
    (same / "results.json").write_text(json.dumps(data))
    (same / "validate").mkdir()
    (same / "validate" / "validation.json").write_bytes(
        (src / "validate" / "validation.json").read_bytes())
    (same / "explain").mkdir()
    for doc in (src / "explain").glob("*.json"):     # the explain pages' documents
        (same / "explain" / doc.name).write_bytes(doc.read_bytes())
    assert report.render(same) == same / "report.md"
    assert (same / "report.md").read_text() == (src / "report.md").read_text(), \
        "the same JSON renders the same report"
    for fig in FIGURES:
        assert (same / fig).read_bytes().startswith(PNG_MAGIC)
    assert (same / "validate" / "validation.md").read_text() == \
        (src / "validate" / "validation.md").read_text(), "the validation is re-rendered too"
    assert (same / "validate" / "predicted_vs_measured.png").read_bytes().startswith(PNG_MAGIC)

    data["meta"]["device"]["device_name"] = "Renamed Test Device 7"
    renamed.mkdir()
    (renamed / "results.json").write_text(json.dumps(data))
    text = report.render(renamed).read_text()
    assert "Renamed Test Device 7" in text
    assert data["meta"]["device"]["platform_name"] in text


def test_render_without_results_json_raises(tmp_path):
    with pytest.raises(FileNotFoundError):
        report.render(tmp_path)


def test_measured_tables_head_a_matvec_work_group_size_and_name_no_repository_file(tmp_path):
    """Rendered from a committed report's results: the GEMM rows under a B (their tile),
    the matrix-vector rows under their work-group size (and M×K), and no file of the
    repository named in the text."""
    from pathlib import Path

    committed = Path(__file__).resolve().parent.parent / "reports" / "pocl-cpu-amd-epyc"
    (tmp_path / "results.json").write_bytes((committed / "results.json").read_bytes())
    text = report.render(tmp_path).read_text()
    gemm_head = "| case | M×K×N | B | naive loads / optimized loads |"
    matvec_head = "| case | M×K | work-group size | naive loads / optimized loads |"
    gemm, matvec = text.split(gemm_head)[1], text.split(matvec_head)[1]
    gemm = gemm.split("\n\n")[0]
    matvec = matvec.split("\n\n")[0]
    assert "| square | 64×64×64 | 4 |" in gemm and "matvec" not in gemm
    assert "| matvec-local vs matvec-naive | 4096×4096 | 256 |" in matvec
    assert "| square |" not in matvec
    assert ".py" not in text and "simulator/" not in text
    assert "*Closed forms of a kernel's counts*" in text


def test_make_report_refuses_fewer_than_ten_repeats(tmp_path):
    with pytest.raises(ValueError, match=str(MIN_REPEAT)):
        report.make_report(device="pocl", out_root=tmp_path, quick=True, repeat=3,
                           progress=False)
    assert not any(tmp_path.iterdir()), "nothing written"


@pytest.mark.parametrize("quick, list_name", [(True, "quick"), (False, "cpu"), (False, "gpu")])
def test_sweep_counts_the_grid_and_measures_the_devices_sizes(quick, list_name):
    points = report.default_sweep(quick, list_name)
    squares, *_ = report.MEASURED_SIZES[list_name]
    square = {(p.family, p.n, p.tile) for p in points if p.group == "square"}
    sizes = set(report.COUNT_SIZES[quick]) | set(squares)
    assert square == {(f, n, b) for f in ("gemm-naive", "gemm-tiled")
                      for n in sizes for b in report.COUNT_TILES[quick]}
    assert {p.group for p in points} == {"square", "non-multiple", "rectangular", "matvec"}
    assert {p.n for p in points if p.group == "square" and p.measure} == set(squares)
    assert all(p.measure for p in points if p.group != "square")
    assert len({p.key for p in points}) == len(points), "no case twice"
    if list_name == "cpu":
        assert max(p.m * p.k * (p.n or 1) for p in points if p.measure) < 1000**3, \
            "a CPU times no 1024³ GEMM"


def test_quick_points_are_valid_schedules():
    from tiletraffic.simulator.kernels.families import FAMILIES

    for p in report.default_sweep(True):
        assert p.build().family in FAMILIES, p


def test_speedup_range_follows_the_spreads():
    from tiletraffic.analysis.report.text import speedups

    def entry(fam, times, loads):
        return {"family": fam, "m": 64, "k": 64, "n": 64, "tile": 8, "group": "square",
                "counts": {"global_load_elems": loads},
                "device_runs": [{"kernel_times_s": t} for t in times]}
    naive = entry("gemm-naive", [[4.0] * 4, [4.0, 4.0, 4.0, 4.0]], 800)
    tiled = entry("gemm-tiled", [[1.0] * 4, [1.5] * 4], 100)
    (s,) = speedups([naive, tiled])
    assert s.cut == 8 and s.value == pytest.approx(4.0 / 1.25)
    assert s.low == pytest.approx(4.0 / 1.75) and s.high == pytest.approx(4.0 / 0.75)
    assert s.label == "GEMM N=64 B=8"


def test_best_speedup_is_named_only_beyond_its_spread():
    from tiletraffic.analysis.report.text import Speedup, best_beyond_spread, speedup_range

    # the largest median has a range reaching below 1: it is not the best
    wide = Speedup("GEMM N=64 B=8", "square", 8.0, 3.0, 0.0, 9.0, 8, 64)
    narrow = Speedup("GEMM N=128 B=8", "square", 8.0, 1.5, 1.2, 1.8, 8, 128)
    slow = Speedup("GEMM N=32 B=8", "square", 8.0, 0.8, 0.7, 0.9, 8, 32)
    assert best_beyond_spread([wide, narrow, slow]) is narrow
    assert best_beyond_spread([wide, slow]) is None
    assert speedup_range(wide) == "0–9.00"
    assert speedup_range(narrow) == "1.20–1.80"
    assert speedup_range(Speedup("x", "square", 8.0, 2.0, 1.1, float("inf"), 8, 64)) \
        == "1.10–∞"


def test_model_describes_only_its_own_device():
    from types import SimpleNamespace

    from tiletraffic.analysis.calibrate.calibrate import Measurement, calibrated_model
    from tiletraffic.gpu.devices.device_models import model_describes_device
    from tiletraffic.simulator.model.device_model import device_model

    cpu = SimpleNamespace(device_name="pthread-Some CPU", is_gpu=False)
    h200 = SimpleNamespace(device_name="NVIDIA H200", is_gpu=True)
    other_gpu = SimpleNamespace(device_name="Another GPU", is_gpu=True)
    assert model_describes_device(device_model("generic-gpu"), cpu)[0] is False
    assert model_describes_device(device_model("nvidia-h200"), cpu)[0] is False
    assert model_describes_device(device_model("nvidia-h200"), h200)[0] is True
    assert model_describes_device(device_model("generic-gpu"), other_gpu)[0] is False
    mine = calibrated_model(device_model("generic-gpu"), [Measurement(
        "dram_read", "x", 1e10, "B/s", field="dram_bytes_per_s", field_value=1e10)],
        "pthread-Some CPU (PoCL)")
    ok, why = model_describes_device(mine, cpu)
    assert ok and "measured on pthread-Some CPU" in why
    assert model_describes_device(mine, other_gpu)[0] is False


# ------------------------------------------------------------------ fit_power_law
@given(p=st.sampled_from([1.0, 2.0]), c=st.floats(1e-3, 1e3),
       x=st.lists(st.floats(0.5, 5000), min_size=2, max_size=8, unique=True))
def test_fit_power_law_recovers_exact_power_laws(p, c, x):
    x = np.asarray(x)
    if np.ptp(np.log(x)) < 1e-3:  # nearly equal x: the slope is ill-conditioned
        x = np.append(x, x[0] * 4)
    slope, coeff = fit_power_law(x, c * x**p)
    assert slope == pytest.approx(p, abs=1e-9)
    assert coeff == pytest.approx(c, rel=1e-9)


def test_fit_power_law_on_textbook_counts():
    sizes = np.array([64, 128, 256, 512])
    assert fit_power_law(sizes, 2 * sizes**3)[0] == pytest.approx(3, abs=1e-9)
    tiles = np.array([4, 8, 16, 32])
    assert fit_power_law(tiles, tiles**2 * 2 * 256)[0] == pytest.approx(2, abs=1e-9)
    assert fit_power_law(tiles, 2 * 256 * tiles)[0] == pytest.approx(1, abs=1e-9)


@pytest.mark.parametrize("x, y", [
    ([], []),
    ([3.0], [9.0]),
    ([0.0, 1.0, 2.0], [1.0, 2.0, 3.0]),
    ([1.0, 2.0], [0.0, 4.0]),
    ([-1.0, 2.0], [1.0, 4.0]),
    ([1.0, 2.0], [1.0, -4.0]),
])
def test_fit_power_law_refuses_bad_input(x, y):
    with pytest.raises(ValueError, match="power-law fit"):
        fit_power_law(x, y)


@pytest.mark.filterwarnings("ignore::numpy.exceptions.RankWarning")
@pytest.mark.parametrize("x, y", [
    ([1.0, 2.0, 4.0], [1.0, math.nan, 16.0]),
    ([2.0, 2.0, 2.0], [1.0, 2.0, 3.0]),
])
def test_fit_power_law_refuses_non_finite_or_degenerate_input(x, y):
    with pytest.raises(ValueError):
        fit_power_law(x, y)


@pytest.mark.parametrize("x, y", [([1.0, math.nan, 4.0], [1.0, 4.0, 16.0]),
                                  ([1.0, math.inf], [1.0, 4.0])])
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_fit_power_law_non_finite_x_raises_a_value_error(x, y):
    with pytest.raises(ValueError):
        fit_power_law(x, y)
