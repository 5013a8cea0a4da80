"""Register-blocked GEMMs: each work-item computes a TM×TN block of C.

The scheme: the tiled GEMM of :mod:`simulator.kernels.families` with each work-item computing a
block of outputs from values kept in registers and vector (float4) accesses, as in Volkov
and Demmel, "Benchmarking GPUs to tune dense linear algebra", SC 2008, and CUTLASS's
thread-block, warp and thread tiles (NVIDIA, "CUTLASS: Fast Linear Algebra in CUDA C++",
developer blog, 2017).

Shapes: A is M×K, B is K×N, C is M×N, row-major float32. The work-group is W0×W1
work-items (W0 = ``tile`` along NDRange dimension 0, the columns of C; W1 = ``wg_rows``,
default W0, along the rows). One work-group computes a BM×BN block of C with
BM = TM·W1 and BN = TN·W0, stepping through K in BK-wide slabs: per step it stages a BM×BK
tile of A and a BK×BN tile of B in local memory (zero-filled beyond the edges of A and B),
waits at a barrier, accumulates BK rank-1 updates into its TM·TN private accumulators (TM
values of A and TN of B read from local memory per update, kept in private floats), and
waits again. Global size (⌈N/BN⌉·W0, ⌈M/BM⌉·W1); stores are guarded, so every positive M,
K, N works.

``gemm-register-blocked``: scalar accesses; work-item (lx, ly) owns rows ly + i·W1 and
columns lx + j·W0 of the block (strided: neighbouring work-items store neighbouring
columns, and the local reads of a sub-group are conflict-free).

``gemm-prefetch``: ``gemm-register-blocked`` with double-buffered local tiles (step t+1's
tiles are stored while step t's are read), one barrier per K step.

``gemm-vectorized``: ``float4`` accesses (TM and TN multiples of 4, BK a multiple of 4):
float4 global loads of A and B, float4 local stores of the B tile, float4 local loads of
both tiles (the A tile is stored transposed, ``A_tile[k][row]``, so a work-item's TM rows
are consecutive words) and float4 stores of C; work-item (lx, ly) owns the contiguous rows
ly·TM ... and columns lx·TN ... of the block. A float4 access needs a 16-byte aligned
address, so K and N must be multiples of 4 (refused otherwise, naming the value: use
``gemm-register-blocked``); the rows of the A tile run over M, which may be anything.

Errors: :class:`ScheduleError` for a size or option that is not a positive integer, a
vector family's K, N, TM, TN or BK not a multiple of 4, or an index beyond 32-bit int.
"""
from __future__ import annotations

from tiletraffic.simulator.ir.nodes import (Assign, Barrier, Const, DeclareFloat,
                                            DeclarePrivateArray, FConst, For, If, Let,
                                            LocalArray, Private, PrivateArray, Schedule,
                                            ScheduleError, Var, accumulate_elem, assign_elem,
                                            block, ceil_div, group_id, local_id, store, vload,
                                            vstore)
from tiletraffic.simulator.kernels.storage import VectorAlignmentError
from tiletraffic.simulator.kernels.parts import check_block, gemm_arrays, positive

DEFAULT_TM = 4
DEFAULT_TN = 4
DEFAULT_BK = 16
VECTOR = 4
"""Floats per vector access of ``gemm-vectorized`` (float4)."""


def _shape(m, k, n, tile, tm, tn, bk, wg_rows):
    m, k, n, tile, tm, tn, bk = (positive(a, v) for a, v in (
        ("M", m), ("K", k), ("N", n), ("tile", tile), ("tm", tm), ("tn", tn), ("bk", bk)))
    wg_rows = tile if wg_rows is None else positive("wg_rows", wg_rows)
    check_block(tm, tn, bk)
    return m, k, n, tile, tm, tn, bk, wg_rows


