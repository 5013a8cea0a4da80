"""Run a schedule as a real OpenCL kernel and check it before any time counts.

Pipeline (one call): generate OpenCL C from the schedule (:mod:`gpu.codegen`), draw fresh
random inputs, launch through :func:`gpu.runtime.run_kernel` (build timed apart, warm-up
launches discarded, at least 10 timed launches from profiling events), then compare the
output with the float64 numpy reference with a K-scaled tolerance. A result outside the
tolerance raises :class:`gpu.runtime.ResultMismatchError`, so no timing of a wrong kernel is
ever returned.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tiletraffic.gpu import codegen
from tiletraffic.gpu.device import Target
from tiletraffic.gpu.runtime import CheckResult, RunResult, check_result, run_kernel
from tiletraffic.simulator.reference import random_inputs, reference
from tiletraffic.simulator.schedule import Schedule


@dataclass(frozen=True)
class DeviceRun:
    """A checked, timed run of one schedule on one device."""

    schedule: Schedule
    run: RunResult
    check: CheckResult

    def to_dict(self) -> dict:
        """JSON-ready: schedule, sizes, timing (seconds) and the result check."""
        c = self.check
        return {
            "schedule": self.schedule.family, "tile": self.schedule.tile,
            **{k.lower(): v for k, v in self.schedule.params},
            **self.run.as_dict(),
            "check": {"ok": c.ok, "max_abs_error": c.max_abs_error,
                      "max_allowed": c.max_allowed, "nan_count": c.nan_count, "k": c.k},
        }


def run_on_device(target: Target, schedule: Schedule, *, repeat: int = 10, warmup: int = 2,
                  rng: np.random.Generator | None = None, reference_fn=None) -> DeviceRun:
    """Generate, build, launch, time and check ``schedule`` on ``target``.

    ``reference_fn`` (``inputs -> output``, numpy) gives the expected result of a schedule
    that is not a GEMM or matrix-vector product (see ``simulator.reference.reference``).

    Raises:
        gpu.runtime.LaunchConfigError: work-group or local memory beyond the device's or the
            kernel's limits (nothing launched).
        gpu.runtime.KernelBuildError: the OpenCL build failed (message carries the log).
        gpu.runtime.LaunchError: OpenCL failed while running.
        gpu.runtime.ResultMismatchError: the result differs from numpy beyond tolerance.
    """
    rng = rng or np.random.default_rng()
    kernel = codegen.generate(schedule)
    inputs = random_inputs(schedule, rng)
    ref = reference(schedule, inputs, reference_fn)
    arrays = {a.name: (np.ascontiguousarray(inputs[a.name]).reshape(-1) if a.is_input
                       else np.empty(ref.value.size, dtype=np.float32))
              for a in schedule.arrays}
    run = run_kernel(target, kernel, arrays, dict(schedule.params), repeat=repeat, warmup=warmup)
    out = run.outputs[ref.output].reshape(ref.value.shape)
    check = check_result(out, ref.value, ref.k, ref.abs_product)
    check.raise_if_bad(f"{schedule.family} {ref.output}")
    return DeviceRun(schedule, run, check)
