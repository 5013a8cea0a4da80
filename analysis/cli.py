"""The ``tiletraffic`` command line (click).

    tiletraffic simulate SCHEDULE --m M --k K [--n N] [--tile B] [--json]
    tiletraffic model SCHEDULE --m M --k K [--n N] [--tile B] [--device-model D]
                               [--registers R] [--json]
    tiletraffic run SCHEDULE --m M --k K [--n N] [--tile B] [--device D] [--repeat R] [--json]
    tiletraffic check SCHEDULE [...] | --all;  tiletraffic crosscheck SCHEDULE [...] | --all
    tiletraffic devices
    tiletraffic report [--device D] [--out DIR] [--quick]
    tiletraffic tune gemm --m M --n N --k K [--device D] [--device-model D] [--top T]
                          [--recheck R] [--out F]
    tiletraffic validate [--device D] [--device-model M] [--quick] [--predictions F] | --predict-only

Errors a user can cause (bad sizes, limits, missing device, build failures, wrong results)
are printed as one clear line and exit with status 2 (usage) or 1 (runtime), never as a
traceback.

SCHEDULE is a built-in name (a family; for check and crosscheck also a demo or a faulty
variant) or ``FILE.py:FUNCTION``, a function in the user's Python file that returns a
``Schedule`` (``analysis.user_schedule``): it is called with the sizes given (``--m``, ``--k``,
``--n``, ``--tile``, only those given, as keyword arguments). The result of such a schedule is
checked against the user's numpy reference: ``--reference FILE.py:FUNCTION``, else the
function ``reference`` of the schedule's file; without one, ``simulate`` skips the value
check (saying so) and ``run`` refuses. :func:`_build` is the one place that turns SCHEDULE
and the size options into a schedule.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click
import numpy as np

from tiletraffic.simulator import schedules
from tiletraffic.simulator.device import GENERIC_GPU, UNLIMITED, LimitError
from tiletraffic.simulator.engine import InputError, simulate
from tiletraffic.simulator.hazards import HazardError
from tiletraffic.simulator.reference import (
    INPUT_KINDS, error_over_tolerance, random_inputs, reference)
from tiletraffic.simulator.traffic_model import ADDED_TIME_TERMS

from . import closed_form, user_schedule

VALUES_AUTO_LIMIT = 2**24
"""Below this many multiply-adds, ``simulate`` also computes and checks the output."""

CLASSES_AUTO_LIMIT = 2**27
"""Above this many multiply-adds, counts are taken by work-group classes (exact, fast)."""

GROUP_WORK_LIMIT = 2**31
"""Most loop iterations (work-items × K) one work-group may need: about a minute here."""


class DeviceModelParam(click.ParamType):
    """A built-in device model's name or a model file (TOML) -> a ``DeviceModel``; anything
    else is a usage error that lists the built-in names or names the file's problem."""

    name = "NAME|FILE"

    def convert(self, value, param, ctx):
        from tiletraffic.simulator.device_model import (DeviceModel, DeviceModelError,
                                                        device_model)

        if isinstance(value, DeviceModel):
            return value
        try:
            return device_model(value)
        except KeyError as err:
            self.fail(err.args[0], param, ctx)
        except DeviceModelError as err:
            self.fail(str(err), param, ctx)


DEVICE_MODEL = DeviceModelParam()
"""The type of every ``--device-model`` option."""


def _check_work(sch, k: int | None) -> None:
    k = sch.param_values.get("K", k or 1)
    per_group = sch.work_group_items * k
    if per_group > GROUP_WORK_LIMIT:
        raise click.UsageError(
            f"one work-group of {sch.work_group_items:,} work-items x K = {k} would run "
            f"{per_group:.3g} work-item loop iterations, above the simulation limit of "
            f"{GROUP_WORK_LIMIT:.3g} (about a minute on this machine); use a smaller tile "
            "or K")


def _check_out_file(path: str | None, option: str = "--out") -> None:
    """Refuse an output file whose folder cannot be created or written, before any work."""
    if path is None:
        return
    from .report import ensure_writable
    folder = os.path.dirname(os.path.abspath(path))
    try:
        ensure_writable(Path(folder))
    except OSError as err:
        _fail(OSError(f"cannot write {option} {path!r}: {err.strerror or err} "
                      f"({err.filename or folder})"))


class ScheduleSpec(click.ParamType):
    """SCHEDULE: one of ``names`` or ``FILE.py:FUNCTION`` (checked for form only here; the
    file is loaded by :func:`_build`)."""

    name = "schedule"

    def __init__(self, names):
        self.names = tuple(names)

    def get_metavar(self, param, ctx=None) -> str:
        return "SCHEDULE"

    def convert(self, value, param, ctx):
        if value in self.names or user_schedule.is_file_spec(value):
            return value
        self.fail(f"{value!r} is neither a schedule name ({', '.join(self.names)}) nor "
                  "FILE.py:FUNCTION", param, ctx)


def _reference_option(f):
    return click.option(
        "--reference", "reference_spec", default=None, metavar="FILE.py:FUNCTION",
        help="numpy function inputs -> output (float64 arrays in logical shapes) that gives "
             "the expected result (default for SCHEDULE=FILE.py:...: the function "
             "'reference' of that file, if any; built-in schedules have their own).")(f)


INPUTS_OPTION = click.option(
    "--inputs", "inputs_kind", type=click.Choice(INPUT_KINDS),
    default="normal", show_default=True,
    help="Input values: random normal or uniform, or structured ones / arange (0, 1, 2, ... "
         "row-major) to read a result by eye; ones and arange can hide swapped indices.")
SEED_OPTION = click.option("--seed", type=click.IntRange(min=0), default=None,
                           help="Seed of the random inputs (default: fresh inputs every run).")


def _schedule_options(f):
    f = INPUTS_OPTION(f)
    f = SEED_OPTION(f)
    return _size_options(f)


