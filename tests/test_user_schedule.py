"""A user's own schedule, end to end (frontend.user_schedule and SCHEDULE = FILE.py:FUNCTION).

The tutorial's file (docs/tutorial.md) ``examples/rect_tile_gemm.py`` (work-group 16×8, K-tile 8) goes
through every command by path: simulate (counts equal the hand-derived closed forms, values
checked against the file's numpy reference), check, run (PoCL), model and crosscheck
(Oclgrind). Every way a user's file can be wrong gives exit 2 and a message naming the value.
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given

import tiletraffic as tt
from tiletraffic.frontend import user_schedule
from tiletraffic.analysis.cli import main
from tiletraffic.gpu.devices.device import list_devices
from tiletraffic.gpu.oclgrind.oclgrind import oclgrind_available
from tiletraffic.gpu.runtime.launch import ResultMismatchError, check_result
from tiletraffic.simulator.engine.data_inputs import random_inputs

from strategies import sizes

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "rect_tile_gemm.py"
SPEC = f"{EXAMPLE}:make_schedule"
TUTORIAL = user_schedule.load_module(EXAMPLE)
COUNT_KEYS = ("global_load_elems", "global_store_elems", "global_load_bytes",
              "global_store_bytes", "local_load_elems", "local_store_elems", "barriers", "flop",
              "work_groups", "global_load_elems_by_buffer", "global_store_elems_by_buffer",
              "global_load_elems_per_tile")
SHAPES = [(1, 1, 1), (8, 8, 16), (20, 20, 40), (33, 21, 17), (9, 17, 31), (64, 24, 48)]
"""Multiples of the 8×16 tile and of the K-tile 8, and non-multiples in every dimension."""

needs_pocl = pytest.mark.skipif(not any(d.is_pocl for d in list_devices()),
                                reason="no PoCL OpenCL device")
needs_oclgrind = pytest.mark.skipif(not oclgrind_available(), reason="no Oclgrind platform")


def invoke(*args: str):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=True)


def ok_json(*args: str):
    result = invoke(*args, "--json")
    assert result.exit_code == 0, (result.output, result.exception)
    return json.loads(result.output)


def usage_error(result, *needles: str) -> str:
    """Exit status 2, no traceback, every needle in the message."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    for needle in needles:
        assert needle in result.output, (needle, result.output)
    return result.output


