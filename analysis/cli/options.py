"""The command line's shared option types and decorators: SCHEDULE and its sizes, the family
options, ``--device-model``, ``--inputs``, ``--seed``, ``--reference``, ``--force``.

The family options (``--tm`` ...) are kept in the click context (:func:`family_options`
reads them), so that a command's signature lists only what it uses itself.
"""
from __future__ import annotations

import click

from tiletraffic.simulator.engine.data_inputs import INPUT_KINDS

from tiletraffic.analysis.cli.batching import batch_options

from tiletraffic.frontend import resolver


class DeviceModelParam(click.ParamType):
    """A built-in device model's name or a model file (TOML) -> a ``DeviceModel``; anything
    else is a usage error that lists the built-in names or names the file's problem."""

    name = "NAME|FILE"

    def convert(self, value, param, ctx):
        from tiletraffic.simulator.model.device_model import DeviceModelError

        from tiletraffic.analysis.device_model import resolve_device_model

        try:
            return resolve_device_model(value)
        except KeyError as err:
            self.fail(err.args[0], param, ctx)
        except DeviceModelError as err:
            self.fail(str(err), param, ctx)


DEVICE_MODEL = DeviceModelParam()
"""The type of every ``--device-model`` option."""


class ScheduleSpec(click.ParamType):
    """SCHEDULE: any form the resolver knows (:data:`resolver.SOURCES`), checked for form
    only here; it is built by :func:`tiletraffic.analysis.cli.common.build_schedule`."""

    name = "schedule"

    def get_metavar(self, param, ctx=None) -> str:
        return "SCHEDULE"

    def convert(self, value, param, ctx):
        if resolver.source_of(value) is not None:
            return value
        self.fail(resolver.unknown_message(value), param, ctx)


SCHEDULE = ScheduleSpec()


def reference_option(f):
    return click.option(
        "--reference", "reference_spec", default=None, metavar="FILE.py:FUNCTION",
        help="numpy function inputs -> output (float64 arrays in logical shapes) that gives "
             "the expected result (default for SCHEDULE=FILE.py:...: the function "
             "'reference' of that file, if any; built-in schedules have their own).")(f)


INPUTS_OPTION = click.option(
    "--inputs", "inputs_kind", type=click.Choice(INPUT_KINDS), default=None,
    help="Input values: random normal or uniform, or structured ones / arange (0, 1, 2, ... "
         "row-major) to read a result by eye; ones and arange can hide swapped indices "
         "(default: the launch file's reference.inputs if it names one, else normal).")
SEED_OPTION = click.option("--seed", type=click.IntRange(min=0), default=None,
                           help="Seed of the random inputs (default: fresh inputs every run).")
FORCE_OPTION = click.option(
    "--force", is_flag=True,
    help="Run even when the estimated memory exceeds what this machine has available.")


def repeat_option(help: str):
    """--repeat / -r: timed launches, within :mod:`tiletraffic.gpu.runtime.launch_counts`' limits (a
    value outside them: one line naming it and the range, exit 2)."""
    from tiletraffic.gpu.runtime.launch_counts import MAX_REPEAT, MIN_REPEAT

    return click.option("--repeat", "-r", type=click.IntRange(MIN_REPEAT, MAX_REPEAT),
                        default=MIN_REPEAT, show_default=True,
                        help=f"{help}.")


def warmup_option(help: str = "Untimed launches before timing"):
    """--warmup: untimed launches, within :mod:`tiletraffic.gpu.runtime.launch_counts`' limits."""
    from tiletraffic.gpu.runtime.launch_counts import MAX_WARMUP, MIN_WARMUP

    return click.option("--warmup", type=click.IntRange(MIN_WARMUP, MAX_WARMUP), default=2,
                        show_default=True, help=f"{help}.")


def rounds_option(help: str):
    """--rounds: runs of the whole set, within :mod:`tiletraffic.gpu.runtime.launch_counts`'
    limits."""
    from tiletraffic.gpu.runtime.launch_counts import MAX_ROUNDS, MIN_ROUNDS

    return click.option("--rounds", type=click.IntRange(MIN_ROUNDS, MAX_ROUNDS), default=2,
                        show_default=True, help=f"{help}.")


def json_option(what: str):
    """--json: print ``what`` as JSON instead of text."""
    return click.option("--json", "as_json", is_flag=True, help=f"Print {what} as JSON.")


