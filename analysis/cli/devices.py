"""``tiletraffic devices``: the OpenCL devices, and which one is used by default."""
from __future__ import annotations

import click

from .common import fail


@click.command("devices")
def command():
    """List the OpenCL devices and which one is used by default."""
    from tiletraffic.gpu.device import POCL_NEWER_HINT, build_problem, list_devices, select_device
    from tiletraffic.gpu.runtime import TiletrafficGpuError

    devices = list_devices()
    if not devices:
        fail(RuntimeError("no OpenCL device found; install PoCL: pip install "
                           "pocl-binary-distribution"))
    try:
        default = select_device(None).info.id
    except TiletrafficGpuError:
        default = None
    unusable = False
    for d in devices:
        mark = "*" if d.id == default else " "
        problem = build_problem(d)
        unusable = unusable or problem is not None
        click.echo(f"{mark} {d.describe()}"
                   + (f"  [cannot compile kernels here: {problem}]" if problem else ""))
    click.echo("(* = default; choose with --device P:D, a name part, or PYOPENCL_CTX)")
    if unusable:
        click.echo(f"(a device that cannot compile kernels: {POCL_NEWER_HINT})")
