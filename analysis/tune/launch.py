"""Tuning an OpenCL C kernel's own macros: ``tiletraffic tune LAUNCH.toml --param TS=8,16,32
--param WPT=1,2,4 --constraint "TS % WPT == 0"``.

Every combination of the parameters' values is a candidate. Each is

1. screened: its constraints (expressions over the launch file's names and the parameters,
   :mod:`frontend.expressions`) must hold, its launch file must give a schedule with the
   parameters as ``-DNAME=value`` (sizes, launch geometry and shapes may use them; a kernel
   outside the front end's subset, an NDRange that is not a multiple, a local size other
   than the kernel's ``reqd_work_group_size``, ... reject it), and it must fit the device
   model's and the device's limits;
2. modelled (:func:`tiletraffic.model`) and ranked by predicted time;
3. the best ``top`` are checked for hazards in the simulator (one work-group per class of
   identical traffic: races in local memory, barrier divergence, out-of-bounds and
   misaligned accesses, uninitialized reads), then run on the device, every
   launch's output checked against the launch file's numpy reference before its time counts
   (:func:`gpu.runtime.checked_run.run_on_device`), in ``rounds`` rounds (every other one in
   reverse);
4. summarized as ``tune gemm`` is (:func:`analysis.tune.stats.summarize`): the model's
   pick, the best measured, the regret over the measured candidates.

Kernel Tuner and CLBlast's tuners measure every candidate; this one measures ``top``.
Results are written atomically to ``out`` after every step. With ``cluster`` the modelling
runs as Ray tasks and the measuring on one worker per device
(:mod:`analysis.tune.cluster`), with the same results.
"""
from __future__ import annotations

import datetime as _dt
import itertools
import json
import math
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tiletraffic.frontend.opencl.clang_ast import integer_literal
from tiletraffic.frontend.opencl.translate import FrontendError
from tiletraffic.simulator.engine.accelerators import ALL
from tiletraffic.simulator.engine.accelerators.class_safety import classes_problem
from tiletraffic.simulator.engine.limits import LimitError, check_schedule_limits
from tiletraffic.simulator.ir.nodes import ScheduleError
from tiletraffic.simulator.model.sequence_run import model_sequence, simulate

from tiletraffic.frontend import expressions, launch_file
from tiletraffic.analysis.tune import stats as tuning_stats
from tiletraffic.analysis.files import (FolderLock, archive_previous, atomic_write_text,
                                        check_writable, held, refuse_non_file)
from tiletraffic.analysis.tune.options import TuneError
from tiletraffic.analysis.tune.tuner import (add_round, combined_limits, measure_round,
                                             new_record, no_valid_message, ranking_model)

MAX_CANDIDATES = 4096
"""Most combinations one tuning may enumerate."""


def parse_params(items) -> dict[str, list[int]]:
    """``["TS=8,16,32", "WPT=1,2"]`` as ``{"TS": [8, 16, 32], "WPT": [1, 2]}``.

    Raises:
        TuneError: an item without ``=``, a name repeated or not an identifier, a value
            that is not a C integer literal (decimal, ``0x`` hexadecimal; an optional sign
            and suffix) or is an octal one (``010``).
    """
    out: dict[str, list[int]] = {}
    for item in items:
        name, eq, values = item.partition("=")
        name = name.strip()
        if not eq or not name.isidentifier():
            raise TuneError(f"--param {item!r}: write NAME=V1,V2,...")
        if name in out:
            raise TuneError(f"--param {name} given twice")
        try:
            numbers = [integer_literal(v.strip(), signed=True) for v in values.split(",")
                       if v.strip()]
        except FrontendError as err:
            raise TuneError(f"--param {item!r}: {err}") from None
        if None in numbers:
            raise TuneError(f"--param {item!r}: values must be integers")
        out[name] = numbers
        if not out[name]:
            raise TuneError(f"--param {item!r}: no values")
    if not out:
        raise TuneError("give at least one --param NAME=V1,V2,...")
    return out


def distinct_values(params: dict[str, list[int]], log) -> dict[str, list[int]]:
    """``params`` with each value of a parameter kept once, in the order given; a value
    given more than once is noted (one line per parameter) through ``log``."""
    out = {}
    for name, values in params.items():
        out[name] = list(dict.fromkeys(values))
        repeated = [v for v in out[name] if values.count(v) > 1]
        if repeated:
            log(f"note: --param {name}: {', '.join(map(str, repeated))} given more than "
                f"once; each value is tried once")
    return out


