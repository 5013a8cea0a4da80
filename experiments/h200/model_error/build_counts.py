"""The time model's error on every committed H200 measurement with the issue term from the
build's instruction counts, beside the model's own count (no GPU).

    python -m experiments.h200.model_error.build_counts [--cache DIR]

The cases, observations and device models of :mod:`.table` (35 warp-tiled kernels, round 8's
22 validation cases and 24 ladder steps, each with its compiled registers). Each case's
generated kernel is compiled by NVRTC for sm_90 behind the CUDA prelude and counted
(``tiletraffic.gpu.instructions``; needs the ``cuda-tools`` extra), then predicted twice:
with the simulator's count (today's default) and with the build's counts
(``predict(..., instructions=...)``). The timings were taken of the OpenCL driver's build,
whose instructions differ from the CUDA build's by a few percent
(``findings.md``: 1.065-1.121 against 1.074-1.177 times the model's count).

A third prediction takes the estimator's count without a build
(:func:`simulator.model.instruction_estimate.estimated_instructions`), given to ``predict``
as a one-loop :class:`KernelInstructions` whose one iteration is a sub-group's estimated
instructions.

Prints per group and device model the median and worst |predicted / measured - 1| of the
three.
"""
from __future__ import annotations

import argparse
import json
import statistics
import warnings
from pathlib import Path

from experiments.h200.model_error import cases as C
from experiments.h200.model_error.table import MODELS, _schedule, observation, source_digest


def build_counts(case: dict, cache: Path):
    """The build's :class:`KernelInstructions` of ``case``'s kernel (cached as JSON)."""
    from tiletraffic.gpu.instructions.build import build_instructions
    from tiletraffic.simulator.model.instructions import instructions_from_dict

    key = "-".join(str(case[k]) for k in ("family", "m", "k", "n", "tile")) + "-" + "-".join(
        f"{k}{v}" for k, v in sorted(case["options"].items()))
    path = cache / f"instructions-{key}.json"
    schedule = _schedule(case)
    if not path.exists():
        cache.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(build_instructions(schedule).to_dict()))
    return instructions_from_dict(json.loads(path.read_text())).kernel(schedule.kernel_name)


def estimated_counts(seen, model):
    """The estimator's launch instructions as a :class:`KernelInstructions` of one loop
    that runs once per sub-group."""
    from tiletraffic.simulator.model.instruction_estimate import estimated_instructions
    from tiletraffic.simulator.model.instructions import KernelInstructions, LoopInstructions
    from tiletraffic.simulator.model.prediction import issued_instructions

    schedule, counts = seen.schedule, seen.counts
    items = schedule.work_group_items
    sub_groups = -(-items // model.sub_group_size) * counts.work_groups
    total = estimated_instructions(schedule, issued_instructions(schedule, counts,
                                                                 seen.memory, model),
                                   sub_groups) / sub_groups
    fma = counts.flop / 2 / (items * counts.work_groups)
    loop = LoopInstructions("estimate", {"fma": fma, "other": total - fma})
    return KernelInstructions(schedule.kernel_name, dict(loop.instructions_per_iteration),
                              (loop,))


def rows(cases: list[dict], cache: Path) -> list[dict]:
    from tiletraffic.simulator.model.device_model import device_model
    from tiletraffic.simulator.model.prediction import predict

    digest = source_digest()
    loaded = [(name, device_model(spec)) for name, spec in MODELS]
    out = []
    for case in cases:
        counted = build_counts(case, cache)
        row = {"group": case["group"]}
        for name, model in loaded:
            seen = observation(case, model, cache, digest)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                plain = predict(seen, model, case["registers"]).predicted_time_s
                built = predict(seen, model, case["registers"],
                                instructions=counted).predicted_time_s
                estimated = predict(seen, model, case["registers"],
                                    instructions=estimated_counts(seen, model)).predicted_time_s
            row[name] = tuple(t / case["measured_s"] - 1 for t in (plain, built, estimated))
        out.append(row)
    return out


def markdown(table: list[dict]) -> str:
    lines = ["| group (cases) | model | simulator's count: median / worst | build's counts: "
             "median / worst | estimator: median / worst |", "|---|---|---|---|---|"]
    for group in dict.fromkeys(r["group"] for r in table):
        of = [r for r in table if r["group"] == group]
        for name, _ in MODELS:
            cells = []
            for i in (0, 1, 2):
                errors = [r[name][i] for r in of]
                cells.append(f"{100 * statistics.median(map(abs, errors)):.1f}% / "
                             f"{100 * max(errors, key=abs):+.1f}%")
            lines.append(f"| {group} ({len(of)}) | {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", type=Path, default=Path("/tmp/tiletraffic-model-error"))
    a = ap.parse_args(argv)
    print(markdown(rows(C.all_cases(), a.cache)), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
