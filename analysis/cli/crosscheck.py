"""``tiletraffic crosscheck``: the simulator against Oclgrind running the generated kernel,
counts of a correct schedule side by side, the hazards of a faulty one (a variant, or any
schedule in which the simulator finds hazards, a user's own included) side by side."""
from __future__ import annotations

import sys

import click

from tiletraffic.simulator.engine.limits import LimitError
from tiletraffic.simulator.engine.simulation import InputError
from tiletraffic.simulator.ir.static import ExecutionError
from tiletraffic.simulator.kernels.families import ScheduleError

from tiletraffic.frontend.resolver import resolve
from tiletraffic.analysis.files import json_text
from tiletraffic.analysis.cli.common import (build_schedule, fail, one_name_or_all,
                                             refuse_beyond_limits, refuse_unused)
from tiletraffic.analysis.cli.options import (NAMED_SIZE_OPTIONS, json_option,
                                              named_schedule_options)


@click.command("crosscheck")
@named_schedule_options
@click.option("--all", "check_all", is_flag=True,
              help="Every schedule (counts) and every broken variant (hazards), example shapes.")
@json_option("the comparison")
def command(name, m, k, n, tile, chunk, check_all, as_json):
    """Compare the simulator with Oclgrind running the generated kernel: counts of a
    correct schedule side by side, or the hazards of a faulty one (a broken variant, or any
    schedule in which the simulator finds hazards) side by side, with the difference stated.
    Exits 1 on any disagreement, 2 on bad input or when Oclgrind is not installed.

    SCHEDULE: as for check, FILE.py:FUNCTION and LAUNCH.toml included; each kernel of a kernel sequence
    (gemm-split-k) is compared on its own, with random inputs."""
    from tiletraffic.gpu.oclgrind.oclgrind import OclgrindError, OclgrindUnavailable
    from tiletraffic.simulator.kernels.variants import names

    from tiletraffic.gpu.oclgrind.crosscheck import compare_kernels, oclgrind_limits

    one_name_or_all(name, check_all)
    if check_all:
        refuse_unused(NAMED_SIZE_OPTIONS, "with --all: every built-in schedule is compared at "
                                          "its example shape")
    refuse_unused(("max_registers",), "in crosscheck: counts and hazards do not depend on "
                                      "registers (Oclgrind takes no register budget)")
    todo = names() if check_all else [name]
    own = None
    if not check_all:   # Oclgrind's limits (when it is installed) before any work
        own = build_schedule(name, m, k, n, tile, chunk, example_shape=True)
        refuse_beyond_limits(own, oclgrind_limits())
    results, ok = [], True
    try:
        for nm in todo:
            sch = resolve(nm, example_shape=True) if check_all else own
            for res in compare_kernels(sch):   # a kernel sequence: each kernel on its own
                ok &= res.ok
                results.append(res)
                if not as_json:
                    click.echo("\n".join(comparison_text(res)))
    except (ScheduleError, LimitError, InputError, ExecutionError) as err:
        raise click.UsageError(str(err)) from None
    except OclgrindUnavailable as err:  # a setup to fix, not a fault of the kernel
        click.echo(f"error: {str(err).splitlines()[0]}", err=True)
        sys.exit(2)
    except OclgrindError as err:
        fail(err)
    if as_json:
        click.echo(json_text([r.to_dict() for r in results], indent=2))
    sys.exit(0 if ok else 1)


def comparison_text(res) -> list[str]:
    """A counts comparison as a table, or a hazards comparison as the kinds each found."""
    from tiletraffic.gpu.oclgrind.crosscheck import COUNT_KEYS, CountsComparison

    if isinstance(res, CountsComparison):
        lines = [f"{res.schedule}: counts {'identical' if res.equal else 'DIFFER'}",
                 f"  {'counter':25s} {'simulator':>11s} {'oclgrind':>14s}"]
        for key in COUNT_KEYS:
            a, b = res.simulator[key], res.oclgrind[key]
            lines.append(f"  {key:25s} {a:11d} {b:14d}" + ("" if a == b else "   <-- differs"))
        return lines + ([f"  note: {res.note}"] if res.note else [])
    invisible = res.simulator_kinds and not res.expected_oclgrind
    return [f"{res.schedule}: hazards {'agree' if res.agree else 'DISAGREE'}"
            + (" (Oclgrind cannot see these kinds: " + ", ".join(res.simulator_kinds) + ")"
               if invisible else ""),
            f"  simulator: {', '.join(res.simulator_kinds) or 'none'}",
            *(f"    {shortened(line)}" for line in res.simulator_details[:3]),
            f"  oclgrind:  {', '.join(res.oclgrind_kinds) or 'none'}",
            *(f"    {shortened(line)}" for line in res.details[:3]),
            *([f"  difference: {res.difference}"] if res.difference else [])]


DETAIL_WIDTH = 160
"""The longest hazard line of the text output (``--json`` keeps every line whole)."""


def shortened(line: str, width: int = DETAIL_WIDTH) -> str:
    """``line``, or when longer than ``width``, its words up to ``width`` and ``…``."""
    if len(line) <= width:
        return line
    cut = line[:width].rsplit(" ", 1)[0] if " " in line[:width] else line[:width - 1]
    return cut.rstrip(" ,;:(") + " …"
