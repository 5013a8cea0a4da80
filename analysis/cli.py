"""The ``tiletraffic`` command line (click).

    tiletraffic simulate SCHEDULE --m M --k K [--n N] [--tile B] [--json]
    tiletraffic run SCHEDULE --m M --k K [--n N] [--tile B] [--device D] [--repeat R] [--json]
    tiletraffic devices
    tiletraffic report [--device D] [--out DIR] [--quick]

Errors a user can cause (bad sizes, limits, missing device, build failures, wrong results)
are printed as one clear line and exit with status 2 (usage) or 1 (runtime), never as a
traceback.
"""
from __future__ import annotations

import json
import sys

import click
import numpy as np

from tiletraffic.simulator import schedules
from tiletraffic.simulator.device import GENERIC_GPU, UNLIMITED, LimitError
from tiletraffic.simulator.engine import InputError, simulate
from tiletraffic.simulator.hazards import HazardError
from tiletraffic.simulator.reference import random_inputs, reference
from tiletraffic.simulator.traffic_model import ADDED_TIME_TERMS

from . import closed_form

VALUES_AUTO_LIMIT = 2**24
"""Below this many multiply-adds, ``simulate`` also computes and checks the output."""

CLASSES_AUTO_LIMIT = 2**27
"""Above this many multiply-adds, counts are taken by work-group classes (exact, fast)."""

GROUP_WORK_LIMIT = 2**31
"""Most loop iterations (work-items × K) one work-group may need: about a minute here."""


def error_over_tolerance(actual, ref) -> float:
    """Largest |actual - reference| / tolerance of a simulated output (gpu.runtime's check)."""
    from tiletraffic.gpu.runtime import check_result

    return check_result(np.asarray(actual).reshape(ref.value.shape), ref.value, ref.k,
                        ref.abs_product).error_over_tolerance


def _check_work(sch, k: int) -> None:
    per_group = sch.work_group_items * k
    if per_group > GROUP_WORK_LIMIT:
        raise click.UsageError(
            f"K = {k}: one work-group would run {per_group:.3g} work-item loop iterations, "
            f"above the simulation limit of {GROUP_WORK_LIMIT:.3g} (about a minute on this "
            "machine); use a smaller K")


def _schedule_options(f):
    f = click.option("--seed", type=int, default=None,
                     help="Seed of the random inputs (default: fresh inputs every run).")(f)
    f = click.option("--a-tile", type=click.Choice(["row-major", "transposed"]), default=None,
                     help="gemm-tiled: store the A tile transposed (bank conflicts).")(f)
    f = click.option("--padding", type=int, default=None,
                     help="gemm-tiled: extra words per local tile row.")(f)
    f = click.option("--mapping", type=click.Choice(["row-major", "transposed"]), default=None,
                     help="gemm-naive: NDRange dimension 0 over columns (row-major, "
                          "coalesced) or over rows (transposed, uncoalesced).")(f)
    f = click.option("--chunk", type=int, default=None,
                     help="matvec-local: elements of x per staged chunk (default: work-group size).")(f)
    f = click.option("--tile", "-b", type=int, default=None,
                     help="Tile width B for GEMM (work-group B×B), or work-items per "
                          "work-group for matvec. Default 16 (GEMM) or 256 (matvec).")(f)
    f = click.option("--n", "n", type=int, default=None, help="Columns of B and C (GEMM only).")(f)
    f = click.option("--k", "k", type=int, required=True, help="Columns of A (inner dimension).")(f)
    f = click.option("--m", "m", type=int, required=True, help="Rows of A and of C (or y).")(f)
    f = click.argument("schedule", type=click.Choice(schedules.FAMILIES))(f)
    return f


def _named_schedule_options(f):
    """NAME (a family, demo or broken variant) and optional sizes, for check/crosscheck."""
    f = click.option("--chunk", type=int, default=None, help="matvec-local chunk.")(f)
    f = click.option("--tile", "-b", type=int, default=None,
                     help="Tile width or work-group size.")(f)
    f = click.option("--n", "n", type=int, default=None, help="Columns of B and C (GEMM).")(f)
    f = click.option("--k", "k", type=int, default=None, help="Columns of A.")(f)
    f = click.option("--m", "m", type=int, default=None,
                     help="Rows of A (default: an example shape).")(f)
    from tiletraffic.simulator.variants import names
    return click.argument("name", required=False, type=click.Choice(names()))(f)


