"""The schedule families, each described once as a :class:`~simulator.ir.nodes.Schedule`.

The algorithms: naive and tiled matrix multiplication with tiles staged in local memory
(Kirk and Hwu, *Programming Massively Parallel Processors*, ch. "Memory architecture and
data locality", tiled matrix multiplication), and matrix-vector products with x read per
row, staged per work-group, or staged in chunks when it does not fit.

Layouts: A is M×K, B is K×N, C is M×N, x has K elements, y has M; all row-major float32.
NDRange dimension 0 runs over columns of C (or over rows of y for matrix-vector), dimension
1 over rows of C. Global sizes are rounded up to a multiple of the work-group size and the
kernels guard the edges, so every positive M, K, N works.

The register-blocked GEMMs (``gemm-register-blocked``, ``gemm-vectorized``,
``gemm-prefetch``) live in :mod:`simulator.kernels.register_blocked`, ``gemm-warp-tiled`` in
:mod:`simulator.kernels.warp_tiled`, ``matvec-rows-reduce`` in
:mod:`simulator.kernels.matvec_rows`; :func:`build` builds every family.

Errors: :class:`ScheduleError` (a ``ValueError``) for a size, tile or chunk that is not a
positive integer, or an index range beyond 32-bit ``int`` (the kernels index with ``int``).
"""
from __future__ import annotations

from typing import Callable

from tiletraffic.simulator.ir.nodes import (Accumulate, Assign, Barrier, Const, DeclareFloat,
                                            FConst, For, If, Let, LocalArray, Return, Schedule,
                                            ScheduleError, store, Var, block, ceil_div, fmax,
                                            global_id, local_id, minimum)
from tiletraffic.simulator.kernels.parts import (INT32_MAX, gemm_arrays, matvec_arrays,
                                                 positive, round_up)
from tiletraffic.simulator.kernels.matvec_rows import matvec_rows_reduce
from tiletraffic.simulator.kernels.register_blocked import (gemm_prefetch,
                                                            gemm_register_blocked,
                                                            gemm_vectorized)
from tiletraffic.simulator.kernels.warp_tiled import gemm_warp_tiled
from tiletraffic.simulator.kernels.split_k import gemm_split_k
from tiletraffic.simulator.kernels.batch import batched
from tiletraffic.simulator.kernels.storage import (VectorAlignmentError, check_dtype,
                                                    with_storage)


def gemm_naive(m: int, k: int, n: int, tile: int = 16, mapping: str = "row-major"
               ) -> Schedule:
    """Naive GEMM, C = A·B: one work-item per element of C, tile×tile work-groups.

    Each work-item reads a whole row of A and column of B from global memory: 2·K loads per
    element of C, 2·M·N·K in all (the lesson "Matrix Operations", section "Naive Implementation";
    the lesson "GPU Matrix Multiplication: Tiling and Shared Memory" §4: B²·2N reads per B×B output tile).

    ``mapping="row-major"`` (default): NDRange dimension 0 runs over columns, so neighbouring
    work-items of a sub-group read neighbouring elements of B and C (coalesced).
    ``mapping="transposed"``: dimension 0 runs over rows, so a sub-group's reads of A and
    writes of C are K (or N) elements apart (uncoalesced). The counts of elements are the
    same; requests and sectors are not.
    """
    m, k, n, tile = (positive(a, v) for a, v in (("M", m), ("K", k), ("N", n), ("tile", tile)))
    if mapping not in ("row-major", "transposed"):
        raise ScheduleError(f"mapping must be 'row-major' or 'transposed', got {mapping!r}")
    M, K, N, A, B, C = gemm_arrays(m, k, n)
    dims = (0, 1) if mapping == "row-major" else (1, 0)
    col, row, kk = Let("col", global_id(dims[0])), Let("row", global_id(dims[1])), "k"
    r, c, k_ = row.var, col.var, Var(kk)
    acc = DeclareFloat("acc")
    body = block(
        col, row,
        If((r >= M) | (c >= N), (Return(),)),
        acc,
        For(kk, Const(0), K, Const(1), (Accumulate("acc", A[r, k_] * B[k_, c]),)),
        store(C, (r, c), acc.ref),
    )
    return Schedule(
        family="gemm-naive", kernel_name="gemm_naive",
        params=(("M", m), ("K", k), ("N", n)), arrays=(A, B, C), local_arrays=(),
        local_size=(tile, tile),
        global_size=(round_up(n, tile), round_up(m, tile))[::1 if dims == (0, 1) else -1],
        body=body, tile=tile,
        description="one work-item per element of C, every operand read from global memory",
        extra={"mapping": mapping},
    )


