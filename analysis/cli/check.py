"""``tiletraffic check``: the hazards of SCHEDULE's full launch, or of every built-in
schedule, demo and faulty variant (``--all``) against the kinds each is expected to have."""
from __future__ import annotations

import sys

import click

from tiletraffic.simulator.engine.limits import GENERIC_GPU, UNLIMITED, LimitError
from tiletraffic.simulator.engine.simulation import InputError
from tiletraffic.simulator.ir.static import ExecutionError

from tiletraffic.frontend.resolver import resolve
from tiletraffic.frontend.shown_names import params_text
from tiletraffic.analysis.api.arguments import inputs_kind_of
from tiletraffic.analysis.api.simulation import check, check_values_problem
from tiletraffic.analysis.files import json_text
from tiletraffic.analysis.cli.common import (build_schedule, one_name_or_all,
                                             refuse_beyond_limits, refuse_seed_unless_random,
                                             refuse_unused, within_budget)
from tiletraffic.analysis.cli.options import (FORCE_OPTION, INPUTS_OPTION, NAMED_SIZE_OPTIONS,
                                              SEED_OPTION, json_option, named_schedule_options)


@click.command("check")
@named_schedule_options
@click.option("--all", "check_all", is_flag=True,
              help="Check every schedule, demo and broken variant on its example shape.")
@json_option("the hazards")
@click.option("--no-limits", is_flag=True,
              help="Do not enforce generic GPU limits (1024 work-items, 48 KiB local memory).")
@SEED_OPTION
@INPUTS_OPTION
@FORCE_OPTION
def command(name, m, k, n, tile, chunk, check_all, as_json, no_limits, seed, inputs_kind,
            force):
    """Run only the hazard checks: races in local and global memory, barrier divergence,
    out-of-bounds accesses, misaligned vector accesses, integer divisions by zero,
    uninitialized reads (local, private, outputs read before a store), unwritten outputs, on
    the full launch (every work-group; a launch of 32 work-groups or more is first checked
    on its work-group classes where they are proved, the whole launch run only where that
    finds anything; a launch of more than 2**24 work-item loop steps or 2**20 work-items
    without computing values: no hazard depends on them).
    Exits 1 when a hazard is found (with --all: when a correct schedule has one or a broken
    variant misses its expected kind).

    SCHEDULE: a family, demo or faulty variant (missing sizes: its example shape),
    FILE.py:FUNCTION, called with the sizes given, or LAUNCH.toml (as for simulate)."""
    one_name_or_all(name, check_all)
    given_inputs = inputs_kind
    inputs_kind = refuse_seed_unless_random(inputs_kind)
    if check_all:
        refuse_unused((*NAMED_SIZE_OPTIONS, "no_limits", "force"),
                      "with --all: every built-in schedule is checked at its example shape, "
                      "under the generic GPU's limits")
        rows = check_every_name(seed, inputs_kind)
        click.echo(json_text(rows, indent=2) if as_json else "\n".join(all_text(rows)))
        sys.exit(0 if all(r["ok"] for r in rows) else 1)
    refuse_unused(("max_registers",), "in check: the hazards do not depend on registers")
    sch = build_schedule(name, m, k, n, tile, chunk, example_shape=True)
    refuse_beyond_limits(sch, None if no_limits else GENERIC_GPU)
    large = check_values_problem(sch)
    if large:
        refuse_unused(("seed", "inputs_kind"),
                      f"here: a launch of {large} is checked without computing values (no "
                      "hazard depends on them)")
    within_budget(sch, force, compute_values=large is None, reference=False)
    hazards = hazards_of(sch, seed, inputs_kind_of(sch, given_inputs), no_limits)
    if as_json:
        click.echo(json_text([h.to_dict() for h in hazards], indent=2))
    else:
        click.echo("\n".join(hazards_text(sch, hazards)))
    sys.exit(1 if hazards else 0)


def hazards_of(sch, seed=None, inputs_kind="normal", no_limits=False):
    """``tiletraffic.check`` under the generic GPU's limits (none with ``no_limits``)."""
    try:
        return check(sch, seed=seed, inputs=inputs_kind,
                     limits=UNLIMITED if no_limits else GENERIC_GPU)
    except (LimitError, InputError, ExecutionError) as err:
        raise click.UsageError(str(err)) from None


def check_every_name(seed, inputs_kind) -> list[dict]:
    """Every built-in name at its example shape: the hazard kinds expected and found."""
    from tiletraffic.simulator.kernels.variants import VARIANTS, names

    rows = []
    for nm in names():
        found = sorted({h.kind for h in hazards_of(resolve(nm, example_shape=True), seed,
                                                inputs_kind)})
        expected = sorted(VARIANTS[nm].expected) if nm in VARIANTS else []
        good = set(expected) <= set(found) and (bool(found) == bool(expected))
        rows.append({"name": nm, "expected": expected, "found": found, "ok": good})
    return rows


def all_text(rows: list[dict]) -> list[str]:
    return [f"{'schedule':38s} {'expected':44s} {'found':52s}",
            *(f"{r['name']:38s} {', '.join(r['expected']) or 'none':44s} "
              f"{', '.join(r['found']) or 'none':52s} {'ok' if r['ok'] else 'WRONG'}"
              for r in rows)]


def hazards_text(sch, hazards) -> list[str]:
    return [f"{sch.family}  " + params_text(sch) +
            f"  tile={sch.tile}: " + (f"{len(hazards)} hazard(s)" if hazards else "clean"),
            *(f"  [{h.kind}] {h.detail}" for h in hazards)]
