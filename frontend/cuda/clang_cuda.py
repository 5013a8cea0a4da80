"""libclang access for the CUDA front end: parse a ``.cu`` source as CUDA device code, list its
``__global__`` kernels, and instantiate a kernel template with the launch's arguments.

The source is parsed by clang itself as CUDA C++ (``-x cuda -nocudainc -nocudalib
--cuda-device-only -std=c++17``), without a CUDA toolkit: ``include/cuda_builtins.h`` beside
this module declares what kernels use (the execution-space keywords, ``threadIdx``,
``blockIdx``, ``blockDim``, ``gridDim``, ``float2``/``float4`` and ``make_float4``,
``__syncthreads``, the warp shuffles, ``__ldg``, the float functions, the runtime calls of
host code), and ``include/cuda_stubs/`` holds the system headers real files include
(``<cstdio>``, ``<cassert>``, ``<cstdlib>``, ``<cuda_runtime.h>``,
``<cooperative_groups.h>``, ...), declarations only.

A kernel template (``template <int BM, bool B> __global__ void k(...)``) is instantiated by
appending to the source a copy of the kernel's text, without its template header, in a
namespace that defines each template parameter as a ``constexpr`` of the launch's value; a
``#line`` directive keeps every position of the copy the one of the kernel as written, for
messages.

Errors: :class:`~tiletraffic.frontend.opencl.clang_ast.FrontendError` whose message starts
with ``file:line:column:``.
"""
from __future__ import annotations

import functools
from pathlib import Path

from tiletraffic.frontend.opencl import clang_ast as C
from tiletraffic.frontend.opencl.clang_ast import FrontendError

INCLUDE = Path(__file__).with_name("include")
BUILTINS_HEADER = INCLUDE / "cuda_builtins.h"
"""Declarations every CUDA source is parsed with (included before the source)."""
STUBS = INCLUDE / "cuda_stubs"
"""The system headers a CUDA source may include (declarations only)."""

CLANG_ARGS = ("-x", "cuda", "-std=c++17", "-nocudainc", "-nocudalib", "--cuda-device-only",
              "-nostdinc", "-nostdinc++", "-Wno-unknown-cuda-version", "-ferror-limit=0")
"""How clang is told the source is CUDA device code, without a CUDA toolkit."""

INSTANCE_NAMESPACE = "__tiletraffic_instance"
"""The namespace of a kernel template's instance (see the module docstring)."""

TYPE_ARGUMENTS = ("float", "int", "unsigned int", "double")
"""The types a template's type parameter may be given."""


def parse(source: str, path: str, build_options=(), kernel: str | None = None,
          arg_names=None):
    """Parse ``source`` (the text of ``path``) as CUDA device code; the translation unit.
    Given the ``kernel`` to read (and the names of the arguments the launch gives,
    ``arg_names``, which choose among overloads: :func:`chosen_definition`), errors inside
    the other ``__global__`` functions (those of other names, and the other overloads of
    its name) are not reported: they are not compiled for this launch.

    Raises:
        FrontendError: clang reports an error (the first, with its location), an integer
            literal is octal, a build option is refused, or libclang is not installed.
    """
    try:
        from clang import cindex
    except ImportError:
        raise FrontendError(f"{path}: reading CUDA needs the libclang package, which is not "
                            "installed (pip install 'libclang>=17')") from None
    opts = [o for o in C.split_build_options(build_options)
            if not o.startswith(("-cl-", "-w", "-Werror"))]
    args = [*CLANG_ARGS, "-isystem", str(STUBS), "-include", str(BUILTINS_HEADER), *opts]
    parent = Path(path).parent
    if str(parent) not in ("", "."):
        args.append(f"-I{parent}")
    try:
        tu = C._index().parse(path, args=args, unsaved_files=[(path, source)],
                              options=cindex.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD
                              | KEEP_GOING)
    except cindex.TranslationUnitLoadError as err:
        raise FrontendError(f"{path}: clang could not parse the file ({err})") from None
    host, device = host_extents(tu), host_extents(tu, device=True)
    if kernel is not None:
        chosen = chosen_definition(tu, kernel, arg_names)
        others = [c for c in _global_definitions(tu) if chosen is None or c != chosen]
        for c in others:
            host.setdefault(c.location.file.name, []).append((c.extent.start.offset,
                                                               c.extent.end.offset))
        device = {f: [e for e in spans if not _inside_spans(e[0], host.get(f, ()))]
                  for f, spans in device.items()}
        if chosen is not None:
            device = _reached_extents(tu, chosen, device)
    for d in tu.diagnostics:
        if d.severity >= cindex.Diagnostic.Error and not _refuses(d, device):
            continue                  # host code: left out, as the device compiler does
        if d.severity >= cindex.Diagnostic.Error:
            loc = d.location
            if loc.file is None:
                raise FrontendError(f"{path}: {d.spelling}")
            name, line, column = C.presumed_location(loc)
            missing = [m.spelling.removesuffix(" file not found") for m in tu.diagnostics
                       if m.spelling.endswith(" file not found")]
            hint = _hint(d.spelling) or (
                f" (headers the source includes that are not here: {', '.join(missing[:3])}"
                f"{' and others' if len(missing) > 3 else ''})" if missing else "")
            raise FrontendError(f"{name}:{line}:{column}: {d.spelling}{hint}")
    _check_integer_literals(tu)
    return tu