def textbook(m: int, k: int, n: int) -> dict[str, int]:
    """The forms the tutorial states: loads of A and B with guards, barriers per work-group."""
    cd = lambda a, b: -(-a // b)  # noqa: E731
    return {"A": m * k * cd(n, 16), "B": k * n * cd(m, 8),
            "barriers_per_work_group": 2 * cd(k, 8), "work_groups": cd(n, 16) * cd(m, 8)}


def sizes_args(m, k, n):
    return ("--m", m, "--k", k, "--n", n)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# ------------------------------------------------------------------ the tutorial's file
@pytest.mark.parametrize("m,k,n", SHAPES)
def test_simulate_by_path_counts_equal_closed_forms_and_values_equal_reference(m, k, n):
    out = ok_json("simulate", SPEC, *sizes_args(m, k, n))
    expected = TUTORIAL.closed_form(m, k, n)
    assert {key: out[key] for key in COUNT_KEYS} == expected
    forms = textbook(m, k, n)
    assert out["global_load_elems_by_buffer"] == {"A": forms["A"], "B": forms["B"], "C": 0}
    assert out["barriers"] == forms["barriers_per_work_group"] * forms["work_groups"]
    assert out["closed_form_agrees"] is True  # the file's own closed_form, checked
    assert out["result_check_skipped"] is None
    assert 0 <= out["result_error_over_tolerance"] <= 1
    assert out["hazards"] == []
    assert (out["m"], out["k"], out["n"], out["local_size"]) == (m, k, n, [16, 8])


def table_rows(output: str) -> dict[str, list[str]]:
    """``simulate``'s counter rows: counter (``key`` or ``key[buffer]``) -> its cells."""
    return {line.split()[0]: line.split()[1:] for line in output.splitlines()
            if line.split() and line.split()[0].split("[")[0] in COUNT_KEYS}


def test_simulate_table_shows_the_files_closed_form_column():
    result = invoke("simulate", SPEC, *sizes_args(20, 20, 40))
    assert result.exit_code == 0, result.output
    expected = TUTORIAL.closed_form(20, 20, 40)
    rows = table_rows(result.output)
    flat = {(f"{k}[{b}]" if b else k): v for k, value in expected.items()
            for b, v in (value.items() if isinstance(value, dict) else [(None, value)])}
    assert set(rows) == set(flat)
    for key, cells in rows.items():
        assert cells == [str(flat[key]), str(flat[key])], (key, cells)
    assert f"closed form: {EXAMPLE}:closed_form: agrees with the simulated counts" \
        in result.output
    assert "no closed form" not in result.output


def without_closed_form(tmp_path: Path) -> Path:
    source = EXAMPLE.read_text()
    assert "\ndef closed_form(" in source
    return write(tmp_path, "no_form.py", source.replace("\ndef closed_form(", "\ndef _form("))


def test_a_file_without_closed_form_gets_the_forms_derived_from_its_ir(tmp_path):
    spec = f"{without_closed_form(tmp_path)}:make_schedule"
    result = invoke("simulate", spec, *sizes_args(20, 20, 40))
    assert result.exit_code == 0, result.output
    assert "closed forms derived from the kernel, in the sizes M (here 20), K (here 20), " \
        "N (here 40):" in result.output
    assert "closed form: derived from the kernel: agrees with the simulated counts" \
        in result.output
    assert ok_json("simulate", spec, *sizes_args(20, 20, 40))["closed_form_agrees"] is True
    formula = tt.closed_form(tt.build(spec, m=20, k=20, n=40))
    assert formula.source == "derived"
    assert any("NDRange is the launch's" in note for note in formula.notes)
    # a closed_form imported into the file is not the file's own
    imported = write(tmp_path, "imports_it.py", without_closed_form(tmp_path).read_text()
                     + "\nfrom tiletraffic import closed_form  # noqa: E402\n")
    sch = tt.build(f"{imported}:make_schedule", m=20, k=20, n=40)
    assert tt.closed_form(sch).source == "derived"


FORMS = {
    # the barriers and the loads of A, right; nothing else given
    "partial": "def closed_form(m, k, n):\n    return {'barriers': 2 * -(-k // 8) * -(-n // 16)"
               " * -(-m // 8), 'global_load_elems_by_buffer': {'A': m * k * -(-n // 16)}}\n",
    # the barriers wrong (one per step), numpy integers and the tile taken
    "wrong": "import numpy as np\ndef closed_form(m, k, n, tile):\n    return {'barriers': "
             "np.int64(-(-k // tile) * -(-n // 16) * -(-m // 8)), 'work_groups': "
             "-(-n // 16) * -(-m // 8)}\n",
}


def test_a_closed_form_of_some_counters_is_checked_in_those(tmp_path):
    source = EXAMPLE.read_text()
    cut = source.index("\ndef closed_form(")
    partial = write(tmp_path, "partial.py", source[:cut] + "\n" + FORMS["partial"])
    spec = f"{partial}:make_schedule"
    result = invoke("simulate", spec, *sizes_args(20, 20, 40))
    assert result.exit_code == 0, result.output
    rows = table_rows(result.output)
    assert rows["barriers"] == ["54", "54"]
    assert rows["global_load_elems_by_buffer[A]"] == ["1200", "1200"]
    assert rows["global_load_elems_by_buffer[B]"] == ["2400", "-"]
    assert rows["flop"] == ["55296", "-"]
    assert (f"closed form: {partial}:closed_form: agrees with the simulated counts (it gives "
            "2 of the 16 counters)") in result.output
    assert ok_json("simulate", spec, *sizes_args(20, 20, 40))["closed_form_agrees"] is True
    assert tt.closed_form(tt.build(spec, m=20, k=20, n=40)) == {
        "barriers": 54, "global_load_elems_by_buffer": {"A": 1200}}

    wrong = write(tmp_path, "wrong.py", source[:cut] + "\n" + FORMS["wrong"])
    spec = f"{wrong}:make_schedule"
    result = invoke("simulate", spec, *sizes_args(20, 20, 40))
    assert result.exit_code == 0, result.output   # a count differing is shown, not a fault
    assert table_rows(result.output)["barriers"] == ["54", "27"]
    assert f"closed form: {wrong}:closed_form: DIFFERS from the simulated counts in barriers" \
        in result.output
    assert ok_json("simulate", spec, *sizes_args(20, 20, 40))["closed_form_agrees"] is False
    out = ok_json("model", spec, *sizes_args(20, 20, 40))
    assert out["closed_form_agrees"] is False
    formula = tt.closed_form(tt.build(spec, m=20, k=20, n=40))
    assert formula == {"barriers": 27, "work_groups": 9}
    assert type(formula["barriers"]) is int


@pytest.mark.parametrize("form, needles", [
    ("def closed_form(m, k, n):\n    return 1 // 0\n",
     ["closed_form(m=20, k=20, n=40) raised ZeroDivisionError"]),
    ("def closed_form(m, k, n):\n    return [m, k, n]\n", ["type list", "not a dict"]),
    ("def closed_form(m, k, n):\n    return {'loads': 3}\n",
     ["key 'loads', which is no counter", "global_load_elems"]),
    ("def closed_form(m, k, n):\n    return {'barriers': 2.5}\n",
     ["barriers must be an integer, got float 2.5"]),
    ("def closed_form(m, k, n):\n    return {'global_load_elems_by_buffer': {'X': 1}}\n",
     ["buffer 'X'", "A, B, C"]),
    ("def closed_form(size):\n    return {}\n",
     ["needs parameter 'size'", "m, k, n, tile"]),
    ("import sys\ndef closed_form(m, k, n):\n    sys.exit(0)\n", ["sys.exit(0)"]),
])
def test_a_closed_form_that_fails_is_bad_input_in_one_line(tmp_path, form, needles):
    source = EXAMPLE.read_text()
    bad = write(tmp_path, "bad_form.py", source[:source.index("\ndef closed_form(")]
                + "\n" + form)
    spec = f"{bad}:make_schedule"
    for command in ("simulate", "model"):
        one_line_error(invoke(command, spec, *sizes_args(20, 20, 40), "--json"),
                       f"{bad}:closed_form", *needles)
    with pytest.raises(user_schedule.UserScheduleError, match="closed_form"):
        tt.closed_form(tt.build(spec, m=20, k=20, n=40))
    # the schedule itself is fine: check does not use the closed form
    assert ok_json("check", spec, *sizes_args(20, 20, 40)) == []


def test_explicit_reference_is_used_and_a_wrong_one_is_caught(tmp_path):
    wrong = write(tmp_path, "wrong_ref.py",
                  "def plus_one(inputs):\n    return inputs['A'] @ inputs['B'] + 1.0\n")
    result = invoke("simulate", SPEC, *sizes_args(20, 20, 40), "--reference",
                    f"{wrong}:plus_one", "--json")
    assert result.exit_code == 1, "a wrong result fails simulate, as it fails run"
    assert json.loads(result.output)["result_error_over_tolerance"] > 1


def test_without_reference_the_check_is_skipped_and_run_refuses(tmp_path):
    source = EXAMPLE.read_text()
    assert "\ndef reference(" in source
    no_ref = write(tmp_path, "no_ref.py", source.replace("\ndef reference(", "\ndef _unused("))
    out = ok_json("simulate", f"{no_ref}:make_schedule", *sizes_args(9, 10, 17))
    assert out["result_error_over_tolerance"] is None
    assert isinstance(out["result_check_skipped"], str) and out["result_check_skipped"]
    assert out["global_load_elems"] == TUTORIAL.closed_form(9, 10, 17)["global_load_elems"]
    usage_error(invoke("run", f"{no_ref}:make_schedule", *sizes_args(9, 10, 17)),
                "--reference")


def test_check_by_path_is_clean():
    assert ok_json("check", SPEC, *sizes_args(33, 21, 17)) == []


def test_check_reports_a_user_schedule_missing_its_second_barrier(tmp_path):
    source = EXAMPLE.read_text()
    marker = "Barrier(), compute, Barrier())"
    assert source.count(marker) == 1
    broken = write(tmp_path, "broken.py", source.replace(marker, "Barrier(), compute)"))
    result = invoke("check", f"{broken}:make_schedule", *sizes_args(20, 20, 40), "--json")
    assert result.exit_code == 1, result.output
    hazards = json.loads(result.output)
    assert {h["kind"] for h in hazards} == {"data-race"}
    assert {h["array"] for h in hazards} <= {"tile_A", "tile_B"}


@needs_pocl
def test_run_by_path_on_pocl():
    out = ok_json("run", SPEC, *sizes_args(33, 21, 17), "--device", "pocl", "--repeat", "10")
    assert out["check"]["ok"] and out["check"]["nan_count"] == 0
    assert out["check"]["max_abs_error"] <= out["check"]["max_allowed"]
    assert out["global_size"] == [32, 40] and out["local_size"] == [16, 8]
    assert len(out["kernel_times_s"]) == 10 and min(out["kernel_times_s"]) > 0


@needs_pocl
def test_run_with_a_wrong_reference_fails(tmp_path):
    wrong = write(tmp_path, "wrong_ref.py",
                  "def doubled(inputs):\n    return (inputs['A'] @ inputs['B']) * 2\n")
    result = invoke("run", SPEC, *sizes_args(16, 8, 16), "--device", "pocl",
                    "--reference", f"{wrong}:doubled")
    assert result.exit_code == 1, result.output
    with pytest.raises(ResultMismatchError):
        tt.run(tt.build(SPEC, m=16, k=8, n=16), "pocl",
               reference=user_schedule.load_function(f"{wrong}:doubled"))


def test_model_by_path_on_nvidia_h200():
    m, k, n = 70, 30, 100  # 7×9 work-groups: counts by work-group classes
    out = ok_json("model", SPEC, *sizes_args(m, k, n), "--device-model", "nvidia-h200")
    expected = TUTORIAL.closed_form(m, k, n)
    assert {key: out[key] for key in COUNT_KEYS} == expected
    assert out["closed_form_agrees"] is True
    assert out["global_load_requests"] > 0
    assert out["global_load_sectors"] >= out["global_load_requests"]
    assert math.isfinite(out["predicted_time_s"]) and out["predicted_time_s"] > 0
    same = ok_json("simulate", SPEC, *sizes_args(m, k, n), "--device-model", "nvidia-h200")
    assert same == out


def test_model_takes_a_family_too():
    out = ok_json("model", "gemm-tiled", *sizes_args(40, 24, 40), "--tile", "8")
    assert out["closed_form_agrees"] is True
    assert out["global_load_elems"] == 40 * 24 * 5 * 2


@needs_oclgrind
def test_crosscheck_by_path_counts_identical():
    (res,) = ok_json("crosscheck", SPEC, *sizes_args(9, 10, 17))
    assert res["equal"] is True
    assert res["counts"]["barriers"]["oclgrind"] == TUTORIAL.closed_form(9, 10, 17)["barriers"]
    for pair in res["counts"].values():
        assert pair["simulator"] == pair["oclgrind"]


# ------------------------------------------------------------------------ error cases
def test_missing_file(tmp_path):
    missing = tmp_path / "nowhere.py"
    for command in ("simulate", "check", "run", "model", "crosscheck"):
        usage_error(invoke(command, f"{missing}:make_schedule", *sizes_args(4, 4, 4)),
                    str(missing))


def test_missing_function():
    assert usage_error(invoke("simulate", f"{EXAMPLE}:make_it", *sizes_args(4, 4, 4)),
                       "make_it", "make_schedule")


def test_function_raising_shows_its_message():
    assert usage_error(invoke("simulate", SPEC, *sizes_args(0, 4, 4)),
                       "ValueError", "m must be a positive integer, got 0")


def test_return_value_not_a_schedule_names_its_type():
    assert usage_error(invoke("check", f"{EXAMPLE}:closed_form", *sizes_args(4, 4, 4)), "dict")


def test_parameter_the_function_does_not_take():
    assert usage_error(invoke("simulate", SPEC, *sizes_args(4, 4, 4), "--tile", "8"), "'tile'")


def test_parameter_the_function_needs_but_was_not_given():
    assert usage_error(invoke("model", SPEC, "--m", "4", "--k", "4"), "'n'", "--n")


def test_family_options_refused_for_a_file():
    assert usage_error(invoke("simulate", SPEC, *sizes_args(4, 4, 4), "--padding", "1"), "--padding")


def test_not_a_name_nor_a_file_spec():
    assert usage_error(invoke("simulate", "rect-gemm", *sizes_args(4, 4, 4)), "rect-gemm",
                       "FILE.py:FUNCTION")


def test_import_error_of_the_file(tmp_path):
    bad = write(tmp_path, "bad.py", "def make_schedule(m, k, n):\n    return (\n")
    assert usage_error(invoke("simulate", f"{bad}:make_schedule", *sizes_args(4, 4, 4)),
                       "bad.py", "SyntaxError")


def test_reference_raising_is_reported(tmp_path):
    bad = write(tmp_path, "bad_ref.py", "def ref(inputs):\n    return inputs['X']\n")
    assert usage_error(invoke("simulate", SPEC, *sizes_args(4, 4, 4), "--reference", f"{bad}:ref"),
                       "KeyError", "'X'")


EXITING = ("import sys\nimport dataclasses\nimport tiletraffic as tt\n"
           "def quits(m, k, n=None, tile=None):\n    sys.exit({code})\n"
           "def make(m, k, n=None, tile=None):\n"
           "    return dataclasses.replace(tt.build('gemm-tiled', m, k, n, tile), "
           "family='mine')\n"
           "def ref(inputs):\n    raise SystemExit({code})\n")


def one_line_error(result, *needles: str) -> None:
    usage_error(result, *needles)
    assert [ln for ln in result.output.splitlines() if ln.strip()] == \
        [ln for ln in result.output.splitlines() if ln.startswith("error: ")] != []


@pytest.mark.parametrize("code, shown", [("0", "sys.exit(0)"), ("3", "sys.exit(3)"),
                                         ("", "sys.exit()")])
def test_a_users_code_that_calls_sys_exit_is_bad_input_not_an_exit(tmp_path, code, shown):
    """sys.exit() in the schedule's function, at the file's import or in its reference:
    exit 2 with one line, whatever code it gave (0 would otherwise read as success)."""
    path = write(tmp_path, "exits.py", EXITING.format(code=code))
    for command in ("simulate", "check", "model"):
        one_line_error(invoke(command, f"{path}:quits", *sizes_args(8, 8, 8)),
                       "exits.py: quits(m=8, k=8, n=8)", shown, "SystemExit")
    importing = write(tmp_path, "at_import.py", f"import sys\nsys.exit({code})\n")
    one_line_error(invoke("simulate", f"{importing}:make", *sizes_args(8, 8, 8)),
                   "importing at_import.py failed", shown)
    one_line_error(invoke("simulate", f"{path}:make", *sizes_args(8, 8, 8), "--reference",
                          f"{path}:ref"), f"the reference {path}:ref", shown)
    assert "not an array of numbers" not in invoke(
        "simulate", f"{path}:make", *sizes_args(8, 8, 8), "--reference", f"{path}:ref").output


@needs_pocl
def test_run_with_a_reference_that_calls_sys_exit_is_bad_input(tmp_path):
    path = write(tmp_path, "exits.py", EXITING.format(code="0"))
    result = invoke("run", f"{path}:make", *sizes_args(8, 8, 8), "--device", "pocl",
                    "--reference", f"{path}:ref")
    usage_error(result, f"the reference {path}:ref called sys.exit(0)")
    assert len([ln for ln in result.output.splitlines() if ln.startswith("error: ")]) == 1


def test_reference_of_the_wrong_shape_is_reported(tmp_path):
    bad = write(tmp_path, "bad_ref.py", "def ref(inputs):\n    return inputs['A']\n")
    assert usage_error(invoke("simulate", SPEC, *sizes_args(4, 6, 8), "--reference", f"{bad}:ref"),
                       "(4, 6)", "(4, 8)")


# ------------------------------------------------------------------- loader and API
def test_loader_registers_a_module_without_touching_sys_path(tmp_path):
    path = write(tmp_path, "tiny.py", "VALUE = 1\n")
    before = list(sys.path)
    module = user_schedule.load_module(path)
    assert sys.path == before
    assert module.VALUE == 1 and sys.modules[module.__name__] is module
    assert module.__name__.startswith("tiletraffic_user_tiny_")
    path.write_text("VALUE = 22\n")  # a changed file is imported again
    assert user_schedule.load_module(path).VALUE == 22


def test_function_with_keyword_arguments_gets_only_the_sizes_given(tmp_path):
    path = write(tmp_path, "kw.py", f"""
import importlib.util
spec = importlib.util.spec_from_file_location("rect", {str(EXAMPLE)!r})
rect = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rect)
seen = []
def make(**sizes):
    seen.append(sorted(sizes))
    return rect.make_schedule(sizes["m"], 5, 7)
""")
    sch = user_schedule.load(f"{path}:make", m=3, k=None, n=None, tile=None)
    assert sch.param_values == {"M": 3, "K": 5, "N": 7}
    assert user_schedule.load_module(path).seen == [["m"]]


@pytest.mark.filterwarnings("ignore::tiletraffic.simulator.model.device_model.GuessedValueWarning")
def test_python_api_on_the_tutorial_schedule():
    m, k, n = 20, 13, 40
    sch = tt.build(SPEC, m=m, k=k, n=n)
    inputs = random_inputs(sch, np.random.default_rng())
    assert len({float(v) for v in inputs["A"].ravel()}) > 1  # non-constant inputs
    res = tt.simulate(sch, inputs)
    assert res.counts.to_dict() == TUTORIAL.closed_form(m, k, n)
    exact = TUTORIAL.reference({key: v.astype(np.float64) for key, v in inputs.items()})
    absprod = np.abs(inputs["A"].astype(np.float64)) @ np.abs(inputs["B"].astype(np.float64))
    assert check_result(res.outputs["C"].reshape(m, n), exact, k, absprod).ok
    assert tt.closed_form(sch) == TUTORIAL.closed_form(m, k, n)
    assert tt.check(sch) == []
    launch = tt.model(sch, "nvidia-h200")
    assert launch.counts.to_dict() == TUTORIAL.closed_form(m, k, n)
    assert "rect_tile_gemm" in tt.generate(sch).source
    with pytest.raises(user_schedule.UserScheduleError, match="tile"):
        tt.build(SPEC, m=m, k=k, n=n, tile=8)


@needs_pocl
def test_python_api_run_with_reference():
    sch = tt.build(SPEC, m=17, k=9, n=33)
    run = tt.run(sch, "pocl", reference=TUTORIAL.reference)
    assert run.check.ok and run.check.max_abs_error <= run.check.max_allowed


@given(sizes(max_size=40))
def test_counts_equal_closed_forms_for_any_sizes(mkn):
    m, k, n = mkn
    counts = tt.simulate(tt.build(SPEC, m=m, k=k, n=n), compute_values=False).counts
    assert counts.to_dict() == TUTORIAL.closed_form(m, k, n)
    forms = textbook(m, k, n)
    assert counts.global_load_elems_by_buffer["A"] == forms["A"]
    assert counts.global_load_elems_by_buffer["B"] == forms["B"]
    assert counts.barriers == forms["barriers_per_work_group"] * counts.work_groups


def test_malformed_schedule_is_refused_before_it_runs(tmp_path):
    source = EXAMPLE.read_text()
    bound = 'Let("a_col", step * TK + lcv)'
    assert source.count(bound) == 1
    unbound = write(tmp_path, "unbound.py",
                    source.replace(bound, 'Let("a_col", Var("nope") * TK + lcv)'))
    for command in ("simulate", "check", "run", "model", "crosscheck"):
        usage_error(invoke(command, f"{unbound}:make_schedule", *sizes_args(9, 9, 9)),
                    "'nope'")


def test_a_built_in_family_name_is_refused(tmp_path):
    wrapper = write(tmp_path, "wrap.py", "from tiletraffic.simulator.kernels.families import gemm_tiled\n"
                    "def make(m, k, n):\n    return gemm_tiled(m, k, n, 8)\n")
    assert usage_error(invoke("simulate", f"{wrapper}:make", *sizes_args(9, 9, 9)), "'gemm-tiled'")


def test_a_long_derived_form_is_shown_by_its_value_and_pieces(tmp_path, monkeypatch):
    from tiletraffic.analysis.api import closed_forms
    spec = f"{without_closed_form(tmp_path)}:make_schedule"
    whole = ok_json("simulate", spec, *sizes_args(20, 20, 40))
    form = whole["closed_forms"]["global_load_elems"]
    monkeypatch.setattr(closed_forms, "LONG_FORM_CHARS", len(form) - 1)
    result = invoke("simulate", spec, *sizes_args(20, 20, 40))
    assert result.exit_code == 0, result.output
    pieces = form.count("; ") + 1
    line = next(x for x in result.output.splitlines()
                if x.strip().startswith("global_load_elems ="))
    assert line.strip() == (
        f"global_load_elems = {whole['global_load_elems']} here; a form of "
        f"{pieces} piece{'s' if pieces > 1 else ''} in the sizes, {len(form)} characters "
        "long (the whole form: --json or tt.closed_form)")
    assert form not in result.output
