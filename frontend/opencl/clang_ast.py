"""libclang access for the OpenCL C front end: parse a translation unit, read operators,
literals and locations of its cursors.

The source is parsed as OpenCL C 1.2 (``-x cl -cl-std=CL1.2``) by clang itself, with its
real preprocessor (``#define``, ``#if``, ``-D`` options). Builtin functions are declared by
clang (``-fdeclare-opencl-builtins``); the types, fence flags and constants (``INFINITY``,
``FLT_MAX``, ``M_PI_F``, ``INT_MAX``, ...) that clang keeps in a header the PyPI ``libclang``
wheel does not ship, and OpenCL C 2.0's ``work_group_barrier``, come from
``opencl_builtins.h`` beside this module. Nothing here looks at C text except through
clang's tokens and cursors; integer literals are read by :func:`integer_literal`.

Errors: :class:`FrontendError` (a ``ValueError``) whose message starts with
``file:line:column:``.
"""
from __future__ import annotations

import ctypes
import shlex
from dataclasses import dataclass
from pathlib import Path

BUILTINS_HEADER = Path(__file__).with_name("opencl_builtins.h")
"""Types and macros every kernel is parsed with (included before the source)."""

CLANG_ARGS = ("-x", "cl", "-cl-std=CL1.2", "-cl-no-stdinc", "-Xclang",
              "-fdeclare-opencl-builtins")
"""How clang is told the source is OpenCL C 1.2 with builtins declared."""


_AS_TYPE_FUNCTIONS = frozenset(
    f"as_{t}{n}" for t in ("char", "uchar", "short", "ushort", "int", "uint", "long", "ulong",
                           "float", "double", "half") for n in ("", "2", "3", "4", "8", "16"))
"""OpenCL C's reinterpreting casts (``as_float``, ``as_int4``, ...)."""


def refused_function(name: str) -> str | None:
    """Why a call of the OpenCL C built-in ``name`` is refused (one line, starting with the
    name), or ``None`` if it is not one of those: the ``as_*`` reinterpreting casts and
    ``printf``."""
    if name in _AS_TYPE_FUNCTIONS:
        return (f"{name} reinterprets the bits of a value as another type, which tiletraffic "
                "does not model (its floats are loaded, computed or constants, its integers "
                "indices): not supported")
    if name == "printf":
        return ("printf: a kernel's output stream is not modelled: remove the call, or put it "
                "under an #ifdef of a macro the launch does not define")
    return None


class FrontendError(ValueError):
    """A kernel the front end cannot turn into a schedule: a parse error, or a construct
    outside the supported subset. The message is one line, ``file:line:column: what; what
    to write instead``. ``arg`` names the kernel argument the problem concerns (a buffer's
    shape or access, a missing value), if any, and ``field`` the field of its description
    (``access``), if one."""

    def __init__(self, message: str, arg: str | None = None, field: str | None = None):
        super().__init__(message)
        self.arg, self.field = arg, field


@dataclass(frozen=True)
class Where:
    """A source position for messages."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


def where(cursor, default_file: str = "<source>") -> Where:
    """The expansion location of ``cursor`` (a macro's use, not its definition), as a
    ``#line`` directive before it presents it (the file and line it names)."""
    return location_of(cursor.location, default_file)


def location_of(loc, default_file: str = "<source>") -> Where:
    """``loc`` (a clang source location) as :class:`Where`: the expansion location, with
    the file and line a ``#line`` directive gives them where one applies (source generated
    from another language names the place in the user's file)."""
    name = loc.file.name if loc.file is not None else default_file
    line, column = loc.line, loc.column
    if loc.file is not None:
        presumed = _presumed(loc)
        if presumed is not None:
            name, line, column = presumed
    return Where(name, line, column)


def _presumed(loc):
    """clang's presumed location of ``loc`` (``#line`` applied): (file, line, column), or
    None where libclang does not offer it."""
    import ctypes
    from clang import cindex
    try:
        fn = cindex.conf.lib.clang_getPresumedLocation
    except AttributeError:
        return None
    fn.argtypes = [cindex.SourceLocation, ctypes.POINTER(cindex._CXString),
                   ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint)]
    fn.restype = None
    text, line, column = cindex._CXString(), ctypes.c_uint(), ctypes.c_uint()
    fn(loc, ctypes.byref(text), ctypes.byref(line), ctypes.byref(column))
    name = cindex._CXString.from_result(text)
    return (name, line.value, column.value) if name else None


