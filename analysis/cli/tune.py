"""``tiletraffic tune``: search a tuning space with the model, measure the best-ranked
candidates on a device, report the model's regret."""
from __future__ import annotations

import sys

import click

from tiletraffic.analysis.files import json_text
from tiletraffic.analysis.cli.common import (check_device_spec, command_line, fail,
                                             refuse_unused)
from tiletraffic.analysis.cli.outputs import check_out_file, check_out_folder, write_failed
from tiletraffic.analysis.cli.batching import tune_batch_options
from tiletraffic.analysis.cli.options import (DEVICE_MODEL, SEED_OPTION, TARGETS_OPTION,
                                              cluster_options, json_option, repeat_option,
                                              rounds_option, warmup_option)


class _TuneGroup(click.Group):
    """``tune gemm ...`` or ``tune LAUNCH.toml ...`` (the launch file's macros)."""

    def resolve_command(self, ctx, args):
        if args and args[0].endswith(".toml"):
            return "launch", self.commands["launch"], args
        return super().resolve_command(ctx, args)


@click.group("tune", cls=_TuneGroup)
def command():
    """Search a tuning space with the model, measure the best-ranked candidates on a device
    and report the model's regret: `tiletraffic tune gemm --help` for the built-in GEMMs,
    `tiletraffic tune LAUNCH.toml --param TS=8,16,32 [--constraint "..."]` for the macros of
    your own OpenCL kernel (`tiletraffic tune launch --help`)."""


@command.command("launch")
@click.argument("launch", metavar="LAUNCH.toml", type=click.Path(exists=True, dir_okay=False))
@click.option("--param", "params", multiple=True, required=True, metavar="NAME=V1,V2,...",
              help="A macro of the kernel and the values to try (passed as -DNAME=value; "
                   "the launch file's sizes, geometry and shapes may use NAME); repeatable.")
@click.option("--constraint", "constraints", multiple=True, metavar="EXPR",
              help="A condition every candidate must meet, over the parameters and the "
                   "launch file's names (e.g. \"TS % WPT == 0\"); repeatable.")
@click.option("--set", "sets", multiple=True, metavar="NAME=VALUE",
              help="Replace a size of the launch file; repeatable.")
@click.option("--device", "-d", default=None,
              help="OpenCL device to measure on (as for `run`).")
@click.option("--device-model", default=None, type=DEVICE_MODEL,
              help="The model that ranks (default: the measured device's; with --top 0: "
                   "nvidia-h200).")
@click.option("--top", "-t", type=click.IntRange(min=0), default=4, show_default=True,
              help="Measure this many of the best-ranked candidates (0: model only).")
@repeat_option("Timed launches per measured candidate and round")
@warmup_option()
@rounds_option("Times the chosen candidates are run, every other round in reverse")
@click.option("--out", "out_file", default=None, type=click.Path(dir_okay=False),
              help="Results (JSON), written after every step [default: "
                   "tuning/<launch file name>.json].")
@cluster_options("The candidates are modelled as Ray tasks over its CPUs and measured on "
                 "one worker per device (same results as one process).")
@SEED_OPTION
@json_option("the results")
def tune_launch_file(launch, params, constraints, sets, device, device_model, top, repeat,
                     warmup, rounds, out_file, cluster, device_workers, seed, as_json):
    """Tune the macros of an OpenCL C kernel described by LAUNCH.toml: every combination of
    the --param values that meets the constraints and the device limits is built with -D,
    modelled and ranked; the best --top are checked for hazards and run on the device, each
    launch's output checked against the launch file's reference before its time counts.
    Prints the ranking and the model's regret over the measured candidates."""
    from pathlib import Path

    from tiletraffic.gpu.runtime.launch import TiletrafficGpuError
    from tiletraffic.frontend.opencl.translate import FrontendError

    from tiletraffic.frontend import launch_file
    from tiletraffic.analysis.tune.cluster import ClusterError, ClusterSpecError
    from tiletraffic.analysis.tune.launch import parse_params, table, tune_launch
    from tiletraffic.analysis.tune.options import TuneError

    if top == 0:
        refuse_unused(("device", "repeat", "warmup", "rounds", "seed", "device_workers"),
                      "with --top 0: nothing is measured (the model ranks the candidates "
                      "without a device)")
    if cluster is None:
        refuse_unused(("device_workers",), "without --cluster: one process measures on one "
                                           "device")
    check_device_spec(device)
    out_file = f"tuning/{Path(launch).stem}.json" if out_file is None else out_file
    check_out_file(out_file)
    try:
        doc = tune_launch(launch, parse_params(params), constraints,
                          sets=launch_file.parse_assignments(sets), device=device,
                          device_model=device_model, top=top, repeat=repeat, warmup=warmup,
                          rounds=rounds, out=out_file, seed=seed,
                          log=lambda line: click.echo(line, err=True),
                          command=command_line(), cluster=cluster,
                          device_workers=device_workers)
    except (TuneError, launch_file.LaunchFileError, FrontendError, ClusterSpecError) as err:
        raise click.UsageError(str(err)) from None
    except (TiletrafficGpuError, ClusterError) as err:
        fail(err)
    except OSError as err:
        write_failed("the tuning", None, err)
    if as_json:
        click.echo(json_text(doc, indent=1))
    else:
        click.echo(table(doc), nl=False)
        click.echo(f"results: {out_file}")
    _exit_without_result(doc)


