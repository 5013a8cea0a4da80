"""``tiletraffic validate``: the model against a device, case by case.

    tiletraffic validate [--device D] [--device-model NAME|FILE] [--quick | --case-list L |
                         --cases FILE] [--dtype float16] [--batch COUNT [--shared-b]]
                         [--out DIR] [--repeat R] [--rounds N] [--predictions FILE]
    tiletraffic validate --predict-only --device-model NAME|FILE [--quick | ...] --out FILE
    tiletraffic validate --print-cases [--quick | --case-list L | --device D] [--dtype ...]
    tiletraffic validate --render DIR
    tiletraffic validate --cluster local[:N]|auto|ADDRESS [--device-workers N] [...]

Usage errors (a malformed case file or predictions file, cases or a model that differ from
the predictions file's, options that do not go together, cases the model cannot predict)
exit 2, device errors exit 1, each as one line.
"""
from __future__ import annotations

import sys

import click

from tiletraffic.analysis.cli.case_lists import CaseListName, case_list_options, chosen_cases
from tiletraffic.analysis.cli.common import (command_line, fail, refuse_beyond_limits,
                                             refuse_unused, select_device)
from tiletraffic.analysis.cli.datasheet_option import datasheet_option
from tiletraffic.analysis.cli.outputs import check_out_file, render_results, write_failed
from tiletraffic.analysis.cli.options import (TARGETS_OPTION, cluster_options, repeat_option,
                                              rounds_option)


def _model_spec(value):
    """Check a --device-model value early (usage error naming the problem); keep the spec,
    whose file the predictions' hash is taken of."""
    from tiletraffic.simulator.model.device_model import DeviceModelError

    from tiletraffic.analysis.device_model import resolve_device_model

    if value is None:
        return None
    try:
        resolve_device_model(value)
    except KeyError as err:
        raise click.BadParameter(err.args[0], param_hint="--device-model") from None
    except DeviceModelError as err:
        raise click.BadParameter(str(err), param_hint="--device-model") from None
    return value


@click.command("validate")
@click.option("--device", "-d", default=None, help="OpenCL device (as for `run`).")
@click.option("--device-model", "model", default=None, callback=lambda c, p, v: _model_spec(v),
              metavar="NAME|FILE",
              help="The device model predicting the times: a built-in name or a file "
                   "(`tiletraffic calibrate --out FILE` measures one). Default: the "
                   "predictions file's, else the built-in model of a known device, else the "
                   "nearest built-in model transferred to the device, else generic-gpu.")
@click.option("--quick", is_flag=True, help="The tiny case list (seconds on PoCL; for CI).")
@click.option("--case-list", "case_list_name", type=CaseListName(),
              default=None, help="A built-in case list (default: gpu on a GPU, cpu otherwise; "
                                 "--predict-only: gpu).")
@click.option("--cases", "cases_file", default=None, type=click.Path(dir_okay=False),
              help="Your own case list: a TOML file of [[case]] tables (start from "
                   "--print-cases).")
@case_list_options
@click.option("--out", "out", default=None, type=click.Path(),
              help="Folder of the results (default: folder validate in the folder that "
                   "`tiletraffic report` writes for this device, <device>[-quick]; a list "
                   "with --dtype float16 or --batch in its own, <device>-quick-float16); "
                   "with --predict-only the predictions file (default predictions.json).")
@repeat_option("Timed launches per case and round")
@rounds_option("Times the whole case set is run (the run-to-run spread needs 2)")
@click.option("--predictions", "predictions_file", default=None,
              type=click.Path(dir_okay=False),
              help="A predictions file (--predict-only): measure exactly its cases and "
                   "compare with its predictions (the model is not run: predicting "
                   "beforehand keeps a lent GPU's time for measuring); refused if the cases "
                   "or the model differ.")
@click.option("--predict-only", is_flag=True,
              help="Write the model's predictions of the cases to --out (no device): commit "
                   "that file before measuring to pre-register the predictions.")
@click.option("--print-cases", is_flag=True,
              help="Print the case list as a --cases file and exit.")
@click.option("--render", "render_dir", default=None, type=click.Path(file_okay=False),
              help="Only re-render DIR/validation.md from DIR/validation.json (no device).")
@TARGETS_OPTION
@datasheet_option
@cluster_options("The cases are predicted as Ray tasks over its CPUs and run on one worker "
                 "per device (one device kind: the cases are compared with each other).")