def gemm_tiled(m: int, k: int, n: int, tile: int = 16, padding: int = 0,
               a_tile: str = "row-major") -> Schedule:
    """Tiled GEMM through local memory with B×B tiles (B = ``tile``) and B×B work-groups.

    Per K-tile: each work-item loads one element of A and one of B into local memory
    (guarded; zero-filled outside the matrix: the value is chosen, then stored once),
    barrier, B multiply-adds from local memory, barrier. Global loads are
    M·K·⌈N/B⌉ + K·N·⌈M/B⌉; 2·⌈K/B⌉ barriers per work-group
    (the lesson "Matrix Operations", section "Tiled Implementation with Shared Memory";
    the lesson "GPU Matrix Multiplication: Tiling and Shared Memory" §3-§4: 2NB reads per output tile).

    Local-memory layout options (counts of elements unchanged, bank conflicts not):
    ``padding`` extra words per tile row (tiles declared ``[B][B + padding]``);
    ``a_tile="transposed"`` stores the A tile transposed (``tile_A[lc][lr]``) and reads
    ``tile_A[k][lr]``: with B = 32 and no padding every store of a sub-group hits one bank.

    Raises:
        ScheduleError: a non-positive size or tile, a negative padding, an unknown a_tile.
    """
    if isinstance(padding, bool) or not isinstance(padding, int) or padding < 0:
        raise ScheduleError(f"padding must be a non-negative integer, got {padding!r}")
    if a_tile not in ("row-major", "transposed"):
        raise ScheduleError(f"a_tile must be 'row-major' or 'transposed', got {a_tile!r}")
    m, k, n, tile = (positive(a, v) for a, v in (("M", m), ("K", k), ("N", n), ("tile", tile)))
    M, K, N, A, B, C = gemm_arrays(m, k, n)
    T = Const(tile, "TILE")
    row_words = Const(tile + padding, "TILE_ROW") if padding else T
    tile_a, tile_b = LocalArray("tile_A", (T, row_words)), LocalArray("tile_B", (T, row_words))
    col, row = Let("col", global_id(0)), Let("row", global_id(1))
    lc, lr = Let("lc", local_id(0)), Let("lr", local_id(1))
    c, r, lcv, lrv = col.var, row.var, lc.var, lr.var
    t, kk = Var("t"), Var("k")
    a_col, b_row = Let("a_col", t * T + lcv), Let("b_row", t * T + lrv)
    acc = DeclareFloat("acc")
    a_at = (lrv, lcv) if a_tile == "row-major" else (lcv, lrv)
    a_val, b_val = DeclareFloat("a_val", None), DeclareFloat("b_val", None)

    def stage(value, inside, element, tile_array, at):
        # the element is chosen first (the guarded load, or 0) and stored once: one store
        # per work-item and K step, as the compilers emit it (one STS per tile, no branch)
        return (If(inside, (Assign(value.name, element),), (Assign(value.name, FConst(0.0)),)),
                store(tile_array, at, value.ref))

    load_a = stage(a_val, (r < M) & (a_col.var < K), A[r, a_col.var], tile_a, a_at)
    load_b = stage(b_val, (b_row.var < K) & (c < N), B[b_row.var, c], tile_b, (lrv, lcv))
    a_read = tile_a[lrv, kk] if a_tile == "row-major" else tile_a[kk, lrv]
    compute = For("k", Const(0), T, Const(1), (Accumulate("acc", a_read * tile_b[kk, lcv]),))
    body = block(
        col, row, lc, lr, acc, a_val, b_val,
        For("t", Const(0), ceil_div(K, T), Const(1), block(
            a_col, b_row, *load_a, *load_b, Barrier(), compute, Barrier(),
        )),
        If((r < M) & (c < N), (store(C, (r, c), acc.ref),)),
    )
    return Schedule(
        family="gemm-tiled", kernel_name="gemm_tiled",
        params=(("M", m), ("K", k), ("N", n)), arrays=(A, B, C),
        local_arrays=(tile_a, tile_b),
        local_size=(tile, tile), global_size=(round_up(n, tile), round_up(m, tile)),
        body=body, tile=tile,
        description="B×B tiles of A and B staged in local memory, two barriers per tile",
        extra={"padding": padding, "a_tile": a_tile},
    )


