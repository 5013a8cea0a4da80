"""What ``pip install .`` (not editable) installs: every package folder of the source tree
is listed in pyproject.toml, and every package-data pattern matches a file, so a wheel
imports as the checkout does."""
from __future__ import annotations

from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[1]
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_package_folder_is_listed():
    listed = set(SETUPTOOLS["packages"])
    found = set()
    for name, folder in SETUPTOOLS["package-dir"].items():
        for init in (ROOT / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join([name, *parts]))
    assert found - listed == set(), "package folders pyproject.toml does not install"
    assert listed - found == set(), "listed packages without a folder"


def _folder(package: str) -> Path:
    """The source folder of ``package``: its longest prefix in package-dir, then the rest."""
    dirs = SETUPTOOLS["package-dir"]
    prefix = max((p for p in dirs if package == p or package.startswith(p + ".")), key=len)
    return ROOT / dirs[prefix] / Path(*package[len(prefix):].split(".")[1:])


def test_every_package_data_pattern_matches_a_file():
    for package, patterns in SETUPTOOLS["package-data"].items():
        for pattern in patterns:
            assert list(_folder(package).glob(pattern)), f"{package}: {pattern} matches nothing"
