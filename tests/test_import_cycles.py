"""The installed package has no import cycles: every import of every module (top-level and
inside functions, and ``importlib.import_module`` of a literal name) is an edge, and the
graph of the package's modules has no strongly connected component of two or more."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"simulator": "tiletraffic.simulator", "gpu": "tiletraffic.gpu",
            "analysis": "tiletraffic.analysis", "frontend": "tiletraffic.frontend",
            "tiletraffic": "tiletraffic"}
"""Folder -> installed name (pyproject.toml's package-dir)."""


def modules() -> dict[str, Path]:
    found = {}
    for folder, package in PACKAGES.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = [p for p in path.relative_to(ROOT / folder).with_suffix("").parts
                     if p != "__init__"]
            found[".".join([package, *parts])] = path
    return found


def _absolute(name: str, module: str, level: int, is_package: bool) -> str:
    if not level:
        return name
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def imports(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package's modules that ``module`` imports (the closest known parent of each
    name; a module's own parent packages excluded: importing them is not a cycle)."""
    is_package = path.name == "__init__.py"
    targets: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node.module or "", module, node.level, is_package)
            targets += [base] + [f"{base}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(
                node.func, "id", None)) == "import_module" and node.args and \
                isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            name = node.args[0].value
            level = len(name) - len(name.lstrip("."))
            targets.append(_absolute(name.lstrip("."), module, level, is_package))
    out = set()
    for target in targets:
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != module and not module.startswith(target + "."):
            out.add(target)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of two or more modules (Tarjan's algorithm,
    iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_walk_sees_function_level_and_hidden_imports(tmp_path):
    a = tmp_path / "a.py"
    a.write_text("def f():\n    from . import b\n")
    b = tmp_path / "b.py"
    b.write_text("from importlib import import_module\nimport_module('.a', __package__)\n")
    known = {"p.a": a, "p.b": b}
    graph = {m: imports(m, p, known) for m, p in known.items()}
    assert graph == {"p.a": {"p.b"}, "p.b": {"p.a"}}
    assert cycles(graph) == [["p.a", "p.b"]]


def test_the_installed_package_has_no_import_cycles():
    known = modules()
    assert "tiletraffic.simulator.engine.machine" in known and "tiletraffic.analysis.cli" in known
    graph = {m: imports(m, p, known) for m, p in known.items()}
    assert cycles(graph) == []
