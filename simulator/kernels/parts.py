"""Building blocks shared by the schedule families (:mod:`simulator.kernels.families`,
:mod:`simulator.kernels.register_blocked`, :mod:`simulator.kernels.warp_tiled`,
:mod:`simulator.kernels.matvec_rows`): argument checks and the global arrays of GEMM and
matrix-vector products.

Layouts: A is M×K, B is K×N, C is M×N, x has K elements, y has M; all row-major float32.

Errors: :class:`~simulator.ir.nodes.ScheduleError` (a ``ValueError``) for a value that is
not a positive integer, or an index range beyond 32-bit ``int`` (the generated kernels
index with ``int``).
"""
from __future__ import annotations

from tiletraffic.simulator.ir.nodes import GlobalArray, Param, ScheduleError

INT32_MAX = 2**31 - 1
"""Largest index of a 32-bit ``int``, the index type of the generated kernels."""


def positive(name: str, value) -> int:
    """``value`` if it is a positive ``int`` (not a ``bool``).

    Raises:
        ScheduleError: anything else, naming ``name`` and the value.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ScheduleError(f"{name} must be a positive integer, got {value!r}")
    return value


MAX_BLOCK_FLOATS = 1024
"""Most private accumulators (tm x tn) of one work-item: four times the 255 registers of the
largest register file per thread, so any block a device could hold is built."""

MAX_BK = 1024
"""Largest K step (bk) of a register-blocked family: its tiles' local memory already exceeds
every device's 64 KiB at bk = 256 with 64-row blocks."""


def check_block(tm: int, tn: int, bk: int) -> None:
    """Refuse a register block or K step no device could run, before its statements are
    built (they grow as tm x tn x bk).

    Raises:
        ScheduleError: tm x tn above :data:`MAX_BLOCK_FLOATS` or bk above :data:`MAX_BK`.
    """
    if tm * tn > MAX_BLOCK_FLOATS:
        raise ScheduleError(f"tm x tn = {tm} x {tn} = {tm * tn} accumulators per work-item, "
                            f"above {MAX_BLOCK_FLOATS} (no device has the registers)")
    if bk > MAX_BK:
        raise ScheduleError(f"bk = {bk} is above {MAX_BK} (its tiles exceed every device's "
                            "local memory)")


def fits_int32(what: str, value: int) -> None:
    """Raise :class:`ScheduleError` when ``value`` (an element count called ``what``)
    exceeds :data:`INT32_MAX`."""
    if value > INT32_MAX:
        raise ScheduleError(f"{what} = {value} exceeds the 32-bit int index limit {INT32_MAX}; "
                            "the generated kernels index with int")


def round_up(value: int, multiple: int) -> int:
    """Smallest multiple of ``multiple`` that is >= ``value``."""
    return -(-value // multiple) * multiple


def gemm_arrays(m: int, k: int, n: int):
    """``(M, K, N, A, B, C)``: the size parameters and the global arrays of C = A·B.

    Raises:
        ScheduleError: M·K, K·N or M·N beyond :data:`INT32_MAX`.
    """
    for what, v in (("M*K", m * k), ("K*N", k * n), ("M*N", m * n)):
        fits_int32(what, v)
    M, K, N = Param("M"), Param("K"), Param("N")
    A = GlobalArray("A", "in", ("M", "K"))
    B = GlobalArray("B", "in", ("K", "N"))
    C = GlobalArray("C", "out", ("M", "N"))
    return M, K, N, A, B, C


def matvec_arrays(m: int, k: int):
    """``(M, K, A, x, y)``: the size parameters and the global arrays of y = A·x.

    Raises:
        ScheduleError: M·K beyond :data:`INT32_MAX`.
    """
    fits_int32("M*K", m * k)
    M, K = Param("M"), Param("K")
    A = GlobalArray("A", "in", ("M", "K"))
    x = GlobalArray("x", "in", ("K",))
    y = GlobalArray("y", "out", ("M",))
    return M, K, A, x, y
