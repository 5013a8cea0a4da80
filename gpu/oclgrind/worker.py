"""The worker process of an Oclgrind run: this file, run as a script.

Oclgrind reads its plugin switches (``OCLGRIND_INST_COUNTS``, ``OCLGRIND_DATA_RACES``,
``OCLGRIND_UNINITIALIZED``, ``OCLGRIND_MAX_ERRORS``, ``OCLGRIND_LOG``) from the environment
when its platform is loaded, i.e. once per process, so every launch runs in a fresh worker
process with the environment of its run (set by :func:`gpu.oclgrind.launcher.run_worker`).
Run with ``--serve``, the script is a fork server: it imports numpy and pyopencl once, loads
no OpenCL platform, and for each launch request on its standard input (one JSON line) forks a
worker that takes the run's environment and output files, loads the platforms and launches
(:func:`serve`); it answers the worker's process id, then its exit status. The worker fills
the inputs with standard-normal float32 values (never constant), builds with the Oclgrind
platform, launches once and writes a small JSON result file. Oclgrind's instruction counter
prints on the worker's standard output, its diagnostics go to ``OCLGRIND_LOG`` (API-check
messages to standard error). Of tiletraffic the worker uses only ``gpu/codegen/kernel.py``
(loaded by its path; it imports nothing of the package): the launcher runs this file by its
path, so a launch pays for a fork, Oclgrind and the run, not for importing the package.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path


__all__ = ["OCLGRIND_PLATFORM", "EXIT_NO_PLATFORM", "EXIT_BUILD_FAILED", "EXIT_FAILED",
           "worker_main", "serve"]

OCLGRIND_PLATFORM = "Oclgrind"
"""Substring of the OpenCL platform name of Oclgrind."""

EXIT_NO_PLATFORM = 3
"""Exit status of a worker that found no Oclgrind platform."""
EXIT_BUILD_FAILED = 4
"""Exit status of a worker whose kernel did not build (the result file holds the log)."""
EXIT_FAILED = 1
"""Exit status of a worker that raised (its traceback on its standard error)."""
_RESULT_MARKER = "tiletraffic-oclgrind-result"

_PROBE_SOURCE = """
__kernel void tiletraffic_probe_addresses(__global ulong *out, {params})
{{
{body}
}}
"""


_CODEGEN_MODULE = "tiletraffic_worker_codegen_kernel"


def _codegen_kernel():
    """The module ``gpu/codegen/kernel.py`` beside this package (the int2/int4 argument
    kinds and their values as ``clSetKernelArg`` takes them), loaded by its path."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "codegen" / "kernel.py"
    spec = importlib.util.spec_from_file_location(_CODEGEN_MODULE, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module     # dataclasses look their module up while decorating
    spec.loader.exec_module(module)
    return module


def worker_main(request: dict | None = None) -> int:
    """Run one launch; return the process exit status.

    ``request`` (read as JSON from standard input when None): ``{"spec": LaunchSpec fields,
    "mode": "counts" | "check" | "check-api", "result_path": path}``. Writes ``{"ok": True,
    "marker": ..., "buffers": {name: [base address, bytes]}}`` (``buffers`` empty in
    ``"counts"`` mode) or, when the build fails, ``{"ok": False, "build_log": ...}`` to
    ``result_path``.

    Returns:
        0 after one launch; :data:`EXIT_NO_PLATFORM` without an Oclgrind platform;
        :data:`EXIT_BUILD_FAILED` when the kernel does not build.
    """
    import numpy as np
    import pyopencl as cl

    float_bytes = np.dtype(np.float32).itemsize
    kernel_kinds = sys.modules.get(_CODEGEN_MODULE) or _codegen_kernel()
    if request is None:
        request = json.loads(sys.stdin.read())
    spec, mode, result_path = request["spec"], request["mode"], request["result_path"]

    def write(result: dict) -> None:
        Path(result_path).write_text(json.dumps(result))

    platforms = [p for p in cl.get_platforms() if OCLGRIND_PLATFORM.lower() in p.name.lower()]
    if not platforms:
        print("no Oclgrind OpenCL platform", file=sys.stderr)
        return EXIT_NO_PLATFORM
    device = platforms[0].get_devices()[0]
    ctx = cl.Context([device])
    queue = cl.CommandQueue(ctx)
    try:
        program = cl.Program(ctx, spec["source"]).build(options=list(spec["build_options"]))
    except cl.Error as err:
        write({"ok": False, "build_log": str(err)})
        return EXIT_BUILD_FAILED
    kernel = getattr(program, spec["kernel_name"])
    buffer_names = [name for name, kind in spec["args"]
                    if kind in ("global_in", "global_out", "global_inout")]
    probe = None
    if mode != "counts" and buffer_names:
        # A tiny kernel writes (ulong)pointer of every buffer: Oclgrind's base addresses,
        # to name the buffer of a global address in a diagnostic.
        params = ", ".join(f"__global float *p{i}" for i in range(len(buffer_names)))
        body = "\n".join(f"    out[{i}] = (ulong)p{i};" for i in range(len(buffer_names)))
        probe = cl.Program(ctx, _PROBE_SOURCE.format(params=params, body=body)).build()
        probe = probe.tiletraffic_probe_addresses
    if mode == "check-api":
        # Oclgrind reads OCLGRIND_CHECK_API at every API error. Turned on only now, after the
        # builds: pyopencl's own probing queries while building (clGetDeviceInfo with a
        # parameter Oclgrind does not know, CL_INVALID_VALUE) are not the kernel's fault.
        os.environ["OCLGRIND_CHECK_API"] = "1"

    rng = np.random.default_rng(spec["seed"])
    args, bufs = [], []
    mf = cl.mem_flags
    for name, kind in spec["args"]:
        if kind in kernel_kinds.INT_VECTOR_KINDS:
            args.append(kernel_kinds.int_vector(kind, spec["scalars"][name]))
            continue
        if kind in ("int", "long", "char", "short", "float"):
            args.append({"int": np.int32, "long": np.int64, "char": np.int8, "short": np.int16,
                         "float": np.float32}[kind](spec["scalars"][name]))
            continue
        if kind == "local":
            args.append(cl.LocalMemory(int(spec["local_bytes"][name])))
            continue
        if kind == "null":
            args.append(None)
            continue
        n = int(spec["array_elems"][name])
        dtype = np.float16 if name in spec.get("half_arrays", ()) else np.float32
        if name in spec.get("int_data", {}):     # an integer buffer: its given contents
            host = (np.asarray(spec["int_data"][name], dtype=np.int64) & 0xFFFFFFFF
                    ).astype(np.uint32)
            buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR,
                            hostbuf=host if host.size else np.zeros(1, np.uint32))
        elif name in spec.get("float_data", {}):     # the values the simulator counted
            host = np.asarray(spec["float_data"][name], dtype=np.float32).astype(dtype)
            if host.size < max(n, 1):
                host = np.concatenate([host, np.zeros(max(n, 1) - host.size, dtype)])
            access = mf.READ_ONLY if kind == "global_in" else mf.READ_WRITE
            buf = cl.Buffer(ctx, access | mf.COPY_HOST_PTR, hostbuf=host)
        elif kind in ("global_in", "global_inout"):
            host = rng.standard_normal(max(n, 1)).astype(dtype)
            while host.size > 1 and np.all(host == host[0]):
                host = rng.standard_normal(host.size).astype(dtype)
            access = mf.READ_ONLY if kind == "global_in" else mf.READ_WRITE
            buf = cl.Buffer(ctx, access | mf.COPY_HOST_PTR, hostbuf=host)
        else:
            buf = cl.Buffer(ctx, mf.READ_WRITE, max(n, 1) * np.dtype(dtype).itemsize)
        args.append(buf)
        bufs.append(buf)

    buffers = {}
    if probe is not None:
        bases = np.zeros(len(bufs), dtype=np.uint64)
        out_buf = cl.Buffer(ctx, mf.WRITE_ONLY, bases.nbytes)
        probe(queue, (1,), (1,), out_buf, *bufs)
        cl.enqueue_copy(queue, bases, out_buf)
        buffers = {n: (int(b), int(spec["array_elems"][n])
                       * (2 if n in spec.get("half_arrays", ()) else float_bytes))
                   for n, b in zip(buffer_names, bases)}

    kernel(queue, tuple(spec["global_size"]), tuple(spec["local_size"]), *args)
    queue.finish()
    sys.stdout.flush()
    write({"ok": True, "marker": _RESULT_MARKER, "buffers": buffers})
    return 0


