"""``tiletraffic simulate``: exact counts of SCHEDULE next to its closed forms, and its result
checked against a float64 reference (small launches, or ``--values``)."""
from __future__ import annotations

import sys

import click
import numpy as np

from tiletraffic.simulator.engine.accelerators import Accelerators
from tiletraffic.simulator.engine.fast_path import FASTEST, count_launch
from tiletraffic.simulator.engine.limits import GENERIC_GPU, UNLIMITED, LimitError
from tiletraffic.simulator.engine.simulation import InputError
from tiletraffic.simulator.ir.static import ExecutionError
from tiletraffic.simulator.model.observation import device_limits
from tiletraffic.simulator.model.sequence_run import simulate
from tiletraffic.simulator.observers.hazards import HazardError
from tiletraffic.simulator.engine.reference import references
from tiletraffic.simulator.ir.sequence import is_sequence
from tiletraffic.simulator.kernels.batch import batch_fields
from tiletraffic.simulator.kernels.storage import dtype_fields, storage_text

from tiletraffic.analysis import environment
from tiletraffic.frontend.shown_names import params_text
from tiletraffic.frontend.user_schedule import UserScheduleError, closed_form_source

from tiletraffic.analysis.api.closed_forms import derived_forms, form_lines
from tiletraffic.analysis.api.arguments import inputs_kind_of
from tiletraffic.analysis.api.schedules import (closed_form, closed_form_agrees,
                                                closed_form_differences)
from tiletraffic.analysis.files import json_text
from tiletraffic.analysis.cli.common import (NO_REFERENCE, build_schedule, check_work, fail,
                                             is_user_spec, reference_fn, run_inputs,
                                             refuse_beyond_limits, refuse_seed_unless_random,
                                             refuse_unused, within_budget, work, work_text)
from tiletraffic.analysis.cli.model import classes_problems, note_path, show_model
from tiletraffic.simulator.engine.budget import VALUES_WORK, VALUES_WORK_ITEMS
from tiletraffic.analysis.cli.options import (DEVICE_MODEL, FORCE_OPTION, json_option,
                                              reference_option, schedule_options)


VALUES_MAX_WORK = 2**27
"""Above this much work, ``--values`` is refused (it executes every work-group)."""


@click.command("simulate")
@schedule_options
@reference_option
@click.option("--values/--counts-only", default=None,
              help="Also compute the output and check it against numpy (default: only for "
                   f"a small launch: M·N·K, or work-item loop steps, <= {VALUES_WORK} "
                   f"and at most {VALUES_WORK_ITEMS} work-items).")
@click.option("--no-limits", is_flag=True,
              help="Do not enforce generic GPU limits (1024 work-items, 48 KiB local memory).")
@click.option("--hazards", type=click.Choice(["raise", "report"]), default="raise",
              show_default=True, help="Stop at the first hazard, or report them all (exit status 1 either way).")
@click.option("--device-model", default=None, type=DEVICE_MODEL,
              help="Also model the memory system of this device: requests, sectors, bank "
                   "conflicts, L2 and DRAM traffic, predicted time (counts by work-group "
                   "classes). A built-in model (nvidia-h200, nvidia-h200-calibrated, nvidia-h200-cuda, "
                   "generic-gpu) "
                   "or a model file: see `tiletraffic device-model`.")