def _row_per_work_item(m: int, k: int, tile: int, relu: bool) -> Schedule:
    """y = A·x (``relu``: max(A·x, 0)), one work-item per row, ``tile`` rows per work-group;
    the body of ``matvec-naive`` and ``matvec-relu``."""
    m, k, tile = (positive(a, v) for a, v in (("M", m), ("K", k), ("tile", tile)))
    M, K, A, x, y = matvec_arrays(m, k)
    row = Let("row", global_id(0))
    r, kk = row.var, Var("k")
    acc = DeclareFloat("acc")
    body = block(
        row,
        If(r >= M, (Return(),)),
        acc,
        For("k", Const(0), K, Const(1), (Accumulate("acc", A[r, kk] * x[kk]),)),
        store(y, r, fmax(acc.ref, 0.0) if relu else acc.ref),
    )
    name = "matvec_relu" if relu else "matvec_naive"
    return Schedule(
        family=name.replace("_", "-"), kernel_name=name,
        params=(("M", m), ("K", k)), arrays=(A, x, y), local_arrays=(),
        local_size=(tile,), global_size=(round_up(m, tile),), body=body, tile=tile,
        description=("y = max(A·x, 0): one work-item per row, ReLU epilogue with fmax"
                     if relu else
                     "one work-item per row of y, x read from global memory by every row"),
        extra={"epilogue": "relu"} if relu else {},
    )


def matvec_naive(m: int, k: int, tile: int = 256) -> Schedule:
    """Naive matrix-vector product y = A·x: one work-item per row, ``tile`` rows per work-group.

    Every work-item reads its row of A and the whole of x: M·K loads of A and M·K of x
    (the lesson "Matrix Operations", section "Matrix-Vector Multiplication, Naive Implementation").
    """
    return _row_per_work_item(m, k, tile, relu=False)


def matvec_relu(m: int, k: int, tile: int = 256) -> Schedule:
    """Matrix-vector product with a ReLU epilogue, y = max(A·x, 0): one work-item per row
    (as ``matvec-naive``), its sum stored as ``fmax(acc, 0.0f)``.

    Loads as matvec-naive (M·K of A, M·K of x); FLOP 2·M·K + M (``fmax`` counts one, see
    :mod:`simulator.ir.nodes`). The epilogue is exact, so the result's tolerance is the dot
    product's (sum length K, bound |A|·|x|).
    """
    return _row_per_work_item(m, k, tile, relu=True)


