"""The CUDA toolkit include folders NVRTC is given for a CUDA source's toolkit headers
(``tiletraffic.gpu.runtime.cuda_run.cuda_toolkit_include_folders``): named by
TILETRAFFIC_CUDA_INCLUDE, else found; a missing header's error says which were given."""
from __future__ import annotations

import os
import re

import pytest

from tiletraffic.gpu.devices.device import TiletrafficGpuError
from tiletraffic.gpu.runtime.cuda_run import (CUDA_INCLUDE_VARIABLE, NVRTC_INCLUDE,
                                              cuda_toolkit_include_folders,
                                              missing_header_note, nvrtc_options)


def toolkit(root, with_header=True):
    """A folder laid out as a toolkit's ``include``: ``cuda_runtime_api.h`` and ``crt/``."""
    folder = root / "include"
    (folder / "crt").mkdir(parents=True)
    (folder / "crt" / "mma.h").write_text("// crt\n")
    if with_header:
        (folder / "cuda_runtime_api.h").write_text("// api\n")
    return folder


def test_the_variable_names_the_folders_in_its_order_and_a_missing_one_is_refused(tmp_path):
    a, b = toolkit(tmp_path / "a"), toolkit(tmp_path / "b", with_header=False)
    named = {CUDA_INCLUDE_VARIABLE: f"{b}{os.pathsep}{a}", "CUDA_PATH": str(tmp_path / "a")}
    assert cuda_toolkit_include_folders(named) == (b, a)    # as named, no header asked for
    missing = tmp_path / "nowhere"
    with pytest.raises(TiletrafficGpuError, match=rf"^{CUDA_INCLUDE_VARIABLE} names "
                                                  rf"{re.escape(str(missing))}, which is not"):
        cuda_toolkit_include_folders({CUDA_INCLUDE_VARIABLE: f"{a}{os.pathsep}{missing}"})


def test_found_folders_hold_the_runtime_header_and_come_once(tmp_path):
    a, b = toolkit(tmp_path / "a"), toolkit(tmp_path / "b", with_header=False)
    found = cuda_toolkit_include_folders({"CUDA_PATH": str(tmp_path / "a"),
                                          "CUDA_HOME": str(tmp_path / "a")})
    assert found[0] == a.resolve() and found.count(a.resolve()) == 1
    assert b.resolve() not in cuda_toolkit_include_folders({"CUDA_PATH": str(tmp_path / "b")})


def test_toolkit_folders_come_after_every_other_include_folder(tmp_path):
    a = toolkit(tmp_path / "a")
    (tmp_path / "k.cu").write_text("")
    cuda = {"path": str(tmp_path / "k.cu"), "build_options": ("-Iproject", "-DX=1")}
    options = nvrtc_options(cuda, None, (a,))
    assert options[-1] == f"-I{a}"
    assert options.index(f"-I{NVRTC_INCLUDE}") < options.index("-Iproject") < len(options) - 1
    assert options.index(f"-I{tmp_path.resolve()}") < len(options) - 1


def test_a_header_nvrtc_cannot_open_names_the_folders_given_or_how_to_name_one(tmp_path):
    log = 'mma.h(55): catastrophic error: cannot open source file "crt/mma.h"'
    given = missing_header_note(log, (tmp_path,))
    assert str(tmp_path) in given and CUDA_INCLUDE_VARIABLE in given
    none = missing_header_note(log, ())
    assert "no CUDA toolkit include folder was found" in none and CUDA_INCLUDE_VARIABLE in none
    assert missing_header_note("error: identifier \"x\" is undefined", ()) == ""


def test_nvrtc_compiles_a_kernel_behind_mma_h_with_the_toolkit_folders():
    from tiletraffic.gpu.runtime.cuda_run import compile_kernel, nvrtc_problem
    problem = nvrtc_problem()
    if problem is not None:
        pytest.skip(f"NVRTC not here: {problem}")
    cuda = {"path": "k.cu", "kernel": "k", "build_options": (), "device_source":
            "#include <mma.h>\n__global__ void k(float *A) { A[threadIdx.x] = 1.0f; }\n"}
    function, name = compile_kernel(cuda)
    assert name == "k" and function is not None
