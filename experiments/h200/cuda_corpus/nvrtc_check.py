"""Compile launch files' CUDA sources with NVRTC as ``tiletraffic run`` does (the options of
``tiletraffic.gpu.runtime.cuda_run.compile_kernel``), without a GPU: NVRTC's library and the
CUDA headers from PyPI wheels (nvidia-cuda-nvrtc-cu12, nvidia-cuda-runtime-cu12,
nvidia-curand-cu12, nvidia-cuda-cccl-cu12, nvidia-cuda-profiler-api-cu12).

    python -m experiments.h200.cuda_corpus.nvrtc_check NVIDIA_DIR LAUNCH.toml ...

NVIDIA_DIR is the ``site-packages/nvidia`` folder of those wheels. Prints one line per launch
file: the name expression and NVRTC's result (0: compiled), with its first error lines.
"""
from __future__ import annotations

import ctypes
import sys
from pathlib import Path


def nvrtc_compile(lib, cuda: dict, includes: list[str]) -> tuple[int, str, str]:
    """NVRTC's result, the name expression and the log of one schedule's ``extra["cuda"]``,
    compiled with ``run``'s options and project headers' device text."""
    import tempfile

    from tiletraffic.gpu.runtime.cuda_run import (kernel_expression, nvrtc_options,
                                                  write_device_headers)
    name = kernel_expression(cuda)
    with tempfile.TemporaryDirectory() as folder:
        options = [*nvrtc_options(cuda, write_device_headers(cuda, Path(folder))),
                   *(f"-I{i}" for i in includes), "--gpu-architecture=compute_90"]
        prog = ctypes.c_void_p()
        lib.nvrtcCreateProgram(ctypes.byref(prog), cuda["device_source"].encode(),
                               cuda["path"].encode(), 0, None, None)
        lib.nvrtcAddNameExpression(prog, name.encode())
        opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
        rc = lib.nvrtcCompileProgram(prog, len(options), opts)
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return rc, name, log.value.decode(errors="replace")


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[-4], file=sys.stderr)
        return 2
    from tiletraffic.frontend.launch_file import load
    nvidia = Path(argv[0])
    lib = ctypes.CDLL(str(next((nvidia / "cuda_nvrtc" / "lib").glob("libnvrtc.so.*"))))
    includes = [str(p) for p in sorted(nvidia.glob("*/include"))]
    for path in argv[1:]:
        try:
            schedule = load(path)
        except Exception as err:    # the front end's refusal, one line
            print(f"{Path(path).stem}: front end: {str(err).splitlines()[0][:160]}")
            continue
        rc, name, log = nvrtc_compile(lib, schedule.extra["cuda"], includes)
        errors = [line for line in log.splitlines() if "error" in line][:3]
        print(f"{Path(path).stem}: {name}: NVRTC {rc}" + "".join(f"\n    {e}" for e in errors))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
