"""The row-stride family (issue #14, item 3, gap 1): one list shared by the predictions step,
the device driver and the analysis, so all three name the same schedules.

A case is ``(label, family, m, k, n, tile)``. Row strides that are a multiple of 128 bytes
(K a multiple of 32 floats) are the suspects: matvec-naive M = 4096 took 0.625 ms at
K = 4096 but 0.295 ms at K = 4097 on the H200, while the model predicts 0.549 ms for both.

* matvec-naive, M = 4096, K = 4096..4128 (33 strides; 4096 and 4128 are multiples of 32
  floats), work-group 256 (the committed matvec runs' choice);
* gemm-naive and gemm-tiled, M = N = K = 3200 (a multiple of 32 floats) and 3201, B = 16.

``QUICK`` is the PoCL rehearsal at tiny sizes (matvec M = 64, K = 64..68 with work-group 32;
GEMM 64 / 65, B = 8): the same code paths, seconds on a CPU.
"""
from __future__ import annotations

LINE_FLOATS = 32
"""A row stride of K floats is a multiple of 128 bytes (one L1 line, four sectors) when K is a
multiple of 32."""

FULL = (
    *(("matvec-naive", "matvec-naive", 4096, k, None, 256) for k in range(4096, 4129)),
    *((f"{fam}", fam, n, n, n, 16) for n in (3200, 3201) for fam in ("gemm-naive", "gemm-tiled")),
)
QUICK = (
    *(("matvec-naive", "matvec-naive", 64, k, None, 32) for k in range(64, 69)),
    *((f"{fam}", fam, n, n, n, 8) for n in (64, 65) for fam in ("gemm-naive", "gemm-tiled")),
)


def case_id(case) -> str:
    """``family-M..-K..[-N..]-T..``, the id the other H200 experiments use."""
    _, family, m, k, n, tile = case
    return f"{family}-M{m}-K{k}" + (f"-N{n}" if n else "") + f"-T{tile}"


def stride_multiple_of_line(case) -> bool:
    """Every row of the case's matrices starts on the same offset within 128 bytes (its
    row stride K, and for a GEMM also N, is a multiple of 32 floats)."""
    _, family, m, k, n, _ = case
    return k % LINE_FLOATS == 0 and (n is None or n % LINE_FLOATS == 0)


def build(case):
    """The case's schedule."""
    import tiletraffic

    _, family, m, k, n, tile = case
    return tiletraffic.build(family, m=m, k=k, n=n, tile=tile)
