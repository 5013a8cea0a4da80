"""The corpus cases run on a GPU machine that cannot hold libclang: each case's schedule is
read here by the CUDA front end (``tiletraffic.frontend.launch_file.load`` of its launch file
and sizes) and saved with :mod:`pickle`; there, :func:`run_one` launches it through the same
function ``tiletraffic run`` calls for a CUDA source
(``tiletraffic.gpu.runtime.cuda_run.run_cuda_source``: the check before launch, NVRTC on the
file's and its headers' device text, the launches checked against the launch file's
reference, CUDA events), and :func:`main` profiles that same command with Nsight Compute
(the metrics of :mod:`experiments.h200.cuda_examples.driver`).

    python -m experiments.h200.cuda_corpus.pickled prepare DIR          # here
    python -m experiments.h200.cuda_corpus.pickled one CASE.pkl         # there: one run, JSON
    python -m experiments.h200.cuda_corpus.pickled device DIR OUT [DEADLINE_S]  # there

``device`` writes OUT/results.json in the format of the examples' driver (for
``python -m experiments.h200.cuda_examples.compare``) and OUT/<case>/ (run.log, ncu.log,
ncu-raw.csv, profile.ncu-rep); for each case that ran and whose predicted counts have
shared-memory traffic, a second Nsight Compute pass (:data:`SHARED_METRICS`, those this
Nsight Compute knows, and the SourceCounters section) writes OUT/<case>/shared-raw.csv and
shared-source.csv (per SASS instruction). No case starts after DEADLINE_S (default 330).
The paths a saved schedule holds are those of the checkout that saved it; ``one``
rebases them onto this checkout (:func:`rebased`) and runs from its root.
"""
from __future__ import annotations

import json
import os
import pickle
import sys
import time
from pathlib import Path

from experiments.h200.cuda_corpus import driver as corpus
from experiments.h200.cuda_examples import driver as examples

REPO = examples.REPO
EXAMPLE_CASES = (("sgemm_warp_tiled", {"M": 2048, "N": 2048, "K": 2048}),)
"""Cases of examples/cuda run beside the corpus: the templated warp-tiled SGEMM."""


def cases() -> list[tuple[str, Path, dict, str]]:
    """(name, launch file, sizes, inputs) of every case."""
    out = [(n, corpus.LAUNCH / f"{n}.toml", s,
            dict(zip(*[iter(corpus.RUN_OPTIONS.get(n, ("--inputs", "normal")))] * 2))
            ["--inputs"]) for n, s in corpus.CASES]
    out += [(n, examples.LAUNCH / f"{n}.toml", s, "normal") for n, s in EXAMPLE_CASES]
    return out


def prepare(folder: Path, chosen=None) -> None:
    """Read every case's schedule here and pickle it into ``folder``/<case>.pkl; with
    ``chosen`` ((name, launch file, sizes, inputs) of each), those cases into
    ``folder``/NN_<case>.pkl, NN their place in it (``device`` runs them in that order)."""
    from tiletraffic.frontend.launch_file import load
    folder.mkdir(parents=True, exist_ok=True)
    for place, (name, launch, sets, inputs) in enumerate(cases() if chosen is None
                                                         else chosen):
        try:
            schedule = load(str(launch.relative_to(REPO)), overrides=dict(sets) or None)
        except Exception as err:      # the front end's refusal: recorded, not pickled
            print(f"{name}: not read: {str(err).splitlines()[0]}")
            continue
        record = {"case": name, "launch": str(launch.relative_to(REPO)), "sets": sets,
                  "repo": str(REPO),
                  "inputs": inputs, "kernel": schedule.extra["cuda"]["kernel"],
                  "schedule": schedule}
        stem = name if chosen is None else f"{place:02d}_{name}"
        (folder / f"{stem}.pkl").write_bytes(pickle.dumps(record))
        print(f"{name}: {schedule.family} pickled")


SHARED_METRICS = (
    "smsp__inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_shared_st.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum", "smsp__sass_inst_executed_op_shared_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "smsp__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "smsp__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", "l1tex__data_bank_reads.sum",
    "l1tex__data_bank_writes.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum")
