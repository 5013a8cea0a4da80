"""Vectorized execution of a schedule on numpy arrays.

Execution model (OpenCL 1.2 §3.2): the NDRange is cut into work-groups; the engine executes a
*batch* of work-groups at once, every work-item of the batch advancing together from barrier
to barrier. Every per-work-item quantity is a numpy array of shape ``(G, L, I)``: G
work-groups of the batch, L work-items per work-group (local ids flattened with dimension 0
fastest), I iterations of a vectorized loop block (1 elsewhere). There is no Python loop over
work-items and no thread per work-item: execution is deterministic.

Divergence is handled with masks: ``If`` narrows the mask, ``Return`` clears a work-item's
*alive* bit (``Break`` and ``Continue`` clear it for the rest of the loop's iteration), loops
run while any work-item of the batch still iterates. Loops whose body
only reads memory and accumulates into private variables (no store, barrier or return) are
executed in blocks of iterations along the third axis.

:class:`Machine` is put together from parts by concern (:mod:`simulator.engine.batch`):
expressions (:mod:`simulator.engine.expressions`: integer division by zero, unsigned
values), global and local memory and barriers (:mod:`simulator.engine.accesses`: bounds,
vector accesses, barrier divergence, the observers' events) and private memory
(:mod:`simulator.engine.private_memory`); this module holds the batch set-up, the
statement dispatch (:data:`STATEMENTS`, one handler per statement class) and ``If`` and
``For``; integers assigned again and general loops are :mod:`simulator.engine.control`.

Control flow depends on integers only, never on float values, so running with
``compute_values=False`` gives exactly the same counts while skipping the float arithmetic.
Then the accelerators the caller enables (:class:`simulator.engine.accelerators.Accelerators`)
may run: work-group classes choose the work-groups executed
(:func:`simulator.engine.simulation.simulate`); the statement passes
(:class:`simulator.engine.accelerators.Pass`: private nests, loop blocks) execute loops and
runs of statements in fewer steps with the same effect.
"""
from __future__ import annotations

import numpy as np

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.static import ExecutionError, is_vectorizable
from tiletraffic.simulator.ir.visitor import walk
from tiletraffic.simulator.engine import error_bound, sum_length
from tiletraffic.simulator.engine.accelerators import SIMULATE, Accelerators, Pass, Run
from tiletraffic.simulator.engine.accelerators.loop_blocks import LoopBlocks
from tiletraffic.simulator.engine.accelerators.private_nest import PrivateNests
from tiletraffic.simulator.engine.accesses import Accesses
from tiletraffic.simulator.engine.control import LOOP_TRIPS_LIMIT, ControlFlow
from tiletraffic.simulator.engine.expressions import Expressions, has_live_check
from tiletraffic.simulator.engine.private_memory import PrivateMemory

BLOCK_ELEMS = 1 << 22
"""Entries of one (G, L, I) block of a vectorized loop."""


VECTOR_BLOCK = 4
"""Vectorized loop blocks start at multiples of this many iterations."""

PLAN_CACHE_ENTRIES = 4096
"""Static plans (private nests, statement runs, blocked loops, the schedule's live checks)
kept across machines."""
_PLANS: dict[tuple, tuple] = {}


