"""The environment variables the command line reads (``simulate`` and ``model``, with or
without ``--device-model``); the library reads none of them.

* ``TILETRAFFIC_PRIVATE_NESTS=0``: private loop nests executed statement by statement
  (``Accelerators.private_nests`` off);
* ``TILETRAFFIC_LOOP_BLOCKS=0``: loops that store or assign private arrays run iteration by
  iteration (``Accelerators.loop_blocks`` off).

Results are identical either way (each accelerator is exact); the switches exist to time
and compare the paths. Any other value, or none, leaves the accelerator on.
"""
from __future__ import annotations

import os
from typing import Mapping

from tiletraffic.simulator.engine.accelerators import Accelerators

SWITCHES = {"TILETRAFFIC_PRIVATE_NESTS": "private_nests",
            "TILETRAFFIC_LOOP_BLOCKS": "loop_blocks"}
"""Environment variable -> the :class:`Accelerators` field that ``0`` turns off."""


def accelerators(base: Accelerators, environ: Mapping[str, str] | None = None) -> Accelerators:
    """``base`` with the accelerators that ``environ`` (default: ``os.environ``) turns off
    (:data:`SWITCHES` set to ``"0"``)."""
    environ = os.environ if environ is None else environ
    off = {field: False for name, field in SWITCHES.items() if environ.get(name, "1") == "0"}
    return base.replace(**off)
