"""The pre-registered H200 measurement against the second pre-registered model: the
calibration completing ``generic-gpu`` (``calibrate --base generic-gpu``: a model that owes
nothing to earlier measurements of the H200), whose predictions
(``predictions-generic.json``) were committed with the first ones, before the device call.
Same measurements (``validate/validation.json``), same comparison
(:func:`tiletraffic.analysis.validation.results.summary_of`).

    python -m experiments.h200.preregistered.compare_generic reports/nvidia-h200/preregistered
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from tiletraffic.analysis.validation.results import summary_of


def summaries(folder: Path) -> dict[str, object]:
    """Model name -> :class:`analysis.validation.compare.Summary` of the committed measurements."""
    data = json.loads((folder / "validate" / "validation.json").read_text())
    out = {"calibrated (base nvidia-h200)": summary_of(data)}
    generic = json.loads((folder / "predictions-generic.json").read_text())
    if [c for c in generic["cases"]] != data["cases"]:
        raise SystemExit("predictions-generic.json names other cases than the measurement")
    out["calibrated (base generic-gpu)"] = summary_of({**data,
                                                       "predictions": generic["predictions"]})
    return out


def markdown(sums: dict[str, object]) -> str:
    lines = ["| model | " + " | ".join(t.name for t in next(iter(sums.values())).targets) + " |",
             "|---|" + "---|" * len(next(iter(sums.values())).targets)]
    for name, s in sums.items():
        lines.append(f"| {name} | " + " | ".join(
            f"{t.figure} ({'met' if t.met else 'not met'})" for t in s.targets) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder", type=Path)
    a = p.parse_args(argv)
    print(markdown(summaries(a.folder)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
