"""The tuner's recheck: re-rank the model's best candidates with their compiled registers.

The first ranking (:func:`analysis.tune.tuner.tune`, step 2) models every candidate with the
registers per work-item *estimated* from its schedule (:mod:`simulator.model.registers`, a
guess); register-limited occupancy, and so the predicted time, depends on them. Before
anything is measured, the ``R`` best-ranked candidates (``recheck``; default
:data:`RECHECK_PER_TOP` x ``top``, at most the modelled ones) are:

1. **built** on the target device, compiled only, never launched
   (:func:`compiled_resources`: the kernel ``run`` would build, with ``run``'s options, so
   the measurement reuses the build), and the compiled kernel's registers read where the
   driver reports them (:func:`gpu.runtime.launch.kernel_resources`: NVIDIA's ``-cl-nv-verbose``
   build log; PoCL and other drivers report none). A build that fails is a rejection of
   stage ``build`` with the compiler's log, never a crash.
2. **re-modelled** with ``model_launch(schedule, model, registers_per_work_item=<compiled>)``
   where the compiled count differs from the one the first pass used (equal counts give
   the same call of ``predict``, so the first pass's prediction is kept); a candidate the
   model refuses with its compiled registers (too many for one work-group) is a rejection
   of stage ``recheck``.
3. **re-ranked**: the rechecked candidates first, by their predicted time with the compiled
   registers (with the estimate's where the driver reported none), those whose build
   spills registers (spill stores or loads in the driver's report) after the others: the
   model counts no spill traffic, so their predictions are lower bounds. Then the rest in
   the first pass's order. The ``top`` measured are the first of this ranking.

Each prediction of the results records ``registers_source`` (``compiled``, ``estimated``,
or ``not modelled``: a schedule without private arrays gets no estimate and no register
limit), ``estimate_rank`` and ``estimate_predicted_time_s`` (the first pass over all
modelled candidates), ``compiled_rank`` and ``compiled_predicted_time_s`` (the re-ranking,
for the rechecked candidates with compiled registers; else ``None``), and ``recheck`` (the
build: status ``compiled`` or ``not reported``, the driver's resources, build time, the
prediction with the compiled registers). ``predicted_rank`` and ``predicted_time_s`` are
the final ranking's, from which the model's pick and its regret come as before
(:mod:`analysis.tune.stats`); :func:`summary` adds the pick of the first (estimate-based)
ranking and its regret when it was measured, and how the top changed.
"""
from __future__ import annotations

import sys

RECHECK_PER_TOP = 4
"""Default candidates rechecked per measured one (``recheck = 4 x top``)."""
FIRST_PASS_KEYS = ("predicted_time_s", "bound", "resident_work_groups_per_cu",
                   "registers_per_work_item")
"""The keys of a prediction kept in ``estimate`` (the first, estimate-based pass)."""
REASON_CHARS = 300
"""A failed build's reason is cut to this many characters (its whole log is kept)."""
COMPILED = "compiled"
NOT_REPORTED = "not reported"
COUNT_KEYS = {COMPILED: "compiled", NOT_REPORTED: "not_reported"}
"""``doc["recheck"]``'s count of the candidates of each build status."""


def default_count(top: int, modelled: int) -> int:
    """The default ``recheck``: :data:`RECHECK_PER_TOP` x ``top``, at most ``modelled``."""
    return min(RECHECK_PER_TOP * top, modelled)


def compiled_resources(target, schedule):
    """Build ``schedule``'s kernel on ``target`` (compile only, nothing launched) and read
    what the driver reports of it.

    The kernel and build options are those :func:`gpu.runtime.checked_run.run_on_device` uses
    (:func:`gpu.codegen.generate.generate`, :func:`gpu.runtime.launch.build_options`: ``-cl-nv-verbose`` on
    NVIDIA), and the program goes into the target's program cache, so measuring it later
    does not build it again.

    A kernel sequence: every kernel built, the first kernel's resources returned (the
    registers the model takes for a sequence, :func:`simulator.model.sequence_run.registers_of`).

    Returns:
        (:class:`gpu.devices.kernel_resources.KernelResources`, build time in seconds; 0.0 when the
        program was in the target's cache).

    Raises:
        gpu.runtime.launch.KernelBuildError: the build failed (``.log``: the compiler's log) or the
            program lacks the kernel.
    """
    from tiletraffic.gpu.codegen import generate as codegen
    from tiletraffic.gpu.runtime import launch as runtime
    from tiletraffic.simulator.ir.sequence import kernels_of

    found = [runtime.build_kernel(target, codegen.generate(k)) for k in kernels_of(schedule)]
    return found[0][2], sum(built.build_time_s for _, built, _ in found)


