"""The installed package: one top-level name, a facade, and the dependency direction of
DESIGN.md (simulator imports neither gpu nor analysis; gpu only simulator's types; nothing
installed reads reports/ or imports experiments/)."""
from __future__ import annotations

import ast
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

import tiletraffic as tt

PACKAGE_DIRS = {"simulator": Path(tt.simulator.__file__).parent,
                "gpu": Path(tt.__file__).parent.parent / "gpu",
                "analysis": Path(tt.__file__).parent.parent / "analysis",
                "frontend": Path(tt.__file__).parent.parent / "frontend",
                "tiletraffic": Path(tt.__file__).parent}


def _imports(path: Path) -> set[str]:
    """Absolute module names imported by ``path`` (relative imports resolved)."""
    tree = ast.parse(path.read_text())
    sub = path.parent.name
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ["tiletraffic", sub][: 3 - node.level] if sub != "tiletraffic" else \
                    ["tiletraffic"]
                found.add(".".join(base + ([node.module] if node.module else [])))
            elif node.module:
                found.add(node.module)
    return found


def _modules(sub: str):
    return sorted(PACKAGE_DIRS[sub].glob("*.py"))


def test_only_tiletraffic_is_installed_at_top_level():
    dist = metadata.distribution("tiletraffic")
    top = (dist.read_text("top_level.txt") or "").split()
    assert top == ["tiletraffic"]
    assert dist.entry_points.select(group="console_scripts")["tiletraffic"].value == \
        "tiletraffic.analysis.cli:main"


def test_frontend_imports_the_simulator_ir_only():
    for path in _modules("frontend"):
        bad = {m for m in _imports(path)
               if m.startswith(("tiletraffic.gpu", "tiletraffic.analysis", "pyopencl",
                                "matplotlib", "gpu", "analysis"))}
        assert not bad, f"{path.name} imports {bad}"
    assert _modules("frontend")


def test_simulator_imports_neither_gpu_nor_analysis():
    for path in _modules("simulator"):
        bad = {m for m in _imports(path)
               if m.startswith(("tiletraffic.gpu", "tiletraffic.analysis", "pyopencl",
                                "matplotlib", "gpu", "analysis"))}
        assert not bad, f"{path.name} imports {bad}"


def test_gpu_imports_no_analysis():
    for path in _modules("gpu"):
        bad = {m for m in _imports(path)
               if m.startswith(("tiletraffic.analysis", "analysis", "matplotlib"))}
        assert not bad, f"{path.name} imports {bad}"


def _code_strings(path: Path) -> list[str]:
    """String constants of ``path`` outside docstrings (paths the code could open)."""
    tree = ast.parse(path.read_text())
    docstrings = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)
                  and isinstance(n.value, ast.Constant)}
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
            and isinstance(n.value, str) and id(n) not in docstrings]


def test_nothing_installed_reads_reports_or_imports_experiments():
    for sub in PACKAGE_DIRS:
        for path in _modules(sub):
            assert "experiments" not in {m.split(".")[0] for m in _imports(path)}, path
            paths = [s for s in _code_strings(path) if "reports/" in s or "experiments/" in s]
            assert not paths, f"{path.name} names {paths}"


