"""A sequence of kernels: schedules launched one after another on one in-order queue.

A :class:`KernelSequence` is what a split-K GEMM is: kernel 1 writes partial products into
a scratch buffer, kernel 2 adds them into C. Every kernel is an ordinary
:class:`~simulator.ir.nodes.Schedule`; the sequence names which global buffers are its
arguments (the user's A, B, C) and which it allocates itself (*scratch*, e.g.
``C_partial``). The end of a kernel orders everything: every store of kernel i is visible
to kernel i + 1 (OpenCL 1.2 §3.3.1: commands of an in-order queue complete in order), so no
race can cross a kernel boundary; hazards are those of each kernel.

Contract:
- every array a kernel names is one of the sequence's arrays or scratch buffers, with the
  same shape;
- a scratch buffer or an ``out`` argument is written (role ``out`` or ``inout``) by a kernel
  before any later one reads it: no kernel reads one that no earlier kernel wrote (its
  contents are undefined); every buffer's shape names size parameters of the kernels;
- the sequence's ``in`` arrays are never written, its ``out`` arrays are written by some
  kernel; every kernel's parameters agree on the value of a name they share.

Results combine per kernel: counts add (:func:`simulator.observers.counters.add_counts`), times add (each kernel's own
prediction or measurement, its launch overhead included), the outputs are those of the
last kernel writing them. numpy only.

Errors: :class:`~simulator.ir.nodes.ScheduleError` for a sequence that breaks the contract,
naming the kernel and the buffer.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tiletraffic.simulator.ir.nodes import GlobalArray, Schedule, ScheduleError


@dataclass(frozen=True, eq=False)
class KernelSequence:
    """Kernels launched in order, sharing global buffers (module docstring).

    Attributes:
        family: the family's name, e.g. ``"gemm-split-k"``.
        kernels: the kernels, in launch order (at least one).
        arrays: the sequence's global arguments, in signature order (the user's buffers,
            roles as for a schedule: what the sequence as a whole reads and writes).
        scratch: buffers the sequence allocates for itself (their contents before the first
            kernel are undefined; they are not returned).
        tile: the tile parameter reported with results (that of the first kernel).
        description: one line for users.
        extra: the family's parameters, reported with results.
    """

    family: str
    kernels: tuple[Schedule, ...]
    arrays: tuple[GlobalArray, ...]
    scratch: tuple[GlobalArray, ...] = ()
    tile: int = 0
    description: str = ""
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Refuse a sequence that breaks the module's contract (ScheduleError)."""
        if not self.kernels:
            raise ScheduleError(f"{self.family}: a kernel sequence needs at least one kernel")
        known = {a.name: a for a in self.arrays + self.scratch}
        if len(known) != len(self.arrays) + len(self.scratch):
            raise ScheduleError(f"{self.family}: a buffer name is used twice among "
                                f"{[a.name for a in self.arrays + self.scratch]}")
        scratch = {a.name for a in self.scratch}
        written: set[str] = set()
        names = {name for kernel in self.kernels for name, _ in kernel.params}
        for a in self.arrays + self.scratch:
            unknown = [d for d in a.shape if d not in names]
            if unknown:
                raise ScheduleError(
                    f"{self.family}: buffer {a.name!r} has shape {a.shape}, but no kernel has "
                    f"the size parameter(s) {', '.join(unknown)}")
        values: dict[str, int] = {}
        for kernel in self.kernels:
            for name, value in kernel.params:
                if values.setdefault(name, value) != value:
                    raise ScheduleError(
                        f"{self.family}: kernel {kernel.kernel_name} has {name} = {value}, "
                        f"an earlier kernel {name} = {values[name]}")
            for a in kernel.arrays:
                mine = known.get(a.name)
                if mine is None:
                    raise ScheduleError(
                        f"{self.family}: kernel {kernel.kernel_name} uses buffer {a.name!r}, "
                        f"which is neither an argument nor scratch of the sequence")
                if tuple(mine.shape) != tuple(a.shape):
                    raise ScheduleError(
                        f"{self.family}: kernel {kernel.kernel_name} gives {a.name!r} shape "
                        f"{a.shape}, the sequence {mine.shape}")
                if a.is_input and not mine.is_input and a.name not in written:
                    what = "scratch buffer" if a.name in scratch else "output"
                    raise ScheduleError(
                        f"{self.family}: kernel {kernel.kernel_name} reads {what} "
                        f"{a.name!r} before any kernel wrote it (its contents are undefined)")
                if a.is_output and mine.role == "in":
                    raise ScheduleError(
                        f"{self.family}: kernel {kernel.kernel_name} writes {a.name!r}, an "
                        "input of the sequence")
            written |= {a.name for a in kernel.arrays if a.is_output}
        for a in self.arrays:
            if a.is_output and a.name not in written:
                raise ScheduleError(f"{self.family}: no kernel writes output {a.name!r}")

    @property
    def params(self) -> tuple[tuple[str, int], ...]:
        """Every kernel's parameters, first occurrence order (they agree: checked)."""
        seen: dict[str, int] = {}
        for kernel in self.kernels:
            for name, value in kernel.params:
                seen.setdefault(name, value)
        return tuple(seen.items())

    @property
    def param_values(self) -> dict[str, int]:
        return dict(self.params)

    @property
    def kernel_name(self) -> str:
        """The kernels' names joined by ``+`` (for messages and records)."""
        return "+".join(k.kernel_name for k in self.kernels)

    @property
    def work_groups(self) -> int:
        """Work-groups launched by all kernels together."""
        return sum(k.work_groups for k in self.kernels)

    def array(self, name: str) -> GlobalArray:
        """The sequence's argument or scratch buffer ``name``; KeyError naming the known ones."""
        for a in self.arrays + self.scratch:
            if a.name == name:
                return a
        raise KeyError(f"kernel sequence {self.family} has no buffer {name!r}; it has "
                       f"{[a.name for a in self.arrays + self.scratch]}")