BLOCKED = "gemm-register-blocked, gemm-vectorized, gemm-prefetch"
REGISTER_BLOCK_OPTIONS = (
    ("tm", f"{BLOCKED}: rows of C per work-item (default 4)."),
    ("tn", f"{BLOCKED}: columns of C per work-item (default 4)."),
    ("bk", f"{BLOCKED}: depth of one K step, the columns of the A tile and rows of the B "
           "tile (default 16)."),
    ("wg_rows", f"{BLOCKED}: work-items per work-group along the rows of C (default: "
                "--tile, the work-group width). matvec-rows-reduce: rows per work-group "
                "(default 8; --tile is the work-items per row, default 32)."),
)
"""Options of the register-blocked families: a work-group of --tile x --wg-rows work-items
computes a BM x BN block of C, BM = tm * wg_rows, BN = tn * tile, through BM x bk and
bk x BN local tiles (gemm-vectorized: tm, tn, bk, K and N multiples of 4); and of
matvec-rows-reduce (--wg-rows)."""


def _register_block_options(f):
    """--tm, --tn, --bk, --wg-rows: kept in the click context (read by :func:`_build`), so
    the commands' signatures stay as they are."""
    def remember(ctx, param, value):
        if value is not None:
            ctx.meta.setdefault("register_block", {})[param.name] = value
        return value

    for name, text in reversed(REGISTER_BLOCK_OPTIONS):
        f = click.option(f"--{name.replace('_', '-')}", name, type=int, default=None,
                         expose_value=False, callback=remember,
                         help=text)(f)
    return f


def _register_block_values() -> dict:
    ctx = click.get_current_context(silent=True)
    return dict(ctx.meta.get("register_block", {})) if ctx is not None else {}


def _size_options(f):
    f = _register_block_options(f)
    f = click.option("--a-tile", type=click.Choice(["row-major", "transposed"]), default=None,
                     help="gemm-tiled: store the A tile transposed (bank conflicts).")(f)
    f = click.option("--padding", type=int, default=None,
                     help="gemm-tiled: extra words per local tile row.")(f)
    f = click.option("--mapping", type=click.Choice(["row-major", "transposed"]), default=None,
                     help="gemm-naive: NDRange dimension 0 over columns (row-major, "
                          "coalesced) or over rows (transposed, uncoalesced).")(f)
    f = click.option("--chunk", type=int, default=None,
                     help="matvec-local: elements of x per staged chunk (default: work-group size).")(f)
    f = click.option("--tile", "-b", type=int, default=None,
                     help="Tile width B for GEMM (work-group B×B), or work-items per "
                          "work-group for matvec. Default 16 (GEMM) or 256 (matvec). "
                          "FILE.py:FUNCTION: passed as tile= when given.")(f)
    f = click.option("--n", "n", type=int, default=None, help="Columns of B and C (GEMM only).")(f)
    f = click.option("--k", "k", type=int, default=None,
                     help="Columns of A (inner dimension); required for a family.")(f)
    f = click.option("--m", "m", type=int, default=None,
                     help="Rows of A and of C (or y); required for a family.")(f)
    from tiletraffic.simulator.variants import names
    f = click.argument("schedule", type=ScheduleSpec(names()))(f)
    return f


def _named_schedule_options(f):
    """NAME (a family, demo or broken variant) and optional sizes, for check/crosscheck."""
    f = _register_block_options(f)
    f = click.option("--chunk", type=int, default=None, help="matvec-local chunk.")(f)
    f = click.option("--tile", "-b", type=int, default=None,
                     help="Tile width or work-group size.")(f)
    f = click.option("--n", "n", type=int, default=None, help="Columns of B and C (GEMM).")(f)
    f = click.option("--k", "k", type=int, default=None, help="Columns of A.")(f)
    f = click.option("--m", "m", type=int, default=None,
                     help="Rows of A (default: an example shape).")(f)
    from tiletraffic.simulator.variants import names
    return click.argument("name", required=False, type=ScheduleSpec(names()))(f)


def _one_name_or_all(name, check_all: bool) -> None:
    if check_all and name:
        raise click.UsageError(f"give either a NAME ({name}) or --all, not both")
    if not check_all and not name:
        raise click.UsageError("give a schedule NAME or --all")


def _build(schedule, m, k, n, tile, chunk, mapping=None, padding=None, a_tile=None, *,
           named=False):
    """The schedule SCHEDULE names, at the sizes given: the one parser of SCHEDULE.

    ``FILE.py:FUNCTION``: the user's function called with the sizes given
    (:func:`user_schedule.load`); family options (``--chunk``, ``--mapping``, ``--padding``,
    ``--a-tile``) are refused. Otherwise a family (sizes required), or with ``named=True``
    (check, crosscheck) also a demo or faulty variant, whose missing sizes default to its
    example shape. Every error is a ``click.UsageError`` (exit 2) of one line.
    """
    options = {key: v for key, v in (("mapping", mapping), ("padding", padding),
                                     ("a_tile", a_tile)) if v is not None}
    options.update(_register_block_values())
    if user_schedule.is_file_spec(schedule):
        extra = [f"--{key.replace('_', '-')}" for key, v in (("chunk", chunk), *options.items())
                 if v is not None]
        if extra:
            raise click.UsageError(f"{', '.join(extra)} applies to built-in schedules only, "
                                   f"not to {schedule}")
        try:
            return user_schedule.load(schedule, m=m, k=k, n=n, tile=tile)
        except user_schedule.UserScheduleError as err:
            raise click.UsageError(str(err)) from None
    if named:
        from tiletraffic.simulator.variants import CHECK_EXAMPLES, build_any
        try:
            if options:  # --tm ...: a family at its example shape unless sizes are given
                if schedule not in schedules.FAMILY_OPTIONS:
                    raise schedules.ScheduleError(
                        f"--{', --'.join(o.replace('_', '-') for o in options)} applies to "
                        f"{', '.join(schedules.FAMILY_OPTIONS)} only, not {schedule}")
                ex = CHECK_EXAMPLES[schedule]
                m, k, n = (ex[0], ex[1], ex[2]) if m is None else (m, k, n)
                return schedules.build(schedule, m, k, n, ex[3] if tile is None else tile,
                                       chunk, **options)
            return build_any(schedule, m, k, n, tile, chunk)
        except schedules.ScheduleError as err:
            raise click.UsageError(str(err)) from None
    if schedule not in schedules.FAMILIES:  # a demo or faulty variant: as check builds it
        return _build(schedule, m, k, n, tile, chunk, mapping, padding, a_tile, named=True)
    if m is None or k is None:
        raise click.UsageError(f"{schedule} needs --m and --k (got m={m}, k={k})")
    if n is not None and schedule in (schedules.MATVEC_FAMILIES
                                      + schedules.REDUCTION_MATVEC_FAMILIES
                                      + schedules.EPILOGUE_FAMILIES):
        raise click.UsageError(f"{schedule} computes y = A·x: --n does not apply (got {n})")
    try:
        return schedules.build(schedule, m, k, n, tile, chunk, **options)
    except schedules.ScheduleError as err:
        raise click.UsageError(str(err)) from None


