"""``tiletraffic device-model``: a device model as the TOML file ``--device-model`` reads, or
the list of built-in models."""
from __future__ import annotations

import click

from tiletraffic.analysis.cli.common import check_device_spec, fail
from tiletraffic.analysis.cli.datasheet_option import datasheet_option
from tiletraffic.analysis.cli.options import DEVICE_MODEL


@click.command("device-model")
@click.argument("model", required=False, type=DEVICE_MODEL)
@click.option("--device", "-d", default=None,
              help="Instead: the model of this OpenCL device ('P:D' or part of its name): "
                   "compute units, local memory and work-group size queried, every other "
                   "value from its built-in model or, for another device, from the nearest "
                   "built-in model with its datasheet's values and its queried clock and L2, "
                   "else generic-gpu's guesses (a note on stderr says which).")
@datasheet_option
def command(model, device, datasheet):
    """Print device model MODEL (a built-in name or a file) as the TOML file --device-model
    reads, every value with its source: documented, queried, measured or guessed. Without
    MODEL or --device, list the built-in models.

    Make your own: tiletraffic device-model generic-gpu > my-gpu.toml, edit the values and
    their sources, then tiletraffic simulate ... --device-model my-gpu.toml."""
    from tiletraffic.simulator.model.device_model import DEVICE_MODELS, VALUE_FIELDS, to_toml

    if model is not None and device is not None:
        raise click.UsageError("give a MODEL or --device, not both")
    if datasheet is not None and device is None:
        raise click.UsageError("--datasheet goes with --device (the device it describes)")
    if device is not None:
        check_device_spec(device)
        from tiletraffic.gpu.devices.device import select_device
        from tiletraffic.gpu.runtime.launch import TiletrafficGpuError

        from tiletraffic.analysis.device_model import resolve_device_model

        try:
            model = resolve_device_model(None, device_info=select_device(device).info,
                                         datasheet=datasheet)
        except TiletrafficGpuError as err:
            fail(err)
        click.echo(f"note: {model.description}", err=True)
    if model is None:
        import textwrap

        for m in DEVICE_MODELS.values():
            click.echo(f"{m.name}: {len(m.guessed)} of {len(VALUE_FIELDS)} values guessed")
            click.echo(textwrap.fill(m.description, 88, initial_indent="  ",
                                     subsequent_indent="  "))
        return
    click.echo(to_toml(model), nl=False)
