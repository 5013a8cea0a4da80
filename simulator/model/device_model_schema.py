"""Device models: the values the memory-system and time models need, each with its source.

A :class:`DeviceModel` is plain data: read from a model file by
:mod:`simulator.model.device_model_file`, the built-in ones looked up by name in
:mod:`simulator.model.device_model`.

Every value carries its source (:class:`ValueSource`), one of :data:`SOURCE_KINDS`:
``documented`` (a document, cited in the file's ``[references]``), ``queried`` (an OpenCL
device query), ``measured`` (a benchmark and its data folder, cited in ``[references]``) or
``guessed`` (with why that number). The guessed values are listed in ``guessed`` (in file
order) and reported with a :class:`GuessedValueWarning`, never assumed silently.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field, fields, replace
from typing import Any, Mapping

from tiletraffic.simulator.model.file_values import shown
from tiletraffic.simulator.model.issue_rates import IssueRates, issue_rates_from_table

SOURCE_KINDS = ("documented", "queried", "measured", "guessed")
"""Where a value comes from; ``documented`` and ``measured`` cite a ``[references]`` entry."""

FULLY_ASSOCIATIVE = "fully-associative"
"""The file spelling of ``l2_associativity = None``."""


class GuessedValueWarning(UserWarning):
    """A device-model value was not known and had to be guessed."""


class DeviceModelError(ValueError):
    """A device model file (or value) is malformed; the message names the file and field."""


@dataclass(frozen=True)
class ValueSource:
    """Where one value of a :class:`DeviceModel` comes from.

    Attributes:
        kind: one of :data:`SOURCE_KINDS`.
        ref: ``documented``/``measured``: a key of the model's ``references``; ``queried``:
            the OpenCL query (``CL_DEVICE_MAX_COMPUTE_UNITS``); ``guessed``: why that number.
        note: optional detail (what the document says, how the value was read).
    """

    kind: str
    ref: str
    note: str = ""


@dataclass(frozen=True)
class DeviceModel:
    """What the memory-system and time models know about a device.

    Units are in the names: bytes, per-second rates, counts. ``l2_associativity``: ways of
    the L2 for the DRAM model (:func:`simulator.model.dram.miss_probability`); ``None`` means
    fully associative LRU. ``l1_requests_per_cycle_per_cu``: global-memory requests
    (sub-group-level load and store instructions) the L1's tag stage accepts per cycle.
    ``local_vector_words``: words one local load instruction reads per work-item (4: the
    compiler merges consecutive words into 128-bit loads; 1: it does not).
    ``barrier_wavefronts_per_work_group``: L1 data-pipe wavefronts one work-group barrier
    costs. ``l2_partitions``: partitions of the L2, each keeping its own copy of what its
    compute units read (the DRAM write-back model, :func:`simulator.model.dram.
    partition_copies`; 1: a single L2, no copies). ``registers_per_cu``: 32-bit registers
    of one compute unit's register file, split evenly over its ``sub_partitions_per_cu``
    sub-partitions (warp schedulers); ``register_allocation_unit``: a sub-group's
    registers are allocated in multiples of this many (registers per work-item x sub-group
    size, rounded up); ``max_registers_per_work_item``: the most one work-item may use.
    ``l1_strided_cycles_per_line`` and ``l1_strided_cycles_per_busiest_bank_line``: the
    cycles a compute unit's L1 spends on a strided request (one touching
    :data:`simulator.observers.strides.STRIDED_MIN_LINES` or more lines) per line and per line of
    its busiest 4-byte bank (``tiletraffic calibrate``'s ``strided_read``); both 0: not
    modelled (such a request costs one wavefront per line, and the launch is declared
    outside the model). ``memory_latency_s``: the delay that ends a barrier interval with
    global loads served by L2 (``tiletraffic calibrate``'s ``staging_round_trip`` over an
    L2-resident buffer); ``memory_latency_dram_s``: the same when one of them comes from
    DRAM (over a buffer more than 4 x the L2; 0: not measured, every interval waits
    ``memory_latency_s``). ``strided_dram_fill_sub_group_cycles_per_line``: the cycles per
    line that strided requests fill from DRAM, as one sub-group alone would spend them (a
    compute unit with w resident sub-groups takes this / w per line: their fills overlap,
    Little's law); ``tiletraffic calibrate``'s ``strided_read_dram``; 0: not modelled.
    ``warp_instructions_per_cycle_per_sub_partition``: sub-group instructions each
    sub-partition issues per cycle. The value, source and reasoning of each number of a
    built-in model is in its file (``tiletraffic device-model NAME``).

    ``sources`` (the references and the file), ``description``, ``references`` (key ->
    citation) and ``value_sources`` (field -> :class:`ValueSource`, in file order) document
    the values; they take no part in equality, so a copy of a model's file read back equals
    it. ``guessed`` lists the fields whose source is ``guessed``, in file order.
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
    l1_strided_cycles_per_line: float = 0.0
    l1_strided_cycles_per_busiest_bank_line: float = 0.0
    fp32_flop_per_s: float = 67e12
    launch_overhead_s: float = 3e-6
    local_vector_words: int = 4
    local_vector_min_wavefronts: int = 1
    barrier_wavefronts_per_work_group: int = 2
    memory_latency_s: float = 300e-9
    memory_latency_dram_s: float = 0.0
    strided_dram_fill_sub_group_cycles_per_line: float = 0.0
    l1_sharing_work_groups: int = 2
    l2_partitions: int = 1
    registers_per_cu: int = 65536
    register_allocation_unit: int = 256
    max_registers_per_work_item: int = 255
    sub_partitions_per_cu: int = 4
    warp_instructions_per_cycle_per_sub_partition: float = 1.0
    issue_rates: IssueRates | None = None
    """The measured issue rate by resident sub-groups per scheduler
    (:mod:`simulator.model.issue_rates`; ``tiletraffic calibrate``'s ``issue_rate``); None:
    not measured, the issue term uses ``warp_instructions_per_cycle_per_sub_partition``.
    Optional in a model file (:data:`OPTIONAL_FIELDS`)."""
    sources: str = field(default="", compare=False)
    guessed: tuple[str, ...] = field(default_factory=tuple)
    description: str = field(default="", compare=False, repr=False)
    references: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)
    value_sources: Mapping[str, ValueSource] = field(default_factory=dict, compare=False,
                                                     repr=False)

    def warn_guesses(self, stacklevel: int = 3) -> None:
        """Warn once per guessed value (:class:`GuessedValueWarning`; ``stacklevel`` as
        :func:`warnings.warn`'s: 3 names the line that called this method's caller)."""
        for name in self.guessed:
            warnings.warn(f"device model {self.name}: {name} = {getattr(self, name)} is a "
                          "guess, not a documented or queried value", GuessedValueWarning,
                          stacklevel=stacklevel)

    def with_values(self, values: Mapping[str, tuple[Any, ValueSource]],
                    name: str | None = None) -> DeviceModel:
        """A copy with some values replaced, each with its new source; ``guessed`` follows.

        Args:
            values: field -> (value, :class:`ValueSource`).
            name: the copy's name (default: this model's).

        Raises:
            DeviceModelError: an unknown field, a value of the wrong type or sign, or a
                source that is not one of :data:`SOURCE_KINDS`.
        """
        where = f"device model {name or self.name}"
        problems: list[str] = []
        changes = {}
        sources = dict(self.value_sources)
        for key, (value, source) in values.items():
            if key not in VALUE_FIELDS and key not in OPTIONAL_FIELDS:
                problems.append(unknown_value(key))
                continue
            changes[key] = check_value(key, value, problems)
            if source.kind not in SOURCE_KINDS:
                problems.append(bad_kind(key, source.kind))
            sources[key] = source
        if problems:
            raise DeviceModelError(f"{where}: " + "; ".join(problems))
        guessed = tuple(k for k, s in sources.items() if s.kind == "guessed")
        return replace(self, name=name or self.name, guessed=guessed, value_sources=sources,
                       **changes)

    def resident_work_groups_per_cu(self, work_group_items: int, local_mem_bytes: int,
                                    registers_per_work_item: int | None = None) -> int:
        """Work-groups one compute unit holds at once (occupancy), the smallest of the limits
        on work-groups, sub-groups (whole warps are allocated: ⌈items/32⌉ per work-group),
        local memory per compute unit (CUDA C++ Programming Guide, "Technical Specifications
        per Compute Capability") and, when ``registers_per_work_item`` is given, registers
        (:meth:`register_limited_work_groups_per_cu`). ``None``: registers are not modelled
        (the limit is left out). 0 when one work-group does not fit."""
        sub_groups = -(-max(work_group_items, 1) // self.sub_group_size)
        by_items = (self.max_work_items_per_cu // self.sub_group_size) // sub_groups
        per_group = local_mem_bytes + self.local_mem_reserved_bytes_per_work_group
        by_local = self.local_mem_bytes_per_cu // per_group if local_mem_bytes else \
            self.max_work_groups_per_cu
        limits = [self.max_work_groups_per_cu, by_items, by_local]
        if registers_per_work_item is not None:
            limits.append(self.register_limited_work_groups_per_cu(work_group_items,
                                                                   registers_per_work_item))
        return max(0, min(limits))

    def work_group_fit_problem(self, work_group_items: int, local_mem_bytes: int,
                               registers_per_work_item: int | None = None) -> str | None:
        """Why one work-group cannot be resident on a compute unit
        (:meth:`resident_work_groups_per_cu` is 0): the first limit it exceeds, with the
        value and the limit; None when it fits."""
        if self.resident_work_groups_per_cu(work_group_items, local_mem_bytes,
                                            registers_per_work_item) > 0:
            return None
        sub_groups = -(-max(work_group_items, 1) // self.sub_group_size)
        if sub_groups * self.sub_group_size > self.max_work_items_per_cu:
            return (f"a work-group of {work_group_items} work-items ({sub_groups} sub-groups "
                    f"of {self.sub_group_size}) exceeds the {self.max_work_items_per_cu} "
                    f"work-items a compute unit of {self.name} holds")
        per_group = local_mem_bytes + self.local_mem_reserved_bytes_per_work_group
        if local_mem_bytes and per_group > self.local_mem_bytes_per_cu:
            return (f"a work-group's {local_mem_bytes} bytes of local memory (+ "
                    f"{self.local_mem_reserved_bytes_per_work_group} reserved) exceed the "
                    f"{self.local_mem_bytes_per_cu} bytes of a compute unit of {self.name}")
        if registers_per_work_item is not None:
            problem = self.work_group_register_problem(work_group_items,
                                                       registers_per_work_item)
            if problem:
                return problem
        return (f"one work-group of {work_group_items} work-items does not fit a compute "
                f"unit of {self.name} (max_work_groups_per_cu = {self.max_work_groups_per_cu})")

    def register_limited_work_groups_per_cu(self, work_group_items: int,
                                            registers_per_work_item: int) -> int:
        """Work-groups the register file of one compute unit holds, as CUDA's occupancy
        calculator computes it (``cudaOccMaxBlocksPerSMRegsLimit`` in the CUDA toolkit's
        ``cuda_occupancy.h``): a sub-group gets R x ``sub_group_size`` registers rounded up
        to a multiple of ``register_allocation_unit``; each of the ``sub_partitions_per_cu``
        sub-partitions holds ⌊(``registers_per_cu`` / sub-partitions) / that⌋ sub-groups;
        the compute unit holds that many times its sub-partitions, divided by the
        work-group's ⌈items / ``sub_group_size``⌉ sub-groups (rounded down). 0 when R
        exceeds ``max_registers_per_work_item`` or one work-group needs more than
        ``registers_per_cu``.

        Example (H200: 65536 registers, 4 sub-partitions, unit 256): R = 168, 256
        work-items: 5376 registers per sub-group, ⌊16384 / 5376⌋ = 3 per sub-partition,
        12 per compute unit, 8 per work-group: 1 work-group. R = 64: 2048 per sub-group,
        8 per sub-partition, 32 per compute unit: 4 work-groups.

        Raises:
            ValueError: ``registers_per_work_item`` is not a positive integer.
        """
        regs = registers_per_work_item
        if isinstance(regs, bool) or not isinstance(regs, int) or regs < 1:
            raise ValueError(f"registers per work-item must be a positive integer, got "
                             f"{regs!r}")
        sub_groups = -(-max(work_group_items, 1) // self.sub_group_size)
        unit = self.register_allocation_unit
        per_sub_group = -(-regs * self.sub_group_size // unit) * unit
        if regs > self.max_registers_per_work_item or \
                per_sub_group * sub_groups > self.registers_per_cu:
            return 0
        per_partition = (self.registers_per_cu // self.sub_partitions_per_cu) // per_sub_group
        return per_partition * self.sub_partitions_per_cu // sub_groups

    def registers_for_one_work_group(self, work_group_items: int) -> int:
        """The most registers per work-item (at most ``max_registers_per_work_item``) with
        which one work-group of ``work_group_items`` work-items fits a compute unit's
        register file (:meth:`register_limited_work_groups_per_cu` >= 1); 0 when even one
        register does not. A compiler told the work-group size keeps a kernel within it
        and spills the rest.

        Example (H200): 1024 work-items: 64; 256 work-items: 255."""
        for registers in range(self.max_registers_per_work_item, 0, -1):
            if self.register_limited_work_groups_per_cu(work_group_items, registers) >= 1:
                return registers
        return 0

    def work_group_register_problem(self, work_group_items: int,
                                    registers_per_work_item: int) -> str | None:
        """Why a work-group of ``work_group_items`` work-items using
        ``registers_per_work_item`` registers each cannot run on one compute unit (names
        the value and the limit), or None when it can."""
        if registers_per_work_item > self.max_registers_per_work_item:
            return (f"{registers_per_work_item} registers per work-item exceed the "
                    f"{self.max_registers_per_work_item} a work-item may use on {self.name}")
        sub_groups = -(-max(work_group_items, 1) // self.sub_group_size)
        unit = self.register_allocation_unit
        per_sub_group = -(-registers_per_work_item * self.sub_group_size // unit) * unit
        if per_sub_group * sub_groups > self.registers_per_cu:
            return (f"a work-group of {work_group_items} work-items x "
                    f"{registers_per_work_item} registers needs {per_sub_group * sub_groups} "
                    f"registers, a compute unit of {self.name} has {self.registers_per_cu}")
        if self.register_limited_work_groups_per_cu(work_group_items,
                                                    registers_per_work_item) < 1:
            return (f"a work-group of {work_group_items} work-items x "
                    f"{registers_per_work_item} registers does not fit the "
                    f"{self.registers_per_cu // self.sub_partitions_per_cu} registers of "
                    f"each of the {self.sub_partitions_per_cu} sub-partitions of {self.name}")
        return None

    def active_compute_units(self, work_groups: int) -> int:
        """Compute units that receive at least one work-group."""
        return max(1, min(self.compute_units, work_groups))

    @property
    def l1_bytes_per_s(self) -> float:
        """L1/local-memory data rate: one 128-byte wavefront per cycle per compute unit."""
        return self.compute_units * self.clock_hz * self.l1_wavefronts_per_cycle_per_cu * \
            self.line_bytes


_NOT_VALUES = ("name", "sources", "guessed", "description", "references", "value_sources",
               "issue_rates")
OPTIONAL_FIELDS: dict[str, str] = {"issue_rates": "IssueRates | None"}
"""Fields a model file may leave out (None: not measured; no guess, no warning), each
-> its type; not in :data:`VALUE_FIELDS`."""
VALUE_FIELDS: dict[str, str] = {f.name: str(f.type) for f in fields(DeviceModel)
                                if f.name not in _NOT_VALUES}
"""Every numeric field of :class:`DeviceModel` -> its type (``int``, ``float``,
``int | None``): what a model file must give, each with its source."""

_MAY_BE_ZERO = ("launch_overhead_s", "memory_latency_s", "l1_strided_cycles_per_line",
                "l1_strided_cycles_per_busiest_bank_line", "memory_latency_dram_s",
                "strided_dram_fill_sub_group_cycles_per_line")

_MOST = {"max_registers_per_work_item": (1 << 16, "a register file's entries per work-item"),
         "l1_sharing_work_groups": (2, "the model shares an L1 between 1 or 2 work-groups")}
"""The largest value of a field, and why (a value above it is refused)."""

ADDED_FIELDS: dict[str, tuple[Any, str]] = {
    "l1_strided_cycles_per_line": (0.0, "absent from the file (written before tiletraffic "
                                   "modelled strided requests): 0, not modelled"),
    "l1_strided_cycles_per_busiest_bank_line": (0.0, "absent from the file (written before "
                                                "tiletraffic modelled strided requests): 0, "
                                                "not modelled"),
    "memory_latency_dram_s": (0.0, "absent from the file (written before tiletraffic "
                              "measured it): 0, every barrier interval waits "
                              "memory_latency_s"),
    "strided_dram_fill_sub_group_cycles_per_line": (
        0.0, "absent from the file (written before tiletraffic modelled strided requests' "
        "fills from DRAM): 0, not modelled"),
}
"""Fields added after model files were first written -> (the value a file without them gets,
the ``guessed`` source's reason): older files (committed calibrations) still load and give
the predictions they gave."""


def unknown_value(key: str) -> str:
    """The message for a field that is not one of :data:`VALUE_FIELDS` or
    :data:`OPTIONAL_FIELDS` (lists them)."""
    return f"unknown value {key!r} (known: {', '.join([*VALUE_FIELDS, *OPTIONAL_FIELDS])})"


def bad_kind(key: str, kind: object) -> str:
    """The message for a source that is not one of :data:`SOURCE_KINDS` (lists them)."""
    return f"values.{key}: source {shown(kind)} is not one of {', '.join(SOURCE_KINDS)}"


def check_fields(table: Mapping[str, Any], known: tuple[str, ...], problems: list[str],
                 where: str = "") -> None:
    """Append one problem (``where`` first, e.g. ``"values.KEY: "``) naming the keys of
    ``table`` not in ``known`` and listing ``known``; nothing when all are known."""
    unknown = [k for k in table if k not in known]
    if unknown:
        problems.append(f"{where}unknown field(s) {', '.join(map(repr, unknown))} "
                        f"(known: {', '.join(known)})")


def read_references(data: Mapping[str, Any], problems: list[str]) -> dict:
    """The file's ``[references]`` table (key -> citation string; empty when absent), or
    empty with a problem appended when it is not a table of strings."""
    references = data.get("references", {})
    if not isinstance(references, dict) or \
            not all(isinstance(v, str) for v in references.values()):
        problems.append("[references] must map keys to citation strings")
        return {}
    return references


def check_value(key: str, value: Any, problems: list[str]) -> Any:
    """``value`` converted to ``key``'s type (an int; a float, an int accepted; for
    ``l2_associativity`` also ``None`` or ``"fully-associative"``), or, when it is of the
    wrong type, not finite, negative, zero where zero makes no sense (every value but
    ``launch_overhead_s`` and ``memory_latency_s``) or above a field's largest value
    (:data:`_MOST`), a message naming field and value appended to ``problems``."""
    if key == "issue_rates":
        return issue_rates_from_table(value, problems, f"values.{key}.value")
    kind = VALUE_FIELDS[key]
    if kind == "int | None" and value in (None, FULLY_ASSOCIATIVE):
        return None
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if kind.startswith("int") and not is_int:
        extra = f' or "{FULLY_ASSOCIATIVE}"' if kind == "int | None" else ""
        got = f"the float {value!r}" if isinstance(value, float) else shown(value)
        problems.append(f"values.{key}: value must be an integer{extra}, got {got}")
        return value
    if kind == "float":
        if not (is_int or isinstance(value, float)) or not math.isfinite(value):
            problems.append(f"values.{key}: value must be a finite number, got "
                            f"{shown(value)}")
            return value
        value = float(value)
    if value < 0 or (value == 0 and key not in _MAY_BE_ZERO):
        least = "at least 0" if key in _MAY_BE_ZERO else "positive"
        problems.append(f"values.{key}: value must be {least}, got {shown(value)}")
    elif key in _MOST and value > _MOST[key][0]:
        most, why = _MOST[key]
        problems.append(f"values.{key}: value must be at most {most} ({why}), got "
                        f"{shown(value)}")
    return value
