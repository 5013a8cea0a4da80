"""The CUDA examples' Nsight Compute counters (a device run's results.json, written by
:mod:`experiments.h200.cuda_examples.driver`) beside the model's counts committed before the
run (predicted/model_nvidia-h200-cuda.json), as a markdown table.

    python -m experiments.h200.cuda_examples.compare RESULTS_JSON [PREDICTED_JSON]
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from experiments.h200.cuda_examples.driver import COMPARED, run_summary

PREDICTED = Path(__file__).with_name("predicted") / "model_nvidia-h200-cuda.json"


def card(results: list[dict]) -> str:
    """The GPU the runs name (the first that ran), else "the GPU"."""
    for case in results:
        device = ((case.get("run") or {}).get("result") or {}).get("device")
        if device:
            return device
    return "the GPU"


def table(results: list[dict], predicted: dict) -> str:
    """One line per case and count: the model's count, Nsight Compute's, their ratio."""
    lines = [f"| kernel | sizes | run on {card(results)} (check, median) | count | model | "
             "Nsight Compute | Nsight / model |", "|---|---|---|---|---|---|---|"]
    equal = total = 0
    for case in results:
        name = case["case"]
        sizes = ", ".join(f"{k}={v}" for k, v in case["sets"].items())
        run = run_summary(case["run"].get("result"), case["run"].get("rc"))
        metrics = case["ncu"].get("metrics") or {}
        for key, metric in COMPARED:
            model, ncu = predicted[name][key], metrics.get(metric)
            ratio = ("-" if ncu is None else "1 (equal)" if ncu == model else
                     f"{ncu / model:.4f}" if model else "-")
            lines.append(f"| {name} | {sizes} | {run} | {key} | {model} | {ncu} | {ratio} |")
            if ncu is not None:
                total += 1
                equal += ncu == model
    return "\n".join(lines) + f"\n\nequal: {equal} of {total} measured counts\n"


def main(argv=None) -> int:
    args = (argv if argv is not None else sys.argv[1:])
    results = json.loads(Path(args[0]).read_text())
    predicted = json.loads(Path(args[1] if len(args) > 1 else PREDICTED).read_text())
    print(table(results, predicted), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
