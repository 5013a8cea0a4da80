"""The fifth device call of the CUDA corpus: :data:`CASES`, kernels whose every compared count
the model is expected to give exactly (the corpus's DeepSpeed kernels that equalled it
before, bitexact's register-tiled SGEMM and the examples' templated warp-tiled SGEMM), each
launched from its own CUDA source through ``run``'s function (:mod:`.pickled`), profiled by
Nsight Compute and compared with ``tiletraffic model --device-model nvidia-h200-cuda``.

    python -m experiments.h200.cuda_corpus.call5 predict [--to FILE] [CASE ...]  # here
    python -m experiments.h200.cuda_corpus.call5 prepare PK     # here: the saved schedules
    python -m experiments.h200.cuda_corpus.call5 table RESULTS_JSON [ENVIRONMENT_TXT]

``predict`` writes the model's counts to call5/predicted/model_nvidia-h200-cuda.json (or FILE;
committed before the call);
``table`` prints the markdown table of a device run's results.json against it, headed by the
card ``nvidia-smi -L`` named in ENVIRONMENT_TXT (else the one the runs name).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from experiments.h200.cuda_corpus import driver as corpus
from experiments.h200.cuda_corpus import pickled
from experiments.h200.cuda_examples import compare
from experiments.h200.cuda_examples import driver as examples

REPO = examples.REPO
HERE = Path(__file__).with_name("call5")
PREDICTED = HERE / "predicted" / "model_nvidia-h200-cuda.json"

CASES = (
    # (name, launch folder, sizes set for the run)
    ("sgemm_warp_tiled", examples.LAUNCH, {"M": 2048, "N": 2048, "K": 2048}),
    ("bx_matmul_kernel", corpus.LAUNCH, {"M": 1024, "N": 1024, "K": 1024}),
    ("ds_LayerNormBackward2", corpus.LAUNCH, {}),
    ("ds_LayerNormBackward2_fused_add", corpus.LAUNCH, {}),
    ("ds_Transpose_Kernel", corpus.LAUNCH, {}),
    ("ds_column_sum_reduce", corpus.LAUNCH, {}),
    ("ds_fused_add2_kernel", corpus.LAUNCH, {}),
    ("ds_fused_add3_kernel", corpus.LAUNCH, {}),
    ("ds_fused_add4_kernel", corpus.LAUNCH, {}),
    ("ds_fused_bias_residual_layer_norm", corpus.LAUNCH, {}),
    ("ds_fused_bias_residual_layer_norm_vars", corpus.LAUNCH, {}),
    ("ds_softmax_backward_kernel", corpus.LAUNCH, {}),
    ("ds_softmax_backward_kernel_v2", corpus.LAUNCH, {}),
)
"""The cases, in the order they are run (the SGEMMs first, so that a deadline cannot skip
them; the saved schedules' names sort the same way)."""


def inputs_of(name: str) -> str:
    """The ``--inputs`` of ``run`` a case needs (ones where random inputs give NaN)."""
    options = dict(zip(*[iter(corpus.RUN_OPTIONS.get(name, ("--inputs", "normal")))] * 2))
    return options["--inputs"]


def predict(path: Path = PREDICTED, names=()) -> dict:
    """The model's counts of every case (or of those named): the keys compared and the
    predicted time, written to ``path`` as JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, launch, sets in CASES:
        if names and name not in names:
            continue
        done = subprocess.run(examples.model_argv(name, sets, launch_dir=launch),
                              capture_output=True, text=True, cwd=REPO, timeout=1800)
        model = examples.json_of(done.stdout)
        out[name] = {"sets": sets, **({k: model.get(k) for k in corpus.PREDICTED_KEYS}
                                      if model else
                                      {"error": (done.stdout + done.stderr)[-600:]})}
        print(name, json.dumps(out[name]), flush=True)
        path.write_text(json.dumps(out, indent=1) + "\n")
    return out


def prepare(folder: Path) -> None:
    """Every case's schedule read here and saved into ``folder`` (:func:`pickled.prepare`)."""
    pickled.prepare(folder, [(name, launch / f"{name}.toml", sets, inputs_of(name))
                             for name, launch, sets in CASES])


def card_named(environment: Path | None) -> str | None:
    """The first card ``nvidia-smi -L`` named in an environment.txt ("GPU 0: NAME (UUID..)")."""
    if environment is None or not environment.exists():
        return None
    for line in environment.read_text().splitlines():
        if line.startswith("GPU ") and ": " in line:
            return line.split(": ", 1)[1].split(" (UUID")[0].strip()
    return None


SASS_ATTRIBUTED = {
    "local_load_wavefronts": "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "local_store_wavefronts": "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_st.sum"}
"""The second pass's shared-memory wavefronts charged to the kernel's own SASS instructions,
shown beside the L1 data pipe's (which also counts wavefronts no instruction is charged
with)."""


def ratio(measured, model) -> str:
    if measured is None:
        return "-"
    return "1 (equal)" if measured == model else f"{measured / model:.4f}" if model else "-"


def table(results: list[dict], predicted: dict, card: str | None = None) -> str:
    """One line per predicted case that ran and count: the model's count, Nsight Compute's
    (the compared metric of :data:`examples.COMPARED`; for shared-memory wavefronts also the
    SASS-attributed count of the second pass), and the predicted cases with no result."""
    results = [c for c in results if c["case"] in predicted]
    lines = [f"| kernel | sizes | run on {card or compare.card(results)} (check, median) | "
             "count | model | Nsight Compute | Nsight / model | Nsight, SASS-attributed | "
             "SASS / model |", "|---|---|---|---|---|---|---|---|---|"]
    equal = total = sass_equal = sass_total = 0
    for case in results:
        name = case["case"]
        sizes = ", ".join(f"{k}={v}" for k, v in case["sets"].items())
        run = examples.run_summary(case["run"].get("result"), case["run"].get("rc"))
        metrics = case["ncu"].get("metrics") or {}
        shared = (case.get("shared") or {}).get("metrics") or {}
        for key, metric in examples.COMPARED:
            model, ncu = predicted[name][key], metrics.get(metric)
            sass = shared.get(SASS_ATTRIBUTED[key]) if key in SASS_ATTRIBUTED else None
            lines.append(f"| {name} | {sizes} | {run} | {key} | {model} | {ncu} | "
                         f"{ratio(ncu, model)} | {'' if sass is None else sass} | "
                         f"{'' if sass is None else ratio(sass, model)} |")
            total += ncu is not None
            equal += ncu is not None and ncu == model
            sass_total += sass is not None
            sass_equal += sass is not None and sass == model
    missing = [n for n in predicted if n not in {c["case"] for c in results}]
    return ("\n".join(lines) + f"\n\nequal: {equal} of {total} measured counts "
            f"({len(results)} cases); shared-memory wavefronts charged to the kernels' SASS "
            f"instructions: {sass_equal} of {sass_total} equal\n"
            + (f"not run: {', '.join(missing)}\n" if missing else ""))


def main(argv: list[str]) -> int:
    if argv[:1] == ["predict"]:
        to = argv[2] if argv[1:2] == ["--to"] and len(argv) > 2 else None
        predict(Path(to) if to else PREDICTED, argv[3:] if to else argv[1:])
        return 0
    if argv[:1] == ["prepare"] and len(argv) == 2:
        prepare(Path(argv[1]))
        return 0
    if argv[:1] == ["table"] and len(argv) in (2, 3):
        results = json.loads(Path(argv[1]).read_text())
        print(table(results, json.loads(PREDICTED.read_text()),
                    card_named(Path(argv[2]) if len(argv) == 3 else None)), end="")
        return 0
    print("\n".join(line for line in __doc__.splitlines() if "call5 " in line),
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