FORCE_OPTION = click.option(
    "--force", is_flag=True,
    help="Run even when the estimated memory exceeds what this machine has available.")


def _within_budget(sch, force: bool, **how) -> None:
    """Estimate memory and time before a large launch; refuse (usage error, exit 2) what
    would not fit in the available memory unless ``force``; note long runs on stderr."""
    from tiletraffic.simulator.budget import (
        BudgetError, check_budget, estimate_device_run, estimate_simulation)

    est = estimate_device_run(sch) if how.pop("device", False) else \
        estimate_simulation(sch, **how)
    if not force:
        try:
            check_budget(est, sch.family)
        except BudgetError as err:
            raise click.UsageError(str(err)) from None
    if est.time_s > LONG_RUN_S:
        click.echo(f"note: {sch.family} is estimated to take {est.describe()}", err=True)


LONG_RUN_S = 60.0
"""Estimated simulation time above which a note is printed before starting."""


def _select_device(spec):
    """``gpu.device.select_device``, its warnings (a simulator chosen by number) on stderr."""
    import warnings

    from tiletraffic.gpu.device import select_device

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        target = select_device(spec)
    for w in caught:
        click.echo(f"warning: {w.message}", err=True)
    return target


def _reference_fn(schedule: str, reference_spec: str | None):
    """The user's reference function for SCHEDULE (None: built-in, or none defined)."""
    try:
        return user_schedule.reference_function(schedule, reference_spec)
    except user_schedule.UserScheduleError as err:
        raise click.UsageError(str(err)) from None


NO_REFERENCE = ("no reference: define reference(inputs) in the schedule's file or give "
                "--reference FILE.py:FUNCTION")


def _work(sch) -> int:
    """Multiply-adds of a family (M·K·N or M·K); of another schedule, work-items × K."""
    p = sch.param_values
    if sch.family in schedules.FAMILIES:
        return p["M"] * p["K"] * p.get("N", 1)
    return sch.work_group_items * sch.work_groups * p.get("K", 1)


def _fail(err: Exception) -> None:
    click.echo(f"error: {err}", err=True)
    sys.exit(1)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tiletraffic")
def main() -> None:
    """tiletraffic: count, predict and measure the memory traffic of naive and tiled
    matrix kernels (GEMM, matrix-vector) in OpenCL's execution model.

    SCHEDULE is a built-in name or FILE.py:FUNCTION, your own kernel: a function of your
    Python file that returns a tiletraffic Schedule (README, "Tutorial: your own kernel")."""


@main.command("simulate")
@_schedule_options
@_reference_option
@click.option("--values/--counts-only", default=None,
              help="Also compute the output and check it against numpy (default: only when "
                   f"M·N·K <= {VALUES_AUTO_LIMIT}).")
@click.option("--no-limits", is_flag=True,
              help="Do not enforce generic GPU limits (1024 work-items, 48 KiB local memory).")
@click.option("--hazards", type=click.Choice(["raise", "report"]), default="raise",
              show_default=True, help="Stop at the first hazard, or report them all.")
