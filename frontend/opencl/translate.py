"""OpenCL C into the schedule IR: one ``__kernel`` of a user's source becomes a
:class:`~tiletraffic.simulator.ir.nodes.Schedule` that every command counts, checks, models
and runs.

``parse_kernel(source, kernel, global_size, local_size, args)`` parses the source with
libclang (:mod:`frontend.opencl.clang_ast`: OpenCL C 1.2, the real preprocessor, ``-D`` build
options) and walks clang's tree of the kernel. The subset it accepts:

- arguments: ``__global`` (or ``__constant``) ``float*``/``float4*`` buffers (and
  ``char*``/``void*`` ones, whose pointers count bytes: cast back to a float pointer at an
  offset the front end shows is a multiple of 4), ``int2``/``uint2``/``int4``/``uint4``
  scalars (a list of integers, one IR parameter per component),
  ``int``/``uint``/``long``/``ulong`` scalars and ``float`` scalars (a
  :class:`~tiletraffic.simulator.ir.nodes.FloatParam`), ``const`` or not, and ``__local
  float *`` pointers to local memory the caller sizes (a
  :class:`~tiletraffic.simulator.ir.nodes.LocalArray` of the shape given);
- integers: ``int``/``uint``/``size_t`` variables, bound once (a ``Let``) or declared
  without a value and assigned any number of times (``=``, compound assignments, ``++``,
  ``--``: a ``DeclareInt`` and its ``AssignInt``\\ s), literals and
  macros, the kernel's scalars, ``get_global_id``, ``get_local_id``, ``get_group_id``,
  ``get_local_size``, ``get_num_groups``, ``get_global_size``; ``+ - * / %``, integer
  ``min``/``max``, shifts by constants (``>>`` of a negative value rounds down, as OpenCL's);
  in C's types: each value is congruent to C's modulo 2**bits of its type, and exact (a
  :class:`~tiletraffic.simulator.ir.nodes.Wrap` where its bounds for the launch leave the
  type's range: ``uint i = 0; i - 1`` is 4294967295) where a comparison, ``/``, ``%``,
  ``>>``, ``min``/``max``, an index or a widening conversion reads it; a ``size_t`` below 0
  there is refused by the simulator where a work-item computes it (64-bit unsigned values
  are beyond its int64), a loop variable below 0 compared as unsigned by the front end;
- floats: private scalars, ``float4`` private vectors, private arrays (``= {0}`` zero-fills),
  ``__local`` arrays of static shape (any rank), ``+ - * /``, ``fma``/``mad``, the IR's
  built-ins (``fmax``, ``fmin``, ``fabs``, ``sqrt``, ``exp``; float ``max``/``min`` as
  ``fmax``/``fmin``), ``select`` and ``?:`` on integer conditions (``?:`` without loads in its
  branches: C loads only the branch taken), loads of the buffers
  indexed by integer expressions, ``vload2/4``, ``vstore2/4`` and ``float4`` pointer casts (of a private float
  array too, at a constant offset that is a multiple of 4: ``*(float4 *)&reg[4]``);
- sub-groups (:mod:`~tiletraffic.frontend.opencl.subgroups`): ids and sizes, reductions
  and shuffles of floats, in sub-groups of the device model's size;
- statements: ``for`` loops counting up (``<``, ``<=``; ``++i``, ``i++``, ``i += s``,
  ``i = i + s``) as the IR's ``For``, other loops (``for`` of any kind, ``while``,
  ``do ... while``, with ``break`` and ``continue``) as ``While``, pointers moved
  (``p += n``) or pointed at another array (in sequence, the same array after both
  branches of an ``if`` and at both ends of a loop's body), ``if``/``else`` on integer conditions, ``return``, ``barrier`` with its
  fence flags (``work_group_barrier`` too, when the build options ask for ``-cl-std=CL2.0``
  or ``CL3.0``) and its place in the source for messages (``Barrier.source``, with the
  helper calls it is inlined through), ``#pragma unroll``, calls of helper functions
  defined in the source (inlined).

The kernel may be defined in the source or in a file it includes; ``__attribute__((...))``
on the kernel and on declarations is read only for ``reqd_work_group_size``.

Buffers are row-major float32 of the shape the caller gives: a flat index
``row * N + col`` of a buffer shaped ``(M, N)`` is read as the two indices ``(row, col)``
(each checked against its own extent, as the IR's arrays are), any other flat index as
``(flat / N, flat % N)``.

Anything else raises :class:`FrontendError` with ``file:line:column``, the construct and what
to write instead; a branch or an index that depends on loaded values is refused because
the traffic would depend on the data.

The translation is one :class:`KernelBuilder`, composed of one part per kind of construct:
:mod:`~tiletraffic.frontend.opencl.declarations` (arguments and declarations),
:mod:`~tiletraffic.frontend.opencl.statements` (statements, assignments, barriers),
:mod:`~tiletraffic.frontend.opencl.loops`, :mod:`~tiletraffic.frontend.opencl.calls`
(helpers inlined), :mod:`~tiletraffic.frontend.opencl.integers`,
:mod:`~tiletraffic.frontend.opencl.floats`, :mod:`~tiletraffic.frontend.opencl.vectors` and
:mod:`~tiletraffic.frontend.opencl.memory`, over the state of
:mod:`~tiletraffic.frontend.opencl.context`; :mod:`~tiletraffic.frontend.opencl.rewrite`
then folds C spellings back into single IR statements.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path

from tiletraffic.simulator.ir import nodes as S

from tiletraffic.frontend.opencl import clang_ast as C
from tiletraffic.frontend.opencl.attributes import (qcom_required_sub_group_size,
                                                    required_sub_group_size,
                                                    required_work_group_size)
from tiletraffic.frontend.opencl.calls import Calls
from tiletraffic.frontend.opencl.clang_ast import FrontendError
from tiletraffic.frontend.opencl.context import DATA_DEPENDENT
from tiletraffic.frontend.opencl.declarations import ACCESS, BufferArg, Declarations
from tiletraffic.frontend.opencl.floats import Floats
from tiletraffic.frontend.opencl.integers import Integers
from tiletraffic.frontend.opencl.loops import Loops
from tiletraffic.frontend.opencl.memory import Memory
from tiletraffic.frontend.opencl.rewrite import simplify
from tiletraffic.frontend.opencl.statements import Statements
from tiletraffic.frontend.opencl.subgroups import (SUB_GROUP_SIZE, SubGroups,
                                                   source_uses_sub_groups)
from tiletraffic.frontend.opencl.switch import Switches
from tiletraffic.frontend.opencl.vectors import Vectors

__all__ = ["FrontendError", "WorkGroupSizeError", "MacroRedefinedWarning", "parse_kernel",
           "kernel_names", "BufferArg", "DATA_DEPENDENT", "ACCESS", "KernelBuilder",
           "SourceNames", "source_names", "required_work_group_size", "program_source",
           "program_without_includes"]


class WorkGroupSizeError(FrontendError):
    """The kernel's ``__attribute__((reqd_work_group_size(X, Y, Z)))`` differs from the
    launch's work-group size (its dimensions padded with 1 to three): the device would
    refuse the launch. The message names both sizes."""


class MacroRedefinedWarning(UserWarning):
    """The source ``#define``s a macro the build options (or a tuned parameter) give with
    ``-D``: the source's definition is used, as the device compiler uses it. The message
    names the place and says how to take the ``-D`` value instead (``#ifndef``)."""


class KernelBuilder(Declarations, Statements, Loops, Switches, Calls, Integers, Floats,
                    Vectors, Memory, SubGroups):
    """Walks one kernel's cursors and builds IR statements (see the module docstring).

    ``KernelBuilder(cursor, path, global_size, local_size, args, sizes, cl_std)``;
    :meth:`build` gives the body's statements, after which ``params``, ``buffers``,
    ``local_arrays`` and ``arg_kinds`` describe the kernel's arguments and arrays."""


def kernel_names(source: str, path: str = "<source>", build_options="") -> list[str]:
    """The ``__kernel`` functions defined in ``source`` and the files it includes, in
    order.

    Raises:
        FrontendError: clang reports an error.
    """
    tu = C.parse(source, path, build_options)
    return [c.spelling for c in _kernels(tu, path)]


@dataclass(frozen=True)
class SourceNames:
    """The names of an OpenCL C source a ``-D`` macro can reach.

    Attributes:
        identifiers: every identifier token of the source and of the files it includes
            (not the built-in declarations), preprocessor lines included.
        defined_macros: the macros the source itself ``#define``s, in order.
        redefined: the macros of the build options (``-D``) that the source or a file it
            includes ``#define``s again, each with the place of that ``#define``
            (``file:line:column``): the source's value is the one compiled.
    """

    identifiers: frozenset
    defined_macros: tuple
    redefined: dict = field(default_factory=dict)


def source_names(source: str, path: str = "<source>", build_options="") -> SourceNames:
    """:class:`SourceNames` of ``source`` (the text of ``path``), from one parse.

    Raises:
        FrontendError: clang reports an error.
    """
    return unit_source_names(C.parse(source, path, build_options), path)


def unit_source_names(tu, path: str, shipped=lambda file_name: False) -> SourceNames:
    """:class:`SourceNames` of the parsed translation unit ``tu`` of the file ``path``: the
    identifiers of the source and of the files it includes but those ``shipped(name)``
    says are headers of this package, the macros ``path`` defines, the ``-D`` macros the
    source defines again."""
    from clang import cindex
    tokens = frozenset(t.spelling for e in C.source_extents(tu)
                       if e.start.file is None or not shipped(e.start.file.name)
                       for t in tu.get_tokens(extent=e) if t.kind == cindex.TokenKind.IDENTIFIER)
    defined = tuple(c.spelling for c in tu.cursor.get_children()
                    if c.kind == cindex.CursorKind.MACRO_DEFINITION and _in_file(c, path))
    return SourceNames(tokens, defined, C.redefined_build_macros(tu))


def _kernels(tu, path):
    """The kernels defined in the source ``path`` or a file it includes (not the built-in
    declarations), each once, in order."""
    from clang.cindex import CursorKind
    seen = set()
    for c in tu.cursor.get_children():
        f = c.location.file
        if c.kind == CursorKind.FUNCTION_DECL and c.is_definition() and f is not None and \
                Path(f.name) != C.BUILTINS_HEADER and c.spelling not in seen and \
                C.is_kernel(c):
            seen.add(c.spelling)
            yield c


def _in_file(cursor, path) -> bool:
    f = cursor.location.file
    return f is not None and f.name == path


def parse_kernel(source: str, kernel: str, global_size, local_size, args: dict, *,
                 sizes: dict | None = None, build_options="", path: str | None = None,
                 display_names: dict | None = None) -> S.Schedule:
    """The schedule of ``kernel`` in the OpenCL C text ``source``.

    Args:
        source: the OpenCL C text (the file's contents when ``path`` names it).
        kernel: name of a ``__kernel`` function in it (or in a file it ``#include``s).
        global_size, local_size: the NDRange and the work-group size (work-items per
            dimension, 1 to 3 dimensions; the global size a multiple of the local one).
        args: every kernel argument by name: an ``int`` for an integer scalar, a number for
            a ``float`` one, a :class:`BufferArg` (or a dict ``{"shape": [...], "access":
            "in"}``) for a buffer, and for a ``__local float *`` (``float2/4/8 *``)
            argument its size: a :class:`BufferArg` or a dict with ``shape`` (elements of
            the pointee type, row-major; an ``access`` is ignored) or ``local_bytes``
            (bytes, as ``clSetKernelArg`` takes them).
        sizes: values of the names the buffer shapes use that are not scalar arguments.
        build_options: ``-D``/``-U``/``-I`` options (a string or a list).
        path: the file name used in messages and for ``#include`` (default ``<source>``).
        display_names: how the user wrote each C name that differs from it (a kernel
            translated into C from another language), for the accesses' text in messages.

    Returns:
        A :class:`Schedule` of family ``opencl:<kernel>`` whose ``extra["opencl"]`` keeps the
        source, build options and argument kinds, so that running it launches this text.

    Warns:
        MacroRedefinedWarning: the source ``#define``s again a macro of the build options
            (:func:`frontend.opencl.clang_ast.redefined_macros`); its definition is used.

    Raises:
        FrontendError: a parse error or a construct outside the subset (one line with
            file:line:column), an argument left out or unknown, a bad shape or access, a
            ``__local`` vector argument shaped ``[..., width]`` that the kernel indexes
            only by one flat index.
        WorkGroupSizeError: the kernel's ``reqd_work_group_size`` is not ``local_size``.
        tiletraffic.simulator.ir.nodes.ScheduleError: the NDRange is invalid.
    """
    path = path or "<source>"
    tu = C.parse(source, path, build_options)
    for line in C.redefined_macros(tu):
        warnings.warn(line, MacroRedefinedWarning, stacklevel=2)
    found = {c.spelling: c for c in _kernels(tu, path)}
    if kernel not in found:
        raise FrontendError(f"{path}: no __kernel named {kernel!r}; it defines "
                            f"{', '.join(found) or 'none'}")
    gsize, lsize = tuple(int(g) for g in global_size), tuple(int(x) for x in local_size)
    S.check_ndrange(gsize, lsize, f"{path}: {kernel}")
    if len(lsize) > 3:
        raise FrontendError(f"{path}: {kernel}: {len(lsize)} NDRange dimensions; at most 3")
    required = required_work_group_size(found[kernel], source, path, build_options)
    if required is not None:
        wanted, attr = required
        given = lsize + (1,) * (3 - len(lsize))
        if wanted != given:
            raise WorkGroupSizeError(
                f"{C.where(attr, path)}: kernel {kernel} requires the work-group size "
                f"{_sizes(wanted)} (reqd_work_group_size), but the launch's local size is "
                f"{_sizes(given)}: launch it with local size {_sizes(wanted)} or change the "
                "attribute")
    qcom = qcom_required_sub_group_size(tu, found[kernel], path)
    if qcom is not None and qcom[0] != SUB_GROUP_SIZE:
        raise FrontendError(
            f"{qcom[1]}: kernel {kernel} requires sub-groups of "
            f"{qcom[0] or 'an Adreno-specific number of'} work-items "
            f"(qcom_reqd_sub_group_size), but the device model's sub-group size is "
            f"{SUB_GROUP_SIZE}")
    sub_group = required_sub_group_size(found[kernel], source, path, build_options)
    if sub_group is not None and sub_group[0] != SUB_GROUP_SIZE:
        raise FrontendError(
            f"{C.where(sub_group[1], path)}: kernel {kernel} requires sub-groups of "
            f"{sub_group[0]} work-items (intel_reqd_sub_group_size), but the device model's "
            f"sub-group size is {SUB_GROUP_SIZE}")
    options = tuple(C.split_build_options(build_options))
    builder = KernelBuilder(found[kernel], path, gsize, lsize, dict(args), dict(sizes or {}),
                            _cl_std(options))
    builder.display_names = dict(display_names or {})
    body = simplify(builder.build(), builder.vector_components)
    parent = Path(path).parent
    if any(Path(inc.include.name) != C.BUILTINS_HEADER for inc in tu.get_includes()) and \
            parent.is_dir():
        options += (f"-I{parent.resolve()}",)   # the device compiler finds the headers too
    opencl = {"source": source, "kernel": kernel, "path": path,
              "build_options": options,
              "args": tuple(builder.arg_kinds)}
    if builder.int_vectors:         # the parameters of each int2/int4 argument
        opencl["int_vectors"] = dict(builder.int_vectors)
    if builder.uses_sub_groups or source_uses_sub_groups(tu):   # run as rendered
        opencl["sub_group_size"] = SUB_GROUP_SIZE
    return S.Schedule(
        family=f"opencl:{kernel}", kernel_name=kernel, params=tuple(builder.params.items()),
        arrays=tuple(b.array for b in builder.buffers.values()),
        local_arrays=tuple(builder.local_arrays), local_size=lsize, global_size=gsize,
        body=body, tile=lsize[0], description=f"{Path(path).name}: {kernel}",
        extra={"opencl": opencl})


def program_source(files, folder) -> tuple[str, str]:
    """(text, path) of one program of the OpenCL C ``files`` in order, as a host that
    concatenates them builds it: a line ``#include "FILE"`` per file (relative to
    ``folder``), so that messages name each file's own lines; ``path`` names the program
    (the file names joined by ``+``, in ``folder``; no file of that name is read). One file
    is its own text and path.

    Raises:
        OSError: a file cannot be read.
    """
    import os
    files = [Path(f) for f in files]
    if len(files) == 1:                      # the file itself
        return files[0].read_text(), str(files[0])
    for f in files:
        f.read_bytes()
    text = "".join(f'#include "{Path(os.path.relpath(f, folder)).as_posix()}"\n'
                   for f in files)
    return text, str(Path(folder) / "+".join(f.name for f in files))


def program_without_includes(texts: list[tuple[str, str]]) -> str:
    """One program of the OpenCL C ``texts`` (``(name, text)`` in order) as a host builds it
    that drops every line beginning with ``#include `` from each file and joins the files
    with a newline (silx's and pyFAI's ``concatenate_cl_kernel``): each dropped line left
    empty and each file preceded by ``#line 1 "name"``, so that messages name each file's
    own lines. A line filter of the host's, not a reading of C: the compilers read the
    text that results."""
    parts = []
    for name, text in texts:
        lines = ["\n" if line.startswith("#include ") else line
                 for line in text.splitlines(keepends=True)]
        parts.append(f'#line 1 "{name}"\n' + "".join(lines))
    return "\n".join(parts)


def _cl_std(options) -> str | None:
    """The OpenCL C version ``-cl-std=`` asks for (the last one given), upper-cased."""
    stds = [o.partition("=")[2].upper() for o in options if o.startswith("-cl-std=")]
    return stds[-1] if stds else None


def _sizes(sizes) -> str:
    return f"({', '.join(map(str, sizes))})"