def _geometry(m, k, n, tile, tm, tn, bk, wg_rows):
    """Named constants, ids and the NDRange shared by both families."""
    W0, W1 = Const(tile, "WG_X"), Const(wg_rows, "WG_Y")
    BM, BN, BK = Const(tm * wg_rows, "BM"), Const(tn * tile, "BN"), Const(bk, "BK")
    lx, ly = Let("lx", local_id(0)), Let("ly", local_id(1))
    tid = Let("tid", ly.var * W0 + lx.var)
    row0, col0 = Let("row0", group_id(1) * BM), Let("col0", group_id(0) * BN)
    global_size = (-(-n // (tn * tile)) * tile, -(-m // (tm * wg_rows)) * wg_rows)
    return W0, W1, BM, BN, BK, lx, ly, tid, row0, col0, global_size


def _extra(tile, tm, tn, bk, wg_rows) -> dict:
    return {"tm": tm, "tn": tn, "bk": bk, "wg_rows": wg_rows,
            "bm": tm * wg_rows, "bn": tn * tile}


def gemm_register_blocked(m: int, k: int, n: int, tile: int = 16, tm: int = DEFAULT_TM,
                          tn: int = DEFAULT_TN, bk: int = DEFAULT_BK,
                          wg_rows: int | None = None) -> Schedule:
    """Register-blocked GEMM C = A·B with scalar accesses (see the module docstring).

    Args:
        m, k, n: sizes (A is m×k, B is k×n).
        tile: work-items per work-group along the columns (W0).
        tm, tn: rows and columns of C per work-item.
        bk: depth of a K step (columns of the A tile, rows of the B tile).
        wg_rows: work-items per work-group along the rows (W1; default ``tile``).

    Counts: :func:`simulator.kernels.closed_forms.gemm_register_blocked`.

    Raises:
        ScheduleError: a size or option that is not a positive integer.
    """
    return _scalar_blocked("gemm-register-blocked", m, k, n, tile, tm, tn, bk, wg_rows,
                           prefetch=False)


def gemm_prefetch(m: int, k: int, n: int, tile: int = 16, tm: int = DEFAULT_TM,
                  tn: int = DEFAULT_TN, bk: int = DEFAULT_BK,
                  wg_rows: int | None = None) -> Schedule:
    """Register-blocked GEMM with double-buffered local tiles (prefetch).

    As :func:`gemm_register_blocked`, with two A and two B tiles in local memory
    (``A_tile[2][BM][BK]``, ``B_tile[2][BK][BN]``, twice the local memory): the work-group
    stages the first K step, then each step t waits once (a barrier at its top), fills the
    other buffer with step t+1's tiles and computes from step t's: one barrier per step (S
    in all), against two for ``gemm-register-blocked``. When every work-item loads a whole
    number of elements of each tile (the staged loads), step t+1's global loads go into
    private floats before step t's multiply-adds and stored into the other buffer after
    them, so they are in flight while the work-item computes; otherwise (the load loops)
    they are loaded and stored before the multiply-adds. No race: a buffer is written in
    step t only after the barrier at the top of step t, which every work-item passes after
    its reads of that buffer in step t-1, and read in step t+1 only after the next barrier.

    Counts: :func:`simulator.kernels.closed_forms.gemm_register_blocked` with S barriers per
    work-group instead of 2·S.

    Raises:
        ScheduleError: a size or option that is not a positive integer.
    """
    return _scalar_blocked("gemm-prefetch", m, k, n, tile, tm, tn, bk, wg_rows,
                           prefetch=True)


def _staged_counts(tm: int, tn: int, bk: int, tile: int, wg_rows: int,
                   width: int) -> tuple[int, int] | None:
    """Elements (of ``width`` floats) of the A and B tiles each work-item loads per K step,
    ``(tm·bk / (width·tile), bk·tn / (width·wg_rows))``, when both are whole numbers of at
    least one (the tile loads can then be staged); ``None`` otherwise."""
    loads_a, rem_a = divmod(tm * bk, width * tile)        # (BM x BK) / width / work-items
    loads_b, rem_b = divmod(bk * tn, width * wg_rows)     # (BK x BN) / width / work-items
    return (loads_a, loads_b) if not rem_a and not rem_b and loads_a and loads_b else None


def _staged_loads(tiles, tid, wg, width: int) -> list:
    """Every element's guarded global load (:func:`_staged_element`), then every local
    store: ``tiles`` holds per tile (tag, elements per work-item, row length, origin,
    limits, source array, ``names(q)``: the private floats of element q, ``put(row, column,
    names)``: its local stores)."""
    indices, loads, place = staged_parts(tiles, tid, wg, width)
    return [s for index, load in zip(indices, loads) for s in (*index, load)] + place


def staged_parts(tiles, tid, wg, width: int) -> tuple[list, list, list]:
    """:func:`_staged_loads` in three parts: per element its index Lets (flat index, row,
    column: the work-item's, the same in every K step) and its guarded global load, and the
    list of every local store."""
    indices, loads, place = [], [], []
    for tag, count, row_len, origin, limits, source, names_of, put in tiles:
        for q in range(count):
            names = names_of(q)
            r, c, stmts = _staged_element(q, tag, tid, wg, width, row_len, origin, limits,
                                          source, names)
            indices.append(stmts[:-1])
            loads.append(stmts[-1])
            place += put(r, c, names)
    return indices, loads, place


def _staged_element(q: int, tag: str, tid, wg, width: int, row_len, origin, limits, array,
                    names: list[str]):
    """The ``q``-th element (``width`` floats) of a tile that work-item ``tid`` loads, the
    tile's rows ``row_len`` elements long: the Lets of its flat index ``{tag}e{q}``, row
    ``{tag}r{q}`` and column ``{tag}c{q}`` (in floats), and the guarded load of
    ``array[origin + (row, column)]`` into the private floats ``names`` (zeros outside
    ``limits``). Returns (row Let, column Let, statements)."""
    e = Let(f"{tag}e{q}", tid + q * wg)
    r = Let(f"{tag}r{q}", e.var // row_len)
    c = Let(f"{tag}c{q}", e.var % row_len * width if width > 1 else e.var % row_len)
    at = (origin[0] + r.var, origin[1] + c.var)
    load = vload(names, array, at) if width > 1 else Assign(names[0], array[at])
    inside = (at[0] < limits[0]) & (at[1] < limits[1])
    return r, c, [e, r, c, If(inside, (load,), tuple(Assign(x, FConst(0.0)) for x in names))]


def _scalar_blocked(family, m, k, n, tile, tm, tn, bk, wg_rows, prefetch: bool) -> Schedule:
    m, k, n, tile, tm, tn, bk, wg_rows = _shape(m, k, n, tile, tm, tn, bk, wg_rows)
    M, K, N, A, B, C = gemm_arrays(m, k, n)
    W0, W1, BM, BN, BK, lx, ly, tid, row0, col0, global_size = _geometry(
        m, k, n, tile, tm, tn, bk, wg_rows)
    WG = Const(tile * wg_rows, "WG_ITEMS")
    NBUF = Const(2, "NBUF")
    lead = (NBUF,) if prefetch else ()
    tile_a = LocalArray("A_tile", lead + (BM, BK))
    tile_b = LocalArray("B_tile", lead + (BK, BN))
    TM, TN = Const(tm, "TM"), Const(tn, "TN")
    acc = PrivateArray("acc", (TM, TN))
    a, b = PrivateArray("a", (TM,)), PrivateArray("b", (TN,))
    decls = [DeclarePrivateArray(acc), DeclarePrivateArray(a, None), DeclarePrivateArray(b, None)]
    tv, e, kk, i, j = Var("t"), Var("e"), Var("kk"), Var("i"), Var("j")
    ar, ac = Let("ar", e // BK), Let("ac", e % BK)
    br, bc = Let("br", e // BN), Let("bc", e % BN)
    r0, c0 = row0.var, col0.var
    one = Const(1)

    # Staged loads: when every work-item loads the same number of elements of each tile,
    # the load loops are unrolled here and every global load of a K step is issued before
    # the first local store (into private floats sa<r>, sb<r>), so a K step waits for one
    # memory round trip, not for a chain of load -> store pairs (what NVIDIA's OpenCL
    # compiler makes of the loops otherwise).
    staged = _staged_counts(tm, tn, bk, tile, wg_rows, 1)
    if staged:
        decls += [DeclareFloat(f"sa{q}", None) for q in range(staged[0])]
        decls += [DeclareFloat(f"sb{q}", None) for q in range(staged[1])]

    def staged_tiles(k0v, buf, tag):
        at = (buf,) if prefetch else ()
        return (
            (f"{tag}a", staged[0], BK, (r0, k0v), (M, K), A, lambda q: [f"sa{q}"],
             lambda r, c, names: [store(tile_a, at + (r.var, c.var), Private(names[0]))]),
            (f"{tag}b", staged[1], BN, (k0v, c0), (K, N), B, lambda q: [f"sb{q}"],
             lambda r, c, names: [store(tile_b, at + (r.var, c.var), Private(names[0]))]))

    def staged_loads(k0v, buf, tag):
        return _staged_loads(staged_tiles(k0v, buf, tag), tid.var, WG, 1)

    def loads(k0v, buf, tag=""):
        if staged:
            return staged_loads(k0v, buf, tag)
        at = (buf,) if prefetch else ()
        load_a = For("e", tid.var, BM * BK, WG, block(
            ar, ac,
            If((r0 + ar.var < M) & (k0v + ac.var < K),
               (store(tile_a, at + (ar.var, ac.var), A[r0 + ar.var, k0v + ac.var]),),
               (store(tile_a, at + (ar.var, ac.var), 0.0),))))
        load_b = For("e", tid.var, BK * BN, WG, block(
            br, bc,
            If((k0v + br.var < K) & (c0 + bc.var < N),
               (store(tile_b, at + (br.var, bc.var), B[k0v + br.var, c0 + bc.var]),),
               (store(tile_b, at + (br.var, bc.var), 0.0),))))
        return [load_a, load_b]

    def compute(buf):
        at = (buf,) if prefetch else ()
        return For("kk", Const(0), BK, one, block(
            For("i", Const(0), TM, one, (assign_elem(a[i], tile_a[at + (ly.var + i * W1, kk)]),)),
            For("j", Const(0), TN, one, (assign_elem(b[j], tile_b[at + (kk, lx.var + j * W0)]),)),
            For("i", Const(0), TM, one, (For("j", Const(0), TN, one, (
                accumulate_elem(acc[i, j], a[i] * b[j]),)),))))

    r, c = r0 + ly.var + i * W1, c0 + lx.var + j * W0
    stores = [For("i", Const(0), TM, one, (For("j", Const(0), TN, one, (
        If((r < M) & (c < N), (store(C, (r, c), acc[i, j]),)),)),))]
    steps = Let("steps", ceil_div(K, BK))
    if prefetch:
        # one unconditional barrier at the top of every K step (after it, every work-item has
        # finished the step before, which read the buffer this step's loads overwrite): a
        # barrier under ``if (t + 1 < steps)`` or in a loop of zero iterations is one that
        # PoCL 3.0-rc2 miscompiles (tests/test_codegen.py); one barrier per K step
        cur = Let("cur", tv % NBUF)
        more = tv + 1 < steps.var
        if staged:
            # step t+1's global loads are issued into the private floats before step t's
            # multiply-adds and stored into the other buffer after them, so a work-item's
            # loads are in flight while it computes (prefetching: loading the next tile
            # overlaps computing the current one). Stored before the multiply-adds, every
            # K step would wait for its loads first: a compiler may not move the stores
            # past the reads of the other buffer
            indices, issue, place = staged_parts(staged_tiles((tv + 1) * BK, (tv + 1) % NBUF, ""),
                                                  tid.var, WG, 1)
            main = [steps, loads(Const(0), Const(0), "p"), indices,
                    For("t", Const(0), steps.var, one, block(
                        cur, Barrier(), If(more, tuple(issue)), compute(cur.var),
                        If(more, tuple(place))))]
        else:
            main = [steps, loads(Const(0), Const(0), "p"),
                    For("t", Const(0), steps.var, one, block(
                        cur, Barrier(), If(more, tuple(loads((tv + 1) * BK, (tv + 1) % NBUF))),
                        compute(cur.var)))]
        description = (f"{tm}x{tn} outputs per work-item, double-buffered {tm * wg_rows}x{bk} "
                       f"and {bk}x{tn * tile} local tiles, one barrier per K step")
    else:
        k0 = Let("k0", tv * BK)
        main = [steps, For("t", Const(0), steps.var, one, block(
            k0, loads(k0.var, None), Barrier(), compute(None), Barrier()))]
        description = (f"{tm}x{tn} outputs per work-item from {tm * wg_rows}x{bk} and "
                       f"{bk}x{tn * tile} local tiles, two barriers per K step")
    body = block(lx, ly, tid, row0, col0, decls, main, stores)
    return Schedule(
        family=family, kernel_name=family.replace("-", "_"),
        params=(("M", m), ("K", k), ("N", n)), arrays=(A, B, C),
        local_arrays=(tile_a, tile_b), local_size=(tile, wg_rows), global_size=global_size,
        body=body, tile=tile, description=description,
        extra=_extra(tile, tm, tn, bk, wg_rows),
    )


def gemm_vectorized(m: int, k: int, n: int, tile: int = 16, tm: int = DEFAULT_TM,
                    tn: int = DEFAULT_TN, bk: int = DEFAULT_BK,
                    wg_rows: int | None = None, *, check_alignment: bool = True) -> Schedule:
    """Register-blocked GEMM with float4 global and local accesses (module docstring).

    Args: as :func:`gemm_register_blocked`; ``tm``, ``tn`` and ``bk`` multiples of 4.
    ``check_alignment=False`` skips the refusal of K and N (for the faulty variant
    ``gemm-vectorized:unaligned-rows`` of :mod:`simulator.kernels.variants`, whose float4 loads the
    simulator reports as misaligned).

    Counts (elements): those of ``gemm-register-blocked`` with the same shape
    (:func:`simulator.kernels.closed_forms.gemm_register_blocked`); a float4 access counts 4 elements
    and is one instruction (:mod:`simulator.observers.memory`).

    Raises:
        ScheduleError: a size or option that is not a positive integer; K, N, TM, TN or BK
            not a multiple of 4 (float4 accesses need 16-byte aligned addresses;
            :class:`~simulator.kernels.storage.VectorAlignmentError`).
    """
    m, k, n, tile, tm, tn, bk, wg_rows = _shape(m, k, n, tile, tm, tn, bk, wg_rows)
    for what, value in (("K", k), ("N", n), ("tm", tm), ("tn", tn), ("bk", bk)):
        if value % VECTOR and (check_alignment or what in ("tm", "tn", "bk")):
            raise VectorAlignmentError("gemm-vectorized", what, value, VECTOR,
                                       local=what == "tm")   # tm: local-memory reads only
    M, K, N, A, B, C = gemm_arrays(m, k, n)
    W0, W1, BM, BN, BK, lx, ly, tid, row0, col0, global_size = _geometry(
        m, k, n, tile, tm, tn, bk, wg_rows)
    WG = Const(tile * wg_rows, "WG_ITEMS")
    V = Const(VECTOR, "VEC")
    tile_a, tile_b = LocalArray("A_tile", (BK, BM)), LocalArray("B_tile", (BK, BN))
    acc_array = PrivateArray("acc", (Const(tm, "TM"), Const(tn, "TN")))
    a = [f"a_{i}" for i in range(tm)]
    b = [f"b_{j}" for j in range(tn)]
    decls = [DeclarePrivateArray(acc_array)] + [DeclareFloat(x, None) for x in a + b]
    update = [accumulate_elem(acc_array[i, j], Private(a[i]) * Private(b[j]))
              for i in range(tm) for j in range(tn)]
    v = [f"v_{w}" for w in range(VECTOR)]
    decls = decls + [DeclareFloat(x, None) for x in v]
    tv, e, kk = Var("t"), Var("e"), Var("kk")
    k0 = Let("k0", tv * BK)
    ar, ac = Let("ar", e // (BK // V)), Let("ac", e % (BK // V) * V)
    br, bc = Let("br", e // (BN // V)), Let("bc", e % (BN // V) * V)
    r0, c0, k0v = row0.var, col0.var, k0.var
    zeros = tuple(Assign(x, FConst(0.0)) for x in v)
    # staged as in _scalar_blocked: every float4 global load of a K step before the first
    # local store, when every work-item loads the same number of float4s of each tile
    staged = _staged_counts(tm, tn, bk, tile, wg_rows, VECTOR)
    if staged:
        def float4_names(tag):
            return lambda q: [f"v{tag}{q}_{w}" for w in range(VECTOR)]

        decls += [DeclareFloat(x, None) for tag, count in zip("ab", staged)
                  for q in range(count) for x in float4_names(tag)(q)]
        tile_loads = _staged_loads((
            ("a", staged[0], BK // V, (r0, k0v), (M, K), A, float4_names("a"),
             lambda r, c, names: [store(tile_a, (c.var + w, r.var), Private(names[w]))
                                  for w in range(VECTOR)]),
            ("b", staged[1], BN // V, (k0v, c0), (K, N), B, float4_names("b"),
             lambda r, c, names: [vstore(tile_b, (r.var, c.var),
                                         [Private(x) for x in names])])),
            tid.var, WG, VECTOR)
    else:
        tile_loads = block(
            For("e", tid.var, BM * BK // V, WG, block(
                ar, ac,
                If((r0 + ar.var < M) & (k0v + ac.var < K),
                   (vload(v, A, (r0 + ar.var, k0v + ac.var)),), zeros),
                [store(tile_a, (ac.var + w, ar.var), Private(v[w])) for w in range(VECTOR)])),
            For("e", tid.var, BK * BN // V, WG, block(
                br, bc,
                If((k0v + br.var < K) & (c0 + bc.var < N),
                   (vload(v, B, (k0v + br.var, c0 + bc.var)),), zeros),
                vstore(tile_b, (br.var, bc.var), [Private(x) for x in v]))))
    compute = For("kk", Const(0), BK, Const(1), block(
        [vload(a[q:q + VECTOR], tile_a, (kk, ly.var * tm + q)) for q in range(0, tm, VECTOR)],
        [vload(b[q:q + VECTOR], tile_b, (kk, lx.var * tn + q)) for q in range(0, tn, VECTOR)],
        update))
    stores = []
    for i in range(tm):
        r = r0 + ly.var * tm + i
        for q in range(0, tn, VECTOR):
            c = c0 + lx.var * tn + q
            stores.append(If((r < M) & (c < N), (vstore(
                C, (r, c), [acc_array[i, j] for j in range(q, q + VECTOR)]),)))
    body = block(
        lx, ly, tid, row0, col0, decls,
        For("t", Const(0), ceil_div(K, BK), Const(1), block(
            k0, tile_loads, Barrier(), compute, Barrier())),
        stores,
    )
    return Schedule(
        family="gemm-vectorized", kernel_name="gemm_vectorized",
        params=(("M", m), ("K", k), ("N", n)), arrays=(A, B, C),
        local_arrays=(tile_a, tile_b), local_size=(tile, wg_rows), global_size=global_size,
        body=body, tile=tile,
        description=(f"{tm}x{tn} outputs per work-item, float4 global and local accesses, "
                     f"{tm * wg_rows}x{bk} and {bk}x{tn * tile} local tiles"),
        extra=_extra(tile, tm, tn, bk, wg_rows),
    )


ADVANCED_GEMM_FAMILIES = ("gemm-register-blocked", "gemm-vectorized", "gemm-prefetch")
ADVANCED_OPTIONS = ("tm", "tn", "bk", "wg_rows")
"""Options of the register-blocked families (``tile`` is the work-group width W0)."""
