"""Schedules: built from a name or a user's file (``build``), from an OpenCL C kernel
(``from_opencl``), as OpenCL C (``generate``), and their closed-form counts
(``closed_form``)."""
from __future__ import annotations

import os
from pathlib import Path

from tiletraffic.simulator.ir.nodes import Schedule
from tiletraffic.simulator.ir.sequence import KernelSequence

from tiletraffic.analysis.api import facade_function
from tiletraffic.analysis.api.arguments import check_argument_types, check_schedule_argument


@facade_function
def build(name: str, m: int | None = None, k: int | None = None, n: int | None = None,
          tile: int | None = None, chunk: int | None = None, **options) -> Schedule:
    """The schedule `name` at the given sizes.

    Args:
        name: a family (`FAMILIES`), a correct demo or a known-faulty variant
            (`tiletraffic.simulator.kernels.variants.names()`), or `"FILE.py:FUNCTION"`: a
            function of your file that returns a `Schedule`, called with the sizes
            given (`m`, `k`, `n`, `tile`; `None` ones left out) as keyword
            arguments (`tiletraffic.frontend.user_schedule.load`). The command line
            resolves SCHEDULE through the same `tiletraffic.frontend.resolver.resolve`.
        m, k, n: sizes; A is m×k, B is k×n (GEMM), x has k elements (matrix-vector). Omitted
            sizes of a demo or variant default to its example shape.
        tile: tile width B (GEMM: B×B work-groups) or work-items per work-group (matvec).
        chunk: elements of x per staged chunk (`matvec-local`).
            Or `"KERNEL.toml"`: a launch file of an OpenCL C kernel
            (`tiletraffic.frontend.launch_file`), with `set={"N": 2048}` replacing its
            sizes and `params={"TS": 16}` its macros (passed as `-DTS=16`).
        options: family options (`mapping`, `padding`, `a_tile`; `tm`, `tn`,
            `bk`, `wg_rows` of the register-blocked GEMMs, `wg_rows` of
            `matvec-rows-reduce`); and for every form `max_registers=N`, the register
            budget of a work-item (the compiled kernel uses at most N registers; on
            NVIDIA's OpenCL through the PTX `.maxnreg` directive; the model's register
            estimate is capped at N).

    Raises:
        TypeError: `name` is not a string (or a path).
        ScheduleError: unknown name, missing size, a size or option that does not apply
            (`n` of a matrix-vector product, options of a demo or variant), or a
            parameter out of range.
        tiletraffic.frontend.user_schedule.UserScheduleError (a ValueError): the file or
            function cannot be loaded, does not take a size given, raises, or returns
            something other than a Schedule; or `chunk`/`options` given for it.
    """
    from tiletraffic.frontend.resolver import Sizes, resolve

    check_argument_types("build", name=(name, (str, os.PathLike), "a schedule's name or a file"))
    return resolve(name if isinstance(name, str) else os.fspath(name),
                   Sizes(m, k, n, tile, chunk), options)


@facade_function
def from_opencl(source_or_path, kernel: str, global_size, local_size, args: dict,
                build_options: str = "", *, sizes: dict | None = None) -> Schedule:
    """The schedule of `kernel` in an OpenCL C source, for every function here.

    Args:
        source_or_path: the OpenCL C text, or the path of a `.cl` file.
        kernel: the `__kernel` to read.
        global_size, local_size: NDRange and work-group size (work-items per dimension).
        args: every kernel argument by its name in the source: an `int` for a scalar,
            `{"shape": (M, K), "access": "in"}` for a buffer (row-major float32; entries
            integers or names of scalar arguments or of `sizes`; access in/out/inout).
        build_options: `-D`/`-U`/`-I` options, as for `clBuildProgram`.
        sizes: values of names the shapes use that are not kernel arguments.

    The subset of OpenCL C accepted is that of `tiletraffic.frontend.opencl.translate`; running
    the schedule (`run`) launches this very source. A launch file gives the same from
    TOML: `build("kernel.toml")`.

    Raises:
        tiletraffic.frontend.opencl.translate.FrontendError (a ValueError): a construct outside the
            subset, an argument missing or unknown, a bad shape or access (one line, with
            file:line:column where it concerns the source).
    """
    from tiletraffic.frontend.opencl.translate import parse_kernel

    text, path = source_or_path, None
    if isinstance(source_or_path, Path) or (
            isinstance(source_or_path, str) and "\n" not in source_or_path
            and source_or_path.endswith((".cl", ".c", ".h"))):
        path = str(source_or_path)
        text = Path(path).read_text()
    return parse_kernel(text, kernel, global_size, local_size, args, sizes=sizes,
                        build_options=build_options, path=path)


