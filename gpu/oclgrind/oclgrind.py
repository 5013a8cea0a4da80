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

How it runs. Oclgrind reads its plugin switches from the environment once per process, so
every execution runs in a fresh worker process (the script :mod:`gpu.oclgrind.worker`,
forked with the run's environment by a server process that has imported numpy and pyopencl
but loaded no OpenCL platform; :mod:`gpu.oclgrind.launcher`); the launch is
described by a :class:`LaunchSpec` (:mod:`gpu.oclgrind.spec`) sent to it as JSON. The parent parses the instruction counter's table (:mod:`gpu.oclgrind.counts`) and
the diagnostics (:mod:`gpu.oclgrind.diagnostics`). A worker that fails or runs past
``timeout_s`` raises :class:`OclgrindError` carrying Oclgrind's output; the worker is killed
on timeout, so a call never hangs. The names of those modules that callers use are
importable from here.

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

from functools import lru_cache

from tiletraffic.gpu.codegen.kernel import GeneratedKernel
from tiletraffic.gpu.oclgrind.counts import (OclgrindCounts, counts_from_table,
                                             memory_operations, parse_instruction_counts)
from tiletraffic.gpu.oclgrind.diagnostics import (SIMULATOR_HAZARD_KINDS, Diagnostic,
                                                  OclgrindDiagnostics, local_array_names,
                                                  parse_diagnostics, split_messages)
from tiletraffic.gpu.oclgrind.errors import OclgrindError, OclgrindUnavailable
from tiletraffic.gpu.oclgrind.launcher import run_worker
from tiletraffic.gpu.oclgrind.spec import (OPT_DISABLE, LaunchSpec, as_launch_spec,
                                           with_optimization)
from tiletraffic.gpu.oclgrind.worker import OCLGRIND_PLATFORM
from tiletraffic.simulator.ir.nodes import Schedule

__all__ = [
    "OclgrindError", "OclgrindUnavailable", "LaunchSpec", "OclgrindCounts", "Diagnostic",
    "OclgrindDiagnostics", "oclgrind_available", "oclgrind_counts", "oclgrind_check",
    "parse_instruction_counts", "parse_diagnostics", "counts_from_table", "memory_operations",
    "local_array_names",
    "OCLGRIND_PLATFORM", "OPT_DISABLE", "SIMULATOR_HAZARD_KINDS",
]

DEFAULT_TIMEOUT_S = 300
"""Wall-clock limit of one worker, seconds."""


@lru_cache(maxsize=1)
def oclgrind_available() -> bool:
    """True when an OpenCL platform named Oclgrind can be enumerated (checked once)."""
    try:
        import pyopencl as cl
        return any(OCLGRIND_PLATFORM.lower() in p.name.lower() for p in cl.get_platforms())
    except Exception:  # no ICD loader, no platform, broken install: all mean "not available"
        return False


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
    spec = with_optimization(as_launch_spec(schedule, sizes_from, array_elems, scalars, seed), optimize)
    out = run_worker(spec, {"OCLGRIND_INST_COUNTS": "1"}, timeout_s, "counts")
    tables = parse_instruction_counts(out.stdout + "\n" + out.stderr)
    if spec.kernel_name not in tables:
        raise OclgrindError(f"Oclgrind printed no instruction counts for kernel "
                            f"{spec.kernel_name} (is OCLGRIND_INST_COUNTS supported?)",
                            out.stderr, out.stdout, out.log)
    counts = counts_from_table(tables[spec.kernel_name], spec.kernel_name,
                               spec.work_group_items, spec.build_options)
    messages, _ = split_messages(out.log)
    counts.diagnostics = tuple(m.splitlines()[0].strip() for m in messages)
    return counts


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
    spec = with_optimization(as_launch_spec(target, schedule, array_elems, scalars, seed), optimize)
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
    out = run_worker(spec, plugins, timeout_s, mode)
    buffers = {k: (int(v[0]), int(v[1])) for k, v in out.result.get("buffers", {}).items()}
    found = parse_diagnostics(out.log, out.stderr, buffers,
                              local_array_names(spec.source, spec.kernel_name,
                                                spec.build_options))
    found.checks = tuple(checks)
    return found