@click.option("--device-model", default=None, type=DEVICE_MODEL,
              help="Also model the memory system of this device: requests, sectors, bank "
                   "conflicts, L2 and DRAM traffic, predicted time (counts by work-group "
                   "classes). A built-in model (nvidia-h200, nvidia-h200-cuda, generic-gpu) "
                   "or a model file: see `tiletraffic device-model`.")
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
@FORCE_OPTION
def simulate_cmd(schedule, m, k, n, tile, chunk, mapping, padding, a_tile, seed, inputs_kind,
                 reference_spec, values, no_limits, hazards, device_model, as_json, force):
    """Execute SCHEDULE in the simulator and print its exact traffic counts, next to the
    closed forms ("no closed form" for a schedule without them).

    SCHEDULE: a family (gemm-naive, gemm-tiled, gemm-register-blocked, gemm-vectorized,
    gemm-prefetch, matvec-naive, matvec-local, matvec-local-whole, matvec-rows-reduce), a demo
    or faulty variant (as for check; missing sizes: its example shape), or FILE.py:FUNCTION, a function of your Python file that returns a
    tiletraffic Schedule; it is called with the sizes given (m=, k=, n=, tile=). Its result
    is checked against --reference (default: the file's function 'reference'), or not
    checked, with a note, when there is none."""
    sch = _build(schedule, m, k, n, tile, chunk, mapping, padding, a_tile)
    _check_work(sch, k)
    if device_model:
        _within_budget(sch, force, compute_values=False, work_group_classes=True)
        _simulate_with_model(sch, device_model, as_json)
        return
    ref_fn = _reference_fn(schedule, reference_spec)
    work = _work(sch)
    values = work <= VALUES_AUTO_LIMIT if values is None else values
    if values and work > CLASSES_AUTO_LIMIT:
        raise click.UsageError(f"--values with M·K·N = {work} above {CLASSES_AUTO_LIMIT} would "
                               "take too long; use --counts-only")
    _within_budget(sch, force, compute_values=values,
                   work_group_classes=not values and work > CLASSES_AUTO_LIMIT)
    inputs = random_inputs(sch, np.random.default_rng(seed), inputs_kind) if values else None
    try:
        res = simulate(sch, inputs, compute_values=values, hazards=hazards,
                       limits=UNLIMITED if no_limits else GENERIC_GPU,
                       work_group_classes=not values and work > CLASSES_AUTO_LIMIT,
                       sum_lengths=values)
    except (LimitError, InputError) as err:
        raise click.UsageError(str(err)) from None
    except HazardError as err:
        _fail(err)
    counts = res.counts.to_dict()
    formula = closed_form.counts_or_none(sch)
    by_classes = not values and work > CLASSES_AUTO_LIMIT
    check = worst = None
    skipped = None if values else "counts only"
    if values and ref_fn is None and user_schedule.is_file_spec(schedule):
        skipped = NO_REFERENCE
    elif values:
        from tiletraffic.gpu.runtime import check_result

        from tiletraffic.simulator.sum_length import largest

        try:
            ref = reference(sch, inputs, ref_fn, sum_length=max(
                [0, *(largest(v) for v in res.sum_lengths.values())]))
        except ValueError as err:  # the user's reference: raised, wrong shape, not finite
            raise click.UsageError(str(err)) from None
        worst = check_result(np.asarray(res.outputs[ref.output]).reshape(ref.value.shape),
                             ref.value, ref.k, ref.abs_product)
        check = worst.error_over_tolerance
    p = sch.param_values
    if as_json:
        out = {"schedule": sch.family, "m": p.get("M", m), "k": p.get("K", k),
               "n": p.get("N", n), "tile": sch.tile,
               "local_size": list(sch.local_size), "global_size": list(sch.global_size),
               **counts, "closed_form_agrees": None if formula is None else formula == counts,
               "result_error_over_tolerance": check, "result_check_skipped": skipped,
               "work_group_classes": by_classes,
               "inputs": inputs_kind if values else None,
               "result_worst_index": list(worst.worst_index) if worst and worst.worst_index
               else None,
               "result_unwritten": worst.unwritten_count if worst else None,
               "result_written_nonfinite": worst.written_nonfinite_count if worst else None,
               "hazards": [h.to_dict() for h in res.hazards]}
        click.echo(json.dumps(out, indent=2))
        sys.exit(1 if check is not None and not check <= 1 else 0)
    click.echo(f"{sch.family}  " + " ".join(f"{a}={v}" for a, v in sch.params) +
               f"  tile={sch.tile}  work-group {' x '.join(map(str, sch.local_size))}"
               f"  NDRange {' x '.join(map(str, sch.global_size))}")
    click.echo(f"{'counter':32s} {'simulated':>16s} {'closed form':>16s}")
    for key, value in counts.items():
        for name, v in (value.items() if isinstance(value, dict) else [(None, value)]):
            label = key if name is None else f"{key}[{name}]"
            expected = "-" if formula is None else (
                formula[key] if name is None else formula[key][name])
            click.echo(f"{label:32s} {v:16d} {expected:>16}")
    if formula is None:
        click.echo(f"no closed form for {sch.family} (the simulated counts stand alone)")
    for h in res.hazards:
        click.echo(f"hazard [{h.kind}] {h.detail}")
    if check is not None:
        click.echo(f"result vs float64 "
                   + ("reference" if ref_fn is not None else "numpy")
                   + f" ({inputs_kind} inputs): worst error / tolerance = "
                   f"{check:.3g} at {ref.output}[{', '.join(map(str, worst.worst_index or ()))}]"
                   f" ({'ok' if check <= 1 else 'MISMATCH: ' + worst.message(ref.output)})")
        if not check <= 1:
            sys.exit(1)  # a wrong result is a failure, as in run
    elif skipped == NO_REFERENCE:
        click.echo(f"result not checked: {NO_REFERENCE}")
    else:
        click.echo("counts only" + (" (by work-group classes: one work-group executed per class "
                                    "of identical traffic; races in global memory and unwritten "
                                    "outputs need the full launch and were not checked)"
                                    if by_classes else "")
                   + "; add --values to also compute and check the result")


def _simulate_with_model(sch, model, as_json: bool, registers: int | None = None) -> None:
    import warnings

    from tiletraffic.simulator.traffic_model import model_launch

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            launch = model_launch(sch, model, registers_per_work_item=registers)
        except (LimitError, InputError) as err:
            raise click.UsageError(str(err)) from None
        except ValueError as err:  # --registers beyond the device's or work-group's limit
            if registers is None:
                raise
            raise click.UsageError(f"--registers {registers}: {err}") from None
        except HazardError as err:
            _fail(err)
    from tiletraffic.simulator.device_model import GuessedValueWarning

    guesses = [str(w.message) for w in caught if issubclass(w.category, GuessedValueWarning)]
    # the model's declarations (e.g. strided requests outside what it predicts)
    declared = [str(w.message) for w in caught
                if not issubclass(w.category, GuessedValueWarning)]
    data = launch.to_dict()
    formula = closed_form.counts_or_none(sch)
    out = {"schedule": sch.family, "tile": sch.tile,
           **{k.lower(): v for k, v in sch.params}, **data,
           "closed_form_agrees": None if formula is None else formula == launch.counts.to_dict(),
           "guessed_values": guesses}
    if declared:
        out["model_warnings"] = declared
    if as_json:
        click.echo(json.dumps(out, indent=2))
        return
    for w in guesses + declared:
        click.echo(f"warning: {w}", err=True)
    p = launch.prediction
    mem = launch.memory
    click.echo(f"{sch.family} on model {model.name}: " +
               " ".join(f"{k}={v}" for k, v in sch.params) + f" tile={sch.tile}")
    rows = [("global loads (elements)", launch.counts.global_load_elems),
            ("global load requests", mem.global_load_requests),
            ("global load sectors", mem.global_load_sectors),
            ("sectors per request", f"{mem.global_load_sectors_per_request:.2f}"),
            ("local loads (elements)", launch.counts.local_load_elems),
            ("local bank conflicts", mem.local_bank_conflicts),
            ("L2 -> L1 sectors (predicted)", p.l2_read_sectors),
            ("L1 load hit rate (predicted)", f"{p.l1_load_hit_rate:.3f}"),
            ("DRAM read bytes (predicted)", p.dram_read_bytes),
            ("DRAM read bytes (lock-step)", p.dram_read_bytes_lockstep),
            ("DRAM write bytes (predicted)", p.dram_write_bytes),
            ("registers per work-item", "not modelled" if p.registers_per_work_item is None
             else p.registers_per_work_item),
            ("resident work-groups per CU", p.resident_work_groups_per_cu),
            ("work-groups on the busiest CU", p.work_groups_per_cu),
            ("predicted time (ms)", f"{p.predicted_time_s * 1e3:.4f}  ({p.bound}-bound)"),
            ("  of which (us)", " + ".join(
                f"{label} {p.time_terms_s[key] * 1e6:.1f}" for label, key in (
                    (p.bound, p.bound + "_s"),
                    *((k.removesuffix("_s").replace("_", " "), k) for k in ADDED_TIME_TERMS))))]
    for label, value in rows:
        click.echo(f"  {label:32s} {value}")
    click.echo("  methods: " + "; ".join(f"{k}: {v}" for k, v in p.methods.items()))


