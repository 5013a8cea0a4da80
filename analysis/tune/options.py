"""What a GEMM tuning is asked to do (:class:`TuneOptions`), checked once when built by the
command line (``tiletraffic tune gemm``) or the library (``tiletraffic.tune``) and passed
to :func:`analysis.tune.tuner.tune`; and the error of a tuning that cannot start
(:class:`TuneError`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from tiletraffic.simulator.kernels.families import INT32_MAX

DEFAULT_TOP = 8
"""Best-ranked candidates measured when ``top`` is not given."""


class TuneError(ValueError):
    """A tuning that cannot start: bad sizes or options, a space with no valid candidate,
    an output file that a resumed tuning does not match. The message names the value."""


def _is_count(value, least: int) -> bool:
    """``value`` is an integer (not a bool) of at least ``least``."""
    return not isinstance(value, bool) and isinstance(value, int) and value >= least


@dataclass(frozen=True)
class TuneOptions:
    """A tuning of C = A·B (A M×K, B K×N, row-major float32) over a tuning space
    (:mod:`analysis.tune.tuner`).

    Attributes:
        m, n, k: sizes.
        device: OpenCL device to measure on (``"P:D"`` or part of a name; None: the default
            device). Not opened when nothing is measured (``top=0`` and not ``measure_all``).
        device_model: built-in name, file or ``DeviceModel`` that ranks the candidates;
            default: the measured device's model (``tiletraffic device-model --device D``:
            its queried values completed from a built-in model), else ``nvidia-h200``
            (:func:`analysis.device_model.resolve_device_model`).
        top: best-ranked candidates to measure (0: model only).
        out: JSON file to save results in as they come (None: not saved).
        repeat, warmup: timed and untimed launches per measured candidate and round.
        rounds: times the chosen candidates are run, every other round in reverse order
            (2: the run-to-run spread of ``tiletraffic validate``).
        space: a ``TuningSpace`` or the path of a space file (default: the built-in one).
        jobs: processes modelling in parallel.
        measure_all: measure every valid candidate, not just the top.
        resume: reuse the predictions and measurements of ``out`` when it tuned the same
            problem (otherwise an existing ``out`` is moved to ``history/`` beside it).
        seed: of the random inputs (candidate i in round r gets
            ``default_rng([seed, i, r])``); None: a fresh seed, recorded in the results.
        progress: progress bars on stderr (None: on a terminal only).
        recheck: best-ranked candidates to build on the device before measuring, re-model
            with their compiled registers (where the driver reports them) and re-rank
            (:mod:`analysis.tune.recheck`); None: 4 x ``top``; at most the modelled
            ones; 0: none. Needs a device (ignored without one).
        log: function taking a line of notes (moved files, guessed model values); None:
            silent.
        command: the command line to record (default: a description of the call).
        targets: the limits the tuning is judged by (``tune-regret``, and ``ranking`` for
            resolvable pairs; :mod:`analysis.validation.targets`): a file or ``Targets``;
            default the built-in ones. Recorded in ``meta.targets``.
        cluster: a Ray cluster to model and measure on (``local``, ``local:N``, ``auto`` or
            an address, as ``ray.init`` reads them: :mod:`analysis.tune.cluster`); None:
            this process (and ``jobs``).
        device_workers: with ``cluster``, the device workers that measure (default: one
            per GPU of the cluster, or on a CPU device one per node).
        batch, shared_b: a batch of ``batch`` products C[b] = A[b]·B[b] in one launch,
            with one B for all where ``shared_b`` (:mod:`simulator.kernels.batch`);
            every candidate is built batched.
        dtype: ``float32`` (default) or ``float16``, the storage of A, B and C
            (:mod:`simulator.kernels.storage`); every candidate is built with it.

    Raises:
        TuneError: when built: a size not a positive integer or beyond 32-bit indexing;
            ``top`` < 0, ``jobs`` < 1, ``repeat``, ``warmup`` or ``rounds`` outside their
            limits (:mod:`tiletraffic.gpu.runtime.launch_counts`), ``seed`` < 0,
            ``recheck`` < 0, each not an integer; ``jobs`` > 1 with a ``cluster``.
        analysis.tune.cluster.ClusterSpecError: a ``cluster`` of no known form,
            ``device_workers`` without one or below 1, Ray not installed.
    """

    m: int
    n: int
    k: int
    device: str | None = None
    device_model: object = None
    top: int = DEFAULT_TOP
    out: object = None
    repeat: int = 10
    warmup: int = 2
    rounds: int = 2
    space: object = None
    jobs: int = 1
    measure_all: bool = False
    resume: bool = False
    seed: int | None = None
    progress: bool | None = False
    recheck: int | None = None
    log: Callable[[str], None] | None = None
    command: str | None = None
    targets: object = None
    cluster: str | None = None
    device_workers: int | None = None
    batch: int = 1
    shared_b: bool = False
    dtype: str = "float32"

    def __post_init__(self):
        from tiletraffic.analysis.tune.cluster import check_cluster

        from tiletraffic.gpu.runtime.launch_counts import (repeat_problem, rounds_problem,
                                                           warmup_problem)

        self._check_sizes()
        for name, value, least in (("top", self.top, 0), ("jobs", self.jobs, 1)):
            if not _is_count(value, least):
                raise TuneError(f"{name} must be an integer >= {least}, got {value!r}")
        if (problem := repeat_problem(self.repeat) or warmup_problem(self.warmup)
                or rounds_problem(self.rounds)) is not None:
            raise TuneError(problem)
        if self.seed is not None and not _is_count(self.seed, 0):
            raise TuneError(f"seed must be a non-negative integer, got {self.seed!r}")
        if self.recheck is not None and not _is_count(self.recheck, 0):
            raise TuneError(f"recheck must be an integer >= 0, got {self.recheck!r}")
        if self.cluster is not None and self.jobs > 1:
            raise TuneError(f"jobs = {self.jobs} models on this machine's cores and cluster "
                            f"= {self.cluster!r} on the cluster's: give one of them")
        check_cluster(self.cluster, self.device_workers)

    def _check_sizes(self) -> None:
        m, n, k = self.m, self.n, self.k
        for name, v in (("M", m), ("N", n), ("K", k)):
            if not _is_count(v, 1):
                raise TuneError(f"{name} must be a positive integer, got {v!r}")
        if isinstance(self.batch, bool) or not _is_count(self.batch, 1):
            raise TuneError(f"batch must be a positive integer, got {self.batch!r}")
        if not isinstance(self.shared_b, bool) or (self.shared_b and self.batch == 1):
            raise TuneError("shared_b applies to a batch of 2 or more products, got "
                            f"shared_b = {self.shared_b!r} with batch = {self.batch}")
        from tiletraffic.simulator.kernels.storage import DTYPES
        if self.dtype not in DTYPES:
            raise TuneError(f"dtype {self.dtype!r} is not one of {', '.join(DTYPES)}")
        b = self.batch
        for what, v in (("M*K", b * m * k), ("K*N", (1 if self.shared_b else b) * k * n),
                        ("M*N", b * m * n)):
            if v > INT32_MAX:
                raise TuneError(f"{what} = {v} exceeds the 32-bit int index limit {INT32_MAX} "
                                "of the generated kernels")

    @property
    def measuring(self) -> bool:
        """Candidates are run on the device (``top`` > 0 or ``measure_all``)."""
        return self.top > 0 or self.measure_all

    @property
    def sizes(self) -> tuple[int, int, int]:
        """``(m, n, k)``."""
        return self.m, self.n, self.k

    @property
    def problem(self) -> tuple:
        """What every candidate is built at: ``(m, n, k, batch, shared_b, dtype)``
        (:meth:`analysis.tune.space.Candidate.build`'s arguments)."""
        return self.m, self.n, self.k, self.batch, self.shared_b, self.dtype

    @property
    def results_suffix(self) -> str:
        """What a default results file's name adds to ``gemm-MxNxK`` for the problem's
        batch and storage: ``""``, ``"-batch8"``, ``"-batch8-shared-b"``, ``"-float16"``
        (:func:`results_suffix`)."""
        return results_suffix(self.batch, self.shared_b, self.dtype)

    def described_command(self) -> str:
        """``command``, else a description of the library call."""
        return self.command or (
            f"tiletraffic.tune({self.m}, {self.n}, {self.k}, device={self.device!r}, "
            f"top={self.top}, measure_all={self.measure_all})")

    def say(self, line: str) -> None:
        """Pass a line of notes to ``log`` (nothing without one)."""
        if self.log is not None:
            self.log(line)


def results_suffix(batch: int = 1, shared_b: bool = False, dtype: str = "float32") -> str:
    """The part of a default results file's name after ``gemm-MxNxK`` that names a batch
    (``-batch8``, ``-batch8-shared-b``) and half storage (``-float16``); ``""`` for one
    float32 product, so that tunings of other problems at the same sizes keep their own
    files."""
    out = "" if batch == 1 else f"-batch{batch}" + ("-shared-b" if shared_b else "")
    return out + ("-float16" if dtype == "float16" else "")
