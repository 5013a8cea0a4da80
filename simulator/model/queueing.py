"""The queueing model of a compute unit: work-groups that alternate between a busy resource
and a memory latency at each barrier interval with global loads.

A compute unit's resident work-groups form a closed queueing network of one queueing
station (the busiest resource, service demand per barrier interval) and one delay station
(the latency that ends the interval); its throughput is solved exactly by mean value
analysis (Reiser and Lavenberg, "Mean-value analysis of closed multichain queuing
networks", J. ACM 27(2), 1980; Lazowska et al., *Quantitative System Performance*, 1984,
ch. 6). :func:`exposed_latency_s` is the time beyond the busy resource's;
:func:`tail_latency_s` the extra time of a unit's last work-groups, which run with fewer
companions. Times in seconds; pure functions of their arguments.
"""
from __future__ import annotations

import math


def closed_network_throughput(customers: int, demand_s: float, delay_s: float) -> float:
    """Throughput (completions per second) of ``customers`` circulating between one queueing
    station with service demand ``demand_s`` and a delay station of ``delay_s``: exact mean
    value analysis (Reiser and Lavenberg, J. ACM 27(2), 1980, the recursion of Lazowska et
    al., *Quantitative System Performance*, 1984, section 6.3).

    Raises:
        ValueError: fewer than one customer, or a negative or non-finite demand or delay.
    """
    return closed_network_throughputs(customers, demand_s, delay_s)[-1]


def closed_network_throughputs(customers: int, demand_s: float, delay_s: float
                               ) -> list[float]:
    """The throughputs X(1), ..., X(``customers``) of :func:`closed_network_throughput`'s
    network, from one pass of the recursion.

    Raises:
        ValueError: fewer than one customer, or a negative or non-finite demand or delay.
    """
    if customers < 1 or not (0 <= demand_s < math.inf) or not (0 <= delay_s < math.inf):
        raise ValueError(f"closed network needs customers >= 1 and finite non-negative "
                         f"times, got {customers}, {demand_s}, {delay_s}")
    queue = 0.0
    out = []
    for n in range(1, customers + 1):
        residence = demand_s * (1 + queue)
        throughput = n / (residence + delay_s) if residence + delay_s > 0 else math.inf
        queue = throughput * residence
        out.append(throughput)
    return out


def exposed_latency_s(busy_s: float, phases_per_cu: float, resident: int,
                      latency_s: float) -> float:
    """Time a compute unit adds to ``busy_s`` (its busiest resource's time) because each of
    ``phases_per_cu`` barrier intervals ends in a memory latency that only the other
    resident work-groups can overlap (:func:`closed_network_throughput` with ``resident``
    work-groups, demand ``busy_s / phases_per_cu`` and delay ``latency_s``). 0 without
    such intervals."""
    if phases_per_cu <= 0:
        return 0.0
    demand = busy_s / phases_per_cu
    throughput = closed_network_throughput(max(1, resident), demand, latency_s)
    return max(0.0, phases_per_cu / throughput - busy_s)


def tail_latency_s(busy_s: float, phases_per_cu: float, work_groups_per_cu: int,
                   resident: int, latency_s: float) -> float:
    """Time a compute unit adds at the end of a kernel because its last work-groups run with
    fewer companions than ``resident`` (the tail effect).

    Assumes steady-state dispatch: when the unit's last work-group starts, its ``resident``
    work-groups R are spread evenly over their work (an assumption, not derived: work-groups
    that start together drift apart because the unit does not serve them equally), the
    i-th from the
    end having i / R of a work-group's P = ``phases_per_cu`` / ``work_groups_per_cu``
    barrier intervals left. They
    end one by one; while n remain, the unit completes X(n) intervals per second
    (:func:`closed_network_throughput` with n customers, demand ``busy_s`` /
    ``phases_per_cu``, delay ``latency_s``), shared equally. The drain then takes
    sum over n = 1..R of (P / R) n / X(n), against P (R + 1) / (2 X(R)) had R stayed resident,
    which :func:`exposed_latency_s` charges; the difference is returned. It is 0 when the
    unit never has more work-groups than it holds (a single wave: charged nothing, not
    checked against a measurement), without barrier intervals, and without latency
    (X(n) = 1 / demand for every n). It jumps from 0 to its full value at one work-group
    more than the unit holds.

    Example: P = 10 intervals per work-group, R = 4, no work, 1 us latency: X(n) = n / 1 us,
    the drain takes 4 x 2.5 us = 10 us against 10 x 5 / 8 = 6.25 us: 3.75 us of tail.
    """
    if phases_per_cu <= 0 or resident < 1 or work_groups_per_cu <= resident:
        return 0.0
    per_group = phases_per_cu / work_groups_per_cu
    throughputs = closed_network_throughputs(resident, busy_s / phases_per_cu, latency_s)
    steady = per_group * (resident + 1) / 2 / throughputs[-1]
    return max(0.0, _drain(per_group, throughputs) - steady)


def _drain(per_group: float, throughputs: list[float]) -> float:
    """sum over n = 1..R of (P / R) n / X(n), X = ``throughputs``, R their number."""
    resident = len(throughputs)
    return sum(per_group / resident * n / x for n, x in enumerate(throughputs, start=1))


def drain_time_s(busy_s: float, phases_per_cu: float, work_groups_per_cu: int,
                 resident: int, latency_s: float) -> float:
    """How long a compute unit's drain lasts in :func:`tail_latency_s`'s model: from the
    start of its last work-group (which then has all of its P intervals ahead of it) to the
    end of it, sum over n = 1..R of (P / R) n / X(n). Comparable with a measured timeline
    (last start to last end on a compute unit). 0 without barrier intervals.

    Raises:
        ValueError: ``resident`` < 1 or ``work_groups_per_cu`` < 1.
    """
    if resident < 1 or work_groups_per_cu < 1:
        raise ValueError(f"a drain needs resident >= 1 and work_groups_per_cu >= 1, got "
                         f"{resident}, {work_groups_per_cu}")
    if phases_per_cu <= 0:
        return 0.0
    return _drain(phases_per_cu / work_groups_per_cu,
                  closed_network_throughputs(resident, busy_s / phases_per_cu, latency_s))
