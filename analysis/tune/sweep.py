"""One or several GEMM tunings (the shapes of ``tune gemm --shapes``) as one piece of work:
every candidate of every shape modelled together (:meth:`engine.model`: a pool of processes
or the Ray tasks of a cluster), each shape ranked and rechecked, then the chosen candidates
of every shape measured together over the device workers
(:func:`analysis.tune.rounds.run_rounds`: round-major, each shape's candidates in rank
order). Each tuning saves its own results file as it goes (:mod:`analysis.tune.tuner`);
Ctrl-C, or a cluster that loses every device worker, leaves every file resumable (status
``interrupted``); any other error first writes what finished.

The tunings are :class:`analysis.tune.tuner` tunings, driven through their steps
(``begin``, ``modelled``, ``choose``, ``to_measure``, ``work``, ``measured``, ``restart``,
``finish``, ``stop``).
"""
from __future__ import annotations

import sys

from tiletraffic.analysis.tune.cluster import ClusterError
from tiletraffic.analysis.tune.rounds import Measuring, NoWorkersLeft, RoundPlan, run_rounds

LAUNCH_FAULT_STAGES = ("launch", "error")
"""Stages of a failed measurement that another device may not repeat (a launch, or an
error of no known kind): on a cluster the candidate moves to another device
(:mod:`analysis.tune.rounds`); a build, the launch limits and the checks fail alike
everywhere."""


def _bar(total: int, desc: str, unit: str, progress):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr,
                disable=None if progress is None else not progress)


def run_tunings(tunings: list, setup, options, predict) -> None:
    """Model, rank, recheck and measure ``tunings`` (module docstring) with ``setup``'s
    engine and device; ``predict(model, task)``: the modelling task
    (:func:`analysis.tune.tuner.predict_with`).

    Raises:
        KeyboardInterrupt: Ctrl-C, after every tuning saved what finished.
        analysis.tune.cluster.ClusterError: every device worker of the cluster died or was
            retired (what finished saved).
    """
    try:
        _model(tunings, setup, options, predict)
        for tuning in tunings:
            tuning.choose()
        _measure(tunings, setup, options)
        for tuning in tunings:
            tuning.finish()
    except KeyboardInterrupt:
        for tuning in tunings:
            tuning.stop("interrupted")
        raise
    except NoWorkersLeft as err:
        for tuning in tunings:
            tuning.stop("interrupted")
        saved = [str(t.path) for t in tunings if t.path is not None]
        raise ClusterError(f"{err}; what finished is saved"
                           + (f" in {', '.join(saved)} (--resume continues)" if saved else "")
                           ) from None
    except Exception:
        for tuning in tunings:
            tuning.flush()
        raise


def _model(tunings: list, setup, options, predict) -> None:
    """Every candidate left to model, of every tuning, in one batch of work."""
    tasks = []
    for i, tuning in enumerate(tunings):
        tasks += [((i, index), cand.family, cand.params, tuning.options.problem, None)
                  for index, cand in tuning.begin()]
    if not tasks:
        return
    with _bar(len(tasks), f"model ({setup.model.name})", "candidate", options.progress) as bar:
        setup.engine.model(predict, setup.model, tasks,
                           lambda key, result: tunings[key[0]].modelled(key[1], result), bar)


def _measure(tunings: list, setup, options) -> None:
    """The chosen candidates of every tuning, over the engine's device workers."""
    keys, done = [], {}
    for i, tuning in enumerate(tunings):
        for label, have in tuning.to_measure():
            keys.append((i, label))
            done[(i, label)] = have
    if not keys:
        return
    pool = setup.engine.pool(setup.target)
    cluster = setup.engine.describe()
    if cluster is not None:
        for tuning in tunings:
            tuning.doc["meta"]["cluster"] = cluster
    workers = {w: pool.describe(w) for w in pool.workers}
    name = setup.target.info.device_name
    desc = f"measure ({name})" if len(workers) == 1 else f"measure ({len(workers)} x {name})"
    with _bar(sum(options.rounds - have for have in done.values()), desc, "run",
              options.progress) as bar:
        def on_result(key, round_index, result, worker):
            tunings[key[0]].measured(key[1], round_index, result, workers[worker])
            bar.update(1)

        run_rounds(RoundPlan(keys, options.rounds, list(workers), done), pool, Measuring(
            work=lambda key, r: tunings[key[0]].work(key[1], r),
            on_result=on_result,
            on_restart=lambda key, kept, why: tunings[key[0]].restart(key[1], kept, why),
            stops=lambda result: "failed" in result,
            launch_fault=lambda result: (result.get("failed") or {}).get("stage")
            in LAUNCH_FAULT_STAGES,
            log=options.say))
