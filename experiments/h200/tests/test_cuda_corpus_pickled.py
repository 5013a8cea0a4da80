"""The corpus cases' saved schedules moved onto the checkout that launches them, and the
shared-memory pass's choice of cases (experiments/h200/cuda_corpus/pickled.py)."""
from experiments.h200.cuda_corpus import pickled


def test_every_path_under_the_saving_checkout_moves_and_others_stay():
    cuda = {"path": "/a/wt/tests/k.cu", "build_options": ("-I/a/wt/inc", "-Irel", "-DX=1"),
            "device_headers": {"/a/wt/inc/h.h": "// h", "/usr/include/x.h": "// x"},
            "kernel": "k"}
    moved = pickled.rebased(cuda, "/a/wt", "/b/main")
    assert moved["path"] == "/b/main/tests/k.cu"
    assert moved["build_options"] == ("-I/b/main/inc", "-Irel", "-DX=1")
    assert moved["device_headers"] == {"/b/main/inc/h.h": "// h", "/usr/include/x.h": "// x"}
    assert moved["kernel"] == "k" and cuda["path"] == "/a/wt/tests/k.cu"   # a copy
    assert pickled.rebased(cuda, "/a/w", "/b")["path"] == "/a/wt/tests/k.cu"  # not a prefix


def test_the_shared_pass_takes_the_cases_predicted_with_shared_traffic():
    shared = pickled.shared_cases()
    assert "ck_gpu_reduction_sum_kernel" in shared and "sgemm_warp_tiled" in shared
    assert "ds_fused_add2_kernel" not in shared        # no shared memory
