"""Instruction counts of a compiled kernel without a GPU: NVIDIA's offline compilers.

A schedule's generated OpenCL C, behind :data:`tiletraffic.gpu.instructions.prelude.
CUDA_PRELUDE`, is compiled by NVRTC (CUDA C++ -> machine code for ``--arch``, default
``sm_90``), or a PTX file (the OpenCL driver's, from its program binary) is assembled by
``ptxas``; ``nvdisasm --emit-json`` disassembles the machine code into its structured
listing (per function: the instructions in address order, each with its opcode, operands
and attributes). From it :func:`count_functions` takes, per kernel, the counts of the whole
machine code and of each innermost loop body by class
(:data:`simulator.model.instructions.INSTRUCTION_CLASSES`): a loop is the range from a
branch's target back to the branch (a back edge: target at or before the branch); an
innermost loop contains no other back edge. The padding after the kernel's last exit (a
branch to itself and ``NOP`` fillers) is not counted.

The tools come from PyPI wheels (``pip install tiletraffic[cuda-tools]``:
``nvidia-cuda-nvrtc-cu12``, ``nvidia-cuda-nvcc-cu12`` for ``ptxas``,
``nvidia-cuda-nvdisasm``) or from ``PATH`` / ``LD_LIBRARY_PATH``; :func:`tools_problem`
says in one line which is missing.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import glob
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tiletraffic.gpu.devices.device import TiletrafficGpuError
from tiletraffic.gpu.instructions.prelude import cuda_source
from tiletraffic.simulator.model.instructions import (INSTRUCTION_CLASSES, InstructionsFile,
                                                      KernelInstructions, LoopInstructions)

DEFAULT_ARCH = "sm_90"
"""The target the counts are for (compute capability 9.0: H100, H200)."""

_BY_BASE = {
    "FFMA": "fma", "FADD": "float", "FMUL": "float", "FMNMX": "float",
    "LDS": "local_load", "LDSM": "local_load", "STS": "local_store",
    "LDG": "global_load", "LD": "global_load", "STG": "global_store", "ST": "global_store",
    "RED": "global_store", "ATOMG": "global_store", "BAR": "barrier",
    "MOV": "move", "UMOV": "move", "S2R": "move", "S2UR": "move", "CS2R": "move",
    "LDC": "move", "ULDC": "move", "R2UR": "move", "MOV32I": "move",
    "BRA": "branch", "EXIT": "branch", "BRX": "branch", "JMP": "branch", "RET": "branch",
    "CALL": "branch", "BSSY": "branch", "BSYNC": "branch", "WARPSYNC": "branch",
}
_INTEGER = {"IADD3", "IADD", "IMAD", "IMUL", "LEA", "SHF", "LOP3", "LOP", "ISETP", "IABS",
            "IMNMX", "VIMNMX", "SEL", "PLOP3", "POPC", "FLO", "SGXT", "BMSK", "PRMT",
            "ISCADD", "IDP", "P2R", "R2P"}


class InstructionToolsMissing(TiletrafficGpuError):
    """NVRTC, ptxas or nvdisasm is not installed (the message names it and the wheel)."""


class BuildError(TiletrafficGpuError):
    """The compiler refused the source, or the disassembler failed (its log follows)."""


def classify(opcode: str) -> str:
    """The class of one machine instruction by its opcode (``"IMAD.MOV.U32"`` -> move,
    ``"HFMA2.MMA"`` (the compiler's way to write a constant) -> move, ``"LDS.128"`` ->
    local_load, ...): one of :data:`simulator.model.instructions.INSTRUCTION_CLASSES`."""
    parts = opcode.split(".")
    base = parts[0]
    if base in ("IMAD", "UIMAD") and "MOV" in parts[1:]:
        return "move"
    if base == "HFMA2" and "MMA" in parts[1:]:
        return "move"
    if base in _BY_BASE:
        return _BY_BASE[base]
    if base in _INTEGER or (base.startswith("U") and base[1:] in _INTEGER):
        return "integer"
    return "other"


def _site_packages_file(*patterns: str) -> str | None:
    import site
    roots = site.getsitepackages() + [site.getusersitepackages()]
    for root in roots:
        for pattern in patterns:
            found = sorted(glob.glob(os.path.join(root, pattern)))
            if found:
                return found[-1]
    return None


def find_tool(name: str) -> str | None:
    """The path of ``ptxas`` or ``nvdisasm``: from the NVIDIA wheels, else ``PATH``."""
    return (_site_packages_file(f"nvidia/*/bin/{name}") or shutil.which(name))


def find_nvrtc() -> str | None:
    """The path of NVRTC's library: from the NVIDIA wheels, else the loader's search."""
    return (_site_packages_file("nvidia/cuda_nvrtc/lib/libnvrtc.so.*",
                                "nvidia/*/lib/libnvrtc.so.*")
            or ctypes.util.find_library("nvrtc"))


_WHEELS = {"nvrtc": "nvidia-cuda-nvrtc-cu12", "ptxas": "nvidia-cuda-nvcc-cu12",
           "nvdisasm": "nvidia-cuda-nvdisasm"}


def tools_problem(need: tuple[str, ...] = ("nvrtc", "nvdisasm")) -> str | None:
    """None when the tools ``need`` names are found, else one line naming the first
    missing one and its wheel."""
    for tool in need:
        found = find_nvrtc() if tool == "nvrtc" else find_tool(tool)
        if not found:
            return (f"{tool} not found: pip install {_WHEELS[tool]} "
                    "(or tiletraffic[cuda-tools])")
    return None


def _require(*need: str) -> None:
    problem = tools_problem(need)
    if problem:
        raise InstructionToolsMissing(problem)


def compile_cuda(source: str, name: str, arch: str = DEFAULT_ARCH) -> tuple[bytes, str]:
    """Machine code (a cubin) of CUDA C++ ``source`` by NVRTC for ``arch``, and NVRTC's
    version (``"12.9"``).

    Raises:
        InstructionToolsMissing: no NVRTC. BuildError: NVRTC refused the source (its log).
    """
    _require("nvrtc")
    lib = ctypes.CDLL(find_nvrtc())
    major, minor = ctypes.c_int(), ctypes.c_int()
    lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    lib.nvrtcGetErrorString.restype = ctypes.c_char_p
    prog = ctypes.c_void_p()

    def check(status: int, what: str) -> None:
        if status:
            size = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            log = ctypes.create_string_buffer(max(1, size.value))
            lib.nvrtcGetProgramLog(prog, log)
            raise BuildError(f"NVRTC {what}: {lib.nvrtcGetErrorString(status).decode()}\n"
                             f"{log.value.decode(errors='replace')}")

    check(lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), f"{name}.cu".encode(),
                                 0, None, None), "create")
    try:
        options = [f"-arch={arch}".encode()]
        check(lib.nvrtcCompileProgram(prog, len(options),
                                      (ctypes.c_char_p * len(options))(*options)), "compile")
        size = ctypes.c_size_t()
        check(lib.nvrtcGetCUBINSize(prog, ctypes.byref(size)), "cubin size")
        buf = ctypes.create_string_buffer(size.value)
        check(lib.nvrtcGetCUBIN(prog, buf), "cubin")
        return buf.raw, f"{major.value}.{minor.value}"
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def assemble_ptx(ptx: str, arch: str = DEFAULT_ARCH) -> bytes:
    """Machine code (a cubin) of PTX text by ``ptxas`` for ``arch``.

    Raises:
        InstructionToolsMissing: no ptxas. BuildError: ptxas refused it (its message).
    """
    _require("ptxas")
    with tempfile.TemporaryDirectory(prefix="tiletraffic-ptxas-") as folder:
        src, out = Path(folder) / "kernel.ptx", Path(folder) / "kernel.cubin"
        src.write_text(ptx)
        done = subprocess.run([find_tool("ptxas"), f"-arch={arch}", str(src), "-o", str(out)],
                              capture_output=True, text=True, timeout=300)
        if done.returncode:
            raise BuildError(f"ptxas: {done.stderr.strip() or done.stdout.strip()}")
        return out.read_bytes()


def disassemble(cubin: bytes) -> list[dict]:
    """nvdisasm's structured listing of ``cubin``: per function ``{"function-name",
    "start", "length", "sass-instructions": [{"opcode", "operands", ...}]}``.

    Raises:
        InstructionToolsMissing: no nvdisasm. BuildError: nvdisasm failed.
    """
    _require("nvdisasm")
    with tempfile.TemporaryDirectory(prefix="tiletraffic-nvdisasm-") as folder:
        path = Path(folder) / "kernel.cubin"
        path.write_bytes(cubin)
        done = subprocess.run([find_tool("nvdisasm"), "--emit-json", str(path)],
                              capture_output=True, text=True, timeout=300)
    if done.returncode:
        raise BuildError(f"nvdisasm: {done.stderr.strip()}")
    try:
        document = json.loads(done.stdout)
    except ValueError as err:
        raise BuildError(f"nvdisasm: its JSON listing does not parse ({err})") from None
    return [f for part in document if isinstance(part, list) for f in part]


def _branch_target(instruction: dict) -> int | None:
    if classify(instruction["opcode"]) != "branch" or not instruction.get("operands"):
        return None
    last = instruction["operands"].split(",")[-1].strip()
    try:
        return int(last, 16)
    except ValueError:   # an indirect branch through a register
        return None


def _counts(instructions: list[dict]) -> dict[str, int]:
    out = dict.fromkeys(INSTRUCTION_CLASSES, 0)
    for ins in instructions:
        out[classify(ins["opcode"])] += 1
    return {c: v for c, v in out.items() if v}


@dataclass(frozen=True)
class _Loop:
    first: int
    last: int


def innermost_loops(instructions: list[dict], start: int, size_bytes: int) -> list[_Loop]:
    """The innermost loops of one function: index ranges ``[first, last]`` from a back
    edge's target to the back edge, holding no other back edge."""
    loops = []
    for i, ins in enumerate(instructions):
        target = _branch_target(ins)
        if target is None:
            continue
        first = (target - start) // size_bytes
        if 0 <= first <= i:
            loops.append(_Loop(first, i))
    return [lp for lp in loops
            if not any(o != lp and lp.first <= o.first and o.last <= lp.last for o in loops)]