def first_pass(entry: dict) -> dict:
    """The first-pass (estimate-based) prediction of a prediction ``entry``: its
    ``estimate``, or for results written before the recheck existed, its own keys."""
    return entry.get("estimate") or {key: entry.get(key) for key in FIRST_PASS_KEYS}


def rank(doc: dict) -> list:
    """Rank ``doc``'s predictions (module docstring, step 3) and number them:
    ``estimate_rank`` by the first pass's time over all of them (numbered once, when one
    lacks it: a candidate the recheck rejects leaves a gap), ``predicted_rank`` with
    the rechecked ones first, ``compiled_rank`` (= ``predicted_rank``) for those whose
    compiled registers were modelled. Ties: the space's order. Returns the ranked list
    (also ``doc["predictions"]``)."""
    predictions = doc["predictions"]
    for entry in predictions:
        entry.setdefault("estimate", first_pass(entry))
    if any(entry.get("estimate_rank") is None for entry in predictions):
        by_estimate = sorted(predictions,
                             key=lambda e: (e["estimate"]["predicted_time_s"], e["order"]))
        for place, entry in enumerate(by_estimate, 1):
            entry["estimate_rank"] = place
            entry["estimate_predicted_time_s"] = entry["estimate"]["predicted_time_s"]
    ranked = sorted(predictions, key=lambda e: (_group(e), e["predicted_time_s"], e["order"]))
    for place, entry in enumerate(ranked, 1):
        entry["predicted_rank"] = place
        compiled = (entry.get("recheck") or {}).get("prediction")
        entry["compiled_rank"] = place if compiled else None
        entry["compiled_predicted_time_s"] = compiled["predicted_time_s"] if compiled else None
        registers = compiled["registers_per_work_item"] if compiled else \
            entry["estimate"].get("registers_per_work_item")
        entry["registers_per_work_item"] = registers
        entry["registers_source"] = (COMPILED if compiled else "estimated"
                                     if registers is not None else "not modelled")
    doc["predictions"] = ranked
    return ranked


def spills(entry: dict) -> bool:
    """The rechecked build of a prediction ``entry`` spills registers (the driver reports
    spill stores or loads above 0 bytes)."""
    found = ((entry.get("recheck") or {}).get("resources") or {})
    return bool(found.get("spill_store_bytes") or found.get("spill_load_bytes"))


def _group(entry: dict) -> int:
    """Where ``entry`` ranks (module docstring, step 3): 0 rechecked, 1 rechecked with a
    build that spills, 2 not rechecked."""
    if not entry.get("recheck"):
        return 2
    return 1 if spills(entry) else 0


def _reusable(old: dict | None, target) -> dict:
    """The rechecks of a resumed document ``old`` made on this device and driver, by label."""
    info = (old or {}).get("recheck") or {}
    if (info.get("device_slug"), info.get("driver_version")) != (
            target.slug, target.info.driver_version):
        return {}
    return {p["label"]: p["recheck"] for p in old.get("predictions", []) if p.get("recheck")}


