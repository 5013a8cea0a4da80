"""``tiletraffic explain``: SCHEDULE's memory traffic drawn as one self-contained web page."""
from __future__ import annotations

import sys
import warnings

import click

from tiletraffic.simulator.engine.limits import LimitError
from tiletraffic.simulator.engine.simulation import InputError
from tiletraffic.simulator.ir.static import ExecutionError
from tiletraffic.simulator.model.observation import device_limits

from tiletraffic.simulator.ir.sequence import is_sequence, pick_kernel

from tiletraffic.analysis.device_model import DEFAULT_MODEL
from tiletraffic.analysis.cli.common import build_schedule, refuse_beyond_limits, refuse_unused
from tiletraffic.analysis.cli.outputs import check_out_file
from tiletraffic.analysis.cli.options import DEVICE_MODEL, size_options


@click.command("explain")
@size_options
@click.option("--device-model", default=DEFAULT_MODEL, show_default=True, type=DEVICE_MODEL,
              help="The device model of the pictures (sub-group size, sectors, lines, "
                   "banks) and of the time terms.")
@click.option("--work-group", "work_group", default=None, metavar="I[,J]",
              help="The work-group drawn: a linear id (dimension 0 fastest) or one id per "
                   "NDRange dimension (default: the first hazard's, else 0).")
@click.option("--step-iterations", type=click.IntRange(min=1), default=None,
              help="Without barriers: iterations of each load per step (default: the tile).")
@click.option("--registers", type=click.IntRange(min=1), default=None,
              help="Registers per work-item of the compiled kernel, as for model.")
@click.option("--kernel", "kernel", default=None, metavar="NAME|I",
              help="A kernel sequence (gemm-split-k): the kernel drawn, by name or 1-based "
                   "position (default: the first).")
@click.option("--out", "out_file", required=True, type=click.Path(dir_okay=False),
              help="The HTML page to write (written atomically).")
def command(schedule, m, k, n, tile, chunk, device_model, work_group, step_iterations, registers,
            kernel, out_file):
    """Draw SCHEDULE's memory traffic as one self-contained web page: the tiles a
    work-group reads at each barrier interval (a stepper), how often each input element is
    read, one sub-group's request in sectors and lines, one local access in banks, the
    hazards, and the model's time terms. Every number comes from the simulated launch;
    the page embeds the JSON it was drawn from.

    SCHEDULE: a family, a demo or faulty variant (missing sizes: its example shape; the
    matrix-vector families' is above 64), FILE.py:FUNCTION or LAUNCH.toml, as for simulate. At most 64 elements per side of any array (the
    pictures draw every element). A kernel sequence is drawn one kernel at a time
    (--kernel). Exit status 1 when the simulated launch has hazards (the page is written
    and draws them), 2 on bad input."""
    from tiletraffic.analysis.explain import ExplainSizeError, explain_data, write_page

    whole = sch = build_schedule(schedule, m, k, n, tile, chunk)
    refuse_beyond_limits(whole, device_limits(device_model))
    try:
        sch = pick_kernel(sch, kernel)
    except ValueError as err:
        raise click.UsageError(str(err)) from None
    check_out_file(out_file)
    group = None
    if work_group is not None:
        try:
            parts = [int(x) for x in work_group.split(",")]
        except ValueError:
            raise click.UsageError(f"--work-group {work_group}: give I or I,J (integers)") \
                from None
        group = parts[0] if len(parts) == 1 else parts
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # guessed values are marked on the page
        try:
            doc = explain_data(sch, device_model, work_group=group,
                               step_iterations=step_iterations,
                               registers_per_work_item=registers)
        except ExplainSizeError as err:
            raise click.UsageError(str(err)) from None
        except (LimitError, InputError, ExecutionError) as err:
            raise click.UsageError(str(err)) from None
        except ValueError as err:   # a work-group outside the launch, too many registers
            text = str(err)
            if registers is not None and "registers" in text:   # named as model names it
                text = f"--registers {registers}: {text}"
            raise click.UsageError(text) from None
    if doc["steps"]["by"] == "barrier interval":   # known once the work-group has run
        refuse_unused(("step_iterations",), f"for {sch.family}: its work-group passes "
                                            "barriers, so each step is a barrier interval")
    write_page(doc, out_file)
    hazards = f", {len(doc['hazards'])} hazard(s) drawn" if doc["hazards"] else ""
    steps = len(doc["steps"]["list"])
    click.echo(f"wrote {out_file}: {sch.family}, work-group "
               f"{tuple(doc['work_group']['id'])}, "
               f"{steps} step{'' if steps == 1 else 's'}{hazards}")
    if is_sequence(whole):
        position = whole.kernels.index(sch) + 1
        click.echo(f"drew kernel {position} of {len(whole.kernels)} of {whole.family}, "
                   f"{sch.kernel_name} (--kernel chooses another)")
    if doc["hazards"]:
        sys.exit(1)   # a fault found: the page is written and shows it
