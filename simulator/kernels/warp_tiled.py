"""Warp-tiled GEMM: each sub-group computes a WM×WN sub-tile of the work-group's block.

Shapes: A is M×K, B is K×N, C is M×N, row-major float32. As for the register-blocked
families (:mod:`simulator.kernels.register_blocked`), the work-group has W0×W1 work-items (W0 =
``tile``, W1 = ``wg_rows``) and computes a BM×BN block of C, BM = TM·W1, BN = TN·W0, in
BK-deep K steps; global size (⌈N/BN⌉·W0, ⌈M/BM⌉·W1). Only the assignment of outputs to
work-items differs: work-items are taken by their linear id ``tid = ly·W0 + lx`` in
sub-groups of 32 (``sg = tid / 32``, ``lane = tid % 32``), and the block is cut into
(BM/WM)×(BN/WN) sub-group tiles, WN = ``wn`` columns and WM = 32·TM·TN/WN rows. Inside its
sub-group tile the lanes form an LR×LC grid (LC = WN/TN, LR = 32/LC; ``lr = lane / LC``,
``lc = lane % LC``), and a work-item owns TM/4 × TN/4 blocks of 4×4 outputs: rows
``4·lr + 4·LR·i4 + (0..3)`` and columns ``4·lc + 4·LC·j4 + (0..3)`` of the sub-group tile.

Local memory, per K step (double buffered, two of each): the A tile stored transposed,
``A_tile[buf][k][row]`` (BK×BM), and the B tile ``B_tile[buf][k][col]`` (BK×BN). Every
local read is one float4 (128-bit) load: four consecutive rows of A_tile[k] or columns of
B_tile[k]; the lanes of a sub-group read LR (A) or LC (B) distinct, consecutive float4s, so
no two lanes meet in one bank with different words (conflict-free). The A tile is skewed:
element (k, row) lives at column ``row + SKEW·⌊k/4⌋`` of a row of BM + SKEW·(BK/4 − 1)
floats, SKEW = 4·max(1, 32 / BK), which keeps every float4 aligned and whole, needs no
wrap-around arithmetic (the offset of a read is a constant of the unrolled depth) and
spreads the transposing scalar stores of the A tile (lanes of a sub-group write BK/4 values
of k for 128/BK rows each) over all 32 banks when BK divides 32 and BM is a multiple of 32.
The B tile is stored with float4 stores of consecutive columns (conflict-free).

Order of one K step t (one barrier, at its top): issue step t+1's float4 global loads of
both tiles into private floats, compute step t from the current buffer, store the loaded
floats into the other buffer (global→local double buffering as in ``gemm-prefetch``; no
race: a buffer is written in step t only after the barrier every work-item passes after
reading it in step t-1). Inside a step the local reads are register double buffered: the
fragments (TM values of A, TN of B) of depth kk+1 are loaded into a second set of private
floats before the multiply-adds of depth kk are issued.

Requirements (:class:`ScheduleError` otherwise, naming the value): K and N multiples of 4
(float4 global loads and stores), TM, TN and BK multiples of 4, W0·W1 a multiple of 32, TN
dividing WN, WN/TN dividing 32, WN dividing BN, WM dividing BM, and every work-item loading
a whole number (at least one) of float4s of each tile per step: (BM·BK/4) and (BK·BN/4)
multiples of W0·W1. M may be anything (guarded rows).

Counts: :func:`simulator.kernels.closed_forms.gemm_warp_tiled`.
"""
from __future__ import annotations

from tiletraffic.simulator.ir.nodes import (Barrier, GlobalArray, Param, Const, DeclareFloat,
                                            DeclarePrivateArray, For, If, IntExpr, Let,
                                            LocalArray, Private, PrivateArray, Schedule,
                                            ScheduleError, Var, accumulate_elem, block,
                                            ceil_div, group_id, local_id, minimum, store,
                                            vload, vstore)
