"""What users see speaks of the product only: the installed package's files, README.md,
docs/, every command's ``--help`` and what ``tiletraffic report --quick`` prints and writes
contain no issue numbers, round numbers of past measurements or files outside the
repository (the pattern of :data:`HISTORY`)."""
from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from tiletraffic.analysis.cli import main
from tiletraffic.gpu.devices.device import list_devices

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_FOLDERS = ("simulator", "gpu", "analysis", "frontend", "tiletraffic")
"""The installed package's folders (pyproject.toml's package-dir) scanned here."""
HISTORY = re.compile(r"issue #[0-9]|[Rr]ound [0-9]|rounds [0-9]|seeds/|[Ss]eeds?: (matrix|tiling)"
                     r"|tiling-and-shared-memory|commit [0-9a-f]{7}")
"""Issue numbers, measurement rounds, commit hashes of past runs, and the course texts that are
not in the repository."""
TEXT_SUFFIXES = {".py", ".toml", ".md", ".j2", ".cl", ".txt", ".yml", ".yaml", ".cfg"}


def hits(text: str, where: str) -> list[str]:
    return [f"{where}:{i}: {line.strip()[:120]}" for i, line in enumerate(text.splitlines(), 1)
            if HISTORY.search(line)]


def _files():
    for folder in PACKAGE_FOLDERS:
        yield from (p for p in sorted((ROOT / folder).rglob("*"))
                    if p.suffix in TEXT_SUFFIXES and "__pycache__" not in p.parts)
    yield ROOT / "README.md"
    if (ROOT / "docs").is_dir():
        yield from (p for p in sorted((ROOT / "docs").rglob("*")) if p.suffix in TEXT_SUFFIXES)
    if (ROOT / "mkdocs.yml").exists():
        yield ROOT / "mkdocs.yml"


def test_package_readme_and_docs_carry_no_project_history():
    found = [h for p in _files()
             for h in hits(p.read_text(encoding="utf-8", errors="replace"),
                           str(p.relative_to(ROOT)))]
    assert not found, "\n".join(found)


REPOSITORY_PATH = re.compile(r"\bexperiments[/.]|\bbenchmarks/|findings\.md"
                             r"|\breports/(nvidia|pocl)|\.ci/run")
"""Files of the repository that an installed package does not have: the measurement
studies, the benchmarks, the committed reports, the CI script."""


def _texts_of_code(path: Path):
    """(line, text) of every string (docstrings and messages) and comment of the Python file
    ``path``, by Python's own tokenizer; a template's lines."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".py":
        yield from enumerate(text.splitlines(), 1)
        return
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type in (tokenize.STRING, tokenize.COMMENT):
            yield tok.start[0], tok.string


def test_installed_code_names_no_repository_file():
    """Docstrings, comments, messages and templates of the installed package name no file
    of the repository outside it (a user of the installed package has none of them)."""
    found = [f"{p.relative_to(ROOT)}:{line}: {text.strip()[:100]}"
             for folder in PACKAGE_FOLDERS
             for p in sorted((ROOT / folder).rglob("*"))
             if p.suffix in (".py", ".j2") and "__pycache__" not in p.parts
             for line, text in _texts_of_code(p) if REPOSITORY_PATH.search(text)]
    assert not found, "\n".join(found)
    assert REPOSITORY_PATH.search("(``experiments/h200/strides/findings.md``)")


def _commands(group: click.Group, prefix: tuple[str, ...] = ()):
    yield prefix
    for name, cmd in sorted(group.commands.items()):
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, prefix + (name,))
        else:
            yield prefix + (name,)


def test_every_commands_help_carries_no_project_history():
    found, seen = [], 0
    for path in _commands(main):
        res = CliRunner().invoke(main, [*path, "--help"])
        assert res.exit_code == 0, (path, res.output)
        found += hits(res.output, "tiletraffic " + " ".join(path) + " --help")
        seen += 1
    assert seen >= 10, "every command was asked"
    assert not found, "\n".join(found)


@pytest.mark.skipif(not any(d.is_pocl for d in list_devices()), reason="PoCL is not installed")
def test_the_quick_report_prints_and_writes_no_project_history(two_quick_reports):
    # the command's output and report.md of its run, then every Markdown file in the
    # folder after a second run (validated, with history)
    r = two_quick_reports
    found = hits(r["cli_output"], "tiletraffic report --quick")
    found += hits(r["first_md"], "report.md of the first run")
    written = [p for p in r["root"].rglob("*.md")]
    assert written, "the report was written"
    for p in written:
        found += hits(p.read_text(encoding="utf-8"), str(p.relative_to(r["root"])))
    assert not found, "\n".join(found)
