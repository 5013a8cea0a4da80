"""What one Oclgrind launch runs: a :class:`LaunchSpec` (source, arguments, NDRange, sizes,
build options, seed) as plain JSON-able data, made from a schedule, a generated kernel or
given as is.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, replace

from tiletraffic.gpu.codegen.kernel import (BUFFER_KINDS, INT_VECTOR_KINDS, LOCAL_KIND, NULL_KIND,
                                            SCALAR_KINDS, GeneratedKernel, argument_values)
from tiletraffic.gpu.oclgrind.errors import OclgrindError
import numpy as np

from tiletraffic.simulator.engine.data_inputs import launch_inputs
from tiletraffic.simulator.ir.nodes import Schedule, branches_on_data

__all__ = ["LaunchSpec", "OPT_DISABLE", "as_launch_spec", "with_optimization"]

OPT_DISABLE = "-cl-opt-disable"
"""Build option used unless ``optimize=True`` (one memory operation per source access)."""


@dataclass(frozen=True)
class LaunchSpec:
    """Everything the worker needs for one launch, as plain JSON-able data.

    Attributes:
        source: OpenCL C source.
        kernel_name: the ``__kernel`` to launch.
        args: ``(name, kind)`` in signature order; kind ``"global_in"`` (filled with random
            float32, read-only), ``"global_inout"`` (filled with random float32, read-write),
            ``"global_out"`` (float32, left uninitialised), ``"int"``, ``"long"`` (64-bit),
            ``"float"``, ``"local"`` (local memory of ``local_bytes[name]`` bytes) or
            ``"null"`` (a NULL pointer).
        global_size, local_size: NDRange and work-group size (work-items per dimension).
        array_elems: float32 elements of every buffer argument, by name.
        scalars: value of every ``int`` and ``float`` argument, by name.
        build_options: options for ``clBuildProgram`` (``-cl-opt-disable`` is added by
            :func:`gpu.oclgrind.oclgrind.oclgrind_counts` / ``oclgrind_check`` unless
            ``optimize=True``).
        seed: seed of ``numpy.random.default_rng`` for the inputs (None: fresh entropy).
        local_bytes: bytes of every ``local`` argument, by name.
        int_data: the contents of every integer (``int``/``uint``) buffer, by name: its
            elements in order, uploaded as 32-bit integers in place of random floats.
        half_arrays: the buffers of ``half`` storage (2 bytes an element, random float16
            values), by name.
        float_data: the contents of float input buffers given in place of random floats,
            by name (a schedule that branches on floats of the data is launched on the
            values the simulator counts it with,
            :func:`simulator.engine.data_inputs.launch_inputs`).
    """

    source: str
    kernel_name: str
    args: tuple[tuple[str, str], ...]
    global_size: tuple[int, ...]
    local_size: tuple[int, ...]
    array_elems: dict[str, int]
    scalars: dict[str, int | float]
    build_options: tuple[str, ...] = ()
    seed: int | None = None
    local_bytes: dict[str, int] = field(default_factory=dict)
    int_data: dict[str, list[int]] = field(default_factory=dict)
    half_arrays: tuple[str, ...] = ()
    float_data: dict[str, list[float]] = field(default_factory=dict)

    @property
    def work_group_items(self) -> int:
        """Work-items per work-group (product of ``local_size``)."""
        return math.prod(self.local_size)

    @classmethod
    def from_kernel(cls, kernel: GeneratedKernel, array_elems: dict[str, int],
                    scalars: dict[str, int], seed: int | None = None,
                    int_data: dict[str, list[int]] | None = None,
                    half_arrays=()) -> LaunchSpec:
        """Launch ``kernel`` with buffers of ``array_elems`` floats and ``scalars`` (its
        ``int`` and ``float`` arguments); its ``local`` arguments take their own sizes;
        ``int_data``: the contents of its integer buffers, by name; ``half_arrays``: its
        buffers of halves.

        Raises:
            OclgrindError: an argument of unknown kind, or a buffer size / scalar missing.
        """
        missing = []
        for arg in kernel.args:
            if arg.kind in BUFFER_KINDS:
                if arg.name not in array_elems:
                    missing.append(f"element count of buffer {arg.name}")
            elif arg.kind in SCALAR_KINDS:
                if arg.name not in scalars:
                    missing.append(f"value of {arg.kind} argument {arg.name}")
            elif arg.kind not in (LOCAL_KIND, NULL_KIND):
                raise OclgrindError(f"kernel {kernel.name}: argument {arg.name} has kind "
                                    f"{arg.kind!r}; expected global_in, global_out, "
                                    "global_inout, int, long, float, local or null")
        if missing:
            raise OclgrindError(f"kernel {kernel.name}: missing " + ", ".join(missing))
        return cls(
            source=kernel.source, kernel_name=kernel.name,
            args=tuple((a.name, a.kind) for a in kernel.args),
            global_size=tuple(int(g) for g in kernel.global_size),
            local_size=tuple(int(s) for s in kernel.local_size),
            array_elems={a.name: int(array_elems[a.name]) for a in kernel.args
                         if a.kind in BUFFER_KINDS},
            scalars={a.name: [int(v) for v in scalars[a.name]] if a.kind in INT_VECTOR_KINDS
                     else (float if a.kind == "float" else int)(scalars[a.name])
                     for a in kernel.args if a.kind in SCALAR_KINDS},
            build_options=tuple(kernel.build_options), seed=seed,
            local_bytes={a.name: int(a.local_bytes) for a in kernel.args
                         if a.kind == LOCAL_KIND},
            int_data={name: [int(v) for v in values]
                      for name, values in (int_data or {}).items()},
            half_arrays=tuple(half_arrays))

    @classmethod
    def from_schedule(cls, schedule: Schedule, kernel: GeneratedKernel | None = None,
                      seed: int | None = None) -> LaunchSpec:
        """Launch the generated kernel of ``schedule`` (or ``kernel``, e.g. a deliberately
        broken variant of it) with the schedule's sizes: each buffer holds the product of
        its shape's parameter values (``A``: M·K floats), each ``int`` or ``float`` argument
        is the parameter."""
        if kernel is None:
            from tiletraffic.gpu.codegen.generate import generate  # late: only this path generates
            kernel = generate(schedule)
        params = schedule.param_values
        values = {**argument_values(schedule), **params}
        elems = {}
        for a in schedule.arrays:
            n = 1
            for s in a.shape:
                n *= params[s]
            elems[a.name] = n
        int_data = {a.name: a.values.tolist() for a in schedule.arrays if a.is_int}
        spec = cls.from_kernel(kernel, elems, values, seed=seed, int_data=int_data,
                               half_arrays=[a.name for a in schedule.arrays if a.is_half])
        if not branches_on_data(schedule.body):
            return spec
        inputs = launch_inputs(schedule)
        return replace(spec, float_data={
            name: [float(v) for v in np.ravel(value)] for name, value in inputs.items()
            if name in spec.array_elems})

    def to_json(self) -> str:
        """The spec as a JSON object (tuples as lists)."""
        return json.dumps(asdict(self))


def as_launch_spec(target: Schedule | GeneratedKernel | LaunchSpec, schedule: Schedule | None,
                   array_elems: dict[str, int] | None, scalars: dict[str, int] | None,
                   seed: int | None) -> LaunchSpec:
    """The :class:`LaunchSpec` of ``target``: a spec as given; a schedule's generated kernel
    with its sizes; a kernel sized by ``schedule`` if given, else by ``array_elems`` and
    ``scalars``.

    Raises:
        OclgrindError: a kernel with neither ``schedule`` nor both ``array_elems`` and
            ``scalars``, or with an argument they do not size (:meth:`LaunchSpec.from_kernel`).
        TypeError: ``target`` is none of the three.
    """
    if isinstance(target, LaunchSpec):
        return target
    if isinstance(target, Schedule):
        return LaunchSpec.from_schedule(target, seed=seed)
    if isinstance(target, GeneratedKernel):
        if schedule is not None:
            return LaunchSpec.from_schedule(schedule, kernel=target, seed=seed)
        if array_elems is None or scalars is None:
            raise OclgrindError(f"kernel {target.name}: pass schedule=... or both "
                                "array_elems=... and scalars=... to size its arguments")
        return LaunchSpec.from_kernel(target, array_elems, scalars, seed=seed)
    raise TypeError(f"expected a Schedule, GeneratedKernel or LaunchSpec, got {type(target).__name__}")


def with_optimization(spec: LaunchSpec, optimize: bool) -> LaunchSpec:
    """``spec`` built with :data:`OPT_DISABLE` as its last option, or without it when
    ``optimize``."""
    opts = tuple(o for o in spec.build_options if o != OPT_DISABLE)
    if not optimize:
        opts = opts + (OPT_DISABLE,)
    return replace(spec, build_options=opts)