def recheck(doc: dict, valid: list, target, count: int, remodel, *, old: dict | None = None,
            progress=False, save=lambda: None, build=None) -> None:
    """Recheck the ``count`` best of ``doc``'s ranked predictions on ``target`` (module
    docstring) and re-rank ``doc`` (:func:`rank`); ``doc["recheck"]`` gets what was done.

    Args:
        doc: the tuning document, its predictions ranked by the first pass.
        valid: the screened (candidate, schedule) pairs; a prediction's ``order`` indexes it.
        target: the OpenCL target (:class:`gpu.devices.device.Target`).
        count: candidates to recheck (0: none; more than modelled: all).
        remodel: ``remodel(todo, on_result)``, ``todo`` a list of (index into ``valid``,
            registers per work-item), calling ``on_result(index, result)`` with a
            prediction dict or an error dict (``error_type``, ``error``) for each
            (:func:`analysis.tune.tuner._model_all`).
        old: a resumed document: its rechecks on the same device and driver are reused.
        progress: a progress bar on stderr (None: on a terminal only).
        save: called after every build and re-modelled candidate.
        build: ``build(target, schedule)`` as :func:`compiled_resources` (which it is by
            default), e.g. on a cluster's device worker.

    What it found (registers compiled or not reported, and why) is in ``doc["recheck"]``
    and said once, in the table's recheck line (:func:`lines`).
    """
    from tqdm import tqdm

    chosen = rank(doc)[:count]
    reuse = _reusable(old, target)
    top_before = [e["label"] for e in doc["predictions"][:doc["meta"].get("top") or 0]]
    info = doc["recheck"] = {
        "requested": count, "device_slug": target.slug, "device": target.info.device_name,
        "driver_version": target.info.driver_version, "rechecked": 0, "compiled": 0,
        "not_reported": 0, "rejected": 0, "remodelled": 0, "reused": 0,
        "not_reported_why": None}
    rejected = doc["rejected"]

    def reject(entry, stage, reasons, why, **more):
        rejected.append({key: entry[key] for key in ("label", "family", "params")} | {
            "stage": stage, "reasons": reasons, "whys": [why],
            "estimate_rank": entry["estimate_rank"],
            "estimate_predicted_time_s": entry["estimate_predicted_time_s"], **more})
        doc["predictions"].remove(entry)
        info["rejected"] += 1

    with tqdm(total=len(chosen), desc=f"recheck registers ({target.info.device_name})",
              unit="build", file=sys.stderr,
              disable=None if progress is None else not progress) as bar:
        for entry in chosen:
            bar.update(1)
            if entry["label"] in reuse:
                entry["recheck"] = reuse[entry["label"]]
                info["reused"] += 1
                continue
            _, schedule = valid[entry["order"]]
            try:
                resources, build_s = (build or compiled_resources)(target, schedule)
            except Exception as err:  # noqa: BLE001  a rejection, never a crash
                reason = " ".join(f"{type(err).__name__}: {err}".split())
                reject(entry, "build", [reason if len(reason) <= REASON_CHARS else
                                        reason[:REASON_CHARS - 3] + "..."],
                       "the OpenCL build failed", log=getattr(err, "log", str(err)))
                save()
                continue
            registers = resources.registers_per_work_item
            entry["recheck"] = {"status": COMPILED if registers is not None else NOT_REPORTED,
                                "resources": resources.to_dict(), "build_time_s": build_s,
                                "prediction": None}
            if registers is not None and registers == entry["estimate"].get(
                    "registers_per_work_item"):
                # the same registers give the same call of predict: the first pass stands
                entry["recheck"]["prediction"] = {**entry["estimate"], "remodelled": False}
            save()

    todo = [(e["order"], e["recheck"]["resources"]["registers_per_work_item"])
            for e in doc["predictions"] if e.get("recheck")
            and e["recheck"]["status"] == COMPILED and e["recheck"]["prediction"] is None]
    by_order = {e["order"]: e for e in doc["predictions"]}

    def remodelled(index, result):
        entry = by_order[index]
        registers = entry["recheck"]["resources"]["registers_per_work_item"]
        if "error" in result:
            reject(entry, "recheck", [f"{result['error_type']}: {result['error']} (with the "
                                      f"compiled kernel's {registers} registers per "
                                      "work-item)"],
                   f"the model refused the compiled registers ({result['error_type']})")
        else:
            entry["recheck"]["prediction"] = {
                **{key: result[key] for key in FIRST_PASS_KEYS}, "remodelled": True,
                "model_s": result["model_s"], "model_warnings": result["model_warnings"]}
        save()

    if todo:
        remodel(todo, remodelled)
    for entry in doc["predictions"]:
        check = entry.get("recheck")
        if not check:
            continue
        info["rechecked"] += 1
        info[COUNT_KEYS[check["status"]]] += 1
        if check["status"] == NOT_REPORTED:
            info["not_reported_why"] = check["resources"]["source"]
        else:
            entry.update({key: check["prediction"][key] for key in FIRST_PASS_KEYS})
            info["remodelled"] += check["prediction"]["remodelled"]
    rank(doc)
    info["top_before"] = top_before
    info["top_after"] = [e["label"] for e in doc["predictions"][:len(top_before)]]
    save()


