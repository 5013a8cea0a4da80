"""The compiled kernel's instructions, per kernel and per innermost loop, and the launch's
issued instructions computed from them.

An instructions file (JSON, written by :func:`tiletraffic.gpu.instructions.build.
build_instructions` or by hand) gives, for each kernel of a build, the static instruction
counts of the whole kernel and of each innermost loop body (one iteration), by class
(:data:`INSTRUCTION_CLASSES`)::

    {"format": "tiletraffic-instructions", "version": 1,
     "source": "NVRTC 12.9, sm_90, nvdisasm 13.5",
     "kernels": {"gemm_tiled": {
         "kernel": {"fma": 20, "local_load": 32, ..., "other": 9},
         "loops": [{"name": "loop 0x0150-0x0410",
                    "instructions_per_iteration": {"fma": 16, "local_load": 32, ...}}]}}}

Counts are of sub-group (warp) instructions: one instruction of a kernel's machine code is
issued once per sub-group that reaches it. :func:`issued_from_build` turns one kernel's
counts into the launch's issued instructions, anchored on the FLOPs the simulator counts
exactly; :func:`simulator.model.prediction.predict` uses it, when given, in its issue term
in place of :func:`simulator.model.prediction.issued_instructions`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

INSTRUCTION_CLASSES = ("fma", "float", "local_load", "local_store", "global_load", "global_store",
                       "barrier", "integer", "move", "branch", "other")
"""Instruction classes: fused multiply-adds; other float arithmetic of one FLOP each (adds,
multiplies, minimum and maximum); local-memory (shared) loads and stores; global
loads and stores; work-group barriers; integer and address arithmetic (adds, multiply-adds,
shifts, logic, compares); moves (register copies, special-register and constant reads);
branches and exits; everything else (conversions, special functions, shuffles, ...)."""

FORMAT_NAME = "tiletraffic-instructions"
FORMAT_VERSION = 1

ISSUE_METHOD = ("issue: the build's instructions (the hot loop's per iteration x the "
                "iterations the simulated FLOPs give, + the rest of the kernel once)")
"""``methods["issue_s"]`` when the issue term uses a build's instruction counts."""


class InstructionsError(ValueError):
    """A malformed instructions file, or no kernel in it for the launch (one-line message)."""


def _total(counts: dict[str, int]) -> int:
    return sum(counts.values())


def _flop(counts: dict[str, int]) -> int:
    return 2 * counts.get("fma", 0) + counts.get("float", 0)


@dataclass(frozen=True)
class LoopInstructions:
    """One innermost loop of a kernel: ``instructions_per_iteration`` (class -> sub-group
    instructions of one pass over its body)."""

    name: str
    instructions_per_iteration: dict[str, int]

    @property
    def total(self) -> int:
        return _total(self.instructions_per_iteration)

    @property
    def flop(self) -> int:
        """FLOPs of one iteration: 2 per FMA, 1 per other float instruction."""
        return _flop(self.instructions_per_iteration)


@dataclass(frozen=True)
class KernelInstructions:
    """One kernel's static instruction counts: ``kernel`` (class -> count, the whole
    machine code) and its innermost ``loops``."""

    name: str
    kernel: dict[str, int]
    loops: tuple[LoopInstructions, ...] = ()

    @property
    def hot_loop(self) -> LoopInstructions | None:
        """The innermost loop with the most FLOPs per iteration (None: no loop has any)."""
        loops = [lp for lp in self.loops if lp.flop > 0]
        return max(loops, key=lambda lp: (lp.flop, lp.total)) if loops else None

    def per_sub_group(self, flop_per_work_item: float) -> float:
        """Instructions one sub-group issues when each of its work-items executes
        ``flop_per_work_item`` FLOPs: the hot loop runs ``(flop_per_work_item - FLOPs
        outside it) / its FLOPs per iteration`` times and the rest of the kernel once (a
        loop other than the hot one is counted once per pass through the kernel). Without a
        loop of float arithmetic (fully unrolled code), the whole kernel once."""
        total = _total(self.kernel)
        loop = self.hot_loop
        if loop is None:
            return float(total)
        outside = _flop(self.kernel) - loop.flop
        iterations = max(0.0, flop_per_work_item - outside) / loop.flop
        return iterations * loop.total + (total - loop.total)

    def to_dict(self) -> dict:
        return {"kernel": dict(self.kernel),
                "loops": [{"name": lp.name,
                           "instructions_per_iteration": dict(lp.instructions_per_iteration)}
                          for lp in self.loops]}


@dataclass(frozen=True)
class InstructionsFile:
    """The kernels of one build (name -> :class:`KernelInstructions`) and where the counts
    come from (``source``: compiler, target, disassembler)."""

    kernels: dict[str, KernelInstructions]
    source: str = ""
    path: str = field(default="", compare=False)

    def kernel(self, name: str) -> KernelInstructions:
        """The counts of kernel ``name``; a file of one kernel answers for any name.

        Raises:
            InstructionsError: several kernels and none named ``name``.
        """
        if name in self.kernels:
            return self.kernels[name]
        if len(self.kernels) == 1:
            return next(iter(self.kernels.values()))
        raise InstructionsError(f"{self.path or 'instructions'}: no kernel {name!r} (it has "
                                f"{', '.join(sorted(self.kernels))})")

    def to_dict(self) -> dict:
        return {"format": FORMAT_NAME, "version": FORMAT_VERSION, "source": self.source,
                "kernels": {n: k.to_dict() for n, k in self.kernels.items()}}


