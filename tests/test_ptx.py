"""Performance-tuning directives written into PTX (gpu.runtime.ptx; no GPU)."""
import pytest

from tiletraffic.gpu.runtime.ptx import PtxError, directives_of, with_directives

PTX = """.version 8.5
.target sm_90
.address_size 64

\t// .globl\tgemm_warp_tiled
.entry gemm_warp_tiled(
\t.param .u64 .ptr .global .align 16 gemm_warp_tiled_param_0,
\t.param .u32 gemm_warp_tiled_param_3
)
.reqntid 16, 16, 1
{
\t.reg .f32 \t%f<10>;
\tret;
}
"""


def test_directive_lands_between_parameters_and_body():
    out = with_directives(PTX, "gemm_warp_tiled", (".maxnreg 128", ".minnctapersm 2"))
    head, body = out.split("{", 1)
    assert head.rstrip().endswith(".reqntid 16, 16, 1")
    assert ")\n.maxnreg 128\n.minnctapersm 2\n.reqntid" in head
    assert directives_of(out) == [".maxnreg 128", ".minnctapersm 2", ".reqntid 16, 16, 1"]
    assert body == PTX.split("{", 1)[1]


def test_no_directives_is_the_same_text():
    assert with_directives(PTX, "gemm_warp_tiled", ()) == PTX


def test_unknown_entry_and_unclosed_list_raise():
    with pytest.raises(PtxError, match="no .entry other"):
        with_directives(PTX, "other", (".maxnreg 64",))
    with pytest.raises(PtxError, match="does not close"):
        with_directives(".entry k(\n.param .u32 p\n", "k", (".maxnreg 64",))
