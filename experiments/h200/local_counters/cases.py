"""The cases of the local-memory counter check: every schedule family at three shapes of
which at least two are not multiples of the tile, plus the configurations whose machine
code alone is read (no shape: the sizes are kernel arguments, so a configuration's machine
code is the same at every shape, but for :data:`CODE_NEEDS_K`).

A configuration is ``(family, tile, options)``; a counted case is a configuration at one
shape ``(m, k, n)`` (``n`` None for the matrix-vector families).
"""
from __future__ import annotations

GEMM_SHAPES = ((1000, 1000, 1000), (256, 256, 256), (777, 332, 516))
"""1000³ (not a multiple of 16 or 64), 256³ (a multiple of every tile), and a shape with
no size a multiple of any tile (K = 332 leaves a partial K step; K and N stay multiples
of 4, as gemm-vectorized's float4 accesses need)."""

MATVEC_SHAPES = ((1000, 1000), (4096, 777), (333, 5003))
"""(M, K): rows not a multiple of the work-group in the first and last (a partial last
sub-group of 8 and 13 work-items), K not a multiple of the chunk in all but none."""

COUNTED = (
    ("gemm-naive", 16, {}),
    ("gemm-tiled", 16, {}),
    ("gemm-tiled", 32, {}),
    ("gemm-tiled", 16, {"a_tile": "transposed"}),
    ("gemm-register-blocked", 16, {}),
    ("gemm-register-blocked", 16, {"tm": 8, "tn": 8, "bk": 8}),
    ("gemm-vectorized", 16, {}),
    ("gemm-vectorized", 16, {"tm": 8, "tn": 8, "bk": 16}),
    ("gemm-prefetch", 16, {}),
    ("gemm-prefetch", 16, {"tm": 8, "tn": 8, "bk": 8}),
    ("matvec-naive", 256, {}),
    ("matvec-local", 256, {}),
    ("matvec-local", 128, {}),
    ("matvec-local-whole", 256, {}),
    ("matvec-rows-reduce", 32, {}),
    ("matvec-rows-reduce", 16, {"wg_rows": 4}),
    ("gemm-warp-tiled", 16, {"tm": 8, "tn": 8, "bk": 16, "wg_rows": 16, "wn": 64}),
    ("gemm-warp-tiled", 16, {"tm": 8, "tn": 4, "bk": 32, "wg_rows": 8, "wn": 32}),
    ("gemm-warp-tiled", 16, {"tm": 4, "tn": 4, "bk": 32, "wg_rows": 8, "wn": 32}),
    ("matvec-relu", 256, {}),
)
"""Configurations counted under Nsight Compute at every shape of their kind."""

SASS_ONLY = tuple(
    (family, tile, opts)
    for family in ("gemm-register-blocked", "gemm-prefetch", "gemm-vectorized")
    for tile, opts in ((16, {"tm": 4, "tn": 4, "bk": 8}), (16, {"tm": 8, "tn": 8, "bk": 16}),
                       (16, {"tm": 4, "tn": 8, "bk": 16}), (16, {"tm": 8, "tn": 4, "bk": 16}),
                       (16, {"tm": 2, "tn": 2, "bk": 16}), (8, {"tm": 8, "tn": 8, "bk": 16,
                                                                 "wg_rows": 8}),
                       (32, {"tm": 8, "tn": 4, "bk": 16, "wg_rows": 8}),
                       (16, {"tm": 4, "tn": 4, "bk": 32}))
    if not (family == "gemm-vectorized" and opts["tm"] % 4)
) + (("gemm-tiled", 8, {}), ("gemm-tiled", 16, {"padding": 1}), ("gemm-tiled", 32,
                                                                   {"a_tile": "transposed"}))
"""Configurations whose machine code (both builds) is read but not counted: where each
compiler merges local loads across the families' tile options."""

REPEATED = (("gemm-tiled", 16, {}, (1000, 1000, 1000)), ("gemm-tiled", 16, {}, (256, 256, 256)),
            ("gemm-register-blocked", 16, {}, (1000, 1000, 1000)),
            ("gemm-tiled", 16, {}, (64, 1000, 64)))
"""Cases launched a second time in the same Nsight run (id suffix ``-again``): whether the
L1 counters' figures repeat (an access pattern's wavefronts do); the last is a launch of
16 work-groups, one per SM, with the same K loop."""


CODE_NEEDS_K = ("matvec-local-whole",)
"""Families whose source has K in it (matvec-local-whole declares its local copy of x with
K words): one configuration per K, so that the OpenCL driver's machine code launched for a
case is the one built for its K (a copy built for another K writes past its local array, and
the launch fails)."""


def case_id(family: str, m: int, k: int, n, tile: int, options: dict) -> str:
    from experiments.h200.validation.driver import case_id as cid
    return cid({"family": family, "m": m, "k": k, "n": n, "tile": tile, "options": options})


def _case(family, tile, options, shape, suffix="") -> dict:
    m, k, n = shape if len(shape) == 3 else (*shape, None)
    c = {"family": family, "m": m, "k": k, "n": n, "tile": tile, "options": dict(options)}
    c["id"] = case_id(family, m, k, n, tile, options) + suffix
    c["config"] = config_id(family, tile, options) + (f"-K{k}" if family in CODE_NEEDS_K else "")
    return c


def config_id(family: str, tile: int, options: dict) -> str:
    """A configuration's name: family, tile and options (no sizes)."""
    opts = "".join(f"-{k}{v}" for k, v in sorted(options.items()))
    return f"{family}-T{tile}{opts}"


def counted_cases() -> list[dict]:
    """Every counted configuration at every shape of its kind, then the repeated ones."""
    out = []
    for family, tile, options in COUNTED:
        shapes = MATVEC_SHAPES if family.startswith("matvec") else GEMM_SHAPES
        out += [_case(family, tile, options, s) for s in shapes]
    out += [_case(f, t, o, s, "-again") for f, t, o, s in REPEATED]
    return out


def code_cases() -> list[dict]:
    """One case per configuration (counted and SASS-only), at a small shape: the input of
    the machine-code stages (the code does not depend on the sizes)."""
    out, seen = [], set()
    for family, tile, options in COUNTED + SASS_ONLY:
        shapes = ([(256, k) for _, k in MATVEC_SHAPES] if family in CODE_NEEDS_K
                  else [(256, 256) if family.startswith("matvec") else (256, 256, 256)])
        for shape in shapes:
            c = _case(family, tile, options, shape)
            if c["config"] in seen:
                continue
            seen.add(c["config"])
            c["id"] = c["config"]
            out.append(c)
    return out
