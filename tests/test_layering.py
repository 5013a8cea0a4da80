"""The installed package keeps the stage order of docs/architecture.md, and its modules and
functions stay a screen or a few long.

Every import of every module counts, top-level and inside functions (the same edges as
tests/test_import_cycles.py). A module may import its own stage and the stages before it:

    ir < kernels < engine = observers < model < frontend = gpu < analysis < facade

and no module of the package imports the facade (``tiletraffic/__init__.py``)."""
from __future__ import annotations

import ast
from pathlib import Path

from test_import_cycles import imports, modules

ROOT = Path(__file__).resolve().parents[1]

STAGES = {
    "tiletraffic.simulator": 0,
    "tiletraffic.simulator.ir": 0,
    "tiletraffic.simulator.kernels": 1,
    "tiletraffic.simulator.engine": 2,
    "tiletraffic.simulator.observers": 2,
    "tiletraffic.simulator.model": 3,
    "tiletraffic.frontend": 4,
    "tiletraffic.gpu": 4,
    "tiletraffic.analysis": 5,
    "tiletraffic": 6,
}
"""Package prefix -> rank in the pipeline; the longest prefix of a module decides. The bare
``tiletraffic.simulator`` is the (empty) parent package of the simulator's stages."""

LONGEST_MODULE_LINES = 800
LONGEST_FUNCTION_LINES = 120


def stage_of(module: str) -> tuple[str, int]:
    """The stage (its package prefix) and rank of a module of the installed package."""
    best = max((p for p in STAGES if module == p or module.startswith(p + ".")), key=len)
    return best, STAGES[best]


def test_stage_of_reads_the_longest_prefix():
    assert stage_of("tiletraffic.simulator.ir.nodes") == ("tiletraffic.simulator.ir", 0)
    assert stage_of("tiletraffic.analysis.cli.tune") == ("tiletraffic.analysis", 5)
    assert stage_of("tiletraffic") == ("tiletraffic", 6)


def _edges():
    known = modules()
    for module, path in sorted(known.items()):
        for target in sorted(imports(module, path, known)):
            yield module, target


def test_every_module_belongs_to_a_stage():
    """A module directly under simulator/ (no stage folder) would escape the rule."""
    loose = [m for m in modules()
             if stage_of(m)[0] == "tiletraffic.simulator" and m != "tiletraffic.simulator"
             or stage_of(m)[0] == "tiletraffic" and m not in ("tiletraffic",
                                                               "tiletraffic.__main__")]
    assert not loose, f"modules outside every stage: {loose}"


def violations(edges) -> list[str]:
    """The edges ``(module, imported module)`` against the stage order, one line each."""
    against = []
    for module, target in edges:
        (src_stage, src_rank), (dst_stage, dst_rank) = stage_of(module), stage_of(target)
        if target == "tiletraffic" and module != "tiletraffic.__main__":
            against.append(f"{module} imports the facade")
        elif dst_rank > src_rank:
            against.append(f"{module} ({src_stage}) imports {target} ({dst_stage})")
    return against


def test_imports_follow_the_stage_order():
    against = violations(_edges())
    assert not against, "imports against the stage order:\n" + "\n".join(against)


def test_the_rule_catches_imports_against_the_order():
    """The check above can fail: an upward edge and an import of the facade are reported,
    edges down the order and within a stage are not."""
    assert violations([
        ("tiletraffic.simulator.ir.nodes", "tiletraffic.simulator.engine.machine"),
        ("tiletraffic.simulator.engine.machine", "tiletraffic.simulator.model.prediction"),
        ("tiletraffic.gpu.runtime.launch", "tiletraffic.analysis.files"),
        ("tiletraffic.analysis.cli.tune", "tiletraffic"),
    ]) == [
        "tiletraffic.simulator.ir.nodes (tiletraffic.simulator.ir) imports "
        "tiletraffic.simulator.engine.machine (tiletraffic.simulator.engine)",
        "tiletraffic.simulator.engine.machine (tiletraffic.simulator.engine) imports "
        "tiletraffic.simulator.model.prediction (tiletraffic.simulator.model)",
        "tiletraffic.gpu.runtime.launch (tiletraffic.gpu) imports "
        "tiletraffic.analysis.files (tiletraffic.analysis)",
        "tiletraffic.analysis.cli.tune imports the facade",
    ]
    assert violations([
        ("tiletraffic.simulator.engine.machine", "tiletraffic.simulator.observers.counters"),
        ("tiletraffic.simulator.observers.memory", "tiletraffic.simulator.engine.limits"),
        ("tiletraffic.gpu.codegen.generate", "tiletraffic.frontend.opencl.clang_ast"),
        ("tiletraffic", "tiletraffic.analysis.cli"),
    ]) == []


def _facade_imports(path: Path) -> list[int]:
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import) and any(a.name == "tiletraffic" for a in node.names):
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "tiletraffic":
            lines.append(node.lineno)
    return lines


def test_no_module_of_the_package_imports_the_facade():
    found = [f"{path.relative_to(ROOT)}:{line}"
             for folder in ("simulator", "gpu", "frontend", "analysis")
             for path in sorted((ROOT / folder).rglob("*.py"))
             for line in _facade_imports(path)]
    assert not found, f"the package imports its facade at {found}"


def _package_files():
    for folder in ("simulator", "gpu", "frontend", "analysis", "tiletraffic"):
        yield from sorted((ROOT / folder).rglob("*.py"))


def test_no_module_is_longer_than_the_limit():
    long = [f"{p.relative_to(ROOT)}: {n} lines" for p in _package_files()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > LONGEST_MODULE_LINES]
    assert not long, f"modules over {LONGEST_MODULE_LINES} lines: {long}"


def test_no_function_is_longer_than_the_limit():
    long = []
    for path in _package_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > LONGEST_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {n} lines")
    assert not long, f"functions over {LONGEST_FUNCTION_LINES} lines: {long}"


def test_every_stage_folder_is_a_package_listed_for_installation():
    """Each folder of a stage is installed (pyproject.toml's packages), so that the tree a
    reader sees is the package a user imports."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    for stage in STAGES:
        if stage == "tiletraffic":
            continue
        assert f'"{stage}"' in text, f"{stage} missing from pyproject.toml's packages"