def matvec_local(m: int, k: int, tile: int = 256, chunk: int | None = None) -> Schedule:
    """Matrix-vector product with x staged through local memory in chunks.

    The work-group (``tile`` work-items, one row each) copies ``chunk`` elements of x
    (default: the work-group size) into local memory, waits at a barrier, accumulates from
    local memory, and waits again before the next chunk, so any K works within a fixed
    local-memory budget of ``chunk``·4 bytes. x is read once per work-group: ⌈M/tile⌉·K
    loads of x (the lesson "Matrix Operations", section "Optimized Implementation with Shared Memory" and
    "Handling Large Vectors").
    """
    m, k, tile = (positive(a, v) for a, v in (("M", m), ("K", k), ("tile", tile)))
    chunk = tile if chunk is None else positive("chunk", chunk)
    M, K, A, x, y = matvec_arrays(m, k)
    CH, WG = Const(chunk, "CHUNK"), Const(tile, "WG_SIZE")
    xs = LocalArray("x_chunk", (CH,))
    row, lid = Let("row", global_id(0)), Let("lid", local_id(0))
    r, lv, t0, i, j = row.var, lid.var, Var("t0"), Var("i"), Var("j")
    acc = DeclareFloat("acc")
    stage = For("i", lv, CH, WG, (If(t0 + i < K, (store(xs, i, x[t0 + i]),)),))
    compute = If(r < M, (For("j", Const(0), minimum(CH, K - t0), Const(1),
                             (Accumulate("acc", A[r, t0 + j] * xs[j]),)),))
    body = block(
        row, lid, acc,
        For("t0", Const(0), K, CH, (stage, Barrier(), compute, Barrier())),
        If(r < M, (store(y, r, acc.ref),)),
    )
    return Schedule(
        family="matvec-local", kernel_name="matvec_local",
        params=(("M", m), ("K", k)), arrays=(A, x, y), local_arrays=(xs,),
        local_size=(tile,), global_size=(round_up(m, tile),), body=body, tile=tile,
        description="x staged through local memory in chunks, read once per work-group",
        extra={"chunk": chunk},
    )


def matvec_local_whole(m: int, k: int, tile: int = 256, local_words: int | None = None
                       ) -> Schedule:
    """Matrix-vector product with the whole of x staged in local memory once.

    The work-group copies x (K elements) into a local array of ``local_words`` words
    (default K), ``tile`` words per step for the K rounded down to a multiple of ``tile``
    (the same number of steps for every work-item) and one guarded step for the rest,
    waits at one barrier, then each work-item in range accumulates its row from
    local memory. Needs 4·K bytes of local memory: K = 16384 (64 KiB) exceeds the 48 KiB of
    current NVIDIA GPUs and is refused (use ``matvec-local``, which stages chunks). Source:
    the lesson "Matrix Operations", "Optimized Implementation with Shared Memory".
    """
    m, k, tile = (positive(a, v) for a, v in (("M", m), ("K", k), ("tile", tile)))
    words = k if local_words is None else positive("local_words", local_words)
    M, K, A, x, y = matvec_arrays(m, k)
    xs = LocalArray("x_local", (Const(words, "X_WORDS"),))
    row, lid = Let("row", global_id(0)), Let("lid", local_id(0))
    r, lv, i, j = row.var, lid.var, Var("i"), Var("j")
    acc = DeclareFloat("acc")
    wg_size = Const(tile, "WG_SIZE")
    k_full = Let("k_full", K - K % wg_size)
    tail = k_full.var + lv
    body = block(
        row, lid, k_full, acc,
        For("i", lv, k_full.var, wg_size, (store(xs, i, x[i]),)),
        If(tail < K, (store(xs, tail, x[tail]),)),
        Barrier(),
        If(r >= M, (Return(),)),
        For("j", Const(0), K, Const(1), (Accumulate("acc", A[r, j] * xs[j]),)),
        store(y, r, acc.ref),
    )
    return Schedule(
        family="matvec-local-whole", kernel_name="matvec_local_whole",
        params=(("M", m), ("K", k)), arrays=(A, x, y), local_arrays=(xs,),
        local_size=(tile,), global_size=(round_up(m, tile),), body=body, tile=tile,
        description="x staged whole in local memory, read once per work-group",
    )


