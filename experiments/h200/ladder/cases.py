"""The GEMM ladder's cases (issue #13, item 5): one list shared by the device driver and the
model predictions, so both name the same schedules.

A case is ``(label, family, tile, options)``: ``tile`` is the work-group width W0 (for
gemm-naive and gemm-tiled the B of the B×B work-group), ``options`` the register-blocked
families' ``tm``, ``tn``, ``bk``, ``wg_rows`` (simulator/kernels/register_blocked.py).
``LADDER`` is the ladder with each family's defaults (16×16 work-group, TM = TN = 4,
BK = 16); ``HAND_TUNED`` are a few other parameter choices picked by hand (what the future
tuner of item 4 would search); ``TUNED`` the tuner's own results.
"""
from __future__ import annotations

LADDER = (
    ("naive", "gemm-naive", 16, {}),
    ("tiled", "gemm-tiled", 16, {}),
    ("register-blocked", "gemm-register-blocked", 16, {}),
    ("vectorized", "gemm-vectorized", 16, {}),
    ("prefetch", "gemm-prefetch", 16, {}),
)
HAND_TUNED = (
    ("register-blocked 8x8 bk8", "gemm-register-blocked", 16, {"tm": 8, "tn": 8, "bk": 8}),
    ("vectorized 8x8 bk8", "gemm-vectorized", 16, {"tm": 8, "tn": 8, "bk": 8}),
    ("vectorized 8x8 bk16", "gemm-vectorized", 16, {"tm": 8, "tn": 8, "bk": 16}),
    ("vectorized 8x8 bk16 wg8x8", "gemm-vectorized", 8, {"tm": 8, "tn": 8, "bk": 16,
                                                           "wg_rows": 8}),
    ("prefetch 8x8 bk8", "gemm-prefetch", 16, {"tm": 8, "tn": 8, "bk": 8}),
)
TUNED = (
    ("tuned: model's pick", "gemm-vectorized", 32, {"tm": 8, "tn": 4, "bk": 16, "wg_rows": 8}),
    ("tuned: best measured", "gemm-vectorized", 32, {"tm": 8, "tn": 8, "bk": 32,
                                                      "wg_rows": 16}),
)
"""The tuner's results at N = 4096 in the pre-registered round 4
(``reports/nvidia-h200/preregistered4/tune/``): its pick (also its pick and the best measured
at 8192) and the best of the 8 it measured."""
CASES = LADDER + HAND_TUNED + TUNED
SIZES = (1024, 4096, 8192)


def build(case, n: int):
    """The square N×N×N schedule of ``case``."""
    import tiletraffic

    _, family, tile, options = case
    return tiletraffic.build(family, m=n, k=n, n=n, tile=tile, **options)
