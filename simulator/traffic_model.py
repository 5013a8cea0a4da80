"""Cache, DRAM and time predictions from the simulated access stream and a device model.

Methods (each figure says which produced it, in ``methods``):

* ``l1: per-work-group footprint`` — L1 misses are the distinct 32-byte sectors each
  work-group loads; re-reads of a sector by the same work-group hit. The misses are the
  sectors L2 sends to L1 (``l2_read_sectors``).
* ``l1: footprint shared by pairs of consecutive work-groups`` — as above, but work-groups
  2j and 2j+1 share one L1 (``DeviceModel.l1_sharing_work_groups = 2``). This pairing is not
  documented by NVIDIA: it was chosen because it fits the H200's L2→L1 sector counters (17
  cases within 22%, against 38–51% off without sharing), and is marked as a guess.
* ``dram: compulsory`` — when every global buffer fits in L2 together, each sector comes
  from DRAM once (reads: the inputs; writes: the output).
* ``dram: reuse distance, steady-state dispatch`` — otherwise, whether a buffer's re-reads
  still find it in L2 follows from how far apart (in work-group dispatch order) its readers
  are; see :mod:`simulator.dram_model`, which also gives ``dram: lock-step waves``
  (``dram_read_bytes_lockstep``), the estimate for work-groups that advance together.
* ``dram: fits in L2`` — when everything fits in L2 (with the copies its partitions keep,
  below), written lines stay there until after the kernel: no DRAM writes during it.
* ``dram: write-back of output lines evicted before the kernel ends`` — otherwise L2 (write-
  back) writes a dirty output line to DRAM only when it is evicted during the kernel; the
  lines still in L2 at its end (the last work-groups' output, up to what the L2 holds beside
  the inputs they stream) are written after it and not counted
  (:func:`simulator.dram_model.dram_writes_write_back`). With ``l2_partitions = 2`` (the
  H200) a line takes the capacity of a copy in each partition that read it
  (:func:`simulator.dram_model.partition_copies`). Not modelled: dirty lines other
  kernels or copies left in L2, which the H200 writes back during a kernel that streams
  more than the L2 (about 2.1–2.9 MB in every such committed launch, even matrix-vector
  products writing 16 KB).
* ``time: ceilings + barrier latency by mean value analysis + tail + launch overhead`` — the
  time of the busiest resource is the largest of: FLOPs at the FP32 rate, DRAM bytes at
  DRAM bandwidth, L2→L1 bytes at L2 bandwidth, L1 wavefronts (one 128-byte line per global
  request line, one per local-memory wavefront, ``barrier_wavefronts_per_work_group`` per
  work-group barrier) at ``l1_wavefronts_per_cycle_per_cu``; when the device model gives
  their cost, requests of two or more lines (:mod:`simulator.strides`: strided ones touch 8
  or more) cost instead ``l1_strided_cycles_per_line`` per line +
  ``l1_strided_cycles_per_busiest_bank_line`` per line of their busiest 4-byte bank
  (``tiletraffic calibrate``'s ``strided_read``; :func:`l1_cycles`); with
  ``strided_dram_fill_sub_group_cycles_per_line`` the lines those requests' arrays fill
  from DRAM are a ceiling of their own (``l1_strided_dram_s``, :func:`strided_fill_s`: a
  sub-group's cost per line over the unit's resident sub-groups,
  ``tiletraffic calibrate``'s ``strided_read_dram``), and global requests at
  ``l1_requests_per_cycle_per_cu`` (the L1 tag stage), the last two for the compute unit
  with the most work-groups (⌈work-groups / compute units⌉ of them: a launch of 16
  work-groups uses 16 compute units, one of 133 puts two on one of 132) (the roofline
  model: Williams, Waterman, Patterson, CACM 2009), and the sub-group instructions the
  simulator knows of (:func:`issued_instructions`: FMAs, loads, stores, barriers) at
  ``warp_instructions_per_cycle_per_sub_partition`` on each of the unit's
  ``sub_partitions_per_cu`` schedulers (``issue_s``; GH100: four schedulers, one warp
  instruction per cycle each, H100 whitepaper). A kernel with barriers adds the memory
  latency its work-groups cannot hide: each barrier interval in which a work-group loads
  from global memory ends in one memory latency (``memory_latency_s``) before the
  work-group can go on (with ``memory_latency_dram_s``, the delay of an interval one of
  whose loads misses L2 weighs in by the chance of such a miss, :func:`interval_latency_s`).
  On that compute unit, its work-groups (as many as are resident, or
  as it is given, if fewer) form a closed queueing network of the busy resource (service
  demand per interval: its time / the unit's intervals) and that latency (a delay
  station); its throughput is solved exactly by mean value analysis (Reiser and
  Lavenberg, J. ACM 27(2), 1980; Lazowska et al., *Quantitative System Performance*, 1984,
  ch. 6), and the time beyond the busy resource's is the exposed latency
  (``barrier_latency_s``). When a compute unit gets more work-groups than it holds at once,
  its last ones run with fewer companions, which hide less of each other's latency: the
  tail (``tail_s``, :func:`tail_latency_s`; the work-groups of kernels with barriers start
  one by one as others end, as the H200's timelines show, ``reports/nvidia-h200/dispatch``).
  Plus the launch overhead.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np

from .counters import AccessEvent, Observer, TrafficCounts
from .device_model import DeviceModel
from .dram_model import (BufferReads, dram_reads_lockstep, dram_reads_steady_state,
                         dram_writes_write_back)
from .memory import MemoryCounts
from .schedule import FLOAT_BYTES, Schedule
from .strides import (STRIDED_DRAM_METHOD, STRIDED_METHOD, StridedRequests,
                      StridedRequestWarning, StrideObserver, strided_declaration,
                      strided_dram_fill_cycles, strided_l1_cycles)


class FootprintObserver(Observer):
    """Distinct sectors loaded per work-group, weighted by work-group classes.

    With ``sharing=2`` and ``offsets`` (element offset of each buffer's loads between
    neighbouring work-groups in dimension 0), a pair of consecutive work-groups shares one
    L1: each work-group is charged half of ``|S ∪ (S + shift)|``, S its own sectors.
    """

    def __init__(self, sector_bytes: int = 32, sharing: int = 1,
                 offsets: dict[str, int | None] | None = None):
        if sharing not in (1, 2):
            raise ValueError(f"L1 sharing of {sharing} work-groups is not modelled (1 or 2)")
        self.sector_bytes = sector_bytes
        self.sharing = sharing
        self.offsets = offsets or {}
        self.sectors_by_buffer: dict[str, float] = {}
        self.own_sectors_by_buffer: dict[str, float] = {}
        self._pending: dict[str, list[np.ndarray]] = {}
        self.weights = None

    def on_batch(self, group_index, work_items, weights=None) -> None:
        self._flush()
        self.weights = weights
        self.groups = len(group_index)

    def on_access(self, ev: AccessEvent) -> None:
        if ev.space != "global" or ev.direction != "load" or not np.any(ev.mask):
            return
        shape = ev.shape
        mask = np.broadcast_to(ev.mask, shape)
        sector = np.broadcast_to(np.asarray(ev.index) * FLOAT_BYTES // self.sector_bytes, shape)
        keep = _first_of_runs(sector, mask)
        g = np.broadcast_to(np.arange(shape[0]).reshape(-1, 1, 1), shape)[keep]
        self._pending.setdefault(ev.array, []).append(
            _sorted_unique(g * (1 << 40) + sector[keep]))

    def _shift(self, name: str) -> int | None:
        offset = self.offsets.get(name)
        if self.sharing == 1 or offset is None or offset * FLOAT_BYTES % self.sector_bytes:
            return None
        return offset * FLOAT_BYTES // self.sector_bytes

    def _add(self, totals: dict[str, float], name: str, per_group: np.ndarray) -> None:
        """Add the class-weighted sum of ``per_group`` to ``totals[name]``."""
        total = per_group.sum() if self.weights is None else per_group @ self.weights
        totals[name] = totals.get(name, 0) + float(total)

    def _flush(self) -> None:
        for name, parts in self._pending.items():
            keys = _sorted_unique(np.concatenate(parts))
            per_group = np.bincount(keys >> 40, minlength=self.groups).astype(float)
            self._add(self.own_sectors_by_buffer, name, per_group)
            shift = self._shift(name)
            if shift is not None:
                shared = _in_sorted(keys + shift, keys)
                per_group -= np.bincount(keys[shared] >> 40, minlength=self.groups) / 2
            self._add(self.sectors_by_buffer, name, per_group)
        self._pending = {}

    def on_finish(self) -> None:
        self._flush()


def _first_of_runs(sector: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The executed entries of a ``(G, L, I)`` access whose sector differs from that of the
    executed entry before them in work-item (L) and in iteration (I): the first executed
    entry of every (work-group, sector) is among them, so the distinct sectors per
    work-group are those of the kept entries (fewer to sort: neighbouring work-items and
    iterations mostly share sectors)."""
    keep = np.array(mask)
    for axis in (1, 2):
        if sector.shape[axis] > 1:
            later = (slice(None),) * axis + (slice(1, None),)
            earlier = (slice(None),) * axis + (slice(None, -1),)
            keep[later] &= ~((sector[later] == sector[earlier]) & mask[earlier])
    return keep