def _run_python(code: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def test_importing_the_simulator_loads_no_opencl_or_matplotlib(tmp_path):
    res = _run_python("import sys, tiletraffic, tiletraffic.simulator.engine.simulation; "
                      "print(sorted(m for m in ('pyopencl', 'matplotlib', 'jinja2') "
                      "if m in sys.modules))", tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"


def test_a_users_analysis_py_and_gpu_folder_do_not_shadow_it(tmp_path):
    (tmp_path / "analysis.py").write_text("raise ImportError('the user module was imported')\n")
    (tmp_path / "gpu").mkdir()
    (tmp_path / "gpu" / "__init__.py").write_text("raise ImportError('user gpu/')\n")
    (tmp_path / "simulator.py").write_text("raise ImportError('user simulator.py')\n")
    res = _run_python("import tiletraffic as tt, tiletraffic.gpu.codegen.generate, "
                      "tiletraffic.analysis.cli; "
                      "print(tt.simulate(tt.build('gemm-naive', 8, 8, 8, 4), "
                      "compute_values=False).counts.global_load_elems)", tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == str(2 * 8 * 8 * 8)


def test_python_dash_m_runs_the_command_line(tmp_path):
    res = subprocess.run([sys.executable, "-m", "tiletraffic", "simulate", "gemm-tiled",
                          "--m", "20", "--n", "20", "--k", "20", "--json"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert '"global_load_elems": 1600' in res.stdout


def test_facade_functions_agree_with_the_closed_forms():
    rng = np.random.default_rng()
    m, k, n = (int(v) for v in rng.integers(17, 70, size=3))
    sch = tt.build("gemm-tiled", m, k, n, tile=8)
    res = tt.simulate(sch, {"A": rng.standard_normal((m, k), dtype=np.float32),
                            "B": rng.standard_normal((k, n), dtype=np.float32)})
    assert res.counts.to_dict() == tt.closed_form(sch)
    assert tt.check(sch) == []
    assert tt.model(sch, "generic-gpu").counts.to_dict() == tt.closed_form(sch)
    assert "__kernel" in tt.generate(sch).source
    broken = tt.build("gemm-tiled:no-second-barrier")
    assert {h.kind for h in tt.check(broken)} == {"data-race"}


def test_closed_form_of_a_schedule_without_hand_written_ones_is_derived():
    sch = tt.build("demo-shift")
    formula = tt.closed_form(sch)
    assert formula.source == "derived"
    assert formula == {key: value for key, value in
                       tt.simulate(sch, compute_values=False).counts.to_dict().items()
                       if key in formula}


def test_build_errors_name_the_value():
    with pytest.raises(tt.ScheduleError, match="-3"):
        tt.build("gemm-tiled", -3, 8, 8)
    with pytest.raises(tt.ScheduleError, match="needs its sizes: give m, k and n"):
        tt.build("gemm-naive", None, 8, 8)


def test_model_warnings_name_the_callers_line_once_per_line():
    # a user's script sees its own line in the model's warnings (guessed values, strided
    # requests), not a tiletraffic line, from the facade and from model_launch alike, and
    # Python's default filter shows them once per line however often the line runs
    import warnings

    from tiletraffic.simulator.model.device_model import GuessedValueWarning
    from tiletraffic.simulator.observers.strides import StridedRequestWarning
    from tiletraffic.simulator.model.launch import model_launch

    schedule = tt.build("matvec-naive", m=256, k=256)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for _ in range(3):
            tt.model(schedule)
        model_launch(schedule, tt.device_model("nvidia-h200"))
    assert {w.category for w in caught} == {GuessedValueWarning, StridedRequestWarning}
    assert {w.filename for w in caught} == {__file__}
    lines = sorted({w.lineno for w in caught})
    assert len(lines) == 2  # the facade's line and model_launch's line
    per_line = [[str(w.message) for w in caught if w.lineno == n] for n in lines]
    assert per_line[0] == per_line[1] and len(set(per_line[0])) == len(per_line[0])


def test_ambiguous_device_warning_is_in_the_facade_without_loading_pyopencl():
    code = ("import sys, tiletraffic as tt; assert 'pyopencl' not in sys.modules; "
            "w = tt.AmbiguousDeviceWarning; assert issubclass(w, RuntimeWarning); "
            "assert 'pyopencl' in sys.modules; "
            "from tiletraffic.gpu.devices.device import AmbiguousDeviceWarning as a; assert a is w")
    subprocess.run([sys.executable, "-c", code], check=True)
    with pytest.raises(AttributeError, match="no_such_name"):
        tt.no_such_name


def test_an_unknown_device_model_is_a_device_model_error_naming_the_built_in_ones():
    sch = tt.build("gemm-tiled", m=16, k=16, n=16, tile=8)
    with pytest.raises(tt.DeviceModelError) as err:
        tt.model(sch, "nosuch")
    assert str(err.value) == ('unknown device model "nosuch": neither a built-in model nor '
                              "a file; built-in: nvidia-h200, nvidia-h200-calibrated, nvidia-h200-cuda, "
                              "generic-gpu")
    assert isinstance(err.value, (KeyError, ValueError))   # what callers caught before
    with pytest.raises(tt.DeviceModelError, match="got a value of type int"):
        tt.model(sch, 3)


def test_dir_lists_the_public_names_only():
    names = dir(tt)
    assert "annotations" not in names and "simulator" not in names and "_Path" not in names
    assert {"build", "crosscheck", "devices", "report", "from_opencl", "tune_kernel",
            "__version__", "__doc__"} <= set(names)
    assert all(hasattr(tt, name) for name in tt.__all__)
