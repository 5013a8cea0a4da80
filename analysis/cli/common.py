"""What every command shares: building SCHEDULE through the resolver, the errors a user can
cause (one line; exit 2 for usage and for an output that cannot be written, 1 for a fault or
a failed run), the memory and time budget of a launch, the device choice.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from tiletraffic.simulator.kernels import families as schedules
from tiletraffic.simulator.ir.sequence import is_sequence, kernels_of

from tiletraffic.frontend.opencl.translate import FrontendError

from tiletraffic.frontend import launch_file, resolver, user_schedule
from tiletraffic.analysis.cli.options import family_options

GROUP_WORK_LIMIT = 2**31
"""Most loop iterations (work-items × K) one work-group may need: about a minute here."""

LONG_RUN_S = 60.0
"""Estimated simulation time above which a note is printed before starting."""

NO_REFERENCE = ("no reference: define reference(inputs) in the schedule's file (a launch "
                "file's [reference] function) or give --reference FILE.py:FUNCTION")


def fail(err: Exception) -> None:
    """Print ``err`` as one line and exit with status 1."""
    click.echo(f"error: {err}", err=True)
    sys.exit(1)


def cannot_write(subject: str, err: OSError, fallback) -> str:
    """``cannot write <subject>: <reason>``, then the file in question in parentheses unless
    the reason already names it (``err.filename``, else ``fallback``; nothing when empty)."""
    reason, named = str(err.strerror or err), str(err.filename or fallback or "")
    return f"cannot write {subject}: {reason}" + \
        ("" if not named or named in reason else f" ({named})")


def write_failed(what: str, where, err: OSError) -> None:
    """Exit on an error writing ``what`` under the folder ``where`` (None: the file's own
    path): one line naming the file and exit status 2, whatever the OS error (an output path
    that cannot be a folder, :class:`analysis.files.OutputNotWritable`, a full disk, a
    read-only file system), as for an output that cannot be written on stdout
    (:data:`analysis.cli.OUTPUT_EXIT`): 1 says a fault was found in a kernel."""
    where = err.filename if where is None else where
    subject = what if where is None else f"{what} under {str(where)!r}"
    click.echo(f"error: {cannot_write(subject, err, where)}", err=True)
    sys.exit(2)


def build_schedule(spec: str, m=None, k=None, n=None, tile=None, chunk=None, *,
                   example_shape: bool = True):
    """The schedule SCHEDULE names at the sizes and family options given on the command
    line (:func:`tiletraffic.frontend.resolver.resolve`, options spelled as flags); every
    error a ``click.UsageError`` (exit 2) of one line.

    ``example_shape`` (every command but ``run``, which measures): a family given without
    --m, --k and --n is built at its example shape, said in a note on stderr; without it
    a family needs its sizes."""
    try:
        sch = resolver.resolve(spec, resolver.Sizes(m, k, n, tile, chunk), family_options(),
                               example_shape=example_shape, spell=resolver.flag)
    except (schedules.ScheduleError, user_schedule.UserScheduleError,
            launch_file.LaunchFileError, FrontendError) as err:
        raise click.UsageError(str(err)) from None
    if example_shape and m is None and k is None and n is None and \
            spec in schedules.FAMILIES + schedules.SEQUENCE_FAMILIES:
        shape = " ".join(f"{name}={value}" for name, value in sch.param_values.items()
                         if name in ("M", "K", "N"))
        click.echo(f"note: {spec} at its example shape, {shape} tile={sch.tile} (no sizes "
                   "given)", err=True)
    return sch


def is_user_spec(schedule) -> bool:
    """SCHEDULE is the user's own: FILE.py:FUNCTION or LAUNCH.toml."""
    return user_schedule.is_file_spec(schedule) or launch_file.is_launch_spec(schedule)


def given(name: str) -> bool:
    """The option (parameter ``name``) of the running command was given on its command line
    (or through an environment variable), not left at its default."""
    from click.core import ParameterSource

    ctx = click.get_current_context()
    return ctx.get_parameter_source(name) in (ParameterSource.COMMANDLINE,
                                              ParameterSource.ENVIRONMENT)