@main.command("model")
@_size_options
@click.option("--device-model", default="nvidia-h200", show_default=True, type=DEVICE_MODEL,
              help="The device model: requests, sectors, bank conflicts, L2 and DRAM "
                   "traffic, predicted time (counts by work-group classes).")
@click.option("--registers", type=click.IntRange(min=1), default=None,
              help="Registers per work-item of the compiled kernel (what `run` prints on "
                   "NVIDIA); they limit the resident work-groups. Default: estimated for "
                   "schedules with private arrays (a guess, warned), else not modelled.")
@click.option("--json", "as_json", is_flag=True, help="Print the model's output as JSON.")
@FORCE_OPTION
def model_cmd(schedule, m, k, n, tile, chunk, mapping, padding, a_tile, device_model,
              registers, as_json, force):
    """Model SCHEDULE's memory system and time on a device model: the output of
    `simulate SCHEDULE --device-model D`.

    SCHEDULE: a family or FILE.py:FUNCTION (as for simulate). Counts are taken by
    work-group classes, which assume that guards compare global ids with the sizes (as
    the built-in schedules do), so that only the first and last work-group of an NDRange
    dimension can differ."""
    sch = _build(schedule, m, k, n, tile, chunk, mapping, padding, a_tile)
    _check_work(sch, k)
    _within_budget(sch, force, compute_values=False, work_group_classes=True)
    _simulate_with_model(sch, device_model, as_json, registers)


@main.command("check")
@_named_schedule_options
@click.option("--all", "check_all", is_flag=True,
              help="Check every schedule, demo and broken variant on its example shape.")
@click.option("--json", "as_json", is_flag=True, help="Print the hazards as JSON.")
@click.option("--no-limits", is_flag=True,
              help="Do not enforce generic GPU limits (1024 work-items, 48 KiB local memory).")
@SEED_OPTION
@INPUTS_OPTION
@FORCE_OPTION
def check_cmd(name, m, k, n, tile, chunk, check_all, as_json, no_limits, seed, inputs_kind,
              force):
    """Run only the hazard checks: races in local and global memory, barrier divergence,
    out-of-bounds accesses, uninitialized reads, unwritten outputs, on the full launch.
    Exits 1 when a hazard is found (with --all: when a correct schedule has one or a broken
    variant misses its expected kind).

    SCHEDULE: a family, demo or faulty variant (missing sizes: its example shape), or
    FILE.py:FUNCTION, called with the sizes given."""
    from tiletraffic.simulator.variants import VARIANTS, build_any, names

    _one_name_or_all(name, check_all)
    if check_all:
        ok = True
        rows = []
        for nm in names():
            sch = build_any(nm)
            found = sorted({h.kind for h in _hazards_of(sch, seed, inputs_kind)})
            expected = sorted(VARIANTS[nm].expected) if nm in VARIANTS else []
            good = set(expected) <= set(found) and (bool(found) == bool(expected))
            ok &= good
            rows.append({"name": nm, "expected": expected, "found": found, "ok": good})
        if as_json:
            click.echo(json.dumps(rows, indent=2))
        else:
            click.echo(f"{'schedule':38s} {'expected':44s} {'found':52s}")
            for r in rows:
                click.echo(f"{r['name']:38s} {', '.join(r['expected']) or 'none':44s} "
                           f"{', '.join(r['found']) or 'none':52s} {'ok' if r['ok'] else 'WRONG'}")
        sys.exit(0 if ok else 1)
    sch = _build(name, m, k, n, tile, chunk, named=True)
    _within_budget(sch, force, compute_values=True, reference=False)
    hazards = _hazards_of(sch, seed, inputs_kind, no_limits)
    if as_json:
        click.echo(json.dumps([h.to_dict() for h in hazards], indent=2))
    else:
        p = sch.param_values
        click.echo(f"{sch.family}  " + " ".join(f"{a}={v}" for a, v in p.items()) +
                   f"  tile={sch.tile}: " + (f"{len(hazards)} hazard(s)" if hazards else "clean"))
        for h in hazards:
            click.echo(f"  [{h.kind}] {h.detail}")
    sys.exit(1 if hazards else 0)


def _hazards_of(sch, seed=None, inputs_kind="normal", no_limits=False):
    try:
        return simulate(sch, random_inputs(sch, np.random.default_rng(seed), inputs_kind),
                        hazards="report", limits=UNLIMITED if no_limits else GENERIC_GPU).hazards
    except (LimitError, InputError) as err:
        raise click.UsageError(str(err)) from None


