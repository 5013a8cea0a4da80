"""``tiletraffic model``: SCHEDULE's memory system and time on a device model (also what
``simulate --device-model`` prints)."""
from __future__ import annotations

import math
import warnings

import click

from tiletraffic.simulator.engine.accelerators import ALL
from tiletraffic.simulator.engine.accelerators.class_safety import classes_problem
from tiletraffic.simulator.engine.limits import LimitError
from tiletraffic.simulator.engine.simulation import InputError
from tiletraffic.simulator.ir.static import ExecutionError
from tiletraffic.simulator.model.observation import device_limits
from tiletraffic.simulator.observers.hazards import HazardError
from tiletraffic.simulator.ir.sequence import is_sequence, kernels_of
from tiletraffic.simulator.kernels.storage import dtype_fields, storage_text

from tiletraffic.frontend.shown_names import params_text
from tiletraffic.frontend.user_schedule import UserScheduleError

from tiletraffic.analysis import environment
from tiletraffic.analysis.api import schedules, simulation
from tiletraffic.analysis.device_model import DEFAULT_MODEL
from tiletraffic.analysis.files import json_text
from tiletraffic.analysis.cli.common import (build_schedule, check_work, fail, note_long_run,
                                             refuse_beyond_limits, within_budget)
from tiletraffic.analysis.cli.options import (DEVICE_MODEL, FORCE_OPTION, json_option,
                                              size_options)

SLOW_PATH_NOTE_S = 10.0
"""A kernel whose K loop runs whole (K extrapolation not proved) is noted above this
estimated time."""


@click.command("model")
@size_options
@click.option("--device-model", default=DEFAULT_MODEL, show_default=True, type=DEVICE_MODEL,
              help="The device model: requests, sectors, bank conflicts, L2 and DRAM "
                   "traffic, predicted time (counts by work-group classes).")
@click.option("--registers", type=click.IntRange(min=1), default=None,
              help="Registers per work-item of the compiled kernel (what `run` prints on "
                   "NVIDIA); they limit the resident work-groups. Default: estimated for "
                   "schedules with private arrays (a guess, warned), else not modelled. "
                   "For a kernel sequence (gemm-split-k): its first kernel's; the others "
                   "as without it.")
@click.option("--instructions", "instructions_file", default=None, metavar="FILE",
              type=click.Path(dir_okay=False),
              help="Instructions file of the compiled kernel (`tiletraffic instructions` "
                   "writes one): the issue term counts its instructions (the hot loop's per "
                   "iteration, the rest once) in place of the simulator's FMAs, requests "
                   "and barriers.")
@json_option("the model's output")
@FORCE_OPTION
def command(schedule, m, k, n, tile, chunk, device_model, registers, instructions_file,
            as_json, force):
    """Model SCHEDULE's memory system and time on a device model: the output of
    `simulate SCHEDULE --device-model D`.

    SCHEDULE: a family (no sizes: its example shape), a demo or faulty variant,
    FILE.py:FUNCTION or LAUNCH.toml (as for simulate). Counts are taken by
    work-group classes (one work-group per class of identical traffic) where they are
    proved: for the built-in families, and for other schedules whose masks differ only at
    the NDRange's edges and whose indices are affine in the work-group id; otherwise every
    work-group is executed (the same counts, slower; a note says why)."""
    sch = build_schedule(schedule, m, k, n, tile, chunk)
    counted = None
    if instructions_file is not None:
        from tiletraffic.simulator.model.instructions import InstructionsError, read_instructions
        try:
            counted = read_instructions(instructions_file)
        except InstructionsError as err:
            raise click.BadParameter(str(err), param_hint="--instructions") from None
    refuse_beyond_limits(sch, device_limits(device_model))
    check_work(sch, k)
    classes = classes_problems(sch)
    est = within_budget(sch, force, classes, long_note=False, compute_values=False,
                        work_group_classes=True, k_extrapolation=True)
    note_path(sch, classes, est, device_model.local_vector_words)
    show_model(sch, device_model, as_json, registers, counted)


def classes_problems(sch, counting: bool = False) -> tuple[str | None, ...]:
    """Why the work-group classes of each kernel of ``sch`` (in launch order) are not
    proved (:func:`simulator.engine.accelerators.class_safety.classes_problem`), None for
    each whose are: proved once by a command, for its budget estimate and its notes. With
    ``counting``, those of the counts without a device model
    (:func:`simulator.engine.fast_path.counting_classes_problem`: the classes by loaded
    integers count too)."""
    from tiletraffic.simulator.engine.fast_path import counting_classes_problem
    problem = counting_classes_problem if counting else classes_problem
    return tuple(problem(kernel) for kernel in kernels_of(sch))


def note_path(sch, classes: tuple[str | None, ...], est, local_vector_words: int = 1) -> None:
    """The notes before ``sch`` is counted by the fastest path: :func:`note_unproved`'s,
    else the note of a long run (the estimate ``est`` above ``common.LONG_RUN_S``)."""
    if not note_unproved(sch, classes, local_vector_words):
        note_long_run(sch, est)