@command.command("gemm")
@click.option("--m", "m", type=click.IntRange(min=1), default=None, help="Rows of A and C.")
@click.option("--n", "n", type=click.IntRange(min=1), default=None,
              help="Columns of B and C.")
@click.option("--k", "k", type=click.IntRange(min=1), default=None,
              help="Columns of A, rows of B (the inner dimension).")
@click.option("--shapes", "shapes_file", default=None,
              type=click.Path(exists=True, dir_okay=False),
              help="Tune several GEMMs instead of --m/--n/--k: a TOML file of [[shape]] "
                   "tables (m, n, k, an optional name); each shape gets its own results "
                   "file gemm-MxNxK.json in the --out folder (gemm-MxNxK-float16.json with "
                   "--dtype float16, -batchCOUNT with --batch).")
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
@click.option("--out", "out_file", default=None, type=click.Path(),
              help="Results (JSON), written after every candidate [default: "
                   "tuning/gemm-MxNxK.json]. An existing file is moved to history/ beside it "
                   "first, unless --resume. With --shapes: the folder of the shapes' files "
                   "[default: tuning].")
@click.option("--resume", is_flag=True,
              help="Reuse the predictions and measurements of --out (same sizes, space, "
                   "device model and device) and do only what is missing.")
@click.option("--space", "space_file", default=None,
              type=click.Path(exists=True, dir_okay=False),
              help="Tuning-space file (TOML; default: the built-in gemm.toml: copy it from "
                   "the path the results name and edit it).")
@repeat_option("Timed launches per measured candidate and round")
@warmup_option()
@rounds_option("Times the chosen candidates are run, every other round in reverse (as "
               "validate: the spread is the larger of the launches' interquartile range and "
               "the difference of the rounds' medians)")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=1, show_default=True,
              help="Processes that model candidates in parallel.")
@cluster_options("The candidates are modelled as Ray tasks over its CPUs and measured on "
                 "one worker per device (same results as one process).")
