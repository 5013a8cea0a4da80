"""How much of a matrix that many work-groups read does the H200's L2 share between them?

The question behind issue #4's one open DRAM case (gemm-naive, N = 4096, B = 16): the
naive kernels run in waves (``experiments/h200/dispatch``), so the few concurrent
work-groups that read a column block of B should share each L2 fill, yet the counters show
2-3 times the reads that sharing would give. Stages (``--stages``; each writes its key of
``h200_l2_sharing.json`` and its arrays under ``--out``):

1. **slices** (Nsight Compute, caches flushed before each kernel as ncu does by default):
   the same generated GEMM kernels on M x 4096 x 4096 problems with few rows of
   work-groups, from one row (B read once: the compulsory bytes) to one wave (every
   column block of B read by the work-groups of a few rows at the same time) to many
   waves, plus the L2 partition counters. Results checked against numpy
   (``experiments.h200.validation.driver --ncu-driver``). The same slices' work-group
   timelines (``experiments.h200.dispatch.driver.timeline_launch``) go to
   ``slices_timelines.npz``.
2. **l2_reread** (Nsight Compute, application replay, no cache flush): a streaming kernel
   reads S bytes (pass 1, after a 512 MiB flush read) and then the same S bytes again
   (pass 2), forward (a cyclic re-read: reuse distance S) or with the work-groups' order
   reversed; each chunk read by one work-group or by two adjacent ones. Caveat found after
   the run: about 1,056 of these 256-work-item work-groups are resident at once, so below
   about 66 MiB every chunk of a pass is read at the same time and "reversed" is not a
   reversed time order; only the cyclic column is a clean reuse-distance point.
3. **l2_window**: a 1 MiB probe read once or twice, other data streamed, the probe re-read:
   miss fraction against reuse distance. **l2_policy**: the same after older data read
   once or twice (does the L2 protect re-referenced lines?).
4. **progress**: per-warp ``%globaltimer`` every 512 iterations of K in a few slices
   (``progress.npz``). **variants**: one-operand copies of the naive kernel and more
   slices (N = 4224, K = 2048). **stagger** / **stagger_paced**: G single-work-group
   readers of the same 16 MiB a fixed delay apart, with a background on the other SMs
   (none, streaming stores, L2-resident reads). The free-running ``stagger`` let later
   readers catch up with the first (its delays did not hold); ``stagger_paced`` reads on a
   clock (one 64 KiB step per 6 µs) and records how late the readers finished.

Kernels: ``stream.cu`` (streaming and flush reads), ``one_operand.cu`` (variants),
``paced_read.cuh`` + ``stagger.cu``, ``smmap.cu``, ``paced_read.cuh`` + ``placed_common.cuh``
+ ``placed.cu`` / ``placed_loaded.cu``, and ``progress_prelude.cuh`` (inserted into the
generated kernels' CUDA build for the progress stage).

Run on the device, from the repository root after the device preamble of
``experiments/README.md`` (the recorded runs: ``reports/nvidia-h200/l2_sharing/command.txt``)::

    PYTHONUNBUFFERED=1 timeout 560 python3 -m experiments.h200.l2_sharing.driver --out $OUT \\
        --stages slices l2_reread      # and so on

Local rehearsal without a GPU: ``--dry-run-local`` (builds the sources, writes the case
lists).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

from experiments.h200.ncu import parse_ncu_raw_csv

from experiments.h200.dispatch.driver import find_tool, timeline_launch, write_npz
from experiments.h200.kernels import kernel_source
from experiments.h200.validation.driver import NCU_DRIVER_MODULE, REPO

DRIVER_MODULE = "experiments.h200.l2_sharing.driver"
"""This module, as Nsight Compute runs it (``--<name>-driver``: :data:`DRIVERS`)."""

SLICE_METRICS = (
    "dram__bytes_read.sum",
    "dram__sectors_read.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum",
    "lts__t_sectors_srcunit_ltcfabric.sum",
    "lts__t_sectors_srcunit_ltcfabric_lookup_miss.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "gpu__time_duration.sum",
)
# (family, m, k, n, tile): rows of work-groups = m / tile; B = k x n floats (64 MiB here)
SLICES = (
    *(("gemm-naive", m, 4096, 4096, 16) for m in (16, 32, 64, 128, 256, 1024)),
    *(("gemm-tiled", m, 4096, 4096, 16) for m in (16, 64, 256, 1024)),
    *(("gemm-naive", m, 4096, 4096, 32) for m in (32, 64, 256)),
    *(("gemm-naive", m, 4096, 4096, 8) for m in (8, 64, 256)),
    ("gemm-naive", 256, 1024, 4096, 16),
)
REREAD_SIZES_MIB = (8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 128)
REREAD_SEQUENCES = {"cyclic": (0, 0), "reverse": (0, 1), "dup_reverse": (2, 3)}
FLUSH_MIB = 512
CHUNK_BYTES = 64 * 1024
STREAM_SRC = kernel_source(__file__, "stream.cu")


WINDOW_PROBE_MIB = 1
WINDOW_BETWEEN_MIB = (0, 0.25, 0.5, 1, 2, 4, 8, 16, 24, 32, 40, 48)
WINDOW_READS = (1, 2)


def window_plan() -> list[dict]:
    """The profiled stream_read launches of the l2_window stage, in order: for every
    (reads before, bytes between): ``reads`` fill passes over the probe buffer, then (after
    streaming ``between_mib`` MiB of other data, not profiled) the re-read."""
    plan = []
    for reads in WINDOW_READS:
        for mib in WINDOW_BETWEEN_MIB:
            for i in range(reads):
                plan.append({"reads": reads, "between_mib": mib, "what": f"fill {i + 1}"})
            plan.append({"reads": reads, "between_mib": mib, "what": "re-read"})
    return plan


def window_driver(out_path: Path) -> int:
    """Run under ncu (application replay, no cache flush): for each planned case, a 512 MiB
    flush read, the probe buffer (WINDOW_PROBE_MIB) read ``reads`` times, ``between_mib``
    MiB of other data streamed (``flush_read``, not profiled), the probe re-read."""
    import cupy as cp

    mod = cp.RawModule(code=STREAM_SRC)
    stream, flush = mod.get_function("stream_read"), mod.get_function("flush_read")
    rng = np.random.default_rng(12)
    big = cp.asarray(rng.standard_normal(FLUSH_MIB * 2 ** 18, dtype=np.float32))
    other = cp.asarray(rng.standard_normal(64 * 2 ** 18, dtype=np.float32))
    probe = cp.asarray(rng.standard_normal(WINDOW_PROBE_MIB * 2 ** 18, dtype=np.float32))
    sink = cp.zeros(256, dtype=cp.float32)
    chunks = WINDOW_PROBE_MIB * 2 ** 20 // CHUNK_BYTES
    done = []
    for reads in WINDOW_READS:
        for mib in WINDOW_BETWEEN_MIB:
            flush((1056,), (256,), (big, np.int64(big.size // 4), sink))
            for i in range(reads):
                stream((chunks,), (256,), (probe, np.int64(CHUNK_BYTES // 16), np.int32(0), sink))
                done.append({"reads": reads, "between_mib": mib, "what": f"fill {i + 1}"})
            n_vec = int(mib * 2 ** 20) // 16
            if n_vec:
                flush((1056,), (256,), (other, np.int64(n_vec), sink))
            stream((chunks,), (256,), (probe, np.int64(CHUNK_BYTES // 16), np.int32(0), sink))
            done.append({"reads": reads, "between_mib": mib, "what": "re-read"})
            cp.cuda.runtime.deviceSynchronize()
    out_path.write_text(json.dumps(done, indent=1))
    return 0


# diagnostic stripped-down copies of gemm-naive: the same work-item mapping and loop, one
# operand only (the other's load removed), to split the naive kernel's DRAM reads by operand
VARIANT_SRC = kernel_source(__file__, "one_operand.cu")
# (kernel, m, k, n, tile)
VARIANTS = (
    *((v, m, 4096, 4096, 16) for v in ("naive_b_only", "naive_a_only") for m in (64, 256, 1024)),
    *((v, 256, 4096, 4096, t) for v in ("naive_b_only",) for t in (8, 32)),
)
# more slices of the generated kernels: rows per wave a whole number (N = 4224: 264
# work-groups per row, 1056 running = 4 rows), and B small enough for L2 (K = 2048: 32 MiB)
SLICES_2 = (("gemm-naive", 256, 4096, 4224, 16), ("gemm-naive", 1024, 4096, 4224, 16),
            ("gemm-naive", 256, 2048, 4096, 16), ("gemm-naive", 1024, 2048, 4096, 16),
            ("gemm-tiled", 256, 4096, 4224, 16))


def variants_driver(out_path: Path) -> int:
    """Run under ncu (kernel replay, caches flushed as by default): every VARIANTS launch
    once, its output checked against numpy (row sums of the one operand's stripe)."""
    import cupy as cp

    mod = cp.RawModule(code=VARIANT_SRC)
    done = []
    for i, (name, m, k, n, tile) in enumerate(VARIANTS):
        rec = {"kernel": name, "m": m, "k": k, "n": n, "tile": tile}
        rng = np.random.default_rng(3000 + i)
        a_host = rng.standard_normal((m, k), dtype=np.float32)
        b_host = rng.standard_normal((k, n), dtype=np.float32)
        a, b = cp.asarray(a_host), cp.asarray(b_host)
        c = cp.full((m, n), cp.nan, dtype=cp.float32)
        mod.get_function(name)((n // tile, m // tile), (tile, tile),
                               (a, b, c, np.int32(m), np.int32(k), np.int32(n)))
        cp.cuda.runtime.deviceSynchronize()
        if name == "naive_b_only":
            ref = np.broadcast_to(b_host.astype(np.float64).sum(0), (m, n))
        else:
            ref = np.broadcast_to(a_host.astype(np.float64).sum(1)[:, None], (m, n))
        err = float(np.abs(cp.asnumpy(c) - ref).max())
        rec["check_ok"] = bool(err <= 1e-5 * k * float(np.abs(ref).max()) + 1e-6)
        done.append(rec)
        del a, b, c
        cp.get_default_memory_pool().free_all_blocks()
    out_path.write_text(json.dumps(done, indent=1))
    return 0


# replacement policy: is a probe read once evicted sooner when older data was re-read (is
# "protected") than when it was read once? Under LRU the probe's reuse distance is only the
# streamed data between its reads in every case.
POLICY_CASES = tuple({"old_mib": old, "old_reads": r_old, "probe_reads": r_probe,
                      "between_mib": between}
                     for old in (24,) for r_old in (1, 2) for r_probe in (1, 2)
                     for between in (2, 8, 16)) + tuple(
    {"old_mib": 32, "old_reads": r_old, "probe_reads": 1, "between_mib": 4}
    for r_old in (1, 2))


def policy_driver(out_path: Path) -> int:
    """Run under ncu (application replay, no cache flush): for each POLICY_CASES entry, a
    512 MiB flush read, the old data read ``old_reads`` times, the 1 MiB probe read
    ``probe_reads`` times (profiled), ``between_mib`` MiB of other data, the probe re-read
    (profiled). Only the probe's reads (``stream_read``) are profiled."""
    import cupy as cp

    mod = cp.RawModule(code=STREAM_SRC)
    stream, flush = mod.get_function("stream_read"), mod.get_function("flush_read")
    rng = np.random.default_rng(13)
    big = cp.asarray(rng.standard_normal(FLUSH_MIB * 2 ** 18, dtype=np.float32))
    old = cp.asarray(rng.standard_normal(32 * 2 ** 18, dtype=np.float32))
    other = cp.asarray(rng.standard_normal(16 * 2 ** 18, dtype=np.float32))
    probe = cp.asarray(rng.standard_normal(2 ** 18, dtype=np.float32))
    sink = cp.zeros(256, dtype=cp.float32)
    chunks = 2 ** 20 // CHUNK_BYTES
    done = []
    for case in POLICY_CASES:
        flush((1056,), (256,), (big, np.int64(big.size // 4), sink))
        for _ in range(case["old_reads"]):
            flush((1056,), (256,), (old, np.int64(case["old_mib"] * 2 ** 16), sink))
        for i in range(case["probe_reads"]):
            stream((chunks,), (256,), (probe, np.int64(CHUNK_BYTES // 16), np.int32(0), sink))
            done.append({**case, "what": f"probe {i + 1}"})
        flush((1056,), (256,), (other, np.int64(case["between_mib"] * 2 ** 16), sink))
        stream((chunks,), (256,), (probe, np.int64(CHUNK_BYTES // 16), np.int32(0), sink))
        done.append({**case, "what": "re-read"})
        cp.cuda.runtime.deviceSynchronize()
    out_path.write_text(json.dumps(done, indent=1))
    return 0


# staggered readers: G blocks (one per SM) read the same 16 MiB in the same order, block r
# starting r x delay after its own launch; optional background blocks on the other SMs until
# every reader is done, counting their bytes: 1 = reads streaming a 512 MiB buffer (DRAM
# reads; their count is not exact enough to subtract), 2 = stores streaming it (DRAM writes
# only), 3 = reads cycling over 8 MiB (L2-resident after one pass: L2 load, no DRAM)
STAGGER_SRC = kernel_source(__file__, "paced_read.cuh", "stagger.cu")
STAGGER_MIB = 16
STAGGER_BG_MIB = 512
STAGGER_CASES = tuple({"readers": g, "delay_us": d, "background": bg}
                      for bg in (0, 1) for g in (2, 4, 8)
                      for d in (0, 1, 2, 5, 10, 20, 50)) + (
    {"readers": 0, "delay_us": 0, "background": 1},) + tuple(
    {"readers": g, "delay_us": d, "background": bg} for bg in (2, 3) for g in (4, 8)
    for d in (0, 2, 5, 20, 50)) + tuple({"readers": 0, "delay_us": 0, "background": bg}
                                        for bg in (2, 3))
STAGGER_BG_RESIDENT_MIB = 8
# paced readers: every reader reads 64 KiB steps on a clock (one step per STAGGER_STEP_NS), so
# reader r stays delay x r behind reader 0 for the whole read (unless it cannot keep pace:
# its lateness at the end is recorded)
STAGGER_STEP_NS = 6000
STAGGER_PACED_CASES = tuple({"readers": g, "delay_us": d, "background": bg}
                            for bg, gs in ((0, (8,)), (3, (8,)), (2, (4, 8)))
                            for g in gs for d in (0, 2, 5, 10, 20, 50, 100))


def stagger_driver(out_path: Path, paced: bool = False) -> int:
    """Run under ncu (kernel replay, caches flushed): every STAGGER_CASES launch once (with
    ``paced``: every STAGGER_PACED_CASES launch, readers on a STAGGER_STEP_NS clock);
    records each reader's start, end and SM and the background's bytes read."""
    import cupy as cp

    fn = cp.RawModule(code=STAGGER_SRC).get_function("stagger_read")
    rng = np.random.default_rng(14)
    buf = cp.asarray(rng.standard_normal(STAGGER_MIB * 2 ** 18, dtype=np.float32))
    bg = cp.asarray(rng.standard_normal(STAGGER_BG_MIB * 2 ** 18, dtype=np.float32))
    sink = cp.zeros(1024, dtype=cp.float32)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    done = []
    step_ns = STAGGER_STEP_NS if paced else 0
    for case in (STAGGER_PACED_CASES if paced else STAGGER_CASES):
        g = case["readers"]
        grid = sms if case["background"] else g
        info = cp.zeros(4 * max(g, 1) + 4, dtype=cp.uint64)
        counter = cp.zeros(1, dtype=cp.uint32)
        bg_vec = (STAGGER_BG_RESIDENT_MIB * 2 ** 16 if case["background"] == 3
                  else bg.size // 4)
        fn((grid,), (1024,), (buf, np.int64(buf.size // 4), np.int32(g),
                              np.int64(case["delay_us"] * 1000), bg, np.int64(bg_vec),
                              np.int32(case["background"]), info, counter, sink,
                              np.int64(step_ns)))
        cp.cuda.runtime.deviceSynchronize()
        i = cp.asnumpy(info).astype(np.int64)
        starts = i[0:4 * g:4]
        origin = int(starts.min()) if g else 0
        done.append({**case, "grid": grid, "step_ns": step_ns,
                     "reader_start_ns": (starts - origin).tolist(),
                     "reader_end_ns": (i[1:4 * g:4] - origin).tolist(),
                     "reader_sm": i[2:4 * g:4].tolist(),
                     "background_bytes": int(i[4 * g])})
    out_path.write_text(json.dumps(done, indent=1))
    return 0


# which L2 partition is each SM's? A 1 MiB probe is read by one work-group on SM 0 and then
# re-read by one on SM s: lookups that miss in SM s's own partition are ~0 when s shares SM 0's
# partition (its copy of the far half is there) and ~half the probe otherwise
SMMAP_SRC = kernel_source(__file__, "smmap.cu")
SMMAP_REFERENCE_SM = 0


def smmap_driver(out_path: Path) -> int:
    """Run under ncu (application replay, no cache flush; only ``reread_on_sm`` profiled):
    for every SM s, a 512 MiB flush read, the 1 MiB probe read on SMMAP_REFERENCE_SM, then
    re-read on s. Grids of 4 x SMs work-groups so that every SM gets one."""
    import cupy as cp

    mod = cp.RawModule(code=STREAM_SRC + SMMAP_SRC)
    flush = mod.get_function("flush_read")
    fill, reread = mod.get_function("fill_on_sm"), mod.get_function("reread_on_sm")
    rng = np.random.default_rng(15)
    big = cp.asarray(rng.standard_normal(FLUSH_MIB * 2 ** 18, dtype=np.float32))
    probe = cp.asarray(rng.standard_normal(2 ** 18, dtype=np.float32))
    sink = cp.zeros(1024, dtype=cp.float32)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    flags = cp.zeros(2, dtype=cp.uint32)
    done = []
    for target in range(sms):
        flush((1056,), (256,), (big, np.int64(big.size // 4), sink))
        flags.fill(0)
        fill((4 * sms,), (1024,), (probe, np.int64(probe.size // 4),
                                   np.int32(SMMAP_REFERENCE_SM), flags[0:1], sink))
        reread((4 * sms,), (1024,), (probe, np.int64(probe.size // 4), np.int32(target),
                                     flags[1:2], sink))
        cp.cuda.runtime.deviceSynchronize()
        got = cp.asnumpy(flags).tolist()
        done.append({"sm": target, "fill_ran": got[0] == 1, "reread_ran": got[1] == 1})
    out_path.write_text(json.dumps(done, indent=1))
    return 0


# readers placed on chosen SMs (the smmap stage's partitions): does a fill made for an SM of
# one L2 partition serve a reader in the other? Paced like stagger_paced, no background.
PLACED_SRC = kernel_source(__file__, "paced_read.cuh", "placed_common.cuh", "placed.cu")
# SM ids by partition, as the smmap stage measured them on the lent H200 (2026-11-30)
PARTITION_A_SMS = (0, 1, 8, 9, 10, 11, 12, 13)
PARTITION_B_SMS = (2, 3, 4, 5, 6, 7, 14, 15)
PLACEMENTS = {
    "one partition": PARTITION_A_SMS,
    "alternating partitions": tuple(x for pair in zip(PARTITION_A_SMS, PARTITION_B_SMS)
                                    for x in pair),
}
PLACED_CASES = tuple({"placement": name, "readers": g, "delay_us": d}
                     for name in PLACEMENTS for g in (2, 8)
                     for d in (0, 2, 5, 10, 20, 50))


def placement_roles(placement: str, readers: int, sms: int) -> np.ndarray:
    """role[smid] = reader index on the SMs of PLACEMENTS[placement][:readers], else -1."""
    role = np.full(sms, -1, dtype=np.int32)
    for r, sm in enumerate(PLACEMENTS[placement][:readers]):
        role[sm] = r
    return role


def placed_driver(out_path: Path) -> int:
    """Run under ncu (kernel replay, caches flushed): every PLACED_CASES launch once; reader
    r runs on SM PLACEMENTS[placement][r] (grid of 4 work-groups per SM, the others exit)."""
    import cupy as cp

    fn = cp.RawModule(code=PLACED_SRC).get_function("placed_read")
    rng = np.random.default_rng(16)
    buf = cp.asarray(rng.standard_normal(STAGGER_MIB * 2 ** 18, dtype=np.float32))
    sink = cp.zeros(1024, dtype=cp.float32)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    done = []
    for case in PLACED_CASES:
        g = case["readers"]
        role = placement_roles(case["placement"], g, sms)
        info = cp.zeros(4 * g, dtype=cp.uint64)
        fn((4 * sms,), (1024,), (buf, np.int64(buf.size // 4), cp.asarray(role),
                                 np.int64(case["delay_us"] * 1000), np.int64(STAGGER_STEP_NS),
                                 info, sink))
        cp.cuda.runtime.deviceSynchronize()
        i = cp.asnumpy(info).astype(np.int64)
        starts = i[0::4]
        origin = int(starts.min())
        done.append({**case, "step_ns": STAGGER_STEP_NS, "background": 0,
                     "background_bytes": 0, "reader_start_ns": (starts - origin).tolist(),
                     "reader_end_ns": (i[1::4] - origin).tolist(),
                     "reader_sm": i[2::4].tolist(), "ran": i[3::4].tolist()})
    out_path.write_text(json.dumps(done, indent=1))
    return 0


# the same placement with the other SMs streaming stores (new lines at several TB/s, no DRAM
# reads of their own) until every reader is done
PLACED_LOADED_SRC = kernel_source(__file__, "paced_read.cuh", "placed_common.cuh",
                                  "placed_loaded.cu")
PLACED_LOADED_CASES = tuple({"placement": name, "readers": 8, "delay_us": d}
                            for name in PLACEMENTS for d in (0, 2, 5, 10, 20))


def placed_loaded_driver(out_path: Path) -> int:
    """Run under ncu (kernel replay, caches flushed): PLACED_LOADED_CASES, two work-groups
    per SM (grid = 2 x SMs, all resident); reader r on SM PLACEMENTS[placement][r] (the first
    work-group there; the second one there idles), every other work-group stores. (A first
    run let the second work-group on a reader's SM store too; the readers then fell up to
    1 ms behind their clock and the run did not separate the placements.)"""
    import cupy as cp

    fn = cp.RawModule(code=PLACED_LOADED_SRC).get_function("placed_loaded_read")
    rng = np.random.default_rng(17)
    buf = cp.asarray(rng.standard_normal(STAGGER_MIB * 2 ** 18, dtype=np.float32))
    bg = cp.zeros(STAGGER_BG_MIB * 2 ** 18, dtype=cp.float32)
    sink = cp.zeros(1024, dtype=cp.float32)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    done = []
    for case in PLACED_LOADED_CASES:
        g = case["readers"]
        role = placement_roles(case["placement"], g, sms)
        info = cp.zeros(4 * g + 4, dtype=cp.uint64)
        counter = cp.zeros(1, dtype=cp.uint32)
        fn((2 * sms,), (1024,), (buf, np.int64(buf.size // 4), cp.asarray(role),
                             np.int64(case["delay_us"] * 1000), np.int64(STAGGER_STEP_NS),
                             bg, np.int64(bg.size // 4), np.int32(g), info, counter, sink))
        cp.cuda.runtime.deviceSynchronize()
        i = cp.asnumpy(info).astype(np.int64)
        starts = i[0:4 * g:4]
        origin = int(starts.min())
        done.append({**case, "step_ns": STAGGER_STEP_NS, "background": 2,
                     "background_bytes": int(i[4 * g]),
                     "reader_start_ns": (starts - origin).tolist(),
                     "reader_end_ns": (i[1:4 * g:4] - origin).tolist(),
                     "reader_sm": i[2:4 * g:4].tolist(), "ran": i[3:4 * g:4].tolist()})
    out_path.write_text(json.dumps(done, indent=1))
    return 0


def slice_id(family: str, m: int, k: int, n: int, tile: int) -> str:
    return f"{family}-M{m}-K{k}-N{n}-T{tile}"


def reread_plan() -> list[dict]:
    """The profiled stream_read launches, in order: (size, sequence, pass, mode)."""
    plan = []
    for mib in REREAD_SIZES_MIB:
        for seq, modes in REREAD_SEQUENCES.items():
            for pass_no, mode in enumerate(modes, start=1):
                plan.append({"size_mib": mib, "sequence": seq, "pass": pass_no, "mode": mode})
    return plan


def reread_driver(out_path: Path) -> int:
    """Run under ncu (application replay): every planned launch, each sequence after a
    flush read of FLUSH_MIB MiB (not profiled: ``flush_read``)."""
    import cupy as cp

    mod = cp.RawModule(code=STREAM_SRC)
    stream, flush = mod.get_function("stream_read"), mod.get_function("flush_read")
    rng = np.random.default_rng(11)
    big = cp.asarray(rng.standard_normal(FLUSH_MIB * 2 ** 18, dtype=np.float32))
    sink = cp.zeros(256, dtype=cp.float32)
    buffers: dict[int, object] = {}
    done = []
    for rec in reread_plan():
        size = rec["size_mib"] * 2 ** 20
        if size not in buffers:
            buffers.clear()
            cp.get_default_memory_pool().free_all_blocks()
            buffers[size] = cp.asarray(rng.standard_normal(size // 4, dtype=np.float32))
        buf = buffers[size]
        if rec["pass"] == 1:
            flush((1056,), (256,), (big, np.int64(big.size // 4), sink))
        chunks = size // CHUNK_BYTES
        grid = chunks * (2 if rec["mode"] >= 2 else 1)
        stream((grid,), (256,), (buf, np.int64(CHUNK_BYTES // 16), np.int32(rec["mode"]), sink))
        cp.cuda.runtime.deviceSynchronize()
        done.append({**rec, "grid": grid})
    out_path.write_text(json.dumps(done, indent=1))
    return 0


def run_ncu(argv_tail: list[str], metrics, extra: list[str], timeout: float, tag: str,
            tmp: Path) -> dict:
    ncu = find_tool("ncu") or "/usr/local/cuda/bin/ncu"
    rep = tmp / tag
    argv = [ncu, "--clock-control", "none", *extra, "--metrics", ",".join(metrics),
            "--target-processes", "all", "--export", str(rep), "--force-overwrite",
            sys.executable, *argv_tail]
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=REPO)
    result = {"argv": argv, "rc": done.returncode, "wall_s": time.perf_counter() - t0,
              "stdout": done.stdout[-3000:], "stderr": done.stderr[-3000:]}
    got = subprocess.run([ncu, "--import", f"{rep}.ncu-rep", "--page", "raw", "--csv",
                          "--print-units", "base"], capture_output=True, text=True,
                         timeout=300)
    result["raw_csv_rc"] = got.returncode
    result["records"] = parse_ncu_raw_csv(got.stdout)
    return result


REPLAY_NO_FLUSH = ["--replay-mode", "application", "--cache-control", "none"]


def driver_stage(record: dict, save, key: str, driver_args: list[str], kernel: str,
                 plan_key: str = "plan", extra: list[str] | None = None,
                 metrics=SLICE_METRICS, timeout: float = 400) -> Path:
    """Run this script's ``driver_args`` driver under ncu (``extra``: replay options) and
    store ncu's records with the driver's JSON (under ``plan_key``) as ``record[key]``.
    Returns the temporary folder (the driver JSON is ``driver.json`` there)."""
    tmp = Path(tempfile.mkdtemp())
    out_json = tmp / "driver.json"
    res = run_ncu(["-m", DRIVER_MODULE, *driver_args[:1], str(out_json),
                   *driver_args[1:]], metrics, ["--kernel-name", kernel, *(extra or [])],
                  timeout, key, tmp)
    res[plan_key] = json.loads(out_json.read_text()) if out_json.exists() else []
    record[key] = res
    save()
    return tmp


def gemm_slices(out: Path, record: dict, save, key: str, timeline_key: str, npz: str,
                shapes, seed: int) -> None:
    """The generated GEMM kernels of ``shapes`` (family, m, k, n, tile) under ncu through
    ``experiments.h200.validation.driver --ncu-driver`` (``record[key]``), then one timeline
    launch each
    (``record[timeline_key]``, arrays in ``npz``.npz)."""
    tmp = Path(tempfile.mkdtemp())
    cases = [{"family": f, "m": m, "k": k, "n": n, "tile": b, "id": slice_id(f, m, k, n, b)}
             for f, m, k, n, b in shapes]
    (tmp / "cases.json").write_text(json.dumps(cases))
    res = run_ncu(["-m", NCU_DRIVER_MODULE, "--ncu-driver",
                   str(tmp / "cases.json"), "--driver-out", str(tmp / "driver.json")],
                  SLICE_METRICS, ["--kernel-name", "regex:^gemm_"], 400, key, tmp)
    res["cases"] = cases
    res["driver"] = json.loads((tmp / "driver.json").read_text()) \
        if (tmp / "driver.json").exists() else []
    record[key] = res
    save()
    arrays: dict[str, np.ndarray] = {}
    record[timeline_key] = []
    for i, c in enumerate(cases):
        rec, got = timeline_launch(c["family"], c["m"], c["k"], c["n"], c["tile"], c["id"],
                                   seed=seed + i)
        record[timeline_key].append(rec)
        arrays.update(got)
    write_npz(out, npz, arrays)
    save()


def slices(out: Path, record: dict, save) -> None:
    gemm_slices(out, record, save, "slices", "slices_timelines", "slices_timelines", SLICES,
                seed=1000)


def l2_reread(out: Path, record: dict, save) -> None:
    driver_stage(record, save, "l2_reread", ["--reread-driver"], "stream_read",
                 extra=REPLAY_NO_FLUSH)


def l2_window(out: Path, record: dict, save) -> None:
    driver_stage(record, save, "l2_window", ["--window-driver"], "stream_read",
                 extra=REPLAY_NO_FLUSH)


PROGRESS_EVERY = 512
PROGRESS_SLICES = (("gemm-naive", 256, 4096, 4096, 16), ("gemm-naive", 256, 4096, 4096, 8),
                   ("gemm-naive", 256, 4096, 4096, 32), ("gemm-tiled", 64, 4096, 4096, 16),
                   ("gemm-tiled", 256, 4096, 4096, 16), ("gemm-naive", 1024, 4096, 4096, 16))
PROGRESS_LOOPS = {"gemm-naive": ("for (int k = 0; k < K; ++k) {", "k"),
                  "gemm-tiled": ("for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {", "t * TILE")}
PROGRESS_PRELUDE = kernel_source(__file__, "progress_prelude.cuh")


def progress_source(family: str, kernel, k: int) -> tuple[str, str]:
    """The timeline build of ``kernel`` with a ``%globaltimer`` read by lane 0 of every warp
    each PROGRESS_EVERY iterations of K (a diagnostic: it adds a branch to the loop)."""
    from experiments.h200.cuda import timeline_source

    src, entry = timeline_source(kernel)
    loop, kk = PROGRESS_LOOPS[family]
    if src.count(loop) != 1:
        raise ValueError(f"{family}: loop header {loop!r} not found once in the source")
    src = src.replace(loop, f"{loop} TT_PROBE({kk});")
    head = (f"#define TT_EVERY {PROGRESS_EVERY}\n#define TT_SLOTS {k // PROGRESS_EVERY}\n"
            + PROGRESS_PRELUDE)
    marker = "// ---- end of prelude"
    return src.replace(marker, head + marker, 1), entry


def progress(out: Path, record: dict, save) -> None:
    """Per-warp progress through K (``%globaltimer`` every PROGRESS_EVERY iterations) of a
    few slices, through :func:`experiments.h200.dispatch.driver.timeline_launch` with the
    instrumented source;
    ``progress.npz``: ``<id>__progress_ns`` (work-groups, warps, slots; ns from the first
    start), plus start/end/SM as in the timelines."""
    import cupy as cp

    arrays: dict[str, np.ndarray] = {}
    record["progress"] = []
    for i, (family, m, k, n, tile) in enumerate(PROGRESS_SLICES):
        cid = slice_id(family, m, k, n, tile)
        slots = k // PROGRESS_EVERY
        shape: dict = {}

        def prepare(module, grid, block, cid=cid, slots=slots, shape=shape):
            groups = grid[0] * grid[1] * grid[2]
            warps = (block[0] * block[1] * block[2] + 31) // 32
            prog = cp.zeros(groups * warps * slots, dtype=cp.uint64)
            module.get_function("tt_set_progress")((1,), (1,), (prog,))
            shape.update(warps=warps, slots=slots)

            def finish(origin: int) -> dict[str, np.ndarray]:
                return {f"{cid}__progress_ns": (cp.asnumpy(prog).astype(np.int64) - origin)
                        .astype(np.int32).reshape(groups, warps, slots)}
            return finish

        rec, got = timeline_launch(
            family, m, k, n, tile, cid, seed=2000 + i,
            source=lambda kernel, f=family, k=k: progress_source(f, kernel, k),
            prepare=prepare)
        rec.update(shape)
        if "check" in rec:
            rec["check_ok"] = rec["check"]["ok"]
        record["progress"].append(rec)
        arrays.update(got)
    write_npz(out, "progress", arrays)
    save()


def variants(out: Path, record: dict, save) -> None:
    """Stripped-down naive kernels (one operand) and the SLICES_2 slices under ncu, plus the
    SLICES_2 timelines (``slices2_timelines.npz``)."""
    driver_stage(record, save, "variants", ["--variants-driver"], "regex:^naive_",
                 plan_key="driver")
    gemm_slices(out, record, save, "slices_2", "slices_2_timelines", "slices2_timelines",
                SLICES_2, seed=4000)


def l2_policy(out: Path, record: dict, save) -> None:
    driver_stage(record, save, "l2_policy", ["--policy-driver"], "stream_read",
                 extra=REPLAY_NO_FLUSH)


def stagger(out: Path, record: dict, save) -> None:
    driver_stage(record, save, "stagger", ["--stagger-driver"], "stagger_read",
                 plan_key="driver")


def stagger_paced(out: Path, record: dict, save) -> None:
    driver_stage(record, save, "stagger_paced", ["--stagger-driver", "--paced"],
                 "stagger_read", plan_key="driver")


def smmap(out: Path, record: dict, save) -> None:
    driver_stage(record, save, "smmap", ["--smmap-driver"], "reread_on_sm", plan_key="driver",
                 extra=REPLAY_NO_FLUSH,
                 metrics=("lts__t_sectors_srcunit_tex_op_read.sum",
                          "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum",
                          "lts__t_sectors_srcunit_ltcfabric.sum", "dram__bytes_read.sum"))


def placed(out: Path, record: dict, save) -> None:
    driver_stage(record, save, "placed", ["--placed-driver"], "placed_read", plan_key="driver")


def placed_loaded(out: Path, record: dict, save) -> None:
    driver_stage(record, save, "placed_loaded", ["--placed-loaded-driver"],
                 "placed_loaded_read", plan_key="driver")


STAGES = {"slices": slices, "l2_reread": l2_reread, "l2_window": l2_window,
          "progress": progress, "variants": variants, "l2_policy": l2_policy,
          "stagger": stagger, "stagger_paced": stagger_paced, "smmap": smmap,
          "placed": placed, "placed_loaded": placed_loaded}


DRIVERS = {
    "reread": (reread_driver, "PLAN_JSON", "l2_reread"),
    "window": (window_driver, "PLAN_JSON", "l2_window"),
    "stagger": (stagger_driver, "OUT_JSON", "stagger"),
    "placed-loaded": (placed_loaded_driver, "OUT_JSON", "placed_loaded"),
    "placed": (placed_driver, "OUT_JSON", "placed"),
    "smmap": (smmap_driver, "OUT_JSON", "smmap"),
    "policy": (policy_driver, "PLAN_JSON", "l2_policy"),
    "variants": (variants_driver, "OUT_JSON", "variants"),
}
"""``--<name>-driver PATH``: the internal processes Nsight Compute runs (driver_stage)."""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, help="output folder (the device's $OUT)")
    ap.add_argument("--stages", nargs="+", default=list(STAGES), choices=list(STAGES))
    for name, (_, metavar, stage) in DRIVERS.items():
        ap.add_argument(f"--{name}-driver", type=Path, metavar=metavar,
                        help=f"internal: the process ncu runs for the {stage} stage")
    ap.add_argument("--paced", action="store_true",
                    help="internal: the stagger driver with paced readers")
    ap.add_argument("--dry-run-local", action="store_true",
                    help="no GPU: build the slice kernels' sources and print the plans")
    args = ap.parse_args(argv)
    for name, (driver, _, _) in DRIVERS.items():
        path = getattr(args, f"{name.replace('-', '_')}_driver")
        if path:
            return driver(path, paced=args.paced) if driver is stagger_driver else driver(path)
    if args.out is None:
        ap.error("--out is required")
    if args.dry_run_local:
        from tiletraffic.gpu.codegen.generate import generate
        from experiments.h200.cuda import timeline_source
        from tiletraffic.simulator.kernels.families import build

        for f, m, k, n, b in SLICES:
            timeline_source(generate(build(f, m, k, n, b)))
        for f, m, k, n, b in PROGRESS_SLICES:
            src, _ = progress_source(f, generate(build(f, m, k, n, b)), k)
            (args.out / f"{slice_id(f, m, k, n, b)}.progress.cu").parent.mkdir(
                parents=True, exist_ok=True)
            (args.out / f"{slice_id(f, m, k, n, b)}.progress.cu").write_text(src)
        print(json.dumps({"slices": [slice_id(*s) for s in SLICES],
                          "reread_launches": len(reread_plan()),
                          "window_launches": len(window_plan())}, indent=1))
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    record: dict = {"meta": {"created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(),
                             "argv": sys.argv}}
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm",
                          "--format=csv,noheader"], capture_output=True, text=True)
    record["meta"]["nvidia_smi"] = smi.stdout.strip()
    path = args.out / "h200_l2_sharing.json"

    def save() -> None:
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(record, indent=1))
        os.replace(tmp, path)

    for name in args.stages:
        t0 = time.perf_counter()
        try:
            STAGES[name](args.out, record, save)
        except Exception:  # noqa: BLE001 - recorded, next stage
            record.setdefault("stage_errors", {})[name] = traceback.format_exc()
            print(name, "FAILED", traceback.format_exc()[-800:], flush=True)
        record.setdefault("stage_wall_s", {})[name] = time.perf_counter() - t0
        save()
        print(name, f"{time.perf_counter() - t0:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
