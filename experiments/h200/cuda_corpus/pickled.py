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
    python -m experiments.h200.cuda_corpus.pickled device DIR OUT       # there: every case

``device`` writes OUT/results.json in the format of the examples' driver (for
``python -m experiments.h200.cuda_examples.compare``) and OUT/<case>/ (run.log, ncu.log,
ncu-raw.csv, profile.ncu-rep).
"""
from __future__ import annotations

import json
import pickle
import subprocess
import sys
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


def prepare(folder: Path) -> None:
    """Read every case's schedule here and pickle it into ``folder``/<case>.pkl."""
    from tiletraffic.frontend.launch_file import load
    folder.mkdir(parents=True, exist_ok=True)
    for name, launch, sets, inputs in cases():
        try:
            schedule = load(str(launch.relative_to(REPO)), overrides=dict(sets) or None)
        except Exception as err:      # the front end's refusal: recorded, not pickled
            print(f"{name}: not read: {str(err).splitlines()[0]}")
            continue
        record = {"case": name, "launch": str(launch.relative_to(REPO)), "sets": sets,
                  "repo": str(REPO),
                  "inputs": inputs, "kernel": schedule.extra["cuda"]["kernel"],
                  "schedule": schedule}
        (folder / f"{name}.pkl").write_bytes(pickle.dumps(record))
        print(f"{name}: {schedule.family} pickled")


def run_one(path: Path) -> int:
    """Launch one pickled case as ``tiletraffic run --json`` would; its JSON on stdout."""
    import numpy as np

    from tiletraffic.frontend.launch_file import reference_function
    from tiletraffic.gpu.runtime.cuda_run import run_cuda_source
    record = pickle.loads(path.read_bytes())
    cuda = record["schedule"].extra["cuda"]
    here, there = str(REPO), record.get("repo", str(REPO))
    cuda["device_headers"] = {     # the headers' paths as this checkout has them
        (here + name[len(there):] if name.startswith(there + "/") else name): text
        for name, text in (cuda.get("device_headers") or {}).items()}
    try:
        result = run_cuda_source(record["schedule"], repeat=10, warmup=1,
                                 rng=np.random.default_rng(),
                                 reference_fn=reference_function(record["launch"]),
                                 inputs=record["inputs"])
    except Exception as err:          # NVRTC, the launch, the check: one line, exit 1
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(json.dumps(result.to_dict(), indent=1))
    return 0


def device(folder: Path, out: Path) -> int:
    """Run and profile every pickled case of ``folder``; OUT/results.json and per case."""
    ncu = examples.find_ncu()
    results = []
    for pkl in sorted(folder.glob("*.pkl")):
        record = pickle.loads(pkl.read_bytes())
        name, kernel = record["case"], record["kernel"]
        case_dir = out / name
        case_dir.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-m", "experiments.h200.cuda_corpus.pickled", "one", str(pkl)]
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
    if argv[:1] == ["device"] and len(argv) == 3:
        return device(Path(argv[1]), Path(argv[2]))
    print(__doc__.strip().splitlines()[-8], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
