"""Known-faulty versions of the schedules, each a small change of the correct description.

A variant is data: which schedule it changes, how (a rewrite of the statement tree or of
the NDRange), which hazard kinds it must raise, and a shape that shows the fault. Both the
simulator and the OpenCL code generator read the rewritten schedule, so the same fault can
be hunted in the simulator (``tiletraffic check``) and under Oclgrind
(``tiletraffic crosscheck``).

Also here: the small demonstration kernels of the field's classic bugs (a shifted read
without a barrier, a column of B restaged without a closing barrier; and, from
:mod:`simulator.kernels.demos`, an in-place reduction racing between work-groups and a neighbour
read through global memory behind a local-only fence), with their correct versions.

A variant marked ``run_only`` is correct in any one launch: the simulator and Oclgrind must
find nothing, and only ``run``'s check of every timed launch catches it.
"""
from __future__ import annotations

import numpy as np

import dataclasses
from dataclasses import dataclass
from typing import Callable

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.nodes import (Accumulate, Assign, Barrier, Const, DeclareFloat,
                                            For, GlobalArray, If, Let, LocalArray, Param,
                                            Return, Schedule, block, global_id, local_id,
                                            store)
from tiletraffic.simulator.ir.visitor import Transformer, rewrite  # noqa: F401  (rewrite: re-exported)
from tiletraffic.simulator.kernels.demos import (neighbour_demo, reduction_demo,
                                                 zeros_in_one_launch, WRONG_LAUNCH)
from tiletraffic.simulator.kernels.families import (FAMILIES, SEQUENCE_FAMILIES, ScheduleError,
                                                    build, matvec_local_whole, round_up)
from tiletraffic.simulator.kernels.register_blocked import gemm_vectorized


class _DropBarrier(Transformer):
    def __init__(self, which: int) -> None:
        self.which, self.seen = which, 0

    def visit_Barrier(self, s: S.Barrier):
        self.seen += 1
        return () if self.seen == self.which else None


def drop_barrier(sch: Schedule, which: int) -> Schedule:
    """Remove the ``which``-th barrier (1-based, in source order)."""
    return dataclasses.replace(sch, body=_DropBarrier(which).transform(sch.body))


class _StripGuards(Transformer):
    def visit_If(self, s: S.If):
        return self.transform(s.then)


def strip_guards(sch: Schedule) -> Schedule:
    """Replace every ``if`` by its then-branch: no edge guards, no zero fill."""
    return dataclasses.replace(sch, body=_StripGuards().transform(sch.body))


def early_return(sch: Schedule) -> Schedule:
    """Return at once when the work-item's row or column is out of range (before the
    barriers), as the naive kernel does."""
    body = list(sch.body)
    last_let = max(i for i, s in enumerate(body) if isinstance(s, S.Let))
    out_of_range = (S.Var("row") >= Param("M")) | (S.Var("col") >= Param("N"))
    body.insert(last_let + 1, If(out_of_range, (Return(),)))
    return dataclasses.replace(sch, body=tuple(body))


def accumulate_into_output(sch: Schedule) -> Schedule:
    """Every store into an output buffer (role ``out``) adds to what the element holds
    (``C = C + value``, i.e. ``C += A·B``): a read of an output nothing has stored."""
    outs = {a.name for a in sch.arrays if a.role == "out"}

    class AddToOutputs(Transformer):
        def visit_Store(self, s: S.Store):
            if getattr(s.array, "name", None) in outs:
                return (S.Store(s.array, s.index, S.Load(s.array, s.index) + s.value),)
            return None

    return dataclasses.replace(sch, body=AddToOutputs().transform(sch.body))


