"""Test configuration: the hypothesis profile "ci" (no deadline, 30 examples) is the default.

Choose another profile with ``HYPOTHESIS_PROFILE=<name>`` ("thorough": 300 examples).
"""
from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", deadline=None, max_examples=30)
settings.register_profile("thorough", deadline=None, max_examples=300)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


import pytest  # noqa: E402

from shared_results import computed_once  # noqa: E402


COMPUTED_ONCE_FIXTURES = ("crosscheck_all", "reports", "small_run", "pocl_model", "built")
"""Fixtures whose value one worker computes for the run (``shared_results.computed_once``)."""

ONE_WORKER_FIXTURES = ("half_quick_run", "planned")
"""Module fixtures of a few seconds each (a validation or tuning run) whose tests run on
one worker, so that the value is computed once per run rather than once per worker."""


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
