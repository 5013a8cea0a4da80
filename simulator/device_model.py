"""Device models: the numbers the memory-system and time models need.

A :class:`DeviceModel` is plain data. Known devices come from a documented table
(:data:`DEVICE_MODELS`); ``analysis.device_models`` fills one from OpenCL device queries
where OpenCL exposes a value. Every value that had to be guessed is listed in
``guessed`` and reported with a warning, never assumed silently.

Sources for the NVIDIA H200 (SXM, compute capability 9.0, Hopper GH100):
[H200] NVIDIA H200 Tensor Core GPU datasheet (2024): 141 GB HBM3e, 4.8 TB/s, FP32 67 TFLOP/s.
[HWP] NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022), same GH100 die: 132 SMs,
256 KB combined L1/shared memory per SM (up to 228 KB shared), 50 MB L2, 128-byte lines of
four 32-byte sectors, boost clock 1.98 GHz.
[CPG] CUDA C++ Programming Guide, "Technical Specifications per Compute Capability" (9.0):
32 threads per warp, 1024 threads per block, 2048 threads and 32 blocks per SM, 48 KB of
static shared memory per block, 1 KB reserved per block, 32 banks of 4 bytes.
[H200-counters] Measured on the H200 (reports/nvidia-h200/h200_raw.json): a 128-bit local
load (LDS.128) takes two wavefronts even when its work-items read at most four distinct
16-byte words (``local_vector_min_wavefronts``).
[H200-codegen] Measured on the H200 (reports/nvidia-h200/codegen/): the same generated source
becomes different machine code in the two builds. NVIDIA's OpenCL driver compiles every
local load to a 32-bit LDS (its JIT output, read from the driver's compute cache), while
NVRTC, and the CUDA driver given the OpenCL driver's own PTX, merge four consecutive
words into one 128-bit LDS (``local_vector_words`` 1 for ``nvidia-h200``, the OpenCL build
tiletraffic runs, and 4 for ``nvidia-h200-cuda``, the CUDA build Nsight Compute reads).
[H200-l1-pipe] Measured on the H200 (reports/nvidia-h200/l1_pipe/, the OpenCL driver's own
cubins under Nsight Compute): every work-group barrier adds one wavefront to the L1 data
pipe's shared-memory side and one to its global side (``l1tex__data_pipe_lsu_wavefronts``
less the local loads', local stores' and global lines' wavefronts, per work-group barrier:
0.98-1.05 on the global side in the seven kernels with barriers, 0.99-1.24 on the shared
side in six, 1.95 in gemm-tiled B = 32 at N = 1024, whose few barriers are matched by the
two shared-side wavefronts every sub-group adds once in every kernel, barriers or not,
which the model leaves out) (``barrier_wavefronts_per_work_group`` = 2). Checked on seven
other launches predicted before they were measured (reports/nvidia-h200/l1_pipe/holdout/):
the model's L1 wavefronts within 0.54% of the count.
[H200-barrier-wait] Measured on the H200 (reports/nvidia-h200/barrier_wait/): the OpenCL
build of gemm-tiled B = 16 at N = 4096 waits 554 ns on average per K-tile from its first
global load to the barrier that releases it (``%clock64`` in work-item (0, 0);
``memory_latency_s`` = 550 ns); the other tiled launches measured waited 273-464 ns. The
value is one kernel's loaded wait (memory-system queueing included), the largest of the
six, so it stays in ``guessed`` for every other kernel.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace


class GuessedValueWarning(UserWarning):
    """A device-model value was not known and had to be guessed."""


@dataclass(frozen=True)
class DeviceModel:
    """What the memory-system and time models know about a device.

    Units are in the names: bytes, per-second rates, counts. ``l2_associativity``: ways of
    the L2 for the DRAM model (:func:`simulator.dram_model.miss_probability`); ``None`` means
    fully associative LRU. NVIDIA does not document it for the H200; 16 is a guess.
    ``l1_requests_per_cycle_per_cu``: global-memory requests (warp-level load and store
    instructions) the L1's tag stage accepts per cycle; not documented; 0.76 for the H200 is
    the rate its naive B = 32 GEMM reaches on its busiest SM, the way the time model charges
    it (Nsight's ``l1tex__t_requests`` x ⌈work-groups / 132⌉ / work-groups / ((duration -
    launch overhead) x 1.98 GHz): 0.761 at N = 1024, 0.760 at N = 4096; averaged over all
    SMs, 0.74 and 0.75), chosen with the measurements in view.
    ``local_vector_words``: words one local load instruction reads per work-item (4: the
    compiler merges consecutive words into 128-bit loads; 1: it does not) [H200-codegen].
    ``barrier_wavefronts_per_work_group``: L1 data-pipe wavefronts one work-group barrier
    costs (2 on the H200, read off its counters [H200-l1-pipe]).
    """

    name: str
    compute_units: int
    sub_group_size: int = 32
    sector_bytes: int = 32
    line_bytes: int = 128
    local_banks: int = 32
    bank_bytes: int = 4
    max_work_group_size: int = 1024
    max_work_items_per_cu: int = 2048
    max_work_groups_per_cu: int = 32
    local_mem_bytes_per_work_group: int = 48 * 1024
    local_mem_bytes_per_cu: int = 228 * 1024
    local_mem_reserved_bytes_per_work_group: int = 1024
    l1_bytes_per_cu: int = 256 * 1024
    l2_bytes: int = 50 * 2**20
    l2_associativity: int | None = 16
    dram_bytes_per_s: float = 4.8e12
    l2_bytes_per_s: float = 12e12
    clock_hz: float = 1.98e9
    l1_wavefronts_per_cycle_per_cu: float = 1.0
    l1_requests_per_cycle_per_cu: float = 1.0
    fp32_flop_per_s: float = 67e12
    launch_overhead_s: float = 3e-6
    local_vector_words: int = 4
    local_vector_min_wavefronts: int = 2
    barrier_wavefronts_per_work_group: int = 2
    memory_latency_s: float = 300e-9
    l1_sharing_work_groups: int = 2
    sources: str = ""
    guessed: tuple[str, ...] = field(default_factory=tuple)

    def warn_guesses(self) -> None:
        """Warn once per guessed value (:class:`GuessedValueWarning`)."""
        for name in self.guessed:
            warnings.warn(f"device model {self.name}: {name} = {getattr(self, name)} is a "
                          "guess, not a documented or queried value", GuessedValueWarning,
                          stacklevel=3)

    def resident_work_groups_per_cu(self, work_group_items: int, local_mem_bytes: int) -> int:
        """Work-groups one compute unit holds at once (occupancy), the smallest of the limits
        on work-groups, sub-groups (whole warps are allocated: ⌈items/32⌉ per work-group) and
        local memory per compute unit [CPG]. Registers are not modelled."""
        sub_groups = -(-max(work_group_items, 1) // self.sub_group_size)
        by_items = (self.max_work_items_per_cu // self.sub_group_size) // sub_groups
        per_group = local_mem_bytes + self.local_mem_reserved_bytes_per_work_group
        by_local = self.local_mem_bytes_per_cu // per_group if local_mem_bytes else \
            self.max_work_groups_per_cu
        return max(0, min(self.max_work_groups_per_cu, by_items, by_local))

    def active_compute_units(self, work_groups: int) -> int:
        """Compute units that receive at least one work-group."""
        return max(1, min(self.compute_units, work_groups))

    @property
    def l1_bytes_per_s(self) -> float:
        """L1/local-memory data rate: one 128-byte wavefront per cycle per compute unit."""
        return self.compute_units * self.clock_hz * self.l1_wavefronts_per_cycle_per_cu * \
            self.line_bytes


NVIDIA_H200 = DeviceModel(
    name="nvidia-h200", compute_units=132, local_vector_words=1,
    l1_requests_per_cycle_per_cu=0.76, memory_latency_s=550e-9,
    sources="[H200] [HWP] [CPG] [H200-counters] [H200-codegen] [H200-l1-pipe] "
            "[H200-barrier-wait] in simulator/device_model.py",
    guessed=("l2_bytes_per_s", "l1_wavefronts_per_cycle_per_cu",
             "l1_requests_per_cycle_per_cu", "launch_overhead_s", "memory_latency_s",
             "l1_sharing_work_groups", "l2_associativity"))
"""The H200 running the OpenCL build (what ``tiletraffic`` launches): scalar local loads."""

NVIDIA_H200_CUDA = replace(NVIDIA_H200, name="nvidia-h200-cuda", local_vector_words=4)
"""The same H200 running the CUDA build of the same source (NVRTC; what the Nsight Compute
counters of ``reports/nvidia-h200`` were read from): 128-bit local loads [H200-codegen]."""

GENERIC_GPU_MODEL = replace(
    NVIDIA_H200, name="generic-gpu", compute_units=64, l2_bytes=4 * 2**20,
    dram_bytes_per_s=1e12, l2_bytes_per_s=3e12, clock_hz=1.5e9, fp32_flop_per_s=20e12,
    local_mem_bytes_per_cu=64 * 1024, l1_bytes_per_cu=128 * 1024, sources="",
    local_vector_words=4, l1_requests_per_cycle_per_cu=1.0, memory_latency_s=300e-9,
    guessed=("compute_units", "l1_bytes_per_cu", "l2_bytes", "dram_bytes_per_s",
             "l2_bytes_per_s", "clock_hz", "fp32_flop_per_s", "local_mem_bytes_per_cu",
             "l1_wavefronts_per_cycle_per_cu", "l1_requests_per_cycle_per_cu",
             "launch_overhead_s", "memory_latency_s",
             "local_vector_words", "local_vector_min_wavefronts",
             "barrier_wavefronts_per_work_group", "l1_sharing_work_groups",
             "l2_associativity"))
"""A mid-range GPU with NVIDIA's granularities (32-wide sub-groups, 32-byte sectors, 32
banks); every size and rate is a guess and warns."""

DEVICE_MODELS = {m.name: m for m in (NVIDIA_H200, NVIDIA_H200_CUDA, GENERIC_GPU_MODEL)}


def device_model(name: str) -> DeviceModel:
    """The model called ``name``.

    Raises:
        KeyError: unknown name (the message lists the known ones).
    """
    try:
        return DEVICE_MODELS[name]
    except KeyError:
        raise KeyError(f"unknown device model {name!r}; known: {', '.join(DEVICE_MODELS)}") \
            from None