def _one_name_or_all(name, check_all: bool) -> None:
    if check_all and name:
        raise click.UsageError(f"give either a NAME ({name}) or --all, not both")
    if not check_all and not name:
        raise click.UsageError("give a schedule NAME or --all")


def _build(schedule, m, k, n, tile, chunk, mapping=None, padding=None, a_tile=None):
    options = {key: v for key, v in (("mapping", mapping), ("padding", padding),
                                     ("a_tile", a_tile)) if v is not None}
    if n is not None and schedule in schedules.MATVEC_FAMILIES:
        raise click.UsageError(f"{schedule} computes y = A·x: --n does not apply (got {n})")
    try:
        return schedules.build(schedule, m, k, n, tile, chunk, **options)
    except schedules.ScheduleError as err:
        raise click.UsageError(str(err)) from None


def _fail(err: Exception) -> None:
    click.echo(f"error: {err}", err=True)
    sys.exit(1)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tiletraffic")
def main() -> None:
    """tiletraffic: count, predict and measure the memory traffic of naive and tiled
    matrix kernels (GEMM, matrix-vector) in OpenCL's execution model."""


@main.command("simulate")
@_schedule_options
@click.option("--values/--counts-only", default=None,
              help="Also compute the output and check it against numpy (default: only when "
                   f"M·N·K <= {VALUES_AUTO_LIMIT}).")
@click.option("--no-limits", is_flag=True,
              help="Do not enforce generic GPU limits (1024 work-items, 48 KiB local memory).")
@click.option("--hazards", type=click.Choice(["raise", "report"]), default="raise",
              show_default=True, help="Stop at the first hazard, or report them all.")
@click.option("--device-model", default=None,
              type=click.Choice(sorted(__import__("tiletraffic.simulator.device_model",
                                                  fromlist=["DEVICE_MODELS"]).DEVICE_MODELS)),
              help="Also model the memory system of this device: requests, sectors, bank "
                   "conflicts, L2 and DRAM traffic, predicted time (counts by work-group "
                   "classes).")
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
def simulate_cmd(schedule, m, k, n, tile, chunk, mapping, padding, a_tile, seed, values,
                 no_limits, hazards, device_model, as_json):
    """Execute SCHEDULE in the simulator and print its exact traffic counts."""
    sch = _build(schedule, m, k, n, tile, chunk, mapping, padding, a_tile)
    _check_work(sch, k)
    if device_model:
        _simulate_with_model(sch, device_model, as_json)
        return
    work = m * k * (n or 1)
    values = work <= VALUES_AUTO_LIMIT if values is None else values
    if values and work > CLASSES_AUTO_LIMIT:
        raise click.UsageError(f"--values with M·K·N = {work} above {CLASSES_AUTO_LIMIT} would "
                               "take too long; use --counts-only")
    inputs = random_inputs(sch, np.random.default_rng(seed)) if values else None
    try:
        res = simulate(sch, inputs, compute_values=values, hazards=hazards,
                       limits=UNLIMITED if no_limits else GENERIC_GPU,
                       work_group_classes=not values and work > CLASSES_AUTO_LIMIT)
    except (LimitError, InputError) as err:
        raise click.UsageError(str(err)) from None
    except HazardError as err:
        _fail(err)
    counts = res.counts.to_dict()
    formula = closed_form.counts(sch)
    by_classes = not values and work > CLASSES_AUTO_LIMIT
    check = None
    if values:
        ref = reference(sch, inputs)
        check = error_over_tolerance(res.outputs[ref.output], ref)
    if as_json:
        out = {"schedule": sch.family, "m": m, "k": k, "n": n, "tile": sch.tile,
               "local_size": list(sch.local_size), "global_size": list(sch.global_size),
               **counts, "closed_form_agrees": formula == counts,
               "result_error_over_tolerance": check, "work_group_classes": by_classes,
               "hazards": [h.to_dict() for h in res.hazards]}
        click.echo(json.dumps(out, indent=2))
        return
    click.echo(f"{sch.family}  M={m} K={k}" + (f" N={n}" if n else "") +
               f"  tile={sch.tile}  work-group {' x '.join(map(str, sch.local_size))}"
               f"  NDRange {' x '.join(map(str, sch.global_size))}")
    click.echo(f"{'counter':32s} {'simulated':>16s} {'closed form':>16s}")
    for key, value in counts.items():
        if isinstance(value, dict):
            for buf, v in value.items():
                click.echo(f"{key + '[' + buf + ']':32s} {v:16d} {formula[key][buf]:16d}")
        else:
            click.echo(f"{key:32s} {value:16d} {formula[key]:16d}")
    for h in res.hazards:
        click.echo(f"hazard [{h.kind}] {h.detail}")
    if check is not None:
        click.echo(f"result vs float64 numpy: max error / tolerance = {check:.3g} "
                   f"({'ok' if check <= 1 else 'MISMATCH'})")
    else:
        click.echo("counts only" + (" (by work-group classes: one work-group executed per class "
                                    "of identical traffic)" if by_classes else "")
                   + "; add --values to also compute and check the result")