def presumed_location(location) -> tuple[str, int, int]:
    """(file, line, column) of a libclang ``SourceLocation`` as ``#line`` directives
    present it (:func:`location_of`)."""
    where_ = location_of(location)
    return where_.file, where_.line, where_.column


def fail(cursor, message: str, default_file: str = "<source>", arg: str | None = None):
    """Raise :class:`FrontendError` for ``cursor``: ``file:line:column: message``."""
    raise FrontendError(f"{where(cursor, default_file)}: {message}", arg)


def _index():
    from clang import cindex
    return cindex.Index.create()


_INTEGER_SUFFIXES = ("", "u", "l", "ul", "lu", "ll", "ull", "llu")
"""C's integer-literal suffixes, lower-cased (``LL`` and ``ll`` only, never ``lL``)."""


def integer_literal(text: str, *, signed: bool = False) -> int | None:
    """The value of the C integer literal ``text``: decimal, hexadecimal (``0x1F``) or
    binary (``0b101``), with a suffix ``u``/``U``, ``l``/``L``, ``ll``/``LL`` or a ``u``
    with one of those, in either order. ``signed`` also takes a leading ``-`` or ``+``.

    Returns:
        The value (an ``int``, the suffix not limiting it), or ``None`` when ``text`` is not
        an integer literal (a float literal, a name, an expression).

    Raises:
        FrontendError: a literal of more than one digit starting with ``0``: C reads it as
            octal (``010`` is 8), which is rarely what was meant; the message names the
            literal and its octal value.
    """
    sign, body = 1, text
    if signed and body[:1] in ("-", "+"):
        sign, body = (-1 if body[0] == "-" else 1), body[1:]
    end = len(body)
    while end and body[end - 1] in "uUlL":
        end -= 1
    digits, suffix = body[:end], body[end:]
    if suffix.lower() not in _INTEGER_SUFFIXES or "lL" in suffix or "Ll" in suffix:
        return None
    for prefix, base, allowed in (("0x", 16, "0123456789abcdefABCDEF"), ("0b", 2, "01")):
        if digits[:2].lower() == prefix:
            rest = digits[2:]
            if not rest or any(ch not in allowed for ch in rest):
                return None
            return sign * int(rest, base)
    if not digits or any(ch not in "0123456789" for ch in digits):
        return None
    if len(digits) > 1 and digits[0] == "0":
        decimal = text.replace(digits, digits.lstrip("0") or "0", 1)
        if any(ch in "89" for ch in digits):
            raise FrontendError(f"integer literal {text} starts with 0 (octal in C) but has "
                                f"the digit 8 or 9: write {decimal} without the leading 0")
        octal = sign * int(digits, 8)
        if octal == sign * int(digits):
            raise FrontendError(f"integer literal {text} starts with 0, so C reads it as "
                                f"octal ({octal}): write {decimal} without the leading 0")
        as_octal = text.replace(digits, str(int(digits, 8)), 1)
        raise FrontendError(f"integer literal {text} starts with 0, so C reads it as octal: "
                            f"{text} is {octal}, not {sign * int(digits)}; write {as_octal}, "
                            f"or {decimal} for the decimal value")
    return sign * int(digits)


_VALUE_OPTIONS = {"-D": "-DNAME or -DNAME=VALUE", "-U": "-UNAME", "-I": "-IFOLDER"}
"""The options that take a value, with how to write one."""


