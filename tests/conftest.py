"""Test configuration: the hypothesis profile "ci" (no deadline, 30 examples) is the default.

Choose another profile with ``HYPOTHESIS_PROFILE=<name>`` ("thorough": 300 examples).

Under pytest-xdist (``-n``, with pyproject's ``--dist=loadgroup``) the tests that use one
of :data:`SHARED_FIXTURES` run on one worker, so that the fixture is computed once and not
once per worker.
"""
from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", deadline=None, max_examples=30)
settings.register_profile("thorough", deadline=None, max_examples=300)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


import pytest  # noqa: E402

SHARED_FIXTURES: dict[str, str] = {
    "crosscheck_all": "session",   # Oclgrind on every kernel: ~25 s of CPU
    "reports": "module",           # test_report: two quick reports on PoCL
    "pocl_model": "module",        # test_validation: calibrate --quick on PoCL
    "quick_run": "module",         # test_validation: validate --quick on PoCL
    "small_run": "module",         # test_tuner: a tuning measured on PoCL
    "browser": "module",           # test_explain_browser: Chromium
}
"""Expensive fixtures shared by several tests, and their scope: the tests that use one run
on one xdist worker (their group: the fixture's name, or the module's for a module
fixture)."""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Mark every test that uses a :data:`SHARED_FIXTURES` fixture ``xdist_group``: its
    fixture's name (session) or its module's path (module). Runs before pytest-xdist reads
    the marks."""
    for item in items:
        used = [name for name in SHARED_FIXTURES if name in getattr(item, "fixturenames", ())]
        if not used:
            continue
        name = used[0]
        group = name if SHARED_FIXTURES[name] == "session" else item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(scope="session")
def crosscheck_all():
    """``tiletraffic crosscheck --all --json`` run once per session (Oclgrind takes about a
    second per kernel): ``tests/golden/record.py``'s record of it (argv, exit status,
    stdout parsed, stderr), shared by test_crosscheck and test_golden_outputs."""
    from golden.record import CROSSCHECK_ARGV, invoke

    return invoke(CROSSCHECK_ARGV)


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