def note_unproved(sch, classes: tuple[str | None, ...], local_vector_words: int = 1) -> bool:
    """A note on stderr for each kernel of ``sch`` counted slower than the fastest path,
    naming what is not proved and the estimated time of counting it without: its work-group
    classes (``classes``: :func:`classes_problems`; every work-group executed), or, where
    the whole K loop is estimated to take more than :data:`SLOW_PATH_NOTE_S`, K
    extrapolation (:func:`simulator.engine.accelerators.k_extrapolation.k_extrapolation_problem`
    on a device model merging ``local_vector_words`` local loads). Whether one was
    printed."""
    from tiletraffic.simulator.engine.accelerators import k_extrapolation as kx
    from tiletraffic.simulator.engine.budget import estimate_simulation

    noted = False
    for kernel, why in zip(kernels_of(sch), classes):
        if why is not None:
            est = estimate_simulation(kernel, compute_values=False, work_group_classes=True,
                                      classes_problems=(why,))
            click.echo(f"note: work-group classes not proved for {kernel.kernel_name} "
                       f"({why}): every work-group executed, "
                       f"{'estimated ' if est.time_known else ''}{est.time_text()}",
                       err=True)
            noted = True
            continue
        k_why = kx.k_extrapolation_problem(kernel, local_vector_words)
        depth = kx.k_step_elems(kernel)
        floor = kx.k_floor(kernel)[0] if "K" in kernel.param_values else None
        if k_why is None or "K" not in kernel.param_values or depth is not None and \
                floor is not None and kx.short_k_values(kernel.param_values["K"], depth,
                                                        floor) is None:
            continue   # extrapolated, no K loop, or a K too short for it to gain anything
        est = estimate_simulation(kernel, compute_values=False, work_group_classes=True,
                                  classes_problems=(None,))
        if est.time_s > SLOW_PATH_NOTE_S:
            click.echo(f"note: K extrapolation not proved for {kernel.kernel_name} ({k_why}): "
                       f"the whole K loop executed, estimated {est.time_text()}", err=True)
            noted = True
    return noted


def show_model(sch, model, as_json: bool, registers: int | None = None,
               instructions=None) -> None:
    """Model ``sch`` on ``model`` (a DeviceModel) and print it: JSON, or a table with the
    model's warnings on stderr, each distinct one once; ``instructions``: the build's
    counts (an InstructionsFile) for the issue term."""
    from tiletraffic.simulator.model.device_model import GuessedValueWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            launch = simulation.model(sch, model, registers_per_work_item=registers,
                                      accelerators=environment.accelerators(ALL),
                                      instructions=instructions)
        except (LimitError, InputError, ExecutionError) as err:
            raise click.UsageError(str(err)) from None
        except ValueError as err:  # --registers beyond the device's or work-group's limit
            if type(err).__name__ == "InstructionsError":
                raise click.BadParameter(str(err), param_hint="--instructions") from None
            if registers is None:
                raise
            raise click.UsageError(f"--registers {registers}: {err}") from None
        except HazardError as err:
            fail(err)
    guesses = [str(w.message) for w in caught if issubclass(w.category, GuessedValueWarning)]
    # the model's declarations (e.g. strided requests outside what it predicts)
    declared = [str(w.message) for w in caught
                if not issubclass(w.category, GuessedValueWarning)]
    if as_json:
        click.echo(json_text(model_json(sch, launch, guesses, declared), indent=2))
        return
    for w in dict.fromkeys(guesses + declared):
        click.echo(f"warning: {w}", err=True)
    click.echo("\n".join(model_text(sch, model, launch)))


def model_json(sch, launch, guesses: list[str], declared: list[str]) -> dict:
    """The ``--json`` document: the schedule's sizes, the launch's counts, memory counts and
    prediction, whether the counts equal the closed forms, the model's warnings."""
    try:
        formula = schedules.closed_form(sch)
    except UserScheduleError as err:   # the file's own closed_form raised or is malformed
        raise click.UsageError(str(err)) from None
    out = {"schedule": sch.family, "tile": sch.tile, **dtype_fields(sch),
           **{k.lower(): v for k, v in sch.params}, **launch.to_dict(),
           "closed_form_agrees": schedules.closed_form_agrees(formula, launch.counts.to_dict()),
           "guessed_values": guesses}
    if declared:
        out["model_warnings"] = declared
    return out


