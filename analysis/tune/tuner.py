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
   (``jobs``); a candidate the model refuses (a limit or hazard) is a rejection of stage
   ``model``. Rank by predicted time (ties: the space's order).
   **Recheck** (:mod:`analysis.tune.recheck`) the ``recheck`` best-ranked on the target
   device: build each (compile only), read its compiled registers where the driver reports
   them, re-model it with them and re-rank; a failed build is a rejection of stage
   ``build``.
3. **Measure** the ``top`` best-ranked (or all: ``measure_all``) on the OpenCL device with
   :func:`gpu.runtime.checked_run.run_on_device`, which checks every launch against float64 before
   its time counts. A candidate that fails to build, launch or check is recorded as failed
   with the message and the tuning goes on.
4. **Judge** the model (:func:`analysis.tune.stats.summarize`): regret of its pick against
   the best measured candidate, rank correlation, resolvable pairs, over the measured
   candidates only.

Results are a JSON document written atomically (:mod:`analysis.files`) after every finished
candidate, so Ctrl-C keeps what finished (:class:`TuneInterrupted`). An existing output file
is never overwritten: it is moved to ``history/`` beside it first, or, with ``resume``, its
predictions and measurements are reused when it tuned the same problem (sizes, space file,
device model, device, launches per candidate).
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tiletraffic.simulator.engine.limits import DeviceLimits, launch_limit_problems
from tiletraffic.simulator.kernels.families import INT32_MAX, ScheduleError
from tiletraffic.simulator.ir.sequence import kernels_of

from tiletraffic.analysis.tune import (results_file as tuning_file, recheck as tuning_recheck,
                                       stats as tuning_stats)
from tiletraffic.analysis.files import (ResultsFileError, archive_previous, atomic_write_text,
                                        read_json_object)
from tiletraffic.analysis.validation.targets import load as load_targets
from tiletraffic.analysis.tune.space import TuningSpace, check_candidate, load_space

DEFAULT_TOP = 8
DEFAULT_MODEL = "nvidia-h200"
"""The device model when no device is measured and none is named (as ``tiletraffic model``)."""
SLOW_MODEL_WORK = 1024 ** 3
"""From this M·N·K on, a note says modelling is slow (14-400 s per register-blocked case at
N = 4096 on 2 cores when the tuner was written)."""
FORMAT = 2
"""Version of the JSON document's layout (2: the recheck's ``recheck`` and per-prediction
fields, :mod:`analysis.tune.recheck`; a format-1 file resumes as one without them)."""
RESUME_KEYS = ("operation", "m", "n", "k", "space_sha256", "device_model_sha256")
MEASURE_KEYS = ("device_slug", "repeat", "warmup", "rounds", "seed")
RESUME_WORDS = {"operation": "the operation", "m": "--m", "n": "--n", "k": "--k",
                "space_sha256": "the space file (--space)",
                "device_model_sha256": "the device model (--device-model)",
                "device_slug": "the device (--device)", "repeat": "--repeat",
                "warmup": "--warmup", "rounds": "--rounds", "seed": "--seed"}
"""How a refused --resume names each of :data:`RESUME_KEYS` and :data:`MEASURE_KEYS`: the
option that sets it."""
PREDICTION_KEYS = ("predicted_time_s", "bound", "resident_work_groups_per_cu",
                   "registers_per_work_item", "model_s", "model_warnings")


class TuneError(ValueError):
    """A tuning that cannot start: bad sizes or options, a space with no valid candidate,
    an output file that a resumed tuning does not match. The message names the value."""


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


def _check_sizes(m, n, k) -> None:
    for name, v in (("M", m), ("N", n), ("K", k)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise TuneError(f"{name} must be a positive integer, got {v!r}")
    for what, v in (("M*K", m * k), ("K*N", k * n), ("M*N", m * n)):
        if v > INT32_MAX:
            raise TuneError(f"{what} = {v} exceeds the 32-bit int index limit {INT32_MAX} "
                            "of the generated kernels")


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
    the built-in model of its kind), else :data:`DEFAULT_MODEL`.

    Raises:
        KeyError, DeviceModelError: an unknown name, a bad model file (as
            :func:`tiletraffic.simulator.model.device_model.device_model` raises).
    """
    from tiletraffic.simulator.model.device_model import device_model as _model
    if device_model is not None:
        return _model(device_model)
    if target is not None:
        from tiletraffic.gpu.devices.device_models import model_from_opencl
        return model_from_opencl(target.info)
    return _model(DEFAULT_MODEL)


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


def screen(space: TuningSpace, m: int, n: int, k: int, limits: DeviceLimits):
    """Split the candidates of ``space`` into valid ones (candidate, schedule) and
    rejections (dicts with label, family, params, stage ``constraint``/``builder``/
    ``limits``, ``reasons`` (full text) and ``whys`` (grouping keys)).

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
            sch = cand.build(m, n, k)
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


_WORKER_MODEL = None


def _init_worker(model) -> None:
    import signal

    global _WORKER_MODEL
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C
    _WORKER_MODEL = model


def _predict(task) -> tuple[int, dict]:
    """Model one candidate: (index, prediction or error). Runs in a worker or in-process."""
    import time

    from tiletraffic.simulator.model.device_model import GuessedValueWarning
    from tiletraffic.simulator.model.sequence_run import model_sequence

    index, family, params, (m, n, k), model, registers = task
    model = model if model is not None else _WORKER_MODEL
    from tiletraffic.analysis.tune.space import Candidate
    start = time.perf_counter()
    try:
        sch = Candidate(family, tuple(params)).build(m, n, k)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            p = model_sequence(sch, model, registers_per_work_item=registers).prediction
    except Exception as err:  # any refusal (limit, hazard) rejects this candidate only
        return index, {"error_type": type(err).__name__, "error": str(err)}
    notes = list(dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught
                               if not issubclass(w.category, GuessedValueWarning)))
    return index, {"predicted_time_s": p.predicted_time_s, "bound": p.bound,
                   "resident_work_groups_per_cu": p.resident_work_groups_per_cu,
                   "registers_per_work_item": p.registers_per_work_item,
                   "model_s": time.perf_counter() - start, "model_warnings": notes}