def _sorted_unique(values: np.ndarray) -> np.ndarray:
    """``np.unique`` of a 1-D integer array, by sorting: the same sorted distinct values.
    (numpy >= 2.3 finds them by hashing, which took 10-20 times longer than a sort on the
    tens of millions of sector keys of an N = 4096 GEMM.)"""
    s = np.sort(values)
    return s[np.concatenate(([True], s[1:] != s[:-1]))] if s.size else s


def _in_sorted(values: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """``np.isin(values, keys)`` for ``keys`` sorted and distinct, by binary search."""
    if not keys.size:
        return np.zeros(values.shape, dtype=bool)
    pos = np.minimum(np.searchsorted(keys, values), keys.size - 1)
    return keys[pos] == values


class LoadPhaseObserver(Observer):
    """Counts, per work-group, the barrier intervals in which it loads from global memory.

    Each such interval ends at a barrier that no work-item passes before the slowest load of
    its work-group has returned: one memory latency the work-group cannot hide itself.
    """

    def __init__(self):
        self.phases = 0
        self.weights = None

    def on_batch(self, group_index, work_items, weights=None) -> None:
        self.weights = weights
        self.loading = np.zeros(len(group_index), dtype=bool)

    def on_access(self, ev: AccessEvent) -> None:
        if ev.space == "global" and ev.direction == "load":
            self.loading |= np.broadcast_to(ev.mask, ev.shape).any(axis=(1, 2))

    def on_barrier(self, group_index, arrived) -> None:
        ended = self.loading & (np.asarray(arrived) > 0)
        per_group = ended.astype(np.int64)
        self.phases += int(per_group.sum() if self.weights is None else per_group @ self.weights)
        self.loading &= ~ended


WRITE_BACK_METHOD = "dram: write-back of output lines evicted before the kernel ends"
"""``methods["dram_write_bytes"]`` when the buffers do not fit in L2 together."""

ADDED_TIME_TERMS = ("barrier_latency_s", "tail_s", "launch_overhead_s")
"""The time terms added to the largest ceiling (:attr:`TrafficPrediction.time_terms_s`)."""


@dataclass
class TrafficPrediction:
    """Predicted cache/DRAM traffic and time of one launch on one device model."""

    device_model: str
    l2_read_sectors: int
    l1_load_hit_rate: float
    dram_read_bytes: int
    dram_write_bytes: int
    l1_wavefronts: int
    time_terms_s: dict[str, float]
    """Seconds. The ceilings ``fp32_s``, ``dram_s``, ``l2_s``, ``l1_s``, ``l1_requests_s`` and
    ``issue_s``, and ``l1_strided_dram_s`` where the device model has strided requests'
    fills from DRAM (the largest names :attr:`bound`), then the terms added to it:
    ``barrier_latency_s``,
    ``tail_s`` and ``launch_overhead_s``. ``predicted_time_s`` = the largest ceiling + the
    three added terms."""
    predicted_time_s: float
    bound: str
    arithmetic_intensity_flop_per_byte: float
    resident_work_groups_per_cu: int
    waves: float
    work_groups_per_cu: int = 1
    """Work-groups the busiest compute unit gets (⌈work-groups / compute units used⌉)."""
    dram_read_bytes_lockstep: int = 0
    barrier_intervals_per_cu: float = 0.0
    """Barrier intervals with global loads on the busiest compute unit (the mean value
    analysis' and the tail's intervals)."""
    registers_per_work_item: int | None = None
    """The registers per work-item the occupancy was computed with (None: not modelled)."""
    methods: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def closed_network_throughput(customers: int, demand_s: float, delay_s: float) -> float:
    """Throughput (completions per second) of ``customers`` circulating between one queueing
    station with service demand ``demand_s`` and a delay station of ``delay_s``: exact mean
    value analysis (Reiser and Lavenberg, J. ACM 27(2), 1980, the recursion of Lazowska et
    al., *Quantitative System Performance*, 1984, section 6.3).

    Raises:
        ValueError: fewer than one customer, or a negative or non-finite demand or delay.
    """
    return closed_network_throughputs(customers, demand_s, delay_s)[-1]


def closed_network_throughputs(customers: int, demand_s: float, delay_s: float
                               ) -> list[float]:
    """The throughputs X(1), ..., X(``customers``) of :func:`closed_network_throughput`'s
    network, from one pass of the recursion.

    Raises:
        ValueError: fewer than one customer, or a negative or non-finite demand or delay.
    """
    if customers < 1 or not (0 <= demand_s < math.inf) or not (0 <= delay_s < math.inf):
        raise ValueError(f"closed network needs customers >= 1 and finite non-negative "
                         f"times, got {customers}, {demand_s}, {delay_s}")
    queue = 0.0
    out = []
    for n in range(1, customers + 1):
        residence = demand_s * (1 + queue)
        throughput = n / (residence + delay_s) if residence + delay_s > 0 else math.inf
        queue = throughput * residence
        out.append(throughput)
    return out


def l2_miss_fraction(model: DeviceModel, dram_read_bytes: float, l2_read_sectors: float
                     ) -> float:
    """The launch's L2 miss fraction: ``dram_read_bytes`` / (``l2_read_sectors`` x
    ``sector_bytes``), clipped to 0..1 (0 without L2 reads)."""
    if l2_read_sectors <= 0:
        return 0.0
    return min(1.0, max(0.0, dram_read_bytes / (l2_read_sectors * model.sector_bytes)))


def strided_fill_s(strided: StridedRequests | None, footprint: FootprintObserver,
                   model: DeviceModel, dram_read_bytes: float, l2_read_sectors: float,
                   sub_groups_per_cu: int) -> float | None:
    """Seconds the launch's compute units together need to fill from DRAM the L1 lines its
    strided requests load (each array's L1 misses, ``footprint``'s sectors / sectors per
    line, times the share of its load requests that are strided,
    :meth:`simulator.strides.StridedRequests.strided_share`; the part from DRAM:
    :func:`l2_miss_fraction`), each unit with
    ``sub_groups_per_cu`` resident sub-groups (:func:`simulator.strides.
    strided_dram_fill_cycles`); the caller scales it to the busiest unit. ``None`` when the
    device model lacks ``strided_dram_fill_sub_group_cycles_per_line`` (0) or the launch
    has no strided requests."""
    cycles = model.strided_dram_fill_sub_group_cycles_per_line
    if cycles <= 0 or not strided or not strided.arrays:
        return None
    lines = (sum(footprint.sectors_by_buffer.get(a, 0.0) * strided.strided_share(a)
                 for a in sorted(strided.arrays))
             * model.sector_bytes / model.line_bytes)
    miss = l2_miss_fraction(model, dram_read_bytes, l2_read_sectors)
    return strided_dram_fill_cycles(lines, miss, cycles, sub_groups_per_cu) / model.clock_hz


def interval_latency_s(model: DeviceModel, dram_read_bytes: float, l2_read_sectors: float,
                       load_phases: float) -> float:
    """The delay that ends a barrier interval with global loads: the interval waits for its
    slowest load, which comes from DRAM if any of the interval's s = ``l2_read_sectors`` /
    ``load_phases`` sectors read from L2 misses there. With f = ``dram_read_bytes`` / (L2
    sectors x ``sector_bytes``) the launch's L2 miss fraction, taken as independent per
    sector, that happens with probability p = 1 - (1 - f)^s, and the delay is
    ``memory_latency_s`` + p x (``memory_latency_dram_s`` - ``memory_latency_s``)
    (tiletraffic's model; the two delays are ``tiletraffic calibrate``'s
    ``staging_round_trip`` over an L2-resident buffer and over one more than 4 x the L2). A model
    without ``memory_latency_dram_s`` (0) gives ``memory_latency_s``."""
    if model.memory_latency_dram_s <= 0 or load_phases <= 0 or l2_read_sectors <= 0:
        return model.memory_latency_s
    miss = l2_miss_fraction(model, dram_read_bytes, l2_read_sectors)
    sectors = l2_read_sectors / load_phases
    p = 1.0 - (1.0 - miss) ** sectors
    return model.memory_latency_s + p * (model.memory_latency_dram_s - model.memory_latency_s)


def exposed_latency_s(busy_s: float, phases_per_cu: float, resident: int,
                      latency_s: float) -> float:
    """Time a compute unit adds to ``busy_s`` (its busiest resource's time) because each of
    ``phases_per_cu`` barrier intervals ends in a memory latency that only the other
    resident work-groups can overlap (:func:`closed_network_throughput` with ``resident``
    work-groups, demand ``busy_s / phases_per_cu`` and delay ``latency_s``). 0 without
    such intervals."""
    if phases_per_cu <= 0:
        return 0.0
    demand = busy_s / phases_per_cu
    throughput = closed_network_throughput(max(1, resident), demand, latency_s)
    return max(0.0, phases_per_cu / throughput - busy_s)


def tail_latency_s(busy_s: float, phases_per_cu: float, work_groups_per_cu: int,
                   resident: int, latency_s: float) -> float:
    """Time a compute unit adds at the end of a kernel because its last work-groups run with
    fewer companions than ``resident`` (the tail effect).

    Assumes steady-state dispatch: when the unit's last work-group starts, its ``resident``
    work-groups R are spread evenly over their work (observed on the H200's timelines of
    tiled kernels, ``reports/nvidia-h200/dispatch``, not derived: work-groups that start
    together drift apart because the unit does not serve them equally), the i-th from the
    end having i / R of a work-group's P = ``phases_per_cu`` / ``work_groups_per_cu``
    barrier intervals left. They
    end one by one; while n remain, the unit completes X(n) intervals per second
    (:func:`closed_network_throughput` with n customers, demand ``busy_s`` /
    ``phases_per_cu``, delay ``latency_s``), shared equally. The drain then takes
    sum over n = 1..R of (P / R) n / X(n), against P (R + 1) / (2 X(R)) had R stayed resident,
    which :func:`exposed_latency_s` charges; the difference is returned. It is 0 when the
    unit never has more work-groups than it holds (a single wave: charged nothing, not
    checked against a measurement), without barrier intervals, and without latency
    (X(n) = 1 / demand for every n). It jumps from 0 to its full value at one work-group
    more than the unit holds.

    Example: P = 10 intervals per work-group, R = 4, no work, 1 us latency: X(n) = n / 1 us,
    the drain takes 4 x 2.5 us = 10 us against 10 x 5 / 8 = 6.25 us: 3.75 us of tail.
    """
    if phases_per_cu <= 0 or resident < 1 or work_groups_per_cu <= resident:
        return 0.0
    per_group = phases_per_cu / work_groups_per_cu
    throughputs = closed_network_throughputs(resident, busy_s / phases_per_cu, latency_s)
    steady = per_group * (resident + 1) / 2 / throughputs[-1]
    return max(0.0, _drain(per_group, throughputs) - steady)


def _drain(per_group: float, throughputs: list[float]) -> float:
    """sum over n = 1..R of (P / R) n / X(n), X = ``throughputs``, R their number."""
    resident = len(throughputs)
    return sum(per_group / resident * n / x for n, x in enumerate(throughputs, start=1))


def drain_time_s(busy_s: float, phases_per_cu: float, work_groups_per_cu: int,
                 resident: int, latency_s: float) -> float:
    """How long a compute unit's drain lasts in :func:`tail_latency_s`'s model: from the
    start of its last work-group (which then has all of its P intervals ahead of it) to the
    end of it, sum over n = 1..R of (P / R) n / X(n). Comparable with a measured timeline
    (last start to last end on a compute unit). 0 without barrier intervals.

    Raises:
        ValueError: ``resident`` < 1 or ``work_groups_per_cu`` < 1.
    """
    if resident < 1 or work_groups_per_cu < 1:
        raise ValueError(f"a drain needs resident >= 1 and work_groups_per_cu >= 1, got "
                         f"{resident}, {work_groups_per_cu}")
    if phases_per_cu <= 0:
        return 0.0
    return _drain(phases_per_cu / work_groups_per_cu,
                  closed_network_throughputs(resident, busy_s / phases_per_cu, latency_s))


def buffer_reads(schedule: Schedule, footprint: FootprintObserver, model: DeviceModel,
                 offsets: tuple[dict[str, int | None], dict[str, int | None]] = ({}, {})
                 ) -> dict[str, BufferReads]:
    """What the DRAM model needs of each loaded buffer: bytes L2 is asked for (the
    footprint's sectors), the buffer's size and its load offsets between neighbouring
    work-groups in dimensions 0 and 1 (:class:`simulator.dram_model.BufferReads`)."""
    p = schedule.param_values
    sizes = {a.name: int(np.prod([p[s] for s in a.shape])) * FLOAT_BYTES for a in schedule.arrays}
    return {name: BufferReads(sectors * model.sector_bytes, sizes[name],
                              offsets[0].get(name), offsets[1].get(name),
                              footprint.own_sectors_by_buffer[name] * model.sector_bytes)
            for name, sectors in footprint.sectors_by_buffer.items()}


def predict(schedule: Schedule, counts: TrafficCounts, memory: MemoryCounts,
            footprint: FootprintObserver, model: DeviceModel,
            load_phases: int = 0,
            offsets: tuple[dict[str, int | None], dict[str, int | None]] = ({}, {}),
            strided: StridedRequests | None = None,
            registers_per_work_item: int | None = None, *,
            stacklevel: int = 2) -> TrafficPrediction:
    """Combine the exact counts with ``model`` into cache, DRAM and time predictions
    (``stacklevel``: as :func:`warnings.warn`'s for its :class:`StridedRequestWarning`; 2
    names the caller's line).

    ``offsets``: element offsets of each buffer's loads between neighbouring work-groups in
    NDRange dimensions 0 and 1 (:func:`simulator.classes.load_offsets`), for the DRAM model.
    ``strided``: the launch's strided global requests (:class:`simulator.strides.
    StrideObserver`); when their lines are a tenth or more of the L1 wavefronts,
    ``methods["l1_strided_requests"]`` declares the L1 time outside what the model predicts
    and a :class:`simulator.strides.StridedRequestWarning` says so.
    ``registers_per_work_item``: limits the resident work-groups
    (:meth:`DeviceModel.resident_work_groups_per_cu`); None: registers not modelled.
    """
    p = schedule.param_values
    sizes = {a.name: int(np.prod([p[s] for s in a.shape])) * FLOAT_BYTES for a in schedule.arrays}
    inputs = sum(v for a, v in sizes.items() if schedule.array(a).is_input)
    outputs = sum(v for a, v in sizes.items() if schedule.array(a).is_output)
    l2_read_sectors = int(round(sum(footprint.sectors_by_buffer.values())))
    hit = 1 - l2_read_sectors / memory.global_load_sectors if memory.global_load_sectors else 0.0
    methods = {"l2_read_sectors": "l1: per-work-group footprint" if footprint.sharing == 1
               else "l1: footprint shared by pairs of consecutive work-groups"}
    resident = model.resident_work_groups_per_cu(schedule.work_group_items,
                                                 schedule.local_mem_bytes,
                                                 registers_per_work_item)
    if inputs + outputs <= model.l2_bytes:
        dram_read = dram_lockstep = inputs
        methods["dram_read_bytes"] = "dram: compulsory"
    else:
        buffers = buffer_reads(schedule, footprint, model, offsets)
        shape = (counts.work_groups, schedule.num_groups[0])
        concurrent = resident * model.compute_units
        l2 = (model.l2_bytes, concurrent, model.l2_associativity)
        dram_read = int(round(dram_reads_steady_state(buffers, outputs, *shape, *l2)))
        dram_lockstep = int(round(dram_reads_lockstep(buffers, outputs, *shape, *l2)))
        methods["dram_read_bytes"] = "dram: reuse distance, steady-state dispatch"
        methods["dram_read_bytes_lockstep"] = "dram: lock-step waves"
    dram_write = int(round(dram_writes_write_back(
        buffer_reads(schedule, footprint, model, offsets), outputs, counts.work_groups,
        schedule.num_groups[0], model.l2_bytes, model.l2_associativity, model.l2_partitions)))
    methods["dram_write_bytes"] = (WRITE_BACK_METHOD if dram_write else
                                   "dram: fits in L2 (written back after the kernel)")
    l1_wavefronts = (memory.global_load_lines + memory.global_store_lines
                     + memory.local_load_wavefronts + memory.local_store_wavefronts
                     + model.barrier_wavefronts_per_work_group * counts.barriers)
    strided_cycles = strided_l1_cycles(strided, model.l1_strided_cycles_per_line,
                                       model.l1_strided_cycles_per_busiest_bank_line) \
        if strided and strided.modelled_lines else None
    declared = strided_declaration(strided, l1_wavefronts) \
        if strided and strided_cycles is None else None
    if strided_cycles is not None:
        methods["l1_strided_requests"] = STRIDED_METHOD
    if declared:
        methods["l1_strided_requests"] = declared
        warnings.warn(f"{schedule.kernel_name}: {declared}", StridedRequestWarning,
                      stacklevel=stacklevel)
    active = model.active_compute_units(counts.work_groups)
    # per-compute-unit resources are charged for the compute unit with the most work-groups
    # (work-groups are indivisible: a launch of 133 on 132 units puts two on one of them)
    per_cu_groups = -(-counts.work_groups // active)
    share = per_cu_groups / max(1, counts.work_groups)
    terms = {
        "fp32_s": counts.flop / model.fp32_flop_per_s,
        "dram_s": (dram_read + dram_write) / model.dram_bytes_per_s,
        "l2_s": l2_read_sectors * model.sector_bytes / model.l2_bytes_per_s,
        "l1_s": l1_cycles(l1_wavefronts,
                          strided.modelled_lines if strided_cycles is not None else 0,
                          strided_cycles or 0.0, model) * share / model.clock_hz,
        "l1_requests_s": (memory.global_load_requests + memory.global_store_requests) * share
        / (model.clock_hz * model.l1_requests_per_cycle_per_cu),
        "issue_s": issued_instructions(schedule, counts, memory, model) * share
        / (model.clock_hz * model.sub_partitions_per_cu
           * model.warp_instructions_per_cycle_per_sub_partition),
    }
    customers = min(resident, per_cu_groups)
    # at least one work-group's sub-groups: resident is 0 when one work-group does not fit
    # (estimated registers), which the latency terms also count as one
    fill = strided_fill_s(strided, footprint, model, dram_read, l2_read_sectors,
                          max(1, customers)
                          * -(-max(1, schedule.work_group_items) // model.sub_group_size))
    if fill is not None:
        terms["l1_strided_dram_s"] = fill * share
        methods["l1_strided_dram"] = STRIDED_DRAM_METHOD
    bound = max(terms, key=terms.get)
    intervals = load_phases * share   # barrier intervals with global loads on that unit
    latency = interval_latency_s(model, dram_read, l2_read_sectors, load_phases)
    terms["barrier_latency_s"] = exposed_latency_s(terms[bound], intervals, customers, latency)
    terms["tail_s"] = tail_latency_s(terms[bound], intervals, per_cu_groups, customers, latency)
    terms["launch_overhead_s"] = model.launch_overhead_s
    methods["predicted_time_s"] = ("time: ceilings + barrier latency by mean value analysis "
                                   "+ tail + launch overhead")
    waves = counts.work_groups / max(1, resident * model.compute_units)
    return TrafficPrediction(
        device_model=model.name, l2_read_sectors=l2_read_sectors, l1_load_hit_rate=hit,
        dram_read_bytes=dram_read, dram_write_bytes=dram_write, l1_wavefronts=l1_wavefronts,
        time_terms_s=terms,
        predicted_time_s=terms[bound] + sum(terms[k] for k in ADDED_TIME_TERMS),
        bound=bound.removesuffix("_s"),
        arithmetic_intensity_flop_per_byte=counts.flop / max(1, dram_read + dram_write),
        resident_work_groups_per_cu=resident, waves=waves, work_groups_per_cu=per_cu_groups,
        dram_read_bytes_lockstep=dram_lockstep, barrier_intervals_per_cu=intervals,
        registers_per_work_item=registers_per_work_item, methods=methods)


def l1_cycles(l1_wavefronts: int, modelled_strided_lines: int, strided_cycles: float,
              model: DeviceModel) -> float:
    """Cycles of the launch's L1 wavefronts (all compute units together): one wavefront per
    ``1 / l1_wavefronts_per_cycle_per_cu`` cycles, except the ``modelled_strided_lines``
    of strided requests whose cost the device model gives, which cost ``strided_cycles``
    (:func:`simulator.strides.strided_l1_cycles`) instead (0 and 0: none modelled)."""
    return ((l1_wavefronts - modelled_strided_lines) / model.l1_wavefronts_per_cycle_per_cu
            + strided_cycles)


def issued_instructions(schedule: Schedule, counts: TrafficCounts, memory: MemoryCounts,
                        model: DeviceModel) -> float:
    """Sub-group (warp) instructions of the launch that the simulator knows of: one FMA per
    2 FLOP of a sub-group (``counts.flop`` / 2 x sub-groups / work-items per work-group:
    every multiply fused with an add, as the multiply-accumulates of the built-in
    schedules are; a lone add would be one instruction for 1 FLOP, so this is a lower
    bound), one per global and local load and store request (:mod:`simulator.memory`: a
    request is one instruction of one sub-group) and one per sub-group per work-group
    barrier. Address arithmetic, loop counters, branches and the moves of private values
    are not counted (the simulator does not know how the compiler emits them): a lower
    bound on what the sub-partitions issue."""
    items = max(1, schedule.work_group_items)
    sub_groups = -(-items // model.sub_group_size)
    return (counts.flop / 2 * sub_groups / items
            + memory.global_load_requests + memory.global_store_requests
            + memory.local_load_requests + memory.local_store_requests
            + counts.barriers * sub_groups)


@dataclass
class ModelledLaunch:
    """Exact counts, memory-system counts and predictions of one launch."""

    counts: TrafficCounts
    memory: MemoryCounts
    prediction: TrafficPrediction
    buffers: dict[str, BufferReads] = field(default_factory=dict)
    """Per loaded buffer, what the DRAM model was given (:func:`buffer_reads`)."""

    def to_dict(self) -> dict:
        """Flat JSON-ready mapping: the traffic counters, then the memory-system ones, then
        the predictions (keys as documented for ``tiletraffic simulate --json``)."""
        pred = self.prediction.to_dict()
        return {**self.counts.to_dict(), **self.memory.to_dict(), **pred}


@dataclass
class LaunchObservation:
    """What :func:`predict` needs of one simulated launch: the exact counts, the
    memory-system counts, the footprint observer (its ``sectors_by_buffer`` and
    ``own_sectors_by_buffer``), the barrier intervals with global loads and the load offsets
    between neighbouring work-groups in NDRange dimensions 0 and 1."""

    counts: TrafficCounts
    memory: MemoryCounts
    footprint: FootprintObserver
    load_phases: int
    offsets: tuple[dict[str, int | None], dict[str, int | None]]
    strides: object = None
    """:class:`simulator.strides.StridedRequests` of the launch."""


def observe_launch(schedule: Schedule, model: DeviceModel, *,
                   work_group_classes: bool = True, limits=None,
                   blocked_loops: bool | None = None) -> LaunchObservation:
    """Simulate ``schedule`` (counts only) with the memory-system observers of ``model``.

    ``blocked_loops`` (default: with ``work_group_classes``, unless the environment sets
    ``TILETRAFFIC_LOOP_BLOCKS=0``): first run loops in blocks of iterations where
    :mod:`simulator.loop_blocks` proves the counts identical; if that run raises anything
    (a hazard, whose example could differ, or a blocked loop's ``Let`` read after it), run
    again iteration by iteration, which gives the result or error of the old path.

    Raises:
        simulator.device.LimitError, simulator.hazards.HazardError: as :func:`simulate`.
    """
    from .loop_blocks import LOOP_BLOCKS

    if blocked_loops is None:
        blocked_loops = work_group_classes and LOOP_BLOCKS
    if blocked_loops:
        try:
            return _observe_launch(schedule, model, work_group_classes, limits, True)
        except Exception:   # noqa: BLE001 - decided by the iteration-by-iteration run below
            pass
    return _observe_launch(schedule, model, work_group_classes, limits, False)


def _observe_launch(schedule: Schedule, model: DeviceModel, work_group_classes: bool,
                    limits, blocked_loops: bool) -> LaunchObservation:
    from .classes import load_offsets
    from .engine import probe_runner, simulate
    from .memory import MemoryObserver

    memory = MemoryObserver(model.sub_group_size, model.sector_bytes, model.line_bytes,
                            model.local_banks, model.bank_bytes, model.local_vector_words,
                            model.local_vector_min_wavefronts)
    runner = probe_runner(schedule, blocked_loops)
    offsets = (load_offsets(schedule, runner, 0), load_offsets(schedule, runner, 1))
    footprint = FootprintObserver(model.sector_bytes, model.l1_sharing_work_groups, offsets[0])
    phases = LoadPhaseObserver()
    strides = StrideObserver(model.sub_group_size, model.line_bytes,
                             bank_bytes=model.bank_bytes, banks=model.local_banks)
    result = simulate(schedule, compute_values=False, limits=limits or device_limits(model),
                      observers=[memory, footprint, phases, strides],
                      work_group_classes=work_group_classes, blocked_loops=blocked_loops)
    return LaunchObservation(result.counts, memory.counts, footprint, phases.phases, offsets,
                             strides.counts)


def device_limits(model: DeviceModel):
    """The :class:`simulator.device.DeviceLimits` a launch on ``model`` must respect."""
    from .device import DeviceLimits

    return DeviceLimits(model.name, model.max_work_group_size, (1024, 1024, 64),
                        model.local_mem_bytes_per_work_group)


def model_launch(schedule: Schedule, model: DeviceModel, *,
                 work_group_classes: bool = True,
                 registers_per_work_item: int | None = None,
                 k_extrapolation: bool = True, stacklevel: int = 1) -> ModelledLaunch:
    """Simulate ``schedule`` (counts only, by work-group classes) with the memory-system
    observers of ``model`` and predict cache, DRAM and time.

    ``k_extrapolation`` (with ``work_group_classes``): for the built-in families, simulate
    three smaller K (the reduction length) and extrapolate every count to the real K where
    all of them are proved affine (:mod:`simulator.k_extrapolation`); the result equals
    full execution exactly. ``False`` (or a schedule it does not apply to) executes the
    whole K loop.

    ``registers_per_work_item``: the compiled kernel's registers per work-item (NVIDIA:
    ``RunResult.registers_per_work_item``, from the ``-cl-nv-verbose`` build log); they
    limit the resident work-groups. Without it, a schedule with private arrays gets an
    estimate (:func:`simulator.registers.estimate_registers`, a guess: warned with a
    :class:`GuessedValueWarning` and named in ``methods``); other schedules are modelled
    without a register limit.

    Its warnings (guessed values, estimated registers, strided requests) name the line
    ``stacklevel`` frames up from here: 1 (default) the caller's, 2 its caller's (the
    ``tiletraffic.model`` facade passes 2, so a user's script sees its own line).

    Raises:
        simulator.device.LimitError, simulator.hazards.HazardError: as :func:`simulate`.
        ValueError: ``registers_per_work_item`` not a positive integer, above the model's
            ``max_registers_per_work_item``, or too many for one work-group to run.
    """
    from .device import check_schedule_limits
    from .device_model import GuessedValueWarning
    from .registers import estimate_registers

    model.warn_guesses(stacklevel=2 + stacklevel)
    registers, how = registers_per_work_item, None
    if registers is not None:
        model.register_limited_work_groups_per_cu(schedule.work_group_items, registers)
        problem = model.work_group_register_problem(schedule.work_group_items, registers)
        if problem:
            raise ValueError(f"{schedule.family}: {problem}")
        how = f"registers per work-item: {registers} (given)"
    elif (estimate := estimate_registers(schedule, model.max_registers_per_work_item)):
        registers, how = estimate.registers_per_work_item, estimate.describe()
        warnings.warn(f"{schedule.family}: {how}; pass the compiled kernel's count "
                      "(registers_per_work_item, --registers)", GuessedValueWarning,
                      stacklevel=1 + stacklevel)
    limits = device_limits(model)
    observed = None
    if k_extrapolation and work_group_classes:
        from .k_extrapolation import extrapolated_observation

        check_schedule_limits(schedule, limits)
        observed = extrapolated_observation(schedule, lambda s: observe_launch(
            s, model, limits=limits), model.local_vector_words)
    if observed is None:
        observed = observe_launch(schedule, model, work_group_classes=work_group_classes,
                                  limits=limits)
    prediction = predict(schedule, observed.counts, observed.memory, observed.footprint,
                         model, observed.load_phases, observed.offsets, observed.strides,
                         registers, stacklevel=2 + stacklevel)
    if how is not None:
        prediction.methods["resident_work_groups_per_cu"] = (
            f"occupancy: work-groups, sub-groups, local memory and registers ({how})")
    return ModelledLaunch(observed.counts, observed.memory, prediction,
                          buffer_reads(schedule, observed.footprint, model, observed.offsets))
