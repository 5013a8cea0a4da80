"""The OpenCL C front end refuses what the IR cannot mean, in one line that names the
file, line and column, the construct and what to write instead."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import tiletraffic as tt
from tiletraffic.frontend.opencl.translate import DATA_DEPENDENT, FrontendError
from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.visitor import walk

ARGS = {"A": {"shape": [64], "access": "in"}, "C": {"shape": [64], "access": "out"}, "N": 64}


def kernel(body: str, signature: str = "__global const float *A, __global float *C, int N",
           before: str = "") -> str:
    return f"{before}__kernel void k({signature})\n{{\n    const int i = get_global_id(0);\n" \
           f"{body}\n}}\n"


# (body, line of the construct, column, words the message must contain)
REFUSED = {
    "data-dependent index": ("    C[(int)A[i]] = 1.0f;", 4, 7, [DATA_DEPENDENT]),
    "switch on a float": ("    switch ((int)A[i]) { case 0: C[i] = 0.0f; }", 4, 13,
                          ["integer computed from a float value", DATA_DEPENDENT]),
    "case label inside a block": (
        "    switch (i) { case 0: { C[i] = 0.0f; case 1: C[i] = 1.0f; } }", 4, 41,
        ["case label inside a block", "top of its switch"]),
    "goto": ("    goto end;\nend:\n    C[i] = 0.0f;", 4, 5, ["goto", "if/else"]),
    "++ inside an expression": ("    int j = i;\n    C[j++] = 0.0f;", 5, 7,
                                ["++ inside an expression", "j++;"]),
    "pointer moved to another array in a branch": (
        "    __global float *p = C;\n    if (i < 2) p = (__global float *)A;\n    p[i] = 0.0f;",
        5, 5, ["pointer p", "at A after one branch and at C after the other"]),
    "float in a loop update": (
        "    float s = 0.0f;\n    for (int j = 0; j < N; j++, s += 1.0f) C[i] = s;", 5, 28,
        ["loop update", "integers and pointers only"]),
    "float modulo": ("    C[i] = fmod(A[i], 3.0f);", 4, 12, ["fmod", "+ - * /"]),
    "loaded value through an integer": ("    C[i] = (float)(int)A[i];", 4, 19,
                                        ["integer computed from a float value",
                                         DATA_DEPENDENT]),
    "global-only barrier": ("    barrier(CLK_GLOBAL_MEM_FENCE);\n    C[i] = A[i];", 4, 5,
                            ["CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE"]),
    "nested unrolled loops": ("    for (int a = 20; a > 0; a--) for (int b = 20; b > 0; b--)\n"
                              "        for (int c = 20; c > 0; c--) C[i] = A[i];", 5, 9,
                              ["8000 copies", "counting up"]),
    "atomic": ("    atomic_inc((volatile __global int *)C);", 4, 5, ["atomic_inc", "barriers"]),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_with_line_and_column(name):
    body, line, column, words = REFUSED[name]
    with pytest.raises(FrontendError) as err:
        tt.from_opencl(kernel(body), "k", [64], [16], ARGS)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"<source>:{line}:{column}: "), message
    for w in words:
        assert w in message, message


def test_ten_or_more_constructs_are_refused():
    assert len(REFUSED) >= 10


def test_local_pointer_and_float_arguments_given_the_wrong_value_are_refused():
    local = kernel("    C[i] = 0.0f;", "__local float *L, __global float *C")
    for value, words in (
            (4, "argument L is a __local pointer in the source; give its shape"),
            ({"local_bytes": 6}, "local_bytes = 6 is not a positive multiple of 4"),
            ({"shape": [4], "local_bytes": 32}, "shape [4] is 16 bytes, local_bytes 32"),
            ({"access": "in"}, "local argument L: give its shape (elements) or local_bytes")):
        with pytest.raises(FrontendError, match=re.escape(words)) as err:
            tt.from_opencl(local, "k", [64], [16], {"L": value, "C": ARGS["C"]})
        assert err.value.arg == "L"
    with pytest.raises(FrontendError, match=r"<source>:1:\d+: __local pointer argument L of "
                                            r"__local int: local pointer arguments hold float, "
                                            r"float2 or float4"):
        tt.from_opencl(kernel("    C[i] = 0.0f;", "__local int *L, __global float *C"),
                       "k", [64], [16], {"L": {"shape": [4]}, "C": ARGS["C"]})
    with pytest.raises(FrontendError, match="local_bytes sizes a __local pointer argument"):
        tt.from_opencl(kernel("    C[i] = 0.0f;", "__global float *C"), "k", [64], [16],
                       {"C": {"shape": [64], "access": "out", "local_bytes": 256}})
    scaled = kernel("    C[i] = alpha;", "__global float *C, float alpha")
    for value, words in ((ARGS["C"], "argument alpha is a float in the source; give it a "
                                     "number, not a buffer"),
                         (float("inf"), "alpha = inf is not a finite float32"),
                         (1e39, "alpha = 1e+39 is not a finite float32")):
        with pytest.raises(FrontendError, match=re.escape(words)) as err:
            tt.from_opencl(scaled, "k", [64], [16], {"C": ARGS["C"], "alpha": value})
        assert err.value.arg == "alpha"
    with pytest.raises(FrontendError, match=r"argument N is an integer in the source; give it a "
                                            r"number, not float 2\.5 \(in an expression, //"):
        tt.from_opencl(kernel("    C[i] = A[i];"), "k", [64], [16], {**ARGS, "N": 2.5})
    with pytest.raises(FrontendError, match=r"<source>:4:5: cannot assign to alpha"):
        tt.from_opencl(kernel("    alpha = 2.0f;\n    C[i] = alpha;",
                              "__global float *C, float alpha"),
                       "k", [64], [16], {"C": ARGS["C"], "alpha": 1.0})


def test_argument_errors_name_the_argument():
    src = kernel("    C[i] = A[i];")
    with pytest.raises(FrontendError, match="argument.*N not given") as err:
        tt.from_opencl(src, "k", [64], [16], {"A": ARGS["A"], "C": ARGS["C"]})
    assert err.value.arg == "N"
    with pytest.raises(FrontendError, match="has no argument B") as err:
        tt.from_opencl(src, "k", [64], [16], {**ARGS, "B": 3})
    assert err.value.arg == "B"
    with pytest.raises(FrontendError, match="store into buffer A, whose access is 'in'") as err:
        tt.from_opencl(kernel("    C[i] = A[i];", "__global float *A, __global float *C, int N")
                       .replace("C[i] = A[i]", "A[i] = 1.0f"), "k", [64], [16], ARGS)
    assert err.value.arg == "A"
    with pytest.raises(FrontendError, match="const in the source; its access must be 'in'"):
        tt.from_opencl(src, "k", [64], [16], {**ARGS, "A": {"shape": [64], "access": "out"}})
    with pytest.raises(FrontendError, match=r"shape\[0\] = 0 is not a positive"):
        tt.from_opencl(src, "k", [64], [16], {**ARGS, "C": {"shape": [0], "access": "out"}})


def test_parse_errors_are_clang_s_with_location():
    with pytest.raises(FrontendError, match=r"<source>:4:\d+: .*undeclared identifier 'q'"):
        tt.from_opencl(kernel("    C[i] = q;"), "k", [64], [16], ARGS)
    with pytest.raises(FrontendError, match="no __kernel named 'other'; it defines k"):
        tt.from_opencl(kernel("    C[i] = A[i];"), "other", [64], [16], ARGS)


def test_without_libclang_reading_opencl_c_is_one_line_not_a_traceback(monkeypatch):
    import sys
    from pathlib import Path

    from click.testing import CliRunner

    from tiletraffic.analysis.cli import main
    monkeypatch.setitem(sys.modules, "clang", None)        # import clang raises ImportError
    launch = Path(__file__).resolve().parents[1] / "examples" / "opencl" / "mm_tiled.toml"
    res = CliRunner().invoke(main, ["simulate", str(launch)])
    assert res.exit_code == 2, res.output
    assert "needs the libclang package" in res.output and "Traceback" not in res.output
    assert len([ln for ln in res.output.splitlines() if ln.startswith("error:")]) == 1


@pytest.mark.parametrize("body, words", [
    ("    for (int j = 0; j < 4; j += 0) C[i] = A[i];", ["loop", "step of 0", "never end"]),
    ("    float s = 0.0f;\n    for (int j = 0; j < 40000000; j++) s += A[0];\n    C[i] = s;",
     ["loop", "40,000,000 iterations", "limit"]),
])
def test_a_kernel_the_simulator_cannot_execute_is_one_line_not_a_traceback(body, words):
    from tiletraffic.simulator.ir.static import ExecutionError

    sch = tt.from_opencl(kernel(body), "k", [64], [16], ARGS)
    with pytest.raises(ExecutionError) as err:
        tt.simulate(sch, compute_values=False)
    assert "\n" not in str(err.value)
    for w in words:
        assert w in str(err.value), str(err.value)


def test_a_define_that_replaces_a_build_option_warns_and_wins_and_a_guarded_one_does_not():
    from tiletraffic.frontend.opencl.translate import MacroRedefinedWarning
    body = "    C[i] = A[i + W];"
    args = {**ARGS, "A": {"shape": [68], "access": "in"}}
    with pytest.warns(MacroRedefinedWarning, match=r"<source>:1:9: 'W' macro redefined: "
                                                   r".*the source's #define .*#ifndef") as rec:
        sch = tt.from_opencl(kernel(body, before="#define W 8\n"), "k", [64], [16], args,
                             "-DW=4")
    assert len(rec) == 1
    loads = [n for s in sch.body for n in walk(s) if isinstance(n, S.Load)]
    assert [n.value for n in walk(loads[0].index[0]) if isinstance(n, S.Const)] == [8]
    # the later definition wins: A[i + 8] of 68 floats is out of bounds for i >= 60
    assert {h.kind for h in tt.check(sch)} == {"out-of-bounds"}
    guarded = "#ifndef W\n#define W 8\n#endif\n"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sch = tt.from_opencl(kernel(body, before=guarded), "k", [64], [16], args, "-DW=4")
    assert tt.check(sch) == []          # A[i + 4] of 68: in bounds (W = 8 would not be)


def test_a_negative_value_for_a_uint_argument_is_refused():
    with pytest.raises(FrontendError, match=r"argument N = -1 is negative, but a uint .*4294967295"):
        tt.from_opencl(kernel("    C[i] = A[i];",
                              "__global const float *A, __global float *C, const uint N"),
                       "k", [64], [16], {**ARGS, "N": -1})


def test_a_uint_argument_above_the_signed_limit_is_refused_naming_it():
    source = kernel("    C[i] = A[i];", "__global const float *A, __global float *C, const uint N")
    with pytest.raises(FrontendError, match=r"argument N = 3000000000 is above 2147483647, "
                       r"the largest value of an unsigned 32-bit argument read"):
        tt.from_opencl(source, "k", [64], [16], {**ARGS, "N": 3_000_000_000})
    assert tt.from_opencl(source, "k", [64], [16], {**ARGS, "N": 2**31 - 1}).param_values["N"] \
        == 2**31 - 1


@pytest.mark.parametrize("options, words", [
    ("-DN=4 -D", "build option -D has nothing after it: write -DNAME or -DNAME=VALUE"),
    ("-U", "build option -U has nothing after it: write -UNAME"),
    ("-I", "build option -I has nothing after it: write -IFOLDER"),
    ('-D ""', "build option -D has nothing after it (the next word is empty)"),
    ("-I -DN=4", "build option -I has nothing after it (the next word is the option '-DN=4')"),
    ("-D=4", "build option '-D=4' has no macro name"),
    ("-D4N=1", "'4N' is not a macro name"),
    ("-UN=1", "-U takes a macro name only"),
])
def test_value_options_without_a_value_are_refused(options, words):
    with pytest.raises(FrontendError) as err:
        tt.from_opencl(kernel("    C[i] = A[i];"), "k", [64], [16], ARGS, options)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_a_value_given_as_the_next_word_is_joined():
    sch = tt.from_opencl(kernel("    C[i] = A[i] * S;"), "k", [64], [16], ARGS,
                         "-D S=2.0f -D F(x)=x")
    assert sch.extra["opencl"]["build_options"] == ("-DS=2.0f", "-DF(x)=x")


@pytest.mark.parametrize("text, value", [
    ("0", 0), ("16", 16), ("16u", 16), ("16U", 16), ("7l", 7), ("7LL", 7), ("7ull", 7),
    ("7LLU", 7), ("7lu", 7), ("0x1F", 31), ("0XffUL", 255), ("0b101", 5),
    ("1.5f", None), ("1e3", None), ("0x1p3", None), ("7lL", None), ("7ulu", None),
    ("TS", None), ("0x", None), ("", None)])
def test_integer_literals_of_c(text, value):
    from tiletraffic.frontend.opencl.clang_ast import integer_literal
    assert integer_literal(text) == value
    assert integer_literal("-" + text, signed=True) == (None if value is None else -value)


def test_octal_literals_are_refused_naming_the_literal_and_its_value():
    from tiletraffic.frontend.opencl.clang_ast import integer_literal
    with pytest.raises(FrontendError, match=r"integer literal 010 starts with 0, so C reads it "
                                            r"as octal: 010 is 8, not 10; write 8, or 10 for"):
        integer_literal("010")
    with pytest.raises(FrontendError, match=r"010u is 8.*write 8u, or 10u"):
        integer_literal("010u")
    with pytest.raises(FrontendError, match="has the digit 8 or 9: write 9"):
        integer_literal("09")
    with pytest.raises(FrontendError, match=r"^<source>:4:18: integer literal 010 .* 8"):
        tt.from_opencl(kernel("    C[i] = A[i % 010];"), "k", [64], [16], ARGS)
    with pytest.raises(FrontendError, match=r"^<source>:1:13: integer literal 020 .* 16"):
        tt.from_opencl(kernel("    C[i] = A[i % OFF];", before="#define OFF 020\n"),
                       "k", [64], [16], ARGS)
    with pytest.raises(FrontendError, match=r"build option '-DOFF=010': integer literal 010 "):
        tt.from_opencl(kernel("    C[i] = A[i % OFF];"), "k", [64], [16], ARGS, "-DOFF=010")


def test_hex_and_suffixed_literals_index_as_their_values():
    sch = tt.from_opencl(kernel("    C[i] = A[(i + 0x10u) % 64UL] + A[i / 2l];"), "k",
                         [64], [16], ARGS)
    a = np.arange(64, dtype=np.float32)
    out = tt.simulate(sch, {"A": a}).outputs["C"]
    i = np.arange(64)
    assert np.array_equal(out, a[(i + 16) % 64] + a[i // 2])


def test_a_required_work_group_size_must_be_the_launchs():
    from tiletraffic.frontend.opencl.translate import WorkGroupSizeError
    src = kernel("    C[i] = A[i];").replace(
        "__kernel void", "__kernel __attribute__((reqd_work_group_size(TS, TS / 4, 1))) void")
    sch = tt.from_opencl(src, "k", [64, 4], [16, 4], ARGS, "-DTS=16")   # macros evaluated
    assert sch.local_size == (16, 4)
    with pytest.raises(WorkGroupSizeError) as err:
        tt.from_opencl(src, "k", [64], [16], ARGS, "-DTS=16")
    assert str(err.value) == (
        "<source>:1:25: kernel k requires the work-group size (16, 4, 1) "
        "(reqd_work_group_size), but the launch's local size is (16, 1, 1): launch it with "
        "local size (16, 4, 1) or change the attribute")
    assert isinstance(err.value, FrontendError)
    literal = src.replace("TS, TS / 4, 1", "32, 1, 1")
    with pytest.raises(WorkGroupSizeError, match=r"\(32, 1, 1\).*\(16, 1, 1\)"):
        tt.from_opencl(literal, "k", [64], [16], ARGS)
    assert tt.from_opencl(literal, "k", [64], [32], ARGS).local_size == (32,)


@pytest.mark.parametrize("body, column, name", [
    ("    C[i] = as_float(i);", 12, "as_float"),
    ("    C[as_int(A[i]) % 64] = A[i];", 7, "as_int"),
    ("    const uint4 u = as_uint4(vload4(0, A));\n    C[i] = A[i];", 21, "as_uint4"),
    ('    printf("%d\\n", i);\n    C[i] = A[i];', 5, "printf"),
])
def test_reinterpreting_casts_and_printf_are_refused_by_name(body, column, name):
    with pytest.raises(FrontendError) as err:
        tt.from_opencl(kernel(body), "k", [64], [16], ARGS)
    message = str(err.value)
    assert message.startswith(f"<source>:4:{column}: {name}"), message
    assert "\n" not in message
    assert ("reinterprets the bits" if name != "printf" else "output stream") in message


def test_a_declared_printf_or_cast_is_refused_by_name_too():
    declared = "int printf(__constant char *format, ...);\nfloat as_float(int);\n"
    for body, name in (('    printf("x");\n    C[i] = A[i];', "printf"),
                       ("    C[i] = as_float(i);", "as_float")):
        with pytest.raises(FrontendError, match=rf"^<source>:\d+:\d+: {name}"):
            tt.from_opencl(kernel(body, before=declared), "k", [64], [16], ARGS)


def test_a_macro_the_source_defines_twice_is_not_taken_for_a_replaced_build_option():
    from tiletraffic.frontend.opencl.translate import MacroRedefinedWarning
    body = "    C[i] = A[i + W];"
    args = {**ARGS, "A": {"shape": [68], "access": "in"}}
    with warnings.catch_warnings():
        warnings.simplefilter("error", MacroRedefinedWarning)
        sch = tt.from_opencl(kernel(body, before="#define W 8\n#define W 2\n"), "k", [64],
                             [16], args, "-DQ=1")
    assert tt.check(sch) == []          # A[i + 2] of 68: the source's last definition
