"""A float4 copy whose stores start one element late: work-item i loads ``x[4i : 4i + 4]``
(aligned) and stores it at ``y[4i + 1]`` (a byte offset that is not a multiple of 16): a
misaligned vector store in every work-item. Of y's 68 elements, the 64 from y[1] on are
written; y[0], y[65], y[66], y[67] never are."""
from tiletraffic import (DeclareFloat, GlobalArray, Let, Schedule, block, global_id, vload,
                         vstore)

WORK_ITEMS = 16


def make_schedule() -> Schedule:
    x = GlobalArray("x", "in", ("X",))
    y = GlobalArray("y", "out", ("Y",))
    i = Let("i", global_id(0))
    names = ("v0", "v1", "v2", "v3")
    body = block(i, [DeclareFloat(v) for v in names],
                 vload(names, x, (i.var * 4,)),
                 vstore(y, (i.var * 4 + 1,), [DeclareFloat(v).ref for v in names]))
    return Schedule(family="misaligned-float4", kernel_name="misaligned_float4",
                    params=(("X", 4 * WORK_ITEMS), ("Y", 4 * WORK_ITEMS + 4)), arrays=(x, y),
                    local_arrays=(), local_size=(WORK_ITEMS,), global_size=(WORK_ITEMS,),
                    body=body, tile=4, description="float4 copy stored one element late")