def count_function(function: dict) -> KernelInstructions:
    """The counts of one function of :func:`disassemble`'s listing (the module docstring)."""
    instructions = list(function["sass-instructions"])
    size_bytes = max(1, int(function["length"]) // max(1, len(instructions)))
    start = int(function.get("start", 0))
    last_exit = max((i for i, ins in enumerate(instructions)
                     if ins["opcode"].split(".")[0] == "EXIT"), default=len(instructions) - 1)

    def padding(i: int) -> bool:   # after the last exit: NOP fillers, a branch to itself
        ins = instructions[i]
        return i > last_exit and (ins["opcode"] == "NOP"
                                  or _branch_target(ins) == start + i * size_bytes)

    counted = [ins for i, ins in enumerate(instructions) if not padding(i)]
    loops = [lp for lp in innermost_loops(instructions, start, size_bytes)
             if lp.first != lp.last]
    named = [LoopInstructions(f"loop {start + lp.first * size_bytes:#06x}-"
                              f"{start + lp.last * size_bytes:#06x}",
                              _counts(instructions[lp.first:lp.last + 1]))
             for lp in loops]
    return KernelInstructions(function["function-name"], _counts(counted), tuple(named))


def count_functions(functions: list[dict], source: str) -> InstructionsFile:
    """An :class:`InstructionsFile` of every function of a listing."""
    return InstructionsFile({f["function-name"]: count_function(f) for f in functions},
                            source)


def _nvdisasm_version() -> str:
    done = subprocess.run([find_tool("nvdisasm"), "--version"], capture_output=True,
                          text=True, timeout=60)
    lines = [ln for ln in done.stdout.splitlines() if "release" in ln]
    return lines[-1].split("release")[-1].split(",")[0].strip() if lines else "?"


def build_instructions(schedule=None, *, ptx: str | None = None,
                       arch: str = DEFAULT_ARCH) -> InstructionsFile:
    """The instruction counts of ``schedule``'s generated kernel (every kernel of a
    sequence), compiled by NVRTC behind the CUDA prelude, or of ``ptx`` (PTX text, e.g. the
    OpenCL driver's) assembled by ptxas; disassembled and counted as the module docstring
    says.

    Raises:
        InstructionToolsMissing: a tool is missing (one line with its wheel).
        BuildError: the compiler or disassembler failed.
        ValueError: neither or both of ``schedule`` and ``ptx``.
    """
    if (schedule is None) == (ptx is None):
        raise ValueError("build_instructions: give a schedule or ptx, not both")
    if ptx is not None:
        _require("ptxas", "nvdisasm")
        functions = disassemble(assemble_ptx(ptx, arch))
        return count_functions(functions, f"ptxas, {arch}, nvdisasm {_nvdisasm_version()}")
    from tiletraffic.gpu.codegen.generate import generate
    from tiletraffic.simulator.ir.sequence import kernels_of

    _require("nvrtc", "nvdisasm")
    functions, version = [], "?"
    for kernel in kernels_of(schedule):
        generated = generate(kernel)
        cubin, version = compile_cuda(cuda_source(generated.source), generated.name, arch)
        functions += disassemble(cubin)
    return count_functions(functions, f"NVRTC {version} (generated OpenCL C behind the CUDA "
                                      f"prelude), {arch}, nvdisasm {_nvdisasm_version()}")
