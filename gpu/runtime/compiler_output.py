"""What an OpenCL compiler prints on the process's stderr while it builds a program.

PoCL's compiler (clang) writes its diagnostics into the program's build log, which
:func:`gpu.runtime.launch.build_program` keeps (``BuildResult.log``; a failed build's log is
in its ``KernelBuildError``), but prints clang's summary line, ``1 warning generated.``, on
file descriptor 2 itself, into the user's terminal between a command's own lines.
:func:`compiler_summary_held` holds that line back; setting ``PYOPENCL_COMPILER_OUTPUT=1``
(pyopencl's switch for showing compiler output) lets it through.
"""
from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile

ASK_ENV = "PYOPENCL_COMPILER_OUTPUT"
"""The environment variable that, set to anything but empty or ``0``, shows the compiler's
output on stderr as it comes."""

_SUMMARY = re.compile(r"\d+ (?:warnings?|errors?)(?: and \d+ errors?)? generated\.")
"""clang's summary line of a compile's diagnostics."""


@contextlib.contextmanager
def compiler_summary_held():
    """While the block runs, hold what is written to file descriptor 2; afterwards write
    back every line of it but clang's summary lines (:data:`_SUMMARY`), in order, so that
    nothing else printed meanwhile is lost. Nothing is held where :data:`ASK_ENV` asks
    for the compiler's output, or where descriptor 2 cannot be duplicated."""
    if os.environ.get(ASK_ENV, "") not in ("", "0"):
        yield
        return
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):
        yield
        return
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        finally:
            with contextlib.suppress(OSError, ValueError, AttributeError):
                sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            lines = held.read().decode("utf-8", errors="replace").splitlines(keepends=True)
            kept = "".join(line for line in lines if not _SUMMARY.fullmatch(line.strip()))
            if kept:
                os.write(2, kept.encode("utf-8"))
