"""``tiletraffic devices``: the OpenCL devices, and which one is used by default."""
from __future__ import annotations

import click

from tiletraffic.analysis.cli.common import fail


@click.command("devices")
def command():
    """List the OpenCL devices and which one is used by default."""
    from tiletraffic.gpu.devices.device import POCL_NEWER_HINT
    from tiletraffic.gpu.devices.device_list import device_entries

    entries = device_entries()
    if not entries:
        fail(RuntimeError("no OpenCL device found; install PoCL: pip install "
                           "pocl-binary-distribution"))
    for entry in entries:
        click.echo(entry.line())
    click.echo("(* = default; choose with --device P:D, a name part, or PYOPENCL_CTX)")
    if any(entry.build_problem for entry in entries):
        click.echo(f"(a device that cannot compile kernels: {POCL_NEWER_HINT})")
