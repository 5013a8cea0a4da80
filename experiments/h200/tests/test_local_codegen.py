"""The local-codegen driver's readers (experiments/h200/ladder/local_codegen.py): static
LDS/STS counts of a disassembly and the local rows of an ncu source page, on hand-written
text and on the committed H200 files."""
from __future__ import annotations

import tarfile

import pytest

from experiments.h200.ladder.local_codegen import local_sass_counts, local_source_rows

from experiments.h200.tests.conftest import committed


def test_static_counts_by_width_skip_non_instructions():
    sass = "\n".join([
        "        code for sm_90",
        "        .L_x_0:",
        "        /*0000*/                   LDS R4, [R20] ;  /* 0x0 */",
        "        /*0010*/              @!P0 LDS.64 R6, [R20+0x8] ;  /* 0x0 */",
        "        /*0020*/                   LDS.128 R8, [R21+0x10] ;  /* 0x0 */",
        "        /*0030*/                   STS [R25], R22 ;  /* 0x0 */",
        "        /*0040*/                   STS.128 [R2], R8 ;  /* 0x0 */",
        "        /*0050*/                   FFMA R1, R2, R3, R1 ;  /* 0x0 */",
        "        /*0060*/                   LDSM.16.M88.4 R12, [R3] ;  /* 0x0 */",
    ])
    assert local_sass_counts(sass) == {"all": 7, "LDS": 1, "LDS.128": 1, "LDS.64": 1,
                                       "LDSM.16.M88.4": 1, "STS": 1, "STS.128": 1}


def test_source_rows_keep_local_instructions_per_kernel():
    page = "\n".join([
        '"Kernel Name","gemm_a",',
        '"Address","Source","Instructions Executed","L1 Conflicts Shared N-Way","Access Size"',
        '"0x10","      LDS R4, [R20]","2097152","1","32"',
        '"0x20","      FFMA R1, R2, R3, R1","2097152","0","-"',
        '"0x30","      LDS.128 R8, [R21]","1048576","2","128"',
        '"Kernel Name","gemm_b",',
        '"Address","Source","Instructions Executed","L1 Conflicts Shared N-Way","Access Size"',
        '"0x10","      STS [R5], R24","1,024","1","32"',
    ])
    rows = local_source_rows(page)
    assert [(r["kernel"], r["name"], r["sass"], r["executed"], r["nway"], r["access_bits"])
            for r in rows] == [(0, "gemm_a", "LDS R4, [R20]", 2097152, 1, 32),
                               (0, "gemm_a", "LDS.128 R8, [R21]", 1048576, 2, 128),
                               (1, "gemm_b", "STS [R5], R24", 1024, 1, 32)]
    with pytest.raises(ValueError, match="Kernel Name"):
        local_source_rows('"Address","Source"\n')


def test_committed_tiled_source_page_and_disassembly(tmp_path):
    # reports/nvidia-h200/dispatch/ncu_full.tar.gz: ncu --set full of 7 GEMM launches, the
    # first tiled one (B = 16, N = 1024) has 16 LDS and 4 LDS.128 per K-tile, 2-way each
    with tarfile.open(committed("dispatch", "ncu_full.tar.gz")) as tar:
        page = tar.extractfile("source_sass.csv").read().decode()
    rows = local_source_rows(page)
    tiled = [r for r in rows if r["name"] == "gemm_tiled" and r["kernel"] == min(
        q["kernel"] for q in rows if q["name"] == "gemm_tiled")]
    loads = [r for r in tiled if r["sass"].startswith("LDS")]
    assert sum(r["sass"].startswith("LDS.128") for r in loads) == 4
    assert {r["nway"] for r in loads if r["sass"].startswith("LDS.128")} == {2}
    assert {r["nway"] for r in loads if r["sass"].startswith("LDS ")} == {1}
    # reports/nvidia-h200/codegen/code.tar.gz: the same kernel, static: 16 / 4 (NVRTC build)
    # against 32 / 0 (the OpenCL driver's JIT), validation.md "Two builds of one source"
    with tarfile.open(committed("codegen", "code.tar.gz")) as tar:
        cuda = tar.extractfile("code/gemm-tiled-T16.cuda.sass").read().decode()
        jit = tar.extractfile("code/gemm-tiled-T16.opencl-jit.0.sass").read().decode()
    assert (local_sass_counts(cuda)["LDS"], local_sass_counts(cuda)["LDS.128"]) == (16, 4)
    assert local_sass_counts(jit)["LDS"] == 32 and "LDS.128" not in local_sass_counts(jit)


def test_envreg_reads_of_the_committed_ladder_ptx_are_replaced_by_zero():
    # reports/nvidia-h200/ladder/codegen/code.tar.gz: the ladder's OpenCL PTX reads the
    # NDRange offsets as `mov.b32 %r96, %envreg1;` (naive and tiled: envreg3/4); unset under
    # CUDA, they made the register-blocked kernels fail to launch there
    from experiments.h200.codegen.driver import ENVREG
    with tarfile.open(committed("ladder", "codegen", "code.tar.gz")) as tar:
        for name in ("gemm-register-blocked-M1024-K1024-N1024-T16",
                     "gemm-tiled-M1024-K1024-N1024-T16"):
            ptx = tar.extractfile(f"code/{name}.opencl.ptx").read().decode()
            assert len(ENVREG.findall(ptx)) == 2
            patched = ENVREG.sub(r"\g<1>0;", ptx)
            assert "%envreg" not in patched and patched.count(", 0;") >= 2
