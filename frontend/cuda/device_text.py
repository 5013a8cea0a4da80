"""The text NVRTC compiles for a launch of a CUDA file's own kernel: the file and the
project headers it includes (those clang found that are not the declarations shipped with
the front end), each with what only a host compiler takes blanked, every newline kept so
that each line keeps its number:

- host functions (neither ``__device__`` nor ``__global__``), defined or only declared;
- classes and structs that declare a host member function, and member functions defined
  outside their class;
- the ``#include`` lines of headers not found (the host's libraries: PyTorch's ``ATen``,
  ``<array>``, ...).

Preprocessor lines inside what is blanked are kept (``#if``/``#else``/``#endif`` stay
balanced), except those ``#include`` lines.

NVRTC compiles device code only and refuses host functions ("host functions are not allowed
in JIT mode"); a kernel cannot call any of these, so blanking them changes no kernel.
"""
from __future__ import annotations

from pathlib import Path


DEVICE_ATTRS = frozenset({"CUDADEVICE_ATTR", "CUDAGLOBAL_ATTR", "CUDACONSTANT_ATTR",
                          "CUDASHARED_ATTR"})
FUNCTIONS = ("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD", "CONSTRUCTOR", "DESTRUCTOR",
             "CONVERSION_FUNCTION")
CLASSES = ("CLASS_DECL", "STRUCT_DECL", "UNION_DECL", "CLASS_TEMPLATE",
           "CLASS_TEMPLATE_PARTIAL_SPECIALIZATION")
TYPES = ("ENUM_DECL", "TYPEDEF_DECL", "TYPE_ALIAS_DECL", "TYPE_ALIAS_TEMPLATE_DECL",
         "NAMESPACE_ALIAS", "USING_DIRECTIVE", "USING_DECLARATION", "STATIC_ASSERT")
SCOPES = ("NAMESPACE", "LINKAGE_SPEC", "UNEXPOSED_DECL")


def _attrs(cursor) -> set:
    return {k.kind.name for k in cursor.get_children()}


def _is_host(function) -> bool:
    return not (_attrs(function) & DEVICE_ATTRS)


def _has_host_member(cls) -> bool:
    return any(m.kind.name in FUNCTIONS and _is_host(m) for m in cls.get_children())


def _kept(cursor) -> bool:
    """Whether a declaration at namespace scope is kept in the device text."""
    kind = cursor.kind.name
    if kind in FUNCTIONS:
        return not _is_host(cursor)
    if kind in CLASSES:
        return not _has_host_member(cursor)
    if kind == "VAR_DECL":        # device variables and constants the kernels may read
        return bool(_attrs(cursor) & DEVICE_ATTRS) or cursor.type.is_const_qualified()
    return kind in TYPES


def keep_spans(tu, name: str, dropped=frozenset()) -> list[tuple[int, int]]:
    """The ``(start, end)`` byte offsets of what the file ``name`` keeps in its device text:
    device functions, types, device variables and constants, and the braces of the
    namespaces and ``extern "C"`` blocks around them (see the module docstring); not the
    declarations that start at the offsets ``dropped``."""
    out: list = []

    def visit(parent):
        for c in parent.get_children():
            f = c.location.file
            if f is None or f.name != name:
                continue
            if c.kind.name in SCOPES:
                tokens = list(c.get_tokens())
                opening = next((t for t in tokens if t.spelling == "{"), None)
                if c.kind.name == "LINKAGE_SPEC" and (len(tokens) < 3 or
                                                      tokens[2].spelling != "{"):
                    opening = None
                if opening is None:                  # extern "C" f(...): one declaration
                    inner = list(c.get_children())
                    if inner and _kept(inner[0]):
                        out.append((c.extent.start.offset, c.extent.end.offset))
                    continue
                out.append((c.extent.start.offset, opening.extent.end.offset))
                out.append((c.extent.end.offset - 1, c.extent.end.offset))
                visit(c)
            elif _kept(c) and c.extent.start.offset not in dropped:
                out.append((_with_template_header(tu, name, c.extent.start.offset),
                            _with_semicolon(tu, name, c.extent.end.offset)))
    visit(tu.cursor)
    return out


