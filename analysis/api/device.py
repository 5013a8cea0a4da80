"""An OpenCL device: a schedule checked, launched and timed on it (``run``), the devices
(``devices``), its device model measured (``calibrate``), and the main job's report
(``report``)."""
from __future__ import annotations

from tiletraffic.simulator.ir.nodes import Schedule
from tiletraffic.simulator.model.device_model import DeviceModel

from tiletraffic.analysis.api import facade_function
from tiletraffic.analysis.api.arguments import (INPUTS, SEED, check_argument_types,
                                                check_schedule_argument, datasheet_argument,
                                                inputs_kind_of)
from tiletraffic.analysis.device_model import resolve_device_model
from tiletraffic.analysis.report import DEFAULT_OUT_ROOT


@facade_function
def run(schedule: Schedule, device: str | None = None, *, repeat: int = 10, warmup: int = 2,
        reference=None, seed: int | None = None, inputs: str | None = None,
        unchecked: bool = False):
    """Check `schedule` in the simulator, then build, launch, time and check it on an
    OpenCL device (a GLSL shader's schedule: through Vulkan where a Vulkan runner is
    available, else its OpenCL C translation, with a `TranslationRunWarning`; a CUDA
    kernel's: its generated OpenCL C, with the same warning; `run_cuda` launches its CUDA
    source).

    Args:
        device: `"P:D"` indices, part of a platform or device name, or `None` for the
            default (a GPU if present, else PoCL's CPU device; never Oclgrind).
        repeat, warmup: timed launches and untimed warm-up launches.
        reference: for a schedule that is not a GEMM or matrix-vector product, a function
            `inputs -> {output name: array}` (numpy, float64; or the array of the one
            output) giving the expected result; each output it names is checked.
        seed: seed of the random inputs.
        inputs: `normal`, `uniform`, `ones` or `arange` (the last two can hide swapped
            indices); default: the kind the launch file's `reference.inputs` names, else
            `normal`.
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
    check_schedule_argument(schedule, "run")
    inputs = inputs_kind_of(schedule, inputs)
    check_argument_types("run", seed=(seed, *SEED), inputs=(inputs, *INPUTS),
                   unchecked=(unchecked, (bool,), "True or False"))
    import numpy as np

    from tiletraffic.gpu.runtime.checked_run import run_on_device
    from tiletraffic.gpu.runtime.shader_runner import runner_for
    from tiletraffic.gpu.devices.device import select_device

    from tiletraffic.gpu.runtime.cuda_run import is_cuda_schedule
    if is_cuda_schedule(schedule):
        import warnings
        from tiletraffic.gpu.runtime.shader_runner import TranslationRunWarning
        warnings.warn(f"{schedule.family}: run launches the schedule's generated OpenCL C, "
                      "not its CUDA source (run_cuda launches that on an NVIDIA GPU)",
                      TranslationRunWarning, stacklevel=3)
    runner = runner_for(schedule, run_on_device)   # a GLSL shader: Vulkan where available
    return runner(select_device(device), schedule, repeat=repeat, warmup=warmup,
                  rng=np.random.default_rng(seed), reference_fn=reference,
                  inputs=inputs, unchecked=unchecked)


@facade_function
def devices():
    """The OpenCL devices, as `tiletraffic devices` lists them: a list of
    `tiletraffic.gpu.devices.device_list.DeviceEntry` in `"P:D"` order (`.id`, `.info`: the
    `DeviceInfo` with names and limits, `.is_default`: the device used when `device` is
    not given, `.build_problem`: why it cannot compile kernels here, or `None`;
    `.line()`: the command's line). An empty list when there is no OpenCL device.
    """
    from tiletraffic.gpu.devices.device_list import device_entries

    return device_entries()


@facade_function
def report(device: str | None = None, *, out=DEFAULT_OUT_ROOT, quick: bool = False,
           repeat: int = 10, device_model: str | DeviceModel | None = None, targets=None,
           progress: bool = False, datasheet=None):
    """The main job, as `tiletraffic report` runs it: count naive and tiled GEMM and
    matrix-vector traffic in the simulator (checked against the closed forms), run them on
    `device` (checked, timed, in rounds with spreads), validate the device model where it
    is this device's, and write `report.md`, its figures, `report.html` with explain pages
    and `results.json` to `out/<device>[-quick]/`
    (`tiletraffic.analysis.report.build.make_report`).

    Args:
        device: as for `run`. quick: the small sweep (seconds on a 2-core CPU).
        out: the folder of report folders (default `tiletraffic-reports`, relative to the
            current folder; a run into a folder another run is writing waits for it).
            repeat: timed launches per kernel (10 to 10000).
        device_model: the model to validate (a built-in name, a file or a `DeviceModel`;
            default: the device's built-in model, else the nearest built-in model
            transferred to it (`device_model_of`), else `generic-gpu`).
        targets: as for `validate`. progress: progress bars on stderr.
        datasheet: as for `device_model_of` (only without `device_model`).

    Returns:
        The report folder (a `pathlib.Path`); its `results.json` holds every figure, and
        `tiletraffic.analysis.report.text.summary_lines(data, folder)` gives the command's
        summary. `tiletraffic.analysis.report.build.render(folder)` re-renders a
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
                       progress=progress, device_model=device_model, targets=targets,
                       datasheet=datasheet_argument(datasheet))


