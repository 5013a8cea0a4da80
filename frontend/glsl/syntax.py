"""GLSL compute shader text -> a tree-sitter tree, after the reference compiler's check.

The grammar is ``tree-sitter-glsl-spec`` (GLSL 4.60) through the ``tree-sitter`` package.
Before the tree is read, ``glslangValidator`` (glslang, the Khronos reference compiler)
compiles the shader for Vulkan when it is installed: a shader it rejects is refused with its
message. A word GLSL reserves for future use (``output``, ``input``, ...) used as a name is
the one rejection that is not a refusal: the shader is checked again with those names
changed, and where that compiles the shader is read as written, with a
:class:`ReservedWordWarning` that names the word and its place.

Errors: :class:`GlslError` (a :class:`~tiletraffic.frontend.opencl.clang_ast.FrontendError`),
one line ``file:line:column: what``.
"""
from __future__ import annotations

import functools
import shutil
import subprocess
import tempfile
import warnings
from pathlib import Path

from tiletraffic.frontend.opencl.clang_ast import FrontendError

VALIDATOR = "glslangValidator"
"""The reference compiler's command (Debian/Ubuntu package ``glslang-tools``)."""

VALIDATE_TIMEOUT_S = 60
"""How long one run of the reference compiler may take before the shader is refused."""

RESERVED_WORDS = frozenset((
    "common", "partition", "active", "asm", "class", "union", "enum", "typedef",
    "template", "this", "resource", "goto", "inline", "noinline", "public", "static",
    "extern", "external", "interface", "long", "short", "half", "fixed", "unsigned",
    "superp", "input", "output", "hvec2", "hvec3", "hvec4", "fvec2", "fvec3", "fvec4",
    "filter", "sizeof", "cast", "namespace", "using", "sampler3DRect"))
"""The words GLSL 4.60 reserves for future use (section 3.6): glslang rejects them as
names."""


class GlslError(FrontendError):
    """A GLSL shader that cannot become a schedule: rejected by the reference compiler, a
    parse error, or a construct outside what is modelled (one line, ``file:line:column``)."""


class ReservedWordWarning(UserWarning):
    """The shader names something with a word GLSL reserves for future use: the reference
    compiler rejects it, the shader is otherwise valid and is read as written."""


class ValidatorMissingWarning(UserWarning):
    """``glslangValidator`` is not installed: the shader is read without the reference
    compiler's check."""


@functools.lru_cache(maxsize=1)
def parser():
    """The tree-sitter parser of GLSL.

    Raises:
        GlslError: the ``tree-sitter`` or ``tree-sitter-glsl-spec`` package is missing.
    """
    try:
        import tree_sitter
        import tree_sitter_glsl_spec
    except ImportError:
        raise GlslError("reading GLSL needs the packages tree-sitter and "
                        "tree-sitter-glsl-spec (pip install tree-sitter "
                        "tree-sitter-glsl-spec)") from None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        language = tree_sitter.Language(tree_sitter_glsl_spec.language())
    return tree_sitter.Parser(language)


def parse(text: bytes):
    """The tree-sitter tree of GLSL ``text``."""
    return parser().parse(text)


def where(path, node) -> str:
    """``file:line:column`` of ``node`` (1-based, as compilers print it)."""
    row, column = node.start_point
    return f"{path}:{row + 1}:{column + 1}"


def fail(path, node, message: str):
    """Raise :class:`GlslError` ``file:line:column: message`` at ``node``."""
    raise GlslError(f"{where(path, node)}: {message}")


def validator() -> str | None:
    """The reference compiler's path, or None where it is not installed."""
    return shutil.which(VALIDATOR)


def validate(path: Path, text: bytes, include_dirs=()) -> None:
    """Compile ``text`` (the shader at ``path``) with the reference compiler for Vulkan.

    Warns:
        ValidatorMissingWarning: the compiler is not installed (nothing is checked).
        ReservedWordWarning: the only rejection is a reserved word used as a name.

    Raises:
        GlslError: the compiler rejects the shader (its first message, with file:line).
    """
    if validator() is None:
        warnings.warn(f"{path}: {VALIDATOR} is not installed: the shader is read without "
                      "the reference compiler's check (install glslang-tools)",
                      ValidatorMissingWarning, stacklevel=3)
        return
    includes = any(n.type == "preproc_call" and n.children[0].text == b"#include"
                   for n in parse(text).root_node.children)
    outcome = (_outcome.__wrapped__ if includes else _outcome)(
        str(path), text, tuple(map(str, include_dirs)))
    if outcome[0] == "reserved":
        warnings.warn(outcome[1], ReservedWordWarning, stacklevel=3)
    elif outcome[0] == "error":
        raise GlslError(outcome[1])


