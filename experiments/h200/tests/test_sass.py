"""Loads in flight read off machine code (experiments/h200/matvec/sass.py), on hand-written
disassemblies and on the committed H200 ones."""
from __future__ import annotations

import pytest

from experiments.h200.matvec.analysis import load_matvec_loops
from experiments.h200.matvec.sass import LoopIssue, main_loop

from experiments.h200.tests.conftest import committed


def _sass(body: list[str]) -> str:
    """cuobjdump-style lines: address comment, instruction, encoding comment."""
    return "\n".join(f"        /*{16 * i:04x}*/                   {op} ;  /* 0x0 */"
                     for i, op in enumerate(body))


def test_outer_loop_and_loop_without_fma_are_not_the_main_loop():
    code = _sass([
        "MOV R1, RZ",                                  # 0x00
        "LDG.E R2, desc[UR4][R4.64]",                  # 0x10 outer loop top
        "LDG.E R3, desc[UR4][R6.64]",                  # 0x20 inner loop top
        "LDG.E R5, desc[UR4][R8.64]",                  # 0x30
        "LDS R7, [UR5]",                               # 0x40
        "FFMA R1, R3, R5, R1",                         # 0x50
        "LDG.E R3, desc[UR4][R6.64+0x4]",              # 0x60
        "FFMA R1, R3, R7, R1",                         # 0x70
        "@P0 BRA 0x20",                                # 0x80 inner back edge
        "FFMA R1, R2, R1, R1",                         # 0x90
        "@!P1 BRA 0x10",                               # 0xa0 outer back edge
        "LDG.E R9, desc[UR4][R8.64]",                  # 0xb0 a copy loop, no FFMA
        "@P2 BRA 0xb0",                                # 0xc0
        "EXIT",
    ])
    loop = main_loop(code)
    # inner loop 0x20..0x80: LDG x3, LDS x1, FFMA x2; two LDG before the first FFMA
    assert loop == LoopIssue(global_loads=3, local_loads=1, fmas=2,
                             global_loads_before_first_fma=2)
    # 3 loads per 2 multiply-adds: 2 loads are 2 / 1.5 k-steps
    assert loop.k_steps_in_flight == pytest.approx(4 / 3)


def test_predicated_loads_count_and_forward_branches_are_not_loops():
    code = _sass(["@P0 BRA 0x40",
                  "@!P3 LDG.E.CONSTANT R2, desc[UR4][R4.64]",
                  "@P1 LDG.E.CONSTANT R3, desc[UR4][R4.64+0x4]",
                  "FFMA R1, R2, R3, R1",
                  "@P0 BRA 0x10"])
    assert main_loop(code) == LoopIssue(2, 0, 1, 2)


def test_no_loop_with_a_multiply_add_is_an_error():
    with pytest.raises(ValueError, match="no loop"):
        main_loop(_sass(["LDG.E R2, desc[UR4][R4.64]", "@P0 BRA 0x0", "EXIT"]))
    assert LoopIssue(0, 0, 0, 0).k_steps_in_flight == 0.0


def test_committed_h200_matvec_machine_code(report_dir):
    # reports/nvidia-h200/codegen/code.tar.gz: the OpenCL driver's JIT, unrolled 16-fold;
    # matvec-naive loads A and x (32 LDG) and waits after 8 k-steps, matvec-local-whole
    # issues all 16 loads of A first, matvec-local interleaves after 4
    committed("codegen", "code.tar.gz")
    loops = load_matvec_loops(report_dir)
    assert {k: (v.global_loads, v.fmas, v.k_steps_in_flight) for k, v in loops.items()} == {
        "matvec-naive": (32, 16, 8.0), "matvec-local": (16, 16, 4.0),
        "matvec-local-whole": (16, 16, 16.0)}
    assert load_matvec_loops(report_dir / "no-such-directory") == {}


def test_uniform_branches_ldgsts_and_several_kernels():
    first = _sass(["LDG.E R2, desc[UR4][R4.64]",          # 0x00 loop top
                   "LDGSTS.E [R3], desc[UR4][R4.64]",     # 0x10 an async copy, not a LDG
                   "FFMA R1, R2, R2, R1",                 # 0x20
                   "BRA.U !UP0, 0x0"])                    # 0x30 uniform back edge
    second = _sass(["LDG.E R2, desc[UR4][R4.64]",         # the same addresses, other kernel
                    "LDG.E R3, desc[UR4][R4.64+0x4]",
                    "FFMA R1, R2, R3, R1",
                    "FFMA R1, R2, R3, R1",
                    "@P0 BRA 0x0"])
    text = "\tFunction : one\n" + first + "\n\tFunction : two\n" + second
    # each kernel on its own addresses; the one with more multiply-adds wins
    assert main_loop(text) == LoopIssue(2, 0, 2, 2)
    assert main_loop("\tFunction : one\n" + first) == LoopIssue(1, 0, 1, 1)


def test_an_archive_member_without_a_loop_is_left_out_with_a_warning(tmp_path):
    import io
    import tarfile

    from experiments.h200.matvec.sass import loops_in_archive
    archive = tmp_path / "code.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, text in (("code/a.opencl-jit.0.sass", _sass(["LDG.E R2, desc[UR4][R4.64]",
                                                               "FFMA R1, R2, R2, R1",
                                                               "@P0 BRA 0x0"])),
                           ("code/b.opencl-jit.0.sass", _sass(["EXIT"])),
                           ("code/a.cuda.sass", _sass(["EXIT"]))):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    with pytest.warns(UserWarning, match="b.opencl-jit.0.sass: no loop"):
        loops = loops_in_archive(archive)
    assert loops == {"a": LoopIssue(1, 0, 1, 1)}
