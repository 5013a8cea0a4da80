"""Every construct the OpenCL C front end refuses is listed in docs/opencl.md with the one
line the front end prints for it: each listed message is what a sample kernel of that
construct raises, word for word, and every listed construct has its sample here."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import tiletraffic as tt
from tiletraffic.frontend.opencl.translate import FrontendError

DOC = Path(__file__).resolve().parents[1] / "docs" / "opencl.md"
SECTION = "## What the front end refuses"

SIGNATURE = "__global const float *A, __global float *C, int N"
ARGS = {"A": {"shape": [64], "access": "in"}, "C": {"shape": [64], "access": "out"}, "N": 64}


def kernel(body: str, before: str = "", signature: str = SIGNATURE) -> str:
    return f"{before}__kernel void k({signature})\n{{\n    const int i = get_global_id(0);\n" \
           f"{body}\n}}\n"


HELPER_SELF = "float twice(float x, int n) { return n == 0 ? x : twice(x, n - 1); }\n"
HELPER_EARLY = "int first(int x, int n) { if (n > 0) return x; return 0; }\n"
HELPER_ASSIGN = "void bump(__global float *c, int j) { j += 1; c[j] = 0.0f; }\n"

# construct -> (source, build options, extra arguments[, local size of its one work-group])
SAMPLES = {
    "float in a condition computed by statements": (
        kernel("    if (i < N && twice(A[i]) > 0.0f) C[i] = 1.0f;",
               "float twice(float x) { return 2.0f * x; }\n"), "", {}),
    "integer vector without its components": (
        kernel("    int2 v;\n    C[i] = 0.0f;"), "", {}),
    "index computed from loaded values": (kernel("    C[(int)A[i]] = 1.0f;"), "", {}),
    "bool used as an integer": (
        kernel("    bool inside = i < N;\n    C[i + inside] = 0.0f;"), "", {}),
    "bool of an integer the kernel assigns": (
        kernel("    int j = i;\n    bool small = j < 4;\n    j = 2;\n"
               "    if (small) C[i] = A[j];"), "", {}),
    "shift by a constant beyond the width": (kernel("    C[(i << 40) % 64] = 0.0f;"), "", {}),
    "comparison used as an integer": (kernel("    C[i + (i < 4)] = 0.0f;"), "", {}),
    "++ inside an expression": (kernel("    int j = i;\n    C[j++] = 0.0f;"), "", {}),
    "++ on a float": (kernel("    float s = A[i];\n    s++;\n    C[i] = s;"), "", {}),
    "goto": (kernel("    goto end;\nend:\n    C[i] = 0.0f;"), "", {}),
    "case label inside a block": (
        kernel("    switch (i) { case 0: { C[i] = 0.0f; case 1: C[i] = 1.0f; } }"), "", {}),
    "case range": (kernel("    switch (i) { case 0 ... 3: C[i] = 0.0f; }"), "", {}),
    "atomics": (kernel("    atomic_inc((volatile __global int *)C);"), "", {}),
    "mem_fence": (kernel("    mem_fence(CLK_LOCAL_MEM_FENCE);\n    C[i] = A[i];"), "", {}),
    "barrier without the local fence": (
        kernel("    barrier(CLK_GLOBAL_MEM_FENCE);\n    C[i] = A[i];"), "", {}),
    "work_group_barrier in OpenCL C 1.2": (
        kernel("    work_group_barrier(CLK_LOCAL_MEM_FENCE);\n    C[i] = A[i];"), "", {}),
    "float built-ins outside the subset": (kernel("    C[i] = fmod(A[i], 3.0f);"), "", {}),
    "reinterpreting casts": (kernel("    C[i] = as_float(i);"), "", {}),
    "printf": (kernel('    printf("%d", i);\n    C[i] = A[i];'), "", {}),
    "pointer moved to another array in a branch": (
        kernel("    __global float *p = C;\n    if (i < 2) p = (__global float *)A;\n"
               "    p[i] = 0.0f;"), "", {}),
    "pointer moved to another array in a loop": (
        kernel("    __global float *p = C;\n    for (int r = 0; r < N; r++) {\n"
               "        p[i] = 0.0f;\n        p = (__global float *)A;\n    }"), "", {}),
    "access through a null pointer": (
        kernel("    C[i] = bias[i];", signature=SIGNATURE + ", __global const float *bias"),
        "", {"bias": {"null": True}}),
    "float4 view of a private array off a multiple of 4": (
        kernel("    float reg[8];\n    *((float4 *)&reg[2]) = vload4(i, A);\n"
               "    C[i] = reg[2];"), "", {}),
    "pointer chosen by ?: on integers": (
        kernel("    __global const float *p = i < 4 ? A : A + 1;\n    C[i] = p[i];"), "", {}),
    "pointer ?: that gives null": (
        kernel("    __global const float *p = A != 0 ? 0 : A;\n    C[i] = p ? p[i] : 0.0f;"),
        "", {}),
    "pointer without a value": (
        kernel("    __global float *p;\n    C[i] = A[i];"), "", {}),
    "float in a loop update": (
        kernel("    float s = 0.0f;\n    for (int j = 0; j < N; j++, s += 1.0f) C[i] = s;"),
        "", {}),
    "long loop that does not count up": (
        kernel("    for (int j = 1000; j > 0; j--) C[i] = A[i];"), "", {}),
    "nested loops that do not count up": (
        kernel("    for (int a = 20; a > 0; a--) for (int b = 20; b > 0; b--)\n"
               "        for (int c = 20; c > 0; c--) C[i] = A[i];"), "", {}),
    "negative start compared as unsigned": (
        kernel("    for (int j = -1; j < N; j++) C[i] = A[i];",
               signature="__global const float *A, __global float *C, uint N"), "", {}),
    "integer array": (kernel("    int t[4];\n    t[0] = i;\n    C[i] = A[i];"), "", {}),
    "variable of another type": (kernel("    short2 v = (short2)(i, i);\n    C[i] = A[i];"), "",
                                 {}),
    "__local array inside a block": (
        kernel("    if (i < 4) {\n        __local float t[4];\n        t[i] = A[i];\n"
               "        C[i] = t[i];\n    }"), "", {}),
    "__local pointer argument of int": (
        kernel("    C[i] = 0.0f;", signature="__local int *L, __global float *C"), "",
        {"L": {"shape": [4]}, "A": None, "N": None}),
    "op= on a vector in memory": (
        kernel("    __global float4 *p = (__global float4 *)C;\n    p[0] *= 2.0f;"), "", {}),
    "get_global_offset": (kernel("    C[i - get_global_offset(0)] = A[i];"), "", {}),
    "helper calling itself": (kernel("    C[i] = twice(A[i], 2);", before=HELPER_SELF), "",
                              {}),
    "helper returning early": (kernel("    C[first(i, i)] = A[i];", before=HELPER_EARLY), "",
                               {}),
    "assignment to a helper's parameter": (
        kernel("    bump(C, i);", before=HELPER_ASSIGN), "", {}),
    "octal literal": (kernel("    C[i] = A[i + 010];"), "", {}),
    "integer buffer without its contents": (
        kernel("    C[i] = A[ind[i]];", signature=SIGNATURE + ", __global const int *ind"),
        "", {"ind": {"shape": [64], "access": "in"}}),
    "char pointer at an offset not a multiple of 4": (
        kernel("    __global const char *b = (__global const char *)A + i;\n"
               "    C[i] = *(__global const float *)b;"), "", {}),
    "char pointer moved off a multiple of 4 after a cast": (
        kernel("    __global const char *p = (__global const char *)A;\n"
               "    for (int j = 0; j < 4; j++) { C[i] = *(__global const float *)p; p += 2; }"),
        "", {}),
    "pointer comparison": (
        kernel("    __global const float *p = A + N - 1;\n"
               "    while (p >= A + N / 2) { C[i] += *p; p--; }"), "", {}),
    "sub-groups of a work-group not a multiple of the sub-group size": (
        kernel("    C[i] = sub_group_reduce_add(A[i]);"), "", {}, [48]),
    "sub-group size the kernel requires": (
        kernel("    C[i] = A[i];", before="__attribute__((intel_reqd_sub_group_size(16)))\n"),
        "", {}),
    "Adreno sub-group size the kernel requires": (
        kernel("    C[i] = A[i];",
               before='__attribute__((qcom_reqd_sub_group_size("half")))\n'), "", {}),
    "sub-group operation on an integer": (
        kernel("    C[i] = A[sub_group_broadcast(i, 0)];"), "", {}),
}


def _arguments(extra: dict) -> dict:
    args = {**ARGS, **extra}
    return {k: v for k, v in args.items() if v is not None}


def refusal(name: str) -> str:
    """The message the front end raises for ``name``'s sample, after its location."""
    source, options, extra, *local = SAMPLES[name]
    local_size = local[0] if local else [16]      # one work-group where a sample sizes it
    global_size = local_size if local else [64]
    with pytest.raises(FrontendError) as err:
        tt.from_opencl(source, "k", global_size, local_size, _arguments(extra), options)
    message = str(err.value)
    assert "\n" not in message
    assert re.match(r"<source>:\d+:\d+: ", message), message
    return message.split(": ", 1)[1]


def documented() -> dict[str, str]:
    """The refusals docs/opencl.md lists: construct (bold) -> its message (code)."""
    text = DOC.read_text(encoding="utf-8")
    assert SECTION in text, f"docs/opencl.md has no section {SECTION!r}"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    items = {}
    for line in section.split("\n- **")[1:]:
        construct, rest = line.split("**", 1)
        items[construct] = rest.split("`", 2)[1]
    return items


def test_every_documented_refusal_has_a_sample_and_every_sample_is_documented():
    assert sorted(documented()) == sorted(SAMPLES)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_the_documented_message_is_what_the_front_end_raises(name):
    assert refusal(name) == documented()[name]