@facade_function
def device_model_of(device: str | None = None, *, datasheet=None) -> DeviceModel:
    """The device model of an OpenCL device, as `tiletraffic device-model --device` prints
    it: its built-in model (with the queried compute units, local memory and work-group
    size), else the nearest built-in model (same vendor, then architecture or compute
    capability, never another sub-group size) with its documented sizes and rates replaced
    by the device's datasheet's and by the OpenCL queries (compute units, clock, local
    memory; the L2 size where no datasheet gives it), else `generic-gpu` completed with
    the datasheet's and the queried values. Its `description` is
    the one-line note saying which model it started from and which values were replaced.

    Args:
        device: as for `run`.
        datasheet: a datasheet file (TOML; its path) or a
            `tiletraffic.simulator.model.datasheet.Datasheet`; default: the shipped one
            that fits the device's name (`tiletraffic.simulator.model.datasheet.DATASHEETS`).

    Raises:
        tiletraffic.gpu.devices.device.DeviceError: no such device, or no OpenCL device.
        DeviceModelError: a datasheet file that cannot be read or is malformed.
    """
    from tiletraffic.gpu.devices.device import select_device

    sheet = datasheet_argument(datasheet)
    return resolve_device_model(None, device_info=select_device(device).info, datasheet=sheet)


@facade_function
def calibrate(device: str | None = None, *, quick: bool = False,
              base: str | DeviceModel | None = None, out=None, datasheet=None):
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
            kept (default: the built-in model matching the device's name, else the nearest
            built-in model transferred to the device, as `device_model_of` gives it, else
            generic-gpu).
        datasheet: for a device without a built-in model, its datasheet (a path or a
            `Datasheet`; default: the shipped one that fits its name).
        out: also write the model there (TOML, atomically; use it with
            `--device-model`/`model(..., device=out)`).

    Returns:
        `(DeviceModel, measurements)`: each measurement a
        `tiletraffic.analysis.calibrate.calibrate.Measurement` (benchmark, value, unit, the field
        it set); `tiletraffic.analysis.calibrate.calibrate.table(measurements)` returns them as a
        text table. A value beyond what the hardware can do (above the base model's
        documented peak; an issue rate above one warp instruction per cycle per scheduler)
        is not written: its measurement's `refused` is the one-line message saying why.

    Raises:
        tiletraffic.gpu.devices.device.DeviceError: no such device, or no OpenCL device at all.
        tiletraffic.analysis.calibrate.calibrate.CalibrationError: too little memory for a benchmark.
        tiletraffic.gpu.runtime.launch.TiletrafficGpuError: a build, launch or result check failed.
    """
    from tiletraffic.analysis.calibrate import calibrate as calibration
    from tiletraffic.analysis.files import atomic_write_text
    from tiletraffic.gpu.devices.device import select_device
    from tiletraffic.simulator.model.device_model import to_toml

    base_model = resolve_device_model(base) if base is not None else None
    model, measured = calibration.calibrate(select_device(device), quick, base=base_model,
                                            datasheet=datasheet_argument(datasheet))
    if out is not None:
        atomic_write_text(out, to_toml(model))
    return model, measured


@facade_function
def run_cuda(schedule: Schedule, *, repeat: int = 10, warmup: int = 2, reference=None,
             seed: int | None = None, inputs: str | None = None):
    """Compile a schedule read from CUDA (`from_cuda`, a CUDA launch file) from its own
    source with NVRTC and launch, check and time it on an NVIDIA GPU (needs CuPy: `pip
    install -e ".[cuda]"`).

    Args:
        repeat, warmup: timed launches and untimed warm-up launches.
        reference: as for `run`: a function `inputs -> {output name: array}`.
        seed: seed of the random inputs; inputs: `normal`, `uniform`, `positive`, `ones`,
            `arange` (default: the launch file's `reference.inputs`, else `normal`).

    Returns:
        `tiletraffic.gpu.runtime.cuda_run.CudaRun` (`.times_s`, `.median_s`, `.checks`).

    Raises:
        TypeError: `seed` or `inputs` of the wrong type, naming it.
        ValueError: the schedule was not read from CUDA.
        tiletraffic.gpu.devices.device.TiletrafficGpuError: CuPy or an NVIDIA GPU is
            missing (the message says which), NVRTC or the launch fails.
        tiletraffic.gpu.runtime.launch.ResultMismatchError: a result outside its tolerance.
    """
    import numpy as np
    from tiletraffic.gpu.runtime.cuda_run import run_cuda_source
    check_schedule_argument(schedule, "run_cuda")
    inputs = inputs_kind_of(schedule, inputs)
    check_argument_types("run_cuda", seed=(seed, *SEED), inputs=(inputs, *INPUTS))
    return run_cuda_source(schedule, repeat=repeat, warmup=warmup,
                           rng=np.random.default_rng(seed), reference_fn=reference,
                           inputs=inputs)