@main.command("crosscheck")
@_named_schedule_options
@click.option("--all", "check_all", is_flag=True,
              help="Every schedule (counts) and every broken variant (hazards), example shapes.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
def crosscheck_cmd(name, m, k, n, tile, chunk, check_all, as_json):
    """Compare the simulator with Oclgrind running the generated kernel: counts of a
    correct schedule side by side, or the hazards of a faulty one (a broken variant, or any
    schedule in which the simulator finds hazards) side by side, with the difference stated.
    Exits 1 on any disagreement, 2 on bad input.

    SCHEDULE: as for check, FILE.py:FUNCTION included."""
    from tiletraffic.gpu.oclgrind import OclgrindError
    from tiletraffic.simulator.variants import VARIANTS, build_any, names

    from .crosscheck import compare_hazards, crosscheck

    _one_name_or_all(name, check_all)
    todo = names() if check_all else [name]
    results, ok = [], True
    try:
        for nm in todo:
            sch = build_any(nm) if check_all else _build(nm, m, k, n, tile, chunk, named=True)
            res = compare_hazards(sch) if nm in VARIANTS else crosscheck(sch)
            ok &= res.agree if hasattr(res, "agree") else res.equal
            results.append(res)
            if not as_json:
                _print_crosscheck(res)
    except (schedules.ScheduleError, LimitError, InputError) as err:
        raise click.UsageError(str(err)) from None
    except OclgrindError as err:
        _fail(err)
    if as_json:
        click.echo(json.dumps([r.to_dict() for r in results], indent=2))
    sys.exit(0 if ok else 1)


def _print_crosscheck(res) -> None:
    from .crosscheck import COUNT_KEYS, CountsComparison

    if isinstance(res, CountsComparison):
        click.echo(f"{res.schedule}: counts {'identical' if res.equal else 'DIFFER'}")
        click.echo(f"  {'counter':25s} {'simulator':>11s} {'oclgrind':>14s}")
        for key in COUNT_KEYS:
            a, b = res.simulator[key], res.oclgrind[key]
            click.echo(f"  {key:25s} {a:11d} {b:14d}" + ("" if a == b else "   <-- differs"))
        return
    invisible = res.simulator_kinds and not res.expected_oclgrind
    click.echo(f"{res.schedule}: hazards {'agree' if res.agree else 'DISAGREE'}"
               + (" (Oclgrind cannot see these kinds: " + ", ".join(res.simulator_kinds) + ")"
                  if invisible else ""))
    click.echo(f"  simulator: {', '.join(res.simulator_kinds) or 'none'}")
    for line in res.simulator_details[:3]:
        click.echo(f"    {line[:160]}")
    click.echo(f"  oclgrind:  {', '.join(res.oclgrind_kinds) or 'none'}")
    for line in res.details[:3]:
        click.echo(f"    {line[:160]}")
    if res.difference:
        click.echo(f"  difference: {res.difference}")


@main.command("run")
@_schedule_options
@_reference_option
@click.option("--device", "-d", default=None,
              help="OpenCL device: 'P:D' as in PYOPENCL_CTX, or part of its name "
                   "(default: PYOPENCL_CTX, else a GPU, else PoCL).")
@click.option("--repeat", "-r", type=click.IntRange(min=10), default=10, show_default=True,
              help="Timed launches (at least 10).")
@click.option("--warmup", type=click.IntRange(min=1), default=2, show_default=True,
              help="Untimed launches before timing (the first includes JIT compilation).")
@click.option("--unchecked", is_flag=True,
              help="Launch even when the check before launch finds hazards (out-of-bounds "
                   "accesses and barrier divergence can crash the process); every line and "
                   "the JSON are then marked 'unchecked: hazards found'.")
@click.option("--json", "as_json", is_flag=True, help="Print the run as JSON.")
@FORCE_OPTION
def run_cmd(schedule, m, k, n, tile, chunk, mapping, padding, a_tile, seed, inputs_kind,
            reference_spec, device, repeat, warmup, unchecked, as_json, force):
    """Check SCHEDULE in the simulator, run it as an OpenCL kernel on a device, check the
    result against float64 numpy, time it.

    Before any launch the simulator checks the launch (the whole launch, or one work-group
    per class of identical traffic where that would take long: it says which); a launch with
    a hazard is refused (exit 1) unless --unchecked. The result's tolerance is scaled to the
    sum length the check counted (the roundings of each output element; K for a GEMM).

    SCHEDULE: a family or FILE.py:FUNCTION (as for simulate). A kernel's time counts only
    after its result is checked, so a schedule from a file needs a reference: --reference,
    or a function 'reference' in its file. Exit status: 0 ok, 1 a fault (a hazard, a wrong
    result, a failed build or launch), 2 bad input."""
    import warnings

    from tiletraffic.gpu.runtime import TiletrafficGpuError
    from tiletraffic.simulator.launch_check import check_launch

    from .validate import run_on_device

    sch = _build(schedule, m, k, n, tile, chunk, mapping, padding, a_tile)
    _within_budget(sch, force, device=True)
    ref_fn = _reference_fn(schedule, reference_spec)
    if ref_fn is None and user_schedule.is_file_spec(schedule):
        raise click.UsageError(f"run checks the result before timing it: {NO_REFERENCE}")
    if device is not None and not device.strip():
        raise click.UsageError("--device is empty; give 'P:D' or part of a device name")
    try:
        target = _select_device(device)
        try:
            checked = check_launch(sch, rng=np.random.default_rng(seed))
        except InputError as err:
            raise click.UsageError(str(err)) from None
        if not as_json:
            click.echo(checked.describe() if not (checked.hazards and unchecked) else
                       f"{checked.describe()}  [launched anyway: --unchecked]")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = run_on_device(target, sch, repeat=repeat, warmup=warmup,
                                   rng=np.random.default_rng(seed), reference_fn=ref_fn,
                                   inputs=inputs_kind, unchecked=unchecked,
                                   launch_check=checked)
    except user_schedule.UserScheduleError as err:
        raise click.UsageError(str(err)) from None
    except (TiletrafficGpuError, ValueError, TypeError) as err:
        _fail(err)
    for w in caught:  # profiling unavailable, nondeterministic outputs
        click.echo(f"warning: {w.message}", err=True)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
        return
    mark = f"  [{result.unchecked}]" if result.unchecked else ""
    r = result.run
    simulator_note = " (a simulator, not hardware)" if target.info.is_simulator else ""
    click.echo(f"{sch.family} on {r.device_name}{simulator_note}: NDRange {r.global_size}, "
               f"work-group {r.local_size}{mark}")
    click.echo(f"  build {r.build_time_s * 1e3:.1f} ms" + (" (cached)" if r.build_cached else "")
               + mark)
    if r.resources is not None:
        click.echo(f"  {r.resources.describe()}{mark}")
    click.echo(f"  kernel time over {len(r.kernel_times_s)} launches (after {r.warmup} warm-up):"
               f" median {r.median_s * 1e3:.3f} ms, min {r.min_s * 1e3:.3f} ms,"
               f" max {r.max_s * 1e3:.3f} ms"
               + (" (host wall time: no OpenCL profiling)" if r.timing == "host" else "") + mark)
    c = result.check
    where = ", ".join(map(str, c.worst_index or ()))
    output = next(a.name for a in sch.arrays if a.is_output)
    click.echo(f"  result equals {'the reference' if ref_fn else 'numpy'} "
               f"({result.inputs} inputs) in every launch: worst "
               f"|error| / tolerance {c.error_over_tolerance:.3g} at {output}[{where}] "
               f"(|error| {abs(c.worst_value - c.worst_reference):.3g}, tolerance "
               f"{c.worst_tolerance:.3g}, sum length {c.k}: {checked.sum_length_method}); "
               + ("outputs identical in all launches" if r.distinct_outputs == 1 else
                  f"{r.distinct_outputs} distinct outputs: nondeterministic") + mark)


@main.command("devices")
def devices_cmd():
    """List the OpenCL devices and which one is used by default."""
    from tiletraffic.gpu.device import list_devices, select_device
    from tiletraffic.gpu.runtime import TiletrafficGpuError

    devices = list_devices()
    if not devices:
        _fail(RuntimeError("no OpenCL device found; install PoCL: pip install "
                           "pocl-binary-distribution"))
    try:
        default = select_device(None).info.id
    except TiletrafficGpuError:
        default = None
    for d in devices:
        mark = "*" if d.id == default else " "
        click.echo(f"{mark} {d.describe()}")
    click.echo("(* = default; choose with --device P:D, a name part, or PYOPENCL_CTX)")


@main.command("device-model")
@click.argument("model", required=False, type=DEVICE_MODEL)
@click.option("--device", "-d", default=None,
              help="Instead: the model of this OpenCL device ('P:D' or part of its name): "
                   "compute units, local memory and work-group size queried, every other "
                   "value from its built-in model or, for another device, generic-gpu's "
                   "guesses.")
def device_model_cmd(model, device):
    """Print device model MODEL (a built-in name or a file) as the TOML file --device-model
    reads, every value with its source: documented, queried, measured or guessed. Without
    MODEL or --device, list the built-in models.

    Make your own: tiletraffic device-model generic-gpu > my-gpu.toml, edit the values and
    their sources, then tiletraffic simulate ... --device-model my-gpu.toml."""
    from tiletraffic.simulator.device_model import DEVICE_MODELS, VALUE_FIELDS, to_toml

    if model is not None and device is not None:
        raise click.UsageError("give a MODEL or --device, not both")
    if device is not None:
        from tiletraffic.gpu.device import select_device
        from tiletraffic.gpu.runtime import TiletrafficGpuError

        from .device_models import model_from_opencl

        try:
            model = model_from_opencl(select_device(device).info)
        except TiletrafficGpuError as err:
            _fail(err)
    if model is None:
        import textwrap

        for m in DEVICE_MODELS.values():
            click.echo(f"{m.name}: {len(m.guessed)} of {len(VALUE_FIELDS)} values guessed")
            click.echo(textwrap.fill(m.description, 88, initial_indent="  ",
                                     subsequent_indent="  "))
        return
    click.echo(to_toml(model), nl=False)


@main.command("calibrate")
@click.option("--device", "-d", default=None, help="OpenCL device (as for `run`).")
@click.option("--out", "out_file", default=None, type=click.Path(dir_okay=False),
              help="Write the device-model file here (default: print it).")
@click.option("--quick", is_flag=True,
              help="Tiny sizes (seconds on a CPU; a well-formed file, rough numbers).")
@click.option("--base", "base_model", default=None, type=DEVICE_MODEL,
              help="Device model (NAME or FILE) whose unmeasured values the file keeps "
                   "[default: the built-in model matching the device's name, else "
                   "generic-gpu].")
def calibrate_cmd(device, out_file, quick, base_model):
    """Measure this device with OpenCL microbenchmarks (DRAM read and write, L2 size by a
    footprint sweep, L2 and local-memory bandwidth, FP32 FMA rate, load latency, the
    staging round trips from L2 and DRAM, strided requests, the register-tile issue rate,
    launch overhead, barrier cost) and write a device-model file: each measured value
    marked measured with its benchmark, the rest queried or as in the base model (--base).
    Then: simulate ... --device-model FILE."""
    from tqdm import tqdm

    from tiletraffic.gpu.runtime import TiletrafficGpuError
    from tiletraffic.simulator.device_model import to_toml

    from . import calibrate
    from .files import atomic_write_text

    _check_out_file(out_file)
    try:
        target = _select_device(device)
        with tqdm(total=len(calibrate.BENCHMARKS), desc="calibrate", unit="benchmark",
                  file=sys.stderr,
                  disable=None) as bar:  # shown on a terminal only
            started = []

            def step(name):  # called before each benchmark: the previous one is done
                bar.update(len(started) > 0)
                started.append(name)
                bar.set_postfix_str(name)
            model, measured = calibrate.calibrate(target, quick, step, base=base_model)
            bar.update(1)
    except (TiletrafficGpuError, calibrate.CalibrationError) as err:
        _fail(err)
    click.echo(calibrate.table(measured), err=out_file is None)
    if out_file is None:
        click.echo(to_toml(model), nl=False)
    else:
        atomic_write_text(out_file, to_toml(model))
        click.echo(f"wrote {out_file}: use it with --device-model {out_file}")


@main.command("report")
@click.option("--device", "-d", default=None, help="OpenCL device (as for `run`).")
@click.option("--out", "out_dir", default="reports", show_default=True,
              type=click.Path(file_okay=False), help="Reports directory.")
@click.option("--quick", is_flag=True, help="Small sweep (seconds on a 2-core CPU).")
@click.option("--repeat", "-r", type=click.IntRange(min=10), default=10, show_default=True,
              help="Timed launches per kernel (at least 10).")
@click.option("--render", "render_dir", default=None, type=click.Path(file_okay=False),
              help="Only re-render an existing report directory from its results.json (no "
                   "device): report.md and its figures.")
def report_cmd(device, out_dir, quick, repeat, render_dir):
    """Sweep sizes and tiles: simulate, run on the device, write reports/<device>/."""
    from tiletraffic.gpu.runtime import TiletrafficGpuError

    from .report import SweepInterrupted, make_report, render

    if render_dir:
        from pathlib import Path

        path = Path(render_dir)
        if not (path / "results.json").exists():
            hint = (" (it holds H200 validation data: render it from the repository root "
                    f"with `python -m experiments.h200.render {path}`)"
                    if (path / "h200_raw.json.gz").exists() else "")
            _fail(FileNotFoundError(f"{path} has no results.json{hint}"))
        click.echo(f"rendered {render(path)}")
        return

    try:
        path = make_report(device=device, out_root=out_dir, quick=quick, repeat=repeat)
    except (TiletrafficGpuError, ValueError, SweepInterrupted) as err:
        _fail(err)
    except OSError as err:
        _fail(OSError(f"cannot write the report under {out_dir!r}: {err.strerror} "
                      f"({err.filename})"))
    click.echo(f"report written to {path}")


@main.group("tune")
def tune_group():
    """Search a tuning space with the model, measure the best-ranked candidates on a device
    and report the model's regret (`tiletraffic tune gemm --help`)."""


@tune_group.command("gemm")
@click.option("--m", "m", type=click.IntRange(min=1), required=True, help="Rows of A and C.")
@click.option("--n", "n", type=click.IntRange(min=1), required=True, help="Columns of B and C.")
@click.option("--k", "k", type=click.IntRange(min=1), required=True,
              help="Columns of A, rows of B (the inner dimension).")
@click.option("--device", "-d", default=None,
              help="OpenCL device to measure on (as for `run`; default: PYOPENCL_CTX, else a "
                   "GPU, else PoCL).")
@click.option("--device-model", default=None, type=DEVICE_MODEL,
              help="The model that ranks the candidates: a built-in name or a model file "
                   "(default: the measured device's, as `tiletraffic device-model --device "
                   "D` prints it; with --top 0: nvidia-h200).")
@click.option("--top", "-t", type=click.IntRange(min=0), default=8, show_default=True,
              help="Measure this many of the best-ranked candidates (0: model only, no "
                   "device).")
@click.option("--measure-all", is_flag=True, help="Measure every valid candidate.")
@click.option("--recheck", type=click.IntRange(min=0), default=None,
              help="Before measuring, build (compile only) this many of the best-ranked "
                   "candidates on the device, re-model them with their compiled registers "
                   "per work-item where the driver reports them (NVIDIA's -cl-nv-verbose "
                   "build log; PoCL: not reported, the ranking stays estimate-based) and "
                   "re-rank; --top are then measured from the re-ranked ones. A failed "
                   "build is a rejection. [default: 4 x --top; 0: none]")
@click.option("--out", "out_file", default=None, type=click.Path(dir_okay=False),
              help="Results (JSON), written after every candidate [default: "
                   "tuning/gemm-MxNxK.json]. An existing file is moved to history/ beside it "
                   "first, unless --resume.")
@click.option("--resume", is_flag=True,
              help="Reuse the predictions and measurements of --out (same sizes, space, "
                   "device model and device) and do only what is missing.")
@click.option("--space", "space_file", default=None,
              type=click.Path(exists=True, dir_okay=False),
              help="Tuning-space file (TOML; default: the built-in gemm.toml: copy it from "
                   "the path the results name and edit it).")
@click.option("--repeat", "-r", type=click.IntRange(min=10), default=10, show_default=True,
              help="Timed launches per measured candidate and round.")
@click.option("--warmup", type=click.IntRange(min=1), default=2, show_default=True,
              help="Untimed launches before timing.")
@click.option("--rounds", type=click.IntRange(min=1), default=2, show_default=True,
              help="Times the chosen candidates are run, every other round in reverse (as "
                   "validate: the spread is the larger of the launches' interquartile range "
                   "and the difference of the rounds' medians).")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=1, show_default=True,
              help="Processes that model candidates in parallel.")
