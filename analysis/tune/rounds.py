"""Who measures what, and when: the rounds of the measured items (the candidates of a
tuning, the cases of a validation) spread over device workers, one unit (an item's round)
at a time per worker.

Order: round-major, as one process measures. Round ``r`` goes through the items in their
order when ``r`` is even and in reverse when odd; an item's round ``r`` starts only after its
round ``r - 1``. A worker takes the first unit of that order it may take:

- **affinity**: once a worker measured an item's round in this run, that item's further
  rounds are its own (every round of an item on one device, so an item's spread is one
  device's);
- **faults**: a worker that dies (its actor killed, its host gone) loses nothing finished:
  the items it measured and had not finished lose the rounds it measured and go back to
  the others; the item in flight that takes down :data:`MOST_DEATHS` workers is failed
  (:meth:`RoundPlan.died`). A launch that fails on a worker's device
  (:meth:`RoundPlan.launch_failed`) moves its item to a worker that has not tried it,
  where one is left (else its failure stands); a worker whose launches fail
  :data:`RETIRE_AFTER` times in a row, while another worker is left, takes no more units
  and its items move on.

:func:`run_rounds` drives a plan over a pool of workers: :class:`LocalPool` measures in
this process on one device; a Ray cluster's pool (:mod:`analysis.tune.cluster`) on one
actor per device. With one worker the order is exactly the single process's.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Hashable

MOST_DEATHS = 2
"""Workers an item may take down with it (it was in flight on each when it died) before it
is recorded as failed instead of tried again."""
RETIRE_AFTER = 2
"""Launch failures in a row after which a worker takes no more units (while another is
left)."""


class NoWorkersLeft(RuntimeError):
    """Every device worker died or was retired before the measurements finished; the
    message names the last one and why."""


@dataclass(frozen=True)
class Unit:
    """One round (``round_index``, from 0) of one item (``key``)."""

    key: Hashable
    round_index: int


@dataclass(frozen=True)
class WorkerLost:
    """What a pool returns for a unit whose worker died: why, in one line."""

    why: str


@dataclass
class RoundPlan:
    """The state of the measurements of ``keys`` (in their order) in ``rounds`` rounds over
    the live ``workers``; ``done``: rounds each key has already (a resumed file's)."""

    keys: list
    rounds: int
    workers: list
    done: dict = field(default_factory=dict)

    def __post_init__(self):
        self.done = {k: self.done.get(k, 0) for k in self.keys}
        self.base = dict(self.done)        # rounds before this run's worker had the item
        self.live = list(self.workers)
        self.owner: dict = {}
        self.running: dict = {}
        self.finished = {k for k in self.keys if self.done[k] >= self.rounds}
        self.tried: dict = {k: set() for k in self.keys}
        self.deaths: dict = {k: 0 for k in self.keys}
        self.faults_in_a_row: dict = {w: 0 for w in self.workers}

    @property
    def complete(self) -> bool:
        """Every item finished (all its rounds, or stopped by a failure)."""
        return len(self.finished) == len(self.keys)

    def next_for(self, worker) -> Unit | None:
        """The unit ``worker`` measures next (module docstring), or None: nothing it may
        take now."""
        if worker not in self.live:
            return None
        others = set(self.live) - {worker}
        for r in range(self.rounds):
            for key in (self.keys if r % 2 == 0 else reversed(self.keys)):
                if key in self.finished or key in self.running or self.done[key] != r:
                    continue
                owner = self.owner.get(key)
                if owner is not None and owner != worker:
                    continue
                if owner is None and worker in self.tried[key] and others - self.tried[key]:
                    continue      # a worker that has not tried it takes it
                return Unit(key, r)
        return None

    def started(self, worker, unit: Unit) -> None:
        """``worker`` measures ``unit`` now."""
        if self.owner.get(unit.key) is None:
            self.base[unit.key] = self.done[unit.key]
        self.owner[unit.key] = worker
        self.running[unit.key] = worker

    def completed(self, worker, unit: Unit, stop: bool = False) -> None:
        """``unit`` finished on ``worker`` (a round measured, or ``stop``: a failure that
        ends the item)."""
        self.running.pop(unit.key, None)
        self.faults_in_a_row[worker] = 0
        self.done[unit.key] += 1
        if stop or self.done[unit.key] >= self.rounds:
            self.finished.add(unit.key)

    def _release(self, worker) -> list[tuple]:
        """Give back the unfinished items ``worker`` measured in this run: ``(key, rounds
        kept)`` of each, its own rounds dropped."""
        back = []
        for key, owner in list(self.owner.items()):
            if owner != worker:
                continue
            del self.owner[key]
            self.running.pop(key, None)
            if key not in self.finished:
                self.done[key] = self.base[key]
                back.append((key, self.base[key]))
        return back

    def died(self, worker, unit: Unit | None) -> tuple[list[tuple], bool]:
        """``worker`` died with ``unit`` in flight (or None). Returns the items given back
        (``(key, rounds kept)``) and whether ``unit``'s item took down :data:`MOST_DEATHS`
        workers (then it is finished: the caller records it failed)."""
        if worker in self.live:
            self.live.remove(worker)
        failed = False
        if unit is not None:
            self.deaths[unit.key] += 1
            failed = self.deaths[unit.key] >= MOST_DEATHS
        back = self._release(worker)
        if failed:
            self.finished.add(unit.key)
        return back, failed

    def launch_failed(self, worker, unit: Unit) -> tuple[bool, list[tuple], bool]:
        """A launch of ``unit`` failed on ``worker``'s device. Returns ``(moved, given
        back, retired)``: ``moved``, the item goes to a live worker that has not tried it
        (its rounds on ``worker`` dropped: it is among those given back) instead of being
        failed; ``retired``, ``worker`` failed :data:`RETIRE_AFTER` launches in a row and
        takes no more units (its unfinished items are given back too)."""
        self.running.pop(unit.key, None)
        self.tried[unit.key].add(worker)
        self.faults_in_a_row[worker] += 1
        others = [w for w in self.live if w != worker]
        moved = any(w not in self.tried[unit.key] for w in others)
        retired = bool(others) and self.faults_in_a_row[worker] >= RETIRE_AFTER
        back: list[tuple] = []
        if moved:
            if self.owner.get(unit.key) == worker:
                del self.owner[unit.key]
            self.done[unit.key] = self.base[unit.key]
            back.append((unit.key, self.base[unit.key]))
        else:
            self.done[unit.key] += 1
            self.finished.add(unit.key)
        if retired:
            self.live.remove(worker)
            back += [b for b in self._release(worker) if b[0] != unit.key]
        return moved, back, retired


class LocalPool:
    """One worker (id 0), this process, on ``target``: each unit runs when submitted."""

    remote = False

    def __init__(self, target):
        self.target, self.cache, self.workers = target, {}, [0]
        self._results: dict = {}
        self._next = 0

    def describe(self, worker) -> dict | None:
        """Nothing to name: the device is the results' own (``meta.device``)."""
        return None

    def submit(self, worker, fn, args):
        handle, self._next = self._next, self._next + 1
        self._results[handle] = fn(self.target, self.cache, *args)
        return handle

    def wait(self, handles):
        handle = handles[0]
        return handle, self._results.pop(handle)


@dataclass(frozen=True)
class Measuring:
    """What :func:`run_rounds` runs and what it is told.

    Attributes:
        work: ``work(key, round_index) -> (fn, args)``: the worker calls ``fn(target,
            cache, *args)`` (``cache``: a dict the worker keeps between units) and returns
            its result.
        on_result: ``on_result(key, round_index, result, worker)``, after each unit.
        on_restart: ``on_restart(key, rounds kept, why)``, for each item given back.
        stops: ``stops(result)``: the result ends its item (a failed measurement).
        launch_fault: ``launch_fault(result)``: the result is a failed launch that another
            device may not repeat (the item moves on: :meth:`RoundPlan.launch_failed`).
        on_worker_death: ``on_worker_death(key, why)``: the result to record for an item that
            took down :data:`MOST_DEATHS` workers.
        log: takes a line naming a worker that died or was retired.
    """

    work: Callable
    on_result: Callable
    on_restart: Callable = lambda key, kept, why: None
    stops: Callable = lambda result: False
    launch_fault: Callable = lambda result: False
    on_worker_death: Callable = lambda key, why: {"failed": {"stage": "launch",
                                                             "error_type": "WorkerDied",
                                                             "error": why}}
    log: Callable = lambda line: None


def run_rounds(plan: RoundPlan, pool, measuring: Measuring) -> None:
    """Measure every unit of ``plan`` on ``pool``'s workers (one unit in flight per worker;
    module docstring for the order and the faults).

    Raises:
        NoWorkersLeft: every worker died or was retired with units left.
        KeyboardInterrupt: as raised by a unit or the wait (the caller saves).
    """
    in_flight: dict = {}
    idle = list(plan.live)
    while not plan.complete:
        for worker in list(idle):
            unit = plan.next_for(worker)
            if unit is None:
                continue
            plan.started(worker, unit)
            fn, args = measuring.work(unit.key, unit.round_index)
            in_flight[pool.submit(worker, fn, args)] = (worker, unit)
            idle.remove(worker)
        if not in_flight:
            if plan.complete:
                break
            raise NoWorkersLeft("no device worker is left to measure on")
        handle, result = pool.wait(list(in_flight))
        worker, unit = in_flight.pop(handle)
        if isinstance(result, WorkerLost):
            _lost(plan, pool, measuring, worker, unit, result.why)
            if not plan.live and not plan.complete:
                raise NoWorkersLeft(f"every device worker is gone; the last: "
                                    f"{_name(pool, worker)}: {result.why}")
            continue
        idle.append(worker)
        if measuring.launch_fault(result):
            moved, back, retired = plan.launch_failed(worker, unit)
            if moved:
                measuring.log(f"a launch failed on {_name(pool, worker)}: "
                              f"{_failure_text(result)}; measuring {unit.key} elsewhere")
            else:
                measuring.on_result(unit.key, unit.round_index, result, worker)
            for key, kept in back:
                measuring.on_restart(key, kept, f"a launch failed on {_name(pool, worker)}")
            if retired:
                idle.remove(worker)
                measuring.log(f"{_name(pool, worker)} failed {plan.faults_in_a_row[worker]} "
                              "launches in a row: it takes no more candidates, its "
                              "unfinished ones move to the other workers")
            continue
        plan.completed(worker, unit, stop=measuring.stops(result))
        measuring.on_result(unit.key, unit.round_index, result, worker)


def _lost(plan: RoundPlan, pool, measuring: Measuring, worker, unit: Unit, why: str) -> None:
    """``worker`` died with ``unit`` in flight: its items go back, or ``unit``'s item is
    failed when it took down too many workers."""
    back, failed = plan.died(worker, unit)
    name = _name(pool, worker)
    measuring.log(f"{name} died ({why}); its {len(back)} unfinished item(s) go to the other "
                  "workers")
    for key, kept in back:
        measuring.on_restart(key, kept, f"{name} died")
    if failed:
        measuring.on_result(unit.key, unit.round_index, measuring.on_worker_death(
            unit.key, f"the worker measuring it died {MOST_DEATHS} times (the last: "
                      f"{name}: {why})"), worker)


def _name(pool, worker) -> str:
    """A worker as a line names it: its index, device and host where the pool says."""
    info = pool.describe(worker) or {}
    where = " on ".join(str(x) for x in (info.get("device"), info.get("host")) if x)
    return f"device worker {worker}" + (f" ({where})" if where else "")


def _failure_text(result) -> str:
    failed = result.get("failed") if isinstance(result, dict) else None
    if not failed:
        return "failed"
    return f"{failed.get('stage')}: {failed.get('error_type')}: {failed.get('error')}"
