"""Exact closed forms of every traffic counter, for every schedule family.

Notation: A is M×K, B is K×N (GEMM) or x has K elements (matrix-vector); T is the schedule's
tile parameter (tile width B for GEMM, rows per work-group for matrix-vector); ``⌈a/b⌉`` is
ceiling division and ``a↑b = ⌈a/b⌉·b`` rounds up to a multiple. Edge tiles are included:
the formulas hold for every positive M, K, N, T.

Source: each form is derived from the schedules in simulator/kernels/families.py by counting, per
statement, the work-items whose guards hold (the register-blocked families:
simulator/kernels/register_blocked.py; matvec-rows-reduce: simulator/kernels/matvec_rows.py);
docs/tutorial.md works one through by hand. The tiled GEMM's M·K·⌈N/B⌉ + K·N·⌈M/B⌉ loads
and 2·⌈K/B⌉ barriers per work-group are the tiling argument of Kirk and Hwu, *Programming
Massively Parallel Processors* (4th ed., 2022), ch. 5 ("Memory architecture and data
locality"), with the zero-filled edge tiles counted.
"""
from __future__ import annotations

from tiletraffic.simulator.ir.nodes import FLOAT_BYTES, Schedule
from tiletraffic.simulator.ir.sequence import is_sequence


class NoClosedForm(ValueError):
    """The schedule's family has no closed forms (for instance a user's own schedule)."""