KEEP_GOING = 0x200
"""libclang's ``CXTranslationUnit_KeepGoing``: a header that is not found does not end the
parse (the device code that needs it fails on what it lacks instead)."""


def _refuses(diagnostic, device: dict) -> bool:
    """Whether a clang error concerns the device code read: it is inside a ``__device__``
    or ``__global__`` function compiled for the launch (``device``). Errors in host code
    (host functions, the host declarations of the headers the source includes, a header
    that is not found) do not: a declaration the kernel needs and lacks fails inside it."""
    loc = diagnostic.location
    return loc.file is None or _inside(loc, device)


def _hint(message: str) -> str:
    """What to do about a clang error where a header of the CUDA toolkit or of C++'s library
    is missing here."""
    if "file not found" in message:
        return (" (CUDA sources are read without a CUDA toolkit: the headers kernels use are "
                "declared, others of C++'s library are not; include only what the kernel "
                "needs)")
    return ""


def _check_integer_literals(tu) -> None:
    """Refuse an octal integer literal in the source and the files it includes (not the
    headers shipped here)."""
    from clang import cindex
    for token in tu.get_tokens(extent=tu.cursor.extent):
        if token.kind == cindex.TokenKind.LITERAL and token.spelling[:1].isdigit():
            try:
                C.integer_literal(token.spelling)
            except FrontendError as err:
                name, line, column = C.presumed_location(token.location)
                raise FrontendError(f"{name}:{line}:{column}: {err}") from None


def is_shipped(cursor) -> bool:
    """Whether ``cursor`` is declared in a header shipped here (not the user's source)."""
    f = cursor.location.file
    return f is not None and _shipped_file(f.name)


@functools.lru_cache(maxsize=1024)
def _shipped_file(name: str) -> bool:
    """Whether the file ``name`` (a path as clang names it) resolves into the headers shipped
    here; looked up once per name (a translation unit names few files, every cursor one)."""
    return Path(name).resolve().is_relative_to(INCLUDE.resolve())


def is_global(cursor) -> bool:
    """Whether the function (or function template) cursor is declared ``__global__``."""
    return any(k.kind.name == "CUDAGLOBAL_ATTR" for k in cursor.get_children())


def kernels(tu) -> dict:
    """The ``__global__`` functions and function templates defined in the source and the
    files it includes, by name, in order (a template's cursor is its ``FUNCTION_TEMPLATE``).
    """
    from clang.cindex import CursorKind as K
    found: dict = {}

    def visit(parent):
        for c in parent.get_children():
            if c.kind == K.NAMESPACE and c.spelling != INSTANCE_NAMESPACE or \
                    c.kind.name in ("LINKAGE_SPEC", "UNEXPOSED_DECL"):
                visit(c)
            elif c.kind in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE) and c.is_definition() and \
                    not is_shipped(c) and is_global(c):
                found.setdefault(c.spelling, c)
    visit(tu.cursor)
    return found


