"""``tiletraffic calibrate``: measure an OpenCL device with microbenchmarks and write its
device-model file."""
from __future__ import annotations

import sys

import click

from tiletraffic.analysis.cli.common import fail, select_device
from tiletraffic.analysis.cli.outputs import check_out_file
from tiletraffic.analysis.cli.datasheet_option import datasheet_option
from tiletraffic.analysis.cli.options import DEVICE_MODEL


@click.command("calibrate")
@click.option("--device", "-d", default=None, help="OpenCL device (as for `run`).")
@click.option("--out", "out_file", default=None, type=click.Path(dir_okay=False),
              help="Write the device-model file here (default: print it).")
@click.option("--quick", is_flag=True,
              help="Tiny sizes (seconds on a CPU; a well-formed file, rough numbers).")
@click.option("--base", "base_model", default=None, type=DEVICE_MODEL,
              help="Device model (NAME or FILE) whose unmeasured values the file keeps "
                   "[default: the built-in model matching the device's name, else the "
                   "nearest built-in model with the device's datasheet and queried values, "
                   "else generic-gpu].")
@datasheet_option
def command(device, out_file, quick, base_model, datasheet):
    """Measure this device with OpenCL microbenchmarks (DRAM read and write, L2 size by a
    footprint sweep, L2 and local-memory bandwidth, FP32 FMA rate, load latency, the
    staging round trips from L2 and DRAM, strided requests, the register-tile issue rate,
    the issue rate by sub-groups per scheduler, launch overhead, barrier cost) and write a device-model file: each measured value
    marked measured with its benchmark, the rest queried or as in the base model (--base).
    A value beyond what the hardware can do (above a documented peak, an issue rate above
    one warp instruction per cycle per scheduler) is refused: not written, with a line
    saying why. Then: simulate ... --device-model FILE."""
    from tqdm import tqdm

    from tiletraffic.gpu.runtime.launch import TiletrafficGpuError
    from tiletraffic.simulator.model.device_model import to_toml

    from tiletraffic.analysis.calibrate import calibrate
    from tiletraffic.analysis.files import FolderLock, archive_previous, atomic_write_text, held

    check_out_file(out_file)
    try:
        target = select_device(device)
        with tqdm(total=len(calibrate.BENCHMARKS), desc="calibrate", unit="benchmark",
                  file=sys.stderr,
                  disable=None) as bar:  # shown on a terminal only
            started = []

            def step(name):  # called before each benchmark: the previous one is done
                bar.update(len(started) > 0)
                started.append(name)
                bar.set_postfix_str(name)
            model, measured = calibrate.calibrate(target, quick, step, base=base_model,
                                                  datasheet=datasheet)
            bar.update(1)
    except (TiletrafficGpuError, calibrate.CalibrationError) as err:
        fail(err)
    click.echo(calibrate.table(measured), err=out_file is None)
    for m in measured:
        if m.refused:
            click.echo(f"refused: {m.refused}", err=True)
    click.echo(f"model: {model.description}", err=True)
    if out_file is None:
        click.echo(to_toml(model), nl=False)
    else:
        with held(FolderLock.of_file(out_file), str(out_file),
                  lambda line: click.echo(line, err=True)):
            moved = archive_previous(out_file)
            atomic_write_text(out_file, to_toml(model))
        click.echo(f"wrote {out_file}: use it with --device-model {out_file}"
                   + (f" (the earlier file moved to {moved})" if moved else ""))