def _model_all(todo, sizes, model, jobs, progress, on_result, registers=None,
               what="model") -> None:
    """Model ``todo`` ((index, candidate) pairs), calling ``on_result(index, result)`` as
    each finishes; ``registers``: index -> registers per work-item to model it with (the
    compiled kernel's; default: the estimate); ``jobs`` > 1: a pool of that many processes
    (spawned, so no OpenCL state is inherited), terminated on Ctrl-C."""
    from tqdm import tqdm

    registers = registers or {}
    tasks = [(i, c.family, c.params, sizes, None if jobs > 1 else model, registers.get(i))
             for i, c in todo]
    bar = tqdm(total=len(tasks), desc=f"{what} ({model.name})", unit="candidate",
               file=sys.stderr, disable=None if progress is None else not progress)
    try:
        if jobs == 1:
            for task in tasks:
                on_result(*_predict(task))
                bar.update(1)
            return
        import multiprocessing

        pool = multiprocessing.get_context("spawn").Pool(jobs, _init_worker, (model,))
        try:
            for index, result in pool.imap_unordered(_predict, tasks):
                on_result(index, result)
                bar.update(1)
            pool.close()
        except BaseException:
            pool.terminate()
            raise
        finally:
            pool.join()
    finally:
        bar.close()


def _measure_round(target, sch, repeat, warmup, seed, index, round_index,
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


def _add_round(record: dict, result: dict, rounds: int, work: int) -> None:
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


def _measure_chosen(doc, chosen, valid, old, target, sizes, repeat, warmup, rounds, seed,
                    progress, save) -> None:
    """Measure the ``chosen`` predictions into ``doc["measurements"]`` in ``rounds``
    rounds (each runs every chosen candidate once, in rank order, every other round in
    reverse, as ``tiletraffic validate`` does, so a drift of the device's speed shows in the
    spread), saving after every candidate of every round. What the resumed document ``old``
    holds is kept (also candidates not chosen this time) and only missing rounds are run."""
    import copy

    from tqdm import tqdm

    by_label = {c.label: (i, s) for i, (c, s) in enumerate(valid)}
    records = {r["label"]: copy.deepcopy(r) for r in (old or {}).get("measurements", [])}
    rank = {e["label"]: e for e in doc["predictions"]}
    for label, record in records.items():
        if label in rank:
            record.update(predicted_rank=rank[label]["predicted_rank"],
                          predicted_time_s=rank[label]["predicted_time_s"])
            doc["measurements"].append(record)
    todo = sum(max(0, rounds - len(records.get(e["label"], {}).get("rounds", [])))
               for e in chosen if records.get(e["label"], {}).get("status") != "failed")
    m, n, k = sizes
    before_launch: dict = {}
    with tqdm(total=todo, desc=f"measure ({target.info.device_name})", unit="run",
              file=sys.stderr, disable=None if progress is None else not progress) as bar:
        for r in range(rounds):
            for entry in (chosen if r % 2 == 0 else chosen[::-1]):
                record = records.get(entry["label"])
                if record is None:
                    record = records[entry["label"]] = {
                        "label": entry["label"], "family": entry["family"],
                        "params": entry["params"], "status": "incomplete", "rounds": [],
                        "predicted_rank": entry["predicted_rank"],
                        "predicted_time_s": entry["predicted_time_s"]}
                    doc["measurements"].append(record)
                if record["status"] == "failed" or len(record["rounds"]) > r:
                    continue
                index, sch = by_label[entry["label"]]
                _add_round(record, _measure_round(target, sch, repeat, warmup, seed, index, r,
                                                  before_launch), rounds, m * n * k)
                bar.update(1)
                save()


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _resumable(path: Path) -> dict:
    """The tuning document in ``path``, every field a resumed tuning reuses there and of
    its type (:mod:`analysis.tune.results_file`).

    Raises:
        TuneError: it cannot be read, is not a JSON object or a field is missing or of
            another type; one line naming the file and the field.
    """
    again = "give another --out or drop --resume"
    try:
        old = read_json_object(path, "a tuning file")
    except ResultsFileError as err:
        raise TuneError(f"cannot resume from {err}; {again}") from None
    except OSError as err:
        raise TuneError(f"{path}: cannot resume from it ({err.strerror or err}); "
                        f"{again}") from None
    problem = tuning_file.problem(old)
    if problem is not None:
        raise TuneError(f"{path}: cannot resume from it ({problem}); {again}")
    return old


def _said(value) -> str:
    """A recorded option's value as a message says it (none: not given)."""
    return "none" if value is None else str(value)


def _previous(path: Path | None, resume: bool, meta: dict, log) -> dict | None:
    """Reuse (``resume``) or move away an existing output file; the reused document (its
    fields checked: :func:`_resumable`)."""
    if path is None or not path.exists():
        if resume and path is not None:
            log(f"note: {path} does not exist yet: starting afresh")
        return None
    if resume:
        old = _resumable(path)
        old_meta = old["meta"]
        if meta["seed"] is None:  # the seed the earlier measurements were drawn with
            meta["seed"] = old_meta.get("seed")
        keys = RESUME_KEYS + (MEASURE_KEYS if old.get("measurements") else ())
        differ = [f"{RESUME_WORDS[key]} differs" if key.endswith("_sha256") else
                  f"{RESUME_WORDS[key]} was {_said(old_meta.get(key))}, "
                  f"now {_said(meta.get(key))}" for key in keys if old_meta.get(key) != meta.get(key)]
        if differ:
            raise TuneError(f"{path} holds another tuning ({'; '.join(differ)}): it cannot "
                            "be resumed; give another --out or drop --resume (the old file "
                            "is then moved to history/)")
        return old
    moved = archive_previous(path)
    log(f"note: the earlier results in {path} were moved to {moved}")
    meta["previous_results_moved_to"] = str(moved)
    return None


def _meta(m, n, k, space, model, limits, target, command, **options) -> dict:
    """The ``meta`` of a tuning document: problem, software, space, model, limits, device
    and ``options`` (top, measure_all, repeat, warmup, seed, jobs)."""
    from importlib import metadata

    from tiletraffic.simulator.model.device_model import to_toml

    try:
        version = metadata.version("tiletraffic")
    except metadata.PackageNotFoundError:
        version = None
    return {
        "format": FORMAT, "operation": "gemm", "m": m, "n": n, "k": k,
        "created_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": command, "tiletraffic": version,
        "space": space.path, "space_sha256": space.sha256, "space_candidates": space.size,
        "device_model": model.name, "device_model_sha256": _digest(to_toml(model)),
        "device_model_guessed": list(model.guessed),
        "limits": {"name": limits.name, "max_work_group_size": limits.max_work_group_size,
                   "max_work_item_sizes": list(limits.max_work_item_sizes),
                   "local_mem_bytes": limits.local_mem_bytes},
        "device": None if target is None else {
            "id": target.info.id, "name": target.info.device_name,
            "platform": target.info.platform_name, "is_simulator": target.info.is_simulator,
            "driver_version": target.info.driver_version},
        "device_slug": None if target is None else target.slug,
        **options,
    }


def tune(m: int, n: int, k: int, *, device: str | None = None, device_model=None,
         top: int = DEFAULT_TOP, out=None, repeat: int = 10, warmup: int = 2, rounds: int = 2,
         space=None, jobs: int = 1, measure_all: bool = False, resume: bool = False,
         seed: int | None = None, progress: bool | None = False, log=None,
         command: str | None = None, recheck: int | None = None,
         targets=None) -> TuneResult:
    """Tune C = A·B (A M×K, B K×N, row-major float32) over a tuning space (module docstring).

    Args:
        m, n, k: sizes.
        device: OpenCL device to measure on (``"P:D"`` or part of a name; None: the default
            device). Not opened when nothing is measured (``top=0`` and not ``measure_all``).
        device_model: built-in name, file or ``DeviceModel`` that ranks the candidates;
            default: the measured device's model (``tiletraffic device-model --device D``:
            its queried values completed from a built-in model), else ``nvidia-h200``.
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
        seed: of the random inputs (candidate i in round r gets ``default_rng([seed, i, r])``); None: a
            fresh seed, recorded in the results.
        progress: progress bars on stderr (None: on a terminal only).
        log: function taking a line of notes (moved files, guessed model values); None:
            silent.
        command: the command line to record (default: a description of this call).
        recheck: best-ranked candidates to build on the device before measuring, re-model
            with their compiled registers (where the driver reports them) and re-rank
            (:mod:`analysis.tune.recheck`); None: 4 x ``top``; at most the modelled
            ones; 0: none. Needs a device (ignored without one).
        targets: the limits the tuning is judged by (``tune-regret``, and ``ranking`` for
            resolvable pairs; :mod:`analysis.validation.targets`): a file or ``Targets``; default the
            built-in ones. Recorded in ``meta.targets``.

    Returns:
        :class:`TuneResult`.

    Raises:
        TuneError: a size not a positive integer or beyond 32-bit indexing; ``top`` < 0,
            ``jobs`` < 1, ``repeat``, ``warmup`` or ``rounds`` outside their limits
            (:mod:`tiletraffic.gpu.runtime.launch_counts`), ``recheck`` < 0; no valid candidate
            (the message counts the rejections by reason; ``out`` is then neither written
            nor moved); an ``out`` that a resumed tuning does not match or whose fields
            are malformed (:mod:`analysis.tune.results_file`).
        tiletraffic.analysis.tune.space.SpaceError: a malformed space file.
        tiletraffic.analysis.validation.targets.TargetsError: a malformed targets file.
        KeyError, DeviceModelError: an unknown device model or a malformed model file.
        tiletraffic.gpu.devices.device.DeviceError: no OpenCL device (or none matching ``device``).
        OSError: ``out`` cannot be written (found before any work starts).
        TuneInterrupted: Ctrl-C; what finished is saved.
    """
    from tiletraffic.gpu.runtime.launch_counts import (repeat_problem, rounds_problem,
                                                       warmup_problem)

    log = log or (lambda line: None)
    _check_sizes(m, n, k)
    for name, value, least in (("top", top, 0), ("jobs", jobs, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise TuneError(f"{name} must be an integer >= {least}, got {value!r}")
    if (problem := repeat_problem(repeat) or warmup_problem(warmup)
            or rounds_problem(rounds)) is not None:
        raise TuneError(problem)
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise TuneError(f"seed must be a non-negative integer, got {seed!r}")
    if recheck is not None and (isinstance(recheck, bool) or not isinstance(recheck, int)
                                or recheck < 0):
        raise TuneError(f"recheck must be an integer >= 0, got {recheck!r}")
    space = space if isinstance(space, TuningSpace) else load_space(space)
    limits_judged = load_targets(targets)
    measuring = top > 0 or measure_all
    target = None
    if measuring or device is not None:
        from tiletraffic.gpu.devices.device import select_device

        with warnings.catch_warnings(record=True) as caught:  # a simulator chosen by number
            warnings.simplefilter("always")
            target = select_device(device)
        for w in caught:
            log(f"warning: {w.message}")
    model = ranking_model(device_model, target)
    if model.guessed:
        log(f"warning: device model {model.name}: {len(model.guessed)} values are guesses "
            f"({', '.join(model.guessed)})")
    if target is not None and target.info.is_simulator:
        log(f"warning: {target.info.device_name} is a simulator: its times say nothing "
            "about hardware")
    limits = combined_limits(target.limits if target is not None else None, model)
    meta = _meta(m, n, k, space, model, limits, target, command or (
        f"tiletraffic.tune({m}, {n}, {k}, device={device!r}, top={top}, "
        f"measure_all={measure_all})"), top=top, measure_all=measure_all, repeat=repeat,
        warmup=warmup, rounds=rounds, seed=seed, jobs=jobs, recheck=recheck,
        targets=limits_judged.to_dict())
    if target is not None:
        from tiletraffic.gpu.devices.device_models import model_fit_meta
        meta.update(model_fit_meta(model, target.info))
    path = None if out is None else Path(out)
    valid, rejected = screen(space, m, n, k, limits)
    if not valid:  # nothing to tune: no file written, none moved
        raise TuneError(no_valid_message(
            f"no valid candidate in {space.path} for M={m} N={n} K={k} on {limits.name}",
            rejected))
    old = _previous(path, resume, meta, log)
    if old is not None:
        meta["resumed_from"] = old["meta"].get("created_utc")
    if meta["seed"] is None:
        meta["seed"] = int(np.random.SeedSequence().entropy % 2**63)
    seed = meta["seed"]

    doc = {"meta": meta, "status": "modelling", "valid_candidates": len(valid),
           "rejected": rejected, "predictions": [], "measurements": [], "summary": None}
    result = TuneResult(doc, path)

    def save():
        doc["summary"] = tuning_stats.summarize(doc)
        if path is not None:
            atomic_write_text(path, json.dumps(doc, indent=1))

    save()  # proves the file can be written before the long work starts
    reused = {p["label"]: {**p, **tuning_recheck.first_pass(p)}  # the estimate-based pass
              for p in (old or {}).get("predictions", [])
              if p.get("predicted_time_s") is not None}
    entries = [{"label": cand.label, "family": cand.family, "params": cand.options,
                "order": i} for i, (cand, _) in enumerate(valid)]
    for entry in entries:
        if entry["label"] in reused:
            entry.update({key: reused[entry["label"]].get(key) for key in PREDICTION_KEYS})
            doc["predictions"].append(entry)
    log(f"{space.size} candidates: {len(rejected)} rejected before launch, {len(valid)} "
        f"valid; modelling {sum('predicted_time_s' not in e for e in entries)} on "
        f"{model.name}" + (f" ({len(reused)} reused)" if reused else ""))

    if m * n * k >= SLOW_MODEL_WORK and jobs == 1:
        log(f"note: at M·N·K = {m * n * k:.3g} a candidate takes about 1-9 s to model; "
            "--jobs N models N at once (each finished one is saved)")

    def modelled(index, res):
        entry = entries[index]
        if "error" in res:
            rejected.append({key: entry[key] for key in ("label", "family", "params")} | {
                "stage": "model", "reasons": [f"{res['error_type']}: {res['error']}"],
                "whys": [f"the model refused it ({res['error_type']})"]})
        else:
            entry.update(res)
            entry["estimate"] = {key: res[key] for key in tuning_recheck.FIRST_PASS_KEYS}
            doc["predictions"].append(entry)
        save()

    def remodel(todo, on_result):
        _model_all([(i, valid[i][0]) for i, _ in todo], (m, n, k), model, jobs, progress,
                   on_result, registers=dict(todo), what="re-model with compiled registers")

    try:
        _model_all([(i, valid[i][0]) for i, e in enumerate(entries)
                    if "predicted_time_s" not in e], (m, n, k), model, jobs, progress,
                   modelled)
        ranked = tuning_recheck.rank(doc)
        count = tuning_recheck.default_count(top, len(ranked)) if recheck is None else \
            min(recheck, len(ranked))
        if target is None and recheck:
            log(f"note: --recheck {recheck} needs a device to build on: not rechecked "
                "(the ranking is estimate-based)")
        if target is not None and count > 0:
            doc["status"] = "rechecking"
            tuning_recheck.recheck(doc, valid, target, count, remodel, old=old,
                                   progress=progress, save=save)
            ranked = doc["predictions"]
        doc["status"] = "measuring" if measuring else "complete"
        save()
        if measuring:
            chosen = ranked if measure_all else ranked[:top]
            _measure_chosen(doc, chosen, valid, old, target, (m, n, k), repeat, warmup,
                            rounds, seed, progress, save)
            doc["status"] = "complete"
            save()
    except KeyboardInterrupt:
        doc["status"] = "interrupted"
        tuning_recheck.rank(doc)  # what was modelled, ranked among itself
        save()
        raise TuneInterrupted(path, result) from None
    return result
