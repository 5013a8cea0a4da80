"""``tiletraffic instructions``: the compiled kernel's instructions per innermost loop and
per kernel, by class, from NVIDIA's offline compilers (no GPU needed), written as the
instructions file ``model --instructions`` reads."""
from __future__ import annotations

import json
from pathlib import Path

import click

from tiletraffic.simulator.model.instructions import INSTRUCTION_CLASSES

from tiletraffic.analysis.api import instructions as api
from tiletraffic.analysis.cli.common import build_schedule, fail
from tiletraffic.analysis.cli.options import json_option, size_options
from tiletraffic.analysis.files import atomic_write_text


@click.command("instructions")
@size_options
@click.option("--arch", default=api.DEFAULT_ARCH, show_default=True,
              help="The target of the machine code (sm_XY: compute capability X.Y).")
@click.option("--ptx", "ptx_file", default=None, metavar="FILE",
              type=click.Path(exists=True, dir_okay=False),
              help="Count this PTX (e.g. the OpenCL driver's build of SCHEDULE, from its "
                   "program binary), assembled by ptxas, instead of compiling SCHEDULE's "
                   "generated kernel with NVRTC.")
@click.option("--out", "out", default=None, metavar="FILE", type=click.Path(dir_okay=False),
              help="Write the instructions file (JSON) here, for `model --instructions`.")
@json_option("the counts")
def command(schedule, m, k, n, tile, chunk, arch, ptx_file, out, as_json):
    """Count SCHEDULE's machine instructions per innermost loop (one iteration) and per
    kernel, by class (FMA, local and global loads and stores, barriers, integer and
    address arithmetic, moves, branches, other): its generated OpenCL C compiled as CUDA
    by NVRTC for --arch and disassembled by nvdisasm (pip install 'tiletraffic[cuda-tools]';
    no GPU needed)."""
    from tiletraffic.gpu.instructions.build import BuildError, InstructionToolsMissing

    if not arch.startswith("sm_") or not arch[3:].isdigit():
        raise click.BadParameter(f"{arch!r} is not a target sm_XY (e.g. sm_90)",
                                 param_hint="--arch")
    sch = build_schedule(schedule, m, k, n, tile, chunk)
    try:
        counts = api.instructions(None if ptx_file else sch, arch=arch,
                                  ptx=Path(ptx_file).read_text() if ptx_file else None)
    except (InstructionToolsMissing, BuildError) as err:
        fail(err)
    document = counts.to_dict()
    if out is not None:
        atomic_write_text(out, json.dumps(document, indent=1) + "\n")
    if as_json:
        click.echo(json.dumps(document, indent=1))
        return
    click.echo(f"instructions of {sch.family} ({counts.source})")
    for name, kernel in counts.kernels.items():
        rows = [("kernel", kernel.kernel)] + [(lp.name + " (per iteration)",
                                               lp.instructions_per_iteration)
                                              for lp in kernel.loops]
        click.echo(f"  {name}")
        click.echo("    " + " " * 34 + " ".join(f"{c[:7]:>7}" for c in INSTRUCTION_CLASSES)
                   + "    total")
        for label, row in rows:
            click.echo(f"    {label:34}" + " ".join(f"{row.get(c, 0):7d}"
                                                   for c in INSTRUCTION_CLASSES)
                       + f" {sum(row.values()):8d}")
        hot = kernel.hot_loop
        click.echo(f"    hot loop: {hot.name if hot else 'none (no loop of FMAs)'}")
    if out is not None:
        click.echo(f"wrote {out}")
