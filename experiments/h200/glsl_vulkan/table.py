"""The table of run.sh: the chapter's naive and tiled GEMM through Vulkan and through OpenCL.

    python3 -m experiments.h200.glsl_vulkan.table DIR

reads DIR/{vulkan,opencl}-{gemm_naive,gemm_tiled}-N.json (``tiletraffic run --json``; the
file name gives the API asked for) and prints a Markdown table: each run's API as it ran,
device, median kernel time (ms), GFLOP/s (2·N³ per launch), whether every checked launch
equalled the reference, and the tiled kernel's speedup over the naive one per API and size
beside the chapter's "typically 5-10x". The API a run used is read from its timing: only
Vulkan's timestamp queries (``timing`` = ``timestamps``) make a row "vulkan"; a run asked
for Vulkan that ran the OpenCL C translation instead is labelled so and left out of the
Vulkan speedup. A run that left no JSON is shown with the last line of its .err file.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

CHAPTER = "5-10x"
KERNELS = ("gemm_naive", "gemm_tiled")
APIS = ("vulkan", "opencl")
VULKAN_TIMING = "timestamps"
"""The ``timing`` of a run through Vulkan (timestamp queries); every other timing is OpenCL's."""


def _load(folder: Path, api: str, kernel: str, n: int) -> dict | str:
    """The run's JSON, or why there is none (the last line of its error output)."""
    path = folder / f"{api}-{kernel}-{n}.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        err = folder / f"{api}-{kernel}-{n}.err"
        lines = err.read_text().strip().splitlines() if err.exists() else []
        return lines[-1] if lines else "no output"


def sizes(folder: Path) -> list[int]:
    """The sizes N that have a file in ``folder``, ascending."""
    found = set()
    for p in folder.iterdir():
        m = re.fullmatch(r"(?:vulkan|opencl)-gemm_(?:naive|tiled)-(\d+)\.(?:json|err)", p.name)
        if m:
            found.add(int(m.group(1)))
    return sorted(found)


def api_used(run: dict) -> str:
    """The API a run's JSON says it used: ``vulkan`` for timestamp queries, else ``opencl``."""
    return "vulkan" if run.get("timing") == VULKAN_TIMING else "opencl"


def table(folder: Path) -> list[str]:
    """The Markdown lines."""
    lines = ["| API asked | API used (timing) | kernel | N | device | median ms | GFLOP/s | result |",
             "|---|---|---|---|---|---|---|---|"]
    medians = {}
    for n in sizes(folder):
        for api in APIS:
            for kernel in KERNELS:
                run = _load(folder, api, kernel, n)
                if isinstance(run, str):
                    lines.append(f"| {api} | - | {kernel} | {n} | - | - | - | {run} |")
                    continue
                used = api_used(run)
                ms = run["median_s"] * 1e3
                if used == api:
                    medians[(api, kernel, n)] = ms
                label = (f"{used} ({run['timing']})" if used == api else
                         f"{used} ({run['timing']}): OpenCL C translation, not {api}")
                ok = "equals the reference" if run["check"]["ok"] else "WRONG"
                lines.append(f"| {api} | {label} | {kernel} | {n} | "
                             f"{run['device_name']} | {ms:.3f} | "
                             f"{2 * n ** 3 / run['median_s'] / 1e9:.0f} | {ok} |")
    lines += ["", "| API | N | tiled speedup over naive | the chapter |", "|---|---|---|---|"]
    for n in sizes(folder):
        for api in APIS:
            naive, tiled = medians.get((api, "gemm_naive", n)), medians.get((api, "gemm_tiled", n))
            speedup = f"{naive / tiled:.2f}x" if naive and tiled else f"- (no {api} run of both)"
            lines.append(f"| {api} | {n} | {speedup} | {CHAPTER} |")
    return lines


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0]).is_dir():
        print("usage: python3 -m experiments.h200.glsl_vulkan.table DIR", file=sys.stderr)
        return 2
    print("\n".join(table(Path(argv[0]))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
