"""Record the golden outputs of the ``tiletraffic`` command line (``tests/golden/*.json``).

    PYTHONPATH=. python tests/golden/record.py            # every file
    PYTHONPATH=. python tests/golden/record.py simulate   # only the files named

Each case is one command line run in-process through click's ``CliRunner``; a golden file
maps a case id (``COMMAND/SCHEDULE@SIZE``) to its argv, exit status, stdout (parsed when it
is JSON) and stderr. ``tests/test_golden_outputs.py`` re-runs every case and compares.

The cases: ``simulate``, ``model`` on two device models (nvidia-h200, generic-gpu) and
``check`` with ``--json`` for every built-in family, correct demo and faulty variant
(``tiletraffic.simulator.kernels.variants.names()``) at two small sizes (its example shape and the
second shape of :data:`SECOND_SIZES`), ``check --all``; ``crosscheck --all --json`` (every
name at its example shape only: Oclgrind takes about a second per kernel; Oclgrind's messages
left out, their order varies); and the tuner's
ranking of the built-in GEMM space at M = N = K = 64 (model only, ``--top 0``; the fields that
name the time, the command or the machine are left out).
"""
from __future__ import annotations

import json
import math
import re
import sys
import tempfile
from pathlib import Path

from click.testing import CliRunner

GOLDEN_DIR = Path(__file__).resolve().parent

SEED = "1"
"""Seed of the random inputs of every simulate and check case."""

SECOND_SIZES: dict[str, tuple] = {
    "gemm-naive": (33, 17, 9, 8), "gemm-tiled": (33, 17, 9, 8),
    "matvec-naive": (70, 45, None, 32), "matvec-local": (70, 45, None, 32),
    "matvec-local-whole": (70, 45, None, 32), "matvec-relu": (70, 45, None, 32),
    "gemm-register-blocked": (40, 48, 36, 8), "gemm-vectorized": (40, 48, 36, 8),
    "gemm-prefetch": (40, 48, 36, 8), "gemm-warp-tiled": (40, 48, 36, 8),
    "gemm-split-k": (40, 112, 36, 8),
    "matvec-rows-reduce": (20, 70, None, 16),
    "demo-shift": (48, None, None, None), "demo-column-staging": (12, 6, 10, 4),
    "demo-reduction": (100, None, None, 16), "demo-neighbour": (40, None, None, 8),
    "gemm-tiled:no-second-barrier": (33, 17, 9, 8), "gemm-tiled:no-first-barrier": (33, 17, 9, 8),
    "gemm-tiled:early-return": (33, 17, 9, 8), "gemm-tiled:no-guards": (33, 17, 9, 8),
    "gemm-tiled:floor-grid": (33, 17, 9, 8),
    "matvec-local-whole:fixed-256": (100, 400, None, 128),
    "matvec-local-whole:unguarded-copy": (64, 16, None, 64),
    "demo-shift:no-barrier": (48, None, None, None),
    "demo-column-staging:no-end-barrier": (12, 6, 10, 4),
    "demo-reduction:in-place": (100, None, None, 16),
    "demo-neighbour:local-fence": (40, None, None, 8),
    "gemm-vectorized:unaligned-rows": (12, 6, 4, 2),
    "gemm-naive:zeros-in-launch-5": (33, 17, 9, 8),
    "gemm-naive:accumulate-into-output": (33, 17, 9, 8),
}
"""The second small shape (m, k, n, tile; None: not given) of every name."""

DEVICE_MODELS = ("nvidia-h200", "generic-gpu")

TUNE_SIZE = 64

TUNE_LEFT_OUT = {"meta": ("created_utc", "command", "tiletraffic", "space", "seed"),
                 "predictions": ("model_s",)}
"""Fields of the tuner's results that name the time, the machine or the command."""


