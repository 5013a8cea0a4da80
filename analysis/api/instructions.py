"""The API of ``tiletraffic instructions``: a compiled kernel's instruction counts."""
from __future__ import annotations

from tiletraffic.simulator.model.instructions import InstructionsFile

from tiletraffic.analysis.api import facade_function

DEFAULT_ARCH = "sm_90"
"""The machine code's default target (compute capability 9.0: H100, H200)."""


@facade_function
def instructions(schedule=None, *, ptx: str | None = None, arch: str = DEFAULT_ARCH,
                 out=None) -> InstructionsFile:
    """The machine instructions of `schedule`'s generated kernel (each kernel of a
    `KernelSequence`), per innermost loop (one iteration) and per kernel, by class
    (`fma`, `local_load`, `local_store`, `global_load`, `global_store`, `barrier`,
    `integer`, `move`, `branch`, `other`): the OpenCL C compiled as CUDA by NVRTC for
    `arch` and disassembled by nvdisasm, no GPU needed (`pip install
    'tiletraffic[cuda-tools]'`). `model(..., instructions=...)` uses them in its issue term.

    >>> counts = tt.instructions(tt.build("gemm-tiled", m=256, k=256, n=256, tile=16))
    >>> counts.kernels["gemm_tiled"].hot_loop.instructions_per_iteration["fma"]
    16

    Args:
        schedule: a `Schedule` or `KernelSequence` (None with `ptx`).
        ptx: PTX text to count instead (e.g. the OpenCL driver's build), assembled by ptxas.
        arch: the target, `sm_XY`.
        out: write the instructions file (JSON) here (`model --instructions` reads it).

    Returns:
        An `InstructionsFile` (`tiletraffic.simulator.model.instructions`): `.kernels`
        (name -> `KernelInstructions`: `.kernel`, `.loops`, `.hot_loop`), `.source`,
        `.to_dict()`.

    Raises:
        InstructionToolsMissing: NVRTC, ptxas or nvdisasm is missing (one line naming its
            wheel). BuildError: the compiler refused the source. ValueError: neither or
            both of `schedule` and `ptx`, or `arch` not `sm_XY`.
    """
    from tiletraffic.gpu.instructions.build import build_instructions

    if not (isinstance(arch, str) and arch.startswith("sm_") and arch[3:].isdigit()):
        raise ValueError(f"arch {arch!r} is not a target sm_XY (e.g. sm_90)")
    counts = build_instructions(schedule, ptx=ptx, arch=arch)
    if out is not None:
        import json

        from tiletraffic.analysis.files import atomic_write_text
        atomic_write_text(out, json.dumps(counts.to_dict(), indent=1) + "\n")
    return counts
