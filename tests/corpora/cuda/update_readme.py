"""Rewrite the table of this folder's README.md from what tiletraffic does with each launch
file now: read (``accepted``) or refused (the message, its paths relative to ``launch/``),
and for an accepted kernel the check's verdict (``clean`` or the hazard kinds found). The
text above the table is kept. Run from the repository root after a change of the front end:

    python tests/corpora/cuda/update_readme.py

then read the diff: every changed row is a kernel now read, or refused, differently.
"""
from __future__ import annotations

import sys
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
LAUNCH = HERE / "launch"
README = HERE / "README.md"
LICENCES = {"deepspeed": "Apache-2.0", "cuda-kernels": "MIT", "bitexact": "MIT"}
"""Each origin folder's licence (its LICENSE file's, as SPDX names it)."""
HEADER = ("| kernel | origin | licence | source | reading | check |\n"
          "|---|---|---|---|---|---|\n")


def row(path: Path) -> str:
    import tiletraffic as tt
    from tiletraffic.frontend import launch_file
    from tiletraffic.frontend.launch_file import tomllib
    from tiletraffic.frontend.opencl.clang_ast import FrontendError

    data = tomllib.loads(path.read_text())
    source = (path.parent / data["source"]).resolve().relative_to(HERE)
    origin, inside = source.parts[0], Path(*source.parts[1:])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            schedule = tt.build(str(path))
            kinds = sorted({h.kind for h in tt.check(schedule, seed=3)})
        reading, check = "accepted", ", ".join(kinds) or "clean"
    except (FrontendError, launch_file.LaunchFileError) as err:
        message = " ".join(str(err).replace(f"{LAUNCH}/", "").split())
        reading, check = f"`{message}`", "—"
    return (f"| {path.stem} | {origin} | {LICENCES[origin]} | `{inside}:{data['kernel']}` | "
            f"{reading} | {check} |")


def main() -> int:
    text = README.read_text()
    head = text[:text.index(HEADER)] if HEADER in text else text.rstrip("\n") + "\n\n"
    rows = [row(p) for p in sorted(LAUNCH.glob("*.toml"))]
    README.write_text(head + HEADER + "\n".join(rows) + "\n")
    accepted = sum(" | accepted | " in r for r in rows)
    print(f"{accepted} of {len(rows)} kernels accepted ({100 * accepted / len(rows):.0f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
