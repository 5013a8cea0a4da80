"""The library's functions, one module per stage of the pipeline, re-exported by the facade
``tiletraffic`` (``import tiletraffic as tt``; each command of the command line calls the
same function):

- :mod:`.schedules`: ``build``, ``from_opencl``, ``generate``, ``closed_form``;
- :mod:`.simulation`: ``check``, ``model``, ``explain``, ``crosscheck``;
- :mod:`.device`: ``run``, ``devices``, ``calibrate``, ``report``;
- :mod:`.validation`: ``validate``, ``write_predictions``, ``validation_cases``;
- :mod:`.tuning`: ``tune``, ``tune_kernel``.

Importing any of them loads numpy only; OpenCL, plotting and page rendering are imported
by the function that needs them.
"""
from __future__ import annotations

from importlib import metadata


def package_version() -> str:
    """The installed tiletraffic's version, or ``"0+unknown"`` when running from a source
    tree that is not installed."""
    try:
        return metadata.version("tiletraffic")
    except metadata.PackageNotFoundError:
        return "0+unknown"
