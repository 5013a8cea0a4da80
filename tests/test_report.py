"""Tests of analysis.report (the sweep, results.json, history, re-rendering) and of
analysis.plots.fit_power_law.

The quick sweep on PoCL takes a few seconds; it runs twice in this module (once to write a
report, once more to see the first results.json moved into history/).
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tiletraffic.analysis import report
from tiletraffic.analysis.plots import fit_power_law
from tiletraffic.gpu.device import list_devices
from tiletraffic.gpu.runtime import MIN_REPEAT

HAS_POCL = any(d.is_pocl for d in list_devices())
needs_pocl = pytest.mark.skipif(not HAS_POCL, reason="PoCL is not installed "
                                "(pip install pocl-binary-distribution)")

FIGURES = ("reads_vs_n.png", "reads_per_tile_vs_b.png", "ratio_vs_speedup.png")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """Two quick reports on PoCL into one directory: (directory, first JSON, second JSON)."""
    if not HAS_POCL:
        pytest.skip("PoCL is not installed (pip install pocl-binary-distribution)")
    root = tmp_path_factory.mktemp("reports")
    out = report.make_report(device="pocl", out_root=root, quick=True, progress=False)
    first = (out / "results.json").read_text()
    first_files = {p.name for p in out.iterdir()}
    again = report.make_report(device="pocl", out_root=root, quick=True, progress=False)
    return out, again, first, first_files, (out / "results.json").read_text()


@needs_pocl
def test_report_writes_markdown_json_and_three_figures(reports):
    out, _, _, first_files, _ = reports
    assert out.name.endswith("-quick") and out.name.startswith("pocl")
    assert {"report.md", "results.json", *FIGURES} <= first_files
    for fig in FIGURES:
        data = (out / fig).read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 1000
        assert f"]({fig})" in (out / "report.md").read_text()
    assert not [p for p in out.iterdir() if p.name.startswith(".")], "no temporary file left"


@needs_pocl
def test_results_json_meta_names_the_device(reports):
    data = json.loads(reports[2])
    meta = data["meta"]
    assert meta["quick"] is True and meta["repeat"] == 10
    assert "Portable Computing Language" in meta["device"]["platform_name"]
    assert meta["device"]["device_name"] and meta["device_slug"] == reports[0].name[:-6]
    assert meta["created_utc"].endswith("Z")
    assert meta["software"]["numpy"] == np.__version__


@needs_pocl
def test_every_result_agrees_with_closed_forms_and_ran_or_says_why(reports):
    data = json.loads(reports[2])
    expected = {(p.family, p.m, p.k, p.n, p.tile) for p in report.default_sweep(True)}
    assert {(e["family"], e["m"], e["k"], e["n"], e["tile"]) for e in data["results"]} == expected
    with_counts = [e for e in data["results"] if "counts" in e]
    assert with_counts, "the quick sweep simulates every case"
    for e in with_counts:
        assert e["closed_form_agrees"] is True, e
        if "device_run" in e:
            run = e["device_run"]
            assert len(run["kernel_times_s"]) >= MIN_REPEAT
            assert run["min_s"] <= run["median_s"] <= run["max_s"]
            assert run["check"]["ok"] is True
        else:
            assert e["device_error"], e
    # PoCL takes every quick case
    assert all("device_run" in e for e in with_counts)


@needs_pocl
def test_report_includes_the_validation_of_every_family_on_its_device(reports):
    out, _, _, first_files, _ = reports
    assert "validate" in first_files
    data = json.loads((out / "validate" / "validation.json").read_text())
    assert data["meta"]["case_list"] == "quick" and data["meta"]["complete"] is True
    assert data["meta"]["device_slug"] == out.name[:-6]
    families = {c["family"] for c in data["cases"]}
    from tiletraffic.simulator.schedules import FAMILIES
    assert families == set(FAMILIES)
    text = (out / "report.md").read_text()
    assert "## The model against " in text and "| target (issue #14) |" in text
    assert "](validate/predicted_vs_measured.png)" in text
    assert "Raw data: `validate/validation.json`." in text, "the path from report.md"
    assert "Timings on " in text, "how noisy the device was"
    history = sorted((out / "validate" / "history").glob("validation-*.json"))
    assert len(history) == 1, "the first report's validation is kept"


@needs_pocl
def test_square_naive_counts_are_2_n_cubed_and_tiled_divides_by_b(reports):
    data = json.loads(reports[2])
    for e in data["results"]:
        if e["group"] != "square":
            continue
        loads = e["counts"]["global_load_elems"]
        n = e["n"]
        assert loads == (2 * n**3 if e["family"] == "gemm-naive" else 2 * n**3 // e["tile"])


@needs_pocl
def test_second_report_moves_the_first_results_into_history(reports):
    out, again, first, _, second = reports
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

    import tiletraffic.analysis.validate
    import tiletraffic.gpu.device
    import tiletraffic.simulator.engine
    monkeypatch.setattr(tiletraffic.gpu.device, "select_device", no_device)
    monkeypatch.setattr(tiletraffic.analysis.validate, "run_on_device", no_device)
    monkeypatch.setattr(tiletraffic.simulator.engine, "simulate", no_device)
    monkeypatch.setattr(report, "simulate", no_device)

    same, renamed = tmp_path / "same", tmp_path / "renamed"
    same.mkdir()
    (same / "results.json").write_text(json.dumps(data))
    (same / "validate").mkdir()
    (same / "validate" / "validation.json").write_bytes(
        (src / "validate" / "validation.json").read_bytes())
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


def test_make_report_refuses_fewer_than_ten_repeats(tmp_path):
    with pytest.raises(ValueError, match=str(MIN_REPEAT)):
        report.make_report(device="pocl", out_root=tmp_path, quick=True, repeat=3,
                           progress=False)
    assert not any(tmp_path.iterdir()), "nothing written"


def test_quick_sweep_has_both_gemm_schedules_at_every_size_and_tile():
    points = report.default_sweep(True)
    square = {(p.family, p.n, p.tile) for p in points if p.group == "square"}
    assert square == {(f, n, b) for f in ("gemm-naive", "gemm-tiled")
                      for n in report.QUICK_SIZES for b in report.QUICK_TILES}
    assert {p.group for p in points} == {"square", "non-multiple", "rectangular", "matvec"}
    for p in points:
        p.build()  # every point is a valid schedule


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


@needs_pocl
def test_make_report_without_validation_writes_the_sweep_only(tmp_path):
    out = report.make_report(device="pocl", out_root=tmp_path, quick=True, progress=False,
                             validation=False)
    assert (out / "report.md").exists() and not (out / "validate").exists()
    assert "## The model against " not in (out / "report.md").read_text()
