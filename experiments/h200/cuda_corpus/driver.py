"""On the H200: kernels of the committed CUDA corpus (tests/corpora/cuda/) launched from their
own CUDA source through ``tiletraffic run`` (NVRTC through CuPy; checked against the
reference, timed), profiled by Nsight Compute around that same command and compared with
``tiletraffic model --device-model nvidia-h200-cuda``: the same steps, metrics and table as
:mod:`experiments.h200.cuda_examples.driver`, over :data:`CASES`.

    python -m experiments.h200.cuda_corpus.driver --out DIR [--case NAME ...] [--deadline-s 420]
    python -m experiments.h200.cuda_corpus.driver --predict FILE   # model only, no device

``--predict`` writes the model's counts of every case (the counts the device's are compared
with) as JSON, for committing before the device call.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from experiments.h200.cuda_examples import driver as examples

REPO = examples.REPO
LAUNCH = REPO / "tests" / "corpora" / "cuda" / "launch"

CASES = (
    # (launch file, sizes set for the run): the reduction and bitexact's matrix product at
    # sizes the GPU is busy with, the DeepSpeed kernels at their launch files' own sizes
    ("ck_gpu_reduction_sum_kernel", {"N": 1 << 22}),
    ("ds_column_sum_reduce", {}),
    ("ds_Transpose_Kernel", {}),
    ("ds_fused_add2_kernel", {}),
    ("ds_fused_add4_kernel", {}),
    ("ds_LayerNormBackward1", {}),
    ("ds_LayerNormBackward2", {}),
    ("ds_fused_bias_residual_layer_norm", {}),
    ("ds_softmax_backward_kernel_v2", {}),
    ("ds_transform_0213", {}),
    ("ds_fused_add3_kernel", {}),
    ("ds_softmax_backward_kernel", {}),
    ("ds_LayerNormBackward2_fused_add", {}),
    ("ds_LayerNormBackward1_fused_add", {}),
    ("ds_LayerNormBackward1_means", {}),
    ("ds_fused_bias_residual_layer_norm_vars", {}),
    ("bx_matmul_kernel", {"M": 1024, "N": 1024, "K": 1024}),   # register-tiled SGEMM
)
"""The cases: corpus kernels that the front end accepts and the check finds clean."""

RUN_OPTIONS = {name: ("--inputs", "ones") for name in (
    "ds_LayerNormBackward2", "ds_LayerNormBackward2_fused_add",
    "ds_LayerNormBackward1_means")}
"""Options of ``run`` a case needs: these take row variances and their reciprocal square
root, which random inputs make NaN (as the corpus tests run them)."""

PREDICTED_KEYS = tuple(k for k, _ in examples.COMPARED) + ("predicted_time_s",)


def predict(path: Path, names=None) -> dict:
    """The model's counts of every case (or those named), written to ``path`` as JSON."""
    out = {}
    for name, sets in CASES:
        if names and name not in names:
            continue
        done = subprocess.run(examples.model_argv(name, sets, launch_dir=LAUNCH),
                              capture_output=True, text=True, cwd=REPO, timeout=900)
        model = examples.json_of(done.stdout)
        out[name] = {"sets": sets, **({k: model.get(k) for k in PREDICTED_KEYS} if model else
                                      {"error": (done.stdout + done.stderr)[-600:]})}
        print(name, json.dumps(out[name]), flush=True)
        path.write_text(json.dumps(out, indent=1) + "\n")
    return out


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--predict"]:
        predict(Path(argv[1]), argv[2:])
        return 0
    return examples.main(argv, cases=CASES, launch_dir=LAUNCH,
                         module="experiments.h200.cuda_corpus.driver", run_options=RUN_OPTIONS)


if __name__ == "__main__":
    sys.exit(main())