def _redirect(fd: int, path: str, flags: int) -> None:
    target = os.open(path, flags, 0o600)
    os.dup2(target, fd)
    os.close(target)


def _forked_worker(request: dict) -> int:
    """In a process just forked by :func:`serve`: take the run's environment (Oclgrind reads
    its switches when its platform is loaded, which happens only now), working folder and
    output files, then run the launch."""
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    _redirect(0, os.devnull, os.O_RDONLY)
    _redirect(1, request["stdout_path"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    _redirect(2, request["stderr_path"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        return worker_main(request["launch"])
    except Exception:
        import traceback
        traceback.print_exc()
        return EXIT_FAILED


def serve() -> int:
    """The fork server: import numpy, pyopencl and the argument kinds once (no OpenCL
    platform is loaded here), answer ``{"ready": true}``, then for each request line on
    standard input (``{"launch": worker_main's request, "env": the worker's environment,
    "cwd": its working folder, "stdout_path": ..., "stderr_path": ...}``) fork a worker,
    answer ``{"pid": ...}``, wait for it and answer ``{"status": exit status}`` (negative:
    killed by that signal). Returns 0 at the end of standard input; in the forked worker,
    the worker's exit status (the script exits with it)."""
    import numpy  # noqa: F401  (imported once, before any fork)
    import pyopencl  # noqa: F401

    _codegen_kernel()

    def answer(value: dict) -> None:
        sys.stdout.write(json.dumps(value) + "\n")
        sys.stdout.flush()

    answer({"ready": True})
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            return _forked_worker(request)
        answer({"pid": pid})
        _, status = os.waitpid(pid, 0)
        answer({"status": os.waitstatus_to_exitcode(status)})
    return 0


if __name__ == "__main__":
    sys.exit(serve() if sys.argv[-1:] == ["--serve"] else worker_main())
