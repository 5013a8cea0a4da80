"""Oclgrind's instruction counts: the counter's table parsed, and the memory operations and
barriers of one launch in the simulator's terms (:class:`OclgrindCounts`).

What the instruction counter prints (``src/plugins/InstructionCounter.cpp``), after every
kernel, sorted by count::

    Instructions executed for kernel 'gemm_tiled':
               65536 - load local (262144 bytes)
                4096 - call _Z7barrierj()
                1600 - load global (6400 bytes)
                 400 - store global (1600 bytes)
                 ...

One line per LLVM opcode; loads and stores are split by the *address space of the pointer
operand* (``private``, ``global``, ``constant``, ``local``) with the total bytes moved; calls
are split by callee (``_Z7barrierj`` is ``barrier(cl_mem_fence_flags)``, counted once per
work-item that calls it). Mapping used here: ``global_load_elems`` = bytes of
``load global`` / 4, likewise for the other three (every ``__global`` / ``__local`` buffer of a
generated kernel is ``float``, see :func:`gpu.codegen.generate.generate`, so bytes / 4 is exactly the
number of scalar float accesses, and a vector access of n floats counts n; a ``half``
buffer is read and written only through ``vload_half``/``vstore_half`` calls, counted as
elements by :func:`memory_operations`); private
(``alloca``) traffic, integer arithmetic and constant memory are ignored. The counter does
not split accesses by element type, so a hand-written kernel with an ``int`` buffer in
global or local memory would have its 4-byte int accesses counted too (accesses of other
sizes raise :class:`~gpu.oclgrind.errors.OclgrindError`). The worker runs in the ``C``
locale: the counter formats numbers with the process locale (and throws on a locale that is
not installed).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from tiletraffic.gpu.oclgrind.errors import OclgrindError
from tiletraffic.simulator.ir.nodes import FLOAT_BYTES

__all__ = ["OclgrindCounts", "parse_instruction_counts", "memory_operations",
           "counts_from_table"]

_TABLE_HEADER = re.compile(r"^Instructions executed for kernel '([^']*)':\s*$")
_TABLE_ROW = re.compile(r"^\s*([0-9][0-9,.' ]*)\s+-\s+(.+?)\s*$")
_MEMOP = re.compile(r"^(load|store) (\w+) \(([0-9][0-9,.' ]*) bytes\)$")
_BARRIER_CALL = re.compile(r"^call (?:_Z\d+)?(?:work_group_)?barrier\w*\(\)$")
_VECTOR_CALL = re.compile(r"^call _Z\d+v(load|store)(\d+)\w*?PU3AS(\d)\w*\(\)$")
"""Oclgrind's entry for a ``vloadN``/``vstoreN`` built-in (Itanium-mangled, SPIR address
space numbers): Oclgrind runs them as calls, not as load/store instructions."""
_HALF_CALL = re.compile(r"^call _Z\d+v(load|store)a?_half(\d*)(?:_rt[enpz])?\w*?PU3AS(\d)\w*\(\)$")
"""Oclgrind's entry for ``vload_half``/``vstore_half`` and their ``N`` forms (a ``half``
buffer read or written as float): one instruction of N (or 1) elements, executed as a
call."""
_ADDRESS_SPACES = {"1": "global", "2": "constant", "3": "local"}


def _int(text: str) -> int:
    """The digits of a count Oclgrind printed (thousands separators dropped)."""
    return int(re.sub(r"[^0-9]", "", text))


def parse_instruction_counts(text: str) -> dict[str, dict[str, int]]:
    """Parse every ``Instructions executed for kernel 'NAME':`` table in ``text``.

    Returns ``{kernel name: {entry: count}}``. Memory entries are split into the count and
    the bytes: ``"load global (6400 bytes)"`` with count 1600 gives ``"load global": 1600``
    and ``"load global bytes": 6400``; other entries keep Oclgrind's name
    (``"call _Z7barrierj()"``, ``"br"``, ``"getelementptr"``, ...).

    Raises:
        OclgrindError: the same kernel appears twice (counts of several launches mixed).
    """
    tables: dict[str, dict[str, int]] = {}
    current: dict[str, int] | None = None
    for line in text.splitlines():
        header = _TABLE_HEADER.match(line)
        if header:
            name = header.group(1)
            if name in tables:
                raise OclgrindError(f"Oclgrind printed two instruction-count tables for "
                                    f"kernel {name}; expected one launch", stdout=text)
            current = tables[name] = {}
            continue
        if current is None:
            continue
        row = _TABLE_ROW.match(line)
        if not row:
            current = None  # a blank line ends the table
            continue
        count, entry = _int(row.group(1)), row.group(2)
        mem = _MEMOP.match(entry)
        if mem:
            key = f"{mem.group(1)} {mem.group(2)}"
            current[key] = current.get(key, 0) + count
            current[key + " bytes"] = current.get(key + " bytes", 0) + _int(mem.group(3))
        else:
            current[entry] = current.get(entry, 0) + count
    return tables


@dataclass
class OclgrindCounts:
    """Memory operations and barriers Oclgrind executed for one launch.

    All ``_elems`` are float32 elements (4 bytes) summed over every work-item of the launch,
    padded (out-of-range) work-items included, taken from the bytes of the
    instruction counter's ``load/store global/local/constant`` lines divided by 4, plus N per
    ``vloadN``/``vstoreN`` call (:func:`memory_operations`).

    Attributes:
        global_load_elems, global_store_elems: float elements read / written in ``__global``.
        local_load_elems, local_store_elems: float elements read / written in ``__local``.
        barriers: work-group barriers, the simulator's unit: ``barrier_calls`` divided by the
            work-items per work-group (rounded down). Exact only when every work-item of a
            work-group reaches every barrier it executes (true for correct kernels; a
            divergent barrier makes it meaningless, see :func:`gpu.oclgrind.oclgrind.oclgrind_check`).
        barrier_calls: calls of ``barrier()`` summed over work-items (Oclgrind's raw count).
        work_group_items: work-items per work-group used for ``barriers``.
        raw: every entry of Oclgrind's table for the kernel (see
            :func:`parse_instruction_counts`), e.g. ``{"load global": 1600,
            "load global bytes": 6400, "call _Z7barrierj()": 4096, "br": ...}``.
        build_options: the options the kernel was built with.
        diagnostics: first lines of the messages Oclgrind's always-on memory checks printed
            during the counted run (empty for a correct kernel).
        instructions: load and store instructions summed over work-items, by
            ``"load global"``, ``"store global"``, ``"load local"``, ``"store local"``
            (:func:`memory_operations`: constant loads and ``vloadN``/``vstoreN`` calls
            included).

    Oclgrind counts every access a work-item executes, also one that is out of bounds;
    the simulator leaves out-of-bounds accesses out of its counts (it reports them as
    hazards), so the two agree exactly only for kernels without such accesses.
    """

    global_load_elems: int
    global_store_elems: int
    local_load_elems: int
    local_store_elems: int
    barriers: int
    barrier_calls: int
    work_group_items: int
    raw: dict[str, int] = field(default_factory=dict)
    build_options: tuple[str, ...] = ()
    diagnostics: tuple[str, ...] = ()
    instructions: dict[str, int] = field(default_factory=dict)

    @property
    def barriers_divisible(self) -> bool:
        """``barrier_calls`` is a multiple of the work-group size (necessary for exactness)."""
        return self.barrier_calls % self.work_group_items == 0

    def to_dict(self) -> dict:
        """JSON-ready mapping; the shared keys are those of
        :meth:`simulator.observers.counters.TrafficCounts.to_dict`."""
        return {
            "global_load_elems": self.global_load_elems,
            "global_store_elems": self.global_store_elems,
            "global_load_bytes": self.global_load_elems * FLOAT_BYTES,
            "global_store_bytes": self.global_store_elems * FLOAT_BYTES,
            "local_load_elems": self.local_load_elems,
            "local_store_elems": self.local_store_elems,
            "barriers": self.barriers,
            "barrier_calls": self.barrier_calls,
            "work_group_items": self.work_group_items,
            "raw": dict(self.raw),
            "build_options": list(self.build_options),
            "diagnostics": list(self.diagnostics),
            "instructions": dict(self.instructions),
        }


def _elems(raw: dict[str, int], key: str, kernel: str) -> int:
    """Float elements moved by the ``key`` entries (their bytes / 4)."""
    nbytes = raw.get(key + " bytes", 0)
    if nbytes % FLOAT_BYTES:
        raise OclgrindError(f"kernel {kernel}: {key} moved {nbytes} bytes, not a multiple of "
                            f"{FLOAT_BYTES}; the buffers are not all float32")
    return nbytes // FLOAT_BYTES


def memory_operations(raw: dict[str, int], kernel: str) -> dict[str, tuple[int, int]]:
    """``{"load global": (instructions, float elements), ...}`` for ``load``/``store`` of
    ``global`` and ``local`` from one parsed table, in the simulator's terms: a ``__constant``
    buffer is a global array to the simulator, so Oclgrind's ``load constant`` counts as
    ``load global``; a ``vloadN``/``vstoreN`` built-in, which Oclgrind executes as a call,
    is one instruction of N floats in the address space of its pointer (a ``floatN``
    dereference is already one load or store of 4N bytes); ``vload_half``/``vstore_half``
    (and their N forms), also calls, are one instruction of 1 (N) elements of a ``half``
    buffer.

    Raises:
        OclgrindError: a memory entry moved a number of bytes that is not a multiple of 4.
    """
    ops = {f"{d} {sp}": [0, 0] for d in ("load", "store") for sp in ("global", "local")}
    for direction in ("load", "store"):
        for space, as_space in (("global", "global"), ("constant", "global"),
                                ("local", "local")):
            key = f"{direction} {space}"
            ops[f"{direction} {as_space}"][0] += raw.get(key, 0)
            ops[f"{direction} {as_space}"][1] += _elems(raw, key, kernel)
    for entry, count in raw.items():
        call = _VECTOR_CALL.match(entry) or _HALF_CALL.match(entry)
        if call:
            space = _ADDRESS_SPACES.get(call.group(3))
            key = f"{call.group(1)} {'global' if space == 'constant' else space}"
            if key in ops:
                ops[key][0] += count
                ops[key][1] += count * int(call.group(2) or 1)
    return {k: (v[0], v[1]) for k, v in ops.items()}


def counts_from_table(raw: dict[str, int], kernel: str, work_group_items: int,
                      build_options: tuple[str, ...] = ()) -> OclgrindCounts:
    """:class:`OclgrindCounts` from one parsed table (see :func:`parse_instruction_counts`),
    memory operations as :func:`memory_operations` gives them."""
    calls = sum(v for k, v in raw.items() if _BARRIER_CALL.match(k))
    ops = memory_operations(raw, kernel)
    return OclgrindCounts(
        global_load_elems=ops["load global"][1], global_store_elems=ops["store global"][1],
        local_load_elems=ops["load local"][1], local_store_elems=ops["store local"][1],
        barriers=calls // work_group_items, barrier_calls=calls,
        work_group_items=work_group_items, raw=dict(raw), build_options=tuple(build_options),
        instructions={k: v[0] for k, v in ops.items()})