BLOCKED = ("gemm-register-blocked, gemm-vectorized, gemm-prefetch, gemm-warp-tiled, "
           "gemm-split-k")
REGISTER_BLOCK_OPTIONS = (
    ("tm", f"{BLOCKED}: rows of C per work-item (default 4; gemm-warp-tiled 8)."),
    ("tn", f"{BLOCKED}: columns of C per work-item (default 4; gemm-warp-tiled 8)."),
    ("bk", f"{BLOCKED}: depth of one K step, the columns of the A tile and rows of the B "
           "tile (default 16)."),
    ("wg_rows", f"{BLOCKED}: work-items per work-group along the rows of C (default: "
                "--tile, the work-group width). matvec-rows-reduce: rows per work-group "
                "(default 8; --tile is the work-items per row, default 32)."),
    ("wn", "gemm-warp-tiled, gemm-split-k: columns of C per sub-group tile (warp tile), tn times a divisor "
           "of 32; its rows are 32·tm·tn/wn (default: 8·tn where the block allows)."),
    ("group_rows", "gemm-warp-tiled, gemm-split-k: work-groups walk the blocks of C in groups of this many "
                   "block rows, column by column inside a group, for reuse of A and B in the "
                   "L2 (default 1: row by row)."),
    ("splits", "gemm-split-k: slices of K, each computed by its own work-groups into a "
               "partial C that a second kernel adds (default 4; at least 2)."),
    ("vec", "matvec-rows-reduce: elements of A and x each work-item reads per step as one "
            "vector access, 1, 2 or 4 (default 1; K a multiple of it)."),
)
"""Options of the register-blocked families: a work-group of --tile x --wg-rows work-items
computes a BM x BN block of C, BM = tm * wg_rows, BN = tn * tile, through BM x bk and
bk x BN local tiles (gemm-vectorized, gemm-warp-tiled: tm, tn, bk, K and N multiples of 4;
gemm-warp-tiled: --wn, sub-group tiles, --group-rows, the order of the blocks; gemm-split-k:
those of gemm-warp-tiled and --splits); and of matvec-rows-reduce (--wg-rows, --vec)."""

LAYOUT_OPTIONS = ("mapping", "padding", "a_tile")
"""Options of gemm-naive and gemm-tiled, kept in the click context as the register-block
options are."""


def _remember(ctx, param, value):
    if value is not None:
        ctx.meta.setdefault("family_options", {})[param.name] = value
    return value


MAX_REGISTERS_HELP = (
    "Register budget: the compiled kernel uses at most N registers per work-item (NVIDIA's "
    "OpenCL: the PTX .maxnreg directive; other platforms refuse it; the model's register "
    "estimate is capped at N). Any SCHEDULE.")


def register_block_options(f):
    """--tm, --tn, --bk, --wg-rows, ..., --batch, --shared-b and --max-registers."""
    f = batch_options(f)
    f = click.option("--max-registers", "max_registers", type=int, default=None,
                     metavar="N", expose_value=False, callback=_remember,
                     help=MAX_REGISTERS_HELP)(f)
    for name, text in reversed(REGISTER_BLOCK_OPTIONS):
        f = click.option(f"--{name.replace('_', '-')}", name, type=int, default=None,
                         expose_value=False, callback=_remember, help=text)(f)
    return f


def family_options() -> dict:
    """The family options given on this command line (``{"tm": 8, "padding": 1}``)."""
    ctx = click.get_current_context(silent=True)
    return dict(ctx.meta.get("family_options", {})) if ctx is not None else {}


def _remember_sets(ctx, param, value):
    if value:
        from tiletraffic.frontend import launch_file
        try:
            sets = launch_file.parse_assignments(value)
        except launch_file.LaunchFileError as err:
            raise click.BadParameter(str(err), ctx, param) from None
        ctx.meta.setdefault("family_options", {})["set"] = sets
    return value


def set_option(f):
    """--set NAME=VALUE (repeatable): a launch file's size (or -D macro) replaced."""
    return click.option("--set", "launch_sets", multiple=True, metavar="NAME=VALUE",
                        expose_value=False, callback=_remember_sets,
                        help="LAUNCH.toml: replace the size NAME (or an integer -D macro "
                             "of its build_options) by VALUE; repeatable.")(f)


