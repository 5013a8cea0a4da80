"""Schedules: built from a name or a user's file (``build``), from an OpenCL C kernel
(``from_opencl``) or a GLSL compute shader (``from_glsl``), as OpenCL C (``generate``), and their closed-form counts
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
            `matvec-rows-reduce`; `batch=P`, P products C[b] = A[b]·B[b] in one launch,
            and `shared_b=True`, one B for the whole batch, of every GEMM family:
            `tiletraffic.simulator.kernels.batch`); `dtype="float16"` (or `"float32"`, the
            default) of every GEMM and matrix-vector family: half storage of its matrices
            and vectors, read with `vload_half`, computed in float32, rounded to half when
            stored (`tiletraffic.simulator.kernels.storage`); and for every form
            `max_registers=N`, the register
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
        source_or_path: the OpenCL C text, the path of a `.cl` file, or a list of paths
            built as one program in order (as a host that concatenates them builds it).
        kernel: the `__kernel` to read.
        global_size, local_size: NDRange and work-group size (work-items per dimension).
        args: every kernel argument by its name in the source: an `int` for a scalar (a
            list of ints for an `int2`/`uint2`/`int4`/`uint4`),
            `{"shape": (M, K), "access": "in"}` for a buffer (row-major float32; entries
            integers or names of scalar arguments or of `sizes`; access in/out/inout);
            an `int`/`uint` buffer the kernel reads adds its contents,
            `{"shape": (N,), "access": "in", "data": numpy_array_of_integers}`.
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
    from tiletraffic.frontend.opencl.translate import parse_kernel, program_source

    text, path = source_or_path, None
    if isinstance(source_or_path, (list, tuple)):
        files = [Path(f) for f in source_or_path]
        text, path = program_source(files, files[-1].parent) if files else ("", None)
    elif isinstance(source_or_path, Path) or (
            isinstance(source_or_path, str) and "\n" not in source_or_path
            and source_or_path.endswith((".cl", ".c", ".h"))):
        path = str(source_or_path)
        text = Path(path).read_text()
    return parse_kernel(text, kernel, global_size, local_size, args, sizes=sizes,
                        build_options=build_options, path=path)


@facade_function
def from_cuda(source_or_path, kernel: str, grid, block, args: dict, *,
              template: dict | None = None, shared_bytes: int | None = None,
              build_options: str = "", sizes: dict | None = None) -> Schedule:
    """The schedule of the `__global__` kernel `kernel` of a CUDA source, for every function
    here.

    Args:
        source_or_path: the CUDA C++ text, or the path of a `.cu`/`.cuh` file.
        kernel: the `__global__` function (or function template) to read.
        grid, block: blocks of the grid and threads of a block per dimension, x first.
        args: every kernel argument by its name in the source, as for `from_opencl`
            (pointer arguments are global buffers: `{"shape": (M, K), "access": "in"}`).
        template: the kernel template's arguments by parameter name (integers, bools, or
            a type name such as `"float"`).
        shared_bytes: dynamic shared memory of the launch in bytes (`extern __shared__`).
        build_options: `-D`/`-U`/`-I` options.
        sizes: values of names the shapes use that are not kernel arguments.

    The subset of CUDA accepted is that of `tiletraffic.frontend.cuda.translate`; no CUDA
    toolkit is needed. `run` launches the schedule's generated OpenCL C; `run_cuda`
    launches this very source on an NVIDIA GPU. A launch file gives the same from TOML:
    `build("kernel.toml")`.

    Raises:
        tiletraffic.frontend.opencl.clang_ast.FrontendError (a ValueError): a construct
            outside the subset, an argument or template argument missing or unknown, a bad
            launch (one line, with file:line:column where it concerns the source).
    """
    from tiletraffic.frontend.cuda.translate import parse_kernel

    text, path = source_or_path, None
    if isinstance(source_or_path, Path) or (
            isinstance(source_or_path, str) and "\n" not in source_or_path
            and source_or_path.endswith((".cu", ".cuh"))):
        path = str(source_or_path)
        text = Path(path).read_text()
    return parse_kernel(text, kernel, grid, block, args, sizes=sizes, template=template,
                        shared_bytes=shared_bytes, build_options=build_options, path=path)


@facade_function
def from_glsl(path, workgroups, bindings: dict, push_constants: dict | None = None,
              specialization: dict | None = None, *, sizes: dict | None = None) -> Schedule:
    """The schedule of a GLSL compute shader, dispatched as `vkCmdDispatch(*workgroups)`.

    Args:
        path: the shader's file (`.comp`; its `#include`s are read relative to it).
        workgroups: work-groups per dimension (1 to 3 integers or expressions over `sizes`).
        bindings: every buffer by its name (the array's, or the block's instance name):
            `{"shape": (M, K), "access": "in"}` (row-major float32 elements; access
            in/out/inout).
        push_constants: every push-constant and uniform member by name: a number or an
            expression over `sizes`.
        specialization: specialization constants by name (others keep the shader's
            default).
        sizes: names the other arguments use (`{"N": 1024}`).

    The same as a GLSL launch file (`tiletraffic.frontend.glsl.launch`) with these tables:
    `build("gemm.toml")` reads one from TOML. The shader is checked with `glslangValidator`
    where it is installed, translated into OpenCL C and read by the OpenCL C front end;
    `run` launches that translation where no Vulkan runner is available.

    Raises:
        tiletraffic.frontend.launch_file.LaunchFileError (a ValueError): an argument is
            wrong (named as the launch file's field, `bindings.C`).
        tiletraffic.frontend.glsl.syntax.GlslError (a ValueError): the reference compiler
            rejects the shader or a construct is not modelled (file:line:column).
    """
    from tiletraffic.frontend import launch_file

    check_argument_types("from_glsl", path=(path, (str, os.PathLike), "the shader's file"),
                         bindings=(bindings, dict, "a dict of buffer descriptions"))
    source = Path(path)
    data = {"source": source.name, "language": "glsl", "sizes": dict(sizes or {}),
            "launch": {"workgroups": list(workgroups) if isinstance(workgroups, (list, tuple))
                       else workgroups},
            "bindings": {name: dict(raw, shape=list(raw["shape"])) if isinstance(raw, dict)
                         and isinstance(raw.get("shape"), tuple) else raw
                         for name, raw in bindings.items()},
            "push_constants": dict(push_constants or {}),
            "specialization": dict(specialization or {})}
    return launch_file.schedule(launch_file.from_tables(source.parent / "from_glsl", data))


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
