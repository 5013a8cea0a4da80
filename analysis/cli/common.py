"""What every command shares: building SCHEDULE through the resolver, the errors a user can
cause (one line; exit 2 for usage and for an output that cannot be written, 1 for a fault or
a failed run), the memory and time budget of a launch, the device choice.
"""
from __future__ import annotations

import sys

import click

from tiletraffic.simulator.kernels import families as schedules
from tiletraffic.simulator.ir.sequence import kernels_of

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
                         if name in ("M", "K", "N", "BATCH"))
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


def run_inputs(sch, values: bool, seed: int | None, inputs_kind: str):
    """This run's inputs of ``sch`` (``random_inputs`` of ``--inputs`` from
    ``default_rng(seed)``; None without ``values``), after a one-line note (stderr) where
    a kernel of ``sch`` branches on floats of its data
    (``simulator.ir.nodes.branches_on_data``): its counts are those of the inputs executed,
    this run's with ``values``, else the seeded ones (those of ``--seed 0``)."""
    import numpy as np
    from tiletraffic.simulator.engine.data_inputs import random_inputs
    from tiletraffic.simulator.ir.nodes import branches_on_data

    if any(branches_on_data(kernel.body) for kernel in kernels_of(sch)):
        _note_counts_of_the_data(values, seed, inputs_kind)
    return random_inputs(sch, np.random.default_rng(seed), inputs_kind) if values else None


def _note_counts_of_the_data(values: bool, seed: int | None, inputs_kind: str) -> None:
    """Print the note of :func:`run_inputs` (stderr)."""
    from tiletraffic.simulator.engine.data_inputs import RANDOM_INPUT_KINDS

    drawn = f", --seed {seed}" if seed is not None else \
        ", drawn afresh" if inputs_kind in RANDOM_INPUT_KINDS else ""
    these = (f"this run's input values (--inputs {inputs_kind}{drawn}); --counts-only "
             "counts on the seeded inputs, the same every run (those of --seed 0)" if values
             else "the seeded inputs, the same every run (those of --seed 0)")
    click.echo(f"note: the kernel branches on floats of its data: its counts are those of "
               f"{these}", err=True)


def refuse_seed_unless_random(inputs_kind: str | None) -> str:
    """Refuse (:func:`refuse_unused`, exit 2) a --seed given with --inputs of a kind that is
    not drawn at random (ones, arange): the seed would change nothing. Returns the kind
    (``normal`` where none is given)."""
    from tiletraffic.simulator.engine.data_inputs import RANDOM_INPUT_KINDS

    inputs_kind = inputs_kind or "normal"
    if inputs_kind not in RANDOM_INPUT_KINDS:
        refuse_unused(("seed",), f"with --inputs {inputs_kind}: the inputs are not random",
                      f"leave it out, or give --inputs {' or '.join(RANDOM_INPUT_KINDS)}")
    return inputs_kind


def one_name_or_all(name, check_all: bool) -> None:
    if check_all and name:
        raise click.UsageError(f"give either a NAME ({name}) or --all, not both")
    if not check_all and not name:
        raise click.UsageError("give a schedule NAME or --all")


def refuse_beyond_limits(sch, limits, where: str = "") -> None:
    """Refuse (usage error, exit 2, one line) a schedule, or any kernel of a sequence, that a
    device of ``limits`` (``None``: no limits) would not launch
    (:func:`simulator.engine.limits.launch_refusal`). Every command calls it first, before
    any check, estimate or simulation; ``where`` prefixes the message (a case of a file)."""
    from tiletraffic.simulator.engine.limits import launch_refusal

    refusal = None if limits is None else launch_refusal(sch, limits)
    if refusal:
        raise click.UsageError(where + refusal)


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
    """Multiply-adds of a family (M·K·N, times BATCH for a batch, or M·K); of another schedule (a launch file, a
    user's Python schedule, a demo), its work-item loop steps: per kernel its work-items
    × the iterations of its deepest loop nest
    (:func:`simulator.engine.budget.work_item_steps`), what a GEMM's M·K·N counts."""
    from tiletraffic.simulator.engine.budget import work_item_steps

    p = sch.param_values
    if sch.family in schedules.FAMILIES + schedules.SEQUENCE_FAMILIES:
        return p["M"] * p["K"] * p.get("N", 1) * p.get("BATCH", 1)
    return work_item_steps(sch)


def work_text(sch) -> str:
    """What :func:`work` counts for ``sch``, for messages: ``M·K·N``, ``M·K`` or ``work-item
    loop steps``."""
    if sch.family in schedules.FAMILIES + schedules.SEQUENCE_FAMILIES:
        if "BATCH" in sch.param_values:
            return "BATCH·M·K·N"
        return "M·K·N" if "N" in sch.param_values else "M·K"
    return "work-item loop steps"


def within_budget(sch, force: bool, classes=None, long_note: bool = True, **how):
    """Estimate memory and time before a large launch; refuse (usage error, exit 2) what
    would not fit in the available memory unless ``force``; note long runs on stderr
    (unless not ``long_note``: :func:`note_long_run` left to the caller).
    Returns the estimate (``simulator.engine.budget.Estimate``).

    ``classes``: why each kernel's work-group classes are not proved (the command's
    ``analysis.cli.model.classes_problems``), taken by the estimate instead of proving
    them again; ``how``: ``device=True`` for a run on a device, else the arguments of
    ``simulator.engine.budget.estimate_simulation``."""
    from tiletraffic.simulator.engine.budget import (BudgetError, check_budget,
                                                     estimate_device_run, estimate_simulation)

    est = estimate_device_run(sch) if how.pop("device", False) else \
        estimate_simulation(sch, classes_problems=classes, **how)
    if not force:
        try:
            check_budget(est, sch.family)
        except BudgetError as err:
            raise click.UsageError(str(err)) from None
    if long_note:
        note_long_run(sch, est)
    return est


def note_long_run(sch, est) -> None:
    """A note on stderr when the estimate ``est`` of ``sch`` is above :data:`LONG_RUN_S`."""
    if est.time_known and est.time_s > LONG_RUN_S:
        click.echo(f"note: {sch.family} is estimated to take {est.describe()}", err=True)


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