GEMM_FAMILIES = ("gemm-naive", "gemm-tiled")
"""GEMMs with one output per work-item and B×B work-groups (the families of the studies)."""
MATVEC_FAMILIES = ("matvec-naive", "matvec-local", "matvec-local-whole")
REGISTER_BLOCKED_FAMILIES = ("gemm-register-blocked", "gemm-vectorized", "gemm-prefetch",
                             "gemm-warp-tiled")
"""GEMMs with TM×TN outputs per work-item (:mod:`simulator.kernels.register_blocked`,
:mod:`simulator.kernels.warp_tiled`)."""
ALL_GEMM_FAMILIES = GEMM_FAMILIES + REGISTER_BLOCKED_FAMILIES
"""Every family computing C = A·B (needs N)."""
REDUCTION_MATVEC_FAMILIES = ("matvec-rows-reduce",)
"""Matrix-vector products with several work-items per row (:mod:`simulator.kernels.matvec_rows`)."""
EPILOGUE_FAMILIES = ("matvec-relu",)
"""Products followed by a float function of each result (the IR's ``fmax``, ...)."""
SEQUENCE_FAMILIES = ("gemm-split-k",)
"""Families built as a :class:`simulator.ir.sequence.KernelSequence` of several kernels
(:mod:`simulator.kernels.split_k`); not in :data:`FAMILIES`, whose members are one kernel."""
FAMILIES = (GEMM_FAMILIES + MATVEC_FAMILIES + REGISTER_BLOCKED_FAMILIES
            + REDUCTION_MATVEC_FAMILIES + EPILOGUE_FAMILIES)
BATCH_OPTIONS = ("batch", "shared_b")
"""Options of every GEMM family: ``batch`` products in one launch, ``shared_b`` one B for
all of them (:mod:`simulator.kernels.batch`)."""
DTYPE_OPTIONS = ("dtype",)
"""The option of every family: ``dtype``, its storage (``float32`` or ``float16``,
:mod:`simulator.kernels.storage`)."""
FAMILY_OPTIONS = {"gemm-naive": ("mapping",) + BATCH_OPTIONS + DTYPE_OPTIONS,
                  "gemm-tiled": ("padding", "a_tile") + BATCH_OPTIONS + DTYPE_OPTIONS,
                  "gemm-register-blocked": ("tm", "tn", "bk", "wg_rows") + BATCH_OPTIONS
                  + DTYPE_OPTIONS,
                  "gemm-vectorized": ("tm", "tn", "bk", "wg_rows") + BATCH_OPTIONS
                  + DTYPE_OPTIONS,
                  "gemm-prefetch": ("tm", "tn", "bk", "wg_rows") + BATCH_OPTIONS
                  + DTYPE_OPTIONS,
                  "gemm-warp-tiled": ("tm", "tn", "bk", "wg_rows", "wn", "group_rows")
                  + BATCH_OPTIONS + DTYPE_OPTIONS,
                  "gemm-split-k": ("tm", "tn", "bk", "wg_rows", "wn", "group_rows",
                                   "splits") + BATCH_OPTIONS + DTYPE_OPTIONS,
                  "matvec-rows-reduce": ("wg_rows", "vec") + DTYPE_OPTIONS,
                  "matvec-naive": DTYPE_OPTIONS, "matvec-local": DTYPE_OPTIONS,
                  "matvec-local-whole": DTYPE_OPTIONS, "matvec-relu": DTYPE_OPTIONS}
"""Options each family takes."""
DEFAULT_TILE = {"gemm-naive": 16, "gemm-tiled": 16, "gemm-register-blocked": 16,
                "gemm-vectorized": 16, "gemm-prefetch": 16, "gemm-warp-tiled": 16,
                "gemm-split-k": 16,
                "matvec-rows-reduce": 32,
                "matvec-naive": 256, "matvec-local": 256,
                "matvec-local-whole": 256, "matvec-relu": 256}