@SEED_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
def tune_gemm_cmd(m, n, k, device, device_model, top, measure_all, recheck, out_file, resume,
                  space_file, repeat, warmup, rounds, jobs, seed, as_json):
    """Tune C = A·B (A is M x K, B is K x N, float32): every candidate of the tuning space
    is checked against its constraints (rejected ones are listed with the reason), modelled
    and ranked by predicted time; the best --top are run on the device, each launch checked
    against float64 before its time counts. Prints a table and the model's regret (time of
    its pick vs the best measured candidate, over the measured ones only)."""
    import shlex

    from tiletraffic.gpu.runtime import TiletrafficGpuError

    from .tuner import TuneError, TuneInterrupted, tune
    from .tuning_space import SpaceError

    if device is not None and not device.strip():
        raise click.UsageError("--device is empty; give 'P:D' or part of a device name")
    out_file = out_file or f"tuning/gemm-{m}x{n}x{k}.json"
    _check_out_file(out_file)
    try:
        result = tune(m, n, k, device=device, device_model=device_model, top=top,
                      out=out_file, repeat=repeat, warmup=warmup, rounds=rounds,
                      space=space_file, jobs=jobs,
                      measure_all=measure_all, resume=resume, seed=seed, progress=None,
                      recheck=recheck,
                      log=lambda line: click.echo(line, err=True),
                      command="tiletraffic " + " ".join(shlex.quote(a) for a in sys.argv[1:]))
    except (TuneError, SpaceError) as err:
        raise click.UsageError(str(err)) from None
    except TuneInterrupted as err:
        click.echo(err.result.table(), nl=False)
        click.echo(f"interrupted: {err}", err=True)
        sys.exit(130)
    except (TiletrafficGpuError, OSError) as err:
        _fail(err)
    if as_json:
        click.echo(json.dumps(result.data, indent=1))
    else:
        click.echo(result.table(), nl=False)
        click.echo(f"results: {out_file}")


from .validation_cli import validate_cmd  # noqa: E402 (the command needs main's helpers)

main.add_command(validate_cmd)

if __name__ == "__main__":
    main()
