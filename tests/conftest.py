"""Test configuration: the hypothesis profile "ci" (no deadline, 30 examples) is the default.

Choose another profile with ``HYPOTHESIS_PROFILE=<name>`` ("thorough": 300 examples).
"""
from __future__ import annotations

import os
from pathlib import Path

from hypothesis import settings

settings.register_profile("ci", deadline=None, max_examples=30)
settings.register_profile("thorough", deadline=None, max_examples=300)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


import pytest  # noqa: E402

from shared_results import computed_once  # noqa: E402


COMPUTED_ONCE_FIXTURES = ("crosscheck_all", "two_quick_reports", "small_run", "pocl_model",
                          "built")
"""Fixtures whose value one worker computes for the run (``shared_results.computed_once``)."""

ONE_WORKER_FIXTURES = ("half_quick_run", "planned", "browser")
"""Module fixtures of a few seconds each (a validation or tuning run, a browser started)
whose tests run on one worker, so that the value is computed once per run rather than once
per worker."""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Under ``--dist loadgroup``, the tests of one computed-once fixture form one xdist
    group (named after the fixture), so they run on one worker: the other workers go on
    with other tests instead of waiting on the fixture's lock while it is computed. The
    tests of each of :data:`ONE_WORKER_FIXTURES` form one group too. Runs before xdist
    reads the groups from the markers."""
    for item in items:
        used = [name for name in COMPUTED_ONCE_FIXTURES + ONE_WORKER_FIXTURES
                if name in getattr(item, "fixturenames", ())]
        if used and not any(True for _ in item.iter_markers("xdist_group")):
            kind = "computed-once" if used[0] in COMPUTED_ONCE_FIXTURES else "module-fixture"
            item.add_marker(pytest.mark.xdist_group(f"{kind}-{used[0]}"))


@pytest.fixture(scope="session")
def crosscheck_all(tmp_path_factory):
    """``tiletraffic crosscheck --all --json`` run once per test run, also with ``-n``
    (Oclgrind takes about a second per kernel): ``tests/golden/record.py``'s record of it
    (argv, exit status, stdout parsed, stderr), shared by test_crosscheck and
    test_golden_outputs."""
    from golden.record import CROSSCHECK_ARGV, invoke

    return computed_once(tmp_path_factory, "crosscheck_all", lambda: invoke(CROSSCHECK_ARGV))


def _calibrated_here(tmp_path):
    """A model file with one value measured on the PoCL device (as calibrate writes it)."""
    from tiletraffic.analysis.calibrate.calibrate import Measurement, calibrated_model
    from tiletraffic.gpu.devices.device import select_device
    from tiletraffic.gpu.devices.device_models import model_from_opencl
    from tiletraffic.simulator.model.device_model import to_toml

    info = select_device("pocl").info
    model = calibrated_model(model_from_opencl(info), [Measurement(
        "dram_read", "64 MiB, median", 2.0e10, "B/s", field="dram_bytes_per_s",
        field_value=2.0e10)],
        f"{info.device_name} ({info.platform_name}, driver {info.driver_version})")
    path = tmp_path / "here.toml"
    path.write_text(to_toml(model))
    return path


def _two_quick_reports(tmp_path_factory) -> dict:
    from click.testing import CliRunner

    import tiletraffic as tt
    from tiletraffic.analysis.cli import main

    root = tmp_path_factory.mktemp("reports")
    res = CliRunner().invoke(main, ["report", "--quick", "--device", "pocl", "--out", str(root)])
    assert res.exit_code == 0, res.output
    (out,) = [p for p in root.iterdir() if p.is_dir()]
    first = {"first": (out / "results.json").read_text(), "first_md": (out / "report.md").read_text(),
             "first_files": {p.name for p in out.iterdir()}}
    here = _calibrated_here(tmp_path_factory.mktemp("model"))
    again = tt.report("pocl", out=root, quick=True, device_model=here)
    return {"root": root, "out": out, "again": again, "cli_output": res.output, **first,
            "second": (out / "results.json").read_text()}


@pytest.fixture(scope="session")
def two_quick_reports(tmp_path_factory):
    """Two quick reports on PoCL into one folder, made once per test run
    (``shared_results.computed_once``): the first by ``tiletraffic report --quick --device
    pocl --out ROOT`` with the default model (a GPU's), the second by ``tt.report`` with a
    model calibrated on this device. A dict: ``root`` (the ``--out`` folder), ``out`` (the
    report folder), ``again`` (the folder ``tt.report`` returned), ``cli_output`` (what the
    command printed), ``first`` / ``first_md`` / ``first_files`` (the first run's
    results.json, report.md and file names) and ``second`` (the second run's results.json).
    The tests only read the folder."""
    from tiletraffic.gpu.devices.device import list_devices

    if not any(d.is_pocl for d in list_devices()):
        pytest.skip("PoCL is not installed (pip install pocl-binary-distribution)")
    return computed_once(tmp_path_factory, "two_quick_reports",
                         lambda: _two_quick_reports(tmp_path_factory))


def _calibrated(tmp_path_factory) -> tuple[int, str, Path]:
    from click.testing import CliRunner

    from tiletraffic.analysis.cli import main

    path = tmp_path_factory.mktemp("model") / "pocl.toml"
    res = CliRunner().invoke(main, ["calibrate", "--quick", "--device", "pocl",
                                    "--out", str(path)])
    return res.exit_code, res.output, path


@pytest.fixture(scope="session")
def pocl_model(tmp_path_factory):
    """A device-model file of the PoCL CPU device written by `tiletraffic calibrate --quick
    --device pocl` (which must exit 0), made once per test run
    (``shared_results.computed_once``) for test_calibrate and test_validation; the tests
    only read it."""
    from tiletraffic.gpu.devices.device import list_devices

    if not any(d.is_pocl for d in list_devices()):
        pytest.skip("PoCL is not installed (pip install pocl-binary-distribution)")
    exit_code, output, path = computed_once(tmp_path_factory, "pocl_model",
                                            lambda: _calibrated(tmp_path_factory))
    assert exit_code == 0, output
    return path


@pytest.fixture
def checks_before_launch(monkeypatch):
    """The schedules ``run_on_device`` checks before launch during the test, in order (the
    check itself still runs)."""
    from tiletraffic.gpu.runtime import checked_run as measure

    made = []
    check = measure.check_before_launch

    def counting(schedule, **kw):
        made.append(schedule)
        return check(schedule, **kw)

    monkeypatch.setattr(measure, "check_before_launch", counting)
    return made


@pytest.fixture(scope="session")
def pocl():
    """``"P:D"`` of PoCL's CPU device, the one every PoCL run of the tests uses; the test
    skips where there is none."""
    from tiletraffic.gpu.devices.device import list_devices
    devices = [d for d in list_devices() if "portable" in d.platform_name.lower()
               or "pocl" in d.platform_name.lower()]
    if not devices:
        pytest.skip("no PoCL device")
    return f"{devices[0].platform_index}:{devices[0].device_index}"


@pytest.fixture(autouse=True)
def _derivations_run_to_their_end(monkeypatch):
    """Every derived closed form in the tests runs to its end, however loaded the machine,
    so outputs (golden files included) do not depend on the load; the time bound on a
    derivation has a test of its own, which sets it."""
    from tiletraffic.simulator.model import derived_counts
    monkeypatch.setattr(derived_counts, "DERIVE_SECONDS", 600.0)