def _counts(data, where: str) -> dict[str, int]:
    if not isinstance(data, dict):
        raise InstructionsError(f"{where}: expected a table of class -> count, got "
                                f"{type(data).__name__}")
    unknown = sorted(set(data) - set(INSTRUCTION_CLASSES))
    if unknown:
        raise InstructionsError(f"{where}: unknown class {unknown[0]!r} (classes: "
                                f"{', '.join(INSTRUCTION_CLASSES)})")
    for name, value in data.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise InstructionsError(f"{where}.{name}: must be a non-negative integer, got "
                                    f"{value!r}")
    return {c: data[c] for c in INSTRUCTION_CLASSES if c in data}


def _kernel(name: str, data, where: str) -> KernelInstructions:
    if not isinstance(data, dict) or "kernel" not in data:
        raise InstructionsError(f"{where}: expected a table with 'kernel' (and 'loops')")
    loops_data = data.get("loops", [])
    if not isinstance(loops_data, list):
        raise InstructionsError(f"{where}.loops: expected a list")
    loops = []
    for i, lp in enumerate(loops_data):
        at = f"{where}.loops[{i}]"
        if not isinstance(lp, dict) or "instructions_per_iteration" not in lp:
            raise InstructionsError(f"{at}: expected a table with 'instructions_per_iteration'")
        loops.append(LoopInstructions(str(lp.get("name", f"loop {i}")),
                                      _counts(lp["instructions_per_iteration"],
                                              f"{at}.instructions_per_iteration")))
    kernel = KernelInstructions(name, _counts(data["kernel"], f"{where}.kernel"), tuple(loops))
    hot = kernel.hot_loop
    if hot is not None and hot.total > _total(kernel.kernel):
        raise InstructionsError(f"{where}: loop {hot.name!r} has {hot.total} instructions, "
                                f"more than the kernel's {_total(kernel.kernel)}")
    return kernel


def instructions_from_dict(data, where: str = "instructions") -> InstructionsFile:
    """An :class:`InstructionsFile` from its JSON document (the module docstring).

    Raises:
        InstructionsError: another format or version, no kernels, a count that is not a
            non-negative integer, an unknown class, a loop longer than its kernel.
    """
    if not isinstance(data, dict) or data.get("format") != FORMAT_NAME:
        raise InstructionsError(f"{where}: not an instructions file (expected \"format\": "
                                f"\"{FORMAT_NAME}\")")
    if data.get("version") != FORMAT_VERSION:
        raise InstructionsError(f"{where}: version {data.get('version')!r} is not supported "
                                f"(supported: {FORMAT_VERSION})")
    kernels = data.get("kernels")
    if not isinstance(kernels, dict) or not kernels:
        raise InstructionsError(f"{where}: 'kernels' must be a non-empty table")
    return InstructionsFile({str(n): _kernel(str(n), k, f"{where}: kernels.{n}")
                             for n, k in kernels.items()}, str(data.get("source", "")), where)


def read_instructions(path) -> InstructionsFile:
    """Read an instructions file (JSON, the module docstring).

    Raises:
        InstructionsError: the file cannot be read, is not UTF-8 text (the first byte
            that is not, and its offset), is not JSON, or is malformed
            (:func:`instructions_from_dict`).
    """
    try:
        raw = Path(path).read_bytes()
    except OSError as err:
        raise InstructionsError(f"{path}: cannot read ({err.strerror})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InstructionsError(
            f"{path}: not UTF-8 text (byte 0x{raw[err.start]:02x} at offset {err.start}); "
            "an instructions file is JSON text in UTF-8") from None
    try:
        data = json.loads(text)
    except ValueError as err:
        raise InstructionsError(f"{path}: not JSON ({err})") from None
    return instructions_from_dict(data, str(path))


def write_instructions(counts: InstructionsFile, path) -> None:
    """Write ``counts`` as an instructions file (JSON)."""
    Path(path).write_text(json.dumps(counts.to_dict(), indent=1) + "\n")


def issued_from_build(kernel: KernelInstructions, flop: float, work_items: int,
                      sub_groups: int) -> float:
    """Sub-group instructions the launch issues according to the build's ``kernel`` counts.

    Args:
        kernel: the compiled kernel's counts.
        flop: the launch's FLOPs (the simulator's exact count).
        work_items: work-items of the launch (every work-group's).
        sub_groups: sub-groups of the launch.

    Returns:
        ``sub_groups`` x :meth:`KernelInstructions.per_sub_group` of one work-item's FLOPs
        (``flop / work_items``).
    """
    return sub_groups * kernel.per_sub_group(flop / max(1, work_items))