def floor_grid(sch: Schedule) -> Schedule:
    """NDRange from floor division (N/B)·B: partial edge tiles are never launched.

    Raises:
        ScheduleError: M or N below the tile: the floored NDRange would be empty, which no
            OpenCL device launches.
    """
    p = sch.param_values
    extents = (p["N"], p["M"])
    if any(e < l for e, l in zip(extents, sch.local_size)):
        raise ScheduleError(f"floor-grid: M = {p['M']} or N = {p['N']} is below the tile "
                            f"{sch.local_size[0]}; the floored NDRange would launch nothing")
    size = tuple(e // l * l for e, l in zip(extents, sch.local_size))
    return dataclasses.replace(sch, global_size=size)


def shift_race_demo(m: int = 64, k: int = 1, n: int | None = None, tile: int = 64) -> Schedule:
    """One work-group: each work-item t stores x[t] into local word t; items t >= 32 then
    read word t-32 written by another work-item, with no barrier between (a read-after-
    write race that lock-step execution hides). ``barrier=True`` variant is correct."""
    return _shift_demo(tile, with_barrier=False)


def shift_demo_fixed(m: int = 64, k: int = 1, n: int | None = None, tile: int = 64):
    """The shifted read with the barrier that makes it correct."""
    return _shift_demo(tile, with_barrier=True)


def _shift_demo(items: int, with_barrier: bool) -> Schedule:
    if items < 33:
        raise ScheduleError(f"the shift demo needs at least 33 work-items, got {items}")
    x = GlobalArray("x", "in", ("M",))
    y = GlobalArray("y", "out", ("M",))
    words = LocalArray("words", (Const(items, "WG_SIZE"),))
    t = Let("t", local_id(0))
    tv = t.var
    body = block(
        t, store(words, tv, x[tv]),
        [Barrier()] if with_barrier else [],
        If(tv >= 32, (store(y, tv, words[tv - 32]),), (store(y, tv, words[tv]),)),
    )
    return Schedule("demo-shift" + ("" if with_barrier else ":no-barrier"), "shift_demo",
                    (("M", items),), (x, y), (words,), (items,), (items,), body, items,
                    "each work-item reads the word its neighbour 32 places down wrote",
                    extra={"reference_function": (shift_reference, "y")})


def shift_reference(inputs: dict) -> np.ndarray:
    """``y`` of the shift demo (float64, shape (M,)): ``x[t - 32]`` from t = 32 on,
    ``x[t]`` below."""
    x = np.asarray(inputs["x"], dtype=np.float64)
    return np.concatenate([x[:32], x[:-32]])


def column_staging_demo(m: int, k: int, n: int, tile: int = 4,
                        end_barrier: bool = True) -> Schedule:
    """GEMM with one row of C per work-item; for each column j of B, the work-group stages
    B[:, j] in local memory, waits, and every work-item reads all of it. Without the barrier
    at the end of the loop, the next column's stores race with this column's loads."""
    M, K, N = Param("M"), Param("K"), Param("N")
    A = GlobalArray("A", "in", ("M", "K"))
    B = GlobalArray("B", "in", ("K", "N"))
    C = GlobalArray("C", "out", ("M", "N"))
    column = LocalArray("b_column", (Const(k, "K_SIZE"),))
    row, lid = Let("row", global_id(0)), Let("lid", local_id(0))
    r, lv, j, i, kk = row.var, lid.var, S.Var("j"), S.Var("i"), S.Var("k")
    wg = Const(tile, "WG_SIZE")
    loop_body = block(
        For("i", lv, K, wg, (store(column, i, B[i, j]),)),
        Barrier(),
        If(r < M, (Assign("acc", S.FConst(0.0)),
                   For("k", Const(0), K, Const(1), (Accumulate("acc", A[r, kk] * column[kk]),)),
                   store(C, (r, j), S.Private("acc")))),
        [Barrier()] if end_barrier else [],
    )
    body = block(row, lid, DeclareFloat("acc"), For("j", Const(0), N, Const(1), loop_body))
    return Schedule("demo-column-staging" + ("" if end_barrier else ":no-end-barrier"),
                    "column_staging", (("M", m), ("K", k), ("N", n)), (A, B, C), (column,),
                    (tile,), (round_up(m, tile),), body, tile,
                    "one row of C per work-item, a column of B staged in local memory")


def unguarded_copy(sch: Schedule) -> Schedule:
    """matvec-local-whole copying x at every work-item's own id, with no bound check and no
    barrier: ``x_local[lid] = x[lid]``."""
    if not sch.family.startswith("matvec-local-whole"):
        raise ScheduleError("unguarded-copy applies to matvec-local-whole")
    lid = S.Var("lid")
    xs = sch.local_arrays[0]
    x = sch.array("x")

    class UnguardedCopy(Transformer):
        def visit_For(self, s: S.For):
            return (store(xs, lid, x[lid]),) if s.var == "i" else None

        def visit_If(self, s: S.If):
            if all(isinstance(t, S.Store) and t.array is xs for t in s.then):
                return ()          # the copy's guarded last step
            return None

        def visit_Barrier(self, s: S.Barrier):
            return ()

    return dataclasses.replace(sch, body=UnguardedCopy().transform(sch.body))


@dataclass(frozen=True)
class Variant:
    """A known-faulty schedule.

    Attributes:
        name: ``base:change``, e.g. ``gemm-tiled:no-second-barrier``.
        description: what was changed, for people.
        expected: hazard kinds the simulator (and Oclgrind) must report.
        make: builds the faulty schedule from (m, k, n, tile).
        example: a shape (m, k, n, tile) that shows the fault.
        run_only: the fault shows only across launches on a device (``expected`` is empty:
            one launch, simulated or under Oclgrind, is clean).
    """

    name: str
    description: str
    expected: tuple[str, ...]
    make: Callable[..., Schedule]
    example: tuple
    run_only: bool = False


def _vectorized_unaligned(m, k, n, tile):
    return gemm_vectorized(m, k, n, tile, check_alignment=False)


def _from(family: str, change: Callable[[Schedule], Schedule], **kw):
    def make(m, k, n=None, tile=None):
        return change(build(family, m, k, n, tile, **kw))
    return make


VARIANTS: dict[str, Variant] = {v.name: v for v in (
    Variant("gemm-tiled:no-second-barrier",
            "tiled GEMM without the barrier after the partial products: the next tile's "
            "loads overwrite local memory others still read",
            ("data-race",), _from("gemm-tiled", lambda s: drop_barrier(s, 2)), (20, 40, 20, 16)),
    Variant("gemm-tiled:no-first-barrier",
            "tiled GEMM without the barrier after the loads: work-items read tile words "
            "others have not stored yet", ("data-race",),
            _from("gemm-tiled", lambda s: drop_barrier(s, 1)), (20, 40, 20, 16)),
    Variant("gemm-tiled:early-return",
            "tiled GEMM whose out-of-range work-items return before the barriers",
            ("barrier-divergence",), _from("gemm-tiled", early_return), (20, 20, 20, 16)),
    Variant("gemm-tiled:no-guards",
            "tiled GEMM on a rounded-up grid without the edge guards and zero fill",
            ("out-of-bounds",), _from("gemm-tiled", strip_guards), (20, 20, 20, 16)),
    Variant("gemm-tiled:floor-grid",
            "tiled GEMM on a grid computed with floor division: partial tiles are dropped",
            ("unwritten-output",), _from("gemm-tiled", floor_grid), (20, 20, 20, 16)),
    Variant("gemm-naive:accumulate-into-output",
            "naive GEMM that adds its sum to C (C += A·B) while C is declared an output: "
            "it reads elements nothing has stored", ("uninitialized-global-read",),
            _from("gemm-naive", accumulate_into_output), (20, 40, 20, 16)),
    Variant("matvec-local-whole:fixed-256",
            "x staged whole into a fixed 256-word local array, filled for K > 256",
            ("out-of-bounds",),
            lambda m, k, n=None, tile=None: matvec_local_whole(m, k, tile or 256,
                                                               local_words=256),
            (300, 300, None, 256)),
    Variant("matvec-local-whole:unguarded-copy",
            "x copied into local memory at every work-item's own id, no bound check, no "
            "barrier", ("out-of-bounds", "data-race"),
            _from("matvec-local-whole", unguarded_copy), (128, 8, None, 128)),
    Variant("demo-shift:no-barrier",
            "64 work-items store into local word t, items 32..63 read word t-32, no barrier",
            ("data-race",), shift_race_demo, (64, 1, None, 64)),
    Variant("demo-column-staging:no-end-barrier",
            "a column of B staged per iteration with no barrier at the end of the loop",
            ("data-race",),
            lambda m, k, n, tile=4: column_staging_demo(m, k, n, tile, end_barrier=False),
            (8, 8, 8, 4)),
    Variant("demo-reduction:in-place",
            "in-place sum: work-group g stores its chunk's sum into buf[g], inside work-group "
            "0's chunk, which work-group 0 reads (a race between work-groups)",
            ("data-race",),
            lambda m, k=None, n=None, tile=8: reduction_demo(m, k, n, tile,
                                                             in_place_at_group=True),
            (64, 1, None, 8)),
    Variant("demo-neighbour:local-fence",
            "each work-item reads y its neighbour stored, behind barrier(CLK_LOCAL_MEM_FENCE) "
            "only, which does not order global memory (a race within a work-group)",
            ("data-race",),
            lambda m, k=None, n=None, tile=16: neighbour_demo(m, k, n, tile,
                                                              global_fence=False),
            (64, 1, None, 16)),
    Variant("gemm-vectorized:unaligned-rows",
            "float4 GEMM built for K = 6 (not a multiple of 4): rows of A start at element "
            "6r, so every other row's float4 loads are misaligned, and the last float4 of a "
            "row reaches past column K", ("misaligned-vector-access", "out-of-bounds"),
            lambda m, k, n, tile=2: _vectorized_unaligned(m, k, n, tile), (8, 6, 8, 2)),
    Variant(f"gemm-naive:zeros-in-launch-{WRONG_LAUNCH}",
            f"naive GEMM that stores zeros in launch {WRONG_LAUNCH} only (it takes the launch "
            "number as an argument): every single launch is clean, run's check of every "
            "timed launch must catch it", (),
            _from("gemm-naive", zeros_in_one_launch), (20, 40, 20, 16), run_only=True),
)}

CORRECT_DEMOS: dict[str, Callable[..., Schedule]] = {
    "demo-shift": shift_demo_fixed,
    "demo-column-staging": column_staging_demo,
    "demo-reduction": reduction_demo,
    "demo-neighbour": neighbour_demo,
}
"""The correct versions of the demonstration kernels (they must report no hazard)."""


CHECK_EXAMPLES: dict[str, tuple] = {
    "gemm-naive": (20, 40, 20, 16), "gemm-tiled": (20, 40, 20, 16),
    "matvec-naive": (300, 300, None, 64), "matvec-local": (300, 300, None, 64),
    "matvec-local-whole": (300, 300, None, 64), "matvec-relu": (300, 300, None, 64),
    "gemm-register-blocked": (37, 40, 44, 8), "gemm-vectorized": (37, 40, 44, 8),
    "gemm-prefetch": (37, 40, 44, 8), "gemm-warp-tiled": (37, 40, 44, 8),
    "gemm-split-k": (37, 200, 44, 8),
    "matvec-rows-reduce": (37, 50, None, 12),
    "demo-shift": (64, 1, None, 64), "demo-column-staging": (8, 8, 8, 4),
    "demo-reduction": (64, 1, None, 8), "demo-neighbour": (64, 1, None, 16),
}
"""Shapes (m, k, n, tile) with partial edge tiles, for checking the correct schedules."""


ELEMENT_DEMOS = ("demo-reduction", "demo-neighbour")
"""Demos sized by M elements and the work-group size alone."""


def names() -> list[str]:
    """Every name :func:`build_any` accepts: families, correct demos, broken variants."""
    return [*FAMILIES, *SEQUENCE_FAMILIES, *CORRECT_DEMOS, *VARIANTS]


def _given(**values) -> str:
    """``M=64, K=3``: the values given (not None), for a message."""
    return ", ".join(f"{key}={value}" for key, value in values.items() if value is not None)


def build_any(name: str, m: int | None = None, k: int | None = None, n: int | None = None,
              tile: int | None = None, chunk: int | None = None) -> Schedule:
    """Build a family, a correct demo or a broken variant by name.

    Missing sizes default to the name's example shape (:data:`CHECK_EXAMPLES` or the
    variant's ``example``).

    Raises:
        ScheduleError: unknown name or bad parameters.
    """
    if name.startswith("demo-shift") and m is not None:
        # one work-group of M work-items: M is the work-group size, K and N do not apply
        if k not in (None, 1) or n is not None or tile not in (None, m):
            raise ScheduleError(f"{name} is one work-group of M work-items: give M only "
                                f"(got {_given(M=m, K=k, N=n, tile=tile)})")
        return dataclasses.replace(VARIANTS[name].make(m, 1, None, m), family=name) \
            if name in VARIANTS else CORRECT_DEMOS[name](m, 1, None, m)
    if name.split(":")[0] in ELEMENT_DEMOS and m is not None:
        # M elements in work-groups of --tile work-items: K and N do not apply
        if k not in (None, 1) or n is not None or chunk is not None:
            raise ScheduleError(f"{name} takes M (elements) and --tile (work-group size) only "
                                f"(got {_given(M=m, K=k, N=n, chunk=chunk)})")
        make = VARIANTS[name].make if name in VARIANTS else CORRECT_DEMOS[name]
        example = VARIANTS[name].example if name in VARIANTS else CHECK_EXAMPLES[name]
        return make(m, 1, None, example[3] if tile is None else tile)
    if name in VARIANTS:
        example = VARIANTS[name].example
    elif name in CHECK_EXAMPLES:
        example = CHECK_EXAMPLES[name]
    else:
        raise ScheduleError(f"unknown schedule \"{name}\"; choose one of {', '.join(names())}")
    if m is None:
        if k is not None or n is not None:
            raise ScheduleError(f"{name}: give --m with --k/--n (or no sizes for the example "
                                f"shape {_given(M=example[0], K=example[1], N=example[2])})")
        m, k, n = example[0], example[1], example[2]
        tile = example[3] if tile is None else tile
    elif k is None:
        raise ScheduleError(f"{name}: give --k with --m")
    elif tile is None and name not in FAMILIES + SEQUENCE_FAMILIES:
        tile = example[3]
    if name in FAMILIES + SEQUENCE_FAMILIES:
        return build(name, m, k, n, tile, chunk)
    if chunk is not None:
        raise ScheduleError(f"chunk does not apply to {name}")
    if name in CORRECT_DEMOS:
        return CORRECT_DEMOS[name](m, k, n, tile)
    return dataclasses.replace(VARIANTS[name].make(m, k, n, tile), family=name)