REJECTION_KEY_CHARS = 80
"""The longest key a builder's refusal is grouped by in a "no valid candidate" message."""


def rejection_key(message: str) -> str:
    """The key by which a builder's refusal ``message`` is grouped: the message less its
    first two places (``launch.toml: --param NAME: ``), up to its first ``; ``, cut at a
    word to at most :data:`REJECTION_KEY_CHARS` characters (``…`` marking a cut)."""
    key = message.split(": ", 2)[-1].split("; ", 1)[0]
    if len(key) <= REJECTION_KEY_CHARS:
        return key
    return key[:REJECTION_KEY_CHARS - 1].rsplit(" ", 1)[0].rstrip(" ,;:(") + " …"


def _label(params: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items())


def _reject(rejected, params, stage, why, reason=None):
    rejected.append({"label": _label(params), "family": "", "params": params, "stage": stage,
                     "whys": [why], "reasons": [reason or why]})


def _check_params_used(launch: launch_file.LaunchFile, params: dict[str, list[int]]) -> None:
    """Refuse a parameter that neither the kernel's source (its identifiers, included files
    and preprocessor lines too) nor the launch file's expressions use: every value of it
    would build the same kernel; or one the source ``#define``s again, whose ``-D`` value
    is replaced by the source's. ``launch`` is read with the parameters' first values.

    Raises:
        TuneError: the first such parameter, with the names it could have been, or with
            the place of the source's ``#define``.
    """
    if launch.language == "cuda":
        from tiletraffic.frontend.cuda.translate import source_names
    else:
        from tiletraffic.frontend.opencl.translate import source_names
    try:
        names = source_names(launch.source(), str(launch.source_path), launch.build_options())
    except (OSError, FrontendError):
        return                                 # building the candidates reports it
    used = names.identifiers | launch_file.names_read(launch)
    macros = dict.fromkeys([*launch.macros, *names.defined_macros])
    for name in params:
        if name in names.redefined:
            raise TuneError(f"--param {name}: {names.redefined[name]} #defines {name} itself, "
                            f"which replaces every -D{name}=value, so every value builds the "
                            f"same kernel; guard that #define with #ifndef {name} ... #endif "
                            "to tune it")
        if name not in used:
            raise TuneError(f"--param {name}: neither {launch.source_path.name} nor "
                            f"{launch.path.name} uses {name}, so every value builds the "
                            f"same kernel (its macros: {', '.join(macros) or 'none'})")


def tune_launch(spec, params: dict[str, list[int]], constraints=(), *, sets=None,
                device: str | None = None, device_model=None, top: int = 4,
                repeat: int = 10, warmup: int = 2, rounds: int = 2, out=None,
                seed: int | None = None, log=None, command: str | None = None,
                cluster: str | None = None, device_workers: int | None = None) -> dict:
    """Tune the macros ``params`` of the launch file ``spec`` (module docstring).

    Args:
        params: name -> values to try (a value given more than once is tried once, noted
            through ``log``).
        constraints: expressions every candidate must satisfy.
        sets: launch-file sizes replaced (as ``--set``).
        device: the OpenCL device to measure on (None: the default; not opened for
            ``top=0``).
        device_model: the model that ranks (default: the measured device's, else
            nvidia-h200).
        top: best-ranked candidates to measure (0: model only).
        out: results file (JSON, written atomically after each step; None: not saved); an
            existing one is first moved to ``history/`` beside it, never overwritten.
        cluster, device_workers: a Ray cluster to model and measure on and its device
            workers (:mod:`analysis.tune.cluster`); None: this process.

    Returns:
        The results document: ``meta`` (with ``sizes``, the launch file's sizes after
        ``sets``, evaluated at the parameters' first values), ``rejected``,
        ``predictions`` (ranked), ``measurements``, ``summary``
        (:func:`analysis.tune.stats.summarize`).

    Raises:
        TuneError: bad arguments (a name both tuned and in ``sets``), a constraint that
            cannot be parsed, no valid candidate
            (the message counts the rejections by reason; ``out`` is then neither written
            nor moved), too many combinations, or measuring without a [reference] in the
            launch file.
        LaunchFileError: the launch file itself is wrong.
        analysis.tune.cluster.ClusterSpecError, ClusterError: a bad ``cluster``, Ray not
            installed; a cluster that cannot be reached or lost every device worker.
    """
    from tiletraffic.analysis.tune.engine import engine_for

    log = log or (lambda line: None)
    _check_counts(top, repeat, warmup, rounds)
    if top == 0 and device_workers is not None:
        raise TuneError("device_workers with top = 0: nothing is measured")
    with engine_for(cluster, 1, device_workers, log) as engine:
        return _tune(engine, spec, params, constraints, sets=sets, device=device,
                     device_model=device_model, top=top, counts=(repeat, warmup, rounds),
                     out=out, seed=seed, log=log, command=command)