"""Shared-memory counters read beside the compared ones in the second pass: instructions
(hardware and SASS-attributed), the L1 data pipe's wavefronts and bank conflicts against
their SASS-attributed counterparts, the data banks' reads and writes."""

PREDICTED = (Path(__file__).with_name("predicted") / "model_nvidia-h200-cuda.json",
             REPO / "experiments" / "h200" / "cuda_examples" / "predicted" /
             "model_nvidia-h200-cuda.json",
             Path(__file__).with_name("call5") / "predicted" / "model_nvidia-h200-cuda.json")
"""The model's counts committed before the call: which cases have shared-memory traffic."""


def rebased(cuda: dict, there: str, here: str) -> dict:
    """``cuda`` (a schedule's ``extra["cuda"]``) with every absolute path under ``there`` (the
    checkout that pickled it) moved under ``here``: the source's path, the ``-I`` options
    and the project headers' names."""
    def move(path: str) -> str:
        return here + path[len(there):] if path.startswith(there + "/") else path
    out = dict(cuda)
    out["path"] = move(cuda["path"])
    out["build_options"] = tuple("-I" + move(o[2:].strip()) if o.startswith("-I") else o
                                 for o in cuda.get("build_options") or ())
    out["device_headers"] = {move(name): text
                             for name, text in (cuda.get("device_headers") or {}).items()}
    return out


def run_one(path: Path) -> int:
    """Launch one pickled case as ``tiletraffic run --json`` would, from this checkout's
    root; its JSON on stdout."""
    import numpy as np

    from tiletraffic.frontend.launch_file import reference_function
    from tiletraffic.gpu.runtime.cuda_run import run_cuda_source
    record = pickle.loads(path.resolve().read_bytes())
    os.chdir(REPO)                 # the launch file's relative paths are the root's
    schedule = record["schedule"]
    schedule.extra["cuda"] = rebased(schedule.extra["cuda"], record.get("repo", str(REPO)),
                                     str(REPO))
    try:
        result = run_cuda_source(schedule, repeat=10, warmup=1,
                                 rng=np.random.default_rng(),
                                 reference_fn=reference_function(record["launch"]),
                                 inputs=record["inputs"])
    except Exception as err:          # NVRTC, the launch, the check: one line, exit 1
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(json.dumps(result.to_dict(), indent=1))
    return 0


def shared_cases() -> set[str]:
    """The cases whose predicted counts have shared-memory loads or stores."""
    found = set()
    for path in PREDICTED:
        if not path.exists():
            continue
        for name, counts in json.loads(path.read_text()).items():
            if (counts.get("local_load_wavefronts") or counts.get("local_store_wavefronts")):
                found.add(name)
    return found


def known_metrics(ncu: str, metrics) -> list[str]:
    """Those of ``metrics`` whose base name this Nsight Compute lists (``--query-metrics``
    on this GPU); all of them where it lists none."""
    listed = examples.call([ncu, "--query-metrics"], 120, Path(os.devnull))["stdout"]
    names = {line.split()[0] for line in listed.splitlines() if line.strip()}
    known = [m for m in metrics if m.rsplit(".", 1)[0] in names]
    return known if names and known else list(metrics)


