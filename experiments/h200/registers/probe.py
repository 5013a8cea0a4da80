"""What NVIDIA's OpenCL driver says about a kernel's registers (issue #13 item 3).

For every GEMM ladder case (:mod:`experiments.h200.ladder.cases`) at N = 1024, builds the
generated OpenCL C twice through pyopencl, plainly and with ``-cl-nv-verbose``, and records
the build logs (ptxas' "Used N registers" lines appear there on NVIDIA) and the kernel
work-group queries ``CL_KERNEL_PRIVATE_MEM_SIZE``, ``CL_KERNEL_LOCAL_MEM_SIZE``,
``CL_KERNEL_WORK_GROUP_SIZE``, ``CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE``. Nothing is
launched. Output: ``OUT/registers_probe.json``.

Device call (after the device preamble of ``experiments/README.md``)::

    python3 -m experiments.h200.registers.probe --out $OUT

Local rehearsal on PoCL: ``python -m experiments.h200.registers.probe --out /tmp/r --device pocl``.
"""
from __future__ import annotations

import argparse
import json
import traceback
from pathlib import Path


def probe(device: str, n: int = 1024) -> list[dict]:
    import pyopencl as cl

    from tiletraffic.gpu.codegen.generate import generate
    from tiletraffic.gpu.devices.device import select_device
    from experiments.h200.ladder import cases as C

    target = select_device(device)
    info = cl.kernel_work_group_info
    out = []
    for case in C.CASES:
        rec = {"label": case[0], "family": case[1], "tile": case[2], "options": case[3], "n": n,
               "device": target.info.device_name}
        try:
            kernel = generate(C.build(case, n))
            for key, options in (("plain", []), ("nv_verbose", ["-cl-nv-verbose"])):
                prg = cl.Program(target.context, kernel.source).build(options=options)
                k = getattr(prg, kernel.name)
                rec[key] = {
                    "options": options,
                    "build_log": prg.get_build_info(target.device, cl.program_build_info.LOG),
                    "private_mem_size": int(k.get_work_group_info(info.PRIVATE_MEM_SIZE,
                                                                  target.device)),
                    "local_mem_size": int(k.get_work_group_info(info.LOCAL_MEM_SIZE,
                                                                target.device)),
                    "work_group_size": int(k.get_work_group_info(info.WORK_GROUP_SIZE,
                                                                 target.device)),
                    "preferred_multiple": int(k.get_work_group_info(
                        info.PREFERRED_WORK_GROUP_SIZE_MULTIPLE, target.device)),
                }
        except Exception as err:  # noqa: BLE001 - recorded, the probe goes on
            rec["error"] = f"{type(err).__name__}: {err}"[:3000]
            rec["traceback"] = traceback.format_exc()[-3000:]
        out.append(rec)
        print(rec["label"], rec.get("error") or rec["nv_verbose"]["build_log"][-300:], flush=True)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--device", default="NVIDIA")
    p.add_argument("--n", type=int, default=1024)
    a = p.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    records = probe(a.device, a.n)
    (a.out / "registers_probe.json").write_text(json.dumps(records, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