def _tune(engine, spec, params, constraints, *, sets, device, device_model, top, counts,
          out, seed, log, command) -> dict:
    """:func:`tune_launch` with its engine (this process or a cluster)."""
    repeat, warmup, rounds = counts
    params = distinct_values(params, log)
    if both := sorted(set(params) & set(sets or {})):
        raise TuneError(f"{', '.join(both)} given both as a tuned parameter (--param) and as "
                        "a size (--set): a --set value would replace every candidate's; "
                        "give it once")
    # the file's own errors first; the parameters at their first values are names too
    base = launch_file.read(spec, sets, {k: v[0] for k, v in params.items()})
    _check_params_used(base, params)
    try:
        parsed = [expressions.parse(c, base.names, expressions.BOOLEAN) for c in constraints]
    except expressions.ExpressionError as err:
        raise TuneError(f"--constraint: {err}") from None
    combos = math.prod(len(v) for v in params.values())
    if combos > MAX_CANDIDATES:
        raise TuneError(f"{combos} combinations of --param values; at most {MAX_CANDIDATES}")
    reference = launch_file.reference_function(spec) if top > 0 else None
    if top > 0 and reference is None:
        raise TuneError(f"{spec}: measuring needs the launch file's [reference] function "
                        "(every launch is checked against it); or --top 0")
    target = engine.open_device(device) if top > 0 else None
    model = ranking_model(device_model, target)
    limits = combined_limits(target.limits if target is not None else None, model)
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % 2**63)
    meta = {"launch_file": str(spec), "kernel": base.kernel, "params": params,
            "constraints": list(constraints), "sets": dict(sets or {}),
            "sizes": dict(base.sizes),
            "space_candidates": combos, "device_model": model.name,
            "device": None if target is None else {"name": target.info.device_name,
                                                   "platform": target.info.platform_name},
            "limits": limits.name, "top": top, "repeat": repeat, "warmup": warmup,
            "rounds": rounds, "seed": seed, "command": command or "tiletraffic.tune_launch"}
    if target is not None:
        from tiletraffic.gpu.devices.device_models import model_fit_meta
        meta.update(model_fit_meta(model, target.info))
    if (cluster := engine.describe()) is not None:
        meta["cluster"] = cluster
    doc = {"meta": meta, "status": "modelling", "rejected": [], "predictions": [],
           "measurements": [], "summary": None}
    path = None if out is None else Path(out)
    if path is not None:   # before the candidates are modelled
        refuse_non_file(path)
        check_writable(path.parent)
    meta["created_utc"] = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    space = _LaunchSpace(spec, sets, params, parsed, base, model, limits)
    valid = _model_candidates(space, doc, log, engine)
    if not valid:  # nothing to tune: no file written, none moved
        raise TuneError(no_valid_message(f"no valid candidate among the {combos} "
                                         "combinations of --param values", doc["rejected"]))
    with held(None if path is None else FolderLock.of_file(path), f"tuning results {path}",
              log):     # from here on the results file is this run's
        return _rank_and_measure(doc, valid, path, (engine, target, Path(spec).resolve()),
                                 (top, repeat, warmup, rounds, seed), combos, log)


def _rank_and_measure(doc: dict, valid: list, path: Path | None, where: tuple,
                      counts: tuple, combos: int, log) -> dict:
    """Rank the modelled candidates ``valid`` (an earlier results file at ``path`` moved to
    history/ first) and measure the ``top`` of ``counts`` (``top, repeat, warmup, rounds,
    seed``) on ``where`` (``engine, target, launch file``), saving ``doc`` after each
    step."""
    (top, repeat, warmup, rounds, seed), meta = counts, doc["meta"]
    save = _saver(doc, path)
    _rank(doc, valid, path, meta, log)
    log(f"{combos} candidates: {len(doc['rejected'])} rejected, {len(valid)} modelled on "
        f"{meta['device_model']}")
    doc["status"] = "measuring" if top else "complete"
    save()
    if top:
        _measure(doc, valid[:top], where, (repeat, warmup, rounds), seed, save, log)
        doc["status"] = "complete"
        save()
    return doc


