"""Launch files: the format's fields, its errors (one line naming the file and the field),
and every SCHEDULE command taking LAUNCH.toml with --set."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import tiletraffic as tt
from tiletraffic.frontend import launch_file
from tiletraffic.analysis.cli import main
from tiletraffic.gpu.devices.device import list_devices

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "opencl"

GOOD = """
source = "mm_tiled.cl"
kernel = "mmul_tiled"
build_options = "-DTS=8"
[sizes]
N = 32
[launch]
global_size = ["N", "N"]
local_size = ["TS", "TS"]
[args]
N = "N"
A = { shape = ["N", "N"], access = "in" }
B = { shape = ["N", "N"], access = "in" }
C = { shape = ["N", "N"], access = "out" }
"""


@pytest.fixture
def folder(tmp_path):
    shutil.copy(EXAMPLES / "mm_tiled.cl", tmp_path / "mm_tiled.cl")
    return tmp_path


def write(folder, text, name="k.toml"):
    path = folder / name
    path.write_text(text)
    return path


def test_sizes_macros_and_overrides(folder):
    path = write(folder, GOOD)
    sch = tt.build(str(path))
    assert sch.local_size == (8, 8) and sch.global_size == (32, 32)
    assert sch.param_values["N"] == 32
    assert sch.extra["opencl"]["build_options"] == ("-DTS=8",)
    bigger = tt.build(str(path), set={"N": 64}, params={"TS": 16})
    assert bigger.local_size == (16, 16) and bigger.global_size == (64, 64)
    assert "-DTS=16" in bigger.extra["opencl"]["build_options"]
    assert "-DTS=8" not in bigger.extra["opencl"]["build_options"]
    counts = tt.simulate(bigger, compute_values=False).counts
    assert counts.global_load_elems == 2 * 64 ** 3 // 16


def test_build_options_name_macros_in_the_compilers_order(folder):
    """``-DTS=8 ... -UTS``: the compiler has no TS from the options (the source's own
    ``#define`` applies), so the file's expressions have none either: refused, naming TS;
    ``-DWPT`` alone is 1, as in C."""
    undefined = write(folder, GOOD.replace('build_options = "-DTS=8"',
                                           'build_options = "-DTS=8 -UTS"'))
    with pytest.raises(launch_file.LaunchFileError, match="unknown name 'TS'"):
        tt.build(str(undefined))
    again = write(folder, GOOD.replace('build_options = "-DTS=8"',
                                       'build_options = "-DTS=4 -UTS -DTS=8"'), "again.toml")
    assert tt.build(str(again)).local_size == (8, 8)
    flag = launch_file.read(write(folder, GOOD.replace('build_options = "-DTS=8"',
                                                       'build_options = "-DTS=8 -DWPT"'),
                                  "flag.toml"))
    assert flag.macros == {"TS": 8, "WPT": 1}


def test_macro_values_are_read_as_c_integer_literals(folder):
    sch = tt.build(str(write(folder, GOOD.replace('"-DTS=8"', '"-DTS=0x8u"'))))
    assert sch.local_size == (8, 8)


BROKEN = {
    "unknown key": ("colour = 3\n" + GOOD, "colour: unknown key"),
    "unknown launch key": (GOOD.replace("local_size =", "work_group = [1]\nlocal_size ="),
                           "launch.work_group: unknown key"),
    "argument the kernel lacks": (GOOD + 'D = { shape = ["N"], access = "in" }\n',
                                  "args.D: "),
    "argument left out": (GOOD.replace('B = { shape = ["N", "N"], access = "in" }\n', ""),
                          "args.B: "),
    "shape not positive": (GOOD.replace('C = { shape = ["N", "N"]', 'C = { shape = ["N", 0]'),
                           "args.C.shape[1]: 0 is not positive"),
    "access contradicting the source": (
        GOOD.replace('C = { shape = ["N", "N"], access = "out" }',
                     'C = { shape = ["N", "N"], access = "in" }'), "args.C: "),
    "const buffer written": (GOOD.replace('A = { shape = ["N", "N"], access = "in" }',
                                          'A = { shape = ["N", "N"], access = "inout" }'),
                             "args.A: "),
    "bad access": (GOOD.replace('access = "out"', 'access = "write"'),
                   'args.C.access: must be one of in, out, inout, not the string "write"'),
    "access left out": (GOOD.replace(', access = "out"', ''),
                        "args.C.access: missing (one of in, out, inout)"),
    "shape a string": (GOOD.replace('A = { shape = ["N", "N"]', 'A = { shape = "N"'),
                       'args.A.shape: must be a list of sizes (each a number or an expression '
                       'string), not the string "N"; write shape = ["N"]'),
    "shape left out": (GOOD.replace('A = { shape = ["N", "N"], ', 'A = { '),
                       "args.A.shape: missing (a list of sizes)"),
    "size not a number": (GOOD.replace("N = 32", "N = 2.5"),
                          "sizes.N: must be an integer or an expression string, not 2.5"),
    "a name where none is defined": (
        GOOD.replace('build_options = "-DTS=8"\n', "").replace("N = 32", 'N = "M * 2"'),
        "sizes.N: 'M * 2': unknown name 'M'; no name is defined here: write a number"),
    "buffer for an integer argument": (
        GOOD.replace('N = "N"\n', 'N = { shape = ["N"], access = "in" }\n'),
        "args.N: argument N is an integer in the source; give it a number, not a buffer "
        "(shape and access)"),
    "bad expression": (GOOD.replace('global_size = ["N", "N"]',
                                    'global_size = ["N", "__import__(1)"]'),
                       "launch.global_size[1]: "),
    "missing kernel": (GOOD.replace('kernel = "mmul_tiled"', 'kernel = "other"'),
                       "kernel: "),
    "missing source": (GOOD.replace('"mm_tiled.cl"', '"nothing.cl"'), "source: "),
    "NDRange": (GOOD.replace('global_size = ["N", "N"]', 'global_size = [30, "N"]'),
                "launch: "),
    "-D with nothing after it": (GOOD.replace('"-DTS=8"', '"-DTS=8 -D"'),
                                 "build_options: build option -D has nothing after it"),
    "-U followed by another option": (
        GOOD.replace('"-DTS=8"', '"-U -DTS=8"'),
        "build_options: build option -U has nothing after it (the next word is the option "
        "'-DTS=8')"),
    "octal -D value": (GOOD.replace('"-DTS=8"', '"-DTS=010"'),
                       "build_options: build option '-DTS=010': integer literal 010 starts "
                       "with 0, so C reads it as octal: 010 is 8, not 10"),
    "-I with an empty word after it": (GOOD.replace('"-DTS=8"', """'-DTS=8 -I ""'"""),
                                       "build_options: build option -I has nothing after it"),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_errors_name_file_and_field(folder, name):
    text, words = BROKEN[name]
    path = write(folder, text)
    with pytest.raises(ValueError) as err:
        tt.build(str(path))
    message = str(err.value)
    assert "\n" not in message and "BufferArg" not in message and "None" not in message
    assert message.startswith(f"{path}: "), message
    assert words in message, message
    result = CliRunner().invoke(main, ["simulate", str(path)])
    assert result.exit_code == 2, result.output
    assert words in result.output


@pytest.mark.parametrize("value", [-3, 0])
def test_a_size_set_not_positive_is_named_not_the_value_derived_from_it(value):
    launch = str(EXAMPLES / "mm_tiled.toml")        # global_size = ["N", "N // WPT"]
    expected = f"N = {value}: sizes must be positive integers"
    with pytest.raises(launch_file.LaunchFileError, match=expected):
        tt.build(launch, set={"N": value})
    res = CliRunner().invoke(main, ["simulate", launch, "--set", f"N={value}"])
    assert res.exit_code == 2
    assert expected in res.stderr and len(res.stderr.strip().splitlines()) == 1
    shader = str(EXAMPLES.parent / "glsl" / "gemm_naive.toml")  # workgroups "(N + 15) // 16"
    with pytest.raises(launch_file.LaunchFileError, match=expected):
        tt.build(shader, set={"N": value})


def test_a_size_derived_from_a_size_set_names_the_size_set(folder):
    path = write(folder, GOOD.replace("N = 32", "H = 16\nN = \"2 * H\""))
    with pytest.raises(launch_file.LaunchFileError,
                       match=r"H = -4: sizes must be positive integers \(launch.global_size"):
        tt.build(str(path), set={"H": -4})
    offset = write(folder, GOOD.replace("N = 32", "N = 32\nPAD = 0").replace(
        'C = { shape = ["N", "N"]', 'C = { shape = ["N", "N + PAD"]'), "pad.toml")
    assert tt.build(str(offset), set={"PAD": 0}).global_size == (32, 32)   # 0 is a size too


def test_every_schedule_command_takes_a_launch_file():
    path = str(EXAMPLES / "mm_tiled.toml")
    runner = CliRunner()
    simulated = runner.invoke(main, ["simulate", path, "--set", "N=32", "--json"])
    assert simulated.exit_code == 0, simulated.output
    counts = json.loads(simulated.output)
    assert counts["global_load_elems"] == 2 * 32 ** 3 // 16
    for command in (["check", path, "--set", "N=32"], ["model", path, "--set", "N=32"]):
        result = runner.invoke(main, command)
        assert result.exit_code == 0, result.output
    result = runner.invoke(main, ["simulate", path, "--set", "N=32", "--m", "4"])
    assert result.exit_code == 2 and "--m" in result.output
    result = runner.invoke(main, ["simulate", path, "--set", "N=x"])
    assert result.exit_code == 2 and "NAME=INTEGER" in result.output


REQUIRED = """
__kernel __attribute__((reqd_work_group_size(8, 1, 1)))
void scale(__global float *y, const int n)
{
    const int i = get_global_id(0);
    if (i < n) y[i] = 2.0f * y[i];
}
"""

REQUIRED_LAUNCH = """
source = "scale.cl"
kernel = "scale"
build_options = "-DWG=16"
[sizes]
n = 64
[launch]
global_size = ["n"]
local_size = ["WG"]
[args]
y = { shape = ["n"], access = "inout" }
n = "n"
"""


def test_a_required_work_group_size_other_than_the_launch_is_bad_input_everywhere(tmp_path):
    (tmp_path / "scale.cl").write_text(REQUIRED)
    path = write(tmp_path, REQUIRED_LAUNCH)
    words = ("launch.local_size: ", "scale.cl:2:25: kernel scale requires the work-group size "
             "(8, 1, 1) (reqd_work_group_size), but the launch's local size is (16, 1, 1)")
    with pytest.raises(launch_file.LaunchFileError) as err:
        tt.build(str(path))
    assert all(w in str(err.value) for w in words)
    runner = CliRunner()
    for command in (["simulate", str(path)], ["check", str(path)], ["model", str(path)],
                    ["run", str(path)], ["crosscheck", str(path)],
                    ["explain", str(path), "--out", str(tmp_path / "e.html")]):
        result = runner.invoke(main, command)
        assert result.exit_code == 2, (command, result.output)
        assert all(w in result.output for w in words), (command, result.output)
        assert len(result.output.strip().splitlines()) == 1, result.output
    assert not (tmp_path / "e.html").exists()
    assert tt.build(str(path), set={"WG": 8}).local_size == (8,)


CASES = """
[[case]]
launch = "{launch}"
set = {{ N = 32 }}
params = {{ TS = 8 }}

[[case]]
launch = "{launch}"
set = {{ N = 32 }}
params = {{ TS = 16 }}
"""


def test_validate_case_lists_take_launch_files(tmp_path):
    from tiletraffic.analysis.validation.cases import cases_toml, read_cases
    shutil.copytree(EXAMPLES, tmp_path / "opencl")
    path = tmp_path / "cases.toml"
    path.write_text(CASES.format(launch="opencl/mm_tiled.toml"))   # relative to the file
    cases = read_cases(path)
    assert [c.label for c in cases] == ["mm_tiled TS=8", "mm_tiled TS=16"]
    assert cases[0].problem == cases[1].problem == "opencl mm_tiled.toml N=32"
    assert cases[0].family == "opencl:mmul_tiled" and not cases[0].is_baseline
    sch = cases[1].build()
    assert sch.local_size == (16, 16) and sch.param_values["N"] == 32
    again = tmp_path / "again.toml"
    again.write_text(cases_toml(cases))
    assert [c.id for c in read_cases(again)] == [c.id for c in cases]
    bad = tmp_path / "bad.toml"
    bad.write_text(CASES.format(launch="opencl/mm_tiled.toml").replace("TS = 8", "TS = 5"))
    with pytest.raises(ValueError, match="case 1: .*multiple"):
        read_cases(bad)


def test_validate_runs_launch_cases_on_pocl(tmp_path):
    from tiletraffic.analysis.validation.cases import read_cases
    from tiletraffic.analysis.validation.run import run_validation
    from tiletraffic.gpu.devices.device import list_devices, select_device
    devices = [d for d in list_devices() if "portable" in d.platform_name.lower()
               or "pocl" in d.platform_name.lower()]
    if not devices:
        pytest.skip("no PoCL device")
    path = tmp_path / "cases.toml"
    path.write_text(CASES.format(launch=str(EXAMPLES / "mm_tiled.toml")))
    target = select_device(f"{devices[0].platform_index}:{devices[0].device_index}")
    run = run_validation(target, cases=read_cases(path), out_dir=tmp_path / "v", rounds=1)
    for entry in run.data["measurements"].values():
        (only,) = entry["rounds"]
        assert "device_error" not in only, only
        assert only["check"]["ok"], only


def test_a_helper_in_an_included_header_under_a_relative_include_folder(tmp_path,
                                                                         monkeypatch):
    """``-I inc`` is taken relative to the launch file (as its source is), from any working
    folder, and a helper function defined in the header is inlined as one in the source."""
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "helpers.h").write_text("inline float sq(float x) { return x * x; }\n")
    (tmp_path / "sq.cl").write_text(
        '#include "helpers.h"\n'
        "__kernel void squares(__global const float *A, __global float *B, int n) {\n"
        "    int i = get_global_id(0);\n    if (i < n) B[i] = sq(A[i]);\n}\n")
    path = write(tmp_path, 'source = "sq.cl"\nkernel = "squares"\nbuild_options = "-I inc"\n'
                 "[sizes]\nN = 100\n[launch]\nglobal_size = [128]\nlocal_size = [32]\n"
                 '[args]\nA = { shape = ["N"], access = "in" }\n'
                 'B = { shape = ["N"], access = "out" }\nn = "N"\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    sch = tt.build(str(path))
    assert f"-I{tmp_path / 'inc'}" in sch.extra["opencl"]["build_options"]
    x = np.random.default_rng().standard_normal(100).astype(np.float32)
    out = tt.simulate(sch, {"A": x}).outputs["B"]
    assert np.array_equal(out, x * x)       # one rounding, as the device's x * x
    (tmp_path / "inc" / "helpers.h").write_text(
        "inline float sq(float x) { return as_float((int)x); }\n")
    with pytest.raises(ValueError, match=r"inc/helpers\.h:1:\d+: as_float reinterprets"):
        tt.build(str(path))


def test_a_latin1_byte_in_a_comment_is_read_as_compilers_read_it(folder):
    """OpenCL compilers take any byte in a comment; a Latin-1 "é" (0xE9, no UTF-8) in the
    kernel's comment gives the same schedule and counts as the UTF-8 file."""
    utf8 = (folder / "mm_tiled.cl").read_bytes()
    (folder / "latin1.cl").write_bytes(b"/* r\xe9sum\xe9: tiled GEMM */\n" + utf8)
    plain = tt.build(str(write(folder, GOOD)))
    latin1 = tt.build(str(write(folder, GOOD.replace('"mm_tiled.cl"', '"latin1.cl"'),
                                "latin1.toml")))
    assert latin1.extra["opencl"]["source"].startswith("/* r\u00e9sum\u00e9")
    assert tt.simulate(latin1, compute_values=False).counts.to_dict() == \
        tt.simulate(plain, compute_values=False).counts.to_dict()


# ------------------------------------------------ a reference of several outputs
TWO_OUTPUTS_CL = """__kernel void two(__global const float *A, __global const float *x,
                  __global float *y, __global float *dma, const int N)
{
    const int i = get_global_id(0);
    float acc = 0.0f;
    for (int k = 0; k < N; k++)
        acc += A[i * N + k] * x[k];
    y[i] = acc;
    dma[i] = x[i] * 2.0f;
}
"""

TWO_OUTPUTS_REFERENCES = """
def both(inputs):
    return {"y": inputs["A"] @ inputs["x"], "dma": 2 * inputs["x"]}


def wrong_second(inputs):
    return {"y": inputs["A"] @ inputs["x"], "dma": 3 * inputs["x"]}


def one_array(inputs):
    return inputs["A"] @ inputs["x"]


def misnamed(inputs):
    return {"z": inputs["A"] @ inputs["x"]}
"""


def two_outputs(folder, function: str):
    """A launch file of a kernel with two outputs, y and dma, and the reference ``function``."""
    (folder / "two.cl").write_text(TWO_OUTPUTS_CL)
    (folder / "refs.py").write_text(TWO_OUTPUTS_REFERENCES)
    return write(folder, f"""
source = "two.cl"
kernel = "two"
[sizes]
N = 48
[launch]
global_size = ["N"]
local_size = [16]
[args]
A = {{ shape = ["N", "N"], access = "in" }}
x = {{ shape = ["N"], access = "in" }}
y = {{ shape = ["N"], access = "out" }}
dma = {{ shape = ["N"], access = "out" }}
N = "N"
[reference]
function = "refs.py:{function}"
""", f"two_{function}.toml")


def test_a_reference_of_two_outputs_checks_each_in_simulate(tmp_path):
    runner = CliRunner()
    result = runner.invoke(main, ["simulate", str(two_outputs(tmp_path, "both")), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["result_outputs"] == ["y", "dma"] and data["result_error_over_tolerance"] <= 1
    text = runner.invoke(main, ["simulate", str(two_outputs(tmp_path, "both"))]).stdout
    assert "result vs float64 reference (normal inputs) of y, dma: worst error" in text
    # the second output is compared too: a wrong one is a mismatch named by its output
    wrong = runner.invoke(main, ["simulate", str(two_outputs(tmp_path, "wrong_second"))])
    assert wrong.exit_code == 1, wrong.output
    assert "at dma[" in wrong.stdout and "MISMATCH: dma[" in wrong.stdout
    # one array for a kernel of two outputs: which output it is cannot be told
    one = runner.invoke(main, ["simulate", str(two_outputs(tmp_path, "one_array"))])
    assert one.exit_code == 2 and "returned one array, the schedule has the outputs y, dma" \
        in one.output, one.output


def test_a_reference_returning_an_output_the_kernel_lacks_is_named_not_said_to_raise(tmp_path):
    res = CliRunner().invoke(main, ["simulate", str(two_outputs(tmp_path, "misnamed"))])
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert res.exit_code == 2 and len(lines) == 1, res.output
    assert "reference.function: returned 'z'; the kernel's outputs are y, dma" in lines[0]
    assert "raised" not in lines[0]


@pytest.mark.skipif(not any(d.is_pocl for d in list_devices()), reason="PoCL is not installed")
def test_a_reference_of_two_outputs_checks_each_in_run_on_pocl(tmp_path):
    runner = CliRunner()
    result = runner.invoke(main, ["run", str(two_outputs(tmp_path, "both")), "--device",
                                  "pocl", "--json"])
    assert result.exit_code == 0, result.output
    check = json.loads(result.stdout)["check"]
    assert check["outputs"] == ["y", "dma"] and check["output"] in ("y", "dma")
    assert check["ok"] and check["error_over_tolerance"] <= 1
    text = runner.invoke(main, ["run", str(two_outputs(tmp_path, "both")), "--device",
                                "pocl"]).stdout
    assert "result equals the reference for y, dma (normal inputs) in every launch" in text
    wrong = runner.invoke(main, ["run", str(two_outputs(tmp_path, "wrong_second")),
                                 "--device", "pocl"])
    assert wrong.exit_code == 1, wrong.output
    assert "launch 1 of 12" in wrong.stderr and "opencl:two dma[" in wrong.stderr
    assert "kernel time" not in wrong.stdout


@pytest.mark.parametrize("head, kind", [
    ('source = "k.cu"\nkernel = "k"\n', "a CUDA launch file has source, language, kernel"),
    ('source = "k.cl"\nkernel = "k"\nlanguage = "cuda"\n', "a CUDA launch file"),
    ('source = "k.cl"\nkernel = "k"\n', "an OpenCL C launch file has source"),
    ('source = "k.comp"\n', "a GLSL launch file has source"),
])
def test_an_unknown_top_key_names_the_launch_files_own_language(tmp_path, head, kind):
    path = tmp_path / "k.toml"
    path.write_text(head + "[arg]\nA = 1\n")
    with pytest.raises(launch_file.LaunchFileError, match=f"arg: unknown key; {kind}"):
        launch_file.load(path)


def test_a_reference_file_that_does_not_exist_is_not_called_a_schedule_file(tmp_path):
    path = tmp_path / "k.toml"
    path.write_text('source = "k.cl"\nkernel = "k"\n[launch]\nglobal_size = [1]\n'
                    'local_size = [1]\n[args]\ny = { shape = [1], access = "out" }\n'
                    '[reference]\nfunction = "nope.py:f"\n')
    (tmp_path / "k.cl").write_text("__kernel void k(__global float *y) { y[0] = 1.0f; }\n")
    res = CliRunner().invoke(main, ["simulate", str(path)])
    assert res.exit_code == 2, res.output
    assert "reference.function: file '" in res.output and "schedule" not in res.output


SIZE_IN_THE_LAUNCH_ONLY = """\
__kernel void fill(__global float *out) { out[get_global_id(0)] = 1.0f; }
"""


def test_the_header_names_a_size_that_only_the_launch_reads(tmp_path):
    (tmp_path / "k.cl").write_text(SIZE_IN_THE_LAUNCH_ONLY)
    (tmp_path / "k.toml").write_text('source = "k.cl"\nkernel = "fill"\n[sizes]\nG = 4\n'
                                     '[launch]\nglobal_size = ["G * 8"]\nlocal_size = [8]\n'
                                     '[args]\nout = { shape = [32], access = "out" }\n')
    for command, header in (("check", "opencl:fill  G=4 out_dim0=32  tile=8: clean"),
                            ("simulate", "opencl:fill  G=4 out_dim0=32  tile=8  ")):
        res = CliRunner().invoke(main, [command, str(tmp_path / "k.toml")])
        assert res.output.splitlines()[0].startswith(header), res.output
