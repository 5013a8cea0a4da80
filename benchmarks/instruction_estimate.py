"""The instruction estimator's error against the build's counts, per family (no GPU).

For every GEMM and matrix-vector family at its default configuration (and a few other
configurations), at M = K = N = 1024: the launch's sub-group instructions

* as the build gives them: NVRTC's machine code for sm_90 of the generated OpenCL C behind
  the CUDA prelude, counted by ``tiletraffic.gpu.instructions`` and turned into the launch's
  count by ``simulator.model.instructions.issued_from_build`` (the hot loop's iterations
  from the simulated FMAs);
* as the model counts them without a build (``issued_instructions``: FMAs, requests,
  barriers; the ``nvidia-h200-cuda`` model, whose local loads are the CUDA build's);
* as the estimator gives them (``simulator.model.instruction_estimate``: that count plus the
  estimated integer, move and branch instructions);

and each one's error against the build. Prints a Markdown table (the one in
docs/model-limits.md). Needs ``pip install 'tiletraffic[cuda-tools]'``.

    python -m benchmarks.instruction_estimate
"""
from __future__ import annotations

import statistics
import warnings

import tiletraffic as tt
from tiletraffic.gpu.instructions.build import build_instructions, tools_problem
from tiletraffic.simulator.ir.sequence import kernels_of
from tiletraffic.simulator.model.device_model import device_model
from tiletraffic.simulator.model.instruction_estimate import estimated_instructions
from tiletraffic.simulator.model.instructions import issued_from_build
from tiletraffic.simulator.model.prediction import issued_instructions

SIZE = 1024
MODEL = "nvidia-h200-cuda"
"""The device model whose memory observers count the CUDA build's local loads (128-bit
where that compiler merges them), as the build counted here is the CUDA one."""
OTHERS = (("gemm-warp-tiled", {"tm": 8, "tn": 4}),
          ("gemm-vectorized", {"tm": 8, "tn": 8}),
          ("gemm-prefetch", {"bk": 8, "tm": 8, "tn": 8}),
          ("gemm-tiled", {"tile": 32}))
"""Configurations beside the defaults."""


def cases() -> list[tuple[str, dict]]:
    return [(family, {}) for family in (*tt.FAMILIES, *tt.SEQUENCE_FAMILIES)] + list(OTHERS)


def build(family: str, options: dict):
    sizes = {"m": SIZE, "k": SIZE} if family.startswith("matvec") else \
        {"m": SIZE, "k": SIZE, "n": SIZE}
    return tt.build(family, **sizes, **options)


def row(family: str, options: dict, model) -> list[dict]:
    """One result per kernel of the family's launch."""
    out = []
    schedule = build(family, options)
    counts_file = build_instructions(schedule)
    for kernel in kernels_of(schedule):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            launch = tt.model(kernel, model)
        items = kernel.work_group_items
        sub_groups = -(-items // model.sub_group_size) * launch.counts.work_groups
        counted = issued_instructions(kernel, launch.counts, launch.memory, model)
        built = issued_from_build(counts_file.kernel(kernel.kernel_name), launch.counts.flop,
                                  items * launch.counts.work_groups, sub_groups)
        estimate = estimated_instructions(kernel, counted, sub_groups)
        label = family + "".join(f" {k}={v}" for k, v in options.items())
        out.append({"case": label if len(kernels_of(schedule)) == 1
                    else f"{label} ({kernel.kernel_name})",
                    "build": built, "counted": counted, "estimate": estimate})
    return out


def table(rows: list[dict]) -> str:
    """The Markdown table: per kernel the build's launch instructions and the errors of the
    model's count and of the estimator against them; the medians and worst last."""
    lines = ["| kernel | build: launch instructions | model's count | estimator |",
             "|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['case']} | {r['build']:.4g} | {r['counted'] / r['build'] - 1:+.1%} "
                     f"| {r['estimate'] / r['build'] - 1:+.1%} |")
    counted = [r["counted"] / r["build"] - 1 for r in rows]
    est = [r["estimate"] / r["build"] - 1 for r in rows]
    lines.append(f"| median \\|error\\| (worst) | | "
                 f"{statistics.median(map(abs, counted)):.1%} ({max(counted, key=abs):+.1%}) | "
                 f"{statistics.median(map(abs, est)):.1%} ({max(est, key=abs):+.1%}) |")
    return "\n".join(lines)


def main() -> int:
    problem = tools_problem(("nvrtc", "nvdisasm"))
    if problem:
        print(problem)
        return 2
    model = device_model(MODEL)
    rows = [r for family, options in cases() for r in row(family, options, model)]
    print(f"Launch instructions at {SIZE}³ (matvec: M = K = {SIZE}); build: "
          f"{build_instructions(build('gemm-tiled', {})).source}\n")
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