@json_option("the counts")
@FORCE_OPTION
def command(schedule, m, k, n, tile, chunk, seed, inputs_kind, reference_spec, values,
            no_limits, hazards, device_model, as_json, force):
    """Execute SCHEDULE in the simulator and print its exact traffic counts, next to the
    closed forms ("no closed form" for a schedule without them).

    SCHEDULE: a family (gemm-naive, gemm-tiled, gemm-register-blocked, gemm-vectorized,
    gemm-prefetch, gemm-warp-tiled, matvec-naive, matvec-local, matvec-local-whole,
    matvec-rows-reduce, matvec-relu; gemm-split-k, two kernels in sequence; without
    --m, --k and --n: its example shape, as check uses), a demo or faulty variant (missing
    sizes: its example shape), FILE.py:FUNCTION,
    a function of your Python file that returns a tiletraffic Schedule, called with the
    sizes given (m=, k=, n=, tile=), or LAUNCH.toml, a launch file of an OpenCL C kernel
    (its sizes: the file's, replaced with --set NAME=VALUE). Its result is checked against --reference (default: the file's function 'reference'), or not
    checked, with a note, when there is none."""
    if not device_model:
        refuse_unused(("max_registers",), "without --device-model: the counts and the result "
                                          "do not depend on registers",
                      "give --device-model D to model the budget, or leave it out")
    if device_model:
        refuse_unused(("values", "no_limits", "hazards", "reference_spec", "inputs_kind", "seed"),
                      "with --device-model: it models the memory system and computes no result "
                      "(the output of `model`)")
    sch = build_schedule(schedule, m, k, n, tile, chunk)
    inputs_kind = refuse_seed_unless_random(inputs_kind_of(sch, inputs_kind))
    refuse_beyond_limits(sch, device_limits(device_model) if device_model else
                         None if no_limits else GENERIC_GPU)
    check_work(sch, k)
    if device_model:
        classes = classes_problems(sch)
        est = within_budget(sch, force, classes, long_note=False, compute_values=False,
                            work_group_classes=True, k_extrapolation=True)
        note_path(sch, classes, est, device_model.local_vector_words)
        show_model(sch, device_model, as_json)
        return
    ref_fn = reference_fn(schedule, reference_spec)
    ops, large = work(sch), too_large_for_values(sch)
    if values is False:
        refuse_unused(("reference_spec", "inputs_kind", "seed"),
                      "with --counts-only: no result is computed")
    elif values is None and large:
        refuse_unused(("reference_spec", "inputs_kind", "seed"),
                      f"here: no result is computed at {large}",
                      "add --values to compute and check it")
    values = large is None if values is None else values
    if values and ops > VALUES_MAX_WORK:
        raise click.UsageError(f"--values with {work_text(sch)} = {ops} above "
                               f"{VALUES_MAX_WORK} would take too long; use --counts-only")
    fast = not values and large is not None   # the fastest exact path
    classes = classes_problems(sch, counting=True) if fast else None
    est = within_budget(sch, force, classes, long_note=not fast, compute_values=values,
                        work_group_classes=fast, k_extrapolation=fast)
    if fast:
        note_path(sch, classes, est)
    inputs = run_inputs(sch, values, seed, inputs_kind)
    limits = UNLIMITED if no_limits else GENERIC_GPU
    try:
        if values:
            res = simulate(sch, inputs, compute_values=True, hazards=hazards, limits=limits,
                           accelerators=environment.accelerators(Accelerators()),
                           sum_lengths=True)
        else:
            res = count_launch(sch, hazards=hazards, limits=limits, accelerators=(
                environment.accelerators(FASTEST if fast else Accelerators())))
    except (LimitError, InputError, ExecutionError) as err:
        raise click.UsageError(str(err)) from None
    except HazardError as err:
        fail(err)
    by_classes = fast and res.by_classes
    unproved = fast and not by_classes   # every work-group of some kernel ran
    counts = res.counts.to_dict()
    formula = closed_form_of(sch)
    ref = worst = None
    outputs = ()
    skipped = None if values else "counts only"
    if values and ref_fn is None and is_user_spec(schedule):
        skipped = NO_REFERENCE
    elif values:
        ref, worst, outputs = checked_result(sch, inputs, ref_fn, res)
    check = worst.error_over_tolerance if worst else None
    if as_json:
        p = sch.param_values
        out = {"schedule": sch.family, "m": p.get("M", m), "k": p.get("K", k),
               "n": p.get("N", n), "tile": sch.tile, **batch_fields(sch), **dtype_fields(sch),
               **({"kernels": [{"kernel": x.kernel_name, "local_size": list(x.local_size),
                                "global_size": list(x.global_size)} for x in sch.kernels]}
                  if is_sequence(sch) else
                  {"local_size": list(sch.local_size), "global_size": list(sch.global_size)}),
               **counts, "closed_form_agrees": closed_form_agrees(formula, counts),
               "result_error_over_tolerance": check, "result_check_skipped": skipped,
               "work_group_classes": by_classes, "closed_forms": derived_forms(formula),
               "inputs": inputs_kind if values else None,
               "result_outputs": list(outputs) if worst else None,
               "result_worst_output": ref.output if worst else None,
               "result_worst_index": list(worst.worst_index) if worst and worst.worst_index
               else None,
               "result_unwritten": worst.unwritten_count if worst else None,
               "result_written_nonfinite": worst.written_nonfinite_count if worst else None,
               "hazards": [h.to_dict() for h in res.hazards]}
        click.echo(json_text(out, indent=2))
        sys.exit(1 if res.hazards or check is not None and not check <= 1 else 0)
    click.echo("\n".join(counts_text(sch, counts, formula, res.hazards)))
    if check is not None:
        click.echo(result_text(ref, worst, inputs_kind, ref_fn is not None, outputs))
        if not check <= 1:
            sys.exit(1)  # a wrong result is a failure, as in run
    elif skipped == NO_REFERENCE:
        click.echo(f"result not checked: {NO_REFERENCE}")
    else:
        click.echo("counts only" + (" (by work-group classes: one work-group executed per class "
                                    "of identical traffic; races in global memory and unwritten "
                                    "outputs need the full launch and were not checked"
                                    + ("; the K loop's counts extrapolated from three short K"
                                       if res.k_extrapolated else "") + ")"
                                    if by_classes else
                                    " (every work-group executed: work-group classes are not "
                                    f"proved here: {unproved_why(res)})" if unproved
                                    else "")
                   + "; add --values to also compute and check the result")
    if res.hazards:
        sys.exit(1)  # a fault found (--hazards report lists them all)


