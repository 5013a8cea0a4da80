"""The kernels of the PTX register-budget study: the two fastest gemm-warp-tiled
configurations at 4096³ (128×128 blocks of 256 work-items, 149 registers: one work-group per
SM; 64×128 blocks of 128 work-items, 161-163 registers: three), each as built and with a
register budget written into its PTX (:mod:`.ptx`): ``.maxnreg`` and ``.minnctapersm``.

Each case is ``(label, family, tile, options, directives)``.
"""
from __future__ import annotations

SIZES = (4096,)

B128 = {"tm": 8, "tn": 8, "bk": 16, "wg_rows": 16, "wn": 64}
B128_BK32 = {"tm": 8, "tn": 8, "bk": 32, "wg_rows": 16, "wn": 64}
B64 = {"tm": 8, "tn": 8, "bk": 16, "wg_rows": 8, "wn": 64}
B64_G8 = {**B64, "group_rows": 8}

CASES = (
    ("warp 128x128", "gemm-warp-tiled", 16, B128, ()),
    ("warp 128x128 maxnreg128", "gemm-warp-tiled", 16, B128, (".maxnreg 128",)),
    ("warp 128x128 minncta2", "gemm-warp-tiled", 16, B128, (".minnctapersm 2",)),
    ("warp 128x128 bk32 maxnreg128", "gemm-warp-tiled", 16, B128_BK32, (".maxnreg 128",)),
    ("warp 64x128 g8", "gemm-warp-tiled", 16, B64_G8, ()),
    ("warp 64x128 g8 maxnreg128", "gemm-warp-tiled", 16, B64_G8, (".maxnreg 128",)),
    ("warp 64x128 maxnreg128", "gemm-warp-tiled", 16, B64, (".maxnreg 128",)),
    ("warp 64x128 g8 maxnreg96", "gemm-warp-tiled", 16, B64_G8, (".maxnreg 96",)),
)


def build(case, n: int):
    """The schedule of ``case`` at M = K = N = ``n``."""
    from tiletraffic.simulator.kernels.warp_tiled import gemm_warp_tiled

    _label, _family, tile, options, _directives = case
    return gemm_warp_tiled(n, n, n, tile=tile, **options)
