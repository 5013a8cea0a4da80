"""Where a command's work runs: in this process (:class:`LocalEngine`; the modelling
optionally in a pool of ``jobs`` processes), or on a Ray cluster (``--cluster``:
:class:`analysis.tune.cluster.Cluster`). Both answer the same calls, so the tuner and the
validation do the same work either way:

- ``open_device(spec)``: the device measured on (a ``Target`` here; on a cluster what a
  worker opened);
- ``model(fn, shared, tasks, on_result, bar)``: ``fn(shared, task) -> (key, result)`` for
  every task, ``on_result(key, result)`` as each finishes;
- ``pool(target)``: the device workers :func:`analysis.tune.rounds.run_rounds` measures on;
- ``build``: the recheck's build on the device (None here: the recheck builds on the
  target itself);
- ``describe()``: what the results record of the cluster (None here).
"""
from __future__ import annotations

from tiletraffic.analysis.tune.cluster import check_cluster
from tiletraffic.analysis.tune.rounds import LocalPool

_SHARED = None


def _keep(shared) -> None:
    """A pool process's start: keep ``shared``; Ctrl-C is the parent's to handle."""
    import signal

    global _SHARED
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _SHARED = shared


def _call(job):
    fn, task = job
    return fn(_SHARED, task)


class LocalEngine:
    """This process: the modelling in a pool of ``jobs`` processes (spawned, so no OpenCL
    state is inherited; terminated on Ctrl-C) when ``jobs`` > 1, the measuring on the one
    device this process opens."""

    remote = False
    build = None

    def __init__(self, jobs: int = 1, log=None):
        self.jobs, self.log = jobs, log or (lambda line: None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def describe(self) -> None:
        return None

    def open_device(self, spec):
        from tiletraffic.gpu.devices.device import select_device

        return select_device(spec)

    def model(self, fn, shared, tasks, on_result, bar) -> None:
        if self.jobs == 1:
            for task in tasks:
                on_result(*fn(shared, task))
                bar.update(1)
            return
        import multiprocessing

        pool = multiprocessing.get_context("spawn").Pool(self.jobs, _keep, (shared,))
        try:
            for key, result in pool.imap_unordered(_call, [(fn, t) for t in tasks]):
                on_result(key, result)
                bar.update(1)
            pool.close()
        except BaseException:
            pool.terminate()
            raise
        finally:
            pool.join()

    def pool(self, target) -> LocalPool:
        return LocalPool(target)


def engine_for(cluster: str | None = None, jobs: int = 1, device_workers: int | None = None,
               log=None):
    """The engine of a command: a :class:`analysis.tune.cluster.Cluster` for ``cluster``
    (``--cluster``), else a :class:`LocalEngine` of ``jobs`` modelling processes. Use it as
    a context manager (the cluster connects on entry and lets go on exit).

    Raises:
        analysis.tune.cluster.ClusterSpecError: a ``cluster`` of no known form,
            ``device_workers`` without one or below 1, Ray not installed.
    """
    spec = check_cluster(cluster, device_workers)
    if spec is None:
        return LocalEngine(jobs, log)
    from tiletraffic.analysis.tune.cluster import Cluster

    return Cluster(spec, device_workers, log)
