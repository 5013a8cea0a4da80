"""Compile every hand-written kernel of the H200 drivers on the device, as the drivers compose
them from their ``.cu`` / ``.cuh`` / ``.cl`` files (NVRTC through CuPy; the OpenCL timeline
instrumentation through NVIDIA's OpenCL driver), and one progress-instrumented generated
kernel; prints one line per source and exits 1 at the first that does not build.

    python3 -m experiments.h200.check_kernels      # on the device, after the preamble
"""
from __future__ import annotations

import sys


def sources() -> dict[str, tuple[str, list[str]]]:
    """{name: (CUDA source, entry points)} of every hand-written CUDA kernel."""
    from tiletraffic.gpu.codegen.generate import generate
    from tiletraffic.simulator.kernels.families import build

    from experiments.h200.busy_background import driver as busy
    from experiments.h200.dispatch import driver as dispatch
    from experiments.h200.l2_sharing import driver as l2

    out = {
        "stream": (l2.STREAM_SRC, ["stream_read", "flush_read"]),
        "one_operand": (l2.VARIANT_SRC, ["naive_b_only", "naive_a_only"]),
        "stagger": (l2.STAGGER_SRC, ["stagger_read"]),
        "smmap": (l2.STREAM_SRC + l2.SMMAP_SRC, ["fill_on_sm", "reread_on_sm"]),
        "placed": (l2.PLACED_SRC, ["placed_read"]),
        "placed_loaded": (l2.PLACED_LOADED_SRC, ["placed_loaded_read"]),
        "chase": (dispatch.CHASE_SRC, ["chase"]),
        "ldg_rate": (dispatch.LSU_SRC, ["ldg_rate"]),
        "background": (busy.BACKGROUND_SOURCE, ["background"]),
    }
    family, m, k, n, tile = l2.PROGRESS_SLICES[0]
    src, entry = l2.progress_source(family, generate(build(family, m, k, n, tile)), k)
    out["progress"] = (src.encode("ascii", "replace").decode(), [entry, "tt_set_progress"])
    return out


def main() -> int:
    import cupy as cp

    from tiletraffic.gpu.codegen.generate import generate
    from tiletraffic.gpu.devices.device import select_device
    from tiletraffic.gpu.runtime.launch import build_program
    from tiletraffic.simulator.kernels.families import build

    from experiments.h200.codegen.driver import opencl_timeline_source

    for name, (code, entries) in sources().items():
        try:
            module = cp.RawModule(code=code)
            for entry in entries:
                module.get_function(entry).kernel
        except Exception as err:  # noqa: BLE001 - reported, exit status 1
            print(f"{name}: does not build: {type(err).__name__}: {err}", flush=True)
            return 1
        print(f"{name}: built {', '.join(entries)}", flush=True)
    kernel = generate(build("gemm-tiled", 256, 256, 256, 16))
    build_program(select_device("nvidia"), opencl_timeline_source(kernel.source))
    print("opencl timeline instrumentation (codegen/timeline_end.cl): built", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