def kernel_names(source: str, path: str = "<source>", build_options="") -> list[str]:
    """The ``__global__`` kernels of ``source``, in order.

    Raises:
        FrontendError: clang reports an error.
    """
    return list(kernels(parse(source, path, build_options)))


def template_parameters(template) -> list[tuple[str, str, object]]:
    """(name, kind, default) of each parameter of a function template cursor: kind ``int``
    (an integer type, with its type's spelling after a colon: ``int:const int``), ``bool``
    or ``type``; default the text of the default argument, else ``None``."""
    from clang.cindex import CursorKind as K
    out = []
    for c in template.get_children():
        if c.kind == K.TEMPLATE_NON_TYPE_PARAMETER:
            kids = [k for k in c.get_children() if k.kind.is_expression()]
            default = " ".join(t.spelling for t in kids[0].get_tokens()) if kids else None
            kind = "bool" if c.type.get_canonical().kind.name == "BOOL" else \
                f"int:{c.type.spelling}"
            out.append((c.spelling, kind, default))
        elif c.kind == K.TEMPLATE_TYPE_PARAMETER:
            kids = [k for k in c.get_children() if k.kind == K.TYPE_REF]
            out.append((c.spelling, "type", kids[0].spelling if kids else None))
        elif c.kind == K.TEMPLATE_TEMPLATE_PARAMETER:
            C.fail(c, f"template template parameter {c.spelling}: kernels take integer, "
                      "bool and type template parameters")
    return out


def template_values(template, given: dict, path: str) -> dict:
    """The value (source text) of each template parameter of the kernel template cursor
    ``template``: the launch's (``given``: name -> int, bool or a type name of
    :data:`TYPE_ARGUMENTS`), else the parameter's default.

    Raises:
        FrontendError: a parameter without a value, a value the kernel has no parameter for,
            a value of the wrong kind.
    """
    params = template_parameters(template)
    names = [p[0] for p in params]
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise FrontendError(f"{C.where(template, path)}: kernel {template.spelling} has no "
                            f"template parameter {', '.join(unknown)}; its parameters: "
                            f"{', '.join(names) or 'none'}", None, "template")
    out = {}
    for name, kind, default in params:
        if name not in given:
            if default is None:
                raise FrontendError(f"{C.where(template, path)}: template parameter {name} "
                                    f"of kernel {template.spelling} has no value: give it in "
                                    f"the launch's template = {{ {name} = ... }}", None,
                                    "template")
            out[name] = (kind, default)
            continue
        value = given[name]
        if kind == "type":
            if value not in TYPE_ARGUMENTS:
                raise FrontendError(f"template parameter {name} is a type: give one of "
                                    f"{', '.join(map(repr, TYPE_ARGUMENTS))}, not {value!r}",
                                    None, "template")
            out[name] = (kind, value)
        elif kind == "bool":
            if value not in (True, False, 0, 1):
                raise FrontendError(f"template parameter {name} is a bool: give true or "
                                    f"false, not {value!r}", None, "template")
            out[name] = (kind, "true" if value else "false")
        else:
            if isinstance(value, bool) or not isinstance(value, int):
                raise FrontendError(f"template parameter {name} is an integer: give an "
                                    f"integer, not {value!r}", None, "template")
            out[name] = (kind, str(value))
    return out