def summary(doc: dict, measured: list, best: dict | None) -> dict:
    """What the recheck did and the pick of the estimate-based (first-pass) ranking.

    ``recheck``: ``doc["recheck"]`` (None without one) plus ``entered`` and ``left``, the
    labels that came into and left the top ``top`` through the re-ranking.
    ``estimate_pick``: the first candidate of the estimate ranking that was not refused by
    the recheck or a failed measurement (the one the tuner would have picked without the
    recheck): label, ``estimate_rank``, ``measured`` and, when measured, ``median_s``,
    ``regret_ratio`` against ``best`` and ``same_as_pick``. None when nothing was measured.
    """
    info = doc.get("recheck")
    out = {"recheck": None, "estimate_pick": None}
    if info:
        before, after = info.get("top_before", []), info.get("top_after", [])
        out["recheck"] = {**info, "entered": [x for x in after if x not in before],
                          "left": [x for x in before if x not in after]}
    if best is None:
        return out
    failed = {r["label"] for r in doc.get("measurements", []) if r["status"] == "failed"}
    ok = {r["label"]: r for r in measured}
    candidates = sorted((p for p in doc.get("predictions", [])
                         if p.get("estimate_rank") is not None and p["label"] not in failed),
                        key=lambda p: p["estimate_rank"])
    if not candidates:
        return out
    first = candidates[0]
    pick = min(measured, key=lambda r: r["predicted_rank"])
    estimate_pick = {"label": first["label"], "estimate_rank": first["estimate_rank"],
                     "measured": first["label"] in ok}
    if estimate_pick["measured"]:
        median = ok[first["label"]]["median_s"]
        estimate_pick.update(median_s=median, regret_ratio=median / best["median_s"],
                             same_as_pick=first["label"] == pick["label"])
    out["estimate_pick"] = estimate_pick
    return out


def lines(summary_: dict) -> list[str]:
    """The table's lines on the recheck and the estimate-based pick (empty without a
    recheck)."""
    info = summary_.get("recheck")
    if not info:
        return []
    built = info["rechecked"] + info["rejected"]
    head = f"recheck: the best {built} by the estimate were built on {info['device']}: "
    if info["compiled"]:
        head += (f"compiled registers for {info['compiled']} ({info['remodelled']} "
                 "re-modelled, the others as estimated)"
                 + (f", not reported for {info['not_reported']}" if info["not_reported"]
                    else ""))
    else:
        head += (f"the driver reports no registers ({info['not_reported_why']}): the ranking "
                 "stays estimate-based" if info["not_reported"] else "none left")
    out = [head + (f"; {info['rejected']} rejected" if info["rejected"] else "")
           + (f"; {info['reused']} reused from the resumed file" if info["reused"] else "")]
    if info["compiled"]:
        changed = (f"{len(info['entered'])} entered ({', '.join(info['entered'])}), "
                   f"{len(info['left'])} left ({', '.join(info['left'])})"
                   if info["entered"] else "same candidates")
        out.append(f"  top {len(info['top_before'])} after the recheck: {changed}")
    pick = summary_.get("estimate_pick")
    if pick and info["compiled"]:
        if not pick["measured"]:
            out.append(f"  the estimate-based pick {pick['label']} (estimate rank "
                       f"{pick['estimate_rank']}) was not measured")
        elif pick["same_as_pick"]:
            out.append("  the estimate-based pick is the same candidate")
        else:
            out.append(f"  the estimate-based pick {pick['label']} (estimate rank "
                       f"{pick['estimate_rank']}): {pick['median_s'] * 1e3:.4f} ms, regret "
                       f"{pick['regret_ratio']:.3f}x")
    return out


def columns(doc: dict):
    """For the table: ``(header, cells(label))`` of two columns, the estimate rank and the
    registers per work-item with their source, when the recheck read compiled registers;
    else None."""
    by_label = {p["label"]: p for p in doc.get("predictions", []) if "label" in p}
    if not any(p.get("registers_source") == COMPILED for p in by_label.values()):
        return None

    def cells(label):
        p = by_label.get(label)
        if p is None:
            return f"{'-':>4s}  {'-':14s}"
        regs = "-" if p.get("registers_per_work_item") is None else \
            f"{p['registers_per_work_item']} " + ("compiled" if p["registers_source"] ==
                                                  COMPILED else "est.")
        return f"{p['estimate_rank']:>4d}  {regs:14s}"

    return f"{'est.':>4s}  {'registers':14s}", cells