def split_build_options(build_options: str | tuple | list) -> list[str]:
    """``-DTS=16 -I dir`` as a list (shell quoting), accepting a list as given; ``-D X``
    (the value as the next word) is joined into ``-DX``.

    Raises:
        FrontendError: quoting that does not close; an option other than ``-D``, ``-U``,
            ``-I`` or ``-cl-*``; ``-D``, ``-U`` or ``-I`` with nothing after it (at the end,
            an empty word, or another option next); a ``-D``/``-U`` whose macro name is not
            an identifier; a ``-D`` value that is an octal integer literal (``-DTS=010``).
    """
    if isinstance(build_options, str):
        try:
            opts = shlex.split(build_options)
        except ValueError as err:
            raise FrontendError(f"build options {build_options!r}: {err}") from None
    else:
        opts = list(build_options)
    out = []
    it = iter(opts)
    for opt in it:
        if opt in _VALUE_OPTIONS:
            value = next(it, None)
            if not value or value.startswith("-"):
                after = "" if value is None else " (the next word is empty)" if not value \
                    else f" (the next word is the option {value!r})"
                raise FrontendError(f"build option {opt} has nothing after it{after}: write "
                                    f"{_VALUE_OPTIONS[opt]}")
            opt += value
        if opt.startswith(("-D", "-U")):
            _check_macro_option(opt)
            out.append(opt)
        elif opt.startswith(("-I", "-cl-", "-w", "-Werror")):
            out.append(opt)
        else:
            raise FrontendError(f"build option {opt!r} is not one of -D, -U, -I, -cl-*")
    return out


def _check_macro_option(opt: str) -> None:
    """Refuse a ``-D``/``-U`` without a macro name, one whose name is not an identifier
    (a function-like ``-DF(x)=...`` is named ``F``), a ``-U`` with a value, and a ``-D``
    value that is an octal integer literal (:func:`integer_literal`)."""
    name, eq, value = opt[2:].partition("=")
    if opt.startswith("-U") and eq:
        raise FrontendError(f"build option {opt!r}: -U takes a macro name only (-UNAME)")
    base = name.partition("(")[0]
    if not base:
        raise FrontendError(f"build option {opt!r} has no macro name: write "
                            f"{_VALUE_OPTIONS[opt[:2]]}")
    if not (base.isascii() and base.isidentifier()):
        raise FrontendError(f"build option {opt!r}: {base!r} is not a macro name (letters, "
                            "digits and _, not starting with a digit)")
    if eq:
        try:
            integer_literal(value.strip(), signed=True)
        except FrontendError as err:
            raise FrontendError(f"build option {opt!r}: {err}") from None


def parse(source: str, path: str, build_options=()):
    """Parse ``source`` (the text of ``path``) and return the translation unit.

    A macro given with ``-D`` that the source ``#define``s again is a warning of clang's
    (:func:`redefined_macros` lists them), not an error: the later definition, the
    source's, is the one used, as device compilers do.

    Raises:
        FrontendError: clang reports an error (the first one, with its location; a call of
            an ``as_*`` cast or ``printf`` named as :func:`refused_function` says), an
            integer literal of the source or a file it includes is octal
            (:func:`integer_literal`), a build option is refused
            (:func:`split_build_options`), or the ``libclang`` package is not installed.
    """
    try:
        from clang import cindex
    except ImportError:
        raise FrontendError(f"{path}: reading OpenCL C needs the libclang package, which is "
                            "not installed (pip install 'libclang>=17')") from None

    opts = split_build_options(build_options)
    clang_opts = [o for o in opts if not o.startswith(("-cl-", "-w", "-Werror"))]
    args = [*CLANG_ARGS, "-include", str(BUILTINS_HEADER), *clang_opts]
    parent = Path(path).parent
    if str(parent) not in ("", "."):
        args.append(f"-I{parent}")
    unsaved = [(path, source)]
    for _ in range(2):
        try:
            tu = _index().parse(path, args=args, unsaved_files=unsaved,
                                options=cindex.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD)
        except cindex.TranslationUnitLoadError as err:
            raise FrontendError(f"{path}: clang could not parse the file ({err})") from None
        errors = [d for d in tu.diagnostics if d.severity >= cindex.Diagnostic.Error]
        names = {_refused_name_at(tu, d.location) for d in errors}
        if not errors or None in names or len(unsaved) > 1:
            break
        unsaved = [(path, source), (str(_REFUSED_DECLARATIONS), _declarations(names))]
        args = [*args[:len(CLANG_ARGS) + 2], "-include", str(_REFUSED_DECLARATIONS),
                *args[len(CLANG_ARGS) + 2:]]
    for d in errors:
        loc = d.location
        refused = _refused_call_at(tu, loc)
        raise FrontendError(f"{location_of(loc, path)}: {refused or d.spelling}")
    _check_integer_literals(tu)
    return tu


