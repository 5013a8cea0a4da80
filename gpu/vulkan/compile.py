"""GLSL compute shader to SPIR-V with glslang's reference compiler, ``glslangValidator``.

Typical use::

    spirv = compile_glsl(path="gemm.comp")                  # bytes, a SPIR-V module
    spirv = compile_glsl(source, path="gemm.comp", defines={"TILE": 16})

The compiler is found on ``PATH`` (Debian's ``glslang-tools``), or where the environment
variable ``GLSLANG_VALIDATOR`` names it.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Mapping, Sequence

from tiletraffic.gpu.vulkan.errors import GlslCompileError, VulkanUnavailable

COMPILER = "glslangValidator"
INSTALL_HINT = "apt-get install glslang-tools"
TARGET_ENVS = ("vulkan1.0", "vulkan1.1", "vulkan1.2", "vulkan1.3")
COMPILE_TIMEOUT_S = 120
SPIRV_MAGIC = 0x07230203


def glslang_validator() -> str:
    """The path of ``glslangValidator`` (``$GLSLANG_VALIDATOR``, else the one on ``PATH``).

    Raises:
        VulkanUnavailable: it is not there (one line, with the install command).
    """
    named = os.environ.get("GLSLANG_VALIDATOR")
    if named:
        if not (os.path.isfile(named) and os.access(named, os.X_OK)):
            raise VulkanUnavailable(f"GLSLANG_VALIDATOR={named!r} is not an executable file")
        return named
    found = shutil.which(COMPILER)
    if found is None:
        raise VulkanUnavailable(f"no {COMPILER} on PATH to compile GLSL to SPIR-V "
                                f"({INSTALL_HINT})")
    return found


def _first_error(log: str, shown: str, written: str) -> str:
    """The compiler's first ``ERROR:`` line (else its first non-empty line), naming the
    user's file rather than the temporary copy."""
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("ERROR:")] or lines or ["no message"]
    return errors[0].replace(written, shown)


def compile_glsl(source: str | None = None, *, path: str | os.PathLike | None = None,
                 defines: Mapping[str, object] | None = None,
                 include_dirs: Sequence[str | os.PathLike] = (), stage: str = "comp",
                 target_env: str = "vulkan1.2") -> bytes:
    """Compile a GLSL compute shader to a SPIR-V module.

    Args:
        source: the shader's text; None compiles the file at ``path`` as it is.
        path: the shader's file: read when ``source`` is None; its folder is searched for
            ``#include`` files and its name is the one error messages give.
        defines: ``-D NAME=VALUE`` for each (a value of None: ``-D NAME``).
        include_dirs: further folders searched for ``#include`` files.
        stage: the shader stage (``comp``: compute).
        target_env: the Vulkan version the SPIR-V targets, one of :data:`TARGET_ENVS`.

    Returns:
        The SPIR-V module's bytes (a whole number of little-endian 32-bit words).

    Raises:
        VulkanUnavailable: no ``glslangValidator`` (one line).
        GlslCompileError: the compiler rejected the shader (its first error line, the file
            named; ``log`` holds all of its output), or did not finish in
            :data:`COMPILE_TIMEOUT_S` seconds.
        ValueError: neither ``source`` nor ``path``, an unknown ``target_env``, or a define
            whose name is not an identifier.
        FileNotFoundError: ``path`` names no file and ``source`` is None.
    """
    if source is None and path is None:
        raise ValueError("compile_glsl: give the shader's source or its path")
    if target_env not in TARGET_ENVS:
        raise ValueError(f"target_env {target_env!r}: expected one of {', '.join(TARGET_ENVS)}")
    for name in defines or {}:
        if not str(name).isidentifier():
            raise ValueError(f"define {name!r}: not an identifier")
    compiler = glslang_validator()
    shown = str(path) if path is not None else f"shader.{stage}"
    with tempfile.TemporaryDirectory(prefix="tiletraffic-glsl-") as tmp:
        if source is None:
            written = str(Path(path).resolve(strict=True))
        else:
            written = os.path.join(tmp, Path(shown).name)
            Path(written).write_text(source, encoding="utf-8")
        out = os.path.join(tmp, "shader.spv")
        cmd = [compiler, "-V", "--target-env", target_env, "-S", stage, "-o", out]
        if path is not None:
            cmd.append(f"-I{Path(path).resolve().parent}")
        cmd += [f"-I{d}" for d in include_dirs]
        cmd += [f"-D{k}" if v is None else f"-D{k}={v}" for k, v in (defines or {}).items()]
        cmd.append(written)
        try:
            done = subprocess.run(cmd, capture_output=True, text=True,
                                  timeout=COMPILE_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            raise GlslCompileError(f"{shown}: {COMPILER} did not finish in "
                                   f"{COMPILE_TIMEOUT_S} s") from None
        log = (done.stdout + done.stderr).replace(written, shown)
        if done.returncode != 0 or not os.path.exists(out):
            raise GlslCompileError(f"{shown}: rejected by {COMPILER}: "
                                   f"{_first_error(log, shown, written)}", log)
        spirv = Path(out).read_bytes()
    if len(spirv) < 20 or len(spirv) % 4 or int.from_bytes(spirv[:4], "little") != SPIRV_MAGIC:
        raise GlslCompileError(f"{shown}: {COMPILER} wrote no SPIR-V module", log)
    return spirv
