"""The CUDA build's machine code without a GPU: NVRTC of the same CUDA version as the H200's
(13.0), called through ctypes, compiles a configuration's CUDA source
(:func:`experiments.h200.cuda.cuda_source` of the generated OpenCL C) for ``sm_90``;
``cuobjdump -sass`` disassembles it; the local-memory instructions are counted as the device
drivers count them (:func:`experiments.h200.ladder.local_codegen.local_sass_counts`).

NVRTC is deterministic: the same library version, source and options give the same machine
code on any x86-64 machine. :func:`check_against_device` shows it, by compiling the sources
of a device call's ``code.tar.gz`` and comparing every kernel's local-instruction counts with
the SASS that call's ptxas produced on the H200.

    python -m experiments.h200.local_counters.offline_sass --nvrtc LIBNVRTC --cuobjdump BIN \\
        --out reports/nvidia-h200/local_counters/offline_sass.json \\
        --check reports/nvidia-h200/ladder/codegen2/code.tar.gz

``LIBNVRTC``: ``libnvrtc.so.13`` of the ``nvidia-cuda-nvrtc==13.0.88`` wheel (the device's
nvcc reports ``cuda_13.0.r13.0``); ``BIN``: any cuobjdump that reads ``sm_90`` cubins.
"""
from __future__ import annotations

import argparse
import ctypes
import datetime as _dt
import io
import json
import shlex
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from experiments.h200.ladder.local_codegen import local_sass_counts

OPTIONS = ("-arch=sm_90",)
"""NVRTC options: machine code for the H200 (compute capability 9.0), NVRTC's default
optimization (what CuPy's ``RawModule`` and the device drivers' NVRTC calls use)."""


class Nvrtc:
    """The NVRTC C API through ctypes: ``compile(source, name) -> cubin bytes``."""

    def __init__(self, path: str):
        self.lib = ctypes.CDLL(path)
        major, minor = ctypes.c_int(), ctypes.c_int()
        self._check(self.lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)))
        self.version = f"{major.value}.{minor.value}"

    def _check(self, status: int, prog=None) -> None:
        if status == 0:
            return
        self.lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        text = self.lib.nvrtcGetErrorString(status).decode()
        raise RuntimeError(f"NVRTC: {text}" + (f"\n{self.log(prog)}" if prog else ""))

    def log(self, prog) -> str:
        size = ctypes.c_size_t()
        self.lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value)
        self.lib.nvrtcGetProgramLog(prog, buf)
        return buf.value.decode(errors="replace")

    def compile(self, source: str, name: str) -> bytes:
        prog = ctypes.c_void_p()
        self._check(self.lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(),
                                                name.encode(), 0, None, None))
        try:
            opts = (ctypes.c_char_p * len(OPTIONS))(*(o.encode() for o in OPTIONS))
            self._check(self.lib.nvrtcCompileProgram(prog, len(OPTIONS), opts), prog)
            size = ctypes.c_size_t()
            self._check(self.lib.nvrtcGetCUBINSize(prog, ctypes.byref(size)))
            buf = ctypes.create_string_buffer(size.value)
            self._check(self.lib.nvrtcGetCUBIN(prog, buf))
            return buf.raw
        finally:
            self.lib.nvrtcDestroyProgram(ctypes.byref(prog))


def sass_of(nvrtc: Nvrtc, cuobjdump: str, source: str, name: str) -> str:
    """cuobjdump's SASS of ``source`` compiled by ``nvrtc``."""
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / f"{name}.cubin"
        cubin.write_bytes(nvrtc.compile(source, f"{name}.cu"))
        done = subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True,
                              text=True, timeout=120, check=True)
        return done.stdout


def configuration_sass(nvrtc: Nvrtc, cuobjdump: str, configs: list[dict]) -> dict:
    """Per configuration (:func:`experiments.h200.local_counters.cases.code_cases`): its
    local-instruction counts and the SASS, of the source generated now."""
    from tiletraffic.gpu.codegen.generate import generate
    from experiments.h200.cuda import cuda_source

    from experiments.h200.validation.driver import build_case

    out = {}
    for c in configs:
        kernel = generate(build_case(c))
        sass = sass_of(nvrtc, cuobjdump, cuda_source(kernel), c["id"])
        out[c["id"]] = {"sass_counts": local_sass_counts(sass), "sass": sass,
                        "source": kernel.source}
    return out


def check_against_device(nvrtc: Nvrtc, cuobjdump: str, code_tar: Path) -> list[dict]:
    """Compile every ``<id>.cl`` of a device call's ``code.tar.gz`` behind the CUDA prelude
    and compare its local-instruction counts with that call's ``<id>.cuda.sass``."""
    from experiments.h200.cuda import CUDA_PRELUDE

    rows = []
    with tarfile.open(code_tar) as tar:
        files = {Path(m.name).name: m for m in tar.getmembers() if m.isfile()}
        for name in sorted(files):
            if not name.endswith(".cl"):
                continue
            cid = name[:-3]
            device = files.get(f"{cid}.cuda.sass")
            if device is None:
                continue
            cl = tar.extractfile(files[name]).read().decode()
            src = (CUDA_PRELUDE + cl).encode("ascii", "replace").decode()
            here = local_sass_counts(sass_of(nvrtc, cuobjdump, src, cid))
            there = local_sass_counts(tar.extractfile(device).read().decode())
            rows.append({"id": cid, "offline": here, "device": there, "equal": here == there})
    return rows


