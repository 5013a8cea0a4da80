"""Hand-written kernels of the H200 drivers, read from their ``.cu`` / ``.cl`` files.

The generated GEMM and matrix-vector kernels come from :mod:`tiletraffic.gpu.codegen.generate` (and
:mod:`experiments.h200.cuda` for their CUDA build); only the microbenchmarks and
instrumentation that no schedule describes are files beside their driver.
"""
from __future__ import annotations

from pathlib import Path


def kernel_source(module_file: str, *names: str) -> str:
    """The text of the files ``names`` in the folder of ``module_file`` (a driver's
    ``__file__``), joined in order (a shared ``.cuh`` part first, then the kernels).

    Raises:
        FileNotFoundError: a named file is not there.
    """
    folder = Path(module_file).resolve().parent
    return "".join((folder / name).read_text() for name in names)