def option_name(name: str) -> str:
    """How the user writes the option of parameter ``name``: its long form (``--repeat``)."""
    ctx = click.get_current_context()
    param = next((p for p in ctx.command.params if p.name == name), None)
    if param is None or not param.opts:
        return name
    if not isinstance(param, click.Option):
        return param.human_readable_name
    return max(param.opts, key=len)


def refuse_unused(names, why: str, remedy: str | None = None) -> None:
    """Refuse (usage error, exit 2, one line) the options among ``names`` (parameter names)
    that were given but would be ignored in the combination chosen: an option that has no
    effect is refused, never silently dropped. ``why`` says which combination and why, as
    ``with --top 0: nothing is measured``; ``remedy`` what to do instead (default: leave it
    out). Nothing is refused when none of them was given."""
    unused = [option_name(name) for name in names if given(name)]
    if unused:
        one = len(unused) == 1
        raise click.UsageError(f"{', '.join(unused)} {'has' if one else 'have'} no effect "
                               f"{why}; {remedy or ('leave it out' if one else 'leave them out')}")


def refuse_seed_unless_random(inputs_kind: str) -> None:
    """Refuse (:func:`refuse_unused`, exit 2) a --seed given with --inputs of a kind that is
    not drawn at random (ones, arange): the seed would change nothing."""
    from tiletraffic.simulator.engine.reference import RANDOM_INPUT_KINDS

    if inputs_kind not in RANDOM_INPUT_KINDS:
        refuse_unused(("seed",), f"with --inputs {inputs_kind}: the inputs are not random",
                      f"leave it out, or give --inputs {' or '.join(RANDOM_INPUT_KINDS)}")


def one_name_or_all(name, check_all: bool) -> None:
    if check_all and name:
        raise click.UsageError(f"give either a NAME ({name}) or --all, not both")
    if not check_all and not name:
        raise click.UsageError("give a schedule NAME or --all")


def check_work(sch, k: int | None) -> None:
    """Refuse a work-group whose simulation would take more than about a minute (of any
    kernel of a sequence)."""
    k = sch.param_values.get("K", k or 1)
    items = max(kernel.work_group_items for kernel in kernels_of(sch))
    per_group = items * k
    if per_group > GROUP_WORK_LIMIT:
        raise click.UsageError(
            f"one work-group of {items:,} work-items x K = {k} would run "
            f"{per_group:.3g} work-item loop iterations, above the simulation limit of "
            f"{GROUP_WORK_LIMIT:.3g} (about a minute on this machine); use a smaller tile "
            "or K")


def work(sch) -> int:
    """Multiply-adds of a family (M·K·N or M·K); of another schedule, work-items × K."""
    p = sch.param_values
    if sch.family in schedules.FAMILIES + schedules.SEQUENCE_FAMILIES:
        return p["M"] * p["K"] * p.get("N", 1)
    return sum(k.work_group_items * k.work_groups for k in kernels_of(sch)) * p.get("K", 1)


def check_out_file(path: str | None, option: str = "--out") -> None:
    """Refuse (usage error, exit 2) an output file whose folder cannot be created or
    written, before any work (creating nothing: a command that stops early leaves no
    folder behind)."""
    if path is None:
        return
    from tiletraffic.analysis.files import check_writable, refuse_non_file
    folder = os.path.dirname(os.path.abspath(path))
    try:
        refuse_non_file(path)
        check_writable(folder)
    except OSError as err:
        raise click.UsageError(cannot_write(f"{option} {path!r}", err,
                                             folder if path else "")) from None


def check_out_folder(folder: str, why: str, option: str = "--out") -> None:
    """Refuse (usage error, exit 2) an output folder that is a file (``why``: what the
    option names there) or cannot be written, before any work."""
    from tiletraffic.analysis.files import check_writable

    if os.path.exists(folder) and not os.path.isdir(folder):
        raise click.UsageError(f"{option} {folder!r}: {why}, and this is a file")
    try:
        check_writable(os.path.abspath(folder))
    except OSError as err:
        raise click.UsageError(cannot_write(f"{option} {folder!r}", err, folder)) from None


