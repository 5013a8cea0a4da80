"""The model-guided tuner: ``tiletraffic tune gemm`` and ``tiletraffic.tune``.

Pipeline, for C = A·B with A M×K and B K×N:

1. **Screen** every candidate of a tuning space (:mod:`analysis.tune.space`, the built-in
   ``analysis/tune/spaces/gemm.toml`` or the user's file): its constraints (data, checked
   against the sizes and the device limits: the smaller of the OpenCL device's and the
   device model's), then the family's builder (a ``ScheduleError`` rejects), then the built
   schedule against the same limits (:func:`simulator.engine.limits.launch_limit_problems`).
   Nothing rejected here is modelled or launched; each rejection keeps its stage and reasons.
2. **Model** each valid candidate (``tiletraffic.model(schedule, device_model)``, the
   predicted time ``prediction.predicted_time_s``), optionally in a pool of processes
   (``jobs``) or as the Ray tasks of a cluster (``cluster``: :mod:`analysis.tune.cluster`);
   a candidate the model refuses (a limit or hazard) is a rejection of stage ``model``. Rank by predicted time (ties: the space's order).
   **Recheck** (:mod:`analysis.tune.recheck`) the ``recheck`` best-ranked on the target
   device: build each (compile only), read its compiled registers where the driver reports
   them, re-model it with them and re-rank; a failed build is a rejection of stage
   ``build``.
3. **Measure** the ``top`` best-ranked (or all: ``measure_all``) on the OpenCL device with
   :func:`gpu.runtime.checked_run.run_on_device`, which checks every launch against float64
   before its time counts (on a cluster, on one worker per device:
   :mod:`analysis.tune.rounds`). A candidate that fails to build, launch or check is
   recorded as failed with the message and the tuning goes on.
4. **Judge** the model (:func:`analysis.tune.stats.summarize`): regret of its pick against
   the best measured candidate, rank correlation, resolvable pairs, over the measured
   candidates only.

Results are a JSON document written atomically (:mod:`analysis.files`): after every
measured round and every build of the recheck, while modelling after a finished candidate
once :data:`SAVE_INTERVAL_S` seconds have passed since the last write or the candidates
finished since then number more than an eighth of those modelled (so the writes of a large
space stay linear in its size, not quadratic), and whenever a step ends. Ctrl-C or an error
writes what finished (:class:`TuneInterrupted`). An existing output file
is never overwritten: it is moved to ``history/`` beside it first, or, with ``resume``, its
predictions and measurements are reused when it tuned the same problem (sizes, space file,
device model, device, launches per candidate).
"""
from __future__ import annotations

import json
import sys
import warnings
from time import monotonic
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tiletraffic.simulator.engine.limits import DeviceLimits, launch_limit_problems
from tiletraffic.simulator.kernels.families import ScheduleError
from tiletraffic.simulator.ir.sequence import kernels_of

from tiletraffic.analysis.device_model import DEFAULT_MODEL, resolve_device_model
from tiletraffic.analysis.tune import (recheck as tuning_recheck, stats as tuning_stats,
                                       sweep)
from tiletraffic.analysis.files import FolderLock, atomic_write_text, held
from tiletraffic.analysis.tune.document import previous, tuning_meta
from tiletraffic.analysis.tune.engine import LocalEngine, engine_for
from tiletraffic.analysis.validation.targets import load as load_targets
from tiletraffic.analysis.tune.options import TuneError, TuneOptions
from tiletraffic.analysis.tune.space import TuningSpace, check_candidate, load_space

SAVE_INTERVAL_S = 2.0
"""While modelling, the results file is written at least this often (seconds; a candidate
finished since the last write is written at its next finished candidate after this time)."""

SLOW_MODEL_WORK = 1024 ** 3
"""From this M·N·K on, a note says modelling is slow (14-400 s per register-blocked case at
N = 4096 on 2 cores when the tuner was written)."""
PREDICTION_KEYS = ("predicted_time_s", "bound", "resident_work_groups_per_cu",
                   "registers_per_work_item", "model_s", "model_warnings")


