"""The kernels of the block-order and register-cap study: the two fastest gemm-warp-tiled
configurations of the warp-tiled study at 4096³ (``experiments/h200/warp_tiled``), with
their blocks launched in groups of ``group_rows`` block rows (L2 reuse of A's rows and B's
columns among work-groups running together), and the 128×128 block capped at 128 registers
per work-item (NVIDIA's ``-cl-nv-maxrregcount``: two work-groups of 256 per SM instead of
one). Each case is ``(label, family, tile, options, build_options)``."""
from __future__ import annotations

SIZES = (4096,)
"""Square problems M = K = N (the size where warp tiling stayed below 90% of cuBLAS)."""

B128 = {"tm": 8, "tn": 8, "bk": 16, "wg_rows": 16, "wn": 64}
B64 = {"tm": 8, "tn": 8, "bk": 16, "wg_rows": 8, "wn": 64}
CAP128 = ("-cl-nv-maxrregcount=128",)
CAP128_SPACED = ("-cl-nv-maxrregcount", "128")
"""The two spellings of the cap: as an ``=`` option (no effect in the first call: 149
registers) and with the count as the next argument, as ``cl_nv_compiler_options`` writes
it."""

CASES = tuple(
    [(f"warp 128x128 g{g}", "gemm-warp-tiled", 16, {**B128, "group_rows": g}, ())
     for g in (1, 4, 8, 16)]
    + [(f"warp 64x128 g{g}", "gemm-warp-tiled", 16, {**B64, "group_rows": g}, ())
       for g in (1, 8, 16)]
    + [(f"warp 128x128 g{g} cap128", "gemm-warp-tiled", 16, {**B128, "group_rows": g}, CAP128)
       for g in (1, 8)]
    + [(f"warp 128x128 g1 cap{c}s", "gemm-warp-tiled", 16, {**B128, "group_rows": 1},
        ("-cl-nv-maxrregcount", str(c))) for c in (128, 96)]
)