def _check_counts(top, repeat, warmup, rounds) -> None:
    """Refuse a ``top`` that is not an integer >= 0 and launch counts outside their limits
    (:mod:`tiletraffic.gpu.runtime.launch_counts`).

    Raises:
        TuneError: naming the value.
    """
    from tiletraffic.gpu.runtime.launch_counts import (repeat_problem, rounds_problem,
                                                       warmup_problem)

    if isinstance(top, bool) or not isinstance(top, int) or top < 0:
        raise TuneError(f"top must be an integer >= 0, got {top!r}")
    if (problem := repeat_problem(repeat) or warmup_problem(warmup)
            or rounds_problem(rounds)) is not None:
        raise TuneError(problem)


def _saver(doc: dict, path: Path | None):
    """A function that summarizes ``doc`` and writes it to ``path`` (atomically; nothing
    without a path)."""
    def save():
        doc["summary"] = tuning_stats.summarize(doc)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, json.dumps(doc, indent=1))
    return save


@dataclass(frozen=True)
class _LaunchSpace:
    """The candidates of a launch file's tuning: the file, its ``--set`` sizes, the
    parameters' values, the parsed constraints, the file read at the first values, and the
    model and limits every candidate is screened and modelled by."""

    spec: object
    sets: dict | None
    params: dict
    constraints: list
    base: object
    model: object
    limits: object


def _model_candidates(space: _LaunchSpace, doc: dict, log, engine) -> list:
    """Screen (constraints, the launch file's schedule, the limits) every combination of
    the parameters' values, in the order given, then model the screened ones (``engine``:
    here or as a cluster's Ray tasks): ``(entry, schedule)`` of each modelled one (its
    entry also in ``doc["predictions"]``), each rejection in ``doc["rejected"]``, in the
    order of the combinations; a note through ``log`` when the work-group classes of the
    kernel are not proved (once)."""
    unproved_noted = False
    screened, order_of = [], {}
    for order, values in enumerate(itertools.product(*space.params.values())):
        cand = dict(zip(space.params, values))
        order_of[_label(cand)] = order
        sch = _screened(space, cand, doc["rejected"])
        if sch is None:
            continue
        if not unproved_noted and (why := classes_problem(sch)) is not None:
            unproved_noted = True   # once: every candidate of one kernel shares the reason
            log(f"note: every work-group of {sch.kernel_name} is executed to model it (its "
                f"work-group classes are not proved: {why}), which takes longer")
        screened.append((order, cand, sch))
    schedules = {order: sch for order, _, sch in screened}
    modelled = []

    def on_result(order, result):
        kind, value = result
        if kind == "rejected":
            doc["rejected"].append(value)
        else:
            modelled.append((value, schedules[order]))

    from tqdm import tqdm
    with tqdm(total=len(screened), disable=True) as bar:
        engine.model(model_task, space.model, screened, on_result, bar)
    doc["rejected"].sort(key=lambda r: order_of[r["label"]])
    modelled.sort(key=lambda es: es[0]["order"])
    doc["predictions"] += [entry for entry, _ in modelled]
    return modelled


def model_task(model, task) -> tuple:
    """Model one screened candidate ``task`` (order, parameters, schedule) on ``model``:
    (order, ("entry", its prediction entry) or ("rejected", the model's refusal))."""
    order, cand, sch = task
    rejected: list = []
    entry = _modelled(model, cand, order, sch, rejected)
    return order, (("entry", entry) if entry is not None else ("rejected", rejected[0]))


