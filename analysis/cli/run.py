"""``tiletraffic run``: SCHEDULE checked in the simulator before any launch, then as an
OpenCL kernel on a device, every launch's result checked against a float64 reference with
the tolerance of the counted sum length, then timed."""
from __future__ import annotations

import sys
import warnings

import click
import numpy as np

from tiletraffic.simulator.engine.reference import checked_output as ref_output
from tiletraffic.simulator.model.registers import register_budget_of
from tiletraffic.simulator.ir.sequence import is_sequence

from tiletraffic.frontend import user_schedule
from tiletraffic.analysis.api.arguments import inputs_kind_of
from tiletraffic.analysis.files import json_text
from tiletraffic.analysis.cli.common import (NO_REFERENCE, build_schedule, is_user_spec,
                                             check_device_spec, fail, reference_fn,
                                             refuse_beyond_limits, refuse_seed_unless_random,
                                             select_device, within_budget)
from tiletraffic.analysis.cli.options import (FORCE_OPTION, json_option, reference_option,
                                              repeat_option, schedule_options, warmup_option)


@click.command("run")
@schedule_options
@reference_option
@click.option("--device", "-d", default=None,
              help="OpenCL device: 'P:D' as in PYOPENCL_CTX, or part of its name "
                   "(default: PYOPENCL_CTX, else a GPU, else PoCL).")
@repeat_option("Timed launches")
@warmup_option("Untimed launches before timing (the first includes JIT compilation)")
@click.option("--unchecked", is_flag=True,
              help="Launch even when the check before launch finds hazards (out-of-bounds "
                   "accesses and barrier divergence can crash the process); every line and "
                   "the JSON are then marked 'unchecked: hazards found'.")