class TuneInterrupted(RuntimeError):
    """Ctrl-C during a tuning; what finished is saved (``path``, None when not saving)."""

    def __init__(self, path, result: "TuneResult"):
        self.path, self.result = path, result
        s = result.data["summary"]
        super().__init__(f"tuning interrupted after {s['modelled']} of {s['valid']} "
                         f"candidates modelled and {s['measured_ok'] + s['measured_failed']} "
                         "measured in every round" + (f"; saved in {path} (continue with --resume)"
                                       if path else ""))


@dataclass
class TuneResult:
    """A finished (or interrupted) tuning.

    Attributes:
        data: the JSON document: ``meta`` (problem, device, model, space, software),
            ``rejected`` (label, family, params, stage, reasons; a failed build also its
            ``log``), ``predictions`` (ranked: label, family, params, predicted_rank,
            predicted_time_s, bound, model_s, and the recheck's registers_source,
            estimate_rank, estimate_predicted_time_s, compiled_rank,
            compiled_predicted_time_s, recheck: :mod:`analysis.tune.recheck`), ``recheck``
            (what it did: counts, device, the top before and after),
            ``measurements`` (status ok: median_s, min_s, max_s, spread_s, kernel_times_s,
            gflop_per_s, check; failed: stage, error_type, error), ``summary``
            (:func:`analysis.tune.stats.summarize`; ``estimate_pick``: the estimate-based
            ranking's pick), ``status``.
        path: the JSON file (None when not saved).
    """

    data: dict
    path: Path | None = None

    @property
    def summary(self) -> dict:
        return self.data["summary"]

    @property
    def measurements(self) -> list:
        return self.data["measurements"]

    @property
    def predictions(self) -> list:
        return self.data["predictions"]

    @property
    def rejected(self) -> list:
        return self.data["rejected"]

    def table(self) -> str:
        """The readable table (:func:`analysis.tune.stats.table`)."""
        return tuning_stats.table(self.data)

    def __repr__(self) -> str:
        """One line: the problem, the candidates, the model's pick, how many were measured,
        the file (the data itself: :attr:`data`, :attr:`predictions`, ...)."""
        meta, s = self.data.get("meta", {}), self.data.get("summary", {})
        pick = s.get("pick") or (self.predictions[0] if self.data.get("predictions") else None)
        measured = s.get("measured_ok", 0) + s.get("measured_failed", 0)
        status = self.data.get("status", "complete")
        return (f"<TuneResult {meta.get('operation', 'gemm')} M={meta.get('m')} "
                f"N={meta.get('n')} K={meta.get('k')}: {s.get('candidates', 0)} candidates, "
                f"{s.get('valid', 0)} valid, pick {pick['label'] if pick else 'none'}, "
                f"{measured} measured, file {self.path if self.path else 'not saved'}"
                + ("" if status == "complete" else f", {status}") + ">")


def combined_limits(device_limits: DeviceLimits | None, model) -> DeviceLimits:
    """The limits a candidate must meet: the device model's (what ``model_launch``
    enforces: ``max_work_group_size``, 1024 x 1024 x 64 work-items per dimension,
    ``local_mem_bytes_per_work_group``) and, when measuring, the OpenCL device's: the
    smaller of each; a register budget where the device takes one (always without a
    device)."""
    ours = DeviceLimits(f"device model {model.name}", model.max_work_group_size,
                        (1024, 1024, 64), model.local_mem_bytes_per_work_group)
    if device_limits is None:
        return ours
    return DeviceLimits(
        f"{device_limits.name} and device model {model.name}",
        min(ours.max_work_group_size, device_limits.max_work_group_size),
        tuple(min(a, b) for a, b in zip(ours.max_work_item_sizes,
                                        device_limits.max_work_item_sizes)),
        min(ours.local_mem_bytes, device_limits.local_mem_bytes),
        device_limits.register_budget)


def ranking_model(device_model, target):
    """The device model that ranks: ``device_model`` (a built-in name, file or
    ``DeviceModel``) where given, else the measured device's (its queried values over
    the built-in model of its kind), else :data:`DEFAULT_MODEL`
    (:func:`analysis.device_model.resolve_device_model`).

    Raises:
        KeyError, DeviceModelError: an unknown name, a bad model file (as
            :func:`tiletraffic.simulator.model.device_model.device_model` raises).
    """
    return resolve_device_model(device_model, default=DEFAULT_MODEL,
                                device_info=None if target is None else target.info)