def command(device, model, quick, case_list_name, cases_file, dtype, batch, shared_b, out,
            repeat, rounds, predictions_file, predict_only, print_cases, render_dir, targets,
            datasheet, cluster, device_workers):
    """Validate the model on a device: every schedule family at sizes chosen for the device,
    run, checked against float64 and timed (median and spread over repeated launches and
    rounds), against the model's predicted time, speedup over the naive schedule and
    ranking; writes validation.json, validation.md and a figure. --dtype float16 runs the
    built-in list in half storage, --batch COUNT its GEMMs as batches. With a model of the device
    itself (its built-in model, or one calibrated on it) the targets are shown met or not
    met; with another device's model the errors are shown without verdicts.

    Pre-registration: --predict-only --device-model FILE --out predictions.json (no device),
    commit that file, then validate --predictions predictions.json on the device."""
    from tiletraffic.analysis.validation.cases import (case_list, case_list_label, cases_toml,
                                                       default_case_list_name)
    from tiletraffic.analysis.validation.predict import PredictionsError, PredictionsMismatch

    if out == "":
        raise click.UsageError("--out '': an empty path names no folder or file")
    if render_dir:
        refuse_unused(("device", "model", "quick", "case_list_name", "cases_file", "dtype",
                       "batch", "shared_b", "out", "repeat", "rounds", "predictions_file",
                       "predict_only", "print_cases", "targets", "datasheet", "cluster",
                       "device_workers"),
                      "with --render: it re-renders DIR/validation.md from "
                      "DIR/validation.json, without a device")
        from pathlib import Path

        from tiletraffic.analysis.validation.render import render

        if not (Path(render_dir) / "validation.json").exists():
            raise click.UsageError(f"{render_dir} has no validation.json")
        rendered = render_results(render, render_dir, "validation.json", "tiletraffic validate")
        click.echo(f"rendered {rendered}")
        return
    options = {"dtype": dtype, "batch": batch, "shared_b": shared_b}
    cases, list_name, plain_name = chosen_cases(quick, case_list_name, cases_file, options,
                                                predictions_file)
    if print_cases:
        refuse_unused(("model", "out", "repeat", "rounds", "predictions_file", "predict_only",
                       "targets", "datasheet", "cluster", "device_workers"),
                      "with --print-cases: it prints the case list and runs nothing")
        if cases is not None:
            refuse_unused(("device",), "with --print-cases and a case list chosen: the device "
                                       "only picks the default list")
        if cases is None:
            from tiletraffic.gpu.runtime.launch import TiletrafficGpuError

            try:
                is_gpu = select_device(device).info.is_gpu
            except TiletrafficGpuError as err:
                fail(err)
            cases = case_list(default_case_list_name(False, is_gpu), **options)
        click.echo(cases_toml(cases), nl=False)
        return
    if predict_only:
        refuse_unused(("device", "predictions_file", "repeat", "rounds", "targets",
                       "datasheet", "cluster", "device_workers"),
                      "with --predict-only: it writes the model's predictions and measures "
                      "nothing, without a device")
        if model is None:
            raise click.UsageError("--predict-only needs --device-model NAME|FILE (the model "
                                   "whose predictions are registered)")
        if cases_file:   # the model's limits, before any work
            from tiletraffic.simulator.model.observation import device_limits

            from tiletraffic.analysis.device_model import resolve_device_model
            _refuse_cases_beyond(cases, cases_file, device_limits(resolve_device_model(model)))
        check_out_file(out or "predictions.json")   # before the predictions' work
        if cases is None:
            list_name, cases = case_list_label("gpu", **options), case_list("gpu", **options)
        _predict_only(cases, list_name, model, out or "predictions.json")
        return

    from tiletraffic.gpu.runtime.launch import TiletrafficGpuError

    from tiletraffic.analysis.tune.cluster import ClusterError
    from tiletraffic.analysis.tune.engine import engine_for
    from tiletraffic.analysis.validation.run import (ValidationInterrupted, ValidationOptions,
                                                     validate_device)

    if model is not None or predictions_file is not None:
        refuse_unused(("datasheet",), "with a model given (--device-model, --predictions)")
    if cluster is None:
        refuse_unused(("device_workers",), "without --cluster: one process runs the cases "
                                           "on one device")
    try:
        with engine_for(cluster, 1, device_workers,
                        lambda line: click.echo(line, err=True)) as engine:
            target = select_device(device) if cluster is None else \
                _remote_device(engine, device)
            if cases_file or any(options.values()):   # the device's limits, before any work
                _refuse_cases_beyond(cases or case_list(default_case_list_name(
                    False, target.info.is_gpu), **options), cases_file or "case list",
                    target.limits, host=cluster is None)
            result = validate_device(target, ValidationOptions(
                model=model, cases=cases if list_name is None else None,
                case_list_name=plain_name, predictions_file=predictions_file, out_dir=out,
                repeat=repeat, rounds=rounds, command=command_line(), targets=targets,
                datasheet=datasheet, **options),
                engine)
    except (PredictionsError, PredictionsMismatch) as err:
        raise click.UsageError(str(err)) from None
    except (TiletrafficGpuError, ValueError, ValidationInterrupted, ClusterError) as err:
        fail(err)
    except OSError as err:
        write_failed("the validation", out, err)
    _print_summary(result)


