"""experiments.h200.glsl_vulkan.table: the table of the chapter's GEMMs through Vulkan and
OpenCL from `tiletraffic run --json` files, each row labelled by the API it ran on."""
import json

from experiments.h200.glsl_vulkan.table import main, table


def _run(median_s, ok=True, timing="timestamps", device="NVIDIA H200"):
    return {"median_s": median_s, "timing": timing, "device_name": device,
            "check": {"ok": ok}}


def test_table_sets_the_tiled_speedup_beside_the_chapter(tmp_path, capsys):
    for api, timing in (("vulkan", "timestamps"), ("opencl", "profiling")):
        (tmp_path / f"{api}-gemm_naive-1024.json").write_text(json.dumps(_run(0.008, timing=timing)))
        (tmp_path / f"{api}-gemm_tiled-1024.json").write_text(json.dumps(_run(0.002, timing=timing)))
    (tmp_path / "vulkan-gemm_naive-4096.err").write_text("check ...\nerror: no Vulkan device\n")
    lines = table(tmp_path)
    assert "| vulkan | vulkan (timestamps) | gemm_naive | 1024 | NVIDIA H200 | 8.000 | 268 | " \
           "equals the reference |" in lines
    assert "| vulkan | 1024 | 4.00x | 5-10x |" in lines
    assert "| opencl | 1024 | 4.00x | 5-10x |" in lines
    assert "| vulkan | - | gemm_naive | 4096 | - | - | - | error: no Vulkan device |" in lines
    assert "| vulkan | 4096 | - (no vulkan run of both) | 5-10x |" in lines
    assert main([str(tmp_path / "none")]) == 2


def test_a_run_asked_for_vulkan_that_fell_back_is_never_labelled_vulkan(tmp_path):
    for kernel, s in (("gemm_naive", 0.006), ("gemm_tiled", 0.003)):
        for api in ("vulkan", "opencl"):
            (tmp_path / f"{api}-{kernel}-1024.json").write_text(
                json.dumps(_run(s, timing="profiling")))
    lines = table(tmp_path)
    rows = [line for line in lines if line.startswith("| vulkan | ")]
    assert rows and all("vulkan (" not in line for line in rows)
    assert any("opencl (profiling): OpenCL C translation, not vulkan" in line for line in rows)
    assert "| vulkan | 1024 | - (no vulkan run of both) | 5-10x |" in lines
    assert "| opencl | 1024 | 2.00x | 5-10x |" in lines
