"""The kernel's ``reqd_work_group_size(X, Y, Z)`` attribute, read from clang's tokens of it
(sizes written as integer literals) or evaluated by clang (macros, constant expressions)."""
from __future__ import annotations

from tiletraffic.frontend.opencl import clang_ast as C
from tiletraffic.frontend.opencl.clang_ast import FrontendError


_REQUIRED_SIZE = ("reqd_work_group_size", "__reqd_work_group_size__")
_REQUIRED_SIZE_PROBE = "__tiletraffic_reqd_work_group_size"


def required_work_group_size(kernel, source: str, path: str, build_options=()):
    """The sizes ``(X, Y, Z)`` of the ``reqd_work_group_size`` attribute of the ``kernel``
    cursor (of ``source``, the text of ``path``) and the attribute's cursor, or ``None``
    without one. Sizes written as integer literals are read as such; others (macros,
    expressions) are evaluated by clang, in a parse of the source followed by a constant
    initialised with the attribute's arguments.

    Raises:
        FrontendError: the attribute's arguments are not three constants clang evaluates.
    """
    for attr, args in _attributes(kernel, _REQUIRED_SIZE):
        if args is None or len(args) != 3 or not all(args):
            C.fail(attr, "reqd_work_group_size: write its three sizes, "
                         "reqd_work_group_size(X, Y, Z)", path)
        values = [C.integer_literal(a[0]) if len(a) == 1 else None for a in args]
        if None in values:
            values = _evaluate_constants(args, source, path, build_options, attr)
        return tuple(values), attr
    return None


def _attributes(kernel, names):
    """``(cursor, arguments)`` of each attribute of the ``kernel`` cursor spelled as one of
    ``names``, its arguments as :func:`_attribute_arguments` reads them."""
    from itertools import islice
    for attr in kernel.get_children():
        if not attr.kind.is_attribute():
            continue
        tokens = [t.spelling for t in islice(attr.get_tokens(), 256)]
        if tokens and tokens[0] in names:
            yield attr, _attribute_arguments(tokens)


def _attribute_arguments(tokens) -> list[list[str]] | None:
    """The arguments of ``name ( a , b , c )`` as token lists (tokens after the closing
    parenthesis ignored), or None without the parentheses."""
    if len(tokens) < 2 or tokens[1] != "(":
        return None
    args, current, depth = [], [], 0
    for t in tokens[2:]:
        if t == ")" and depth == 0:
            return args + [current]
        if t == "," and depth == 0:
            args.append(current)
            current = []
            continue
        depth += (t == "(") - (t == ")")
        current.append(t)
    return None


def _evaluate_constants(args, source, path, build_options, at) -> list[int]:
    """The integer values of the token lists ``args`` where the source ends, by clang."""
    from clang.cindex import CursorKind as K
    probe = (f"{source}\n__constant int {_REQUIRED_SIZE_PROBE}[] = "
             f"{{{', '.join(' '.join(a) for a in args)}}};\n")
    written = ", ".join(" ".join(a) for a in args)
    try:
        tu = C.parse(probe, path, build_options)
    except FrontendError as err:
        C.fail(at, f"reqd_work_group_size({written}): its sizes are not constants clang "
                   f"evaluates at the end of the source ({err})", path)
    for c in tu.cursor.get_children():
        if c.kind == K.VAR_DECL and c.spelling == _REQUIRED_SIZE_PROBE:
            lists = [k for k in C.children(c) if k.kind == K.INIT_LIST_EXPR]
            values = [C.evaluate(k) for k in C.children(lists[0])] if lists else []
            if len(values) == 3 and all(isinstance(v, int) for v in values):
                return values
    C.fail(at, f"reqd_work_group_size({written}): its sizes are not three integer "
               "constants", path)


_REQUIRED_SUB_GROUP = ("intel_reqd_sub_group_size", "__intel_reqd_sub_group_size__")


def required_sub_group_size(kernel, source: str, path: str, build_options=()):
    """The size of the ``intel_reqd_sub_group_size(N)`` attribute of the ``kernel`` cursor
    and the attribute's cursor, or ``None`` without one (``N`` a literal, or a constant
    clang evaluates).

    Raises:
        FrontendError: the attribute's argument is not one constant clang evaluates.
    """
    for attr, args in _attributes(kernel, _REQUIRED_SUB_GROUP):
        if args is None or len(args) != 1 or not args[0]:
            C.fail(attr, "intel_reqd_sub_group_size: write its size, "
                         "intel_reqd_sub_group_size(N)", path)
        if len(args[0]) == 1:
            return C.integer_literal(args[0][0]), attr
        return _evaluate_constants(args * 3, source, path, build_options, attr)[0], attr
    return None


QCOM_SUB_GROUP_SIZES = {"half": 64, "full": 128}
"""Work-items per sub-group that Qualcomm's ``qcom_reqd_sub_group_size("half")`` and
``("full")`` ask an Adreno GPU for (half or all of its 128-wide waves)."""


def qcom_required_sub_group_size(tu, kernel, path: str):
    """``(size, "file:line:column")`` of a ``qcom_reqd_sub_group_size("half"|"full")``
    attribute written on the ``kernel`` cursor (between the declaration before it and its
    body), which clang ignores with a warning; ``None`` without one."""
    from clang import cindex
    start = kernel.extent.start
    previous = None
    for c in tu.cursor.get_children():
        if c == kernel:
            break
        if c.location.file is not None and start.file is not None and \
                c.location.file.name == start.file.name:
            previous = c.extent.end
    for d in tu.diagnostics:
        loc = d.location
        if "qcom_reqd_sub_group_size" not in d.spelling or loc.file is None or \
                start.file is None or loc.file.name != start.file.name:
            continue
        body = next((c for c in kernel.get_children()
                     if c.kind == cindex.CursorKind.COMPOUND_STMT), None)
        end = body.extent.start.offset if body is not None else kernel.extent.end.offset
        if loc.offset < end and (previous is None or loc.offset > previous.offset):
            tokens = [t.spelling for t in tu.get_tokens(extent=cindex.SourceRange.from_locations(
                loc, cindex.SourceLocation.from_offset(tu, loc.file, min(
                    loc.offset + 64, end))))]
            words = [t.strip('"') for t in tokens if t.startswith('"')]
            size = QCOM_SUB_GROUP_SIZES.get(words[0]) if words else None
            return size, f"{path if loc.file.name == path else loc.file.name}:{loc.line}:" \
                         f"{loc.column}"
    return None
