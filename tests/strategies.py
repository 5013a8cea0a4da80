"""Hypothesis strategies and numeric helpers shared by the test modules, in one place.

Sizes are small (1..48 by default) and drawn independently of the tile, so sizes that are
not multiples of the tile (edge tiles, padded work-items) are the common case. GEMM tiles
run 1..16 and always include the awkward 3, 5 and 7; matrix-vector work-group sizes run
1..128 (small ones favoured so that several work-groups occur).

The numeric oracle lives here too and is deliberately independent of the code under test
(it does not use ``simulator.engine.reference``): a float64 numpy product and the dot-product error
bound of Higham, *Accuracy and Stability of Numerical Algorithms*, eq. (3.5).
"""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from tiletraffic.simulator.ir.nodes import Schedule
from tiletraffic.simulator.kernels.families import (ALL_GEMM_FAMILIES, FAMILIES, GEMM_FAMILIES,
                                                    REGISTER_BLOCKED_FAMILIES,
                                                    SEQUENCE_FAMILIES, build)

MAX_SIZE = 48
"""Default largest M, K, N."""

U32 = 2.0**-24
"""Unit roundoff of float32."""


# ------------------------------------------------------------------------ strategies
def dims(max_size: int = MAX_SIZE) -> st.SearchStrategy[int]:
    """One matrix dimension in 1..max_size."""
    return st.integers(min_value=1, max_value=max_size)


def sizes(max_size: int = MAX_SIZE) -> st.SearchStrategy[tuple[int, int, int]]:
    """(M, K, N), each in 1..max_size, drawn independently (non-multiples of any tile)."""
    return st.tuples(dims(max_size), dims(max_size), dims(max_size))


def gemm_tiles(max_tile: int = 16) -> st.SearchStrategy[int]:
    """GEMM tile width B in 1..max_tile; the odd widths 3, 5, 7 are drawn often."""
    odd = [b for b in (3, 5, 7) if b <= max_tile]
    return st.one_of(st.sampled_from(odd), st.integers(1, max_tile)) if odd \
        else st.integers(1, max_tile)


def matvec_tiles(max_tile: int = 128) -> st.SearchStrategy[int]:
    """Matrix-vector work-group size (rows per work-group) in 1..max_tile."""
    return st.one_of(st.integers(1, min(16, max_tile)), st.integers(1, max_tile))


def chunks(max_chunk: int = 64) -> st.SearchStrategy[int | None]:
    """Elements of x per staged chunk for matvec-local; ``None`` = the builder's default."""
    return st.one_of(st.none(), st.integers(1, max_chunk))


@st.composite
def schedules(draw, families=FAMILIES, max_size: int = MAX_SIZE, max_gemm_tile: int = 16,
              max_matvec_tile: int = 128, max_chunk: int = 64) -> Schedule:
    """A built schedule of one of ``families`` with drawn sizes, tile and chunk."""
    family = draw(st.sampled_from(tuple(families)))
    m, k, n = draw(sizes(max_size))
    if family in REGISTER_BLOCKED_FAMILIES:
        return build(family, *draw(register_block_sizes(family, max_size)),
                     **draw(register_block_options(family)))
    if family in GEMM_FAMILIES:
        return build(family, m, k, n, tile=draw(gemm_tiles(max_gemm_tile)))
    tile = draw(matvec_tiles(max_matvec_tile))
    if family == "matvec-rows-reduce":
        return build(family, m, k, tile=min(tile, 64), wg_rows=draw(st.integers(1, 8)))
    if family == "matvec-local":
        return build(family, m, k, tile=tile, chunk=draw(chunks(max_chunk)))
    return build(family, m, k, tile=tile)