@SEED_OPTION
@TARGETS_OPTION
@json_option("the results")
@tune_batch_options
def tune_gemm(m, n, k, shapes_file, device, device_model, top, measure_all, recheck,
              out_file, resume, space_file, repeat, warmup, rounds, jobs, cluster,
              device_workers, seed, targets, as_json, batch, shared_b, dtype):
    """Tune C = A·B (A is M x K, B is K x N, float32 or with --dtype float16 half storage): every candidate of the tuning space
    is checked against its constraints (rejected ones are listed with the reason), modelled
    and ranked by predicted time; the best --top are run on the device, each launch checked
    against float64 before its time counts. Prints a table and the model's regret (time of
    its pick vs the best measured candidate, over the measured ones only). With --shapes,
    every shape of the file, each into its own results file; with --cluster, on a Ray
    cluster."""
    from tiletraffic.gpu.runtime.launch import TiletrafficGpuError

    from tiletraffic.analysis.tune import tuner
    from tiletraffic.analysis.tune.cluster import ClusterError, ClusterSpecError
    from tiletraffic.analysis.tune.options import TuneError, TuneOptions
    from tiletraffic.analysis.tune.space import SpaceError

    shapes = _shapes_or_sizes(shapes_file, m, n, k)
    if top == 0 and not measure_all:
        refuse_unused(("repeat", "warmup", "rounds"), "with --top 0: nothing is measured")
        refuse_unused(("device_workers",), "with --top 0: nothing is measured")
        if device is None:
            refuse_unused(("recheck",), "with --top 0 and no --device: there is no device to "
                                        "build the candidates on", "give --device D or leave "
                                                                   "it out")
    if cluster is None:
        refuse_unused(("device_workers",), "without --cluster: one process measures on one "
                                           "device")
    elif jobs > 1:
        raise click.UsageError("--jobs models on this machine's cores, --cluster on the "
                               "cluster's: give one of them")
    check_device_spec(device)
    if shapes is None:
        from tiletraffic.analysis.tune.options import results_suffix

        suffix = results_suffix(batch, shared_b, dtype)
        out_file = f"tuning/gemm-{m}x{n}x{k}{suffix}.json" if out_file is None else out_file
        check_out_file(out_file)
    else:
        out_file = "tuning" if out_file is None else out_file
        check_out_folder(out_file, "with --shapes, --out names a folder (of the shapes' "
                                   "results files)")
    options = dict(device=device, device_model=device_model, top=top, out=out_file,
                   repeat=repeat, warmup=warmup, rounds=rounds, space=space_file, jobs=jobs,
                   measure_all=measure_all, resume=resume, seed=seed, progress=None,
                   recheck=recheck, targets=targets, cluster=cluster,
                   device_workers=device_workers, batch=batch, shared_b=shared_b, dtype=dtype,
                   log=lambda line: click.echo(line, err=True), command=command_line())
    try:
        if shapes is None:
            result = tuner.tune(TuneOptions(m, n, k, **options))
        else:
            from tiletraffic.analysis.tune.shapes import tune_shapes
            first = shapes[0]
            results = tune_shapes(TuneOptions(first.m, first.n, first.k, **options), shapes,
                                  out_file)
    except (TuneError, SpaceError, ClusterSpecError) as err:
        raise click.UsageError(str(err)) from None
    except tuner.TuneInterrupted as err:
        if shapes is None:
            click.echo(err.result.table(), nl=False)
        else:
            from tiletraffic.analysis.tune.shapes import table as shapes_table
            click.echo(shapes_table(shapes, err.results), nl=False)
        click.echo(f"interrupted: {err}", err=True)
        sys.exit(130)
    except (TiletrafficGpuError, ClusterError) as err:
        fail(err)
    except OSError as err:
        write_failed("the tuning", None, err)
    if shapes is not None:
        _print_shapes(shapes, results, as_json)
        return
    if as_json:
        click.echo(json_text(result.data, indent=1))
    else:
        click.echo(result.table(), nl=False)
        click.echo(f"results: {out_file}")
    _exit_without_result(result.data)


def _shapes_or_sizes(shapes_file, m, n, k):
    """The shapes of --shapes FILE, or None with --m, --n and --k (usage error: both, or
    neither complete)."""
    sizes = {"--m": m, "--n": n, "--k": k}
    if shapes_file is None:
        for name, value in sizes.items():
            if value is None:
                raise click.UsageError(f"Missing option '{name}': give --m, --n and --k, or "
                                       "--shapes FILE")
        return None
    given = [name for name, value in sizes.items() if value is not None]
    if given:
        raise click.UsageError(f"{', '.join(given)} and --shapes: give the sizes either as "
                               "--m/--n/--k or as the shapes of --shapes FILE")
    from tiletraffic.analysis.tune.options import TuneError
    from tiletraffic.analysis.tune.shapes import read_shapes

    try:
        return read_shapes(shapes_file)
    except TuneError as err:
        raise click.UsageError(str(err)) from None


def _print_shapes(shapes, results, as_json: bool) -> None:
    """Each shape's line (or with --json, every shape's results) and exit 1 when no shape
    has a result."""
    from tiletraffic.analysis.tune.shapes import table as shapes_table
    from tiletraffic.analysis.tune.stats import failure

    if as_json:
        click.echo(json_text([r.data for r in results], indent=1))
    else:
        click.echo(shapes_table(shapes, results), nl=False)
    why = [f"M={s.m} N={s.n} K={s.k}: {failure(r.data)}" for s, r in zip(shapes, results)
           if failure(r.data) is not None]
    for line in why:
        click.echo(f"error: {line}", err=True)
    if why:
        sys.exit(1)


def _exit_without_result(doc: dict) -> None:
    """Exit 1 with one line when the finished tuning ``doc`` has no result
    (:func:`analysis.tune.stats.failure`: every candidate failed to build or to run, a
    failed run, not bad input); return otherwise."""
    from tiletraffic.analysis.tune.stats import failure

    why = failure(doc)
    if why is not None:
        click.echo(f"error: {why}", err=True)
        sys.exit(1)