def _screened(space: _LaunchSpace, cand: dict, rejected: list):
    """The schedule of candidate ``cand`` when it meets the constraints, builds and fits the
    limits; else None, its rejection appended to ``rejected``.

    Raises:
        TuneError: a constraint that cannot be evaluated (a division by zero, say).
    """
    env = {**space.base.names, **cand}
    try:
        failed = [c.text for c in space.constraints if not c.evaluate(env)]
    except expressions.ExpressionError as err:   # e.g. a division by zero
        raise TuneError(f"--constraint {err}") from None
    if failed:
        _reject(rejected, cand, "constraint", f"constraint {failed[0]!r} fails")
        return None
    try:
        sch = launch_file.load(space.spec, space.sets, cand)
        check_schedule_limits(sch, space.limits)
    except LimitError as err:
        _reject(rejected, cand, "limits", "exceeds the device limits", str(err))
        return None
    except (launch_file.LaunchFileError, FrontendError, ScheduleError) as err:
        _reject(rejected, cand, "builder", rejection_key(str(err)), str(err))
        return None
    return sch


def _modelled(model, cand: dict, order: int, sch, rejected: list) -> dict | None:
    """The prediction entry of candidate ``cand`` modelled on ``model`` (the model's
    warnings recorded), or None, its refusal appended to ``rejected``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            launch = model_sequence(sch, model, accelerators=ALL, stacklevel=2)
        except Exception as err:  # noqa: BLE001 - recorded as the candidate's rejection
            _reject(rejected, cand, "model",
                    f"the model refused it ({type(err).__name__})", str(err))
            return None
    p = launch.prediction
    return {"label": _label(cand), "family": sch.family, "params": cand, "order": order,
            "predicted_time_s": p.predicted_time_s, "bound": p.bound,
            "resident_work_groups_per_cu": p.resident_work_groups_per_cu,
            "registers_per_work_item": p.registers_per_work_item,
            "flop": launch.counts.flop,
            "model_warnings": [str(w.message) for w in caught]}


def _rank(doc: dict, valid: list, path: Path | None, meta: dict, log) -> None:
    """Move an earlier results file away (noted), then rank the modelled candidates by
    predicted time (ties: the order of enumeration) into ``doc["predictions"]``."""
    if path is not None and path.exists():
        moved = archive_previous(path)       # earlier results are never lost
        log(f"note: the earlier results in {path} were moved to {moved}")
        meta["previous_results_moved_to"] = str(moved)
    valid.sort(key=lambda es: (es[0]["predicted_time_s"], es[0]["order"]))
    for rank, (entry, _) in enumerate(valid, 1):
        entry.update(predicted_rank=rank, estimate_rank=rank,
                     estimate={k: entry[k] for k in ("predicted_time_s", "bound",
                                                     "resident_work_groups_per_cu",
                                                     "registers_per_work_item")})
    doc["predictions"] = [e for e, _ in valid]


def measure_task(target, cache, spec, sch, repeat, warmup, seed, index, round_index) -> dict:
    """One round of one candidate of the launch file ``spec`` (an absolute path) on a
    device worker, checked against the file's reference (read once per worker)."""
    key = ("tune launch", str(spec))
    if key not in cache:
        cache[key] = (launch_file.reference_function(spec), {})
    reference, before_launch = cache[key]
    return measure_round(target, sch, repeat, warmup, seed, index, round_index, before_launch,
                         reference_fn=reference)


