"""Integers assigned any number of times and general loops, executed for a batch.

An integer declared with :class:`simulator.ir.nodes.DeclareInt` is kept per work-item in the
machine's table of integer names (``env``), as an int or an int64 array broadcastable to the
batch's ``(G, L, 1)``; :class:`simulator.ir.nodes.AssignInt` changes it where the statement's
mask is on (a masked ``where``, as private floats are updated), and keeps one value for the
whole batch where every work-item executes it. A work-item reading an integer declared
without a value before it assigned one is the hazard ``uninitialized-private-read`` (the
engine goes on with 0).

A :class:`simulator.ir.nodes.While` loop runs iteration by iteration until no work-item of the
batch still loops (each leaves where the condition is false for it, or where it executes
``Break``); more iterations of one loop than :func:`while_trips_limit` allows (a bound
derived from the launch's sizes), or an iteration that starts as an earlier one did
(:data:`REPEAT_CHECK_FROM`: the loop never ends), raise
:class:`simulator.ir.static.ExecutionError`. ``Break`` and ``Continue`` take the work-item off
the *alive* mask for the rest of the iteration, as ``Return`` does for the rest of the
kernel, so every statement after them (whatever its depth) skips it; the loop puts it back
after the iteration's body: a ``Continue`` one for the ``update`` and the next test, a
``Break`` one after the loop. A barrier some of a work-group's work-items skip this way is
barrier divergence, as in C.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.static import ExecutionError, eval_static
from tiletraffic.simulator.ir.visitor import walk, walk_statements
from tiletraffic.simulator.engine.batch import BatchState

REPEAT_CHECK_FROM = 1024
"""From this iteration of a While loop on, the engine looks for an iteration that starts
as an earlier one did (the same looping work-items and integers): the loop would repeat
forever, and :class:`simulator.ir.static.ExecutionError` says so at once."""
REPEAT_CHECK_EVERY = 16
"""Iterations between two such looks (a loop repeating every P iterations is found within
``REPEAT_CHECK_EVERY * P`` iterations of its snapshot; each look costs about an
iteration)."""
LOOP_TRIPS_LIMIT = 2**24
"""Most iterations one loop may run in the simulator (far above the K of any launch the
commands accept: :data:`analysis.cli.common.GROUP_WORK_LIMIT` bounds work-items x K); a
while loop runs at most :func:`while_trips_limit`, often less."""
WHILE_TRIPS_MARGIN = 4
"""A while loop may run this many times the launch's largest size (:func:`while_trips_limit`)."""
WHILE_TRIPS_FLOOR = 2**16
"""And at least this many iterations, whatever the launch's sizes."""


def while_trips_limit(schedule: S.Schedule, loop: S.While) -> int:
    """Most iterations one execution of ``loop`` may run in ``schedule``:
    :data:`WHILE_TRIPS_MARGIN` times the launch's largest size, at least
    :data:`WHILE_TRIPS_FLOOR` and at most :data:`LOOP_TRIPS_LIMIT`.

    The launch's sizes are its integer parameters, the elements of each of its arrays
    (global and local), its work-items and the integer constants that the loop's conditions
    (its own, and those of the ``if`` statements in its body) compare with (magnitudes).
    Every loop of a terminating kernel runs within such a bound: a grid-stride loop fewer
    times than its array has elements, a loop over a size or a K dimension that size's
    times, a loop over data (a CSR row) fewer times than the data has elements, a bisection
    or a loop halving a size their logarithm, a loop to a constant that constant's times.
    A loop past it almost surely never ends; a loop meant to run longer takes its trip
    count from a size of the launch (an argument), which raises the limit with it."""
    params = schedule.param_values
    sizes = [abs(v) for v in params.values() if isinstance(v, int)]
    for a in schedule.arrays:
        try:
            sizes.append(int(eval_static(a.size, params)))
        except (TypeError, KeyError, ValueError, ZeroDivisionError, ExecutionError):
            pass
    sizes += [a.size for a in schedule.local_arrays]
    sizes.append(schedule.work_groups * schedule.work_group_items)
    sizes += [abs(int(n.value)) for c in _conditions(loop) for n in walk(c)
              if isinstance(n, S.Const) and isinstance(n.value, int)]
    return min(LOOP_TRIPS_LIMIT, max(WHILE_TRIPS_FLOOR, WHILE_TRIPS_MARGIN * max(sizes)))