NO_VALID_REASONS = 6
"""Most rejection reasons a "no valid candidate" message names (the rest are counted)."""


def no_valid_message(head: str, rejected: list[dict]) -> str:
    """``head``, then every candidate's rejection counted by reason, most frequent first
    (at most :data:`NO_VALID_REASONS` named), and an example of the first, on one line."""
    counts: dict[str, int] = {}
    example: dict[str, tuple[str, str]] = {}
    for r in rejected:
        for why, reason in zip(r.get("whys", r["reasons"]), r["reasons"]):
            counts[why] = counts.get(why, 0) + 1
            example.setdefault(why, (r["label"], reason))
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])
    shown, more = ranked[:NO_VALID_REASONS], len(ranked) - NO_VALID_REASONS
    text = (f"{head}: all {len(rejected)} rejected; most often: "
            + "; ".join(f"{why} ({count})" for why, count in shown)
            + (f"; and {more} other reason{'s' if more > 1 else ''}" if more > 0 else ""))
    if shown:
        label, reason = example[shown[0][0]]
        text += f"; e.g. {label}: {reason}"
    return " ".join(text.split())


def screen(space: TuningSpace, m: int, n: int, k: int, limits: DeviceLimits,
           batch: int = 1, shared_b: bool = False, dtype: str = "float32"):
    """Split the candidates of ``space`` into valid ones (candidate, schedule) and
    rejections (dicts with label, family, params, stage ``constraint``/``builder``/
    ``limits``, ``reasons`` (full text) and ``whys`` (grouping keys)); each built with
    ``batch``, ``shared_b`` and ``dtype`` (:meth:`analysis.tune.space.Candidate.build`).

    Raises:
        SpaceError: a constraint cannot be evaluated.
    """
    valid, rejected = [], []
    for fam, cand in space.candidates():
        entry = {"label": cand.label, "family": cand.family, "params": cand.options}
        failed = check_candidate(space, fam, cand, m, n, k, limits)
        if failed:
            rejected.append({**entry, "stage": "constraint",
                             "reasons": [reason for _, reason in failed],
                             "whys": [why for why, _ in failed]})
            continue
        try:
            sch = cand.build(m, n, k, batch, shared_b, dtype)
        except ScheduleError as err:
            rejected.append({**entry, "stage": "builder", "reasons": [str(err)],
                             "whys": [f"the builder refused: {err}"]})
            continue
        problems = [p for kernel in kernels_of(sch) for p in launch_limit_problems(
            tuple(kernel.local_size), kernel.local_mem_bytes, limits)]
        if problems:
            rejected.append({**entry, "stage": "limits", "reasons": problems,
                             "whys": [f"beyond the limits of {limits.name}"]})
            continue
        valid.append((cand, sch))
    return valid, rejected


def _predict(task) -> tuple:
    """Model one candidate: (key, prediction or error); ``task``: (key, family, params,
    (m, n, k, batch, shared_b, dtype), device model, registers per work-item or None for the
    estimate)."""
    import time

    from tiletraffic.simulator.model.device_model import GuessedValueWarning
    from tiletraffic.simulator.model.sequence_run import model_sequence

    key, family, params, problem, model, registers = task
    from tiletraffic.analysis.tune.space import Candidate
    start = time.perf_counter()
    try:
        sch = Candidate(family, tuple(params)).build(*problem)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            p = model_sequence(sch, model, registers_per_work_item=registers).prediction
    except Exception as err:  # any refusal (limit, hazard) rejects this candidate only
        return key, {"error_type": type(err).__name__, "error": str(err)}
    notes = list(dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught
                               if not issubclass(w.category, GuessedValueWarning)))
    return key, {"predicted_time_s": p.predicted_time_s, "bound": p.bound,
                 "resident_work_groups_per_cu": p.resident_work_groups_per_cu,
                 "registers_per_work_item": p.registers_per_work_item,
                 "model_s": time.perf_counter() - start, "model_warnings": notes}


