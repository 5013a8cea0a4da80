"""Hypothesis strategies and numeric helpers shared by the test modules, in one place.

Sizes are small (1..48 by default) and drawn independently of the tile, so sizes that are
not multiples of the tile (edge tiles, padded work-items) are the common case. GEMM tiles
run 1..16 and always include the awkward 3, 5 and 7; matrix-vector work-group sizes run
1..128 (small ones favoured so that several work-groups occur).

The numeric oracle lives here too and is deliberately independent of the code under test
(it does not use ``simulator.reference``): a float64 numpy product and the dot-product error
bound of Higham, *Accuracy and Stability of Numerical Algorithms*, eq. (3.5).
"""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from simulator.schedule import Schedule
from simulator.schedules import FAMILIES, GEMM_FAMILIES, build

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
    if family in GEMM_FAMILIES:
        return build(family, m, k, n, tile=draw(gemm_tiles(max_gemm_tile)))
    tile = draw(matvec_tiles(max_matvec_tile))
    if family == "matvec-local":
        return build(family, m, k, tile=tile, chunk=draw(chunks(max_chunk)))
    return build(family, m, k, tile=tile)


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
        if a.role != "in":
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
    """float64 ``A@B`` (or ``A@x``) and ``|A|@|B|`` for the inputs of ``schedule``."""
    second = "B" if schedule.family in GEMM_FAMILIES else "x"
    a = inputs["A"].astype(np.float64)
    b = inputs[second].astype(np.float64)
    return a @ b, np.abs(a) @ np.abs(b)


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