def _conditions(loop: S.While) -> list:
    """``loop``'s condition and those of the ``if`` statements in its body and update."""
    return [loop.cond, *(s.cond for s in walk_statements(loop.body + loop.update)
                         if isinstance(s, S.If))]


@dataclass
class LoopExits:
    """The work-items that left the running iteration of a :class:`simulator.ir.nodes.While`
    loop: by ``Break`` (``broke``) and by ``Continue`` (``continued``), boolean ``(G, L, 1)``."""

    broke: np.ndarray
    continued: np.ndarray


class ControlFlow(BatchState):
    """Mutable integers and general loops of :class:`simulator.engine.machine.Machine`.

    Reads and writes, besides :class:`simulator.engine.batch.BatchState`'s: ``env`` (integer
    names to values), ``ints_set`` (per integer declared without a value and not yet set by
    every work-item, which work-items set it, bool ``(G, L, 1)``), ``alive``, ``live``,
    ``loop_exits`` (one :class:`LoopExits` per running ``While``, ``None`` per running
    ``For``, innermost last) and the machine's ``exec_block`` and ``eval_int``/``eval_cond``.
    """

    def exec_declare_int(self, s: S.DeclareInt, m) -> None:
        if s.value is None:
            self.env[s.name] = 0
            self.ints_set[s.name] = np.zeros((self.G, self.L, 1), dtype=bool)
        else:
            self.env[s.name] = self.eval_int(s.value)
            self.ints_set.pop(s.name, None)

    def exec_assign_int(self, s: S.AssignInt, m) -> None:
        """``s.name = s.value`` for the work-items of ``m``.

        Raises:
            NameError: no ``DeclareInt`` of the name ran before.
        """
        if s.name not in self.env:
            raise NameError(f"{self.schedule.family}: integer {s.name!r} assigned before it "
                            "is declared")
        value = self.eval_int(s.value)
        on = np.broadcast_to(m, (self.G, self.L, np.shape(m)[2] if np.ndim(m) == 3 else 1))
        if on.all():
            self.env[s.name] = value
        else:
            self.env[s.name] = np.where(m, value, self.env[s.name])
        if s.name in self.ints_set:
            self.mark_int_set(s.name, on)

    def mark_int_set(self, name: str, newly) -> None:
        """Count the work-items of ``newly`` (a mask of the batch's shape) as having
        assigned integer ``name``; its entry in :attr:`ints_set` goes once every work-item
        has."""
        now = np.logical_or(self.ints_set[name], np.any(newly, axis=2, keepdims=True))
        if now.all():
            del self.ints_set[name]
        else:
            self.ints_set[name] = now

    def check_int_set(self, name: str) -> None:
        """Report the work-items of :attr:`live` that read integer ``name`` before they
        assigned it (hazard ``uninitialized-private-read``); they count as set after."""
        is_set = self.ints_set[name]
        live = True if self.live is None else self.live
        unset = np.logical_and(live, np.logical_not(is_set))
        if not np.any(unset):
            return
        self.report_uninitialized_read(
            name, unset, "integer", "its value, and what is computed from it, is undefined; "
            "the simulator goes on with 0")
        self.mark_int_set(name, np.broadcast_to(unset, self.shape_of(unset)))

    def exec_while(self, loop: S.While, m) -> None:
        """Execute ``loop`` for the work-items of ``m``, iteration by iteration, until none
        of them still loops.

        Raises:
            ExecutionError: more iterations than :func:`while_trips_limit` allows (the
                message names the loop's source place, the limit and how it is derived), or
                an iteration from :data:`REPEAT_CHECK_FROM` on that starts as an earlier one
                did.
        """
        if not np.any(m):
            return
        limit = self.while_limits.get(id(loop))
        if limit is None:
            limit = self.while_limits[id(loop)] = while_trips_limit(self.schedule, loop)
        looping = np.broadcast_to(m, (self.G, self.L, 1)).copy()
        first = loop.do_while
        trips = 0
        while True:
            looping = np.logical_and(looping, self.alive)
            if not first:
                self.live = looping
                looping = np.logical_and(looping, self.eval_cond(loop.cond))
            first = False
            if not np.any(looping):
                break
            trips += 1
            if trips >= REPEAT_CHECK_FROM:
                if trips & (trips - 1) == 0:     # Brent: a new snapshot at each power of 2
                    seen, seen_at = self._loop_state(looping), trips
                elif (trips - seen_at) % REPEAT_CHECK_EVERY == 0 and \
                        self._same_loop_state(seen, looping):
                    where = f"{loop.source}: " if loop.source else ""
                    raise ExecutionError(
                        f"{self.schedule.family}: {where}a while loop on "
                        f"{S.describe_cond(loop.cond)} never ends: iteration {trips:,} starts "
                        f"with the integers and looping work-items of iteration {seen_at:,} "
                        "(nothing it tests changes)")
            if trips > limit:
                where = f"{loop.source}: " if loop.source else ""
                raise ExecutionError(
                    f"{self.schedule.family}: {where}a while loop on "
                    f"{S.describe_cond(loop.cond)} runs more than {limit:,} iterations, the "
                    f"limit for one loop of this launch ({WHILE_TRIPS_MARGIN} x the largest "
                    "of its sizes, array extents, work-items and the constants the loop "
                    f"compares with, at least {WHILE_TRIPS_FLOOR:,}, at most "
                    f"{LOOP_TRIPS_LIMIT:,}): does it end? A loop meant to run longer takes "
                    "its trip count from an argument or size of the launch, which raises "
                    "the limit")
            exits = LoopExits(np.zeros_like(looping), np.zeros_like(looping))
            self.loop_exits.append(exits)
            try:
                self.exec_block(loop.body, looping)
            finally:
                self.loop_exits.pop()
            self.alive = np.logical_or(self.alive, np.logical_or(exits.broke,
                                                                 exits.continued))
            looping = np.logical_and(looping, np.logical_not(exits.broke))
            if loop.update and np.any(looping):
                self.exec_block(loop.update, looping)

    def _loop_state(self, looping) -> tuple:
        """What decides a While loop's next iterations: the looping work-items and every
        integer (floats never reach a condition or an index)."""
        return looping.copy(), {name: np.array(value, copy=True)
                                for name, value in self.env.items()}

    def _same_loop_state(self, state: tuple, looping) -> bool:
        """Whether the loop is where :meth:`_loop_state` found it in ``state``."""
        was_looping, ints = state
        if not np.array_equal(was_looping, looping) or ints.keys() != self.env.keys():
            return False
        return all(np.all(np.asarray(self.env[name]) == value)
                   for name, value in ints.items())

    def innermost_exits(self, s) -> LoopExits:
        """The :class:`LoopExits` of the ``While`` loop that ``Break`` or ``Continue`` ``s``
        leaves.

        Raises:
            ExecutionError: ``s`` is not in a ``While`` loop's body (outside any loop, or
                in a ``For`` loop's).
        """
        if not self.loop_exits or self.loop_exits[-1] is None:
            raise ExecutionError(f"{self.schedule.family}: {type(s).__name__.lower()} outside "
                                 "a While loop's body")
        return self.loop_exits[-1]

    def exec_break(self, s: S.Break, m) -> None:
        self.leave_iteration(s, m, "broke")

    def exec_continue(self, s: S.Continue, m) -> None:
        self.leave_iteration(s, m, "continued")

    def leave_iteration(self, s, m, how: str) -> None:
        """The work-items of ``m`` leave the innermost While loop's iteration (``how``:
        ``"broke"`` for good, ``"continued"`` until its next iteration): marked in its
        :class:`LoopExits` and not alive for the rest of the body."""
        exits = self.innermost_exits(s)
        marked = getattr(exits, how)
        marked |= np.broadcast_to(m, marked.shape)
        self.alive = np.logical_and(self.alive, np.logical_not(m))
