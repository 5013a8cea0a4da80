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


def test_the_shared_table_sets_the_second_pass_beside_the_model():
    from experiments.h200.cuda_corpus import shared_table
    results = [{"case": "k", "run": {"result": {"device": "GPU X"}}, "shared": {"metrics": {
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": 105,
        "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": 100,
        "smsp__inst_executed_op_shared_ld.sum": 7,
        "smsp__sass_inst_executed_op_shared_ld.sum": 5}}},
               {"case": "none", "run": {}, "shared": {"error": "no report"}}]
    text = shared_table.table(results, {"k": {"local_load_wavefronts": 100,
                                              "local_store_wavefronts": 0}})
    lines = text.splitlines()
    assert lines[0].startswith("| kernel (on GPU X) | model ld wavefronts | L1 pipe ld")
    assert len(lines) == 3 and lines[2].startswith("| k | 100 | 105 | 100 | None | 0 |")
    assert lines[2].endswith("| 7 / 5 |")