def size_options(f):
    """SCHEDULE, --m, --k, --n, --tile, --chunk and the family options (simulate, model,
    run, explain)."""
    f = register_block_options(f)
    f = set_option(f)
    f = click.option("--a-tile", "a_tile", type=click.Choice(["row-major", "transposed"]),
                     default=None, expose_value=False, callback=_remember,
                     help="gemm-tiled: store the A tile transposed (bank conflicts).")(f)
    f = click.option("--padding", type=int, default=None, expose_value=False,
                     callback=_remember, help="gemm-tiled: extra words per local tile row.")(f)
    f = click.option("--mapping", type=click.Choice(["row-major", "transposed"]), default=None,
                     expose_value=False, callback=_remember,
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
                     help="Columns of A (inner dimension). A family without --m, --k and "
                          "--n: its example shape (run: required).")(f)
    f = click.option("--m", "m", type=int, default=None,
                     help="Rows of A and of C (or y). A family without --m, --k and --n: "
                          "its example shape (run: required).")(f)
    return click.argument("schedule", type=SCHEDULE)(f)


def schedule_options(f):
    """:func:`size_options` with --inputs and --seed."""
    return size_options(SEED_OPTION(INPUTS_OPTION(f)))


NAMED_SIZE_OPTIONS = ("m", "k", "n", "tile", "chunk", "launch_sets", "max_registers",
                      *(name for name, _ in REGISTER_BLOCK_OPTIONS), "batch", "shared_b",
                      "dtype")
"""The parameters of :func:`named_schedule_options` that size or shape the one SCHEDULE
named (none applies to ``--all``)."""


def named_schedule_options(f):
    """Optional NAME (a family, demo, faulty variant or FILE.py:FUNCTION) and optional sizes,
    for check and crosscheck (missing sizes: the example shape)."""
    f = register_block_options(f)
    f = set_option(f)
    f = click.option("--chunk", type=int, default=None, help="matvec-local chunk.")(f)
    f = click.option("--tile", "-b", type=int, default=None,
                     help="Tile width or work-group size.")(f)
    f = click.option("--n", "n", type=int, default=None, help="Columns of B and C (GEMM).")(f)
    f = click.option("--k", "k", type=int, default=None, help="Columns of A.")(f)
    f = click.option("--m", "m", type=int, default=None,
                     help="Rows of A (default: an example shape).")(f)
    return click.argument("name", required=False, type=SCHEDULE)(f)


def _targets(ctx, param, value):
    from tiletraffic.analysis.validation.targets import TargetsError, load

    if value is None:
        return None
    try:
        return load(value)
    except TargetsError as err:
        raise click.BadParameter(str(err), ctx, param) from None


TARGETS_OPTION = click.option(
    "--targets", "targets", default=None, metavar="FILE", callback=_targets,
    help="The limits the model is judged by (TOML: median-abs-error, worst-abs-error, "
         "speedup-error, ranking, tune-regret; those not given keep the built-in values). "
         "Start from the built-in file: analysis/validation/targets.toml of the installed package.")


def _checked_cluster(ctx, param, value):
    """--cluster: its form and Ray checked when given (one line, exit 2)."""
    if value is None:
        return None
    from tiletraffic.analysis.tune.cluster import ClusterSpecError, check_cluster

    try:
        check_cluster(value)
    except ClusterSpecError as err:
        raise click.UsageError(str(err)) from None
    return value


def cluster_options(what: str):
    """--cluster SPEC and --device-workers N: ``what`` runs on a Ray cluster
    (:mod:`tiletraffic.analysis.tune.cluster`)."""
    def decorate(f):
        f = click.option(
            "--device-workers", type=click.IntRange(min=1), default=None, metavar="N",
            help="With --cluster: device workers that measure [default: one per GPU of the "
                 "cluster; on a CPU device (PoCL) one per node, each a PoCL of the node's "
                 "CPUs / N threads].")(f)
        return click.option(
            "--cluster", default=None, metavar="local[:N]|auto|ADDRESS",
            callback=_checked_cluster,
            help=f"Run on a Ray cluster: local (a new one on this machine), local:N (of N "
                 f"CPUs), auto (the one this machine is a node of) or its address "
                 f"(HOST:PORT, ray://HOST:PORT). {what} Needs Ray: pip install -e "
                 f"\".[distributed]\".")(f)
    return decorate