def example_size(name: str) -> tuple:
    """The example shape (m, k, n, tile) of ``name``, with the sizes its builder does not
    take as None (the demos sized by M alone, or by M and the work-group size)."""
    from tiletraffic.simulator.kernels.variants import CHECK_EXAMPLES, VARIANTS

    m, k, n, tile = VARIANTS[name].example if name in VARIANTS else CHECK_EXAMPLES[name]
    if name.startswith("demo-shift"):
        return (m, None, None, None)
    if name.split(":")[0] in ("demo-reduction", "demo-neighbour"):
        return (m, None, None, tile)
    return (m, k, n, tile)


def size_args(size: tuple) -> list[str]:
    return [arg for flag, v in zip(("--m", "--k", "--n", "--tile"), size) if v is not None
            for arg in (flag, str(v))]


def sized_cases() -> dict[str, list[str]]:
    """Case id -> argv of every simulate, model and check case."""
    from tiletraffic.simulator.kernels.variants import names

    cases: dict[str, list[str]] = {}
    for name in names():
        for label, size in (("example", example_size(name)), ("second", SECOND_SIZES[name])):
            sizes = size_args(size)
            cases[f"simulate/{name}@{label}"] = ["simulate", name, *sizes, "--seed", SEED,
                                                 "--json"]
            for model in DEVICE_MODELS:
                cases[f"model-{model}/{name}@{label}"] = [
                    "model", name, *sizes, "--device-model", model, "--json"]
            cases[f"check/{name}@{label}"] = ["check", name, *sizes, "--seed", SEED, "--json"]
    cases["check/--all"] = ["check", "--all", "--seed", SEED, "--json"]
    return cases


def golden_file(case_id: str) -> str:
    """The golden file (stem) a case is kept in: its command (``model-<device model>``)."""
    return case_id.split("/", 1)[0]


def invoke(argv: list[str]) -> dict:
    """Run ``tiletraffic ARGV`` in-process: its exit status, stdout (parsed when JSON) and
    stderr."""
    from tiletraffic.analysis.cli import main

    result = CliRunner().invoke(main, argv, prog_name="tiletraffic", catch_exceptions=False)
    try:
        stdout = json.loads(result.stdout)
    except ValueError:
        stdout = result.stdout
    return {"argv": argv, "exit_code": result.exit_code, "stdout": stdout,
            "stderr": result.stderr}


CROSSCHECK_ARGV = ["crosscheck", "--all", "--json"]

CROSSCHECK_LEFT_OUT = ("oclgrind_details",)
"""Oclgrind's own messages: which work-items it names, and in what order, varies from run to
run (it runs work-groups on several threads); the hazard kinds it found are kept."""


def crosscheck_outcome(result: dict) -> dict:
    """``crosscheck --all --json``'s record without :data:`CROSSCHECK_LEFT_OUT`."""
    stdout = result["stdout"]
    if isinstance(stdout, list):
        stdout = [{k: v for k, v in r.items() if k not in CROSSCHECK_LEFT_OUT}
                  for r in stdout]
    return {**result, "stdout": stdout}


def tune_argv(out: str) -> list[str]:
    return ["tune", "gemm", "--m", str(TUNE_SIZE), "--n", str(TUNE_SIZE), "--k",
            str(TUNE_SIZE), "--top", "0", "--out", out, "--json"]


def tune_ranking(result: dict) -> dict:
    """The tuner's run without the fields of :data:`TUNE_LEFT_OUT` (and its log lines)."""
    doc = dict(result["stdout"])
    doc["meta"] = {k: v for k, v in doc["meta"].items() if k not in TUNE_LEFT_OUT["meta"]}
    doc["predictions"] = [{k: v for k, v in p.items() if k not in TUNE_LEFT_OUT["predictions"]}
                          for p in doc["predictions"]]
    return {"argv": result["argv"][:-3] + ["--json"], "exit_code": result["exit_code"],
            "stdout": doc}


def run_tune() -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        return tune_ranking(invoke(tune_argv(str(Path(tmp) / "tune.json"))))