def kernels_of(schedule) -> tuple[Schedule, ...]:
    """The kernels of a :class:`KernelSequence`, or ``(schedule,)`` for one schedule."""
    return schedule.kernels if isinstance(schedule, KernelSequence) else (schedule,)


def pick_kernel(schedule, kernel=None):
    """One kernel of a sequence: ``kernel`` its name or 1-based position (an int or a
    string of digits), ``None`` the first; a schedule is returned as it is (``kernel``
    must then be None, 1 or its own name).

    Raises:
        ValueError: no such kernel, naming the kernels there are.
    """
    kernels = kernels_of(schedule)
    if kernel is None:
        return kernels[0]
    text = str(kernel)
    for i, k in enumerate(kernels, 1):
        if text in (k.kernel_name, str(i)):
            return k
    raise ValueError(f"{schedule.family} has no kernel \"{text}\"; its kernels: "
                     + ", ".join(f"{i} {k.kernel_name}" for i, k in enumerate(kernels, 1)))


def buffers_of(schedule) -> tuple[GlobalArray, ...]:
    """Every global buffer a launch needs: a schedule's arrays, or a sequence's arrays and
    scratch buffers."""
    return tuple(schedule.arrays) + tuple(getattr(schedule, "scratch", ()))


def require_schedule(value, function: str) -> None:
    """Refuse, with a TypeError whose message names ``function`` and how to make one, a
    ``value`` that is neither a :class:`Schedule` nor a :class:`KernelSequence` (a
    schedule's name given where the built schedule is meant, most often)."""
    if isinstance(value, (Schedule, KernelSequence)):
        return
    if isinstance(value, str):
        got, how = f'the string "{value}"', f'tiletraffic.build("{value}", m=..., k=...)'
    else:
        got, how = f"a value of type {type(value).__name__}", "tiletraffic.build(...)"
    raise TypeError(f"{function} takes a Schedule (or a KernelSequence): build one with "
                    f"{how}; got {got}")


def is_sequence(schedule) -> bool:
    """Whether ``schedule`` is a :class:`KernelSequence` (more than one launch)."""
    return isinstance(schedule, KernelSequence)
