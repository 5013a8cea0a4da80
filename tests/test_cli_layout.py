"""The command line's layout: one resolver of SCHEDULE shared with ``tiletraffic.build``, one
module per command (none over 300 lines), ``model`` light (no validation imported) and quiet
(each guessed value warned once)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import tiletraffic as tt
from tiletraffic.frontend import resolver
from tiletraffic.analysis.cli import COMMANDS, main
from tiletraffic.frontend.user_schedule import UserScheduleError
from tiletraffic.simulator.kernels.families import ScheduleError

CLI_DIR = Path(__file__).resolve().parent.parent / "analysis" / "cli"


def test_every_cli_module_is_at_most_300_lines():
    sizes = {p.name: len(p.read_text().splitlines()) for p in CLI_DIR.glob("*.py")}
    assert sizes and max(sizes.values()) <= 300, sizes


def test_every_command_module_is_registered_and_every_command_is_a_module():
    modules = {p.stem for p in CLI_DIR.glob("*.py")} - {"__init__", "options", "batching",
                                                        "case_lists", "common",
                                                        "datasheet_option", "outputs"}
    assert {m.__name__.rsplit(".", 1)[1] for m in COMMANDS} == modules
    assert {m.command.name for m in COMMANDS} == set(main.commands)


@pytest.mark.parametrize("spec, sizes, options", [
    ("gemm-tiled", (20, 40, 20, 16), {"padding": 1}),
    ("matvec-local", (300, 300, None, 64), {}),
    ("gemm-register-blocked", (37, 40, 44, 8), {"tm": 2, "tn": 2, "bk": 8}),
    ("gemm-tiled:no-first-barrier", (None, None, None, None), {}),
    ("demo-neighbour", (40, None, None, 8), {}),
])
def test_the_facade_and_the_command_line_build_the_same_schedule(spec, sizes, options):
    """``tt.build`` and ``simulate --json`` resolve SCHEDULE through the one resolver: the
    same sizes, work-group and NDRange."""
    m, k, n, tile = sizes
    sch = tt.build(spec, m, k, n, tile, **options)
    argv = ["model", spec, *(a for f, v in zip(("--m", "--k", "--n", "--tile"), sizes)
                             if v is not None for a in (f, str(v))),
            *(a for key, v in options.items() for a in (resolver.flag(key), str(v))),
            "--json"]
    res = CliRunner().invoke(main, argv)
    if sch.family.split(":")[0] != sch.family:  # a faulty variant: the model stops at it
        assert res.exit_code == 1 and "data-race" in res.stderr
        return
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert (out["schedule"], out["tile"]) == (sch.family, sch.tile)
    assert all(out[name.lower()] == value for name, value in sch.params)
    assert out["closed_form_agrees"] is True   # a demo's: the forms derived from its IR


def test_the_resolvers_errors_name_the_option_as_the_caller_spells_it():
    with pytest.raises(ScheduleError, match=r"^gemm-tiled needs its sizes: give m, k and n "
                                            r"\(k and n are missing\)$"):
        tt.build("gemm-tiled", 8)
    with pytest.raises(ScheduleError, match="matvec-naive computes y = A·x: n does not apply"):
        tt.build("matvec-naive", 8, 8, 8)
    with pytest.raises(ScheduleError, match="tm applies to .* only, not demo-shift"):
        tt.build("demo-shift", tm=2)
    with pytest.raises(ScheduleError, match="^\"nope\" is neither a schedule name .* nor "
                                            "FILE.py:FUNCTION"):
        tt.build("nope")
    res = CliRunner().invoke(main, ["simulate", "matvec-naive", "--m", "8", "--k", "8",
                                    "--n", "8"])
    assert res.exit_code == 2 and "--n does not apply (got 8)" in res.stderr
    res = CliRunner().invoke(main, ["simulate", "gemm-tiled", "--m", "8"])
    assert res.exit_code == 2 and ("error: gemm-tiled needs its sizes: give --m, --k and --n "
                                   "(--k and --n are missing) (options:") in res.stderr


@pytest.mark.parametrize("command", ["simulate", "model", "check", "explain"])
def test_a_family_without_sizes_is_built_at_its_example_shape_except_by_run(command,
                                                                           tmp_path):
    extra = ["--out", str(tmp_path / "page.html")] if command == "explain" else []
    res = CliRunner().invoke(main, [command, "gemm-tiled", *extra])
    assert res.exit_code == 0, res.output
    assert ("note: gemm-tiled at its example shape, M=20 K=40 N=20 tile=16 (no sizes given)"
            in res.stderr)
    if command in ("simulate", "check"):
        assert "M=20 K=40 N=20" in res.stdout
    # a size given: the sizes are the user's, all of them needed, in every command alike
    res = CliRunner().invoke(main, [command, "gemm-tiled", "--k", "8", *extra])
    assert res.exit_code == 2
    assert "gemm-tiled needs its sizes: give --m, --k and --n (--m and --n are missing)" \
        in res.stderr


def test_run_needs_the_sizes_of_a_family_said_once():
    res = CliRunner().invoke(main, ["run", "gemm-tiled"], prog_name="tiletraffic")
    assert res.exit_code == 2
    assert res.stderr == ("error: gemm-tiled needs its sizes: give --m, --k and --n "
                          "(options: tiletraffic run --help)\n")


def test_a_users_file_takes_no_family_option(tmp_path):
    f = tmp_path / "mine.py"
    f.write_text("import dataclasses\nimport tiletraffic as tt\n"
                 "def make(m, k, n=None, tile=None):\n"
                 "    return dataclasses.replace(tt.build('gemm-tiled', m, k, n, tile),\n"
                 "                               family='mine')\n")
    assert tt.build(f"{f}:make", 16, 16, 16, 8).family == "mine"
    with pytest.raises(UserScheduleError, match="chunk, padding applies to built-in"):
        tt.build(f"{f}:make", 16, 16, 16, chunk=4, padding=1)
    res = CliRunner().invoke(main, ["simulate", f"{f}:make", "--m", "16", "--k", "16",
                                    "--padding", "1"])
    assert res.exit_code == 2 and "--padding applies to built-in schedules only" in res.stderr


@pytest.mark.parametrize("spec", ["gemm-tiled", "gemm-naive", "demo-shift",
                                  f"{CLI_DIR.parents[1]}/examples/rect_tile_gemm.py:make_schedule"])
def test_set_on_a_schedule_that_is_not_a_launch_file_says_where_it_applies(spec):
    res = CliRunner().invoke(main, ["simulate", spec, "--m", "8", "--k", "8", "--n", "8",
                                    "--set", "N=3"])
    assert res.exit_code == 2, res.output
    line = res.stderr.strip()
    assert line.startswith(f"error: --set NAME=VALUE applies to launch files (LAUNCH.toml) "
                           f"only, not to {spec}; give its sizes with --m, --k, --n, --tile")
    assert "does not take" not in line and "built-in schedules only" not in line
    assert len(line.splitlines()) == 1


def test_a_registered_form_is_resolved_by_the_facade_and_accepted_by_the_command_line():
    class Doubled:
        form = "twice:NAME"

        def matches(self, spec):
            return spec.startswith("twice:")

        def build(self, spec, sizes, options, *, example_shape, spell):
            return resolver.resolve(spec.removeprefix("twice:"),
                                    resolver.Sizes(2 * sizes.m, 2 * sizes.k, 2 * sizes.n),
                                    options, spell=spell)
    source = Doubled()
    resolver.register(source)
    try:
        assert tt.build("twice:gemm-naive", 4, 4, 4).param_values["M"] == 8
        res = CliRunner().invoke(main, ["model", "twice:gemm-naive", "--m", "4", "--k", "4",
                                        "--n", "4", "--json"])
        assert res.exit_code == 0, res.output
        assert '"m": 8' in res.stdout
    finally:
        resolver.SOURCES.remove(source)


def test_model_imports_no_validation_tuner_or_report_module():
    code = ("import sys\nfrom tiletraffic.analysis.cli import main\n"
            "try:\n    main(['model', 'gemm-tiled', '--m', '32', '--k', '32', '--n', '32'])\n"
            "except SystemExit:\n    pass\n"
            "heavy = sorted(m for m in sys.modules if m.startswith(("
            "'tiletraffic.analysis.validation', 'tiletraffic.analysis.tune.tuner', "
            "'tiletraffic.analysis.report.build')))\nprint('heavy:', heavy)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert "heavy: []" in res.stdout, res.stdout


def test_model_warns_each_guessed_value_once():
    model = tt.device_model("nvidia-h200")
    res = CliRunner().invoke(main, ["model", "gemm-register-blocked", "--m", "64", "--k",
                                    "64", "--n", "64"])
    assert res.exit_code == 0, res.output
    warnings = [line for line in res.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == len(set(warnings))
    guessed = [w for w in warnings if "is a guess" in w]
    assert len(guessed) == len(model.guessed) > 0
    assert all(any(f" {name} = " in w for w in guessed) for name in model.guessed)


def test_a_warning_no_command_catches_is_one_line_without_source(capsys):
    import warnings
    with warnings.catch_warnings():          # restores Python's formatter afterwards
        warnings.simplefilter("always")
        res = CliRunner().invoke(main, ["devices"])
        assert res.exit_code in (0, 1), res.output
        warnings.warn("gemm_naive: work-group of 1024\n  exceeds 256", RuntimeWarning)
    err = capsys.readouterr().err
    assert err == "warning: gemm_naive: work-group of 1024 exceeds 256\n"


@pytest.mark.parametrize("argv, message", [
    (["--m", "8", "--k", "8", "--n", "8", "--tile", "0"],
     "--tile must be a positive integer, got 0"),
    (["--m", "0", "--k", "8", "--n", "8"], "--m must be a positive integer, got 0"),
    (["--m", "8", "--k", "8"], "gemm-tiled needs its sizes: give --m, --k and --n "
                               "(--n is missing)"),
    (["--m", "8", "--k", "8", "--n", "8", "--chunk", "3"],
     "--chunk applies to matvec-local only, not gemm-tiled"),
    (["--m", "8", "--k", "8", "--n", "8", "--tm", "2"],
     "gemm-tiled does not take --tm; its options: --padding, --a-tile"),
    (["--m", "8", "--k", "8", "--n", "8", "--padding", "-1"],
     "--padding must be a non-negative integer, got -1"),
])
def test_a_builders_message_names_the_options_the_user_typed(argv, message):
    res = CliRunner().invoke(main, ["simulate", "gemm-tiled", *argv])
    assert res.exit_code == 2 and message in res.stderr, res.stderr


@pytest.mark.parametrize("spec, argv, message", [
    ("gemm-warp-tiled", ["--m", "64", "--k", "64", "--n", "64", "--wn", "5"],
     "needs --wn to be --tn times a divisor of 32 (lanes along N of a sub-group tile), got "
     "--wn = 5 with --tn = 8"),
    ("gemm-warp-tiled", ["--m", "64", "--k", "64", "--n", "64", "--tile", "8", "--wg-rows",
                         "2"], "needs --tile x --wg-rows to be a multiple of 32"),
    ("gemm-split-k", ["--m", "64", "--k", "64", "--n", "64", "--splits", "1"],
     "needs --splits >= 2"),
    ("gemm-vectorized", ["--m", "64", "--k", "66", "--n", "64"],
     "needs --k to be a multiple of 4 (vector accesses of 4 float elements need 16-byte "
     "aligned addresses), got --k = 66"),
    ("demo-shift", ["--m", "64", "--k", "3"], "give --m only (got --m=64, --k=3)"),
])
def test_the_families_messages_name_the_options_too(spec, argv, message):
    res = CliRunner().invoke(main, ["simulate", spec, *argv])
    assert res.exit_code == 2 and message in res.stderr, res.stderr


def test_the_python_callers_messages_keep_the_keywords():
    with pytest.raises(ScheduleError, match="^tile must be a positive integer, got 0$"):
        tt.build("gemm-tiled", 8, 8, 8, 0)
    with pytest.raises(ScheduleError, match="gemm-tiled does not take tm; its options: "
                                            "padding, a_tile"):
        tt.build("gemm-tiled", 8, 8, 8, tm=2)


def test_explain_names_a_refused_registers_count_as_model_does(tmp_path):
    argv = ["gemm-tiled", "--m", "8", "--k", "8", "--n", "8", "--registers", "100000"]
    for res in (CliRunner().invoke(main, ["model", *argv]),
                CliRunner().invoke(main, ["explain", *argv, "--out", str(tmp_path / "p.html")])):
        assert res.exit_code == 2 and "error: --registers 100000: gemm-tiled: 100000 " \
            "registers per work-item exceed the 255" in res.stderr, res.stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
@pytest.mark.parametrize("argv", [
    ["simulate", "gemm-tiled", "--m", "16", "--k", "16", "--n", "16", "--json"],  # while writing
    ["device-model"],                                     # short: when stdout is flushed at exit
])
def test_an_output_that_cannot_be_written_is_one_line_and_exit_2(argv):
    with open("/dev/full", "w") as full:
        res = subprocess.run([sys.executable, "-m", "tiletraffic", *argv], stdout=full,
                             stderr=subprocess.PIPE, text=True, timeout=120)
    assert res.returncode == 2, res.stderr
    assert res.stderr == "error: cannot write the output: No space left on device (stdout)\n"


@pytest.mark.parametrize("argv", [
    ["simulate", "gemm-tiled", "--m", "20", "--k", "20", "--n", "20"],  # flushed at exit
    ["simulate", "gemm-tiled", "--m", "16", "--k", "16", "--n", "16", "--json"],
    ["devices"],
])
def test_a_closed_pipe_ends_quietly_with_exit_0(argv):
    # the reader is gone before the command writes (``| head -0``, ``| true``): not a fault
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        res = subprocess.run([sys.executable, "-m", "tiletraffic", *argv], stdout=write_end,
                             stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr and "error" not in res.stderr, res.stderr


def test_an_unknown_kernel_of_a_sequence_is_named_in_the_messages_words(tmp_path):
    res = CliRunner().invoke(main, ["explain", "gemm-split-k", "--m", "16", "--k", "64", "--n",
                                    "16", "--tile", "8", "--kernel", "3",
                                    "--out", str(tmp_path / "p.html")])
    assert res.exit_code == 2
    assert res.stderr.startswith('error: gemm-split-k has no kernel "3"; its kernels: 1 ')
