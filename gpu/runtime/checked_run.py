"""Run a schedule as a real OpenCL kernel and check it before any time counts.

Pipeline (one call): generate OpenCL C from the schedule (:mod:`gpu.codegen.generate`), check the
launch in the simulator (:func:`simulator.engine.launch_check.check_launch`: a launch with a hazard
is refused with :class:`UnsafeLaunchError` before anything runs, unless ``unchecked``; the
check also counts the sum length, the K of the tolerance), draw fresh random inputs, launch through :func:`gpu.runtime.launch.run_kernel` (build timed apart, warm-up
launches discarded, at least 10 timed launches from profiling events), comparing the output
with the float64 numpy reference with a tolerance scaled to the counted sum length after the first launch, the last,
and every launch whose output differs from all before it (every launch's output is
fingerprinted). A result outside the tolerance in any launch raises
:class:`gpu.runtime.launch.ResultMismatchError` naming the launch, so no timing of a wrong kernel
is ever returned.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from tiletraffic.gpu.codegen import generate as codegen
from tiletraffic.gpu.codegen.kernel import SCALAR_KINDS, argument_values
from tiletraffic.gpu.devices.device import Target, TiletrafficGpuError
from tiletraffic.gpu.runtime.launch_counts import check_launch_counts
from tiletraffic.gpu.runtime.launch import (CheckResult, ResultMismatchError, RunResult,
                                            check_launch_limits, check_result, run_kernel)
from tiletraffic.simulator.engine.launch_check import LaunchCheck
from tiletraffic.simulator.engine.launch_check import check_launch as check_before_launch
from tiletraffic.simulator.engine.reference import references
from tiletraffic.simulator.engine.data_inputs import random_inputs
from tiletraffic.simulator.model.registers import register_budget_of
from tiletraffic.simulator.ir.nodes import Schedule
from tiletraffic.simulator.ir.sequence import buffers_of, kernels_of


class UnsafeLaunchError(TiletrafficGpuError):
    """The simulator found hazards in a launch, so it was not run (nothing launched); a
    ``TiletrafficGpuError`` as every failed device run is.

    Attributes:
        check: the :class:`simulator.engine.launch_check.LaunchCheck` that found them.
    """

    def __init__(self, check: LaunchCheck):
        unsafe = check.memory_unsafe
        why = ("it could corrupt memory or hang the device" if unsafe else
               "the result and time of a kernel with hazards are not those of the kernel")
        first = (unsafe or check.hazards)[0]
        super().__init__(
            f"{check.schedule.family}: not launched: {len(check.hazards)} hazard(s) found by "
            f"the check before launch ({', '.join(sorted({h.kind for h in check.hazards}))}; "
            f"{why}): [{first.kind}] {first.detail} (run `check` for the list; --unchecked "
            "launches anyway)")
        self.check = check


UNCHECKED_MARK = "unchecked: hazards found"
"""What marks every line and record of a run launched with hazards (``unchecked=True``)."""


@dataclass(frozen=True)
class DeviceRun:
    """A checked, timed run of one schedule on one device.

    Attributes:
        schedule, run: what ran and how (``run.distinct_outputs`` > 1: nondeterministic).
        check: the check of the last launch's output (of several outputs checked, the one
            furthest from its reference relative to its tolerance: :attr:`output`).
        launch_checks: the check of every checked launch (0-based launch number, warm-up
            included -> result, as ``check``): the first, the last and each distinct output.
        inputs: the kind of inputs (``simulator.engine.data_inputs.INPUT_KINDS``).
        launch_check: the simulator's check before the launch (hazards, sum length).
        launch_check_reused: the check was made for an earlier run of the same schedule
            (an earlier round); the JSON marks it ``"reused": true``.
        outputs: the outputs checked against the reference, in its order (every one in
            every checked launch); ``output``: the one whose check ``check`` is.
    """

    schedule: Schedule
    run: RunResult
    check: CheckResult
    launch_checks: dict = None
    inputs: str = "normal"
    launch_check: LaunchCheck | None = None
    launch_check_reused: bool = False
    outputs: tuple[str, ...] = ()
    output: str | None = None

    @property
    def unchecked(self) -> str | None:
        """``"unchecked: hazards found: KIND, ..."`` when it ran with hazards, else None."""
        c = self.launch_check
        if c is None or not c.hazards:
            return None
        return f"{UNCHECKED_MARK}: {', '.join(sorted({h.kind for h in c.hazards}))}"

    def to_dict(self) -> dict:
        """JSON-ready: schedule, sizes, timing (seconds), the register budget
        (``max_registers``, None without one) and the result check (the worst
        error/tolerance ratio, at which element; ``stored_half``: the output stores half
        and the tolerance includes half's rounding of each result)."""
        c = self.check
        return {
            "schedule": self.schedule.family, "tile": self.schedule.tile,
            **{k.lower(): v for k, v in self.schedule.params},
            **self.run.as_dict(), "inputs": self.inputs,
            "max_registers": register_budget_of(self.schedule),
            "check": {"output": self.output, "outputs": list(self.outputs),
                      "ok": c.ok, "max_abs_error": c.max_abs_error,
                      "max_allowed": c.max_allowed, "nan_count": c.nan_count, "k": c.k,
                      "error_over_tolerance": c.error_over_tolerance,
                      "worst_index": list(c.worst_index) if c.worst_index else None,
                      "worst_error": abs(c.worst_value - c.worst_reference)
                      if c.worst_index else 0.0,
                      "worst_tolerance": c.worst_tolerance,
                      "unwritten_count": c.unwritten_count,
                      "written_nonfinite_count": c.written_nonfinite_count,
                      "checked_launches": sorted(self.launch_checks or {}),
                      "sum_length": c.k,
                      "sum_length_method": self.launch_check.sum_length_method
                      if self.launch_check else None,
                      "stored_half": c.stored_half},
            "launch_check": None if self.launch_check is None else
            {**self.launch_check.to_dict(), **({"reused": True} if self.launch_check_reused
                                               else {})},
            "unchecked": self.unchecked,
        }


def _check_generated_shuffles(schedule: Schedule, rng) -> None:
    """Refuse a schedule whose shuffles its generated code reaches in divergent control
    flow: the code moves shuffled values through local memory with barriers
    (:func:`gpu.codegen.generate.shuffles_as_generated`), which every work-item of a
    work-group must reach.

    Raises:
        TiletrafficGpuError: naming the first shuffle reached by part of a work-group.
    """
    lowered = codegen.shuffles_as_generated(schedule)
    if lowered is schedule:
        return
    found = [h for h in check_before_launch(lowered, rng=rng).hazards
             if h.kind == "barrier-divergence"]
    if found and "opencl" in schedule.extra:
        raise TiletrafficGpuError(
            f"{schedule.family}: not launched: its generated OpenCL C moves sub-group values "
            "through local memory with barriers, and part of a work-group skips a sub-group "
            f"operation ({found[0].site}): the platforms it runs on have no sub-groups; call "
            "sub-group built-ins in code every work-item of the work-group reaches")
    if found:
        raise TiletrafficGpuError(
            f"{schedule.family}: not launched: its generated OpenCL C moves shuffled values "
            "through local memory with barriers, and part of a work-group skips a shuffle "
            f"({found[0].site}): OpenCL 1.2 has no sub-group shuffles; run it on an NVIDIA "
            "GPU from its CUDA source, or shuffle in code every thread of the block reaches")


def run_on_device(target: Target, schedule: Schedule, *, repeat: int = 10, warmup: int = 2,
                  rng: np.random.Generator | None = None, reference_fn=None,
                  inputs: str = "normal", unchecked: bool = False,
                  launch_check: LaunchCheck | None = None,
                  reused: bool = False) -> DeviceRun:
    """Check, generate, build, launch, time and check the result of ``schedule`` on
    ``target``.

    ``schedule`` may be a :class:`simulator.ir.sequence.KernelSequence`: its kernels are
    launched in order as one launch (:func:`gpu.runtime.launch.run_kernel`), its scratch buffers
    allocated on the device, its outputs checked.

    ``reference_fn`` (``inputs -> {output name: array}``, or the array of a schedule's one
    output; numpy) gives the expected result of a schedule that is not a GEMM or
    matrix-vector product, each output it names checked after every checked launch
    (``simulator.engine.reference.references``).
    ``inputs``: kind of inputs, one of ``simulator.engine.data_inputs.INPUT_KINDS`` (``ones`` and
    ``arange`` can hide index errors). ``unchecked``: launch even when the check before
    launch found hazards (the result is marked: :attr:`DeviceRun.unchecked`).
    ``launch_check``: a check of this schedule already made (else it is made here);
    ``reused``: it was made for an earlier run (an earlier round), as the JSON then says.

    Raises:
        ValueError: ``repeat`` or ``warmup`` not a count within the limits
            (:mod:`gpu.runtime.launch_counts`), before any work.
        UnsafeLaunchError: the check before launch found hazards (nothing launched), unless
            ``unchecked``.
        gpu.runtime.launch.LaunchConfigError: work-group or local memory beyond the device's or the
            kernel's limits (nothing launched).
        gpu.runtime.launch.KernelBuildError: the OpenCL build failed (message carries the log).
        gpu.runtime.launch.LaunchError: OpenCL failed while running.
        gpu.runtime.launch.ResultMismatchError: the result differs from numpy beyond tolerance.
    """
    check_launch_counts(repeat, warmup)   # before any work (run_kernel checks them too)
    rng = rng or np.random.default_rng()
    kernels = [codegen.generate(k) for k in kernels_of(schedule)]
    # the device's own limits before the inputs and the float64 reference are made (seconds
    # for a large K); the kernel's limits are checked again once it is built
    for kernel in kernels:
        check_launch_limits(kernel, target.limits)
    checked = (launch_check if launch_check is not None
               else check_before_launch(schedule, rng=rng))
    if checked.hazards and not unchecked:
        raise UnsafeLaunchError(checked)
    for k in kernels_of(schedule):
        _check_generated_shuffles(k, rng)
    kind = inputs
    inputs = random_inputs(schedule, rng, kind)
    refs = references(schedule, inputs, reference_fn, sum_length=checked.sum_length)
    p = schedule.param_values
    # an integer buffer's int32/uint32 contents travel as float32 of the same 4-byte words
    # a half buffer travels as float16 (its inputs are float16 values already)
    arrays = {a.name: (np.ascontiguousarray(inputs[a.name]).reshape(-1).view(np.float32)
                       if a.is_int else np.ascontiguousarray(inputs[a.name]).reshape(-1)
                       if a.is_input
                       else np.empty(int(np.prod([p[s] for s in a.shape])), dtype=np.float32))
              for a in buffers_of(schedule)}
    arrays.update({a.name: (arrays[a.name].astype(np.float16) if a.is_input
                            else np.empty(arrays[a.name].shape, np.float16))
                   for a in buffers_of(schedule) if a.is_half})
    total = warmup + repeat
    checks: dict[int, CheckResult] = {}
    worst_output: dict[int, str] = {}

    def check_launch(launch: int, outputs: dict) -> None:
        check_references(refs, outputs, launch, warmup, repeat, schedule.family, checks,
                         worst_output)

    values = argument_values(schedule)
    scalars = {a.name: values[a.name] if a.name not in p else p[a.name]
               for kernel in kernels for a in kernel.args if a.kind in SCALAR_KINDS}
    run = run_kernel(target, kernels[0] if len(kernels) == 1 else kernels, arrays, scalars,
                     repeat=repeat, warmup=warmup, check_output=check_launch,
                     outputs=[a.name for a in schedule.arrays if a.is_output],
                     guard_zones=bool(checked.hazards))
    if len(kernels) > 1:   # the run of a sequence is named after the sequence
        run = dataclasses.replace(run, schedule_name=schedule.family)
    return DeviceRun(schedule, run, checks[total - 1], checks, kind, checked,
                     launch_check is not None and reused, tuple(r.output for r in refs),
                     worst_output[total - 1])


def check_references(refs, outputs: dict, launch: int, warmup: int, repeat: int,
                     family: str, checks: dict, worst_output: dict,
                     unit: str = "launch") -> None:
    """Check launch ``launch``'s ``outputs`` (name -> array, any shape of the reference's
    size) against every reference of ``refs``, keeping the worst result in
    ``checks[launch]`` and its output's name in ``worst_output[launch]``.

    Raises:
        ResultMismatchError: an output differs from its reference beyond its tolerance,
            named by ``unit`` (``"launch"``, ``"dispatch"``) and whether it was a warm-up.
    """
    total = warmup + repeat
    for ref in refs:
        result = check_result(outputs[ref.output].reshape(ref.value.shape), ref.value, ref.k,
                              ref.abs_product, ref.error_bound, ref.stored_half)
        if launch not in checks or not result.ok or \
                result.error_over_tolerance > checks[launch].error_over_tolerance:
            checks[launch], worst_output[launch] = result, ref.output
        if not result.ok:
            when = (f"warm-up {unit} {launch + 1} of {warmup}" if launch < warmup else
                    f"timed {unit} {launch - warmup + 1} of {repeat}")
            raise ResultMismatchError(f"{unit} {launch + 1} of {total} ({when}): "
                                      + result.message(f"{family} {ref.output}"),
                                      launch=launch, check=result)
