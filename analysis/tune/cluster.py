"""Tuning and validating on a Ray cluster (``--cluster``; the optional extra
``pip install -e ".[distributed]"`` installs Ray).

What moves where:

- **modelling**: every candidate (or validation case) is one Ray task of one CPU, spread over
  the cluster's CPUs (the device model is put in the object store once); a task whose
  worker dies is run again by Ray on another (up to :data:`MODEL_RETRIES` times); the
  driver records each result as it comes.
- **measuring**: one actor per device (:class:`RayPool`): on a GPU device an actor of one GPU
  (``num_gpus=1``: Ray gives it its own GPU, ``CUDA_VISIBLE_DEVICES``); on a CPU device
  (PoCL) an actor of ``T`` CPUs whose PoCL runs ``T`` threads (``POCL_MAX_PTHREAD_COUNT``).
  Each opens the device the command names (``--device``) and measures as one process does
  (:func:`gpu.runtime.checked_run.run_on_device`: every launch checked before its time
  counts); the driver decides who measures what (:mod:`analysis.tune.rounds`) and writes
  the results file after every finished unit.
- **the driver** (the command) screens the candidates, ranks, writes every file and holds
  no device: what it knows of the device comes from one Ray task run where a worker runs
  (:meth:`Cluster.open_device`).

The actors are made after the modelling (so that CPU workers of PoCL do not hold the CPUs
the modelling needs) and killed when the command ends; a cluster the command started
(``local``, ``local:N``) is shut down with it.
"""
from __future__ import annotations

import importlib.util
import logging
import re
import secrets
import socket
from dataclasses import dataclass

CONNECT_TIMEOUT_S = 10
"""Seconds a cluster address has to answer before the command gives up."""
MODEL_RETRIES = 3
"""Times Ray runs a modelling task again after its worker died."""
RAY_MISSING = ("--cluster needs Ray, which is not installed here: pip install -e "
               "\".[distributed]\" (or pip install \"ray>=2.9\")")
SPEC_FORMS = "local, local:N (N CPUs), auto or a Ray address HOST:PORT or ray://HOST:PORT"
ACTOR_PREFIX = "tiletraffic-device"
"""Name of each measuring actor: ``tiletraffic-device-<run>-<index>`` (``ray list actors``)."""


class ClusterSpecError(ValueError):
    """A ``--cluster`` value of no known form, other options that do not go with it, or Ray
    not installed; the message names the value."""


class ClusterError(RuntimeError):
    """The cluster cannot be reached, or has not what the command needs (GPUs, CPUs, a
    device worker left); one line."""


def ray_installed() -> bool:
    """Ray can be imported here."""
    return importlib.util.find_spec("ray") is not None


@dataclass(frozen=True)
class ClusterSpec:
    """A parsed ``--cluster`` value: the text and the ``ray.init`` keywords it means."""

    text: str
    init: dict

    @property
    def starts_local(self) -> bool:
        """A new Ray instance on this machine, started and shut down by the command."""
        return self.init.get("address") == "local"


def parse_cluster(text: str) -> ClusterSpec:
    """``local`` (a new Ray instance on this machine with all its CPUs and GPUs),
    ``local:N`` (N CPUs), ``auto`` (the cluster this machine is a node of) or a Ray address
    (``HOST:PORT``, ``ray://HOST:PORT``), as :func:`ray.init` reads them.

    Raises:
        ClusterSpecError: any other text, or N not a positive integer.
    """
    if not isinstance(text, str) or not text.strip():
        raise ClusterSpecError(f"--cluster {text!r}: give {SPEC_FORMS}")
    text = text.strip()
    if text == "local":
        return ClusterSpec(text, {"address": "local"})
    if text.startswith("local:"):
        count = text.partition(":")[2]
        if not count.isdigit() or int(count) < 1:
            raise ClusterSpecError(f"--cluster {text}: N in local:N is the CPUs of the local "
                                   f"cluster, a positive integer, not {count!r}")
        return ClusterSpec(text, {"address": "local", "num_cpus": int(count)})
    if text == "auto":
        return ClusterSpec(text, {"address": "auto"})
    host, colon, port = text.removeprefix("ray://").rpartition(":")
    if colon and host and port.isdigit() and re.fullmatch(r"[A-Za-z0-9.\-\[\]:]+", host):
        return ClusterSpec(text, {"address": text})
    raise ClusterSpecError(f"--cluster {text}: give {SPEC_FORMS}")