@facade_function
def generate(schedule: Schedule):
    """The OpenCL C kernel of `schedule` (a `tiletraffic.gpu.codegen.kernel.GeneratedKernel`:
    `.source`, `.name`, `.args`); for a `KernelSequence`, a tuple of them in
    launch order. Needs no OpenCL driver.

    Raises:
        TypeError: `schedule` is not a Schedule or KernelSequence (a name: build it first).
    """
    check_schedule_argument(schedule, "generate")
    from tiletraffic.gpu.codegen.generate import generate as generate_kernel

    if isinstance(schedule, KernelSequence):
        return tuple(generate_kernel(k) for k in schedule.kernels)
    return generate_kernel(schedule)


@facade_function
def closed_form(schedule: Schedule):
    """Closed-form counts of `schedule`: a `ClosedForm`, a dict with the keys of
    `TrafficCounts.to_dict()` at the schedule's sizes, and its closed forms as piecewise
    quasi-polynomials of the sizes derived from the IR (`.forms`, `.sizes`, `.not_derived`,
    `.notes`, `.evaluate(sizes)`). The numbers are a built-in family's hand-written forms;
    for a schedule built from `"FILE.py:FUNCTION"` the counts of the function
    `closed_form` of that file where it has one, called with the schedule's sizes (`m`,
    `k`, `n`, `tile`: those it takes) and checked (some or all of the counters, integers);
    else the derived forms' values (`.source` says which). `None` where there are none: no
    hand-written forms and no counter derived (every one behind a loop on a condition, say).

    Raises:
        TypeError: `schedule` is not a Schedule or KernelSequence (a name: build it first).
        tiletraffic.frontend.user_schedule.UserScheduleError (a ValueError): the file's
            `closed_form` needs a size the schedule lacks, raises, or returns something
            other than a dict of counts (a key that is no counter, a value that is not an
            integer).
    """
    check_schedule_argument(schedule, "closed_form")
    from tiletraffic.analysis.api.closed_forms import ClosedForm, derived_closed_form
    from tiletraffic.frontend import user_schedule
    from tiletraffic.simulator.kernels import closed_forms

    source = user_schedule.closed_form_source(schedule)
    if source is not None:
        return ClosedForm(user_schedule.closed_form_counts(schedule), source, schedule)
    written = closed_forms.counts_or_none(schedule)
    if written is not None:
        return ClosedForm(written, "built-in family", schedule)
    return derived_closed_form(schedule)


def closed_form_agrees(formula: dict | None, counts: dict) -> bool | None:
    """Whether the closed-form counts ``formula`` (:func:`closed_form`; a user's may give
    some of the counters only) equal the simulated ``counts`` (``TrafficCounts.to_dict()``)
    in every counter and buffer they give; None without closed forms."""
    return None if formula is None else not closed_form_differences(formula, counts)


def closed_form_differences(formula: dict, counts: dict) -> list[str]:
    """The counters (``key`` or ``key[buffer]``) where ``formula`` gives another value than
    ``counts``, in ``formula``'s order."""
    out = []
    for key, value in formula.items():
        if isinstance(value, dict):
            simulated = counts.get(key) or {}
            out += [f"{key}[{name}]" for name, v in value.items() if simulated.get(name, 0) != v]
        elif counts.get(key) != value:
            out.append(key)
    return out
