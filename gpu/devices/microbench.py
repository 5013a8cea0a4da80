"""OpenCL microbenchmarks of ``tiletraffic calibrate``: launch, time, check.

The kernels are in ``templates/calibrate.cl``. Every function here launches one of them
``warmup + repeat`` times on an opened :class:`~tiletraffic.gpu.devices.device.Target`, checks the
result of the last launch against what the host computes (raising
:class:`MicrobenchResultError` when it differs, so no time of a wrong run is returned) and
returns the ``repeat`` kernel times in seconds from OpenCL profiling events (host wall times
where the queue has no profiling). What the times mean (bandwidths, rates, latencies) is
:mod:`tiletraffic.analysis.calibrate.calibrate`'s arithmetic.
"""
from __future__ import annotations

import time
from importlib import resources

import numpy as np
import pyopencl as cl

from tiletraffic.gpu.devices.device import TiletrafficGpuError
from tiletraffic.gpu.runtime.launch import build_program, queue_has_profiling

LOCAL_FLOATS = 4096
"""Words of the local array of ``local_read`` (16 KiB; a power of two)."""
STAGE_FLOAT4S = 1024
"""float4s of the local array of ``staging_round_trip``: one per work-item, so its work-groups
have at most this many work-items (16 KiB)."""


class MicrobenchResultError(TiletrafficGpuError):
    """A microbenchmark's result differs from the host's: its times are not returned."""


class MicrobenchLaunchError(TiletrafficGpuError):
    """A microbenchmark's kernel did not launch at the work-group size asked (more registers
    than the compute unit holds for that many work-items, say): no times."""


def kernel_source() -> str:
    """The OpenCL C source of every microbenchmark kernel."""
    return resources.files(__package__).joinpath("templates/calibrate.cl").read_text("utf-8")


def chase_permutation(n: int, seed: int = 0) -> np.ndarray:
    """``next`` (uint32, length ``n``) of a random cyclic permutation: following it from any
    index visits all ``n`` indices before returning (one cycle; a random order, so
    consecutive loads fall in unrelated lines).

    Raises:
        ValueError: ``n`` below 2 or above 2**32.
    """
    if not 2 <= n <= 2**32:
        raise ValueError(f"a pointer chase needs 2 to 2**32 elements, got n = {n}")
    order = np.random.default_rng(seed).permutation(n).astype(np.uint32)
    nxt = np.empty(n, dtype=np.uint32)
    nxt[order] = np.roll(order, -1)
    return nxt


def chase_end(nxt: np.ndarray, steps: int) -> int:
    """Where ``steps`` loads of the chase from index 0 end (host reference)."""
    j = 0
    for _ in range(steps):
        j = int(nxt[j])
    return j


def _kernel(target, name: str):
    built = build_program(target, kernel_source(), (f"-DLOCAL_FLOATS={LOCAL_FLOATS}",
                                                         f"-DSTAGE_FLOAT4S={STAGE_FLOAT4S}"))
    return cl.Kernel(built.program, name)


def local_size(target, wanted: int = 256) -> int:
    """Work-items per work-group of the benchmarks: ``wanted`` within the device's limit."""
    return max(1, min(wanted, target.info.max_work_group_size))


def _time(target, kernel, global_size: int | tuple[int, ...], local: int | tuple[int, ...],
          args: list, repeat: int, warmup: int = 1) -> list[float]:
    """``repeat`` timed launches after ``warmup`` untimed ones: seconds each. Sizes: an int
    (one dimension) or a tuple per dimension."""
    kernel.set_args(*args)
    queue, profiled = target.queue, queue_has_profiling(target.queue)
    sizes = [(x,) if isinstance(x, int) else tuple(x) for x in (global_size, local)]
    times = []
    for launch in range(warmup + repeat):
        start = time.perf_counter()
        event = cl.enqueue_nd_range_kernel(queue, kernel, *sizes)
        event.wait()
        wall = time.perf_counter() - start
        if launch >= warmup:
            times.append((event.profile.end - event.profile.start) * 1e-9 if profiled
                         else wall)
    return times


def _buffer(target, nbytes: int, host: np.ndarray | None = None):
    mf = cl.mem_flags
    if host is not None:
        return cl.Buffer(target.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=host)
    return cl.Buffer(target.context, mf.READ_WRITE, size=nbytes)


def _read(target, buf, shape, dtype=np.float32) -> np.ndarray:
    out = np.empty(shape, dtype=dtype)
    cl.enqueue_copy(target.queue, out, buf).wait()
    return out


def _refuse(what: str, got, expected) -> None:
    raise MicrobenchResultError(f"microbenchmark {what}: wrong result ({got} where "
                                f"{expected} was expected); its times are not used")