def ceil_div(a: int, b: int) -> int:
    """⌈a/b⌉ for non-negative a and positive b."""
    return -(-a // b)


def round_up(a: int, b: int) -> int:
    """a↑b: the smallest multiple of b that is >= a."""
    return ceil_div(a, b) * b


def _finish(d: dict) -> dict:
    loads, stores = d["global_load_elems_by_buffer"], d["global_store_elems_by_buffer"]
    d["global_load_elems"] = sum(loads.values())
    d["global_store_elems"] = sum(stores.values())
    d["global_load_bytes"] = d["global_load_elems"] * FLOAT_BYTES
    d["global_store_bytes"] = d["global_store_elems"] * FLOAT_BYTES
    return d


def gemm_naive(m: int, k: int, n: int, t: int) -> dict:
    """Naive GEMM: every work-item in range reads K elements of A and K of B.

    A and B: M·N·K loads each; C: M·N stores; FLOP 2·M·N·K (out-of-range work-items return
    at once); work-groups ⌈N/T⌉·⌈M/T⌉; busiest tile min(T,M)·min(T,N)·2K (= 2N·B² for a
    full B×B tile with K = N, the lesson "GPU Matrix Multiplication: Tiling and Shared Memory" §4).
    """
    return _finish({
        "global_load_elems_by_buffer": {"A": m * n * k, "B": m * n * k, "C": 0},
        "global_store_elems_by_buffer": {"A": 0, "B": 0, "C": m * n},
        "local_load_elems": 0, "local_store_elems": 0, "barriers": 0,
        "flop": 2 * m * n * k,
        "work_groups": ceil_div(n, t) * ceil_div(m, t),
        "global_load_elems_per_tile": min(t, m) * min(t, n) * 2 * k,
    })


def gemm_tiled(m: int, k: int, n: int, t: int) -> dict:
    """Tiled GEMM with T×T tiles: loads M·K·⌈N/T⌉ of A and K·N·⌈M/T⌉ of B.

    Every one of the (M↑T)·(N↑T) work-items runs ⌈K/T⌉ tile steps; per step it stores two
    local words (one of them possibly the zero fill), reads 2T local words and executes T
    multiply-adds (2T FLOP, padded work-items included: tile quantization). Barriers:
    2·⌈K/T⌉ per work-group. Busiest tile: K·(min(T,M) + min(T,N)) (= 2NB for a full tile
    with K = N, the lesson "GPU Matrix Multiplication: Tiling and Shared Memory" §4).
    """
    items = round_up(m, t) * round_up(n, t)
    steps = ceil_div(k, t)
    groups = ceil_div(n, t) * ceil_div(m, t)
    return _finish({
        "global_load_elems_by_buffer": {"A": m * k * ceil_div(n, t), "B": k * n * ceil_div(m, t),
                                        "C": 0},
        "global_store_elems_by_buffer": {"A": 0, "B": 0, "C": m * n},
        "local_load_elems": 2 * t * items * steps,
        "local_store_elems": 2 * items * steps,
        "barriers": 2 * steps * groups,
        "flop": 2 * t * items * steps,
        "work_groups": groups,
        "global_load_elems_per_tile": k * (min(t, m) + min(t, n)),
    })


def gemm_register_blocked(m: int, k: int, n: int, w0: int, w1: int, tm: int, tn: int,
                          bk: int, barriers_per_step: int = 2) -> dict:
    """Register-blocked GEMM (``gemm-register-blocked`` and ``gemm-vectorized``, whose
    element counts are equal): work-groups of W0×W1 work-items compute BM×BN blocks of C,
    BM = TM·W1, BN = TN·W0, in S = ⌈K/BK⌉ steps.

    With G = ⌈N/BN⌉·⌈M/BM⌉ work-groups: loads of A M·K·⌈N/BN⌉ (each BM×BK tile element
    in range is read once per work-group column), of B K·N·⌈M/BM⌉; C: M·N stores. Per
    work-group and step: BM·BK + BK·BN local stores (zero fill included) and two barriers;
    per work-item and step BK·(TM + TN) local loads and BK·TM·TN multiply-adds (2 FLOP
    each, padded work-items included). Busiest work-group: K·(min(BM,M) + min(BN,N)) global
    loads. A float4 access counts 4 elements (the vectorized family needs K and N multiples
    of 4, so its float4 guards keep exactly the elements in range). ``gemm-prefetch``
    (double-buffered tiles) has the same counts with S barriers per work-group
    (``barriers_per_step=1``: one before the loop, one after every step but the last).
    """
    bm, bn = tm * w1, tn * w0
    groups = ceil_div(n, bn) * ceil_div(m, bm)
    steps = ceil_div(k, bk)
    items = groups * w0 * w1
    return _finish({
        "global_load_elems_by_buffer": {"A": m * k * ceil_div(n, bn),
                                        "B": k * n * ceil_div(m, bm), "C": 0},
        "global_store_elems_by_buffer": {"A": 0, "B": 0, "C": m * n},
        "local_load_elems": items * steps * bk * (tm + tn),
        "local_store_elems": groups * steps * (bm * bk + bk * bn),
        "barriers": barriers_per_step * steps * groups,
        "flop": 2 * items * steps * bk * tm * tn,
        "work_groups": groups,
        "global_load_elems_per_tile": k * (min(bm, m) + min(bn, n)),
    })


def gemm_warp_tiled(m: int, k: int, n: int, w0: int, w1: int, tm: int, tn: int,
                    bk: int) -> dict:
    """Warp-tiled GEMM (``gemm-warp-tiled``): the counts of
    :func:`gemm_register_blocked` for the same W0×W1 work-groups, TM×TN outputs per
    work-item and BK, with one barrier per K step (S per work-group, S = ⌈K/BK⌉).

    Only the assignment of outputs to work-items and the placement in local memory differ
    (sub-group tiles, a rotated transposed A tile, double buffers), which move no element:
    per work-item and step BK·(TM + TN) local loads (float4s, 4 elements each), per
    work-group and step BM·BK + BK·BN local stores, A read M·K·⌈N/BN⌉ and B K·N·⌈M/BM⌉
    times (float4 guards with K and N multiples of 4 keep exactly the elements in range).
    """
    return gemm_register_blocked(m, k, n, w0, w1, tm, tn, bk, barriers_per_step=1)


def gemm_split_k_slices(m: int, k: int, n: int, w0: int, w1: int, tm: int, tn: int,
                        bk: int, splits: int) -> dict:
    """Kernel 1 of ``gemm-split-k``: :func:`gemm_warp_tiled`'s work-groups repeated for each
    of the S slices of K (P = ⌈⌈K/BK⌉/S⌉ steps each, the last one the rest).

    The slices cut K without overlap, so A is read M·K·⌈N/BN⌉ and B K·N·⌈M/BM⌉ times in all,
    and the S·G work-groups (G = ⌈N/BN⌉·⌈M/BM⌉) run ⌈K/BK⌉ steps per block of C together:
    local loads, local stores, barriers and FLOP as :func:`gemm_warp_tiled`'s; stores S·M·N
    (each slice its partial C). Busiest work-group: a full slice, min(P·BK, K) of K.
    """
    one = gemm_warp_tiled(m, k, n, w0, w1, tm, tn, bk)
    bm, bn = tm * w1, tn * w0
    depth = min(ceil_div(ceil_div(k, bk), splits) * bk, k)
    one["global_load_elems_by_buffer"] = {**one["global_load_elems_by_buffer"]}
    one["global_load_elems_by_buffer"].pop("C")
    one["global_load_elems_by_buffer"]["C_partial"] = 0
    one["global_store_elems_by_buffer"] = {"A": 0, "B": 0, "C_partial": splits * m * n}
    one["work_groups"] *= splits
    one["global_load_elems_per_tile"] = depth * (min(bm, m) + min(bn, n))
    return _finish(one)


def split_k_reduce(m: int, n: int, splits: int, items: int) -> dict:
    """Kernel 2 of ``gemm-split-k``: each work-item in range (one per 4 elements of C) reads
    S float4s of the partials and stores one: S·M·N loads, M·N stores, (S − 1)·M·N FLOP;
    work-groups ⌈⌈N/4⌉/R⌉·M (R work-items along N); busiest work-group min(4R, N)·S loads.
    """
    return _finish({
        "global_load_elems_by_buffer": {"C_partial": splits * m * n, "C": 0},
        "global_store_elems_by_buffer": {"C_partial": 0, "C": m * n},
        "local_load_elems": 0, "local_store_elems": 0, "barriers": 0,
        "flop": (splits - 1) * m * n,
        "work_groups": ceil_div(ceil_div(n, 4), items) * m,
        "global_load_elems_per_tile": min(4 * items, n) * splits,
    })


def added(parts: list[dict]) -> dict:
    """The closed forms of kernels run one after another: every count added (per buffer
    too), the busiest work-group the largest of them."""
    total: dict = {}
    for part in parts:
        for key, value in part.items():
            if isinstance(value, dict):
                mine = total.setdefault(key, {})
                for name, amount in value.items():
                    mine[name] = mine.get(name, 0) + amount
            elif key == "global_load_elems_per_tile":
                total[key] = max(total.get(key, 0), value)
            else:
                total[key] = total.get(key, 0) + value
    return total


def matvec_rows_reduce(m: int, k: int, w0: int, w1: int) -> dict:
    """Matrix-vector with W0 work-items per row and W1 rows per work-group, partial sums
    added in local memory (``matvec-rows-reduce``).

    With G = ⌈M/W1⌉ work-groups, P the largest power of two <= W0 and R = [W0 != P] +
    log2(P) reduction steps: A and x M·K loads each, y M stores; local stores G·W1·W0
    partial sums + G·W1·(W0 − 1) reduction sums, local loads 2·G·W1·(W0 − 1) + M (work-item
    0 of each row in range reads the total); FLOP 2·M·K + G·W1·(W0 − 1); barriers
    G·max(1, R) (one after the partial sums, one between reduction steps); busiest
    work-group min(W1, M)·2K global loads.
    """
    groups = ceil_div(m, w1)
    power = 1 << (w0.bit_length() - 1)
    steps = (power != w0) + power.bit_length() - 1
    sums = groups * w1 * (w0 - 1)
    return _finish({
        "global_load_elems_by_buffer": {"A": m * k, "x": m * k, "y": 0},
        "global_store_elems_by_buffer": {"A": 0, "x": 0, "y": m},
        "local_load_elems": 2 * sums + m, "local_store_elems": groups * w1 * w0 + sums,
        "barriers": groups * max(1, steps),
        "flop": 2 * m * k + sums,
        "work_groups": groups,
        "global_load_elems_per_tile": min(w1, m) * 2 * k,
    })


def matvec_naive(m: int, k: int, t: int) -> dict:
    """Naive matrix-vector: each of the M rows reads K elements of A and all K of x."""
    return _finish({
        "global_load_elems_by_buffer": {"A": m * k, "x": m * k, "y": 0},
        "global_store_elems_by_buffer": {"A": 0, "x": 0, "y": m},
        "local_load_elems": 0, "local_store_elems": 0, "barriers": 0,
        "flop": 2 * m * k,
        "work_groups": ceil_div(m, t),
        "global_load_elems_per_tile": min(t, m) * 2 * k,
    })


def matvec_relu(m: int, k: int, t: int) -> dict:
    """matvec-naive's counts, plus one FLOP per row for the ReLU's ``fmax``: 2·M·K + M."""
    counts = matvec_naive(m, k, t)
    counts["flop"] += m
    return counts


def matvec_local(m: int, k: int, t: int, chunk: int) -> dict:
    """Matrix-vector with x staged in local memory: x is read once per work-group.

    A: M·K loads; x: ⌈M/T⌉·K loads and as many local stores; local loads M·K; barriers
    2·⌈K/chunk⌉ per work-group; busiest tile min(T,M)·K + K.
    """
    groups = ceil_div(m, t)
    return _finish({
        "global_load_elems_by_buffer": {"A": m * k, "x": groups * k, "y": 0},
        "global_store_elems_by_buffer": {"A": 0, "x": 0, "y": m},
        "local_load_elems": m * k, "local_store_elems": groups * k,
        "barriers": 2 * ceil_div(k, chunk) * groups,
        "flop": 2 * m * k,
        "work_groups": groups,
        "global_load_elems_per_tile": min(t, m) * k + k,
    })


def matvec_local_whole(m: int, k: int, t: int) -> dict:
    """Matrix-vector with all of x staged once per work-group: like :func:`matvec_local`
    with one chunk, so one barrier per work-group (out-of-range work-items return after it).
    """
    groups = ceil_div(m, t)
    return _finish({
        "global_load_elems_by_buffer": {"A": m * k, "x": groups * k, "y": 0},
        "global_store_elems_by_buffer": {"A": 0, "x": 0, "y": m},
        "local_load_elems": m * k, "local_store_elems": groups * k,
        "barriers": groups,
        "flop": 2 * m * k,
        "work_groups": groups,
        "global_load_elems_per_tile": min(t, m) * k + k,
    })


def batched(single: dict, batch: int) -> dict:
    """The counts of ``batch`` products in one launch (:mod:`simulator.kernels.batch`) from
    one product's: every count, per buffer too, times P = ``batch``, the busiest work-group's
    loads unchanged. With B shared by the batch the counts are the same: each product's
    work-groups still load B (P·(one product's B loads)); only B's buffer, K·N floats instead
    of P·K·N, and so the bytes DRAM must deliver at least, are smaller (the traffic model's
    compulsory bytes)."""
    out = {}
    for key, value in single.items():
        if isinstance(value, dict):
            out[key] = {name: amount * batch for name, amount in value.items()}
        elif key == "global_load_elems_per_tile":
            out[key] = value
        else:
            out[key] = value * batch
    return out


def counts(schedule: Schedule) -> dict:
    """Closed-form counts for ``schedule``, with the keys of ``TrafficCounts.to_dict()``.

    A :class:`simulator.ir.sequence.KernelSequence` gets its kernels' forms :func:`added`;
    a batched schedule its single product's forms :func:`batched`; bytes count 2 per
    element of a ``half`` buffer, 4 per float.

    Raises:
        NoClosedForm (a ValueError): for a schedule family without closed forms.
    """
    if is_sequence(schedule):
        return added([counts(kernel) for kernel in schedule.kernels])
    batch = int(schedule.extra.get("batch", 1))
    d = _single(schedule) if batch == 1 else batched(_single(schedule), batch)
    return _storage_bytes(d, schedule)


def _storage_bytes(d: dict, schedule: Schedule) -> dict:
    """``d`` with its byte counts at each buffer's element size (2 bytes for ``half``
    storage: the elements are those of float32 storage, the bytes half of theirs)."""
    for direction in ("load", "store"):
        by_buffer = d[f"global_{direction}_elems_by_buffer"]
        d[f"global_{direction}_bytes"] = sum(
            elems * next((a.element_bytes for a in schedule.arrays if a.name == name),
                         FLOAT_BYTES)
            for name, elems in by_buffer.items())
    return d


def _single(schedule: Schedule) -> dict:
    """The closed forms of one product (:func:`counts` without the batch)."""
    p, t = schedule.param_values, schedule.tile
    family = schedule.family
    if family == "gemm-naive":
        return gemm_naive(p["M"], p["K"], p["N"], t)
    if family == "gemm-tiled":
        return gemm_tiled(p["M"], p["K"], p["N"], t)
    if family in ("gemm-register-blocked", "gemm-vectorized", "gemm-prefetch"):
        x = schedule.extra
        return gemm_register_blocked(p["M"], p["K"], p["N"], t, x["wg_rows"], x["tm"],
                                     x["tn"], x["bk"],
                                     barriers_per_step=1 if family == "gemm-prefetch" else 2)
    if family == "gemm-split-k-slices":
        x = schedule.extra
        return gemm_split_k_slices(p["M"], p["K"], p["N"], t, x["wg_rows"], x["tm"], x["tn"],
                                   x["bk"], x["splits"])
    if family == "gemm-split-k-reduce":
        return split_k_reduce(p["M"], p["N"], p["S"], t)
    if family == "gemm-warp-tiled":
        x = schedule.extra
        return gemm_warp_tiled(p["M"], p["K"], p["N"], t, x["wg_rows"], x["tm"], x["tn"],
                               x["bk"])
    if family == "matvec-rows-reduce":
        return matvec_rows_reduce(p["M"], p["K"], t, schedule.extra["wg_rows"])
    if family == "matvec-naive":
        return matvec_naive(p["M"], p["K"], t)
    if family == "matvec-relu":
        return matvec_relu(p["M"], p["K"], t)
    if family == "matvec-local":
        return matvec_local(p["M"], p["K"], t, schedule.extra["chunk"])
    if family == "matvec-local-whole":
        return matvec_local_whole(p["M"], p["K"], t)
    raise NoClosedForm(f"no closed form for schedule family {family!r}")


def counts_or_none(schedule: Schedule) -> dict | None:
    """:func:`counts`, or ``None`` for a schedule family without closed forms."""
    try:
        return counts(schedule)
    except NoClosedForm:
        return None


def textbook_per_tile_reads(family: str, n: int, b: int) -> int:
    """Global reads per B×B output tile with K = N (B dividing N).

    Naive: each of the tile's B² work-items reads a row of A and a column of B, 2N elements:
    B²·2N. Tiled: the work-group loads N/B tiles of A and N/B of B, B² elements each:
    (N/B)·2B² = 2NB (Kirk and Hwu, *Programming Massively Parallel Processors*, ch. 5).
    """
    if family == "gemm-naive":
        return b * b * 2 * n
    if family == "gemm-tiled":
        return 2 * n * b
    raise ValueError(f"the textbook per-tile count covers GEMM only, not {family!r}")