def build(family: str, m: int, k: int, n: int | None = None, tile: int | None = None,
          chunk: int | None = None, **options) -> Schedule:
    """Build the schedule ``family`` for the given sizes.

    Args:
        family: one of :data:`FAMILIES`, or of :data:`SEQUENCE_FAMILIES` (then a
            :class:`simulator.ir.sequence.KernelSequence` is returned; ``splits``: the slices
            of K, default 4).
        m, k, n: sizes (A is m×k; B is k×n for GEMM; ``n`` is ignored for matrix-vector).
        tile: tile width B (GEMM; for the register-blocked families the work-group width
            W0, see :mod:`simulator.kernels.register_blocked`) or rows per work-group
            (matrix-vector); default from :data:`DEFAULT_TILE`.
        chunk: elements of x per staged chunk (``matvec-local`` only).
        options: family options: ``mapping`` (gemm-naive), ``padding`` and ``a_tile``
            (gemm-tiled), ``tm``, ``tn``, ``bk``, ``wg_rows`` (gemm-register-blocked,
            gemm-vectorized, gemm-prefetch, gemm-warp-tiled), ``wn`` (gemm-warp-tiled);
            every GEMM family: ``batch`` (products in one launch, default 1) and
            ``shared_b`` (one B for the whole batch), see :mod:`simulator.kernels.batch`;
            every family: ``dtype`` (``float32``, the default, or ``float16``: half
            storage of its matrices and vectors, :mod:`simulator.kernels.storage`).

    Raises:
        ScheduleError: unknown family, missing ``n`` for GEMM, or a bad parameter.
    """
    dtype = check_dtype(options.pop("dtype", "float32"))
    try:
        schedule = _build(family, m, k, n, tile, chunk, **options)
    except VectorAlignmentError as err:
        raise err.stored_as(dtype) from None
    return with_storage(schedule, dtype)


def _build(family: str, m: int, k: int, n: int | None, tile: int | None,
           chunk: int | None, **options) -> Schedule:
    """:func:`build` in float32 storage."""
    if family not in FAMILIES + SEQUENCE_FAMILIES:
        raise ScheduleError(f"unknown schedule {family!r}; choose one of "
                            f"{', '.join(FAMILIES + SEQUENCE_FAMILIES)}")
    tile = DEFAULT_TILE[family] if tile is None else tile
    if chunk is not None and family != "matvec-local":
        raise ScheduleError(f"chunk applies to matvec-local only, not {family}")
    builders: dict[str, Callable[..., Schedule]] = {
        "gemm-naive": gemm_naive, "gemm-tiled": gemm_tiled,
        "gemm-register-blocked": gemm_register_blocked, "gemm-vectorized": gemm_vectorized,
        "gemm-prefetch": gemm_prefetch, "gemm-warp-tiled": gemm_warp_tiled,
        "gemm-split-k": gemm_split_k,
        "matvec-naive": matvec_naive, "matvec-local": matvec_local,
        "matvec-local-whole": matvec_local_whole, "matvec-relu": matvec_relu,
    }
    if family in ALL_GEMM_FAMILIES + SEQUENCE_FAMILIES:
        if n is None:
            raise ScheduleError(f"{family} needs N (columns of B and C)")
        allowed = FAMILY_OPTIONS[family]
        unknown = sorted(set(options) - set(allowed))
        if unknown:
            raise ScheduleError(f"{family} does not take {', '.join(unknown)}; its options: "
                                f"{', '.join(allowed) or 'none'}")
        batch, shared_b = options.pop("batch", 1), options.pop("shared_b", False)
        return batched(builders[family](m, k, n, tile, **options), batch, shared_b)
    if family == "matvec-rows-reduce":
        unknown = sorted(set(options) - {"wg_rows", "vec"})
        if unknown:
            raise ScheduleError(f"{family} does not take {', '.join(unknown)}; its options: "
                                "wg_rows, vec")
        return matvec_rows_reduce(m, k, tile, **options)
    if options:
        raise ScheduleError(f"{family} takes no options, got {sorted(options)}")
    if family == "matvec-local":
        return matvec_local(m, k, tile, chunk)
    return builders[family](m, k, tile)