def check_cluster(text: str | None, device_workers: int | None = None) -> ClusterSpec | None:
    """The parsed ``--cluster`` (None without one), checked before any work: Ray installed,
    ``device_workers`` only with a cluster and at least 1.

    Raises:
        ClusterSpecError: one line naming the value.
    """
    if text is None:
        if device_workers is not None:
            raise ClusterSpecError("--device-workers needs --cluster (one process measures "
                                   "on one device)")
        return None
    spec = parse_cluster(text)
    if device_workers is not None and (isinstance(device_workers, bool) or
                                       not isinstance(device_workers, int) or device_workers < 1):
        raise ClusterSpecError(f"--device-workers must be an integer >= 1, got "
                               f"{device_workers!r}")
    if not ray_installed():
        raise ClusterSpecError(RAY_MISSING)
    return spec


def one_line(err: BaseException, most: int = 300) -> str:
    """An error as one line of at most ``most`` characters."""
    text = " ".join(str(err).split()) or type(err).__name__
    return text if len(text) <= most else text[:most - 3] + "..."


@dataclass(frozen=True)
class RemoteDevice:
    """What the driver knows of the device the workers measure on (it holds none): its
    :class:`gpu.devices.device.DeviceInfo`, as a ``Target``'s ``info``, ``slug`` and
    ``limits`` read."""

    info: object

    @property
    def slug(self) -> str:
        return self.info.slug

    @property
    def limits(self):
        return self.info.limits


def _open(spec):
    """Open the device ``spec`` here: (its ``DeviceInfo``, the selection's warnings)."""
    import warnings

    from tiletraffic.gpu.devices.device import select_device

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        target = select_device(spec)
    return target, [str(w.message) for w in caught]


def _probe(spec):
    target, notes = _open(spec)
    return target.info, notes


def _model_one(fn, shared, task):
    """A modelling task: ``fn(shared, task)``."""
    return fn(shared, task)


def _build(target, cache, schedule):
    """The recheck's build on a worker's device (:func:`analysis.tune.recheck.compiled_resources`)."""
    from tiletraffic.analysis.tune.recheck import compiled_resources

    return compiled_resources(target, schedule)


class DeviceWorker:
    """A measuring actor's body: the device ``spec`` opened once; :meth:`call` runs
    ``fn(target, cache, *args)`` with a cache the worker keeps between calls."""

    def __init__(self, spec):
        self.target, self.notes = _open(spec)
        self.cache: dict = {}

    def describe(self) -> dict:
        import ray

        info = self.target.info
        return {"host": socket.gethostname(), "node": ray.util.get_node_ip_address(),
                "device": info.device_name, "device_id": info.id, "slug": info.slug,
                "gpu_ids": [str(g) for g in ray.get_gpu_ids()], "notes": self.notes}

    def call(self, fn, args):
        return fn(self.target, self.cache, *args)