def _measure(doc, chosen, where, counts, seed, save, log):
    """Check each chosen candidate for hazards (module docstring, step 3), then run it
    in rounds over the engine's device workers; ``where``: (engine, target, the launch
    file's absolute path); ``counts``: (repeat, warmup, rounds)."""
    from tiletraffic.simulator.engine.accelerators import Accelerators

    from tiletraffic.analysis.tune.cluster import ClusterError
    from tiletraffic.analysis.tune.rounds import Measuring, NoWorkersLeft, RoundPlan, run_rounds
    from tiletraffic.analysis.tune.sweep import LAUNCH_FAULT_STAGES

    engine, target, spec = where
    repeat, warmup, rounds = counts
    records = {}
    flop = {entry["label"]: entry["flop"] for entry, _ in chosen}
    for entry, sch in chosen:
        record = new_record(entry)
        hazards = simulate(sch, compute_values=False, hazards="report",
                           accelerators=Accelerators(work_group_classes=True)).hazards
        if hazards:
            record.update(status="failed", stage="check", error_type="Hazard",
                          error="; ".join(sorted({h.kind for h in hazards})))
        doc["measurements"].append(record)
        records[record["label"]] = (record, sch)
    save()
    keys = [label for label, (record, _) in records.items() if record["status"] != "failed"]
    if not keys:
        return
    pool = engine.pool(target)
    if (cluster := engine.describe()) is not None:
        doc["meta"]["cluster"] = cluster
    workers = {w: pool.describe(w) for w in pool.workers}

    def work(label, r):
        record, sch = records[label]
        return measure_task, (spec, sch, repeat, warmup, seed, record["predicted_rank"], r)

    def on_result(label, r, result, worker):
        record = records[label][0]
        if workers[worker] is not None:
            record["worker"] = workers[worker]
            if "failed" not in result:
                result = {**result, "worker": worker}
        # add_round's GFLOP/s is 2 * work / time: work = the simulated FLOPs / 2
        add_round(record, result, rounds, max(1, flop[label] // 2))
        log(f"measured {label} (round {r + 1} of {rounds})"
            + (f" on device worker {worker}" if workers[worker] is not None else ""))
        save()

    def on_restart(label, kept, why):
        record = records[label][0]
        record.update(rounds=record["rounds"][:kept], status="incomplete")
        save()

    try:
        run_rounds(RoundPlan(keys, rounds, list(workers)), pool, Measuring(
            work=work, on_result=on_result, on_restart=on_restart,
            stops=lambda result: "failed" in result,
            launch_fault=lambda result: (result.get("failed") or {}).get("stage")
            in LAUNCH_FAULT_STAGES, log=log))
    except NoWorkersLeft as err:
        doc["status"] = "interrupted"
        save()
        raise ClusterError(f"{err}; what finished is saved") from None


def table(doc: dict) -> str:
    """The tuning as text: candidates in predicted order with predicted and measured times,
    the rejections by reason, the model's pick, the best measured and the regret."""
    meta, summary = doc["meta"], doc.get("summary") or tuning_stats.summarize(doc)
    sizes = meta.get("sizes", meta.get("sets") or {})   # results written before "sizes"
    lines = [f"tune {meta['launch_file']} ({meta['kernel']})"
             + (" at " + " ".join(f"{k}={v}" for k, v in sizes.items()) if sizes else "")
             + f": {meta['space_candidates']} "
             f"candidates, {summary['rejected']} rejected, {summary['modelled']} modelled on "
             f"{meta['device_model']}" + (
                 f", {len(doc['measurements'])} measured on {meta['device']['name']} ("
                 f"{sum(r['status'] == 'ok' for r in doc['measurements'])} ran)"
                 if meta["device"] else ", none measured")]
    if (note := tuning_stats.measured_rank_note(meta)) is not None:
        lines.append(note)
    measured = {r["label"]: r for r in doc["measurements"]}
    lines += ["", f"{'rank':>4s}  {'parameters':24s} {'predicted ms':>12s} "
                  f"{'measured ms':>21s}  check"]
    for p in doc["predictions"][:max(10, len(measured))]:
        r = measured.get(p["label"])
        if r is None:
            meas, check = "not measured", "-"
        elif r["status"] == "ok":
            meas = f"{r['median_s'] * 1e3:.4f} ± {r['spread_s'] * 1e3:.4f}"
            check = f"ok (err/tol {r['check']['error_over_tolerance']:.2f})"
        elif r["status"] == "failed":
            meas, check = "failed", " ".join(f"{r['stage']}: {r['error']}".split())[:100]
        else:
            meas, check = "incomplete", "-"
        lines.append(f"{p['predicted_rank']:>4d}  {p['label']:24s} "
                     f"{p['predicted_time_s'] * 1e3:12.4f} {meas:>21s}  {check}")
    if summary["rejected"]:
        lines += ["", f"rejected before launch: {summary['rejected']}"]
        for why, count in summary["rejected_by_reason"].items():
            lines.append(f"  {count:5d}  {why}")
    if summary["pick"] is None:
        lines += ["", "no measured candidate: no regret (" + summary["scope"] + ")"]
    else:
        pick, best = summary["pick"], summary["best"]
        lines += ["", f"model's pick: {pick['label']} (predicted rank {pick['predicted_rank']}"
                      f"), {pick['median_s'] * 1e3:.4f} ms",
                  f"best measured: {best['label']} (predicted rank {best['predicted_rank']}), "
                  f"{best['median_s'] * 1e3:.4f} ms",
                  f"regret: {summary['regret_ratio']:.3f}x ({summary['regret_pct']:+.1f}%); "
                  + summary["scope"]]
    return "\n".join(lines) + "\n"
