"""Tuning: a GEMM over a tuning space (``tune``), and the macros of a user's OpenCL C
kernel (``tune_kernel``); each ranks its candidates by the model and measures the best."""
from __future__ import annotations

from tiletraffic.analysis.api import facade_function
from tiletraffic.analysis.tune.options import DEFAULT_TOP


@facade_function
def tune_kernel(launch, params: dict, constraints=(), **options) -> dict:
    """Tune the macros of an OpenCL C kernel described by a launch file (or the
    specialization constants of a GLSL shader's): every combination
    of `params` (name -> values, passed as `-DNAME=value`) meeting `constraints`
    (expressions) and the device limits is modelled and ranked, the best `top` measured
    after each launch's check, the regret reported
    (`tiletraffic.analysis.tune.launch.tune_launch`; `options`: sets, device,
    device_model, top, repeat, warmup, rounds, out, seed, cluster, device_workers).

    Example: `tune_kernel("examples/opencl/mm_tiled.toml", {"TS": [8, 16]}, top=0)`.

    Returns:
        The results document (`predictions` ranked, `measurements`, `summary`).

    Raises:
        tiletraffic.analysis.tune.options.TuneError: bad arguments or no valid candidate.
        tiletraffic.frontend.launch_file.LaunchFileError: the launch file is wrong.
    """
    from tiletraffic.analysis.tune.launch import tune_launch

    return tune_launch(launch, params, constraints, **options)


@facade_function
def tune(m: int, n: int, k: int, *, device: str | None = None, device_model=None,
         top: int = DEFAULT_TOP, out=None, repeat: int = 10, warmup: int = 2, rounds: int = 2,
         space=None, jobs: int = 1, measure_all: bool = False, resume: bool = False,
         seed: int | None = None, progress: bool | None = False, recheck: int | None = None,
         log=None, command: str | None = None, targets=None, cluster: str | None = None,
         device_workers: int | None = None, batch: int = 1, shared_b: bool = False,
         dtype: str = "float32"):
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
        cluster: a Ray cluster to run on (`"local"`, `"local:N"`, `"auto"` or an address,
            as `ray.init` reads them; needs the `distributed` extra): the candidates are
            modelled as Ray tasks over its CPUs and measured on one worker per device,
            with the same results as one process; a process already connected to Ray uses
            that cluster. device_workers: its device workers (default one per GPU, or on a
            CPU device one per node). Several shapes at once:
            `tiletraffic.analysis.tune.shapes.tune_shapes`.
        batch, shared_b: tune a batch of `batch` products C[b] = A[b]·B[b] in one launch
            (one B for all where `shared_b`): every candidate is built batched.
        dtype: `"float32"` (default) or `"float16"`: every candidate stores A, B and C as
            half (`tiletraffic.simulator.kernels.storage`).

    Returns:
        `tiletraffic.analysis.tune.tuner.TuneResult` (`.summary`: `regret_ratio`,
        `regret_target`, `within_regret_target`, `spearman_rho`, ...; `.measurements`; `.table()`).

    Raises:
        tiletraffic.analysis.tune.options.TuneError (a ValueError): bad sizes or options, no valid
            candidate, an `out` a resumed tuning does not match.
        tiletraffic.analysis.tune.space.SpaceError (a ValueError): a malformed space file.
        tiletraffic.gpu.devices.device.DeviceError: no OpenCL device.
        tiletraffic.analysis.tune.tuner.TuneInterrupted: Ctrl-C (what finished is saved).
        tiletraffic.analysis.tune.cluster.ClusterSpecError (a ValueError): a bad `cluster`
            or Ray not installed. `ClusterError`: a cluster that cannot be reached or lost
            every device worker (what finished is saved).
    """
    from tiletraffic.analysis.tune import tuner
    from tiletraffic.analysis.tune.options import TuneOptions

    return tuner.tune(TuneOptions(
        m, n, k, device=device, device_model=device_model, top=top, out=out, repeat=repeat,
        warmup=warmup, rounds=rounds, space=space, jobs=jobs, measure_all=measure_all,
        resume=resume, seed=seed, progress=progress, recheck=recheck, log=log,
        command=command, targets=targets, cluster=cluster, device_workers=device_workers,
        batch=batch, shared_b=shared_b, dtype=dtype))
