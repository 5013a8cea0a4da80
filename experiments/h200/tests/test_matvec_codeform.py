"""The matvec code-form probes (experiments/h200/matvec/{xprobe,qualifiers,codeform}.py):
the SASS loop parser on hand-written text, and the committed data behind the findings'
claims (every result checked; the same JIT instructions for the generated and row-pointer
forms, the generated one 11-12% slower at the validate sizes)."""
from __future__ import annotations

import statistics

from experiments.h200.data import read_json
from experiments.h200.matvec.codeform import KERNELS, sass_loop_counts

from .conftest import committed

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


def test_sass_loop_counts_takes_the_longest_backward_loop_of_the_named_function():
    # k1's loops: 0x10..0x50 (5 instructions: 2 LDG, 1 LDS, 1 FFMA) and 0x40..0x70 (4);
    # the branch of "other" is not k1's
    assert sass_loop_counts(SASS, "k1") == {"instructions": 5, "ldg": 2, "lds": 1, "ffma": 1}
    assert sass_loop_counts(SASS, "other") == {"instructions": 2, "ldg": 1, "lds": 0,
                                               "ffma": 0}
    assert sass_loop_counts(SASS, "absent") is None


def test_every_committed_codeform_result_was_checked():
    data = read_json(committed("matvec", "codeform", "codeform.json.gz"))
    assert {r["kernel"] for r in data["rows"]} == set(KERNELS)
    for r in data["rows"]:
        assert r["max_error"] <= r["tolerance"], r["kernel"]
        assert len(r["times_s"]) == data["repeat"]
        assert abs(r["median_s"] - statistics.median(r["times_s"])) < 1e-12


def test_the_generated_and_row_pointer_forms_differ_only_in_instruction_order():
    jit = read_json(committed("matvec", "codeform", "jit.json.gz"))
    assert jit["naive_generated"] == jit["naive_row_pointer"]
    assert jit["naive_generated"]["ldg"] == 32 and jit["naive_generated"]["ffma"] == 16
    data = read_json(committed("matvec", "codeform", "codeform.json.gz"))
    t = {(r["kernel"], r["m"], r["k"]): r["median_s"] for r in data["rows"]}
    for mk in ((4096, 4096), (8192, 8192)):
        slower = t[("naive_generated", *mk)] / t[("naive_row_pointer", *mk)]
        assert 1.10 < slower < 1.13, (mk, slower)
        near = t[("naive_row_pointer", *mk)] / t[("local_whole_generated", *mk)]
        assert abs(near - 1) < 0.006, (mk, near)
