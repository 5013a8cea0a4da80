"""Every work-item adds the element one work-group further on into its own, in place:
``y[i] = y[i] + y[(i + 16) % M]``, where work-group g+1 stores the elements that work-group g
reads. OpenCL orders no global memory between work-groups: a read-write race between them."""
from tiletraffic import GlobalArray, Let, Param, Schedule, block, global_id, store

WG = 16


def make_schedule(m: int = 64) -> Schedule:
    M = Param("M")
    y = GlobalArray("y", "inout", ("M",))
    i = Let("i", global_id(0))
    body = block(i, store(y, (i.var,), y[i.var] + y[(i.var + WG) % M]))
    return Schedule(family="race-between-groups", kernel_name="race_between_groups",
                    params=(("M", m),), arrays=(y,), local_arrays=(), local_size=(WG,),
                    global_size=(m,), body=body, tile=WG,
                    description="in-place add of the next work-group's element")