def instantiate(source: str, template, values: dict) -> str:
    """``source`` with the instance of the kernel template cursor ``template`` for
    ``values`` (:func:`template_values`) appended (see the module docstring)."""
    tokens = list(template.get_tokens())
    depth, body_at = 0, None
    for i, t in enumerate(tokens):
        if t.spelling == "<":
            depth += 1
        elif t.spelling == ">":
            depth -= 1
            if depth == 0:
                body_at = i + 1
                break
        elif t.spelling == ">>":
            depth -= 2
            if depth <= 0:
                body_at = i + 1
                break
    if body_at is None or body_at >= len(tokens):
        C.fail(template, "template header of the kernel not found in its tokens")
    start = tokens[body_at]
    data = source.encode("utf-8")
    begin, end = start.extent.start.offset, template.extent.end.offset
    name, line, column = C.presumed_location(start.location)
    defines = []
    for pname, (kind, value) in values.items():
        if kind == "type":
            defines.append(f"using {pname} = {value};")
        elif kind == "bool":
            defines.append(f"constexpr bool {pname} = {value};")
        else:
            ctype = kind.partition(":")[2].replace("const ", "")
            defines.append(f"constexpr {ctype} {pname} = ({ctype})({value});")
    text = data[begin:end].decode("utf-8", errors="replace")
    quoted = name.replace("\\", "\\\\").replace('"', '\\"')
    return (f"{source}\nnamespace {INSTANCE_NAMESPACE} {{\n{' '.join(defines)}\n"
            f"#line {line} \"{quoted}\"\n{' ' * (column - 1)}{text}\n}}\n")


def instance(tu, kernel: str):
    """The ``FUNCTION_DECL`` of the instantiated kernel ``kernel`` (:func:`instantiate`)."""
    from clang.cindex import CursorKind as K
    for c in tu.cursor.get_children():
        if c.kind == K.NAMESPACE and c.spelling == INSTANCE_NAMESPACE:
            for f in c.get_children():
                if f.kind == K.FUNCTION_DECL and f.spelling == kernel and f.is_definition():
                    return f
    return None


def host_extents(tu, device: bool = False) -> dict:
    """Per file of the source (not the shipped headers), the ``(start, end)`` byte offsets
    of each host function's definition: a function neither ``__device__`` nor
    ``__global__`` (``main``, the launch code); with ``device``, of each ``__device__`` or
    ``__global__`` function's instead."""
    from clang.cindex import CursorKind as K
    out: dict = {}

    def visit(parent):
        children = list(parent.get_children())
        # ``extern "C" int f() {...}`` (no braces): the linkage words belong to f's span
        lone_linkage = parent.kind.name == "LINKAGE_SPEC" and len(children) == 1
        for c in children:
            f = c.location.file
            if f is None or is_shipped(c):
                continue
            if c.kind == K.NAMESPACE or c.kind.name in ("LINKAGE_SPEC", "UNEXPOSED_DECL"):
                visit(c)
            elif c.kind in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE) and c.is_definition():
                attrs = {k.kind.name for k in c.get_children()}
                if bool(attrs & {"CUDADEVICE_ATTR", "CUDAGLOBAL_ATTR"}) == device:
                    start = c.extent.start.offset
                    if lone_linkage and parent.extent.start.file is not None and \
                            parent.extent.start.file.name == f.name:
                        start = min(start, parent.extent.start.offset)
                    out.setdefault(f.name, []).append((start, c.extent.end.offset))
    visit(tu.cursor)
    return out


def _reached_extents(tu, chosen, device: dict) -> dict:
    """The spans of ``device`` (:func:`host_extents`) of the functions the kernel
    ``chosen`` reaches: itself, its template's instance, and the ``__device__`` functions
    named in what it reaches (by name: every overload of a name called). A device function
    no path from the kernel names is not compiled into this launch's code."""
    from clang.cindex import CursorKind as K
    functions: dict = {}

    def visit(parent, instance=False):
        for c in parent.get_children():
            if c.kind == K.NAMESPACE or c.kind.name in ("LINKAGE_SPEC", "UNEXPOSED_DECL"):
                visit(c, instance or c.spelling == INSTANCE_NAMESPACE)
            elif c.kind in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE) and c.is_definition() and \
                    c.location.file is not None and not is_shipped(c):
                functions.setdefault(c.spelling, []).append((c, instance))
    visit(tu.cursor)
    todo = [chosen] + [c for fs in functions.values() for c, inst in fs if inst]
    seen: set = set()
    reached = []
    while todo:
        f = todo.pop()
        key = (f.location.file.name, f.extent.start.offset)
        if key in seen:
            continue
        seen.add(key)
        reached.append(key)
        for c in f.walk_preorder():
            if c.kind in (K.CALL_EXPR, K.DECL_REF_EXPR, K.OVERLOADED_DECL_REF,
                          K.MEMBER_REF_EXPR):
                todo += [g for g, _ in functions.get(c.spelling, ())
                         if not is_global(g)]
    return {f: [e for e in spans if (f, e[0]) in seen] for f, spans in device.items()}