def register_block_sizes(family: str, max_size: int = MAX_SIZE):
    """(M, K, N) for a register-blocked family: any for gemm-register-blocked; K and N
    multiples of 4 for gemm-vectorized and gemm-warp-tiled (their float4 accesses need
    them)."""
    if family in ("gemm-vectorized", "gemm-warp-tiled"):
        fours = st.integers(1, max(1, max_size // 4)).map(lambda v: 4 * v)
        return st.tuples(dims(max_size), fours, fours)
    return sizes(max_size)


def warp_tiled_configurations(max_local_bytes: int = 48 * 1024) -> tuple[dict, ...]:
    """Every valid small gemm-warp-tiled configuration (tile, wg_rows, tm, tn, bk, wn):
    work-groups of 32 to 128 work-items, rectangular ones and every sub-group tile width
    the block allows, local memory within ``max_local_bytes``."""
    from tiletraffic.simulator.ir.nodes import ScheduleError
    from tiletraffic.simulator.kernels.warp_tiled import a_row_floats, warp_geometry

    found = []
    for tile in (2, 4, 8, 16):
        for wg_rows in (2, 4, 8, 16):
            if not 32 <= tile * wg_rows <= 128:
                continue
            for tm in (4, 8):
                for tn in (4, 8):
                    for bk in (4, 8, 12, 16):
                        for lanes in (1, 2, 4, 8, 16, 32):
                            try:
                                g = warp_geometry(tile, wg_rows, tm, tn, bk, lanes * tn)
                            except ScheduleError:
                                continue
                            a_row = a_row_floats(g["bm"], bk)
                            if 2 * 4 * bk * (a_row + g["bn"]) <= max_local_bytes:
                                found.append({"tile": tile, "wg_rows": wg_rows, "tm": tm,
                                              "tn": tn, "bk": bk, "wn": lanes * tn})
    return tuple(found)


def register_block_options(family: str):
    """tile (work-group width), wg_rows, tm, tn, bk of a register-blocked family: small and
    rectangular (tm != tn, wg_rows != tile) often; multiples of 4 for gemm-vectorized;
    one of :func:`warp_tiled_configurations` (with its wn) for gemm-warp-tiled."""
    if family == "gemm-warp-tiled":
        return st.sampled_from(warp_tiled_configurations())
    per_item = st.sampled_from((4, 8)) if family == "gemm-vectorized" else st.integers(1, 5)
    depth = st.sampled_from((4, 8, 12)) if family == "gemm-vectorized" else st.integers(1, 9)
    return st.fixed_dictionaries({"tile": st.integers(1, 8), "wg_rows": st.integers(1, 8),
                                  "tm": per_item, "tn": per_item, "bk": depth})


seeds = st.integers(min_value=0, max_value=2**32 - 1)
"""Seeds for ``np.random.default_rng`` (drawn by hypothesis so that failures replay)."""


# ------------------------------------------------------------------- inputs, oracle
def logical_shape(schedule: Schedule, array_name: str) -> tuple[int, ...]:
    """Logical shape of a global array, e.g. (M, K) for A."""
    p = schedule.param_values
    return tuple(p[s] for s in schedule.array(array_name).shape)


def random_inputs(schedule: Schedule, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Fresh standard-normal float32 arrays for every input of ``schedule``, logical shapes.

    Arrays of more than one element are never constant (a constant input hides swapped
    indices); the draw is repeated in the (probability zero) case that one is.
    """
    out = {}
    for a in schedule.arrays:
        if not a.is_input:
            continue
        shape = logical_shape(schedule, a.name)
        arr = rng.standard_normal(shape).astype(np.float32)
        while arr.size > 1 and np.all(arr == arr.flat[0]):
            arr = rng.standard_normal(shape).astype(np.float32)
        out[a.name] = arr
    return out


def output_name(schedule: Schedule) -> str:
    """Name of the schedule's single output (C or y)."""
    (name,) = [a.name for a in schedule.arrays if a.role == "out"]
    return name


def reference(schedule: Schedule, inputs: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """float64 ``A@B`` (or ``A@x``; ``max(A@x, 0)`` for a ReLU epilogue) and ``|A|@|B|``
    for the inputs of ``schedule``."""
    second = "B" if schedule.family in ALL_GEMM_FAMILIES + SEQUENCE_FAMILIES else "x"
    a = inputs["A"].astype(np.float64)
    b = inputs[second].astype(np.float64)
    exact = a @ b
    if schedule.extra.get("epilogue") == "relu":
        exact = np.maximum(exact, 0.0)
    return exact, np.abs(a) @ np.abs(b)


def tolerance(k: int, abs_product: np.ndarray) -> np.ndarray:
    """``2·γ_K·(|A|@|B|) + 1e-30`` with ``γ_K = K·u/(1−K·u)``, u = 2⁻²⁴ (Higham eq. 3.5)."""
    ku = k * U32
    return 2.0 * (ku / (1.0 - ku)) * abs_product + 1e-30


def assert_matches_reference(schedule: Schedule, inputs: dict[str, np.ndarray],
                             actual: np.ndarray, what: str = "result") -> None:
    """``actual`` has the output's logical shape, no NaN, and is within the K-scaled bound."""
    exact, abs_product = reference(schedule, inputs)
    actual = np.asarray(actual)
    assert actual.shape == exact.shape, f"{what}: shape {actual.shape}, expected {exact.shape}"
    assert actual.dtype == np.float32, f"{what}: dtype {actual.dtype}, expected float32"
    unwritten = np.argwhere(np.isnan(actual))
    assert unwritten.size == 0, (f"{what}: {len(unwritten)} elements never written, first at "
                                 f"{tuple(unwritten[0])}")
    err = np.abs(actual.astype(np.float64) - exact)
    bound = tolerance(schedule.param_values["K"], abs_product)
    worst = np.unravel_index(np.argmax(err - bound), err.shape) if err.size else ()
    assert np.all(err <= bound), (f"{what} of {schedule.family} (params {schedule.params}, "
                                  f"tile {schedule.tile}): error {err[worst]:.3g} at {worst} "
                                  f"exceeds bound {bound[worst]:.3g} "
                                  f"(got {actual[worst]!r}, exact {exact[worst]!r})")


# --------------------------------------------------- broken variants and demos (hazards)
# Shapes (m, k, n, tile) at which a broken variant of simulator.kernels.variants.VARIANTS *must* show
# its fault, and shapes at which it cannot. A variant added without a strategy here makes
# the hazard tests fail with a KeyError, so no variant goes untested.

def _edge_pair(draw, tile: int, max_size: int) -> tuple[int, int]:
    """(M, N) in 1..max_size+tile with at least one of them not a multiple of ``tile`` (>= 2)."""
    m, n = draw(dims(max_size)), draw(dims(max_size))
    if m % tile == 0 and n % tile == 0:
        bump = draw(st.integers(1, tile - 1))
        if draw(st.booleans()):
            m += bump
        else:
            n += bump
    return m, n


@st.composite
def variant_fault_shapes(draw, name: str, max_size: int = 40) -> tuple:
    """A shape (m, k, n, tile) at which the broken variant ``name`` must report every kind
    in its ``expected``:

    - no-second-barrier: K > B (a second K-tile overwrites what the first is still read
      from), B >= 2;
    - no-first-barrier: B >= 2 (every work-item reads tile words its neighbours store);
    - early-return, no-guards, floor-grid: M or N not a multiple of B >= 2;
    - fixed-256: K > 256;
    - unguarded-copy: 2 <= K < work-group size (work-items past K copy out of bounds, and
      every row reads words other work-items stored);
    - demo-shift: >= 33 work-items; column staging: >= 2 columns, rows and work-items;
    - in-place reduction: a second work-group (M > 2·tile); neighbour behind a local-only
      fence: M >= 2; zeros in one launch: any shape (no single launch shows it);
    - gemm-vectorized:unaligned-rows: K > 4, not a multiple of 4 (row 1's first float4
      of A is in bounds but misaligned; a row's last float4 reaches past K), M >= 2;
    - accumulate-into-output: any shape (every element of C is read before its store).
    """
    if name == "gemm-vectorized:unaligned-rows":  # row 1 starts at element K, K % 4 != 0
        # the fault shows at every such shape: sizes to 20 keep its full executions short
        size = min(max_size, 20)
        k = draw(st.integers(5, size).filter(lambda v: v % 4))
        return (draw(st.integers(2, size)), k, 4 * draw(st.integers(1, size // 4)),
                draw(st.integers(1, 4)))
    if name == "gemm-tiled:no-second-barrier":
        tile = draw(st.integers(2, 8))
        m, n = draw(dims(max_size)), draw(dims(max_size))
        return m, draw(st.integers(tile + 1, tile + max_size)), n, tile
    if name == "gemm-tiled:no-first-barrier":
        tile = draw(st.integers(2, 8))
        m, k, n = draw(sizes(max_size))
        return m, k, n, tile
    if name in ("gemm-tiled:early-return", "gemm-tiled:no-guards", "gemm-tiled:floor-grid"):
        tile = draw(st.one_of(st.sampled_from([3, 5, 7, 16]), st.integers(2, 16)))
        m, n = _edge_pair(draw, tile, max_size)
        if name == "gemm-tiled:floor-grid":  # below one tile the floored NDRange is empty
            m, n = max(m, tile), max(n, tile)
            if m % tile == 0 and n % tile == 0:
                m += 1
        return m, draw(dims(max_size)), n, tile
    if name == "matvec-local-whole:fixed-256":
        return (draw(st.integers(1, 64)), draw(st.integers(257, 400)), None,
                draw(st.integers(16, 256)))
    if name == "matvec-local-whole:unguarded-copy":
        k = draw(st.integers(2, 16))
        return draw(st.integers(1, 100)), k, None, draw(st.integers(k + 1, 64))
    if name == "demo-shift:no-barrier":
        tile = draw(st.integers(33, 128))
        return tile, 1, None, tile
    if name == "demo-column-staging:no-end-barrier":
        return (draw(st.integers(2, 24)), draw(st.integers(1, 8)), draw(st.integers(2, 6)),
                draw(st.integers(2, 8)))
    if name == "demo-reduction:in-place":
        # a second work-group exists (M > 2·tile) and stores into buf[1], which work-item 1
        # of work-group 0 reads
        tile = draw(st.integers(2, 8))
        return draw(st.integers(2 * tile + 1, max(2 * tile + 1, min(4 * tile * tile, 200)))), \
            1, None, tile
    if name == "demo-neighbour:local-fence":
        # work-group 0 has two work-items: work-item 0 reads the y work-item 1 stored
        return draw(st.integers(2, 100)), 1, None, draw(st.integers(2, 32))
    if name in ("gemm-naive:accumulate-into-output",) or \
            name.startswith("gemm-naive:zeros-in-launch"):
        m, k, n = draw(sizes(max_size))
        return m, k, n, draw(st.integers(1, 16))
    raise KeyError(f"no fault-shape strategy for variant {name!r}; add one to tests/strategies.py")


@st.composite
def variant_clean_shapes(draw, name: str, max_size: int = 40) -> tuple:
    """A shape (m, k, n, tile) at which the variant ``name`` cannot show its fault: M, N, K
    multiples of B for the edge-tile variants, K <= 256 for fixed-256."""
    if name in ("gemm-tiled:early-return", "gemm-tiled:no-guards", "gemm-tiled:floor-grid"):
        tile = draw(st.integers(1, 8))
        most = max(1, max_size // tile)
        m, k, n = (tile * draw(st.integers(1, most)) for _ in range(3))
        return m, k, n, tile
    if name == "matvec-local-whole:fixed-256":
        return (draw(st.integers(1, 64)), draw(st.integers(1, 256)), None,
                draw(st.integers(16, 256)))
    raise KeyError(f"variant {name!r} has no fault-free shapes")


CLEAN_SHAPE_VARIANTS = ("gemm-tiled:early-return", "gemm-tiled:no-guards",
                        "gemm-tiled:floor-grid", "matvec-local-whole:fixed-256")
"""Variants whose fault depends on the shape (see :func:`variant_clean_shapes`)."""


@st.composite
def correct_demo_schedules(draw) -> Schedule:
    """A correct demonstration kernel (:data:`simulator.kernels.variants.CORRECT_DEMOS`) with drawn
    sizes: the shifted read with its barrier (33..128 work-items), or the column staging
    with its closing barrier."""
    from tiletraffic.simulator.kernels.variants import CORRECT_DEMOS

    name = draw(st.sampled_from(sorted(CORRECT_DEMOS)))
    if name == "demo-shift":
        items = draw(st.integers(33, 128))
        return CORRECT_DEMOS[name](items, 1, None, items)
    if name in ("demo-reduction", "demo-neighbour"):
        return CORRECT_DEMOS[name](draw(st.integers(1, 200)), 1, None, draw(st.integers(2, 32)))
    return CORRECT_DEMOS[name](draw(st.integers(1, 24)), draw(st.integers(1, 8)),
                               draw(st.integers(1, 6)), draw(st.integers(1, 8)))


def small_examples():
    """One small, odd-sized schedule of every family (edge tiles in every dimension), for
    the tests that generate and run each family's kernel."""
    from tiletraffic.simulator.kernels.families import build

    return {
        "gemm-naive": build("gemm-naive", 9, 31, 4, tile=3),
        "gemm-tiled": build("gemm-tiled", 17, 5, 23, tile=7),
        "matvec-naive": build("matvec-naive", 47, 13, tile=6),
        "matvec-local": build("matvec-local", 45, 37, tile=8, chunk=5),
        "matvec-local-whole": build("matvec-local-whole", 45, 37, tile=8),
        "gemm-register-blocked": build("gemm-register-blocked", 17, 5, 23, tile=3, tm=2, tn=3,
                                       bk=4, wg_rows=5),
        "gemm-vectorized": build("gemm-vectorized", 17, 8, 24, tile=3, tm=4, tn=8, bk=4,
                                 wg_rows=5),
        "gemm-prefetch": build("gemm-prefetch", 17, 9, 23, tile=3, tm=2, tn=3, bk=4,
                               wg_rows=5),
        "gemm-warp-tiled": build("gemm-warp-tiled", 17, 12, 36, tile=4, tm=4, tn=4, bk=8,
                                 wg_rows=8),
        "matvec-rows-reduce": build("matvec-rows-reduce", 45, 37, tile=12, wg_rows=3),
        "matvec-relu": build("matvec-relu", 47, 13, tile=6),
    }


def functions_schedule(n: int = 100) -> Schedule:
    """y[i] = select(i % 3 == 0, sqrt(fabs(a)), fmin(exp(b * 0.25), fmax(a, b) + 2)) for
    i < ``n`` (work-groups of 32): every float built-in of the IR in one kernel."""
    import tiletraffic as tt

    a_arr, b_arr = tt.GlobalArray("a", "in", ("N",)), tt.GlobalArray("b", "in", ("N",))
    y = tt.GlobalArray("y", "out", ("N",))
    i = tt.Let("i", tt.global_id(0))
    a, b = a_arr[i.var], b_arr[i.var]
    value = tt.select((i.var % 3).eq(0), tt.sqrt(tt.fabs(a)),
                      tt.fmin(tt.exp(b * 0.25), tt.fmax(a, b) + 2.0))
    body = tt.block(i, tt.If(i.var < tt.Param("N"), (tt.store(y, (i.var,), value),)))
    size = -(-n // 32) * 32
    return tt.Schedule(family="float-functions", kernel_name="float_functions",
                       params=(("N", n),), arrays=(a_arr, b_arr, y), local_arrays=(),
                       local_size=(32,), global_size=(size,), body=body, tile=32)