_REFUSED_DECLARATIONS = BUILTINS_HEADER.with_name("refused_functions.h")
"""The name of the declarations :func:`parse` gives clang, held in memory (no such file
exists), of the refused built-ins a source calls where clang declares none."""

_AS_SOURCE_TYPES = tuple(f"{t}{n}" for t in ("char", "uchar", "short", "ushort", "int",
                                               "uint", "long", "ulong", "float")
                         for n in ("", "2", "3", "4", "8", "16"))


def _declarations(names) -> str:
    """Declarations of the refused built-ins ``names`` (``as_*`` casts, ``printf``), so
    that a source calling them in a function the kernel does not call parses, as a device
    compiler reads it; a call the kernel reaches is refused by name when it is translated
    (:func:`refused_function`)."""
    lines = []
    for name in sorted(names):
        if name == "printf":
            lines.append("int printf(__constant char *format, ...);")
            continue
        result = name[len("as_"):]
        lines += [f"{result} __attribute__((overloadable)) {name}({t});"
                  for t in _AS_SOURCE_TYPES]
    return "\n".join(lines) + "\n"


def _refused_name_at(tu, loc) -> str | None:
    """The name of a refused built-in (:func:`refused_function`) at ``loc``, or None."""
    from clang import cindex
    if loc.file is None:
        return None
    tokens = list(tu.get_tokens(extent=cindex.SourceRange.from_locations(loc, loc)))
    if len(tokens) == 1 and tokens[0].kind == cindex.TokenKind.IDENTIFIER and \
            refused_function(tokens[0].spelling) is not None:
        return tokens[0].spelling
    return None


def _refused_call_at(tu, loc) -> str | None:
    """:func:`refused_function` of the identifier at ``loc`` (an error there: clang does not
    declare the ``as_*`` casts or ``printf`` for the parse), if it is one."""
    name = _refused_name_at(tu, loc)
    return None if name is None else refused_function(name)


def redefined_macros(tu) -> list[str]:
    """One line per macro given with ``-D`` (a build option, a tuned parameter) that the
    source or a file it includes ``#define``s again, ``file:line:column: ...``: the
    source's definition is the one used. A macro the source defines twice, or one of
    :data:`BUILTINS_HEADER`'s (``INFINITY``, ``M_PI_F``, ...) that it defines again, as a
    device compiler lets it, is left out: no ``-D`` value is lost."""
    lines = []
    for d in tu.diagnostics:
        if d.option == "-Wmacro-redefined" and d.location.file is not None and \
                _replaces_build_option(d):
            loc = d.location
            lines.append(f"{loc.file.name}:{loc.line}:{loc.column}: {d.spelling}: the "
                         "source's #define replaces the value given with -D (a build option "
                         "or a tuned parameter), as the device compiler does; guard it with "
                         "#ifndef to take the -D value")
    return lines


def redefined_build_macros(tu) -> dict[str, str]:
    """The macros given with ``-D`` that the source or a file it includes defines again
    with ``#define`` (those :func:`redefined_macros` reports), each with the place of
    that ``#define``, ``file:line:column`` (the file's name only), in the order found."""
    from clang import cindex
    out: dict[str, str] = {}
    for d in tu.diagnostics:
        if d.option == "-Wmacro-redefined" and d.location.file is not None and \
                _replaces_build_option(d):
            loc = d.location
            tokens = list(tu.get_tokens(extent=cindex.SourceRange.from_locations(loc, loc)))
            if len(tokens) == 1 and tokens[0].kind == cindex.TokenKind.IDENTIFIER:
                out.setdefault(tokens[0].spelling,
                               f"{Path(loc.file.name).name}:{loc.line}:{loc.column}")
    return out