def _inside_spans(offset: int, spans) -> bool:
    return any(a <= offset < b for a, b in spans)


def chosen_definition(tu, kernel: str, arg_names=None):
    """The definition of the ``__global__`` function (or template) ``kernel`` a launch
    means: among overloads of the name, the first whose parameters are named exactly as
    ``arg_names`` and whose buffers hold floats (then the first named so); the first of
    the name where none is (or no names are given); ``None`` where the source defines no
    kernel of the name."""
    from clang.cindex import CursorKind as K
    named = [c for c in _global_definitions(tu) if c.spelling == kernel]
    wanted = set(arg_names) if arg_names is not None else None

    def params(c):
        return [p for p in c.get_children() if p.kind == K.PARM_DECL]

    def float_buffers(c):
        """Whether every pointer parameter of ``c`` points to float (or a float vector, or
        a template parameter's type): a ``__half`` overload's do not."""
        pointees = [p.type.get_canonical().get_pointee() for p in params(c)
                    if p.type.get_canonical().kind.name == "POINTER"]
        return all(t.kind.name in ("FLOAT", "UNEXPOSED", "ELABORATED", "RECORD")
                   and "half" not in t.spelling and "bfloat" not in t.spelling
                   for t in pointees)

    matching = [c for c in named if {p.spelling for p in params(c)} == wanted]
    for c in matching:
        if float_buffers(c):
            return c
    return (matching or named or [None])[0]


def _global_definitions(tu) -> list:
    """Every ``__global__`` function or function template defined in the source and the
    files it includes, in order, overloads included (not the instance :func:`instantiate`
    appends)."""
    from clang.cindex import CursorKind as K
    found: list = []

    def visit(parent):
        for c in parent.get_children():
            if c.kind == K.NAMESPACE and c.spelling != INSTANCE_NAMESPACE or \
                    c.kind.name in ("LINKAGE_SPEC", "UNEXPOSED_DECL"):
                visit(c)
            elif c.kind in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE) and c.is_definition() and \
                    c.location.file is not None and not is_shipped(c) and is_global(c):
                found.append(c)
    visit(tu.cursor)
    return found


def _inside(location, extents: dict) -> bool:
    """Whether the source location is inside one of ``extents`` (:func:`host_extents`)."""
    f = location.file
    return f is not None and any(a <= location.offset < b
                                 for a, b in extents.get(f.name, ()))


def instance_values(tu, values: dict) -> dict:
    """The template arguments of the instance in ``tu`` (:func:`instantiate` of
    ``values``) as C++ spells them for a name expression (``32``, ``true``, ``float``):
    integers and bools as clang evaluates them (a default such as ``W / 2`` too), types as
    given."""
    from clang.cindex import CursorKind as K
    found = {}
    for c in tu.cursor.get_children():
        if c.kind == K.NAMESPACE and c.spelling == INSTANCE_NAMESPACE:
            for v in c.get_children():
                if v.kind == K.VAR_DECL and v.spelling in values:
                    found[v.spelling] = C.evaluate(v)
    out = {}
    for name, (kind, text) in values.items():
        value = found.get(name)
        if kind == "bool" and value is not None:
            out[name] = "true" if value else "false"
        elif kind != "type" and isinstance(value, int):
            out[name] = str(value)
        else:
            out[name] = text
    return out