def _refuse_cases_beyond(cases, cases_file: str, limits, host: bool = False) -> None:
    """Refuse (exit 2, one line naming the case, the value and the limit) the first case of
    the case file ``cases_file`` that a device of ``limits`` would not launch; ``host``:
    or whose checked run needs more of this host's memory than it has
    (``simulator.engine.budget.estimate_device_run``)."""
    from tiletraffic.simulator.engine.budget import (BudgetError, check_budget,
                                                     estimate_device_run)

    for number, case in enumerate(cases, 1):
        where, sch = f"{cases_file}: case {number} ({case.id}): ", case.build()
        refuse_beyond_limits(sch, limits, where)
        try:
            if host:
                check_budget(estimate_device_run(sch), sch.family)
        except BudgetError as err:
            raise click.UsageError(where + str(err).split(", or --force")[0]) from None


def _remote_device(engine, device):
    """The device a cluster's worker opens (no such device: usage error, as here)."""
    from tiletraffic.gpu.devices.device import NoMatchingDeviceError

    try:
        return engine.open_device(device)
    except NoMatchingDeviceError as err:
        raise click.UsageError(str(err)) from None


def _predict_only(cases, list_name, model, out) -> None:
    from tqdm import tqdm

    from tiletraffic.analysis.validation.predict import write_predictions

    with tqdm(total=len(cases), desc="predict", unit="case", file=sys.stderr,
              disable=None) as bar:
        started = []

        def step(case):
            bar.update(len(started) > 0)
            started.append(case)
            bar.set_postfix_str(case.label)
        try:
            doc = write_predictions(out, cases, model, step=step, command=command_line(),
                                    case_list=list_name)
        except OSError as err:
            write_failed("the predictions", None, err)
        bar.update(1)
    failed = [cid for cid, p in doc["predictions"].items() if "error" in p]
    commit = doc["tiletraffic"]["git_commit"]
    click.echo(f"wrote {out}: {len(cases) - len(failed)} of {len(cases)} cases predicted with "
               f"{doc['device_model']['name']} (sha256 {doc['device_model']['sha256'][:12]}), "
               f"tiletraffic {commit[:12] if commit else 'outside git'}"
               + (" with uncommitted changes" if doc["tiletraffic"]["git_dirty"] else ""))
    for cid in failed:
        click.echo(f"  not predicted: {cid}: {doc['predictions'][cid]['error']}")
    if failed:
        # the file keeps the refusals, but a pre-registration without those predictions
        # would leave the cases unscored: not something to commit silently
        click.echo(f"error: {len(failed)} of {len(cases)} case(s) not predicted (above): fix "
                   f"or remove them from the case list before committing {out}", err=True)
        sys.exit(2)   # the case list holds cases the model cannot take: bad input
    click.echo(f"commit it, then measure: tiletraffic validate --predictions {out}")


def _print_summary(result) -> None:
    from tiletraffic.analysis.validation.results import model_describes

    s = result.summary
    describes, why = model_describes(result.data)
    if not describes:   # said first: the figures below are another device's model's errors
        click.echo(f"no verdicts: {why}; the model's errors here, for information:")
    for t in s.targets:
        click.echo(f"{t.name:18s} {t.verdict:16s} {t.figure}   (asked: {t.asked})"
                   if describes else f"{t.name:18s} {t.figure}")
    if describes and "transferred to this device" in why:
        click.echo(f"model: {why}")
    left_out = len(s.results) - len(s.compared)
    click.echo(f"{len(s.compared)} of {len(s.results)} cases compared"
               + (f" ({left_out} left out: see validation.md)" if left_out else ""))
    click.echo(f"validation written to {result.out_dir}")
