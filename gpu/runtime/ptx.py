"""Performance-tuning directives added to the entries of NVIDIA's OpenCL PTX.

NVIDIA's OpenCL driver returns a program's PTX as its binary (``CL_PROGRAM_BINARIES``) and
builds a program from PTX text again (``clCreateProgramWithBinary``); its compiler takes no
register cap among its build options. A register budget is written into the PTX instead:
``.maxnreg N`` (at most N registers per thread) or ``.minnctapersm N`` (registers budgeted so
that N thread blocks fit one SM; it needs ``.maxntid`` or ``.reqntid``), placed between an
entry's parameter list and its body (PTX ISA, "Performance-Tuning Directives").

PTX is not C: an entry's parameter list is found by its ``.entry NAME(`` marker and its
matching parenthesis.
"""
from __future__ import annotations


class PtxError(ValueError):
    """The PTX has no entry of the given name, or its parameter list does not close."""


def with_directives(ptx: str, entry: str, directives: tuple[str, ...]) -> str:
    """``ptx`` with ``directives`` (e.g. ``(".maxnreg 128",)``) on lines after the closing
    parenthesis of ``.entry <entry>(...)``.

    Raises:
        PtxError: no ``.entry`` named ``entry``, or its parameter list does not close.
    """
    if not directives:
        return ptx
    at = -1
    for marker in (f".entry {entry}(", f".entry {entry} ("):
        at = ptx.find(marker)
        if at >= 0:
            at += len(marker) - 1
            break
    if at < 0:
        raise PtxError(f"the PTX has no .entry {entry}")
    depth = 0
    for i in range(at, len(ptx)):
        if ptx[i] == "(":
            depth += 1
        elif ptx[i] == ")":
            depth -= 1
            if depth == 0:
                text = "".join(f"\n{d}" for d in directives)
                return ptx[:i + 1] + text + ptx[i + 1:]
    raise PtxError(f"the parameter list of .entry {entry} does not close")


def directives_of(ptx: str) -> list[str]:
    """The performance-tuning directive lines of ``ptx`` (``.maxnreg``, ``.maxntid``,
    ``.reqntid``, ``.minnctapersm``), stripped, in order."""
    keys = (".maxnreg", ".maxntid", ".reqntid", ".minnctapersm")
    return [line.strip() for line in ptx.splitlines() if line.strip().startswith(keys)]