def model_text(sch, model, launch) -> list[str]:
    """The table: memory-system counts, predicted traffic and time with its terms."""
    from tiletraffic.simulator.model.prediction import (ADDED_TIME_TERMS, bound_name,
                                                        method_text, term_name)

    p = launch.prediction
    mem = launch.memory
    rows = [("global loads (elements)", launch.counts.global_load_elems),
            ("global load requests", mem.global_load_requests),
            ("global load sectors", mem.global_load_sectors),
            ("sectors per load request", f"{mem.global_load_sectors_per_request:.2f}"),
            ("global stores (elements)", launch.counts.global_store_elems),
            ("global store requests", mem.global_store_requests),
            ("global store sectors", mem.global_store_sectors),
            ("sectors per store request", f"{sectors_per_store_request(mem):.2f}"),
            ("local loads (elements)", launch.counts.local_load_elems),
            ("local bank conflicts", mem.local_bank_conflicts),
            ("L2 -> L1 sectors (predicted)", p.l2_read_sectors),
            ("L1 load hit rate (predicted)", f"{p.l1_load_hit_rate:.3f}"),
            ("DRAM read bytes (predicted)", p.dram_read_bytes),
            ("DRAM read bytes (lock-step)", p.dram_read_bytes_lockstep),
            ("DRAM write bytes (predicted)", dram_write_text(sch, model, p.dram_write_bytes)),
            ("registers per work-item", "not modelled" if p.registers_per_work_item is None
             else p.registers_per_work_item),
            ("issue term (us)", f"{p.time_terms_s['issue_s'] * 1e6:.1f}  (instructions: "
             + _issue_instructions(p.methods.get("issue_s")) + ")"),
            ("resident work-groups per CU", p.resident_work_groups_per_cu),
            ("work-groups on the busiest CU", p.work_groups_per_cu),
            ("predicted time (ms)",
             f"{p.predicted_time_s * 1e3:.4f}  ({bound_name(p.bound)}-bound)"),
            ("  of which (us)", " + ".join(
                f"{label} {p.time_terms_s[key] * 1e6:.1f}" for label, key in (
                    (bound_name(p.bound), p.bound + "_s"),
                    *((term_name(k), k) for k in ADDED_TIME_TERMS))))]
    head = (f"{sch.family} on model {model.name}: " +
            params_text(sch) + f" tile={sch.tile}"
            + storage_text(sch))
    if is_sequence(sch):
        lines = [head, f"  predicted time (ms)              {p.predicted_time_s * 1e3:.4f}  "
                       f"(the sum of its {len(sch.kernels)} kernels', launched in order)"]
        for kernel, part in zip(sch.kernels, launch.kernels):
            lines += ["  " + line for line in model_text(kernel, model, part)]
        return lines
    return [head,
            *(f"  {label:32s} {value}" for label, value in rows),
            "  methods: " + "; ".join(method_text(k, v) for k, v in p.methods.items())]


def sectors_per_store_request(mem) -> float:
    """Sectors per global store request of ``mem`` (a MemoryCounts; 0.0 without stores)."""
    return mem.global_store_sectors / mem.global_store_requests \
        if mem.global_store_requests else 0.0


def output_lines(sch, line_bytes: int) -> int:
    """The L2 lines the outputs of ``sch`` (one kernel) occupy: each output array's bytes
    in whole lines of ``line_bytes`` (buffers start on a line)."""
    p = sch.param_values
    return sum(-(-math.prod(p[s] for s in a.shape) * a.element_bytes // line_bytes)
               for a in sch.arrays if a.is_output)


def dram_write_text(sch, model, dram_write_bytes: float) -> str:
    """The DRAM write bytes of ``sch`` (one kernel) on ``model``, as shown: the model's
    write-back (an expected value, in general not a whole number of lines) rounded to whole
    lines of ``model.line_bytes``, with why it is less than the output: the output's other
    lines are still in the L2 when the kernel ends and reach DRAM after it, outside the
    kernel's DRAM writes."""
    line = model.line_bytes
    total = output_lines(sch, line)
    written = min(total, int(round(dram_write_bytes / line)))
    kept = total - written
    lines = f"line{'s' if total != 1 else ''} of {line} B"
    if kept == 0:
        why = f"all the output's {total} {lines} are evicted during the kernel"
    elif written == 0:
        why = (f"the output's {total} {lines} {'are' if total != 1 else 'is'} still in the "
               "L2 when the kernel ends and reach DRAM after it")
    else:
        why = (f"{written} of the output's {total} {lines} are evicted during the kernel; the "
               f"other {kept} {'are' if kept != 1 else 'is'} still in the L2 when it ends and "
               "reach DRAM after it")
    exact = written * line == dram_write_bytes
    return (f"{written * line}  ({why}" +
            ("" if exact else f"; the model's expected {dram_write_bytes:g} B in whole lines")
            + ")")


def _issue_instructions(method: str | None) -> str:
    """What the issue term counted, from its ``methods`` entry (None: the default)."""
    if method is None:
        return "FMAs, requests, barriers"
    build = method.startswith("issue: the build's")
    if "(issue_rates)" not in method:
        return "the build's"
    return ("the build's" if build else "FMAs, requests, barriers + estimated rest") + \
        ", at the measured rate of its sub-groups per scheduler"