def _replaces_build_option(diagnostic) -> bool:
    """Whether a macro-redefined warning is about a macro defined on the command line (a
    ``-D`` option: clang's note of the previous definition has no file)."""
    return any(n.location.file is None for n in diagnostic.children)


def source_extents(tu) -> list:
    """The extents of the parsed source and of the files it includes (not
    :data:`BUILTINS_HEADER`), to read their tokens."""
    from clang import cindex
    extents = [tu.cursor.extent]
    for inc in tu.get_includes():
        f = inc.include
        if Path(f.name) == BUILTINS_HEADER or not Path(f.name).is_file():
            continue
        size = Path(f.name).stat().st_size
        extents.append(cindex.SourceRange.from_locations(
            cindex.SourceLocation.from_offset(tu, f, 0),
            cindex.SourceLocation.from_offset(tu, f, size)))
    return extents


def _check_integer_literals(tu) -> None:
    """Refuse an octal integer literal anywhere in the source or the files it includes
    (preprocessor lines too), through :func:`integer_literal`."""
    from clang import cindex
    for extent in source_extents(tu):
        for token in tu.get_tokens(extent=extent):
            if token.kind == cindex.TokenKind.LITERAL and token.spelling[:1].isdigit():
                try:
                    integer_literal(token.spelling)
                except FrontendError as err:
                    loc = token.location
                    raise FrontendError(f"{loc.file.name}:{loc.line}:{loc.column}: {err}") \
                        from None


def _lib():
    from clang import cindex
    lib = cindex.conf.lib
    if not getattr(lib, "_tiletraffic_ready", False):
        for fn in ("clang_getCursorBinaryOperatorKind", "clang_getCursorUnaryOperatorKind"):
            getattr(lib, fn).argtypes = [cindex.Cursor]
            getattr(lib, fn).restype = ctypes.c_int
        for fn in ("clang_getBinaryOperatorKindSpelling", "clang_getUnaryOperatorKindSpelling"):
            getattr(lib, fn).argtypes = [ctypes.c_int]
            getattr(lib, fn).restype = cindex._CXString
            getattr(lib, fn).errcheck = cindex._CXString.from_result
        lib.clang_Cursor_Evaluate.argtypes = [cindex.Cursor]
        lib.clang_Cursor_Evaluate.restype = ctypes.c_void_p
        lib.clang_EvalResult_getKind.argtypes = [ctypes.c_void_p]
        lib.clang_EvalResult_getKind.restype = ctypes.c_int
        lib.clang_EvalResult_getAsLongLong.argtypes = [ctypes.c_void_p]
        lib.clang_EvalResult_getAsLongLong.restype = ctypes.c_longlong
        lib.clang_EvalResult_getAsDouble.argtypes = [ctypes.c_void_p]
        lib.clang_EvalResult_getAsDouble.restype = ctypes.c_double
        lib.clang_EvalResult_dispose.argtypes = [ctypes.c_void_p]
        lib._tiletraffic_ready = True
    return lib


def binary_operator(cursor) -> str:
    """The operator of a ``BINARY_OPERATOR`` or ``COMPOUND_ASSIGNMENT_OPERATOR`` cursor
    (``+``, ``<<``, ``+=``, ``&&`` ...), as clang spells it."""
    lib = _lib()
    return lib.clang_getBinaryOperatorKindSpelling(lib.clang_getCursorBinaryOperatorKind(cursor))


def unary_operator(cursor) -> str:
    """The operator of a ``UNARY_OPERATOR`` cursor (``-``, ``!``, ``++``, ``&``, ``*``...)."""
    lib = _lib()
    return lib.clang_getUnaryOperatorKindSpelling(lib.clang_getCursorUnaryOperatorKind(cursor))


_EVAL_INT, _EVAL_FLOAT = 1, 2


