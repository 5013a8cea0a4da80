"""The library's functions, one module per stage of the pipeline, re-exported by the facade
``tiletraffic`` (``import tiletraffic as tt``; each command of the command line calls the
same function):

- :mod:`.schedules`: ``build``, ``from_opencl``, ``generate``, ``closed_form``;
- :mod:`.simulation`: ``check``, ``model``, ``explain``, ``crosscheck``;
- :mod:`.device`: ``run``, ``devices``, ``calibrate``, ``report``;
- :mod:`.validation`: ``validate``, ``write_predictions``, ``validation_cases``;
- :mod:`.tuning`: ``tune``, ``tune_kernel``.

Importing any of them loads numpy only; OpenCL, plotting and page rendering are imported
by the function that needs them. Each function names the facade as its module
(:func:`facade_function`): ``help``, ``repr`` and the API page show it as ``tiletraffic.NAME``,
the name it is called by.
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


FACADE = "tiletraffic"
"""The module that re-exports the library's functions (``tiletraffic/__init__.py``)."""


def facade_function(function):
    """``function`` with ``__module__`` set to :data:`FACADE`: a function the facade
    re-exports names the module it is imported from by its users (as numpy's functions name
    ``numpy``); it is pickled, documented and shown by that name."""
    function.__module__ = FACADE
    return function
