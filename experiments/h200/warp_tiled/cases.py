"""The kernels of the warp-tiled study: the best gemm-vectorized kernel of the earlier H200
runs and a small sweep of gemm-warp-tiled configurations, each ``(label, family, tile,
options)`` as :mod:`experiments.h200.ladder.cases` writes them."""
from __future__ import annotations

SIZES = (4096, 8192)
"""Square problems M = K = N timed against cuBLAS."""

BASELINE = ("vectorized 8x8 32x16 bk32", "gemm-vectorized", 32,
            {"tm": 8, "tn": 8, "bk": 32, "wg_rows": 16})
"""The fastest generated kernel before warp tiling (tuner's best measured, 77-78% of
cuBLAS at 4096 and 8192)."""

WARP_TILED = (
    ("warp 128x128 8x8 bk16 wn64", "gemm-warp-tiled", 16,
     {"tm": 8, "tn": 8, "bk": 16, "wg_rows": 16, "wn": 64}),
    ("warp 128x128 8x8 bk16 wn32", "gemm-warp-tiled", 16,
     {"tm": 8, "tn": 8, "bk": 16, "wg_rows": 16, "wn": 32}),
    ("warp 128x128 8x8 bk8 wn64", "gemm-warp-tiled", 16,
     {"tm": 8, "tn": 8, "bk": 8, "wg_rows": 16, "wn": 64}),
    ("warp 64x128 8x8 bk16 wn64", "gemm-warp-tiled", 16,
     {"tm": 8, "tn": 8, "bk": 16, "wg_rows": 8, "wn": 64}),
    ("warp 128x64 8x8 bk16 wn32", "gemm-warp-tiled", 8,
     {"tm": 8, "tn": 8, "bk": 16, "wg_rows": 16, "wn": 32}),
    ("warp 64x256 8x8 bk16 wn64", "gemm-warp-tiled", 32,
     {"tm": 8, "tn": 8, "bk": 16, "wg_rows": 8, "wn": 64}),
    ("warp 128x128 8x4 bk16 wn32", "gemm-warp-tiled", 32,
     {"tm": 8, "tn": 4, "bk": 16, "wg_rows": 16, "wn": 32}),
    ("warp 64x64 4x4 bk32 wn32", "gemm-warp-tiled", 16,
     {"tm": 4, "tn": 4, "bk": 32, "wg_rows": 16, "wn": 32}),
)
"""gemm-warp-tiled around the 128×128 block of 256 work-items with 8×8 outputs each (the
block the open CUDA-core SGEMM ladders use), varying the sub-group tile (wn), the depth
(bk), the block's shape and the outputs per work-item."""

CASES = (BASELINE,) + WARP_TILED


def build(case, n: int):
    """The square N×N×N schedule of ``case``."""
    import tiletraffic

    _, family, tile, options = case
    return tiletraffic.build(family, m=n, k=n, n=n, tile=tile, **options)