def checked_result(sch, inputs, ref_fn, res):
    """The float64 reference of each output of ``sch`` checked (``ref_fn``'s, else the
    built-in one) with the tolerance of the counted sum length, and the worst error of the
    simulated outputs against them (``gpu.runtime.launch.check_result``): ``(the worst
    output's Reference, its check, the names of every output checked)``.

    Raises:
        click.UsageError: the user's reference raised, or returned a wrong shape, values
            that are not finite or an output the schedule does not have.
    """
    from tiletraffic.gpu.runtime.launch import check_result
    from tiletraffic.simulator.engine.sum_length import largest

    try:
        refs = references(sch, inputs, ref_fn, sum_length=max(
            [0, *(largest(v) for v in res.sum_lengths.values())]))
    except ValueError as err:  # the user's reference: raised, wrong shape, not finite
        raise click.UsageError(str(err)) from None
    checked = [(ref, check_result(np.asarray(res.outputs[ref.output]).reshape(ref.value.shape),
                                  ref.value, ref.k, ref.abs_product, ref.error_bound,
                                  ref.stored_half))
               for ref in refs]
    ref, worst = max(checked, key=lambda pair: pair[1].error_over_tolerance)
    return ref, worst, tuple(r.output for r in refs)


def too_large_for_values(sch) -> str | None:
    """Why ``sch`` is too large for ``simulate`` to compute its values by default
    (:func:`simulator.engine.budget.values_problem` of its :func:`work`), None for a small
    launch."""
    from tiletraffic.simulator.engine.budget import values_problem, work_items

    return values_problem(work(sch), work_text(sch), work_items(sch))


def unproved_why(counted) -> str | None:
    """Why some kernel of a launch counted by ``count_launch`` (``counted``) ran every
    work-group: the first kernel's reason."""
    return next((why for why in counted.why_every_work_group if why is not None), None)


def closed_form_of(sch) -> dict | None:
    """The closed-form counts of ``sch`` (a built-in family's or its file's own
    ``closed_form``), None without.

    Raises:
        click.UsageError: the file's ``closed_form`` raised or returned no counts."""
    try:
        return closed_form(sch)
    except UserScheduleError as err:
        raise click.UsageError(str(err)) from None


def counts_text(sch, counts: dict, formula: dict | None, hazards) -> list[str]:
    """The launch's header, one line per counter (simulated, closed form: ``-`` where there
    is none or it gives none for the counter), where the closed forms come from and what
    they disagree in (a user's file, or a disagreement), and the hazards."""
    lines = [f"{sch.family}  " + params_text(sch) +
             f"  tile={sch.tile}{storage_text(sch)}  {launch_shape_text(sch)}",
             f"{'counter':40s} {'simulated':>16s} {'closed form':>16s}"]
    for key, value in counts.items():
        for name, v in (value.items() if isinstance(value, dict) else [(None, value)]):
            label = key if name is None else f"{key}[{name}]"
            given = (formula or {}).get(key, {} if name is not None else None)
            expected = given if name is None else given.get(name)
            lines.append(f"{label:40s} {v:16d} {'-' if expected is None else expected:>16}")
    if formula is None:
        lines.append(f"no closed form for {sch.family} (the simulated counts stand alone)")
    else:
        lines += form_lines(formula) if formula.source == "derived" else []
        source = closed_form_source(sch) or ("derived from the kernel"
                                             if formula.source == "derived" else None)
        differ = closed_form_differences(formula, counts)
        given = sum(len(v) if isinstance(v, dict) else 1 for v in formula.values())
        every = sum(len(v) if isinstance(v, dict) else 1 for v in counts.values())
        if source is not None or differ:
            lines.append(("closed form: " + source + ": " if source else "closed form: ")
                         + (f"DIFFERS from the simulated counts in {', '.join(differ)}"
                            if differ else "agrees with the simulated counts")
                         + ("" if given >= every else
                            f" (it gives {given} of the {every} counters)"))
    lines += [f"hazard [{h.kind}] {h.detail}" for h in hazards]
    return lines


def launch_shape_text(sch) -> str:
    """``work-group 16 x 16  NDRange 64 x 64``; for a kernel sequence one such part per
    kernel, named, joined by ``; ``."""
    def one(k):
        return (f"work-group {' x '.join(map(str, k.local_size))}  NDRange "
                f"{' x '.join(map(str, k.global_size))}")
    if is_sequence(sch):
        return "; ".join(f"kernel {k.kernel_name}: {one(k)}" for k in sch.kernels)
    return one(sch)


def result_text(ref, worst, inputs_kind: str, users_reference: bool,
                outputs: tuple[str, ...] = ()) -> str:
    """One line: the worst error / tolerance of the result and where (of several outputs
    checked, ``outputs``, the worst one's)."""
    check = worst.error_over_tolerance
    several = f" of {', '.join(outputs)}" if len(outputs) > 1 else ""
    return ("result vs float64 " + ("reference" if users_reference else "numpy")
            + f" ({inputs_kind} inputs){several}: worst error / tolerance = "
            f"{check:.3g} at {ref.output}[{', '.join(map(str, worst.worst_index or ()))}]"
            f" ({'ok' if check <= 1 else 'MISMATCH: ' + worst.message(ref.output)})")
