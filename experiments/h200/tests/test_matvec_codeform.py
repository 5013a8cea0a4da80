"""The matvec code-form probe (experiments/h200/matvec/codeform.py): the SASS loop parser on
hand-written text, and the committed data behind the findings' claims (every result checked;
the same loads and FMAs in every naive build; which builds have both 32-byte sectors of a
row of A requested before the loop's first FFMA, and that those are the fast ones)."""
from __future__ import annotations

import re
import statistics
import tarfile

import pytest

from experiments.h200.data import read_json
from experiments.h200.matvec.codeform import (all_kernel_names, loop_sequence,
                                               loops_of_images, sass_loop_counts)

from experiments.h200.tests.conftest import committed

SASS = """
        Function : other
        /*0000*/                   LDG.E R1, desc[UR4][R2.64] ;
        /*0010*/              @P0 BRA 0x0 ;
        Function : k1
        /*0000*/                   MOV R1, RZ ;
        /*0010*/                   LDG.E.CONSTANT R2, desc[UR4][R4.64] ;
        /*0020*/                   LDS R3, [R5] ;
        /*0030*/                   FFMA R1, R2, R3, R1 ;
        /*0040*/                   LDG.E.CONSTANT R6, desc[UR4][R4.64+0x4] ;
        /*0050*/              @P0 BRA 0x10 ;
        /*0060*/                   FFMA R1, R6, R6, R1 ;
        /*0070*/              @P1 BRA 0x40 ;
        /*0080*/                   EXIT ;
"""


def test_sass_loop_counts_of_the_named_functions_main_loop():
    # the main loop is sass.main_loop's: the innermost loop with the most FFMAs (k1's two
    # overlapping loops have one each: the first, 0x10..0x50, 5 instructions: 2 LDG, 1 LDS,
    # 1 FFMA); "other"'s loop has no FFMA, so no main loop
    assert sass_loop_counts(SASS, "k1") == {"instructions": 5, "ldg": 2, "lds": 1, "sts": 0,
                                            "bar": 0, "ffma": 1}
    assert sass_loop_counts(SASS, "other") is None
    assert sass_loop_counts(SASS, "absent") is None
    assert loop_sequence(SASS, "k1") == ["R4+0x0", "S", "F", "R4+0x4"]
    # an exact name: "k" is not "k1", and k1's text is not k10's
    assert sass_loop_counts(SASS, "k") is None
    ten = SASS.replace("Function : other", "Function : k10")
    assert sass_loop_counts(ten, "k1")["instructions"] == 5
    # LDGSTS / LDSM are not global / local loads; BRA.U closes a loop
    odd = SASS.replace("LDS R3, [R5]", "LDSM.16.M88 R3, [R5]").replace(
        "LDG.E.CONSTANT R6", "LDGSTS.E R6").replace("@P0 BRA 0x10", "BRA.U 0x10")
    assert sass_loop_counts(odd, "k1") == {"instructions": 5, "ldg": 1, "lds": 0, "sts": 0,
                                           "bar": 0, "ffma": 1}
    # local stores and barriers are counted; the offset -0x8 is kept with its sign
    sts = SASS.replace("LDS R3, [R5]", "STS [R5], R3").replace(
        "LDG.E.CONSTANT R6, desc[UR4][R4.64+0x4]", "BAR.SYNC.DEFER_BLOCKING 0x0").replace(
        "[R4.64]", "[R4.64+-0x8]")
    assert sass_loop_counts(sts, "k1") == {"instructions": 5, "ldg": 1, "lds": 0, "sts": 1,
                                           "bar": 1, "ffma": 1}
    assert loop_sequence(sts, "k1") == ["R4+-0x8", "F"]


@pytest.mark.parametrize("folder, names", [
    (("matvec", "codeform"), None),
    (("ladder", "ksweep", "second"), ("gemm_register_blocked", "gemm_prefetch"))])
def test_committed_jit_loops_are_the_counts_of_the_committed_machine_code(folder, names):
    archive = "code.tar.gz" if folder[0] == "matvec" else "sass.tar.gz"
    with tarfile.open(committed(*folder, archive)) as t:
        texts = {int(m.name.split(".")[1]): t.extractfile(m).read().decode()
                 for m in t.getmembers() if re.fullmatch(r"jit\.\d+\.sass", m.name)}
    assert texts
    assert loops_of_images(texts, names or all_kernel_names()) == read_json(
        committed(*folder, "jit.json.gz"))


def test_every_committed_codeform_result_was_checked():
    data = read_json(committed("matvec", "codeform", "codeform.json.gz"))
    assert {r["kernel"] for r in data["rows"]} == set(all_kernel_names())
    for r in data["rows"]:
        assert r["error_over_tolerance"] <= 1, r["kernel"]
        assert len(r["times_s"]) == data["repeat"]
        assert abs(r["median_s"] - statistics.median(r["times_s"])) < 1e-12


def _jit_sass() -> str:
    with tarfile.open(committed("matvec", "codeform", "code.tar.gz")) as t:
        return t.extractfile("jit.0.sass").read().decode()


def _a_bytes_before_first_wait(kernel: str, a_register: str, base_bytes: int) -> set[int]:
    """Byte offsets of A (from the row's start) loaded before the loop's first FFMA."""
    seq = loop_sequence(_jit_sass(), kernel)
    first = seq[:seq.index("F")]
    return {int(t.split("+")[1], 16) + base_bytes for t in first
            if t.startswith(a_register + "+")}


def test_the_fast_builds_have_both_sectors_of_a_row_in_flight_before_the_first_wait():
    # A's register and its offset from the row's start, read off each prologue (the first
    # argument, c[0x0][0x210]): R4 = row in the generated build, row + 8 bytes in the
    # row-pointer one, row + 0x20 in the written-first ones; local-whole loads only A
    sectors = {k: {b // 32 for b in _a_bytes_before_first_wait(k, reg, base)}
               for k, reg, base in (("naive_generated", "R4", 0), ("naive_row_pointer", "R4", 8),
                                    ("naive_a_first16", "R4", 0x20),
                                    ("naive_a_first8", "R4", 0x20),
                                    ("local_whole_generated", "R2", 0))}
    assert sectors == {"naive_generated": {0}, "naive_row_pointer": {0, 1},
                       "naive_a_first16": {0}, "naive_a_first8": {0},
                       "local_whole_generated": {0, 1}}
    jit = read_json(committed("matvec", "codeform", "jit.json.gz"))
    assert not jit["missing"]
    for k in ("naive_generated", "naive_row_pointer", "naive_a_first16", "naive_a_first8"):
        assert {(c["ldg"], c["ffma"]) for c in jit["loops"][k]} == {(32, 16)}, k
    data = read_json(committed("matvec", "codeform", "codeform.json.gz"))
    t = {(r["kernel"], r["m"], r["k"]): r["median_s"] for r in data["rows"]}
    for mk in ((4096, 4096), (8192, 8192)):
        fast = [t[(k, *mk)] for k in ("naive_row_pointer", "local_whole_generated")]
        slow = [t[(k, *mk)] for k in ("naive_generated", "naive_a_first16", "naive_a_first8")]
        assert max(fast) / min(fast) < 1.01, mk
        assert min(slow) > 1.03 * max(fast), mk
        assert 1.10 < t[("naive_generated", *mk)] / t[("naive_row_pointer", *mk)] < 1.14, mk