def predict_with(model, task) -> tuple:
    """:func:`_predict` of ``task`` (key, family, params, sizes, registers) on ``model``:
    the modelling task an engine runs (:mod:`analysis.tune.engine`)."""
    key, family, params, sizes, registers = task
    return _predict((key, family, params, sizes, model, registers))


def model_bar(total: int, what: str, progress):
    """A progress bar on stderr of ``total`` candidates (``progress`` None: on a terminal
    only)."""
    from tqdm import tqdm

    return tqdm(total=total, desc=what, unit="candidate", file=sys.stderr,
                disable=None if progress is None else not progress)


def _model_all(todo, sizes, model, jobs, progress, on_result, registers=None,
               what="model") -> None:
    """Model ``todo`` ((index, candidate) pairs) in this process, calling
    ``on_result(index, result)`` as each finishes; ``registers``: index -> registers per
    work-item to model it with (the compiled kernel's; default: the estimate); ``jobs`` > 1:
    a pool of that many processes (:class:`analysis.tune.engine.LocalEngine`)."""
    registers = registers or {}
    tasks = [(i, c.family, c.params, sizes, registers.get(i)) for i, c in todo]
    with model_bar(len(tasks), f"{what} ({model.name})", progress) as bar:
        LocalEngine(jobs).model(predict_with, model, tasks, on_result, bar)


