"""The ``--datasheet FILE`` option of the commands that model a device without a built-in
model of its own (``device-model --device``, ``calibrate``)."""
from __future__ import annotations

import click


class DatasheetParam(click.ParamType):
    """A datasheet file (TOML, ``simulator.model.datasheet``) -> a ``Datasheet``; a file that
    cannot be read or is not a datasheet is a usage error naming its problem."""

    name = "FILE"

    def convert(self, value, param, ctx):
        from tiletraffic.simulator.model.datasheet import load_datasheet
        from tiletraffic.simulator.model.device_model import DeviceModelError

        try:
            return load_datasheet(value)
        except DeviceModelError as err:
            self.fail(str(err), param, ctx)


def datasheet_option(f):
    """``--datasheet FILE``: the device's documented sizes and rates, for a device without
    a built-in model."""
    return click.option(
        "--datasheet", default=None, type=DatasheetParam(),
        help="For a device without a built-in model: a datasheet file (TOML) whose values "
             "replace the nearest built-in model's documented ones [default: the shipped "
             "datasheet that fits the device's name, if any].")(f)