class Machine(Expressions, Accesses, PrivateMemory, ControlFlow):
    """Executes the body of one schedule for batches of work-groups (:meth:`run_batch`);
    its parts by concern are the classes it derives from (module docstring)."""

    @property
    def block_elems(self) -> int:
        """Entries of one block of a vectorized loop (:data:`BLOCK_ELEMS`)."""
        return BLOCK_ELEMS

    def __init__(self, schedule, params, sizes, buffers, observers, log, compute_values,
                 accelerators: Accelerators = SIMULATE):
        self.schedule = schedule
        self.params = params
        self.sizes = sizes
        self.buffers = buffers
        self.observers = observers
        self.log = log
        self.values = compute_values
        self.vectorizable: dict[int, bool] = {}
        self.while_limits: dict[int, int] = {}
        """Per While loop (by ``id``), its :func:`.control.while_trips_limit`."""
        self.sites: dict[tuple, str] = {}
        self.barriers: dict[int, int] = {}
        self.block_groups: int | None = None
        """Work-groups whose batch sets the blocks of vectorized loops (None: the batch)."""
        self.params_key = tuple(sorted(params.items()))
        self.reads_ints = S.depends_on_data(schedule.body)
        """The schedule reads an integer buffer (:class:`simulator.ir.nodes.IntLoad`) or
        branches on floats of the data (:func:`simulator.ir.nodes.branches_on_data`): every
        pass declines, and its loops run iteration by iteration."""
        self.conditions: dict[int, np.ndarray] = {}
        """The truth per work-item of each condition on floats of the data, as last
        evaluated (by ``id``), for an evaluation again in the same statement."""
        self.int_buffers = {a.name: np.asarray(a.values, dtype=np.int64)
                            for a in schedule.arrays if a.is_int}
        """The integer buffers' contents by name (flat, int64), read by ``IntLoad``."""
        fast = not compute_values and accelerators.private_nests and not self.reads_ints
        self.static_private_elements = fast
        """Private array elements of one static index are read and assigned without
        per-work-item index arrays (part of the private nests accelerator)."""
        self.passes: tuple[Pass, ...] = ((PrivateNests(),) if fast else ()) + (
            (LoopBlocks(),) if fast and accelerators.loop_blocks
            and accelerators.work_group_classes else ())
        """The statement passes that may run, in the order they are asked."""
        self.blocked = False
        """Inside a loop run blocked by :mod:`simulator.engine.accelerators.loop_blocks`."""
        self.ran_blocked = False
        """Whether a loop ran blocked in this machine."""
        self.depths = False
        """Track shadows beside the values: sum lengths (:mod:`simulator.engine.sum_length`),
        or error-bound records (:mod:`simulator.engine.error_bound`)."""
        self.shadow = sum_length
        """The module whose rules combine the shadows (:attr:`depths`)."""
        self.live = None
        """The work-items that execute the expressions being evaluated (the statement's
        mask; narrowed for the right operand of ``&&`` and ``||``, which C evaluates only
        where the left one does not decide; ``False`` where an expression evaluated again
        was checked already): an unsigned 64-bit :class:`Wrap` refuses a negative value of
        these only, and an integer division by zero of these only is a hazard."""
        self.live_checks = self.reads_ints or \
            self.plan_of("live checks", schedule.body, has_live_check)
        """Whether an expression of the schedule is checked per executing work-item (an
        unsigned 64-bit ``Wrap``, a ``/`` or ``%`` whose divisor is not a non-zero
        constant): then ``&&`` and ``||`` narrow :attr:`live`, and a ``select``'s condition
        is evaluated without values too."""
        self.local_pool: dict[str, np.ndarray] = {}
        """Per local array, the memory its batches use (:meth:`fresh_local`)."""
        self.shuffles = self.plan_of("shuffles", schedule.body, _has_shuffle)
        """Whether the schedule has a ``Shuffle`` (it reads the private floats of other
        work-items: every private update keeps the values outside its mask)."""
        self.divided: set[int] = set()
        """The divisions by zero reported in the statement executing now (by ``id`` of the
        ``BinOp``): an expression the engine evaluates again for the same statement (a
        private index, a loop's step) is reported once."""

    def track_sum_lengths(self, initial: dict[str, int] | None = None,
                          error_bounds: bool = False) -> None:
        """Count sum lengths from now on: per global array a shadow of int32 (inputs 0, or
        ``initial[name]``), kept across batches; per batch shadows of privates and local
        memory. With ``error_bounds`` (values needed, ``initial`` not allowed) the shadows
        are the records of :mod:`simulator.engine.error_bound` instead, the inputs' from
        their values."""
        self.depths = True
        initial = initial or {}
        if error_bounds:
            if any(initial.values()):
                raise ValueError("error bounds start from exact inputs: no input sum lengths")
            self.shadow = error_bound
            self.seeded = {a.name for a in self.schedule.arrays}
            self.dbuf = {a.name: error_bound.of_value(self.buffers[a.name]) if a.is_input
                         else np.zeros(self.sizes[a.name], error_bound.DTYPE)
                         for a in self.schedule.arrays}
            self.last_index = {}
            return
        self.seeded = {name for name, length in initial.items() if length}
        self.dbuf = {a.name: _seeded_shadow(initial[a.name], self.sizes[a.name], a.role)
                     if initial.get(a.name) else   # zeros: pages only where stored
                     np.zeros(self.sizes[a.name], sum_length.DTYPE)
                     for a in self.schedule.arrays}
        self.last_index: dict[int, tuple] = {}

    # ------------------------------------------------------------------ batch set-up
    def run_batch(self, group_index: np.ndarray, weights: np.ndarray | None = None) -> None:
        """Execute the schedule's body for the work-groups of linear ids ``group_index``
        (observers told with ``on_batch``, their counts weighted by ``weights`` where
        given)."""
        sch = self.schedule
        self.group_index = group_index
        G, L = len(group_index), sch.work_group_items
        self.G, self.L = G, L
        ngroups, lsize = sch.num_groups, sch.local_size
        flat_local = np.arange(L, dtype=np.int64)
        self.ids: dict[tuple[str, int], np.ndarray] = {}
        rest_g, rest_l = group_index.astype(np.int64), flat_local
        for d, (ng, ls) in enumerate(zip(ngroups, lsize)):
            g, rest_g = rest_g % ng, rest_g // ng
            lo, rest_l = rest_l % ls, rest_l // ls
            self.ids[("group", d)] = g.reshape(G, 1, 1)
            self.ids[("local", d)] = lo.reshape(1, L, 1)
            self.ids[("global", d)] = g.reshape(G, 1, 1) * ls + lo.reshape(1, L, 1)
        for obs in self.observers:
            obs.on_batch(group_index, L, weights)
        self.env: dict[str, object] = {}
        self.ints_set: dict[str, np.ndarray] = {}
        self.loop_exits: list = []
        self.privates: dict[str, np.ndarray] = {}
        self.parrays: dict[str, tuple] = {}
        self.parray_set: dict[str, np.ndarray | None] = {}
        self.private_set: dict[str, np.ndarray] = {}
        self.private_full: dict[str, bool] = {}
        self.private_scope: dict[str, np.ndarray] = {}
        self.local = {a.name: self.fresh_local(a.name, G, a.size)
                      for a in sch.local_arrays} if self.values else {}
        self.alive = np.ones((G, L, 1), dtype=bool)
        self.flop_entries = None
        self.epoch = 0
        if self.depths:
            self.dpriv: dict[str, np.ndarray] = {}
            self.dparr: dict[str, np.ndarray] = {}
            self.dlocal = {a.name: np.zeros((G, a.size), self.shadow.DTYPE)
                           for a in sch.local_arrays}
        self.exec_block(sch.body, np.ones((G, L, 1), dtype=bool))

    def fresh_local(self, name: str, groups: int, size: int) -> np.ndarray:
        """Local array ``name`` of ``groups`` work-groups, float32 ``(groups, size)``, every
        word NaN (nothing stored yet); the memory of the machine's earlier batches is
        reused (filled again, not allocated: nothing keeps a view of a batch's local
        memory)."""
        pool = self.local_pool.get(name)
        if pool is None or pool.shape[0] < groups:
            pool = self.local_pool[name] = np.empty((groups, size), dtype=np.float32)
        table = pool[:groups]
        table.fill(np.nan)
        return table

    def plan_of(self, kind: str, node, make):
        """``make(node, params)`` (a static plan of a loop or block, or a static fact of the
        body), cached for every machine of the same IR node and parameters (a schedule's
        probe and launch, and the short K of
        :mod:`simulator.engine.accelerators.k_extrapolation`, share their statements)."""
        key = (kind, id(node), self.params_key)
        hit = _PLANS.get(key)
        if hit is not None and hit[0] is node:
            return hit[1]
        if len(_PLANS) >= PLAN_CACHE_ENTRIES:
            _PLANS.clear()
        value = make(node, self.params)
        _PLANS[key] = (node, value)   # the node is kept: its id stays its own
        return value

    # ------------------------------------------------------------------ statements
    def exec_block(self, stmts, mask) -> None:
        """Execute the statements ``stmts`` for the work-items of ``mask`` that are alive:
        each by its handler in :data:`STATEMENTS`, except a run of statements that a
        statement pass executes at once."""
        runs = [(p, self.plan_of(("runs", p.name), stmts, p.runs)) for p in self.passes]
        runs = [(p, found) for p, found in runs if found]
        skip = 0
        m, alive = None, None    # masks are never changed in place: one ``m`` per ``alive``
        for pos, s in enumerate(stmts):
            if pos < skip:
                continue
            stop = self.run_pass(runs, pos, mask) if runs else None
            if stop is not None:
                skip = stop
                continue
            if m is None or self.alive is not alive:
                alive = self.alive
                m = np.logical_and(mask, alive)
            self.live = m
            self.divided.clear()
            execute = STATEMENTS.get(type(s))
            if execute is None:
                raise TypeError(f"unknown statement {s!r}")
            execute(self, s, m)

    def run_pass(self, runs: list[tuple[Pass, dict[int, Run]]], pos: int, mask) -> int | None:
        """Run the statement run starting at ``pos`` by the first pass that applies (in
        :attr:`passes` order) and return the position after the run it executed; None when
        no pass ran it."""
        for p, found in runs:
            run = found.get(pos)
            if run is not None:
                plan = p.applies(self, run, mask)
                if plan is not None:
                    p.run(self, run, mask, plan)
                    return run.stop
        return None

    def exec_let(self, s: S.Let, m) -> None:
        self.env[s.name] = self.eval_int(s.value)

    def exec_declare_float(self, s: S.DeclareFloat, m) -> None:
        init = np.nan if s.init is None else s.init
        # read-only views: a private float is replaced by each update, never changed in place
        self.privates[s.name] = np.broadcast_to(np.float32(init), (self.G, self.L, 1))
        self.private_set[s.name] = np.broadcast_to(s.init is not None, (self.G, self.L, 1))
        self.private_full[s.name] = s.init is not None
        self.private_scope[s.name] = m
        if self.depths:
            self.dpriv[s.name] = np.full((self.G, self.L, 1), self.shadow.of_constant(s.init),
                                         self.shadow.DTYPE)

    def exec_declare_private_array(self, s: S.DeclarePrivateArray, m) -> None:
        a = s.array
        init = np.nan if s.init is None else s.init
        self.parrays[a.name] = (a, np.full((self.G, self.L, a.size), init, dtype=np.float32))
        self.parray_set[a.name] = None if s.init is not None else \
            np.zeros((self.G, self.L, a.size), dtype=bool)
        if self.depths:
            self.dparr[a.name] = np.full((self.G, self.L, a.size),
                                         self.shadow.of_constant(s.init), self.shadow.DTYPE)

    def exec_if(self, s: S.If, m) -> None:
        if not np.any(m):
            return
        c = self.eval_cond(s.cond)
        then_mask = np.logical_and(m, c)
        if np.any(then_mask):
            self.exec_block(s.then, then_mask)
        if s.orelse:
            else_mask = np.logical_and(m, np.logical_not(c))
            if np.any(else_mask):
                self.exec_block(s.orelse, else_mask)

    def exec_return(self, s: S.Return, m) -> None:
        self.alive = np.logical_and(self.alive, np.logical_not(m))

    def exec_for(self, loop: S.For, m) -> None:
        """Execute ``loop`` for the work-items of ``m`` (nothing where none is on): by the
        first statement pass that applies, in blocks of iterations where it is
        vectorizable, else iteration by iteration.

        Raises:
            ExecutionError: a step below 1, or more than :data:`LOOP_TRIPS_LIMIT`
                iterations.
        """
        if not np.any(m):
            return
        for p in self.passes:
            plan = p.applies(self, loop, m)
            if plan is not None:
                p.run(self, loop, m, plan)
                return
        loads_stop = self.reads_ints and S.reads_int_buffer(loop.stop)
        loads_step = self.reads_ints and S.reads_int_buffer(loop.step)
        self.live = False if loads_step else m   # a loaded step is counted at each update
        step = self.eval_int(loop.step)
        if np.any(np.asarray(step) <= 0):
            raise ExecutionError(f"{self.schedule.family}: loop {loop.var} has a step of "
                                 f"{int(np.min(step))}: it must be at least 1 (the loop would "
                                 "never end)")
        if self.is_vectorizable(loop):
            self.exec_for_blocks(loop, m, step)
            return
        if loads_stop:      # C loads the stop at each test: counted there, not on entry
            self.live = False
        self.loop_trips(loop, m, step)   # refuses a loop beyond the limit before it runs
        self.live = m
        var = self.eval_int(loop.start)
        looping = m
        while True:
            self.env[loop.var] = var
            live = np.logical_and(looping, self.alive)
            # the bounds were checked once, on entry (loop_trips); a stop read from an
            # integer buffer is loaded by each work-item that tests it
            self.live = live if loads_stop else False
            stop = self.eval_int(loop.stop)
            self.live = live
            inside = np.logical_and(live, np.less(var, stop))
            if loads_stop:
                looping = inside
            if not np.any(inside):
                break
            self.loop_exits.append(None)    # a break or continue here leaves no While
            try:
                self.exec_block(loop.body, inside)
            finally:
                self.loop_exits.pop()
            if loads_step:      # C loads the step at each update, as an increment's operand
                self.live = np.logical_and(inside, self.alive)
                self.eval_int(loop.step)
            var = var + step
        self.env.pop(loop.var, None)

    def is_vectorizable(self, loop: S.For) -> bool:
        """:func:`simulator.ir.static.is_vectorizable`, cached per loop."""
        key = id(loop)
        if key not in self.vectorizable:
            self.vectorizable[key] = is_vectorizable(loop) and not \
                S.depends_on_data((loop,))
        return self.vectorizable[key]

    def loop_trips(self, loop: S.For, m, step) -> tuple[np.ndarray, np.ndarray, int]:
        """``loop``'s start, stop and the most iterations a work-item of mask ``m`` runs.

        Raises:
            ExecutionError: more than :data:`LOOP_TRIPS_LIMIT` iterations.
        """
        start = np.asarray(self.eval_int(loop.start), dtype=np.int64)
        stop = np.asarray(self.eval_int(loop.stop), dtype=np.int64)
        trips = np.where(m, np.maximum(0, -((start - stop) // step)), 0)
        most = int(trips.max()) if trips.size else 0
        if most > LOOP_TRIPS_LIMIT:
            raise ExecutionError(f"{self.schedule.family}: loop {loop.var} runs {most:,} "
                                 f"iterations, above the simulation limit of "
                                 f"{LOOP_TRIPS_LIMIT:,} for one loop")
        return start, stop, most

    def exec_for_blocks(self, loop: S.For, m, step) -> bool:
        """Run ``loop`` in blocks of iterations; whether any block ran.

        Raises:
            ExecutionError: the loop runs more than :data:`LOOP_TRIPS_LIMIT` iterations.
        """
        start, stop, most = self.loop_trips(loop, m, step)
        # Blocks hold a multiple of VECTOR_BLOCK iterations, so that observers can see runs of
        # consecutive iterations (e.g. local loads a compiler would merge into vector loads).
        groups = self.block_groups or self.G
        block_len = max(VECTOR_BLOCK, BLOCK_ELEMS // (groups * self.L) // VECTOR_BLOCK
                        * VECTOR_BLOCK)
        for first in range(0, most, block_len):
            j = np.arange(first, min(first + block_len, most), dtype=np.int64).reshape(1, 1, -1)
            var = start.reshape((1,) * (3 - start.ndim) + start.shape) + step * j
            self.env[loop.var] = var
            inside = np.logical_and(m, np.less(var, stop))
            self.exec_block(loop.body, inside)
        self.env.pop(loop.var, None)
        return most > 0


def _seeded_shadow(length: int, size: int, role: str) -> np.ndarray:
    """The sum-length shadow of a global array of ``size`` elements that all start at
    ``length``: for an input (role ``in``, never stored) one value seen ``size`` times
    (read-only, no memory per element), else a writable array."""
    value = np.asarray(length, dtype=sum_length.DTYPE)
    if role == "in":
        return np.broadcast_to(value, (size,))
    return np.full(size, value, sum_length.DTYPE)


STATEMENTS = {
    S.Let: Machine.exec_let,
    S.DeclareInt: Machine.exec_declare_int,
    S.AssignInt: Machine.exec_assign_int,
    S.DeclareFloat: Machine.exec_declare_float,
    S.DeclarePrivateArray: Machine.exec_declare_private_array,
    S.Assign: Machine.exec_update,
    S.Accumulate: Machine.exec_update,
    S.Store: Machine.exec_store,
    S.VectorLoad: Machine.exec_vector_load,
    S.VectorStore: Machine.exec_vector_store,
    S.If: Machine.exec_if,
    S.For: Machine.exec_for,
    S.While: Machine.exec_while,
    S.Break: Machine.exec_break,
    S.Continue: Machine.exec_continue,
    S.Barrier: Machine.exec_barrier,
    S.Return: Machine.exec_return,
    S.Shuffle: Machine.exec_shuffle,
}
"""The handler of each statement class: ``handler(machine, stmt, mask)`` executes ``stmt``
for the work-items of ``mask`` (a statement of another class is a ``TypeError``)."""


def _has_shuffle(stmts, params) -> bool:
    """Whether the statements ``stmts`` hold a :class:`simulator.ir.nodes.Shuffle`."""
    return any(isinstance(node, S.Shuffle) for s in stmts for node in walk(s))