def measure_round(target, sch, repeat, warmup, seed, index, round_index,
                   before_launch: dict | None = None, reference_fn=None) -> dict:
    """One round of one candidate on the device: its launch times and check, or the
    failure (``failed``: stage, error_type, error). ``before_launch`` (candidate index ->
    :class:`simulator.engine.launch_check.LaunchCheck`) keeps each candidate's check before
    launch from its first round for the later ones: the check depends on the schedule only
    (input values do not change hazards), and takes seconds at large sizes.
    ``reference_fn``: a launch file's reference (``run_on_device``'s), else the GEMM's."""
    from tiletraffic.gpu.runtime.launch import (KernelBuildError, LaunchConfigError,
                                                LaunchError, ResultMismatchError)

    from tiletraffic.gpu.runtime.checked_run import UnsafeLaunchError, run_on_device

    stages = ((UnsafeLaunchError, "check before launch"),
              (KernelBuildError, "build"), (LaunchConfigError, "launch limits"),
              (LaunchError, "launch"), (ResultMismatchError, "check"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            run = run_on_device(target, sch, repeat=repeat, warmup=warmup,
                                rng=np.random.default_rng([seed, index, round_index]),
                                launch_check=(before_launch or {}).get(index),
                                reused=index in (before_launch or {}),
                                reference_fn=reference_fn)
        except Exception as err:  # recorded; the tuning goes on with the next candidate
            stage = next((s for t, s in stages if isinstance(err, t)), "error")
            return {"failed": {"stage": stage, "error_type": type(err).__name__,
                               "error": str(err)}}
    if before_launch is not None:
        before_launch[index] = run.launch_check
    r, c = run.run, run.check
    return {"round": round_index, "kernel_times_s": list(r.kernel_times_s),
            "median_s": r.median_s, "timing": r.timing, "build_time_s": r.build_time_s,
            "distinct_outputs": r.distinct_outputs,
            "check": {"ok": c.ok, "error_over_tolerance": c.error_over_tolerance,
                      "worst_index": list(c.worst_index) if c.worst_index else None,
                      "checked_launches": sorted(run.launch_checks or {})},
            "global_size": list(r.global_size), "local_size": list(r.local_size),
            "warnings": [str(w.message) for w in caught]}


def new_record(entry: dict) -> dict:
    """A measurement record of the prediction ``entry`` before its first round."""
    return {"label": entry["label"], "family": entry["family"], "params": entry["params"],
            "status": "incomplete", "rounds": [], "predicted_rank": entry["predicted_rank"],
            "predicted_time_s": entry["predicted_time_s"]}


def add_round(record: dict, result: dict, rounds: int, work: int) -> None:
    """Put one round's ``result`` into a measurement ``record``; after the last round the
    record gets status ``ok`` and its time and spread (``analysis.validation.measured_time``:
    median of all timed launches, spread the larger of their interquartile range and the
    difference of the rounds' medians); a failed round makes it ``failed``."""
    from tiletraffic.analysis.validation.compare import measured_time

    if "failed" in result:
        record.update(status="failed", failed_round=len(record["rounds"]), **result["failed"])
        return
    record["rounds"].append(result)
    if len(record["rounds"]) < rounds:
        return
    times = [t for r in record["rounds"] for t in r["kernel_times_s"]]
    measured = measured_time([r["kernel_times_s"] for r in record["rounds"]])
    worst = max(record["rounds"], key=lambda r: r["check"]["error_over_tolerance"])
    record.update(status="ok", median_s=measured.median_s, iqr_s=measured.iqr_s,
                  round_medians_s=list(measured.round_medians_s),
                  round_range_s=measured.round_range_s, spread_s=measured.spread_s,
                  min_s=min(times), max_s=max(times),
                  gflop_per_s=2 * work / measured.median_s / 1e9,
                  check={"ok": all(r["check"]["ok"] for r in record["rounds"]),
                         "error_over_tolerance": worst["check"]["error_over_tolerance"],
                         "worst_index": worst["check"]["worst_index"]})


def measure_task(target, cache, shape, sch, repeat, warmup, seed, index, round_index) -> dict:
    """One round of one candidate on a device worker (:func:`measure_round`); ``cache``
    (the worker's) keeps each candidate's check before launch per ``shape``."""
    return measure_round(target, sch, repeat, warmup, seed, index, round_index,
                         cache.setdefault(("tune gemm", shape), {}))


def _open_device(options: TuneOptions, engine):
    """The OpenCL device to measure (and recheck) on: ``options.device`` when something is
    measured or a device is named, else None (no device opened); the selection's warnings
    (a simulator chosen by number) go to the log. On a cluster, the device a worker opens
    (:class:`analysis.tune.cluster.RemoteDevice`)."""
    if not (options.measuring or options.device is not None):
        return None
    with warnings.catch_warnings(record=True) as caught:  # a simulator chosen by number
        warnings.simplefilter("always")
        target = engine.open_device(options.device)
    for w in caught:
        options.say(f"warning: {w.message}")
    return target


def _note_guesses(model, target, log) -> None:
    """Warn (through ``log``) of a ranking model with guessed values and of a device that
    is a simulator."""
    if model.guessed:
        log(f"warning: device model {model.name}: {len(model.guessed)} values are guesses "
            f"({', '.join(model.guessed)})")
    if target is not None and target.info.is_simulator:
        log(f"warning: {target.info.device_name} is a simulator: its times say nothing "
            "about hardware")


@dataclass(frozen=True)
class Setup:
    """What every shape of a tuning shares: the space, the targets, the device (or None),
    the ranking model and the limits, and where the work runs (the engine)."""

    space: TuningSpace
    judged_by: object
    target: object
    model: object
    limits: DeviceLimits
    engine: object


def prepare(options: TuneOptions, engine) -> Setup:
    """Read the space and the targets, open the device (``engine``'s), resolve the ranking
    model and the limits (warnings through ``options.log``).

    Raises:
        as :func:`tune`.
    """
    space = options.space if isinstance(options.space, TuningSpace) else \
        load_space(options.space)
    judged_by = load_targets(options.targets)
    target = _open_device(options, engine)
    model = ranking_model(options.device_model, target)
    _note_guesses(model, target, options.say)
    limits = combined_limits(target.limits if target is not None else None, model)
    return Setup(space, judged_by, target, model, limits, engine)


def screened(options: TuneOptions, setup: Setup) -> tuple[list, list]:
    """The valid candidates and the rejections of ``options``' sizes (:func:`screen`).

    Raises:
        TuneError: no valid candidate (the rejections counted by reason).
    """
    valid, rejected = screen(setup.space, *options.sizes, setup.limits, options.batch,
                             options.shared_b, options.dtype)
    if not valid:  # nothing to tune: no file written, none moved
        m, n, k = options.sizes
        raise TuneError(no_valid_message(
            f"no valid candidate in {setup.space.path} for M={m} N={n} K={k} on "
            f"{setup.limits.name}", rejected))
    return valid, rejected


def start(options: TuneOptions, setup: Setup, valid: list, rejected: list,
          shape: int | None = None):
    """The tuning of ``options``' sizes, its document begun: the earlier results file
    reused (``resume``) or moved to ``history/``, the seed drawn. ``shape``: its place
    among the shapes of one command (None: the only one).

    Raises:
        TuneError: an ``out`` a resumed tuning does not match.
    """
    meta = tuning_meta(options, setup.space, setup.model, setup.limits, setup.target,
                       setup.judged_by, setup.engine.describe())
    path = None if options.out is None else Path(options.out)
    old = previous(path, options.resume, meta, options.say)
    if old is not None:
        meta["resumed_from"] = old["meta"].get("created_utc")
    if meta["seed"] is None:
        meta["seed"] = int(np.random.SeedSequence().entropy % 2**63)
    return _Tuning(options, meta, setup, valid, rejected, path, old, shape)


def tune(options: TuneOptions) -> TuneResult:
    """Tune C = A·B as ``options`` asks (module docstring): screen the space's candidates,
    model and rank the valid ones, recheck the best with their compiled registers, measure
    the ``top`` on the device and judge the model; in this process or on a Ray cluster
    (``options.cluster``: :mod:`analysis.tune.cluster`), with the same results.

    Returns:
        :class:`TuneResult`.

    Raises:
        TuneError: no valid candidate (the message counts the rejections by reason; ``out``
            is then neither written nor moved); an ``out`` that a resumed tuning does not
            match or whose fields are malformed (:mod:`analysis.tune.results_file`).
        tiletraffic.analysis.tune.space.SpaceError: a malformed space file.
        tiletraffic.analysis.validation.targets.TargetsError: a malformed targets file.
        KeyError, DeviceModelError: an unknown device model or a malformed model file.
        tiletraffic.gpu.devices.device.DeviceError: no OpenCL device (or none matching
            ``options.device``).
        OSError: ``out`` cannot be written (found before any work starts).
        TuneInterrupted: Ctrl-C; what finished is saved.
        analysis.tune.cluster.ClusterSpecError, ClusterError: a bad ``cluster`` or Ray not
            installed; a cluster that cannot be reached or lost every device worker (what
            finished is saved).
    """
    with engine_for(options.cluster, options.jobs, options.device_workers,
                    options.say) as engine:
        setup = prepare(options, engine)
        candidates = screened(options, setup)
        lock = None if options.out is None else FolderLock.of_file(options.out)
        with held(lock, f"tuning results {options.out}", options.say):
            tuning = start(options, setup, *candidates)
            try:
                sweep.run_tunings([tuning], setup, options, predict_with)
            except KeyboardInterrupt:
                raise TuneInterrupted(tuning.path, tuning.result) from None
    return tuning.result


class _Tuning:
    """One tuning under way: its document (saved whole, atomically; module docstring), the
    valid candidates with their entries, what it shares with the other shapes (``setup``),
    the output path, the resumed document (or None) and its place among the shapes (None:
    the only one). Its
    steps (:func:`analysis.tune.sweep.run_tunings` calls them): :meth:`begin`,
    :meth:`modelled`, :meth:`choose`, :meth:`to_measure`, :meth:`work`, :meth:`measured`,
    :meth:`restart`, :meth:`finish`, :meth:`stop`."""

    def __init__(self, options: TuneOptions, meta: dict, setup: Setup, valid, rejected,
                 path: Path | None, old: dict | None, shape: int | None = None):
        self.options, self.setup, self.valid, self.rejected = options, setup, valid, rejected
        self.model, self.target, self.path, self.old = setup.model, setup.target, path, old
        self.shape = shape
        self.doc = {"meta": meta, "status": "modelling", "valid_candidates": len(valid),
                    "rejected": rejected, "predictions": [], "measurements": [],
                    "summary": None}
        self.result = TuneResult(self.doc, path)
        self.entries = [{"label": cand.label, "family": cand.family, "params": cand.options,
                         "order": i} for i, (cand, _) in enumerate(valid)]
        self.by_label = {c.label: (i, s) for i, (c, s) in enumerate(valid)}
        self.records: dict = {}
        self.chosen: list = []
        self.fresh: set = set()
        self.modelled_count = self.unsaved_count = 0
        self.saved_at = monotonic()

    def save(self) -> None:
        """Summarize the document and write it to the output file (if any)."""
        self.doc["summary"] = tuning_stats.summarize(self.doc)
        if self.path is not None:
            atomic_write_text(self.path, json.dumps(self.doc, indent=1))
        self.unsaved_count, self.saved_at = 0, monotonic()

    def save_modelled(self) -> None:
        """Save after a finished candidate of the modelling when :data:`SAVE_INTERVAL_S`
        seconds have passed since the last write or the candidates not yet written number
        more than an eighth of those modelled (module docstring)."""
        self.modelled_count += 1
        self.unsaved_count += 1
        if self.unsaved_count > self.modelled_count // 8 or \
                monotonic() - self.saved_at >= SAVE_INTERVAL_S:
            self.save()

    def flush(self) -> None:
        """Write what finished and is not written yet (an error ends the tuning)."""
        if self.unsaved_count:
            self.save()

    def begin(self) -> list:
        """Save the document as begun (proving the file can be written before the long
        work starts), take what a resumed document modelled; the (index, candidate) pairs
        left to model."""
        self.save()
        self._reuse_predictions()
        return [(i, self.valid[i][0]) for i, e in enumerate(self.entries)
                if "predicted_time_s" not in e]

    def _reuse_predictions(self) -> None:
        """Take the predictions a resumed document made (its estimate-based pass) and say
        how many candidates are modelled (and that large sizes model slowly)."""
        options, model = self.options, self.model
        reused = {p["label"]: {**p, **tuning_recheck.first_pass(p)}
                  for p in (self.old or {}).get("predictions", [])
                  if p.get("predicted_time_s") is not None}
        for entry in self.entries:
            if entry["label"] in reused:
                entry.update({key: reused[entry["label"]].get(key) for key in PREDICTION_KEYS})
                self.doc["predictions"].append(entry)
        m, n, k = options.sizes
        options.say(("" if self.shape is None else f"M={m} N={n} K={k}: ")
                    + f"{self.setup.space.size} candidates: {len(self.rejected)} rejected "
                    f"before launch, {len(self.valid)} valid; modelling "
                    f"{sum('predicted_time_s' not in e for e in self.entries)} on "
                    f"{model.name}" + (f" ({len(reused)} reused)" if reused else ""))
        work = m * n * k
        if work >= SLOW_MODEL_WORK and options.jobs == 1 and options.cluster is None:
            options.say(f"note: at M·N·K = {work:.3g} a candidate takes about 1-9 s to "
                        "model; --jobs N models N at once (what finished is saved)")

    def modelled(self, index: int, res: dict) -> None:
        """Record candidate ``index``'s prediction (or the model's refusal) and save
        (:meth:`save_modelled`)."""
        entry = self.entries[index]
        if "error" in res:
            self.rejected.append({key: entry[key] for key in ("label", "family", "params")} | {
                "stage": "model", "reasons": [f"{res['error_type']}: {res['error']}"],
                "whys": [f"the model refused it ({res['error_type']})"]})
        else:
            entry.update(res)
            entry["estimate"] = {key: res[key] for key in tuning_recheck.FIRST_PASS_KEYS}
            self.doc["predictions"].append(entry)
        self.save_modelled()

    def _remodel(self, todo, on_result) -> None:
        """Model ``todo`` ((index, registers) pairs) again with the compiled registers (in
        this process: a few candidates)."""
        options = self.options
        _model_all([(i, self.valid[i][0]) for i, _ in todo], options.problem, self.model,
                   options.jobs, options.progress, on_result, registers=dict(todo),
                   what="re-model with compiled registers")

    def _recheck(self, ranked: list) -> list:
        """The ranking after the recheck (:mod:`analysis.tune.recheck`) of the best-ranked
        on the device; ``ranked`` itself where nothing is rechecked."""
        options, recheck = self.options, self.options.recheck
        count = tuning_recheck.default_count(options.top, len(ranked)) if recheck is None \
            else min(recheck, len(ranked))
        if self.target is None and recheck:
            options.say(f"note: --recheck {recheck} needs a device to build on: not "
                        "rechecked (the ranking is estimate-based)")
        if self.target is None or count <= 0:
            return ranked
        self.doc["status"] = "rechecking"
        tuning_recheck.recheck(self.doc, self.valid, self.target, count, self._remodel,
                               old=self.old, progress=options.progress, save=self.save,
                               build=self.setup.engine.build)
        return self.doc["predictions"]

    def choose(self) -> None:
        """After the modelling: the model's refusals in the space's order (whatever order
        they finished in), the ranking, the recheck; the candidates to measure
        (:attr:`chosen`) with what a resumed document measured of them."""
        import copy

        doc, options = self.doc, self.options
        order = {e["label"]: e["order"] for e in self.entries}
        refused = sorted((r for r in self.rejected if r["stage"] == "model"),
                         key=lambda r: order[r["label"]])
        self.rejected[:] = [r for r in self.rejected if r["stage"] != "model"] + refused
        ranked = self._recheck(tuning_recheck.rank(doc))
        doc["status"] = "measuring" if options.measuring else "complete"
        self.save()
        if not options.measuring:
            return
        self.chosen = ranked if options.measure_all else ranked[:options.top]
        rank = {e["label"]: e for e in doc["predictions"]}
        for record in (self.old or {}).get("measurements", []):
            if record["label"] in rank:
                record = self.records[record["label"]] = copy.deepcopy(record)
                entry = rank[record["label"]]
                record.update(predicted_rank=entry["predicted_rank"],
                              predicted_time_s=entry["predicted_time_s"])
                doc["measurements"].append(record)

    def to_measure(self) -> list[tuple[str, int]]:
        """(label, rounds it has) of each chosen candidate with rounds left to measure, in
        rank order."""
        out = []
        for entry in self.chosen:
            record = self.records.get(entry["label"], {"status": "incomplete", "rounds": []})
            if record["status"] != "failed" and len(record["rounds"]) < self.options.rounds:
                out.append((entry["label"], len(record["rounds"])))
        return out

    def work(self, label: str, round_index: int) -> tuple:
        """What a device worker runs for round ``round_index`` of ``label``:
        (:func:`measure_task`, its arguments)."""
        o = self.options
        index, sch = self.by_label[label]
        return measure_task, (self.shape, sch, o.repeat, o.warmup, self.doc["meta"]["seed"],
                              index, round_index)

    def measured(self, label: str, round_index: int, result: dict, worker: dict | None):
        """Record round ``round_index`` of ``label`` (``worker``: the device worker that
        measured it, on a cluster) and save. Records are kept in rank order, after those a
        resumed document holds."""
        record = self.records.get(label)
        if record is None:
            rank = {e["label"]: place for place, e in enumerate(self.chosen)}
            record = self.records[label] = new_record(self.chosen[rank[label]])
            self.fresh.add(label)
            self.doc["measurements"].append(record)
            self.doc["measurements"].sort(key=lambda r: (r["label"] in self.fresh,
                                                         rank.get(r["label"], -1)))
        if worker is not None:
            record["worker"] = worker
            if "failed" in result:
                f = result["failed"]
                self.options.say(f"{label}: {f['stage']} failed on device worker "
                                 f"{worker['worker']} ({worker['device']} on "
                                 f"{worker['host']}): {f['error_type']}: {f['error']}")
            else:
                result = {**result, "worker": worker["worker"]}
        add_round(record, result, self.options.rounds, self.options.m * self.options.n *
                  self.options.k)
        self.save()

    def restart(self, label: str, kept: int, why: str) -> None:
        """``label`` goes to another device worker (``why``): only its first ``kept``
        rounds stay."""
        record = self.records.get(label)
        if record is not None:
            record["rounds"] = record["rounds"][:kept]
            record["status"] = "incomplete"
            record.setdefault("restarts", []).append(why)
            self.save()

    def finish(self) -> None:
        """The tuning is complete: saved so (once)."""
        if self.doc["status"] != "complete":
            self.doc["status"] = "complete"
            self.save()

    def stop(self, status: str = "interrupted") -> None:
        """Save what finished, ranked, with ``status``."""
        self.doc["status"] = status
        tuning_recheck.rank(self.doc)  # what was modelled, ranked among itself
        self.save()