def _simulate_with_model(sch, model_name: str, as_json: bool) -> None:
    import warnings

    from tiletraffic.simulator.device_model import device_model
    from tiletraffic.simulator.traffic_model import model_launch

    model = device_model(model_name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            launch = model_launch(sch, model)
        except (LimitError, InputError) as err:
            raise click.UsageError(str(err)) from None
        except HazardError as err:
            _fail(err)
    guesses = [str(w.message) for w in caught]
    data = launch.to_dict()
    out = {"schedule": sch.family, "tile": sch.tile,
           **{k.lower(): v for k, v in sch.params}, **data,
           "closed_form_agrees": closed_form.counts(sch) == launch.counts.to_dict(),
           "guessed_values": guesses}
    if as_json:
        click.echo(json.dumps(out, indent=2))
        return
    for w in guesses:
        click.echo(f"warning: {w}", err=True)
    p = launch.prediction
    mem = launch.memory
    click.echo(f"{sch.family} on model {model.name}: " +
               " ".join(f"{k}={v}" for k, v in sch.params) + f" tile={sch.tile}")
    rows = [("global loads (elements)", launch.counts.global_load_elems),
            ("global load requests", mem.global_load_requests),
            ("global load sectors", mem.global_load_sectors),
            ("sectors per request", f"{mem.global_load_sectors_per_request:.2f}"),
            ("local loads (elements)", launch.counts.local_load_elems),
            ("local bank conflicts", mem.local_bank_conflicts),
            ("L2 -> L1 sectors (predicted)", p.l2_read_sectors),
            ("L1 load hit rate (predicted)", f"{p.l1_load_hit_rate:.3f}"),
            ("DRAM read bytes (predicted)", p.dram_read_bytes),
            ("DRAM read bytes (lock-step)", p.dram_read_bytes_lockstep),
            ("DRAM write bytes (predicted)", p.dram_write_bytes),
            ("resident work-groups per CU", p.resident_work_groups_per_cu),
            ("work-groups on the busiest CU", p.work_groups_per_cu),
            ("predicted time (ms)", f"{p.predicted_time_s * 1e3:.4f}  ({p.bound}-bound)"),
            ("  of which (us)", " + ".join(
                f"{label} {p.time_terms_s[key] * 1e6:.1f}" for label, key in (
                    (p.bound, p.bound + "_s"),
                    *((k.removesuffix("_s").replace("_", " "), k) for k in ADDED_TIME_TERMS))))]
    for label, value in rows:
        click.echo(f"  {label:32s} {value}")
    click.echo("  methods: " + "; ".join(f"{k}: {v}" for k, v in p.methods.items()))


@main.command("check")
@_named_schedule_options
@click.option("--all", "check_all", is_flag=True,
              help="Check every schedule, demo and broken variant on its example shape.")
@click.option("--json", "as_json", is_flag=True, help="Print the hazards as JSON.")
def check_cmd(name, m, k, n, tile, chunk, check_all, as_json):
    """Run only the hazard checks: races, barrier divergence, out-of-bounds accesses,
    uninitialized reads, unwritten outputs. Exits 1 when a hazard is found (with --all:
    when a correct schedule has one or a broken variant misses its expected kind)."""
    from tiletraffic.simulator.variants import VARIANTS, build_any, names

    _one_name_or_all(name, check_all)
    if check_all:
        ok = True
        rows = []
        for nm in names():
            sch = build_any(nm)
            found = sorted({h.kind for h in _hazards_of(sch)})
            expected = sorted(VARIANTS[nm].expected) if nm in VARIANTS else []
            good = set(expected) <= set(found) and (bool(found) == bool(expected))
            ok &= good
            rows.append({"name": nm, "expected": expected, "found": found, "ok": good})
        if as_json:
            click.echo(json.dumps(rows, indent=2))
        else:
            click.echo(f"{'schedule':38s} {'expected':30s} {'found':40s}")
            for r in rows:
                click.echo(f"{r['name']:38s} {', '.join(r['expected']) or 'none':30s} "
                           f"{', '.join(r['found']) or 'none':40s} {'ok' if r['ok'] else 'WRONG'}")
        sys.exit(0 if ok else 1)
    try:
        sch = build_any(name, m, k, n, tile, chunk)
    except schedules.ScheduleError as err:
        raise click.UsageError(str(err)) from None
    hazards = _hazards_of(sch)
    if as_json:
        click.echo(json.dumps([h.to_dict() for h in hazards], indent=2))
    else:
        p = sch.param_values
        click.echo(f"{sch.family}  " + " ".join(f"{a}={v}" for a, v in p.items()) +
                   f"  tile={sch.tile}: " + (f"{len(hazards)} hazard(s)" if hazards else "clean"))
        for h in hazards:
            click.echo(f"  [{h.kind}] {h.detail}")
    sys.exit(1 if hazards else 0)


def _hazards_of(sch):
    from tiletraffic.simulator.reference import random_inputs

    try:
        return simulate(sch, random_inputs(sch, np.random.default_rng()), hazards="report",
                        limits=UNLIMITED).hazards
    except (LimitError, InputError) as err:
        raise click.UsageError(str(err)) from None


@main.command("crosscheck")
@_named_schedule_options
@click.option("--all", "check_all", is_flag=True,
              help="Every schedule (counts) and every broken variant (hazards), example shapes.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
def crosscheck_cmd(name, m, k, n, tile, chunk, check_all, as_json):
    """Compare the simulator with Oclgrind running the generated kernel: counts of a
    correct schedule side by side, or hazard kinds of a broken variant. Exits 1 on any
    disagreement."""
    from tiletraffic.gpu.oclgrind import OclgrindError
    from tiletraffic.simulator.variants import VARIANTS, build_any, names

    from .crosscheck import compare_counts, compare_hazards

    _one_name_or_all(name, check_all)
    todo = names() if check_all else [name]
    results, ok = [], True
    try:
        for nm in todo:
            sch = build_any(nm) if check_all else build_any(nm, m, k, n, tile, chunk)
            if nm in VARIANTS:
                res = compare_hazards(sch)
                ok &= res.agree
            else:
                res = compare_counts(sch)
                ok &= res.equal
            results.append(res)
            if not as_json:
                _print_crosscheck(res)
    except (schedules.ScheduleError, LimitError) as err:
        raise click.UsageError(str(err)) from None
    except OclgrindError as err:
        _fail(err)
    if as_json:
        click.echo(json.dumps([r.to_dict() for r in results], indent=2))
    sys.exit(0 if ok else 1)


def _print_crosscheck(res) -> None:
    from .crosscheck import COUNT_KEYS, CountsComparison

    if isinstance(res, CountsComparison):
        click.echo(f"{res.schedule}: counts {'identical' if res.equal else 'DIFFER'}")
        click.echo(f"  {'counter':22s} {'simulator':>14s} {'oclgrind':>14s}")
        for key in COUNT_KEYS:
            a, b = res.simulator[key], res.oclgrind[key]
            click.echo(f"  {key:22s} {a:14d} {b:14d}" + ("" if a == b else "   <-- differs"))
        return
    invisible = res.simulator_kinds and not res.expected_oclgrind
    click.echo(f"{res.schedule}: hazards {'agree' if res.agree else 'DISAGREE'}"
               + (" (Oclgrind cannot see these kinds: " + ", ".join(res.simulator_kinds) + ")"
                  if invisible else ""))
    click.echo(f"  simulator: {', '.join(res.simulator_kinds) or 'none'}")
    click.echo(f"  oclgrind:  {', '.join(res.oclgrind_kinds) or 'none'}")
    for line in res.details[:3]:
        click.echo(f"    {line[:160]}")


@main.command("run")
@_schedule_options
@click.option("--device", "-d", default=None,
              help="OpenCL device: 'P:D' as in PYOPENCL_CTX, or part of its name "
                   "(default: PYOPENCL_CTX, else a GPU, else PoCL).")
@click.option("--repeat", "-r", type=int, default=10, show_default=True,
              help="Timed launches (at least 10).")
@click.option("--warmup", type=int, default=2, show_default=True,
              help="Untimed launches before timing (the first includes JIT compilation).")
@click.option("--json", "as_json", is_flag=True, help="Print the run as JSON.")
def run_cmd(schedule, m, k, n, tile, chunk, mapping, padding, a_tile, seed, device, repeat,
            warmup, as_json):
    """Run SCHEDULE as an OpenCL kernel on a device, check it against numpy, time it."""
    from tiletraffic.gpu.device import select_device
    from tiletraffic.gpu.runtime import TiletrafficGpuError

    from .validate import run_on_device

    sch = _build(schedule, m, k, n, tile, chunk, mapping, padding, a_tile)
    if device is not None and not device.strip():
        raise click.UsageError("--device is empty; give 'P:D' or part of a device name")
    try:
        target = select_device(device)
        result = run_on_device(target, sch, repeat=repeat, warmup=warmup,
                               rng=np.random.default_rng(seed))
    except (TiletrafficGpuError, ValueError, TypeError) as err:
        _fail(err)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
        return
    r = result.run
    click.echo(f"{sch.family} on {r.device_name}: NDRange {r.global_size}, work-group "
               f"{r.local_size}")
    click.echo(f"  build {r.build_time_s * 1e3:.1f} ms" + (" (cached)" if r.build_cached else ""))
    click.echo(f"  kernel time over {len(r.kernel_times_s)} launches (after {r.warmup} warm-up):"
               f" median {r.median_s * 1e3:.3f} ms, min {r.min_s * 1e3:.3f} ms,"
               f" max {r.max_s * 1e3:.3f} ms")
    click.echo(f"  result equals numpy: max |error| {result.check.max_abs_error:.3g} "
               f"<= tolerance {result.check.max_allowed:.3g}")


@main.command("devices")
def devices_cmd():
    """List the OpenCL devices and which one is used by default."""
    from tiletraffic.gpu.device import list_devices, select_device
    from tiletraffic.gpu.runtime import TiletrafficGpuError

    devices = list_devices()
    if not devices:
        _fail(RuntimeError("no OpenCL device found; install PoCL: pip install "
                           "pocl-binary-distribution"))
    try:
        default = select_device(None).info.id
    except TiletrafficGpuError:
        default = None
    for d in devices:
        mark = "*" if d.id == default else " "
        click.echo(f"{mark} {d.describe()}")
    click.echo("(* = default; choose with --device P:D, a name part, or PYOPENCL_CTX)")


@main.command("report")
@click.option("--device", "-d", default=None, help="OpenCL device (as for `run`).")
@click.option("--out", "out_dir", default="reports", show_default=True,
              type=click.Path(file_okay=False), help="Reports directory.")
@click.option("--quick", is_flag=True, help="Small sweep (seconds on a 2-core CPU).")
@click.option("--repeat", "-r", type=int, default=10, show_default=True,
              help="Timed launches per kernel (at least 10).")
@click.option("--render", "render_dir", default=None, type=click.Path(file_okay=False),
              help="Only re-render an existing report directory from its results.json (no "
                   "device): report.md and its figures.")
def report_cmd(device, out_dir, quick, repeat, render_dir):
    """Sweep sizes and tiles: simulate, run on the device, write reports/<device>/."""
    from tiletraffic.gpu.runtime import TiletrafficGpuError

    from .report import make_report, render

    if render_dir:
        from pathlib import Path

        path = Path(render_dir)
        if not (path / "results.json").exists():
            hint = (" (it holds H200 validation data: render it from the repository root "
                    f"with `python -m experiments.h200.render {path}`)"
                    if (path / "h200_raw.json.gz").exists() else "")
            _fail(FileNotFoundError(f"{path} has no results.json{hint}"))
        click.echo(f"rendered {render(path)}")
        return

    try:
        path = make_report(device=device, out_root=out_dir, quick=quick, repeat=repeat)
    except (TiletrafficGpuError, ValueError) as err:
        _fail(err)
    except OSError as err:
        _fail(OSError(f"cannot write the report under {out_dir!r}: {err.strerror} "
                      f"({err.filename})"))
    click.echo(f"report written to {path}")


if __name__ == "__main__":
    main()
