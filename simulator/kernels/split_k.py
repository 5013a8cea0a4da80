"""Split-K GEMM: K cut into S slices computed by separate work-groups, then added.

Shapes: A is M×K, B is K×N, C is M×N, row-major float32; K and N multiples of 4. A GEMM of
few output blocks (M = 128 against 132 compute units) leaves most of the device idle; cutting
the reduction over K into S slices multiplies the work-groups by S. Two kernels
(:class:`simulator.ir.sequence.KernelSequence`):

1. ``gemm_split_k_slices`` (family ``gemm-split-k-slices``): ``gemm-warp-tiled``
   (:mod:`simulator.kernels.warp_tiled`, every
   option of it) with an NDRange dimension 2 of S: the work-groups of index s compute the
   K steps s·P … min(⌈K/BK⌉, (s+1)·P) − 1, P = ⌈⌈K/BK⌉/S⌉, and store their partial product
   into ``C_partial[s]`` (scratch, S×M×N);
2. ``gemm_split_k_reduce``: each work-item adds the S partials of 4 consecutive elements
   of C (float4 loads of ``C_partial[0..S-1]``, in order of s, one float4 store into C);
   work-groups of ``reduce_items`` work-items along N, one row of C per NDRange row.

Kernel 2 reads S·M·N and writes M·N floats more than one GEMM kernel: worth it where
kernel 1's extra work-groups buy more than that traffic costs (the tuner's model weighs both).

Requirements (:class:`ScheduleError` otherwise): those of ``gemm-warp-tiled``; S ≥ 2 with
every slice at least one K step (:func:`simulator.kernels.warp_tiled.slices_fit`);
``reduce_items`` a positive multiple of 32.

Counts: :func:`simulator.kernels.closed_forms.gemm_split_k`.
"""
from __future__ import annotations

from tiletraffic.simulator.kernels.parts import positive, round_up
from tiletraffic.simulator.ir.nodes import (Assign, Const, DeclareFloat, For, GlobalArray, If,
                                            Let, Param, Private, Schedule, ScheduleError, Var,
                                            global_id, vload, vstore)
from tiletraffic.simulator.kernels.warp_tiled import (DEFAULT_BK, DEFAULT_TM, DEFAULT_TN,
                                                      VECTOR, gemm_warp_tiled)
from tiletraffic.simulator.ir.sequence import KernelSequence
from tiletraffic.simulator.kernels.storage import VectorAlignmentError

_WITHIN = "gemm-split-k (its slices kernel is gemm-warp-tiled's): "

DEFAULT_SPLITS = 4
DEFAULT_REDUCE_ITEMS = 64
"""Work-items per work-group of the reduction kernel (float4 columns of one row of C)."""


def split_k_reduce(m: int, n: int, splits: int,
                   reduce_items: int = DEFAULT_REDUCE_ITEMS) -> Schedule:
    """Kernel 2 of :func:`gemm_split_k`: ``C[r, c..c+3] = Σ_s C_partial[s, r, c..c+3]``,
    added in order of s (module docstring).

    Raises:
        ScheduleError: N not a multiple of 4, ``splits`` < 2, ``reduce_items`` not a
            positive multiple of 32.
    """
    m, n, splits = positive("M", m), positive("N", n), positive("splits", splits)
    reduce_items = positive("reduce_items", reduce_items)
    if n % VECTOR:
        raise ScheduleError(f"gemm-split-k needs N to be a multiple of {VECTOR}, got N = {n}")
    if splits < 2:
        raise ScheduleError(f"gemm-split-k needs splits >= 2, got {splits}")
    if reduce_items % 32:
        raise ScheduleError(f"gemm-split-k needs reduce_items to be a multiple of 32 "
                            f"(whole sub-groups), got {reduce_items}")
    M, N, S = Param("M"), Param("N"), Param("S")
    partial = GlobalArray("C_partial", "in", ("S", "M", "N"))
    C = GlobalArray("C", "out", ("M", "N"))
    col = Let("col", global_id(0) * VECTOR)
    row = Let("row", global_id(1))
    total = [f"c{w}" for w in range(VECTOR)]
    part = [f"p{w}" for w in range(VECTOR)]
    body = (
        col, row,
        If((col.var < N) & (row.var < M), (
            *(DeclareFloat(x, None) for x in total + part),
            vload(total, partial, (Const(0), row.var, col.var)),
            For("s", Const(1), S, Const(1), (
                vload(part, partial, (Var("s"), row.var, col.var)),
                *(Assign(t, Private(t) + Private(p)) for t, p in zip(total, part)),
            )),
            vstore(C, (row.var, col.var), [Private(t) for t in total]),
        )),
    )
    return Schedule(
        family="gemm-split-k-reduce", kernel_name="gemm_split_k_reduce",
        params=(("M", m), ("N", n), ("S", splits)), arrays=(partial, C), local_arrays=(),
        local_size=(reduce_items, 1),
        global_size=(round_up(-(-n // VECTOR), reduce_items), m), body=body,
        tile=reduce_items,
        description=f"adds {splits} partial products of C, float4 per work-item",
        extra={"splits": splits})


def gemm_split_k(m: int, k: int, n: int, tile: int = 16, tm: int = DEFAULT_TM,
                 tn: int = DEFAULT_TN, bk: int = DEFAULT_BK, wg_rows: int | None = None,
                 wn: int | None = None, group_rows: int = 1, splits: int = DEFAULT_SPLITS,
                 reduce_items: int = DEFAULT_REDUCE_ITEMS) -> KernelSequence:
    """Split-K GEMM C = A·B as two kernels (module docstring).

    Args:
        m, k, n, tile, tm, tn, bk, wg_rows, wn, group_rows: as for
            :func:`simulator.kernels.warp_tiled.gemm_warp_tiled` (kernel 1).
        splits: S, the slices of K (at least 2).
        reduce_items: work-items per work-group of kernel 2.

    Raises:
        ScheduleError: a requirement of the module docstring, named with its value.
    """
    splits = positive("splits", splits)
    if splits < 2:
        raise ScheduleError(f"gemm-split-k needs splits >= 2 (1 is gemm-warp-tiled), got "
                            f"{splits}")
    steps = -(-positive("K", k) // positive("bk", bk))
    if steps < 2:
        raise ScheduleError(f"gemm-split-k needs at least 2 K steps to split, got K = {k} "
                            f"with bk = {bk} (one step); use a smaller bk or gemm-warp-tiled")
    try:
        slices = gemm_warp_tiled(m, k, n, tile, tm, tn, bk, wg_rows, wn, group_rows, splits)
    except VectorAlignmentError as err:   # name the family asked for, and its kernel's
        raise err.within(_WITHIN) from None
    except ScheduleError as err:
        raise ScheduleError(f"{_WITHIN}{err}") from None
    reduce = split_k_reduce(m, n, splits, reduce_items)
    A, B = slices.arrays[0], slices.arrays[1]
    C = reduce.arrays[1]
    scratch = GlobalArray("C_partial", "out", ("S", "M", "N"))
    x = slices.extra
    return KernelSequence(
        family="gemm-split-k", kernels=(slices, reduce), arrays=(A, B, C),
        scratch=(scratch,), tile=tile,
        description=(f"K in {splits} slices of {x['slice_steps']} {bk}-deep steps, each a "
                     f"warp-tiled GEMM of {x['bm']}x{x['bn']} blocks ({tm}x{tn} per "
                     "work-item) into a partial C, then a kernel adding the partials"),
        extra={**{key: value for key, value in x.items() if key != "slice_steps"},
               "reduce_items": reduce_items})
