"""The model against a device: its predictions pre-registered (``write_predictions``), the
built-in case lists (``validation_cases``), and the validation itself (``validate``)."""
from __future__ import annotations

from tiletraffic.simulator.model.device_model import DeviceModel

from tiletraffic.analysis.api import facade_function
from tiletraffic.analysis.api.arguments import datasheet_argument


@facade_function
def validation_cases(name: str = "quick", *, dtype: str | None = None,
                     batch: int | None = None, shared_b: bool = False):
    """A built-in case list of `validate`: `"quick"` (tiny, PoCL/CI), `"cpu"` or
    `"gpu"` (GEMM 1024/4096, matvec 4096/8192), a tuple of
    `tiletraffic.analysis.validation.cases.Case` (`.family`, `.m`, `.k`, `.n`, `.tile`,
    `.options`, `.registers`: the compiled registers per work-item the model uses, or
    `None`; `Case.from_dict({...})` makes your own). `dtype="float16"`: every case in
    half storage; `batch=P` (and `shared_b=True`): every GEMM case a batch of P products
    (one B for the batch); the matrix-vector cases stay one product.

    Raises:
        KeyError: an unknown name. `CaseError` (a ValueError): a `dtype` other than
        `"float32"`/`"float16"`, a `batch` that is not a positive integer, `shared_b`
        without a batch of 2 or more.
    """
    from tiletraffic.analysis.validation.cases import case_list

    return case_list(name, dtype=dtype, batch=batch, shared_b=shared_b)


@facade_function
def write_predictions(path, device_model: str | DeviceModel, cases=None, *,
                      case_list: str = "gpu", dtype: str | None = None,
                      batch: int | None = None, shared_b: bool = False) -> dict:
    """Pre-register the model's predictions: predict `cases` (default: the built-in list
    `case_list`, with `dtype`, `batch` and `shared_b` as for `validation_cases`) on
    `device_model` and write the predictions file `path` (JSON: the cases, the model
    file's name and SHA-256, each prediction, the git commit, a UTC time). Needs no
    device. Returns the document written.

    Raises:
        KeyError, DeviceModelError: an unknown or malformed device model. OSError: `path`
        cannot be written. `CaseError` (a ValueError): a bad `dtype`, `batch` or
        `shared_b`, or one given with `cases` (each case carries its own).
    """
    from tiletraffic.analysis.validation import cases as case_lists, predict

    options = {"dtype": dtype, "batch": batch, "shared_b": shared_b}
    if cases is not None:
        if case_lists.list_options(**options):
            raise case_lists.CaseError("dtype, batch and shared_b apply to a built-in case "
                                       "list, not to your own cases (each carries its own)")
        return predict.write_predictions(path, cases, device_model)
    return predict.write_predictions(
        path, case_lists.case_list(case_list, **options), device_model,
        case_list=case_lists.case_list_label(case_list, **options))


@facade_function
def validate(device: str | None = None, device_model: str | DeviceModel | None = None, *,
             quick: bool = False, cases=None, predictions=None, out=None, repeat: int = 10,
             rounds: int = 2, progress: bool = False, targets=None, cluster: str | None = None,
             device_workers: int | None = None, datasheet=None, dtype: str | None = None,
             batch: int | None = None, shared_b: bool = False):
    """Validate the model on an OpenCL device: every case run, checked against float64,
    timed (median and spread of `rounds` × `repeat` launches) and compared with the
    model's predicted time, speedup over the naive schedule and ranking
    (`tiletraffic.analysis.validation` defines each figure).

    Args:
        device: as for `run`. device_model: a built-in name, a file or a
            `DeviceModel` (default: the predictions file's, else the built-in model
            of a known device, else the nearest built-in model transferred to the device
            (`device_model_of`), else `generic-gpu`).
        quick: the tiny case list; cases: your own (default: the device's list).
        dtype, batch, shared_b: the built-in list (`quick`'s or the device's) with every
            case stored as `dtype` (`"float16"`: half storage, checked against float64
            with half's tolerance), every GEMM case a batch of `batch` products
            (`shared_b`: one B for the batch); refused with `cases` and with
            `predictions` alone (the file's cases are measured).
        predictions: a predictions file (`write_predictions`): its cases are measured
            and compared with its predictions, after checking the model's hash.
        out: the results folder (default `tiletraffic-reports/<device>[-quick]/validate`).
        targets: the limits the model is judged by, reported under their names (a TOML
            file or `tiletraffic.analysis.validation.targets.Targets`; default the built-in
            `analysis/validation/targets.toml`: median-abs-error 15 %, worst-abs-error 35 %,
            speedup-error 20 %, ranking 2x the spread).
        cluster, device_workers: a Ray cluster to predict and measure on and its device
            workers, as for `tune` (`tiletraffic.analysis.tune.cluster`).
        datasheet: for a device without a built-in model, its datasheet (a path or a
            `Datasheet`) for the default model, as for `device_model_of`.

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
        `CaseError` (a ValueError): a bad `dtype`, `batch` or `shared_b`, or one given
        with `cases` or with `predictions` alone.
        OSError: `out` cannot be written.
        `ClusterSpecError`, `ClusterError` (`tiletraffic.analysis.tune.cluster`): a bad
        `cluster` or Ray not installed; a cluster that cannot be reached or lost every
        device worker.
    """
    from tiletraffic.analysis.tune.engine import engine_for
    from tiletraffic.analysis.validation.run import ValidationOptions, validate_device

    options = ValidationOptions(
        model=device_model, cases=cases, quick=quick, predictions_file=predictions,
        out_dir=out, repeat=repeat, rounds=rounds, progress=progress, targets=targets,
        datasheet=datasheet_argument(datasheet), dtype=dtype, batch=batch, shared_b=shared_b,
        command=f"tiletraffic.validate(device={device!r}, quick={quick}"
                + "".join(f", {key}={value!r}" for key, value in
                          (("dtype", dtype), ("batch", batch)) if value is not None)
                + (", shared_b=True" if shared_b else "") + ")")
    with engine_for(cluster, 1, device_workers) as engine:
        return validate_device(engine.open_device(device), options, engine)