class Cluster:
    """One command's connection to a Ray cluster (a context manager): it models on the
    cluster's CPUs (:meth:`model`), tells the device (:meth:`open_device`) and measures on
    its devices (:meth:`pool`)."""

    remote = True

    def __init__(self, spec: ClusterSpec, device_workers: int | None = None, log=None):
        self.spec, self.device_workers = spec, device_workers
        self.log = log or (lambda line: None)
        self.started, self._pool, self.resources, self.nodes = False, None, {}, 0
        self._device_spec = self._device_info = None

    def __enter__(self):
        import ray

        if ray.is_initialized():
            self.log("note: --cluster: this process is connected to Ray already: using "
                     "that cluster")
        else:
            extra = {"include_dashboard": False} if self.spec.starts_local else {}
            self.check_reachable()
            try:
                ray.init(**self.spec.init, **extra, logging_level=logging.WARNING,
                         log_to_driver=False)
            except Exception as err:  # noqa: BLE001  ConnectionError, RuntimeError, ...
                raise ClusterError(f"--cluster {self.spec.text}: cannot start or reach the "
                                   f"Ray cluster ({one_line(err)})") from None
            self.started = True
        self.resources = ray.cluster_resources()
        self.nodes = sum(1 for n in ray.nodes() if n.get("Alive"))
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def check_reachable(self) -> None:
        """A cluster address (``HOST:PORT``, ``ray://HOST:PORT``) answers on its port within
        :data:`CONNECT_TIMEOUT_S` (Ray itself would retry for minutes).

        Raises:
            ClusterError: it does not, with the reason.
        """
        address = self.spec.init.get("address")
        if address in ("local", "auto"):
            return
        host, _, port = address.removeprefix("ray://").rpartition(":")
        try:
            socket.create_connection((host.strip("[]"), int(port)),
                                     timeout=CONNECT_TIMEOUT_S).close()
        except OSError as err:
            raise ClusterError(f"--cluster {self.spec.text}: nothing answers there "
                               f"({err.strerror or err}); is the cluster started (ray start "
                               "--head) and the address its head's?") from None

    def close(self) -> None:
        """Kill the measuring actors; shut down a cluster this command started."""
        import ray

        if self._pool is not None:
            self._pool.close()
            self._pool = None
        if self.started and ray.is_initialized():
            ray.shutdown()
            self.started = False

    @property
    def cpus(self) -> int:
        return int(self.resources.get("CPU", 0))

    @property
    def gpus(self) -> int:
        return int(self.resources.get("GPU", 0))

    def describe(self) -> dict:
        """The cluster as the results record it (``meta.cluster``)."""
        out = {"cluster": self.spec.text, "nodes": self.nodes, "cpus": self.cpus,
               "gpus": self.gpus}
        if self._pool is not None:
            out["device_workers"] = [self._pool.describe(w) for w in self._pool.workers]
        return out

    def open_device(self, spec):
        """The device ``spec`` as a worker opens it (a Ray task on a GPU where the cluster
        has one): a :class:`RemoteDevice`; the selection's warnings go to the log.

        Raises:
            gpu.devices.device.DeviceError: no such device where the task ran.
        """
        import ray

        resources = {"num_gpus": 1, "num_cpus": 0} if self.gpus else {"num_cpus": 1}
        try:
            info, notes = ray.get(ray.remote(_probe).options(**resources,
                                                             max_retries=1).remote(spec))
        except ray.exceptions.RayTaskError as err:
            raise (err.cause if isinstance(err.cause, Exception) else err) from None
        for note in notes:
            self.log(f"warning: {note}")
        self._device_spec, self._device_info = spec, info
        return RemoteDevice(info)

    def model(self, fn, shared, tasks, on_result, bar) -> None:
        """Run ``fn(shared, task)`` (each returning ``(key, result)``) for every task as a
        Ray task of one CPU, at most twice the cluster's CPUs in flight; ``on_result(key,
        result)`` as each finishes. Pending tasks are cancelled on any error or Ctrl-C.

        Raises:
            ClusterError: a task whose workers died :data:`MODEL_RETRIES` + 1 times.
            Exception: what ``fn`` raised.
        """
        import ray

        remote = ray.remote(_model_one).options(num_cpus=1, max_retries=MODEL_RETRIES)
        shared_ref = ray.put(shared)
        todo = iter(tasks)
        window = max(4, 2 * self.cpus)
        pending: dict = {}
        try:
            while True:
                while len(pending) < window and (task := next(todo, None)) is not None:
                    pending[remote.remote(fn, shared_ref, task)] = task
                if not pending:
                    return
                ready, _ = ray.wait(list(pending), num_returns=1)
                pending.pop(ready[0])
                try:
                    key, result = ray.get(ready[0])
                except ray.exceptions.RayTaskError as err:
                    raise (err.cause if isinstance(err.cause, Exception) else err) from None
                except ray.exceptions.RayError as err:
                    raise ClusterError(f"a modelling task failed on {MODEL_RETRIES + 1} "
                                       f"workers: {one_line(err)}") from None
                on_result(key, result)
                bar.update(1)
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)

    def pool(self, target=None):
        """The measuring actors (made at the first call, one per device: module
        docstring) on the device :meth:`open_device` opened."""
        if self._pool is None:
            self._pool = RayPool(self, self._device_spec, self._device_info)
        return self._pool

    def build(self, target, schedule):
        """The recheck's build of ``schedule`` on a worker's device (the first that
        answers)."""
        return self.pool().call(_build, (schedule,))


