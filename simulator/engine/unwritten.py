"""The fill value of output elements before a kernel runs, and what a NaN in a result means.

Every output array (role ``out``) holds :data:`UNWRITTEN_BITS` before the kernel runs, in
the simulator (``simulator.engine.machine``) and on a device (``gpu.runtime.launch.run_kernel`` fills the
buffer before every launch): a quiet NaN with a payload no arithmetic produces. An element
that still holds exactly these bits was never written ("unwritten-output"); any other NaN or
infinity was *written*, e.g. computed from an uninitialized private accumulator (the
simulator gives such a variable the ordinary quiet NaN ``0x7FC00000``). So the cause of a
NaN can be told from the result alone.
"""
from __future__ import annotations

import numpy as np

UNWRITTEN_BITS = 0x7FEDBEEF
"""float32 bit pattern of the fill value: exponent all ones, quiet bit set (a NaN), payload
0x2DBEEF."""


def unwritten_fill(shape) -> np.ndarray:
    """A float32 array of ``shape`` holding :data:`UNWRITTEN_BITS` in every element."""
    return np.full(shape, UNWRITTEN_BITS, dtype=np.uint32).view(np.float32)


def nonfinite_causes(values) -> tuple[int, int]:
    """(never written, written but NaN or infinite) element counts of a float32 result."""
    values = np.asarray(values)
    if values.dtype != np.float32:
        finite = np.isfinite(values)
        return 0, int(values.size - np.count_nonzero(finite))
    unwritten = values.view(np.uint32) == UNWRITTEN_BITS
    nonfinite = ~np.isfinite(values)
    return int(np.count_nonzero(unwritten)), int(np.count_nonzero(nonfinite & ~unwritten))
