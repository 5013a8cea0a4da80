"""``tiletraffic report``: the main job: counts, closed forms and measured speedups of naive
and tiled kernels on a device, written as a report folder (or re-render one)."""
from __future__ import annotations

import click

from tiletraffic.analysis.cli.common import check_device_spec, fail, refuse_unused
from tiletraffic.analysis.cli.datasheet_option import datasheet_option
from tiletraffic.analysis.cli.outputs import render_results, write_failed
from tiletraffic.analysis.cli.options import TARGETS_OPTION, repeat_option
from tiletraffic.analysis.report import DEFAULT_OUT_ROOT


@click.command("report")
@click.option("--device", "-d", default=None, help="OpenCL device (as for `run`).")
@click.option("--out", "out_dir", default=DEFAULT_OUT_ROOT, show_default=True,
              type=click.Path(file_okay=False),
              help="Folder of report folders: the report goes to OUT/<device>/ (relative to "
                   "the current folder; a second run into the same folder waits for the "
                   "first, whose results.json it then moves to history/).")
@click.option("--quick", is_flag=True, help="Small sweep (seconds on a 2-core CPU).")
@repeat_option("Timed launches per kernel")
@click.option("--device-model", "model", default=None,
              help="Device model to validate on the device: a built-in name or a TOML file "
                   "(default: the device's built-in model, else the nearest built-in model "
                   "with the device's datasheet and queried values, else generic-gpu). Only "
                   "a model of this device (built in for it, transferred to it or calibrated "
                   "on it) is judged against it.")
@click.option("--render", "render_dir", default=None, type=click.Path(file_okay=False),
              help="Only re-render an existing report directory from its results.json (no "
                   "device): report.md and its figures, report.html and its explain pages.")
@TARGETS_OPTION
@datasheet_option
def command(device, out_dir, quick, repeat, model, render_dir, targets, datasheet):
    """The main job: count naive and tiled GEMM and matrix-vector traffic in the simulator
    (checked against the closed forms), run them on the device at sizes chosen for it
    (checked, timed, with spreads), validate the device model where it is this device's,
    and write report.md, figures and results.json to OUT/<device>/, with report.html
    linking explain pages of naive and tiled GEMM and a matrix-vector pair."""
    from tiletraffic.gpu.runtime.launch import TiletrafficGpuError

    if render_dir:
        refuse_unused(("device", "out_dir", "quick", "repeat", "model", "targets", "datasheet"),
                      "with --render: it re-renders DIR from its results.json, without a device")
    if model is not None:
        refuse_unused(("datasheet",), "with --device-model: the model is given")
    check_device_spec(device)

    from tiletraffic.analysis.files import SweepInterrupted
    from tiletraffic.analysis.report.build import make_report, render

    if render_dir:
        from pathlib import Path

        path = Path(render_dir)
        if not (path / "results.json").exists():
            hint = (" (it holds H200 validation data, not a report of tiletraffic report)"
                    if (path / "h200_raw.json.gz").exists() else "")
            raise click.UsageError(f"{path} has no results.json{hint}")
        click.echo(f"rendered {render_results(render, path, 'results.json', 'tiletraffic report')}")
        return

    try:
        path = make_report(device=device, out_root=out_dir, quick=quick, repeat=repeat,
                           device_model=model, targets=targets, datasheet=datasheet)
    except (TiletrafficGpuError, ValueError, KeyError, SweepInterrupted) as err:
        fail(err)
    except OSError as err:
        write_failed("the report", out_dir, err)
    import json

    from tiletraffic.analysis.report.text import summary_lines

    data = json.loads((path / "results.json").read_text())
    click.echo("\n".join(summary_lines(data, path)))