@functools.lru_cache(maxsize=64)
def _outcome(path: str, text: bytes, include_dirs: tuple) -> tuple[str, str]:
    """The reference compiler's verdict on ``text``: ("ok", ""), ("reserved", the
    warning) or ("error", the refusal); cached for a shader without ``#include``."""
    errors = _compile(Path(path), text, include_dirs)
    if not errors:
        return "ok", ""
    reserved = [n for n in identifiers(parse(text).root_node)
                if n.text.decode() in RESERVED_WORDS]
    if reserved and all(e[2].endswith("Reserved word.") for e in errors[:1]):
        again = _compile(Path(path), _renamed(text, reserved), include_dirs)
        if not again:
            words = sorted({n.text.decode() for n in reserved})
            return "reserved", (
                f"{where(path, reserved[0])}: {', '.join(map(repr, words))} "
                f"{'is a word' if len(words) == 1 else 'are words'} GLSL reserves for future "
                f"use: {VALIDATOR} rejects the shader as written (rename it to compile the "
                "shader for Vulkan); read here as a name")
        errors = again
    file, line, message = errors[0]
    return "error", f"{file}:{line}: {VALIDATOR} rejects the shader: {message}"


def compilable(text: bytes) -> bytes:
    """``text`` with every name that is a word GLSL reserves (``output``) renamed
    (``output_``), so that the reference compiler accepts a shader :func:`validate` warned
    about; names of buffers change nothing in a dispatch (sets and bindings do)."""
    reserved = [n for n in identifiers(parse(text).root_node)
                if n.text.decode() in RESERVED_WORDS]
    return _renamed(text, reserved) if reserved else text


def identifiers(node):
    """Every identifier node under ``node``, in order."""
    if node.type in ("identifier", "field_identifier"):
        yield node
    for child in node.children:
        yield from identifiers(child)


def _renamed(text: bytes, nodes) -> bytes:
    """``text`` with each of ``nodes`` (identifiers) given a name GLSL does not reserve."""
    out = bytearray(text)
    for node in sorted(nodes, key=lambda n: n.start_byte, reverse=True):
        out[node.start_byte:node.end_byte] = node.text + b"_"
    return bytes(out)


def _compile(path: Path, text: bytes, include_dirs) -> list[tuple[str, str, str]]:
    """The reference compiler's errors for ``text`` as (file, line, message), in order;
    empty where it compiles."""
    with tempfile.TemporaryDirectory() as tmp:
        shader = Path(tmp) / (Path(path).stem + ".comp")
        shader.write_bytes(text)
        command = [validator(), "-V", "--target-env", "vulkan1.1", "-S", "comp",
                   "-o", str(Path(tmp) / "shader.spv"),
                   f"-I{Path(path).resolve().parent}", *(f"-I{d}" for d in include_dirs),
                   str(shader)]
        try:
            done = subprocess.run(command, capture_output=True, text=True,
                                  timeout=VALIDATE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise GlslError(f"{path}: {VALIDATOR} took more than {VALIDATE_TIMEOUT_S} s"
                            ) from None
        if done.returncode == 0:
            return []
        errors = []
        for line in (done.stdout + done.stderr).splitlines():
            kind, _, rest = line.partition(": ")
            if kind != "ERROR":
                continue
            place, _, message = rest.partition(": ")
            file, _, number = place.rpartition(":")
            if number.isdigit() and Path(file).name == shader.name:
                errors.append((str(path), number, message.strip()))
            elif not errors:
                errors.append((str(path), "1", rest.strip()))
        return errors or [(str(path), "1", (done.stdout + done.stderr).strip()
                           .splitlines()[0] if (done.stdout + done.stderr).strip()
                           else f"exit status {done.returncode}")]