def evaluate(cursor) -> int | float | None:
    """clang's value of a constant expression (an ``int`` or a ``float``), else ``None``."""
    lib = _lib()
    result = lib.clang_Cursor_Evaluate(cursor)
    if not result:
        return None
    try:
        kind = lib.clang_EvalResult_getKind(result)
        if kind == _EVAL_INT:
            return int(lib.clang_EvalResult_getAsLongLong(result))
        if kind == _EVAL_FLOAT:
            return float(lib.clang_EvalResult_getAsDouble(result))
        return None
    finally:
        lib.clang_EvalResult_dispose(result)


def integer_value(cursor) -> int:
    """The value of an ``INTEGER_LITERAL`` cursor: its token read by
    :func:`integer_literal`, or clang's value where a macro's name stands for it.

    Raises:
        FrontendError: an octal literal, with the cursor's position.
    """
    from itertools import islice
    tokens = list(islice(cursor.get_tokens(), 2))
    if len(tokens) == 1 and tokens[0].kind.name == "LITERAL":
        try:
            value = integer_literal(tokens[0].spelling)
        except FrontendError as err:
            fail(cursor, str(err))
        if value is not None:
            return value
    return int(evaluate(cursor))


def macro_name(cursor) -> str | None:
    """The macro a literal was written as (``TS`` for ``#define TS 16``), if its whole
    extent is one identifier token."""
    from itertools import islice
    tokens = list(islice(cursor.get_tokens(), 2))
    if len(tokens) == 1 and tokens[0].kind.name == "IDENTIFIER":
        return tokens[0].spelling
    return None


def children(cursor) -> list:
    """The child cursors, as a list."""
    return list(cursor.get_children())


def strip(cursor):
    """``cursor`` without the implicit casts and parentheses around it (``UNEXPOSED_EXPR``
    with one child, ``PAREN_EXPR``)."""
    return implicit_chain(cursor)[-1]


def implicit_chain(cursor) -> list:
    """``cursor`` and the cursors below it down to :func:`strip`'s result, outermost first:
    each implicit cast's type is the type its child is converted to."""
    from clang.cindex import CursorKind
    chain = [cursor]
    while cursor.kind in (CursorKind.UNEXPOSED_EXPR, CursorKind.PAREN_EXPR):
        kids = children(cursor)
        if len(kids) != 1 or _vector_element(cursor, kids[0]):
            break
        cursor = kids[0]
        chain.append(cursor)
    return chain


def _vector_element(cursor, child) -> bool:
    """``v.x``: clang shows a vector component as an unexposed expression of scalar type
    over the vector; ``v.lo`` of a ``float4``, as one of a vector type of fewer
    components; a swizzle of the vector's own width (``v.yx`` of a ``float2``,
    ``v.wzyx``), as one of the same vector type that spans the selector after its child
    (an implicit conversion spans just its child)."""
    def vector(t):
        return t.get_canonical().kind.name in ("VECTOR", "EXTVECTOR")
    if not vector(child.type):
        return False
    if cursor.kind.name == "UNEXPOSED_EXPR" and vector(cursor.type) and \
            _extent(cursor) != _extent(child):
        return True
    return not vector(cursor.type) or \
        cursor.type.get_canonical().element_count != child.type.get_canonical().element_count


def _extent(cursor) -> tuple:
    """(file offset of the first character, of the end) of ``cursor``'s source."""
    return cursor.extent.start.offset, cursor.extent.end.offset


def is_kernel(cursor) -> bool:
    """Whether the function cursor is declared ``__kernel`` (or ``kernel``): clang's kernel
    attribute among its children (spelled ``__kernel`` where it is written, through a macro
    too), or the keyword among its tokens before its name (after any
    ``__attribute__((...))``)."""
    from itertools import islice
    for child in cursor.get_children():
        if child.kind.is_attribute():
            first = next(iter(child.get_tokens()), None)
            if first is not None and first.spelling in ("__kernel", "kernel"):
                return True
    for t in islice(cursor.get_tokens(), 256):
        if t.spelling in ("__kernel", "kernel"):
            return True
        if t.spelling == cursor.spelling:
            return False
    return False