@json_option("the run")
@FORCE_OPTION
def command(schedule, m, k, n, tile, chunk, seed, inputs_kind, reference_spec, device, repeat,
            warmup, unchecked, as_json, force):
    """Check SCHEDULE in the simulator, run it as an OpenCL kernel on a device, check the
    result against float64 numpy, time it.

    First, at once, the launch is refused (exit 2) where it exceeds the device's limits
    (work-group size, local memory). Before any launch the simulator checks the launch (the
    whole launch, or one work-group per class of identical traffic where that would take
    long: it says which); a launch with a hazard is refused (exit 1) unless --unchecked
    (launched and reported, exit 1). The result's tolerance is scaled to the sum length the
    check counted (the roundings of each output element; K for a GEMM).

    SCHEDULE: a family with its sizes (run takes no example shape of a family: a time is
    measured at the sizes you give), a demo or faulty variant (missing sizes: its example
    shape), FILE.py:FUNCTION or LAUNCH.toml (as for simulate). A kernel's time counts only
    after its result is checked, so a schedule from a file needs a reference: --reference,
    or a function 'reference' in its file. Exit status: 0 ok, 1 a fault (a hazard, a wrong
    result, a failed build or launch), 2 bad input (the device's limits included)."""
    from tiletraffic.gpu.runtime.launch import (LaunchConfigError, RegisterBudgetError,
                                                TiletrafficGpuError, check_register_budget)
    from tiletraffic.simulator.engine.simulation import InputError
    from tiletraffic.simulator.ir.static import ExecutionError
    from tiletraffic.simulator.engine.reference import ReferenceFunctionError
    from tiletraffic.simulator.engine.launch_check import check_launch

    from tiletraffic.gpu.runtime.checked_run import run_on_device
    from tiletraffic.gpu.runtime.shader_runner import fallback_note, is_shader, vulkan_runner

    sch = build_schedule(schedule, m, k, n, tile, chunk, example_shape=False)
    inputs_kind = inputs_kind_of(sch, inputs_kind)
    refuse_seed_unless_random(inputs_kind)
    if cuda_source_run(sch, schedule, device, reference_spec, repeat, warmup, seed,
                       inputs_kind, as_json):
        return
    check_device_spec(device)
    try:
        target = select_device(device)
    except TiletrafficGpuError as err:
        fail(err)
    refuse_beyond_limits(sch, target.limits)   # the device's limits first, at once
    within_budget(sch, force, device=True)
    ref_fn = reference_fn(schedule, reference_spec)
    if ref_fn is None and is_user_spec(schedule):
        raise click.UsageError(f"run checks the result before timing it: {NO_REFERENCE}")
    try:
        if (budget := register_budget_of(sch)) is not None:   # before the launch check
            check_register_budget(target, budget, "--max-registers")
        try:
            checked = check_launch(sch, rng=np.random.default_rng(seed))
        except (InputError, ExecutionError) as err:
            raise click.UsageError(str(err)) from None
        if not as_json:  # a refused launch's first hazard is in full in the error below
            click.echo(f"check {checked.time_s:.2f} s on the {checked.scope}: "
                       f"{len(checked.hazards)} hazard(s) ("
                       f"{', '.join(sorted({h.kind for h in checked.hazards}))})"
                       if checked.hazards and not unchecked else
                       checked.describe() if not checked.hazards else
                       f"{checked.describe()}  [launched anyway: --unchecked]")
        runner = run_on_device
        if is_shader(sch):   # a GLSL shader: through Vulkan where a runner is available
            runner = vulkan_runner() or run_on_device
            if runner is run_on_device:
                click.echo(fallback_note(sch), err=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = runner(target, sch, repeat=repeat, warmup=warmup,
                                   rng=np.random.default_rng(seed), reference_fn=ref_fn,
                                   inputs=inputs_kind, unchecked=unchecked,
                                   launch_check=checked)
    except (user_schedule.UserScheduleError, RegisterBudgetError, ReferenceFunctionError,
            LaunchConfigError) as err:   # LaunchConfigError: the compiled kernel's limits
        raise click.UsageError(str(err)) from None
    except (TiletrafficGpuError, ValueError, TypeError) as err:
        fail(err)
    for w in caught:  # profiling unavailable, nondeterministic outputs
        click.echo(f"warning: {w.message}", err=True)
    if as_json:
        click.echo(json_text(result.to_dict(), indent=2))
    else:
        click.echo("\n".join(run_text(sch, result, target.info.is_simulator,
                                      ref_fn is not None)))
    if result.unchecked:
        sys.exit(1)   # launched anyway (--unchecked): the check found a fault


def cuda_source_run(sch, spec, device, reference_spec, repeat, warmup, seed, inputs_kind,
                    as_json) -> bool:
    """For a schedule read from CUDA: with no ``--device``, CuPy and an NVIDIA GPU, compile
    its own source with NVRTC, launch, check and time it, print the run and return True;
    otherwise print one line saying its generated OpenCL C runs instead, and return False.
    """
    from tiletraffic.gpu.runtime import cuda_run
    from tiletraffic.gpu.devices.device import TiletrafficGpuError
    from tiletraffic.gpu.runtime.launch import ResultMismatchError
    if not cuda_run.is_cuda_schedule(sch):
        return False
    problem = "--device names an OpenCL device" if device else cuda_run.nvrtc_problem()
    if problem is not None:
        click.echo(f"{sch.family}: its CUDA source is not compiled here ({problem}): "
                   "running the schedule's generated OpenCL C", err=as_json)
        return False
    ref_fn = reference_fn(spec, reference_spec)
    if ref_fn is None:
        raise click.UsageError(f"run checks the result before timing it: {NO_REFERENCE}")
    try:
        result = cuda_run.run_cuda_source(sch, repeat=repeat, warmup=warmup,
                                          rng=np.random.default_rng(seed),
                                          reference_fn=ref_fn, inputs=inputs_kind)
    except (TiletrafficGpuError, ResultMismatchError, ValueError) as err:
        fail(err)
    click.echo(json_text(result.to_dict(), indent=2) if as_json else
               cuda_run.describe(result))
    return True


def run_text(sch, result, on_simulator: bool, users_reference: bool) -> list[str]:
    """The launch, its build, resources, times and the result check, as lines (each marked
    "unchecked: hazards found: ..." when it ran with hazards)."""
    r = result.run
    simulator_note = " (a simulator, not hardware)" if on_simulator else ""
    shape = (f"NDRange {r.global_size}, work-group {r.local_size}" if not is_sequence(sch)
             else "; ".join(f"kernel {k.kernel_name}: NDRange {k.global_size}, work-group "
                            f"{k.local_size}" for k in sch.kernels))
    lines = [f"{sch.family} on {r.device_name}{simulator_note}: {shape}",
             f"  build {r.build_time_s * 1e3:.1f} ms" + (" (cached)" if r.build_cached else "")]
    if r.resources is not None:
        lines.append(f"  {r.resources.describe()}")
    lines.append(f"  kernel time over {len(r.kernel_times_s)} launches (after {r.warmup} "
                 f"warm-up): median {r.median_s * 1e3:.3f} ms, min {r.min_s * 1e3:.3f} ms,"
                 f" max {r.max_s * 1e3:.3f} ms"
                 + (" (host wall time: no OpenCL profiling)" if r.timing == "host" else ""))
    c = result.check
    where = ", ".join(map(str, c.worst_index or ()))
    output = result.output or (ref_output(sch) if not is_sequence(sch) else
                               next(a.name for a in sch.arrays if a.is_output))
    several = f" for {', '.join(result.outputs)}" if len(result.outputs) > 1 else ""
    lines.append(f"  result equals {'the reference' if users_reference else 'numpy'}{several} "
                 f"({result.inputs} inputs) in every launch: worst "
                 f"|error| / tolerance {c.error_over_tolerance:.3g} at {output}[{where}] "
                 f"(|error| {abs(c.worst_value - c.worst_reference):.3g}, tolerance "
                 f"{c.worst_tolerance:.3g}, "
                 + ("the element's running error bound" if c.running_bound else
                    f"sum length {c.k}")
                 + ("" if c.running_bound else
                    ": the launch file's reference.terms" if "terms_per_output" in sch.extra
                    else f": {result.launch_check.sum_length_method}" if result.launch_check
                    else "")
                 + "); "
                 + ("outputs identical in all launches" if r.distinct_outputs == 1 else
                    f"{r.distinct_outputs} distinct outputs: nondeterministic"))
    if r.stores_outside is not None:
        from tiletraffic.gpu.runtime.guard_zones import describe

        lines.append(f"  {describe(r.stores_outside)}")
    if result.unchecked:
        lines = [f"{line}  [{result.unchecked}]" for line in lines]
    return lines
