"""The README tutorial's rectangular-tile GEMM (``examples/rect_tile_gemm.py``) with its
second ``Barrier()`` removed: the next K step's stores into the local tiles race with this
step's loads of them (a write-after-read race on local memory). On a CPU device, whose
work-items of a work-group run in lock-step loops, the result can still come out right."""
import dataclasses
from pathlib import Path

from tiletraffic import Barrier, For
from tiletraffic.frontend.user_schedule import load_module

_EXAMPLE = load_module(Path(__file__).resolve().parents[2] / "examples" / "rect_tile_gemm.py")
reference = _EXAMPLE.reference


def make_schedule(m: int = 20, k: int = 20, n: int = 40):
    sch = _EXAMPLE.make_schedule(m, k, n)
    body = []
    for s in sch.body:
        if isinstance(s, For) and s.var == "t":
            barriers = [i for i, b in enumerate(s.body) if isinstance(b, Barrier)]
            assert len(barriers) == 2, "the tutorial's K loop has two barriers"
            s = dataclasses.replace(s, body=s.body[:barriers[1]] + s.body[barriers[1] + 1:])
        body.append(s)
    return dataclasses.replace(sch, family="rect-tile-gemm-one-barrier", body=tuple(body))
