"""Loads in flight per warp, read off a kernel's machine code (SASS disassembly text).

A warp issues its instructions in order: in an unrolled loop it issues global loads until
an instruction needs a loaded value that has not arrived, and waits there. The loads issued
before the loop's first multiply-add are therefore the most a warp has in flight when it
first waits: its memory-level parallelism (Little's law: bytes in flight = bandwidth ×
latency; Hong and Kim, "An analytical model for a GPU architecture with memory-level and
thread-level parallelism awareness", ISCA 2009, call the warp-level form MWP). Nothing here
needs a GPU: the disassemblies come from ``experiments/h200/codegen/driver.py``
(``codegen/code.tar.gz`` of a report directory, made by ``cuobjdump -sass`` on the device).

Scope: the measure is meant for single-path k-loops like the matrix-vector kernels' (loads,
then multiply-adds, one back edge). It counts every instruction between a loop's top and its
back edge, so both arms of an if/else inside the body count; a loop whose global loads end
in a barrier (the tiled GEMMs' K-tile loop) waits at the barrier, not at its first
multiply-add, and its figure means nothing.
"""
from __future__ import annotations

import re
import tarfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path

_INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
_BRANCH = re.compile(r"\bBRA(?:\.\w+)*\s+(?:[!\w]+,\s*)?(0x[0-9a-f]+)")
_FUNCTION = re.compile(r"^\s*Function\s*:", re.MULTILINE)
_PREDICATE = re.compile(r"^@!?U?P[T\d]+\s+")
_ADDRESS = re.compile(r"\[(R\d+)(?:\.64)?(\+-?0x[0-9a-f]+)?\]\s*$")


@dataclass(frozen=True)
class LoopIssue:
    """The innermost loop of a disassembly with the most multiply-adds.

    Attributes:
        global_loads: ``LDG`` instructions in one trip through the loop body.
        local_loads: ``LDS`` instructions in one trip.
        fmas: ``FFMA`` instructions in one trip (one per k-step in the kernels here).
        global_loads_before_first_fma: ``LDG`` issued from the loop's top to its first
            ``FFMA``, the loads a warp has in flight when it first waits.
        instructions, local_stores, barriers: all instructions, ``STS`` and ``BAR`` of one
            trip (not compared: two loops are equal by the four counts above).
        sequence: the trip's global loads, local loads and FFMAs in issue order: a global
            load as its address register and byte offset (``R4+0x18``, ``R4+-0x8``), ``S``
            a local load, ``F`` an FFMA (which array a register holds is read off the
            prologue: the kernel's arguments are at ``c[0x0][0x210]``, ``0x218``, ...).
    """

    global_loads: int
    local_loads: int
    fmas: int
    global_loads_before_first_fma: int
    instructions: int = field(default=0, compare=False)
    local_stores: int = field(default=0, compare=False)
    barriers: int = field(default=0, compare=False)
    sequence: tuple[str, ...] = field(default=(), compare=False)

    @property
    def k_steps_in_flight(self) -> float:
        """Global loads before the first multiply-add / global loads per multiply-add:
        the k-steps whose loads a warp has issued when it first waits."""
        if not (self.fmas and self.global_loads):
            return 0.0
        return self.global_loads_before_first_fma / (self.global_loads / self.fmas)


def _opcodes(text: str) -> list[tuple[int, str]]:
    out = []
    for address, body in _INSTRUCTION.findall(text):
        out.append((int(address, 16), _PREDICATE.sub("", body)))
    return out


def _root(op: str) -> str:
    """``LDG.E.CONSTANT R2, ...`` -> ``LDG`` (so ``LDGSTS`` is not a ``LDG``)."""
    return op.split()[0].split(".")[0] if op else ""


def _token(op: str) -> str | None:
    """:attr:`LoopIssue.sequence`'s token of one instruction (None: not listed)."""
    root = _root(op)
    if root == "LDG":
        m = _ADDRESS.search(op)
        return m.group(1) + (m.group(2) or "+0x0") if m else "LDG"
    return {"LDS": "S", "FFMA": "F"}.get(root)


def function_text(sass_text: str, name: str) -> str | None:
    """The disassembly of the function called exactly ``name`` (its ``Function :`` section),
    or None where there is none."""
    m = re.search(rf"^\s*Function\s*:\s*{re.escape(name)}\s*$", sass_text, re.MULTILINE)
    return None if m is None else _FUNCTION.split(sass_text[m.end():])[0]


def main_loop(sass_text: str) -> LoopIssue:
    """The innermost loop (a backward branch whose body holds no other backward branch) with
    the most ``FFMA`` instructions, counted; with several kernels in the text (``Function :``
    sections), over all of them, each on its own addresses.

    Raises:
        ValueError: the text has no loop with a multiply-add.
    """
    best = None
    for function in _FUNCTION.split(sass_text):
        code = _opcodes(function)
        loops = []
        for address, body in code:
            if (m := _BRANCH.search(body)) and int(m.group(1), 16) < address:
                loops.append((int(m.group(1), 16), address))
        innermost = [(a, b) for a, b in loops
                     if not any(a <= c and d <= b and (c, d) != (a, b) for c, d in loops)]
        for top, bottom in innermost:
            body = [op for address, op in code if top <= address <= bottom]
            ops = [_root(op) for op in body]
            fmas = ops.count("FFMA")
            if fmas and (best is None or fmas > best[0]):
                first = ops.index("FFMA")
                best = (fmas, LoopIssue(
                    global_loads=ops.count("LDG"), local_loads=ops.count("LDS"), fmas=fmas,
                    global_loads_before_first_fma=ops[:first].count("LDG"),
                    instructions=len(ops), local_stores=ops.count("STS"),
                    barriers=ops.count("BAR"),
                    sequence=tuple(t for t in map(_token, body) if t is not None)))
    if best is None:
        raise ValueError("no loop with a multiply-add (FFMA) in this disassembly")
    return best[1]


def loops_in_archive(archive: str | Path, suffix: str = ".opencl-jit.0.sass"
                     ) -> dict[str, LoopIssue]:
    """:func:`main_loop` of every disassembly in ``archive`` (``codegen/code.tar.gz``) whose
    name ends in ``suffix`` (default: the OpenCL driver's JIT, the code OpenCL runs), keyed
    by the name before it (``matvec-naive-T256``). A disassembly without such a loop is
    left out with a warning."""
    out = {}
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            name = Path(member.name).name
            if member.isfile() and name.endswith(suffix):
                text = tar.extractfile(member).read().decode()
                try:
                    out[name.removesuffix(suffix)] = main_loop(text)
                except ValueError as err:
                    warnings.warn(f"{archive}: {member.name}: {err}", stacklevel=2)
    return out