def _check_each(what: str, got: np.ndarray, expected, item: str = "work-item") -> None:
    """Refuse (:func:`_refuse`) unless every entry of ``got`` equals ``expected`` (an array
    of its shape, or one value) in ``got``'s dtype, naming the first entry that does not."""
    want = np.broadcast_to(np.asarray(expected).astype(got.dtype), got.shape)
    if not np.array_equal(got, want):
        bad = tuple(int(i) for i in np.argwhere(got != want)[0])
        _refuse(f"{what} ({item} {bad[0] if len(bad) == 1 else bad})", got[bad], want[bad])


def _rows_buffer(target, words: int):
    """A buffer of ``words`` floats, word i holding (i mod 7) + 1 (the strided benchmarks'
    rows: small integers, so every sum of them is exact in float32)."""
    return _buffer(target, 4 * words,
                   (np.arange(words, dtype=np.int64) % 7 + 1).astype(np.float32))


def read_sum(target, nbytes: int, passes: int, work_items: int, repeat: int) -> list[float]:
    """Times of reading ``nbytes`` (a multiple of 16) ``passes`` times with ``work_items``
    work-items (a multiple of :func:`local_size`)."""
    n4 = nbytes // 16
    src = _buffer(target, nbytes)
    cl.enqueue_fill_buffer(target.queue, src, np.float32(1.0), 0, nbytes).wait()
    out = _buffer(target, work_items * 4)
    shift = max(1, (n4 // max(1, passes)) | 1)
    times = _time(target, _kernel(target, "read_sum"), work_items, local_size(target),
                  [src, out, np.uint32(n4), np.uint32(passes), np.uint32(shift)], repeat)
    counts = n4 // work_items + (np.arange(work_items) < n4 % work_items)
    expected = (4 * passes * counts).astype(np.float32)
    _check_each("read_sum", _read(target, out, work_items), expected)
    return times


def write_fill(target, nbytes: int, work_items: int, repeat: int) -> list[float]:
    """Times of writing ``nbytes`` (a multiple of 16) with ``work_items`` work-items."""
    dst = _buffer(target, nbytes)
    cl.enqueue_fill_buffer(target.queue, dst, np.float32(0.0), 0, nbytes).wait()
    times = _time(target, _kernel(target, "write_fill"), work_items, local_size(target),
                  [dst, np.uint32(nbytes // 16), np.float32(3.0)], repeat)
    _check_each("write_fill", _read(target, dst, nbytes // 4), 3.0, "element")
    return times


def local_read(target, iters: int, work_groups: int, repeat: int) -> list[float]:
    """Times of ``iters`` (a multiple of 8) local-memory word reads by every work-item of
    ``work_groups`` work-groups of :func:`local_size` work-items.

    Raises:
        ValueError: ``iters`` is not a positive multiple of 8 (the kernel reads 8 rows a step).
    """
    if iters <= 0 or iters % 8:
        raise ValueError(f"local_read: iters = {iters} must be a positive multiple of 8")
    local = local_size(target)
    out = _buffer(target, work_groups * local * 4)
    times = _time(target, _kernel(target, "local_read"), work_groups * local, local,
                  [out, np.uint32(iters)], repeat)
    expected = np.tile(np.float32(iters) * (np.arange(local) & 7), work_groups)
    _check_each("local_read", _read(target, out, work_groups * local), expected)
    return times


FMA_A, FMA_B = 0.999, 0.001
"""``x <- fma(x, a, b)``: contracts to 1, so float32 rounding stays bounded."""


def fma_chains(target, iters: int, work_items: int, repeat: int) -> list[float]:
    """Times of ``8 * iters`` FMAs by each of ``work_items`` work-items."""
    out = _buffer(target, work_items * 4)
    a, b = np.float32(FMA_A), np.float32(FMA_B)
    times = _time(target, _kernel(target, "fma_chains"), work_items, local_size(target),
                  [out, a, b, np.uint32(iters)], repeat)
    an = float(a) ** iters
    fixed = float(b) / (1 - float(a))
    expected = sum(an * (k / 8) + fixed * (1 - an) for k in range(8))
    got = _read(target, out, work_items)
    if not np.allclose(got, expected, rtol=1e-3):
        bad = int(np.argmax(np.abs(got - expected)))
        _refuse(f"fma_chains (work-item {bad})", got[bad], expected)
    return times


def pointer_chase(target, nxt: np.ndarray, steps: int, repeat: int) -> list[float]:
    """Times of one work-item following ``nxt`` (from :func:`chase_permutation`) for
    ``steps`` dependent loads."""
    buf = _buffer(target, nxt.nbytes, nxt)
    out = _buffer(target, 4)
    times = _time(target, _kernel(target, "pointer_chase"), 1, 1,
                  [buf, out, np.uint32(steps)], repeat)
    got, expected = int(_read(target, out, 1, np.uint32)[0]), chase_end(nxt, steps)
    if got != expected:
        _refuse(f"pointer_chase ({steps} steps)", got, expected)
    return times


def staging_local_size(target) -> int:
    """Work-items per work-group of :func:`staging_round_trip`: :func:`local_size`, at most
    :data:`STAGE_FLOAT4S`."""
    return min(local_size(target), STAGE_FLOAT4S)


def staging_round_trip(target, nbytes: int, steps: int, work_groups: int,
                       repeat: int) -> list[float]:
    """Times of ``steps`` staging round trips (global load, local store, barrier, local
    load, barrier; each step's load waits for the previous step's) by ``work_groups``
    work-groups of :func:`staging_local_size` work-items, reading a
    buffer of ``nbytes`` (16 x a power of two float4s).

    Raises:
        ValueError: ``nbytes`` is not 16 bytes times a power of two, or ``steps`` < 1.
    """
    n4 = nbytes // 16
    if nbytes % 16 or n4 < 1 or n4 & (n4 - 1) or steps < 1:
        raise ValueError(f"staging_round_trip: nbytes = {nbytes} must be 16 x a power of two "
                         f"and steps = {steps} at least 1")
    local = staging_local_size(target)
    src = _buffer(target, nbytes)
    cl.enqueue_fill_buffer(target.queue, src, np.float32(1.0), 0, nbytes).wait()
    out = _buffer(target, work_groups * local * 4)
    times = _time(target, _kernel(target, "staging_round_trip"), work_groups * local, local,
                  [src, out, np.uint32(steps), np.uint32(n4), np.uint32(0)], repeat)
    _check_each("staging_round_trip", _read(target, out, work_groups * local), 4 * steps)
    return times


def _row_sums(stride_words: int, length: int, rows: int, weights: np.ndarray) -> np.ndarray:
    """Per row r of :func:`_rows_buffer` (words from r x ``stride_words``) the sum over
    k < ``length`` of its word k times ``weights[k]`` (float64). A row's sum depends only on
    its first word mod 7: seven sums, one per residue."""
    k = np.arange(length, dtype=np.int64)
    per_residue = (((np.arange(7)[:, None] + k) % 7 + 1) * weights).sum(axis=1)
    return per_residue[np.arange(rows, dtype=np.int64) * stride_words % 7].astype(np.float64)


def strided_rows_sum(stride_words: int, length: int, rows: int) -> np.ndarray:
    """Host reference of ``strided_read``: the sum of words 0..``length`` - 1 of each of
    ``rows`` rows ``stride_words`` apart, word i holding (i mod 7) + 1 (float64, exact in
    float32 for these small integers)."""
    return _row_sums(stride_words, length, rows, np.ones(length, dtype=np.int64))


def strided_read(target, stride_words: int, length: int, work_groups: int,
                 repeat: int, own_rows: bool = False) -> list[float]:
    """Times of ``work_groups`` work-groups of :func:`local_size` work-items, work-item l
    reading words 0..``length`` - 1 of row l of a buffer whose rows are ``stride_words``
    apart (every work-group the same rows, an L2-resident footprint; ``own_rows``: each
    work-item its own row, global id g reading row g, every line from DRAM): each request
    of a sub-group touches one line per work-item.

    Raises:
        ValueError: ``length`` not a positive even number, or ``stride_words`` < ``length``.
    """
    if length < 2 or length % 2 or stride_words < length:
        raise ValueError(f"strided_read: length = {length} must be a positive even number "
                         f"and stride_words = {stride_words} at least length")
    local = local_size(target)
    rows = local * (work_groups if own_rows else 1)
    src = _rows_buffer(target, (rows - 1) * stride_words + length)
    out = _buffer(target, work_groups * local * 4)
    times = _time(target, _kernel(target, "strided_read"), work_groups * local, local,
                  [src, out, np.uint32(stride_words), np.uint32(length),
                   np.uint32(int(own_rows))], repeat)
    sums = strided_rows_sum(stride_words, length, rows)
    _check_each("strided_read", _read(target, out, work_groups * local),
                sums if own_rows else np.tile(sums, work_groups))
    return times


def strided_x_sums(stride_words: int, length: int, rows: int) -> np.ndarray:
    """Host reference of ``strided_read_xglobal`` / ``_xlocal``: per row r (words from
    r x ``stride_words``, word i holding (i mod 7) + 1) the sum over k < ``length`` of its
    word k times x[k] = (k mod 5) + 1 (float64; integers, exact in float32 below 2^24)."""
    return _row_sums(stride_words, length, rows, np.arange(length, dtype=np.int64) % 5 + 1)


def strided_read_x(target, stride_words: int, length: int, work_groups: int, repeat: int,
                   x_space: str) -> list[float]:
    """Times of ``strided_read_xglobal`` (``x_space`` "global") or ``strided_read_xlocal``
    ("local"): ``work_groups`` work-groups of :func:`local_size`, global id g reading row g
    (``stride_words`` apart, every line from DRAM) times the broadcast operand x.

    Raises:
        ValueError: ``x_space`` not "global" or "local", ``length`` not positive, above
            :data:`LOCAL_FLOATS`, above ``stride_words``, or past 2^24 / 35 (the sums'
            exact range in float32).
    """
    if x_space not in ("global", "local"):
        raise ValueError(f"strided_read_x: x_space = {x_space!r} (global or local)")
    if not 0 < length <= min(LOCAL_FLOATS, stride_words, (1 << 24) // 35):
        raise ValueError(f"strided_read_x: length = {length} must be 1.."
                         f"{min(LOCAL_FLOATS, stride_words, (1 << 24) // 35)} (at most "
                         f"LOCAL_FLOATS = {LOCAL_FLOATS} and stride_words = {stride_words})")
    local = local_size(target)
    rows = local * work_groups
    src = _rows_buffer(target, (rows - 1) * stride_words + length)
    x = _buffer(target, 4 * length, (np.arange(length) % 5 + 1).astype(np.float32))
    out = _buffer(target, rows * 4)
    times = _time(target, _kernel(target, f"strided_read_x{x_space}"), rows, local,
                  [src, x, out, np.uint32(stride_words), np.uint32(length)], repeat)
    _check_each(f"strided_read_x{x_space}", _read(target, out, rows),
                strided_x_sums(stride_words, length, rows))
    return times


REGISTER_TILE_INSTRUCTIONS_PER_STEP = 8 * (8 + 8 + 64) + 1
"""Sub-group instructions of one ``register_tile`` step as the time model counts them
(:func:`tiletraffic.simulator.model.prediction.issued_instructions`): per kk 8 + 8 local
loads and 64 FMAs, 8 kk, and the barrier."""


def register_tile_sums(steps: int) -> np.ndarray:
    """Host reference of ``register_tile``: out of work-item (lx, ly) as a (16, 16) array
    indexed [ly, lx] (float64)."""
    r = np.arange(128)
    at = ((r[:, None] + np.arange(8)[None, :]) & 3) * 0.25          # [128][8]
    bt = ((np.arange(8)[:, None] + 2 * r[None, :]) & 3) * 0.25      # [8][128]
    # work-item (lx, ly) sums rows ly + 16 i and columns lx + 16 j of the product
    return steps * (at @ bt).reshape(8, 16, 8, 16).sum(axis=(0, 2))


def register_tile(target, steps: int, work_groups: int, repeat: int) -> list[float]:
    """Times of ``work_groups`` work-groups of 16 x 16 work-items running ``steps`` steps of
    the register-tile loop (a barrier, then 8 x (16 local loads + 64 FMAs) per work-item).

    Raises:
        ValueError: ``steps`` < 1.
        tiletraffic.gpu.devices.device.TiletrafficGpuError: the device cannot run 256 work-items
            per work-group.
    """
    if steps < 1:
        raise ValueError(f"register_tile: steps = {steps} must be at least 1")
    if target.info.max_work_group_size < 256:
        raise TiletrafficGpuError(f"register_tile needs work-groups of 256 work-items; "
                                  f"{target.info.device_name} allows "
                                  f"{target.info.max_work_group_size}")
    out = _buffer(target, work_groups * 256 * 4)
    times = _time(target, _kernel(target, "register_tile"), (16 * work_groups, 16), (16, 16),
                  [out, np.uint32(steps)], repeat)
    _check_each("register_tile", _read(target, out, (16, 16 * work_groups)),
                np.tile(register_tile_sums(steps), (1, work_groups)))
    return times


ISSUE_MIX_DEPTHS = 8
"""Depths (kk) per step of ``issue_mix_128`` and ``issue_mix_32`` (a barrier per step)."""
ISSUE_MIX_LOOP = 3
"""Instructions that close one step of the issue-mix loop (counter, compare, branch)."""
ISSUE_MIX_INSTRUCTIONS_PER_STEP = {
    "local_128": ISSUE_MIX_DEPTHS * (4 + 64) + 1 + ISSUE_MIX_LOOP,
    "local_32": ISSUE_MIX_DEPTHS * (16 + 64) + 1 + ISSUE_MIX_LOOP}
"""Sub-group instructions of one step of ``issue_mix_128`` (``local_128``) and
``issue_mix_32`` (``local_32``): per depth 4 float4 or 16 scalar local loads and 64 FMAs,
the barrier and the loop's closing instructions (the local offsets are constants of the
unrolled depths)."""


def issue_mix_sums(steps: int, vector: bool) -> np.ndarray:
    """Host reference of ``issue_mix_128`` (``vector``) or ``issue_mix_32``: the out value of
    lanes 0..31 (float64), lane = lr x 8 + lc."""
    e = np.arange(8 * 64)
    a_tile = (((3 * e[:256] + 1) & 3) * 0.25).reshape(8, 32)
    b_tile = (((5 * e + 2) & 3) * 0.25).reshape(8, 64)
    lane = np.arange(32)
    lr, lc = lane // 8, lane % 8
    if vector:   # float4s lr, lr + 4 of A and lc, lc + 8 of B
        a_cols = (4 * lr[:, None] + np.array([0, 1, 2, 3, 16, 17, 18, 19])[None, :])
        b_cols = (4 * lc[:, None] + np.array([0, 1, 2, 3, 32, 33, 34, 35])[None, :])
    else:        # words lr + 4 i of A and lc + 8 j of B
        a_cols = lr[:, None] + 4 * np.arange(8)[None, :]
        b_cols = lc[:, None] + 8 * np.arange(8)[None, :]
    a_sum = a_tile[:, a_cols].sum(axis=2)          # [kk, lane]
    b_sum = b_tile[:, b_cols].sum(axis=2)
    return steps * (a_sum * b_sum).sum(axis=0)


def issue_mix(target, steps: int, work_group_items: int, work_groups: int, repeat: int,
              vector: bool) -> list[float]:
    """Times of ``work_groups`` work-groups of ``work_group_items`` work-items (a multiple
    of 32) running ``steps`` steps of ``issue_mix_128`` (``vector``) or ``issue_mix_32``.

    Raises:
        ValueError: ``steps`` < 1, or ``work_group_items`` not a positive multiple of 32.
        tiletraffic.gpu.devices.device.TiletrafficGpuError: the device cannot run
            ``work_group_items`` work-items per work-group.
        MicrobenchLaunchError: the kernel did not launch at ``work_group_items`` work-items
            per work-group (the OpenCL error named): its registers, say, do not fit.
        MicrobenchResultError: the result differs from the host's.
    """
    name = "issue_mix_128" if vector else "issue_mix_32"
    if steps < 1 or work_group_items < 32 or work_group_items % 32:
        raise ValueError(f"{name}: steps = {steps} must be at least 1 and work_group_items "
                         f"= {work_group_items} a positive multiple of 32")
    if target.info.max_work_group_size < work_group_items:
        raise TiletrafficGpuError(f"{name} needs work-groups of {work_group_items} "
                                  f"work-items; {target.info.device_name} allows "
                                  f"{target.info.max_work_group_size}")
    items = work_groups * work_group_items
    out = _buffer(target, items * 4)
    source = resources.files(__package__).joinpath("templates/issue_mix.cl").read_text("utf-8")
    kernel = cl.Kernel(build_program(target, source, ()).program, name)
    try:
        times = _time(target, kernel, items, work_group_items, [out, np.uint32(steps)],
                      repeat)
        got = _read(target, out, items)
    except cl.Error as err:
        raise MicrobenchLaunchError(f"{name}: {work_group_items} work-items per work-group "
                                    f"did not launch on {target.info.device_name} "
                                    f"({' '.join(str(err).split())})") from None
    _check_each(name, got, np.tile(issue_mix_sums(steps, vector), items // 32))
    return times


def empty(target, repeat: int) -> list[float]:
    """Times of a kernel of one work-item that does nothing."""
    out = _buffer(target, 4)
    return _time(target, _kernel(target, "empty"), 1, 1, [out], repeat)


def barriers(target, count: int, work_groups: int, repeat: int) -> list[float]:
    """Times of ``count`` barriers in each of ``work_groups`` work-groups of
    :func:`local_size` work-items."""
    local = local_size(target)
    out = _buffer(target, work_groups * local * 4)
    times = _time(target, _kernel(target, "barriers"), work_groups * local, local,
                  [out, np.uint32(count)], repeat)
    _check_each("barriers", _read(target, out, work_groups * local), count)
    return times