THEN_CHILD = """
import json, sys
try:
    from tiletraffic.simulator.kernels.families import build
    from tiletraffic.gpu.codegen.generate import generate
    from experiments.h200.cuda import cuda_source
except ImportError:
    from simulator.kernels.families import build
    from gpu.codegen.generate import generate
    from experiments.h200.cuda import cuda_source
out = {}
for c in json.loads(sys.argv[1]):
    try:
        k = generate(build(c["family"], c["m"], c["k"], c["n"], c["tile"], **c["options"]))
        out[c["id"]] = cuda_source(k) if sys.argv[2] == "cuda" else k.source
    except Exception as err:
        out[c["id"]] = {"error": repr(err)}
print(json.dumps(out))
"""
"""Run in a checkout of an earlier commit: the CUDA source of each configuration then."""


def sources_then(tree: Path, configs: list[dict], language: str = "cuda") -> dict:
    """``{config id: source}`` (or ``{"error": ...}``) generated by the checkout ``tree`` of
    an earlier commit: the CUDA source (its own code generator and CUDA prelude) or, with
    ``language`` "opencl", the OpenCL C."""
    done = subprocess.run([sys.executable, "-c", THEN_CHILD, json.dumps(configs), language],
                          capture_output=True, text=True, timeout=300, cwd=tree,
                          env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"})
    if done.returncode != 0:
        raise RuntimeError(f"{tree}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare_then(nvrtc: Nvrtc, cuobjdump: str, tree: Path, configs: list[dict],
                 now: dict) -> dict:
    """Per configuration: the local-instruction counts of the CUDA build of its source at
    the commit checked out in ``tree``, and whether they equal those of now (``now``:
    :func:`configuration_sass`)."""
    out = {}
    for cid, src in sources_then(tree, configs).items():
        if isinstance(src, dict):
            out[cid] = src
            continue
        counts = local_sass_counts(sass_of(nvrtc, cuobjdump, src, cid))
        out[cid] = {"sass_counts": counts,
                    "equal_to_now": counts == now.get(cid, {}).get("sass_counts")}
    for cid, src in sources_then(tree, configs, "opencl").items():
        if cid in out and "sass_counts" in out[cid]:
            out[cid]["opencl_source_equal_to_now"] = src == now.get(cid, {}).get("source")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nvrtc", required=True, help="path of libnvrtc.so (CUDA 13.0)")
    ap.add_argument("--cuobjdump", required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--sources-only", action="store_true",
                    help="only add, to an existing --out, whether each --then commit's "
                         "OpenCL C equals today's (no compilation)")
    ap.add_argument("--check", type=Path, action="append", default=[],
                    help="a device call's code.tar.gz to reproduce first")
    ap.add_argument("--then", action="append", default=[], metavar="COMMIT=DIR",
                    help="a checkout DIR of an earlier COMMIT (git worktree add --detach "
                         "DIR COMMIT): compile its sources of the same configurations")
    a = ap.parse_args(argv)
    from experiments.h200.local_counters.cases import code_cases

    if a.sources_only:
        data = json.loads(a.out.read_text())
        for spec in a.then:
            commit, tree = spec.split("=", 1)
            for cid, src in sources_then(Path(tree), code_cases(), "opencl").items():
                rec = data["then"].get(commit, {}).get(cid)
                if rec is not None and "sass_counts" in rec:
                    rec["opencl_source_equal_to_now"] = src == data["configs"][cid]["source"]
        tmp = a.out.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(a.out)
        return 0
    nvrtc = Nvrtc(a.nvrtc)
    data = {"meta": {"created_utc": _dt.datetime.now(_dt.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ"), "nvrtc_version": nvrtc.version, "options": list(OPTIONS),
        "command": shlex.join([sys.executable, "-m",
                               "experiments.h200.local_counters.offline_sass",
                               *(argv if argv is not None else sys.argv[1:])])},
        "checks": {str(p): check_against_device(nvrtc, a.cuobjdump, p) for p in a.check},
        "configs": configuration_sass(nvrtc, a.cuobjdump, code_cases())}
    data["then"] = {}
    for spec in a.then:
        commit, tree = spec.split("=", 1)
        data["then"][commit] = compare_then(nvrtc, a.cuobjdump, Path(tree), code_cases(),
                                            data["configs"])
    a.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = a.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(a.out)
    for p, rows in data["checks"].items():
        print(f"{p}: {sum(r['equal'] for r in rows)} of {len(rows)} kernels equal")
        for r in rows:
            if not r["equal"]:
                print("  differs:", r["id"], r["offline"], r["device"])
    for cid, rec in data["configs"].items():
        print(cid, rec["sass_counts"])
    for commit, rows in data["then"].items():
        same = [c for c, r in rows.items() if r.get("equal_to_now")]
        print(f"then {commit}: same local instructions as now: {same}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
