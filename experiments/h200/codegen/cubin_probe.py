"""The OpenCL driver's own cubins (``driver.py``'s ``jit_sass`` stage) launched through CUDA:
run by ``driver.py``'s ``opencl_cubin`` stage in a child process, because an illegal address
ends a CUDA context.

For ``driver.CUBIN_CASES`` and then the ``--cases`` triples (JSON ``[[schedule, N, tile],
...]``, square sizes), loads ``<schedule>-T<tile>.opencl-jit.0.cubin`` from ``--code``,
times it (``driver.cuda_times``: 2 warm-ups, median of 10, result checked) and prints one
JSON line per case; stops after an illegal-address error.

    python -m experiments.h200.codegen.cubin_probe --code DIR [--cases JSON]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--code", type=Path, required=True,
                    help="folder of the cached cubins (driver.py's jit_sass stage)")
    ap.add_argument("--cases", default="[]",
                    help="JSON list of [schedule, N, tile] launched after CUBIN_CASES")
    args = ap.parse_args(argv)

    import cupy as cp
    import numpy as np

    from experiments.h200.codegen.driver import (CUBIN_CASES, _inputs, build_case, case_id,
                                                 cuda_times, generate)

    rng = np.random.default_rng(14)
    for family, n, tile in CUBIN_CASES + [tuple(c) for c in json.loads(args.cases)]:
        c = {"family": family, "m": n, "k": n, "n": None if family.startswith("matvec") else n,
             "tile": tile}
        rec = {"id": case_id(c)}
        cubin = args.code / f"{family}-T{tile}.opencl-jit.0.cubin"
        try:
            sch = build_case(c)
            kernel = generate(sch)
            host, ref, absprod = _inputs(sch, rng)
            ins = {k: cp.asarray(np.ascontiguousarray(v).reshape(-1)) for k, v in host.items()}
            rec.update(cuda_times(cp.RawModule(path=str(cubin)), kernel, sch, ins, ref,
                                  absprod, 10))
            rec["cubin"] = str(cubin)
        except Exception as err:  # noqa: BLE001 - recorded; the parent reads every line
            rec["error"] = f"{type(err).__name__}: {err}"
        print(json.dumps(rec), flush=True)
        if "error" in rec and "illegal" in rec["error"].lower():
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