def within_budget(sch, force: bool, classes=None, **how) -> None:
    """Estimate memory and time before a large launch; refuse (usage error, exit 2) what
    would not fit in the available memory unless ``force``; note long runs on stderr.

    ``classes``: why each kernel's work-group classes are not proved (the command's
    ``analysis.cli.model.classes_problems``), taken by the estimate instead of proving
    them again; ``how``: ``device=True`` for a run on a device, else the arguments of
    ``simulator.engine.budget.estimate_simulation``."""
    from tiletraffic.simulator.engine.budget import BudgetError, check_budget, estimate_device_run

    est = estimate_device_run(sch) if how.pop("device", False) else \
        _estimate_simulation(sch, classes, how)
    if not force:
        try:
            check_budget(est, sch.family)
        except BudgetError as err:
            raise click.UsageError(str(err)) from None
    if est.time_s > LONG_RUN_S:
        click.echo(f"note: {sch.family} is estimated to take {est.describe()}", err=True)


def _estimate_simulation(sch, classes, how: dict):
    """``estimate_simulation(sch, **how)``, each kernel by work-group classes only where
    ``classes`` says they are proved (None: as the estimate decides)."""
    from tiletraffic.simulator.engine.budget import Estimate, estimate_simulation

    if classes is None or not how.get("work_group_classes"):
        return estimate_simulation(sch, **how)
    parts = [estimate_simulation(kernel, **{**how, "work_group_classes": why is None})
             for kernel, why in zip(kernels_of(sch), classes)]
    if not is_sequence(sch):
        return parts[0]
    return Estimate(sum(e.memory_bytes for e in parts), sum(e.time_s for e in parts),
                    sum(e.work_groups for e in parts))


def select_device(spec):
    """``gpu.devices.device.select_device``, its warnings (a simulator chosen by number) on stderr."""
    import warnings

    from tiletraffic.gpu.devices.device import NoMatchingDeviceError
    from tiletraffic.gpu.devices.device import select_device as select

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            target = select(spec)
        except NoMatchingDeviceError as err:
            raise click.UsageError(str(err)) from None
    for w in caught:
        click.echo(f"warning: {w.message}", err=True)
    return target


def check_device_spec(device) -> None:
    """Refuse (exit 2, one line) a --device that names no installed device, before any
    work."""
    if device is None:
        return
    from tiletraffic.gpu.devices.device import (NoMatchingDeviceError,
                                                check_device_spec as check)

    try:
        check(device)
    except NoMatchingDeviceError as err:
        raise click.UsageError(str(err)) from None


def reference_fn(schedule: str, reference_spec: str | None):
    """The user's reference function for SCHEDULE (None: built-in, or none defined)."""
    try:
        if launch_file.is_launch_spec(schedule) and reference_spec is None:
            return launch_file.reference_function(schedule)
        return user_schedule.reference_function(schedule, reference_spec)
    except (user_schedule.UserScheduleError, launch_file.LaunchFileError) as err:
        raise click.UsageError(str(err)) from None


def command_line() -> str:
    """This process's command line, as the results files record it."""
    import shlex

    return "tiletraffic " + " ".join(shlex.quote(a) for a in sys.argv[1:])


def render_results(render_fn, folder, results_name: str, writer: str):
    """``render_fn(folder)``, a re-rendering from the results file ``folder/results_name``;
    a file that is not a JSON object (:func:`analysis.files.read_json_object`, the
    renderer's reader) or lacks a field the rendering reads is bad input
    (exit 2, one line naming the file and the field; ``writer`` names the command that
    writes such files)."""
    from tiletraffic.analysis.files import ResultsFileError

    not_ours = f"{Path(folder) / results_name}: not a results file of {writer}"
    try:
        return render_fn(folder)
    except ResultsFileError as err:
        raise click.UsageError(str(err)) from None
    except KeyError as err:
        raise click.UsageError(f"{not_ours} (field {err} missing)") from None
    except (TypeError, IndexError, AttributeError):
        raise click.UsageError(f"{not_ours} (a field is of another type or shape)") from None
    except ValueError as err:
        raise click.UsageError(f"{not_ours} ({err})") from None