PROCESS_WORDS = re.compile(r"\s*\(?\b(?:issue #\d+|[Rr]ounds? \d+(?:\s*[-–]\s*\d+)?)\)?")
"""Words about the project's history (issue and round numbers), which may leave the output
without a change of behaviour: the comparison removes them from both sides."""


def normalized(value):
    """``value`` (parsed JSON) with :data:`PROCESS_WORDS` removed from every string."""
    if isinstance(value, str):
        return PROCESS_WORDS.sub("", value)
    if isinstance(value, list):
        return [normalized(v) for v in value]
    if isinstance(value, dict):
        return {k: normalized(v) for k, v in value.items()}
    return value


REL_TOL = 1e-9
"""Floats equal to this relative tolerance: the same float64 arithmetic, whose last bits may
depend on numpy's SIMD code paths (a reduction's order) on another machine."""

RESULT_REL_TOL = 1e-6
"""The result checks' error / tolerance: the error of a float32 result against a float64
reference is ~1e-7 of the values, and the reference's last bits (BLAS) move it by ~1e-9."""


def differences(expected, actual, path: str = "") -> list[str]:
    """Where ``actual`` differs from ``expected`` (after :func:`normalized`): ints, strings
    and structure exactly, floats to :data:`REL_TOL` (:data:`RESULT_REL_TOL` under a
    ``result_*`` key)."""
    if isinstance(expected, float) and isinstance(actual, (int, float)) and \
            not isinstance(actual, bool):
        tol = RESULT_REL_TOL if "result_" in path else REL_TOL
        if math.isclose(expected, actual, rel_tol=tol, abs_tol=1e-300) or \
                (math.isnan(expected) and math.isnan(actual)):
            return []
        return [f"{path}: {actual!r} != golden {expected!r}"]
    if isinstance(expected, dict) and isinstance(actual, dict):
        out = [f"{path}/{k}: missing" for k in expected if k not in actual]
        out += [f"{path}/{k}: not in the golden output" for k in actual if k not in expected]
        for k in expected:
            if k in actual:
                out += differences(expected[k], actual[k], f"{path}/{k}")
        return out
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return [f"{path}: {len(actual)} items != golden {len(expected)}"]
        return [d for i, (e, a) in enumerate(zip(expected, actual))
                for d in differences(e, a, f"{path}[{i}]")]
    if expected != actual or type(expected) is not type(actual):
        return [f"{path}: {str(actual)[:300]!r} != golden {str(expected)[:300]!r}"]
    return []


def load(stem: str) -> dict:
    return json.loads((GOLDEN_DIR / f"{stem}.json").read_text())


def write(stem: str, doc: dict) -> None:
    path = GOLDEN_DIR / f"{stem}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
    tmp.replace(path)
    print(f"wrote {path.relative_to(GOLDEN_DIR.parent.parent)} ({len(doc)} cases)")


STEMS = ("simulate", *(f"model-{m}" for m in DEVICE_MODELS), "check", "crosscheck", "tune")


def record(stems=STEMS) -> None:
    unknown = set(stems) - set(STEMS)
    if unknown:
        sys.exit(f"unknown golden file(s) {sorted(unknown)}; choose from {', '.join(STEMS)}")
    files: dict[str, dict] = {}
    for case_id, argv in sized_cases().items():
        if golden_file(case_id) in stems:
            files.setdefault(golden_file(case_id), {})[case_id] = invoke(argv)
    if "crosscheck" in stems:
        files["crosscheck"] = {"crosscheck/--all": crosscheck_outcome(invoke(CROSSCHECK_ARGV))}
    if "tune" in stems:
        files["tune"] = {f"tune/gemm@{TUNE_SIZE}": run_tune()}
    for stem, doc in files.items():
        write(stem, doc)


if __name__ == "__main__":
    record(sys.argv[1:] or STEMS)
