"""Rewrite the verdict and check columns of this folder's README.md table from what
tiletraffic does with each launch file now: read (``accepted``) or refused (``refused: `` and
the message after its ``file:line:column``), and for an accepted kernel ``check``'s verdict
(``clean`` or the hazard kinds found); and the sentence stating how many are accepted. The
other columns and the text around the table are kept. Run from the repository root after a
change of the front end:

    python tests/corpora/opencl/update_readme.py

then read the diff: every changed row is a kernel now read, or refused, differently.
"""
from __future__ import annotations

import re
import sys
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
README = HERE / "README.md"
ACCEPTED = re.compile(r"\d+ of \d+ kernels are accepted unchanged")


def verdict(kernel: str) -> tuple[str, str]:
    """(verdict, check) of the launch file ``kernel`` (its path below this folder, without
    ``.toml``)."""
    import tiletraffic as tt
    from tiletraffic.frontend import launch_file
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            schedule = launch_file.load(HERE / f"{kernel}.toml")
            kinds = sorted({h.kind for h in tt.check(schedule, seed=3)})
        return "accepted", ", ".join(kinds) or "clean"
    except Exception as err:      # the refusal is the verdict
        message = " ".join(str(err).replace(f"{HERE}/", "").split())
        message = re.split(r":\d+:\d+: ", message)[-1]
        return f"refused: {message.replace('|', '/')}", "-"


def main() -> int:
    lines = README.read_text().split("\n")
    accepted = total = 0
    for n, line in enumerate(lines):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 6 or "/" not in cells[0] or cells[0].startswith("-"):
            continue
        cells[4], cells[5] = verdict(cells[0].strip("`"))
        lines[n] = "| " + " | ".join(cells) + " |"
        total += 1
        accepted += cells[4] == "accepted"
    text = ACCEPTED.sub(f"{accepted} of {total} kernels are accepted unchanged", "\n".join(lines))
    README.write_text(text)
    print(f"{accepted} of {total} kernels accepted ({100 * accepted / max(total, 1):.0f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