from tiletraffic.simulator.kernels.storage import VectorAlignmentError
from tiletraffic.simulator.kernels.parts import check_block, fits_int32, gemm_arrays, positive
from tiletraffic.simulator.kernels.register_blocked import staged_parts

SUB_GROUP_ITEMS = 32
"""Work-items per sub-group the layout is made for (an NVIDIA warp)."""
VECTOR = 4
"""Floats per vector access (float4)."""
DEFAULT_TM = DEFAULT_TN = 8
DEFAULT_BK = 16
LANE_COLUMNS_PREFERRED = (8, 4, 16, 2, 32, 1)
"""Lanes along N of a sub-group tile (LC), in the order the default ``wn`` tries them."""


def skew_floats(bk: int) -> int:
    """SKEW: floats the A tile's rows move right per group of 4 values of k,
    4·max(1, 32 / BK) (module docstring)."""
    return VECTOR * max(1, SUB_GROUP_ITEMS // bk)


def a_row_floats(bm: int, bk: int) -> int:
    """Floats in one row (one value of k) of the skewed A tile: BM + SKEW·(BK/4 − 1)."""
    return bm + skew_floats(bk) * (bk // VECTOR - 1)


def default_wn(tile: int, wg_rows: int, tn: int) -> int:
    """The sub-group tile width WN = LC·TN for the first LC of
    :data:`LANE_COLUMNS_PREFERRED` whose grid fits the work-group (LC divides W0 and 32/LC
    divides W1); 8·TN when none does (then refused with the reason)."""
    for lanes in LANE_COLUMNS_PREFERRED:
        if tile % lanes == 0 and wg_rows % (SUB_GROUP_ITEMS // lanes) == 0:
            return lanes * tn
    return 8 * tn


def warp_geometry(tile: int, wg_rows: int, tm: int, tn: int, bk: int, wn: int) -> dict:
    """The derived sizes of one configuration, or ScheduleError naming the first rule it
    breaks (module docstring, "Requirements"; K and N are checked by the builder).

    Returns: ``bm, bn, wm, wn, lanes_m (LR), lanes_n (LC), sub_groups, staged_a,
    staged_b`` (float4s of each tile a work-item loads per step).
    """
    items = tile * wg_rows
    bm, bn = tm * wg_rows, tn * tile
    for what, value in (("tm", tm), ("tn", tn), ("bk", bk)):
        if value % VECTOR:
            raise ScheduleError(f"gemm-warp-tiled needs {what} to be a multiple of {VECTOR} "
                                f"(float4 local reads), got {what} = {value}")
    if items % SUB_GROUP_ITEMS:
        raise ScheduleError(
            f"gemm-warp-tiled needs tile x wg_rows to be a multiple of {SUB_GROUP_ITEMS} "
            f"work-items (whole sub-groups), got {tile} x {wg_rows} = {items}")
    if wn % tn or SUB_GROUP_ITEMS % (wn // tn or 1) or wn < tn:
        raise ScheduleError(
            f"gemm-warp-tiled needs wn to be tn times a divisor of {SUB_GROUP_ITEMS} "
            f"(lanes along N of a sub-group tile), got wn = {wn} with tn = {tn}")
    lanes_n = wn // tn
    lanes_m = SUB_GROUP_ITEMS // lanes_n
    wm = lanes_m * tm
    if bn % wn or bm % wm:
        raise ScheduleError(
            f"gemm-warp-tiled: sub-group tiles of {wm} x {wn} (wn = {wn}, {lanes_m} x "
            f"{lanes_n} lanes) do not tile the {bm} x {bn} block; choose wn dividing "
            f"BN = {bn} with 32·tm·tn/wn dividing BM = {bm}")
    staged_a, rem_a = divmod(bm * bk // VECTOR, items)
    staged_b, rem_b = divmod(bk * bn // VECTOR, items)
    if rem_a or rem_b or not staged_a or not staged_b:
        raise ScheduleError(
            f"gemm-warp-tiled needs every work-item to load whole float4s of each tile: "
            f"{bm * bk // VECTOR} float4s of A and {bk * bn // VECTOR} of B per step over "
            f"{items} work-items (bk = {bk})")
    return {"bm": bm, "bn": bn, "wm": wm, "wn": wn, "lanes_m": lanes_m, "lanes_n": lanes_n,
            "sub_groups": items // SUB_GROUP_ITEMS, "staged_a": staged_a,
            "staged_b": staged_b}


def slices_fit(k_steps: int, splits: int) -> bool:
    """Whether ``splits`` slices of ⌈k_steps/S⌉ K steps each leave none of ``k_steps``
    steps empty: (S − 1)·⌈k_steps/S⌉ < k_steps (S = k_steps always fits)."""
    return (splits - 1) * -(-k_steps // splits) < k_steps


def nearest_splits(k_steps: int, splits: int) -> list[int]:
    """The numbers of slices nearest ``splits`` (the largest below it, at least 2, the
    smallest above it up to ``k_steps``) that leave no slice of ``k_steps`` K steps empty."""
    below = [s for s in range(min(splits, k_steps + 1) - 1, 1, -1)
             if slices_fit(k_steps, s)][:1]
    above = [s for s in range(splits + 1, k_steps + 1) if slices_fit(k_steps, s)][:1]
    return below + above


def block_order(groups_n: int, groups_m: int, group_rows: int) -> list:
    """The block (row, column) a work-group computes, as Lets ending in ``brow`` and
    ``bcol`` (in blocks), for ``groups_m`` × ``groups_n`` blocks.

    ``group_rows`` = 1: block (group_id(1), group_id(0)), the launch order row by row.
    G > 1: the linear id p = group_id(1)·groups_n + group_id(0) (NVIDIA starts work-groups
    in this order) walks groups of G block rows, column by column inside a group: group
    q = p / (G·groups_n) holds rows G·q ... G·q + h − 1 with h = min(G, groups_m − G·q),
    and p's block is row G·q + (p mod G·groups_n) mod h, column (p mod G·groups_n) / h
    (the grouped order of Triton's matrix-multiplication tutorial, "L2 Cache
    Optimizations"). Every block is computed exactly once either way."""
    if group_rows == 1:
        return [Let("brow", group_id(1)), Let("bcol", group_id(0))]
    G, GN = Const(group_rows, "GROUP_ROWS"), Const(groups_n, "GROUPS_N")
    GM = Const(groups_m, "GROUPS_M")
    pid = Let("pid", group_id(1) * GN + group_id(0))
    first = Let("first_row", pid.var // (G * GN) * G)
    height = Let("group_height", minimum(GM - first.var, G))
    inside = Let("in_group", pid.var % (G * GN))
    return [pid, first, height, inside,
            Let("brow", first.var + inside.var % height.var),
            Let("bcol", inside.var // height.var)]


def gemm_warp_tiled(m: int, k: int, n: int, tile: int = 16, tm: int = DEFAULT_TM,
                    tn: int = DEFAULT_TN, bk: int = DEFAULT_BK, wg_rows: int | None = None,
                    wn: int | None = None, group_rows: int = 1, splits: int = 1) -> Schedule:
    """Warp-tiled GEMM C = A·B (see the module docstring).

    Args:
        m, k, n: sizes (A is m×k, B is k×n); k and n multiples of 4.
        tile: work-items per work-group along NDRange dimension 0 (W0; BN = tn·tile).
        tm, tn: rows and columns of C per work-item (multiples of 4).
        bk: depth of a K step (a multiple of 4).
        wg_rows: work-items along dimension 1 (W1; BM = tm·wg_rows; default ``tile``).
        wn: columns of C per sub-group tile (default :func:`default_wn`).
        group_rows: the order of the blocks (:func:`block_order`): 1 (default) row by row,
            G > 1 in groups of G block rows, column by column inside a group, so that
            work-groups launched together share rows of A and columns of B in the L2.
        splits: S > 1 cuts the K steps into S slices of ⌈⌈K/BK⌉/S⌉ steps (the last one
            shorter), slice s computed by the work-groups of NDRange dimension 2 index s;
            each writes its partial product into ``C_partial[s]`` (S×M×N, role ``out``)
            instead of C, for :func:`simulator.kernels.split_k.gemm_split_k` to add. Every
            slice must have at least one step.

    Raises:
        ScheduleError: a size or option that is not a positive integer, or one that breaks
            a requirement of the module docstring (named with its value).
    """
    m, k, n, tile, tm, tn, bk = (positive(a, v) for a, v in (
        ("M", m), ("K", k), ("N", n), ("tile", tile), ("tm", tm), ("tn", tn), ("bk", bk)))
    wg_rows = tile if wg_rows is None else positive("wg_rows", wg_rows)
    check_block(tm, tn, bk)
    wn = default_wn(tile, wg_rows, tn) if wn is None else positive("wn", wn)
    group_rows = positive("group_rows", group_rows)
    splits = positive("splits", splits)
    for what, value in (("K", k), ("N", n)):
        if value % VECTOR:
            raise VectorAlignmentError("gemm-warp-tiled", what, value, VECTOR)
    g = warp_geometry(tile, wg_rows, tm, tn, bk, wn)
    k_steps = -(-k // bk)
    slice_steps = -(-k_steps // splits)
    if splits > 1 and not slices_fit(k_steps, splits):
        raise ScheduleError(
            f"gemm-split-k: {splits} slices of {slice_steps} K steps (bk = {bk}) leave the "
            f"last of the {k_steps} steps of K = {k} empty; choose "
            + " or ".join(str(x) for x in nearest_splits(k_steps, splits))
            + " (the nearest numbers of splits that leave no slice empty)")
    if splits > 1:
        fits_int32("S*M*N", splits * m * n)
    kernel = _WarpTiledKernel(m, k, n, tile, wg_rows, tm, tn, bk, g, group_rows, splits)
    sliced = splits > 1
    return Schedule(
        family="gemm-split-k-slices" if sliced else "gemm-warp-tiled",
        kernel_name="gemm_split_k_slices" if sliced else "gemm_warp_tiled",
        params=(("M", m), ("K", k), ("N", n)) + ((("S", splits),) if sliced else ()),
        arrays=(kernel.A, kernel.B, kernel.C),
        local_arrays=(kernel.tile_a, kernel.tile_b),
        local_size=(tile, wg_rows) + ((1,) if sliced else ()),
        global_size=(-(-n // g["bn"]) * tile, -(-m // g["bm"]) * wg_rows)
        + ((splits,) if sliced else ()),
        body=kernel.body(), tile=tile,
        description=(f"{tm}x{tn} outputs per work-item in {g['wm']}x{g['wn']} sub-group "
                     f"tiles of a {g['bm']}x{g['bn']} block, float4 local reads, "
                     f"double-buffered {bk}-deep local tiles and register fragments"),
        extra={"tm": tm, "tn": tn, "bk": bk, "wg_rows": wg_rows,
               **({"group_rows": group_rows} if group_rows > 1 else {}),
               **({"splits": splits, "slice_steps": slice_steps} if sliced else {}), "bm": g["bm"],
               "bn": g["bn"], "wm": g["wm"], "wn": g["wn"]},
    )


def _float4_names(tag: str):
    """``q -> [v<tag><q>_0, ..., v<tag><q>_3]``: the private floats of the ``q``-th float4
    of a tile that a work-item loads."""
    return lambda q: [f"v{tag}{q}_{w}" for w in range(VECTOR)]


class _WarpTiledKernel:
    """The arrays, names and statements of one ``gemm-warp-tiled`` kernel (module
    docstring), from checked options and their :func:`warp_geometry` ``g``; ``splits`` > 1:
    the slice kernel of ``gemm-split-k`` (writes ``C_partial``)."""

    def __init__(self, m: int, k: int, n: int, tile: int, wg_rows: int, tm: int, tn: int,
                 bk: int, g: dict, group_rows: int, splits: int) -> None:
        self.tm, self.tn, self.g, self.splits = tm, tn, g, splits
        self.M, self.K, self.N, self.A, self.B, self.C = gemm_arrays(m, k, n)
        if splits > 1:
            self.C = GlobalArray("C_partial", "out", ("S", "M", "N"))
        W0 = Const(tile, "WG_X")
        self.BM, self.BN, self.BK = Const(g["bm"], "BM"), Const(g["bn"], "BN"), Const(bk, "BK")
        WM, WN = Const(g["wm"], "WM"), Const(g["wn"], "WN")
        self.LR, self.LC = Const(g["lanes_m"], "LANES_M"), Const(g["lanes_n"], "LANES_N")
        SG = Const(SUB_GROUP_ITEMS, "SG_ITEMS")
        self.WG = Const(tile * wg_rows, "WG_ITEMS")
        self.NBUF, self.V = Const(2, "NBUF"), Const(VECTOR, "VEC")
        self.SKEW = Const(skew_floats(bk), "SKEW")
        SGN = Const(g["bn"] // g["wn"], "SG_COLS")

        self.tid = Let("tid", local_id(1) * W0 + local_id(0))
        self.sg, self.lane = Let("sg", self.tid.var // SG), Let("lane", self.tid.var % SG)
        self.wrow = Let("wrow", self.sg.var // SGN * WM + self.lane.var // self.LC * self.V)
        self.wcol = Let("wcol", self.sg.var % SGN * WN + self.lane.var % self.LC * self.V)
        groups_n, groups_m = -(-n // g["bn"]), -(-m // g["bm"])
        self.order = block_order(groups_n, groups_m, group_rows)
        self.row0 = Let("row0", self.order[-2].var * self.BM)
        self.col0 = Let("col0", self.order[-1].var * self.BN)
        self.tile_a = LocalArray("A_tile", (self.NBUF, self.BK,
                                            Const(a_row_floats(g["bm"], bk), "A_ROW")))
        self.tile_b = LocalArray("B_tile", (self.NBUF, self.BK, self.BN))
        self.acc = PrivateArray("acc", (Const(tm, "TM"), Const(tn, "TN")))
        self.frag_a = [[f"a{s}_{i}" for i in range(tm)] for s in range(2)]
        self.frag_b = [[f"b{s}_{j}" for j in range(tn)] for s in range(2)]

    def body(self) -> tuple:
        """The kernel body: ids, block origin, declarations, the K loop, the stores."""
        return block(self.tid, self.sg, self.lane, self.wrow, self.wcol, self.order,
                     self.row0, self.col0, self.declarations(), self.main(), self.stores())

    def declarations(self) -> list:
        decls = [DeclarePrivateArray(self.acc)] + [
            DeclareFloat(x, None) for names in self.frag_a + self.frag_b for x in names]
        decls += [DeclareFloat(x, None) for tag, count in (("a", self.g["staged_a"]),
                                                           ("b", self.g["staged_b"]))
                  for q in range(count) for x in _float4_names(tag)(q)]
        return decls

    def a_column(self, k_index: IntExpr, row: IntExpr) -> IntExpr:
        """Column of A_tile[.][k] holding row ``row`` (the skew)."""
        return row + k_index // self.V * self.SKEW

    def tiles(self, k0: IntExpr, buf: IntExpr, tag: str):
        """The A and B tiles of the K step at ``k0`` into buffer ``buf``, as
        :func:`simulator.kernels.register_blocked.staged_parts` takes them."""
        r0, c0 = self.row0.var, self.col0.var
        tile_a, tile_b = self.tile_a, self.tile_b
        return (
            (f"{tag}a", self.g["staged_a"], self.BK // self.V, (r0, k0), (self.M, self.K),
             self.A, _float4_names("a"),
             lambda r, c, names: [store(tile_a, (buf, c.var + w, self.a_column(c.var, r.var)),
                                        Private(names[w])) for w in range(VECTOR)]),
            (f"{tag}b", self.g["staged_b"], self.BN // self.V, (k0, c0), (self.K, self.N),
             self.B, _float4_names("b"),
             lambda r, c, names: [vstore(tile_b, (buf, r.var, c.var),
                                         [Private(x) for x in names])]))

    def first_loads(self, k0: IntExpr) -> list:
        indices, loads, place = staged_parts(self.tiles(k0, Const(0), "p"), self.tid.var,
                                             self.WG, VECTOR)
        return [s for index, load in zip(indices, loads) for s in (*index, load)] + place

    def fragments(self, s: int, buf: IntExpr, kk: IntExpr) -> list:
        loads = [vload(self.frag_a[s][q:q + VECTOR], self.tile_a,
                       (buf, kk, self.a_column(kk, self.wrow.var + q // VECTOR
                                               * (self.LR * self.V))))
                 for q in range(0, self.tm, VECTOR)]
        loads += [vload(self.frag_b[s][q:q + VECTOR], self.tile_b,
                        (buf, kk, self.wcol.var + q // VECTOR * (self.LC * self.V)))
                  for q in range(0, self.tn, VECTOR)]
        return loads

    def update(self, s: int) -> list:
        acc, frag_a, frag_b = self.acc, self.frag_a, self.frag_b
        return [accumulate_elem(acc[i, j], Private(frag_a[s][i]) * Private(frag_b[s][j]))
                for i in range(self.tm) for j in range(self.tn)]

    def compute(self, buf: IntExpr) -> list:
        kk, BK = Var("kk"), self.BK
        return [self.fragments(0, buf, Const(0)), For("kk", Const(0), BK, Const(2), block(
            self.fragments(1, buf, kk + 1), self.update(0),
            If(kk + 2 < BK, tuple(self.fragments(0, buf, kk + 2))), self.update(1)))]

    def main(self) -> list:
        """The K steps (of this slice, for ``splits`` > 1), one barrier each."""
        tv, BK = Var("t"), self.BK
        if self.splits == 1:
            steps = Let("steps", ceil_div(self.K, BK))
            k_base, slice_lets = Const(0), []
        else:
            all_steps = Let("k_steps", ceil_div(self.K, BK))
            per_slice = Let("slice_steps", ceil_div(all_steps.var, Param("S")))
            first_step = Let("first_step", group_id(2) * per_slice.var)
            steps = Let("steps", minimum(all_steps.var - first_step.var, per_slice.var))
            k_base, slice_lets = first_step.var * BK, [all_steps, per_slice, first_step]
        cur = Let("cur", tv % self.NBUF)
        more = tv + 1 < steps.var
        indices, issue, place = staged_parts(
            self.tiles(k_base + (tv + 1) * BK, (tv + 1) % self.NBUF, ""), self.tid.var,
            self.WG, VECTOR)
        return [*slice_lets, steps, self.first_loads(k_base), indices,
                For("t", Const(0), steps.var, Const(1), block(
                    cur, Barrier(), If(more, tuple(issue)), self.compute(cur.var),
                    If(more, tuple(place))))]

    def stores(self) -> list:
        """The guarded float4 stores of the work-item's TM×TN outputs."""
        r0, c0, V = self.row0.var, self.col0.var, self.V
        stores = []
        for i in range(self.tm):
            r = r0 + self.wrow.var + i // VECTOR * (self.LR * V) + i % VECTOR
            for q in range(0, self.tn, VECTOR):
                c = c0 + self.wcol.var + q // VECTOR * (self.LC * V)
                at = (r, c) if self.splits == 1 else (group_id(2), r, c)
                stores.append(If((r < self.M) & (c < self.N), (vstore(
                    self.C, at, [self.acc[i, j] for j in range(q, q + VECTOR)]),)))
        return stores
