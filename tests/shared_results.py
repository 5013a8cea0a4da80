"""Expensive fixture values computed once per test run, also under pytest-xdist.

A module or session fixture is computed once per process; with ``-n`` every worker that
runs one of its tests would compute it again. :func:`computed_once` lets the first worker
that asks compute it and store it (pickled) in the run's temporary folder, which all
workers of one run share; the others wait for it and load it. Without xdist it simply
computes the value.
"""
from __future__ import annotations

import fcntl
import os
import pickle
from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")


def computed_once(tmp_path_factory: pytest.TempPathFactory, name: str,
                  compute: Callable[[], T]) -> T:
    """``compute()``, called by one process of the test run. ``name``: a file name unique in
    the test suite. The value must pickle; paths in it may point into the computing
    worker's temporary folders (they last as long as the run). An exception (a skip
    included) is raised where ``compute`` runs and stores nothing: a worker asking later
    computes again."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return compute()
    # the workers' temporary folders are popen-gw<N> in one folder of this run
    root = tmp_path_factory.getbasetemp().parent
    path = root / f"{name}.pickle"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)        # released when the file is closed
        if path.exists():
            return pickle.loads(path.read_bytes())
        value = compute()
        path.write_bytes(pickle.dumps(value))
        return value
