"""The shared-memory counters of a corpus device run's second Nsight Compute pass
(``pickled device``: results.json, each case's ``shared`` metrics) beside the model's
shared-memory wavefronts committed before the run, as a markdown table: the L1 data pipe's
wavefronts and bank conflicts, their counterparts attributed to the kernel's SASS
instructions, and the warp-level shared-memory instructions counted both ways.

    python -m experiments.h200.cuda_corpus.shared_table RESULTS_JSON [PREDICTED_JSON]
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from experiments.h200.cuda_examples.compare import card

PREDICTED = Path(__file__).with_name("predicted") / "model_nvidia-h200-cuda.json"

COLUMNS = (
    # (heading, model key or None, Nsight Compute metric)
    ("model ld wavefronts", "local_load_wavefronts", None),
    ("L1 pipe ld wavefronts", None, "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"),
    ("SASS ld wavefronts", None, "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"),
    ("L1 pipe ld bank conflicts", None,
     "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"),
    ("model st wavefronts", "local_store_wavefronts", None),
    ("L1 pipe st wavefronts", None, "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"),
    ("SASS st wavefronts", None, "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_st.sum"),
    ("L1 pipe st bank conflicts", None,
     "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"),
    ("ld instructions (warp / SASS)", None,
     ("smsp__inst_executed_op_shared_ld.sum", "smsp__sass_inst_executed_op_shared_ld.sum")),
)
"""The table's columns after the kernel's name."""


def cell(case: dict, predicted: dict, key, metric) -> str:
    """One column's value of a case: the model's count, a metric, or two metrics ``a / b``."""
    if key:
        return str(predicted.get(case["case"], {}).get(key))
    metrics = (case.get("shared") or {}).get("metrics") or {}
    if isinstance(metric, tuple):
        return " / ".join(str(metrics.get(m)) for m in metric)
    return str(metrics.get(metric))


def table(results: list[dict], predicted: dict) -> str:
    """One line per case that has the second pass's metrics."""
    lines = [f"| kernel (on {card(results)}) | " + " | ".join(h for h, _, _ in COLUMNS) + " |",
             "|---|" + "---|" * len(COLUMNS)]
    for case in results:
        if (case.get("shared") or {}).get("metrics"):
            lines.append(f"| {case['case']} | " + " | ".join(
                cell(case, predicted, key, metric) for _, key, metric in COLUMNS) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if not args:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    results = json.loads(Path(args[0]).read_text())
    predicted = json.loads(Path(args[1] if len(args) > 1 else PREDICTED).read_text())
    print(table(results, predicted), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