def shared_pass(ncu: str, argv: list[str], kernel: str, metrics: list[str],
                case_dir: Path) -> dict:
    """The second Nsight Compute pass of one case: ``metrics`` and the SourceCounters
    section; the raw page and the per-SASS-instruction source page written beside."""
    report = case_dir / "shared"
    prof = examples.call(
        [ncu, "--clock-control", "none", "--cache-control", "all", "--target-processes",
         "all", "--kernel-name-base", "function", "--kernel-name", f"regex:^{kernel}$",
         "--launch-count", "1", "--section", "SourceCounters", "--metrics",
         ",".join(metrics), "--export", str(report), "--force-overwrite", *argv], 300,
        case_dir / "shared-ncu.log")
    rep = report.with_suffix(".ncu-rep")
    if not rep.exists():
        return {"rc": prof["rc"], "error": (prof["stdout"] + prof["stderr"])[-600:]}
    raw = examples.call([ncu, "--import", str(rep), "--page", "raw", "--csv", "--print-units",
                         "base"], 120, case_dir / "shared-import.log")["stdout"]
    (case_dir / "shared-raw.csv").write_text(raw)
    source = examples.call([ncu, "--import", str(rep), "--page", "source", "--csv",
                            "--print-source", "sass"], 120, case_dir / "shared-source.log")
    (case_dir / "shared-source.csv").write_text(source["stdout"])
    from experiments.h200.ncu import metric_value, parse_ncu_raw_csv
    mine = [r for r in parse_ncu_raw_csv(raw) if kernel in str(r["info"].get("Kernel Name"))]
    return {"rc": prof["rc"], "wall_s": prof["wall_s"],
            "metrics": {m: metric_value(mine[0], m) for m in metrics} if mine else {}}


def device(folder: Path, out: Path, deadline_s: float = 330) -> int:
    """Run and profile every pickled case of ``folder``; OUT/results.json and per case."""
    t0 = time.monotonic()
    ncu = examples.find_ncu()
    shared = shared_cases()
    metrics = known_metrics(ncu, SHARED_METRICS) if ncu else []
    results = []
    for pkl in sorted(folder.glob("*.pkl")):
        record = pickle.loads(pkl.read_bytes())
        name, kernel = record["case"], record["kernel"]
        if time.monotonic() - t0 > deadline_s:
            print(f"=== {name}: not started (deadline {deadline_s} s)", flush=True)
            continue
        case_dir = out / name
        case_dir.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-m", "experiments.h200.cuda_corpus.pickled", "one",
                str(pkl.resolve())]
        print(f"=== {name}", flush=True)
        run = examples.call(argv, 240, case_dir / "run.log")
        case = {"case": name, "kernel": kernel, "sets": record["sets"],
                "run": {"rc": run["rc"], "wall_s": run["wall_s"], "stderr": run["stderr"],
                        "result": examples.json_of(run["stdout"])}}
        if run["rc"] != 0:
            case["ncu"] = {"error": "not profiled: the run failed"}
        elif ncu:
            report = case_dir / "profile"
            prof = examples.call(
                [ncu, "--clock-control", "none", "--cache-control", "all",
                 "--target-processes", "all", "--kernel-name-base", "function",
                 "--kernel-name", f"regex:^{kernel}$", "--launch-count", "1", "--metrics",
                 ",".join(examples.METRICS), "--export", str(report), "--force-overwrite",
                 *argv], 300, case_dir / "ncu.log")
            case["ncu"] = {"rc": prof["rc"], "wall_s": prof["wall_s"]}
            rep = report.with_suffix(".ncu-rep")
            if rep.exists():
                page = examples.call([ncu, "--import", str(rep), "--page", "raw", "--csv",
                                      "--print-units", "base"], 120, case_dir / "ncu-import.log")
                (case_dir / "ncu-raw.csv").write_text(page["stdout"])
                case["ncu"]["metrics"], case["ncu"]["error"] = examples.ncu_metrics(
                    page["stdout"], kernel)
            else:
                case["ncu"]["error"] = "no report: " + (prof["stdout"] + prof["stderr"])[-600:]
        else:
            case["ncu"] = {"error": "ncu not found"}
        if ncu and run["rc"] == 0 and name in shared:
            case["shared"] = shared_pass(ncu, argv, kernel, metrics, case_dir)
        results.append(case)
        (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
        print(examples.run_summary(case["run"]["result"], run["rc"]),
              case["ncu"].get("error") or "", flush=True)
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["prepare"] and len(argv) == 2:
        prepare(Path(argv[1]))
        return 0
    if argv[:1] == ["one"] and len(argv) == 2:
        return run_one(Path(argv[1]))
    if argv[:1] == ["device"] and len(argv) in (3, 4):
        return device(Path(argv[1]), Path(argv[2]), *(float(a) for a in argv[3:]))
    print("\n".join(line for line in __doc__.splitlines() if "pickled " in line),
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
