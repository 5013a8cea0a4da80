"""Oclgrind's diagnostics: its log and API-check messages parsed into :class:`Diagnostic`
records, and the simulator's hazard kinds each corresponds to.

Oclgrind's logger writes every message as ``\n<message>\n`` to the file named by
``OCLGRIND_LOG``; host API errors (``OCLGRIND_CHECK_API``) go to standard error.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator

__all__ = ["SIMULATOR_HAZARD_KINDS", "Diagnostic", "OclgrindDiagnostics", "parse_diagnostics",
           "split_messages", "local_array_names"]


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
    """What :func:`gpu.oclgrind.oclgrind.oclgrind_check` found.

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
    """``"4,0,0"`` -> ``(4, 0, 0)``."""
    return tuple(int(v) for v in text.split(","))


def split_messages(log: str) -> tuple[list[str], bool]:
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


def local_array_names(source: str, kernel_name: str | None = None,
                      build_options=()) -> list[str]:
    """The ``__local`` arrays declared inside the ``__kernel`` function ``kernel_name`` of
    the OpenCL C text ``source`` (every kernel's where ``None``), in declaration order, as
    libclang reads the source with ``build_options``: the order Oclgrind numbers the
    work-group's local allocations in. ``[]`` where clang cannot read the source (then
    local addresses are not named)."""
    from tiletraffic.frontend.opencl import clang_ast as C
    from tiletraffic.frontend.opencl.c_types import address_space, type_kind
    from tiletraffic.frontend.opencl.clang_ast import FrontendError
    from clang.cindex import CursorKind as K
    try:
        tu = C.parse(source, "<source>", build_options)
    except FrontendError:
        return []
    names = []
    for function in tu.cursor.get_children():
        if function.kind != K.FUNCTION_DECL or not function.is_definition() or \
                not C.is_kernel(function) or \
                kernel_name is not None and function.spelling != kernel_name:
            continue
        for c in function.walk_preorder():
            if c.kind == K.VAR_DECL and address_space(c.type) == "__local" and \
                    type_kind(c.type) == "CONSTANTARRAY":
                names.append(c.spelling)
    return names


def _parse_message(text: str, buffers: dict[str, tuple[int, int]],
                   local_names: list[str]) -> Diagnostic:
    """One message of the log as a :class:`Diagnostic` (see :func:`parse_diagnostics`)."""
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
    messages, truncated = split_messages(log)
    diags = [_parse_message(m, buffers or {}, local_names or []) for m in messages]
    for m in _API.finditer(stderr):
        body = m.group(1).strip()
        text = "Oclgrind - OpenCL runtime error detected\n\t" + body
        fn = re.search(r"Function:\s*(\S+)", body)
        err = re.search(r"Error:\s*(\S+)", body)
        summary = f"OpenCL API error in {fn.group(1) if fn else '?'}: {err.group(1) if err else '?'}"
        diags.append(Diagnostic(kind="api-error", summary=summary, text=text))
    return OclgrindDiagnostics(diagnostics=diags, truncated=truncated, log=log, stderr=stderr)
