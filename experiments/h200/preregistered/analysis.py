"""The section of the H200 ``validation.md`` on issue #13's ladder and tuner and issue #14's
pre-registered calibrated test, from committed data only (rendered by
:mod:`experiments.h200.render`)."""
from __future__ import annotations

from pathlib import Path


def section(directory: Path) -> list[str]:
    """Markdown lines, or none where the pre-registered run is not in ``directory``."""
    from experiments.h200.ladder.tuned_table import markdown as ladder_markdown
    from experiments.h200.ladder.tuned_table import rows as ladder_rows

    from experiments.h200.preregistered.compare_generic import markdown, summaries

    folder = directory / "preregistered"
    if not (folder / "validate" / "validation.json").exists():
        return []
    return [
        "## Advanced schedules, the tuner, and a pre-registered calibrated test", "",
        "The H200 was calibrated by `tiletraffic calibrate` (microbenchmarks only), the "
        "model's predictions of 22 cases (every family, GEMM 1024/4096, matvec 4096/8192) "
        "were committed, then measured by `tiletraffic validate --predictions` "
        "(`preregistered/validate/validation.md`: every case, the figure; "
        "`experiments/h200/preregistered/findings.md`: what it showed). Against the validation "
        "targets, with the default calibration (unmeasured values from the built-in H200 "
        "model) and with one completing `generic-gpu`:", "",
        markdown(summaries(folder)), "",
        "### The GEMM ladder with its tuned step", "",
        "Each step's median (OpenCL events, every result checked against float64), TFLOP/s, "
        "% of cuBLAS FP32 (TF32 off) timed in the same device call, and for the tuned rows "
        "the calibrated model's prediction (`tiletraffic tune gemm`: 213 candidates ranked, "
        "the top 8 measured). The ladder's own rows come from the earlier ladder run "
        "(`experiments/h200/ladder/findings.md` has its predictions, made by an earlier "
        "model); Nsight counters of its CUDA build: `experiments/h200/ladder/"
        "counters_findings.md` (global requests and sectors exact, 40 of 40) and "
        "`local_findings.md`.", "",
        ladder_markdown(ladder_rows(directory)).replace("### N = ", "#### N = "), ""]
