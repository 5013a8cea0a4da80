"""On the H200: the CUDA examples (examples/cuda/) launched from their own CUDA
source through ``tiletraffic run`` (checked against the reference, timed), profiled by Nsight
Compute around that same command, and compared with ``tiletraffic model --device-model
nvidia-h200-cuda`` at the same sizes: global load and store requests and sectors, shared-memory
load and store wavefronts.

    python -m experiments.h200.cuda_examples.driver --out DIR [--case NAME ...] [--deadline-s 420]

For each case (:data:`CASES`): ``run`` once without a profiler (its JSON: the check and the
times), then once under ``ncu --clock-control none`` with only the case's kernel profiled (its
first launch), then ``model``. Writes DIR/command.txt, DIR/<case>/ (run.json, run.log,
ncu.log, ncu-raw.csv, model.json), DIR/results.json (every case, raw) and DIR/table.md
(:func:`table`). A step that fails is recorded with its output and the next step runs;
nothing here stops the other cases. Only ``main`` needs the device; the rest is tested
without one (experiments/h200/tests/test_cuda_examples_driver.py).
"""
from __future__ import annotations

import argparse
import glob
import json
import platform
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
LAUNCH = REPO / "examples" / "cuda"
DEVICE_MODEL = "nvidia-h200-cuda"

CASES = (
    # (launch file, sizes set for the run)
    ("sgemm_warp_tiled", {"M": 2048, "N": 2048, "K": 2048}),       # templated, warp-tiled
    ("sgemm_register_blocked", {"M": 2048, "N": 2048, "K": 2048}),
    ("sgemm_float4", {"M": 2048, "N": 2048, "K": 2048}),
    ("sgemm_tiled", {"N": 2048}),
    ("sgemm_naive", {"M": 1024, "N": 1024, "K": 1024}),
    ("transpose_shared", {"N": 4096}),
    ("gemv_warp_shuffle", {"M": 4096, "K": 4096}),
    ("gemv_naive", {"M": 4096, "K": 4096}),
)
"""The cases: at least 8, the templated warp-tiled SGEMM first."""

