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


UNWRITTEN_HALF_BITS = 0x7E5B
"""float16 bit pattern of the fill value of a ``half`` output on a device (a quiet NaN
with a payload no conversion of a float32 result produces); :func:`widened` turns it into
:data:`UNWRITTEN_BITS`."""


def unwritten_fill(shape, dtype=np.float32) -> np.ndarray:
    """An array of ``shape`` holding the fill value in every element: :data:`UNWRITTEN_BITS`
    as float32, or :data:`UNWRITTEN_HALF_BITS` with ``dtype=np.float16``."""
    if np.dtype(dtype) == np.float16:
        return np.full(shape, UNWRITTEN_HALF_BITS, dtype=np.uint16).view(np.float16)
    return np.full(shape, UNWRITTEN_BITS, dtype=np.uint32).view(np.float32)


def widened(values: np.ndarray) -> np.ndarray:
    """A ``half`` output read back from a device as float32 (exact), its elements still
    holding :data:`UNWRITTEN_HALF_BITS` as :data:`UNWRITTEN_BITS`; a float32 array as it
    is."""
    if values.dtype != np.float16:
        return values
    out = values.astype(np.float32)
    out[values.view(np.uint16) == UNWRITTEN_HALF_BITS] = \
        np.array(UNWRITTEN_BITS, np.uint32).view(np.float32)
    return out


def nonfinite_causes(values) -> tuple[int, int]:
    """(never written, written but NaN or infinite) element counts of a float32 result."""
    values = np.asarray(values)
    if values.dtype != np.float32:
        finite = np.isfinite(values)
        return 0, int(values.size - np.count_nonzero(finite))
    unwritten = values.view(np.uint32) == UNWRITTEN_BITS
    nonfinite = ~np.isfinite(values)
    return int(np.count_nonzero(unwritten)), int(np.count_nonzero(nonfinite & ~unwritten))