class RayPool:
    """One actor per device (:class:`DeviceWorker`), numbered from 0; :meth:`submit` and
    :meth:`wait` as :func:`analysis.tune.rounds.run_rounds` reads them."""

    remote = True

    def __init__(self, cluster: Cluster, spec, info):
        import ray

        gpu = bool(info.is_gpu and cluster.gpus)
        count = cluster.device_workers or (cluster.gpus if gpu else max(1, cluster.nodes))
        if gpu and count > cluster.gpus:
            raise ClusterError(f"--device-workers {count}: the cluster has {cluster.gpus} "
                               "GPUs, one for each device worker")
        threads = 1 if gpu else cluster.cpus // count
        if not gpu and threads < 1:
            raise ClusterError(f"--device-workers {count}: the cluster has {cluster.cpus} "
                               f"CPUs, at least one for each device worker on "
                               f"{info.device_name}")
        options = {"num_gpus": 1, "num_cpus": 0} if gpu else {
            "num_cpus": threads, "scheduling_strategy": "SPREAD",
            "runtime_env": {"env_vars": {"POCL_MAX_PTHREAD_COUNT": str(threads)}}}
        run = secrets.token_hex(3)
        actor = ray.remote(DeviceWorker)
        self.names = {i: f"{ACTOR_PREFIX}-{run}-{i}" for i in range(count)}
        made = {i: actor.options(**options, max_restarts=0, name=self.names[i]).remote(spec)
                for i in range(count)}
        self.threads, self.gpu, self.actors, self.info = threads, gpu, {}, {}
        self.log = cluster.log
        self._start(made, info)

    def _start(self, made: dict, info) -> None:
        """Keep the actors that open a device like the probe's (its slug); name the others
        and why.

        Raises:
            ClusterError: none is left.
        """
        import ray

        why = None
        for i, handle in made.items():
            try:
                described = ray.get(handle.describe.remote())
            except ray.exceptions.RayError as err:
                why = f"device worker {i} could not start: {one_line(err)}"
                self.log(f"warning: {why}")
                continue
            if described["slug"] != info.slug:
                why = (f"device worker {i} opened {described['device']} on "
                       f"{described['host']}, not {info.device_name}: left out")
                self.log(f"warning: {why}")
                ray.kill(handle)
                continue
            self.actors[i] = handle
            self.info[i] = {"worker": i, "actor": self.names[i], **described}
        if not self.actors:
            raise ClusterError(f"no device worker started on {info.device_name} ({why})")

    @property
    def workers(self) -> list:
        return list(self.actors)

    def describe(self, worker) -> dict:
        return {key: value for key, value in self.info[worker].items() if key != "notes"}

    def submit(self, worker, fn, args):
        return self.actors[worker].call.remote(fn, args)

    def wait(self, handles):
        """The first finished of ``handles``: (handle, its result or a
        :class:`analysis.tune.rounds.WorkerLost` when its actor died).

        Raises:
            Exception: what the measuring function raised on the worker.
        """
        import ray

        from tiletraffic.analysis.tune.rounds import WorkerLost

        ready, _ = ray.wait(handles, num_returns=1)
        try:
            return ready[0], ray.get(ready[0])
        except ray.exceptions.RayActorError as err:
            return ready[0], WorkerLost(one_line(err, 200))
        except ray.exceptions.RayTaskError as err:
            raise (err.cause if isinstance(err.cause, Exception) else err) from None

    def call(self, fn, args):
        """``fn(target, cache, *args)`` on the first worker that answers.

        Raises:
            ClusterError: every worker died.
            Exception: what ``fn`` raised.
        """
        import ray

        from tiletraffic.analysis.tune.rounds import WorkerLost

        for worker in list(self.actors):
            _, result = self.wait([self.submit(worker, fn, args)])
            if not isinstance(result, WorkerLost):
                return result
            self.log(f"device worker {worker} died ({result.why})")
            ray.kill(self.actors.pop(worker))
        raise ClusterError("every device worker died")

    def close(self) -> None:
        import ray

        for handle in self.actors.values():
            try:
                ray.kill(handle)
            except Exception:  # noqa: BLE001  already gone
                pass
        self.actors = {}