def _missing_include_lines(tu, name: str, data: bytes) -> list[tuple[int, int]]:
    """The byte spans of the ``#include`` lines of ``name`` whose header was not found."""
    out = []
    for d in tu.diagnostics:
        loc = d.location
        if d.spelling.endswith(" file not found") and loc.file is not None and \
                loc.file.name == name:
            start = data.rfind(b"\n", 0, loc.offset) + 1
            end = data.find(b"\n", loc.offset)
            out.append((start, len(data) if end < 0 else end))
    return out


def _directive_bytes(data: bytes) -> list[bool]:
    """Per byte of ``data``, whether it belongs to a preprocessor line (``#...`` and the
    lines it continues with a backslash)."""
    inside = [False] * len(data)
    start, continued = 0, False
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        line = data[start:end].rstrip(b"\r")
        directive = continued or line.lstrip(b" \t").startswith(b"#")
        if directive:
            inside[start:end] = [True] * (end - start)
        continued = directive and line.endswith(b"\\")
        start = end + 1
    return inside


def device_text(tu, name: str, text: str, dropped=frozenset()) -> str:
    """The device text of the file ``name`` (its ``text``) clang read as part of ``tu``:
    every byte outside :func:`keep_spans` and the preprocessor lines made a space (the
    ``#include`` lines of headers not found too), newlines kept."""
    data = bytearray(text.encode("utf-8"))
    keep = [False] * len(data)
    for start, end in keep_spans(tu, name, dropped):
        keep[start:min(end, len(data))] = [True] * max(0, min(end, len(data)) - start)
    directive = _directive_bytes(bytes(data))
    for start, end in _missing_include_lines(tu, name, bytes(data)):
        directive[start:end] = [False] * (end - start)
    for i, byte in enumerate(data):
        if byte not in (10, 13) and not keep[i] and not directive[i]:
            data[i] = 32
    return data.decode("utf-8", errors="replace")


def _with_template_header(tu, name: str, start: int) -> int:
    """``start``, or where ``template <>`` begins when those tokens come right before it
    (an explicit specialization, whose extent clang starts after them)."""
    from clang.cindex import SourceLocation, SourceRange
    try:
        file = tu.get_file(name)
        first = SourceLocation.from_offset(tu, file, max(0, start - 120))
        at = SourceLocation.from_offset(tu, file, start)
    except Exception:      # a file libclang did not read: nothing to extend
        return start
    before = [t for t in tu.get_tokens(extent=SourceRange.from_locations(first, at))
              if t.extent.start.offset < start]
    if [t.spelling for t in before[-3:]] == ["template", "<", ">"]:
        return before[-3].extent.start.offset
    return start


def _with_semicolon(tu, name: str, end: int) -> int:
    """``end``, or past the ``;`` that comes right after it (a declaration's extent ends
    before its semicolon)."""
    from clang.cindex import SourceLocation, SourceRange
    try:
        file = tu.get_file(name)
        after = list(tu.get_tokens(extent=SourceRange.from_locations(
            SourceLocation.from_offset(tu, file, end),
            SourceLocation.from_offset(tu, file, end + 40))))
    except Exception:      # past the end of the file
        return end
    nxt = [t for t in after if t.extent.start.offset >= end]
    return nxt[0].extent.end.offset if nxt and nxt[0].spelling == ";" else end


def device_source(tu, source: str, path: str, chosen=None) -> str:
    """The device text of the source ``path`` (its ``source``): what NVRTC compiles for a
    launch of the file's own kernel; with the kernel's cursor ``chosen``, the other
    overloads of its name are left out (so that its name names one kernel)."""
    from tiletraffic.frontend.cuda.clang_cuda import _global_definitions
    dropped = frozenset() if chosen is None else frozenset(
        c.extent.start.offset for c in _global_definitions(tu)
        if c.spelling == chosen.spelling and c != chosen and c.location.file is not None
        and c.location.file.name == path)
    return device_text(tu, path, source, dropped)


def device_headers(tu, path: str) -> dict[str, str]:
    """The project headers the source ``path`` includes (resolved path -> device text),
    for NVRTC to read in place of the files (see the module docstring)."""
    from tiletraffic.frontend.cuda.clang_cuda import INCLUDE
    main, shipped = Path(path).resolve(), INCLUDE.resolve()
    out = {}
    for inclusion in tu.get_includes():
        name = inclusion.include.name
        header = Path(name).resolve()
        if header == main or header.is_relative_to(shipped) or not header.is_file() or \
                str(header) in out:
            continue
        out[str(header)] = device_text(tu, name,
                                       header.read_text(encoding="utf-8", errors="replace"))
    return out
