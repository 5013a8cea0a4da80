"""A scatter in which all 8 work-groups store the same row: work-item l of every work-group
stores ``C[0, l] = x[global id]``, so each of the 16 words of C's first row is stored by 8
work-groups (a write-write race between work-groups)."""
from tiletraffic import GlobalArray, Let, Schedule, block, global_id, local_id, store

WG, GROUPS = 16, 8


def make_schedule() -> Schedule:
    x = GlobalArray("x", "in", ("X",))
    C = GlobalArray("C", "out", ("M", "N"))
    body = block(Let("lid", local_id(0)),
                 store(C, (0, local_id(0)), x[global_id(0)]))
    return Schedule(family="write-write-race", kernel_name="write_write_race",
                    params=(("X", WG * GROUPS), ("M", 1), ("N", WG)), arrays=(x, C),
                    local_arrays=(), local_size=(WG,), global_size=(WG * GROUPS,), body=body,
                    tile=WG, description="every work-group stores C's first row")