COMPARED = (
    # (model key of `model --json`, Nsight Compute metric)
    ("global_load_requests", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"),
    ("global_load_sectors", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"),
    ("global_store_requests", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"),
    ("global_store_sectors", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"),
    ("local_load_wavefronts", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"),
    ("local_store_wavefronts", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"),
)
"""The counts the table compares, model against Nsight Compute, exactly."""

EXTRA_METRICS = ("smsp__inst_executed_op_global_ld.sum", "smsp__inst_executed_op_shared_ld.sum",
                 "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
                 "gpu__time_duration.sum")
"""Recorded beside them, not compared."""

METRICS = tuple(m for _, m in COMPARED) + EXTRA_METRICS


def find_ncu() -> str | None:
    """Nsight Compute's command line: on PATH, else where CUDA installs it."""
    found = shutil.which("ncu")
    if found:
        return found
    candidates = sorted(glob.glob("/usr/local/cuda*/bin/ncu")
                        + glob.glob("/opt/nvidia/nsight-compute/*/ncu"))
    return candidates[-1] if candidates else None


def launch_path(name: str, launch_dir: Path = LAUNCH) -> Path:
    return launch_dir / f"{name}.toml"


def kernel_name(name: str, launch_dir: Path = LAUNCH) -> str:
    """The ``kernel`` a case's launch file names (ncu's filter)."""
    from tiletraffic.frontend.launch_file import tomllib
    return tomllib.loads(launch_path(name, launch_dir).read_text())["kernel"]


def set_args(sets: dict) -> list[str]:
    return [a for k, v in sets.items() for a in ("--set", f"{k}={v}")]


def run_argv(name: str, sets: dict, device: str | None = None,
             launch_dir: Path = LAUNCH, extra: tuple = ()) -> list[str]:
    """``tiletraffic run`` of a case, JSON out: without ``device``, the kernel's own CUDA
    source through NVRTC (where CuPy and an NVIDIA GPU are there); with it, the generated
    OpenCL C on that OpenCL device."""
    return [sys.executable, "-m", "tiletraffic", "run", str(launch_path(name, launch_dir)),
            *set_args(sets),
            *(["--device", device] if device else []), "--repeat", "10", "--warmup", "1",
            *extra, "--json"]


def model_argv(name: str, sets: dict, model: str = DEVICE_MODEL,
               launch_dir: Path = LAUNCH) -> list[str]:
    return [sys.executable, "-m", "tiletraffic", "model", str(launch_path(name, launch_dir)),
            *set_args(sets), "--device-model", model, "--json"]


def ncu_argv(ncu: str, name: str, sets: dict, device: str | None, report: Path,
             launch_dir: Path = LAUNCH, extra: tuple = ()) -> list[str]:
    """Nsight Compute around the case's ``run``: its kernel only (by function name, so a
    template's instance and CuPy's own kernels are told apart), its first launch."""
    return [ncu, "--clock-control", "none", "--cache-control", "all", "--target-processes",
            "all", "--kernel-name-base", "function", "--kernel-name",
            f"regex:^{kernel_name(name, launch_dir)}$", "--launch-count", "1", "--metrics",
            ",".join(METRICS), "--export", str(report), "--force-overwrite",
            *run_argv(name, sets, device, launch_dir, extra)]


def call(argv: list[str], timeout_s: float, log: Path) -> dict:
    """Run ``argv``; its output written to ``log``; rc, wall time and output returned (rc
    None: it timed out or could not start)."""
    t0 = time.monotonic()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s,
                              cwd=REPO)
        rc, out, err = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as exc:
        rc, out, err = None, exc.stdout or "", (exc.stderr or "") + f"\ntimed out ({timeout_s} s)"
        out, err = (o.decode() if isinstance(o, bytes) else o for o in (out, err))
    except OSError as exc:
        rc, out, err = None, "", str(exc)
    log.write_text(f"$ {shlex.join(argv)}\n--- rc {rc}\n--- stdout\n{out}\n--- stderr\n{err}\n")
    return {"argv": argv, "rc": rc, "wall_s": round(time.monotonic() - t0, 2), "stdout": out,
            "stderr": err[-3000:]}


def json_of(text: str):
    """The JSON document a command printed, or None."""
    start = text.find("{")
    try:
        return json.loads(text[start:]) if start >= 0 else None
    except json.JSONDecodeError:
        return None


def ncu_metrics(raw_csv: str, kernel: str) -> tuple[dict, str | None]:
    """The metrics of the one profiled result of ``kernel`` in an ``ncu --page raw --csv``
    page, or an error."""
    from experiments.h200.ncu import metric_value, parse_ncu_raw_csv
    records = parse_ncu_raw_csv(raw_csv)
    mine = [r for r in records if kernel in str(r["info"].get("Kernel Name", ""))]
    if not mine:
        return {}, (f"no profiled result of {kernel} (results: "
                    f"{[r['info'].get('Kernel Name') for r in records]})")
    return {m: metric_value(mine[0], m) for m in METRICS}, None


def compare(model: dict | None, metrics: dict) -> list[dict]:
    """One row per compared count: model, Nsight Compute, equal."""
    rows = []
    for key, metric in COMPARED:
        predicted = (model or {}).get(key)
        measured = metrics.get(metric)
        rows.append({"count": key, "metric": metric, "model": predicted, "ncu": measured,
                     "equal": predicted is not None and measured is not None
                     and predicted == measured})
    return rows


def run_case(name: str, sets: dict, device: str | None, folder: Path, ncu: str | None,
             launch_dir: Path = LAUNCH, extra: tuple = ()) -> dict:
    """Run, profile and model one case (``launch_dir``/``name``.toml) into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    case: dict = {"case": name, "kernel": kernel_name(name, launch_dir), "sets": sets}
    run = call(run_argv(name, sets, device, launch_dir, extra), 240, folder / "run.log")
    case["run"] = {k: run[k] for k in ("rc", "wall_s", "stderr")}
    case["run"]["result"] = json_of(run["stdout"])
    if run["rc"] != 0:
        case["ncu"] = {"error": "not profiled: the run failed"}
    elif ncu:
        report = folder / "profile"
        prof = call(ncu_argv(ncu, name, sets, device, report, launch_dir, extra), 300,
                    folder / "ncu.log")
        case["ncu"] = {k: prof[k] for k in ("rc", "wall_s")}
        rep = report.with_suffix(".ncu-rep")
        if rep.exists():
            page = call([ncu, "--import", str(rep), "--page", "raw", "--csv",
                         "--print-units", "base"], 120, folder / "ncu-import.log")
            (folder / "ncu-raw.csv").write_text(page["stdout"])
            case["ncu"]["metrics"], case["ncu"]["error"] = ncu_metrics(page["stdout"],
                                                                       case["kernel"])
        else:
            case["ncu"]["error"] = "no report: " + (prof["stdout"] + prof["stderr"])[-600:]
    else:
        case["ncu"] = {"error": "ncu not found"}
    model = call(model_argv(name, sets, launch_dir=launch_dir), 240, folder / "model.log")
    case["model"] = json_of(model["stdout"])
    if case["model"] is None:
        case["model_error"] = (model["stdout"] + model["stderr"])[-600:]
    else:
        (folder / "model.json").write_text(json.dumps(case["model"], indent=1))
    case["rows"] = compare(case["model"], case["ncu"].get("metrics", {}))
    return case


def run_summary(result: dict | None, rc) -> str:
    """The check and median time of a run's JSON, in a few words."""
    if not result:
        return f"failed (exit {rc})"
    if "checks" in result:          # the CUDA source's run: each output's check
        ok = "ok" if result["checks"] and all(result["checks"].values()) else "WRONG"
    else:                           # the generated OpenCL C's run
        check = result.get("check") or {}
        ok = "ok" if check.get("ok") else "WRONG" if check else "?"
    median = result.get("median_s")
    return f"{ok}, {median * 1e3:.3f} ms" if isinstance(median, (int, float)) else ok


def table(cases: list[dict]) -> str:
    """The markdown table: one line per case and count, model against Nsight Compute."""
    head = ("| kernel | sizes | run (check, median) | count | model | Nsight Compute | equal |\n"
            "|---|---|---|---|---|---|---|")
    lines = [head]
    for c in cases:
        sizes = ", ".join(f"{k}={v}" for k, v in c["sets"].items())
        run = run_summary(c["run"].get("result"), c["run"].get("rc"))
        note = c["ncu"].get("error") or c.get("model_error")
        if note:
            lines.append(f"| {c['case']} | {sizes} | {run} | — | — | — | "
                         f"{' '.join(note.split())[:160]} |")
        for r in c["rows"]:
            lines.append(f"| {c['case']} | {sizes} | {run} | {r['count']} | {r['model']} | "
                         f"{r['ncu']} | {'yes' if r['equal'] else 'NO'} |")
    equal = sum(r["equal"] for c in cases for r in c["rows"])
    total = sum(len(c["rows"]) for c in cases)
    return "\n".join(lines) + f"\n\nequal: {equal} of {total} counts in {len(cases)} cases\n"


def main(argv=None, cases=CASES, launch_dir: Path = LAUNCH,
         module: str = "experiments.h200.cuda_examples.driver", run_options=None) -> int:
    """The command line; ``cases`` (launch-file names and sizes) are read from
    ``launch_dir``, ``module`` names the command in command.txt, ``run_options`` gives a
    case's further options of ``run`` (name -> tuple)."""
    run_options = run_options or {}
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--case", action="append", help="a case of CASES (default: all)")
    ap.add_argument("--device", default=None,
                    help="an OpenCL device for run (default: none, so that run compiles the "
                         "kernel's own CUDA source with NVRTC, the build ncu profiles)")
    ap.add_argument("--deadline-s", type=float, default=420,
                    help="start no case after this many seconds (default 420)")
    args = ap.parse_args(argv)
    start = time.monotonic()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    chosen = [c for c in cases if not args.case or c[0] in args.case]
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "unknown (no .git on the device)"
    (out / "command.txt").write_text(
        f"python -m {module} " + shlex.join(argv or sys.argv[1:])
        + f"\nhost: {platform.node()}  python {platform.python_version()}  checkout {commit}\n")
    ncu = find_ncu()
    done: list[dict] = []
    for name, sets in chosen:
        if time.monotonic() - start > args.deadline_s:
            print(f"=== {name}: not started (past --deadline-s {args.deadline_s:g})",
                  flush=True)
            continue
        print(f"=== {name} {sets}", flush=True)
        done.append(run_case(name, sets, args.device, out / name, ncu, launch_dir,
                             tuple(run_options.get(name, ()))))
        (out / "results.json").write_text(json.dumps(done, indent=1, default=str))
        (out / "table.md").write_text(table(done))
        print("\n".join(table(done[-1:]).splitlines()[2:]), flush=True)
    (out / "table.md").write_text(table(done))
    print(table(done))
    return 0


if __name__ == "__main__":
    sys.exit(main())
