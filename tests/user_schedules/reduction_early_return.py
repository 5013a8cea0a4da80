"""A work-group sum reduction whose work-items beyond the vector return before the barrier.

``out[g]`` is the sum of ``x[g*64 : g*64 + 64]``; work-items with ``get_global_id(0) >= M``
leave with ``return`` before the first barrier, so the last work-group (for M not a multiple
of 64) has barriers that only some of its work-items reach: barrier divergence, undefined in
OpenCL (the shape of ILGPU issue 90; PoCL crashes in the launch's event wait).
"""
from tiletraffic import (Barrier, Const, GlobalArray, If, Let, LocalArray, Param, Return,
                         Schedule, block, global_id, group_id, local_id, store)

WG = 64


def make_schedule(m: int = 100) -> Schedule:
    groups = -(-m // WG)
    M = Param("M")
    x = GlobalArray("x", "in", ("M",))
    out = GlobalArray("out", "out", ("G",))
    partial = LocalArray("partial", (Const(WG, "WG"),))
    gid, lid = Let("gid", global_id(0)), Let("lid", local_id(0))
    tree = [(If(lid.var < s, (store(partial, (lid.var,),
                                    partial[lid.var] + partial[lid.var + s]),)), Barrier())
            for s in (32, 16, 8, 4, 2, 1)]
    body = block(
        gid, lid,
        If(gid.var >= M, (Return(),)),                 # the fault: return before a barrier
        store(partial, (lid.var,), x[gid.var]),
        Barrier(),
        tree,
        If(lid.var.eq(0), (store(out, (group_id(0),), partial[0]),)))
    return Schedule(family="reduction-early-return", kernel_name="reduction_early_return",
                    params=(("M", m), ("G", groups)), arrays=(x, out),
                    local_arrays=(partial,), local_size=(WG,), global_size=(groups * WG,),
                    body=body, tile=WG,
                    description="sum per work-group, with a return before the barriers")


def reference(inputs):
    import numpy as np

    x = inputs["x"]
    return np.array([x[g * WG:(g + 1) * WG].sum() for g in range(-(-len(x) // WG))])
