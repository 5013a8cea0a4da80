"""The fifth CUDA corpus call's cases, saved schedules and table
(experiments/h200/cuda_corpus/call5.py)."""
import json
import pickle

from experiments.h200.cuda_corpus import call5, pickled


def test_the_sgemms_run_first_and_every_case_is_predicted():
    names = [name for name, _, _ in call5.CASES]
    assert names[:2] == ["sgemm_warp_tiled", "bx_matmul_kernel"]
    predicted = json.loads(call5.PREDICTED.read_text())
    assert list(predicted) == names
    assert all(predicted[n]["sets"] == sets for n, _, sets in call5.CASES)
    assert call5.inputs_of("ds_LayerNormBackward2") == "ones"
    assert call5.inputs_of("ds_Transpose_Kernel") == "normal"


def test_chosen_cases_are_saved_numbered_in_their_order(tmp_path):
    name, launch, sets = call5.CASES[4]                   # ds_Transpose_Kernel, small
    pickled.prepare(tmp_path, [(name, launch / f"{name}.toml", sets, "normal")])
    saved = sorted(p.name for p in tmp_path.iterdir())
    assert saved == [f"00_{name}.pkl"]
    record = pickle.loads((tmp_path / saved[0]).read_bytes())
    assert record["case"] == name and record["kernel"] == "Transpose_Kernel"


def test_the_card_is_the_one_nvidia_smi_names(tmp_path):
    env = tmp_path / "environment.txt"
    env.write_text("checkout: /x\nGPU 0: NVIDIA H200 (UUID: GPU-1)\nNVIDIA H200, 580\n")
    assert call5.card_named(env) == "NVIDIA H200"
    assert call5.card_named(tmp_path / "none.txt") is None


def test_the_table_sets_pipe_and_sass_counts_beside_the_model():
    predicted = {"k": {"sets": {"N": 8}, "global_load_requests": 4, "global_load_sectors": 16,
                       "global_store_requests": 1, "global_store_sectors": 4,
                       "local_load_wavefronts": 100, "local_store_wavefronts": 10},
                 "absent": {"sets": {}}}
    metrics = {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": 4,
               "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 16,
               "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": 1,
               "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": 4,
               "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": 105,
               "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": 10}
    results = [{"case": "k", "sets": {"N": 8},
                "run": {"rc": 0, "result": {"device": "GPU X", "checks": {"C": True},
                                            "median_s": 1e-3}},
                "ncu": {"metrics": metrics},
                "shared": {"metrics": {
                    "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": 100,
                    "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_st.sum": 10}}},
               {"case": "not predicted", "sets": {}, "run": {}, "ncu": {}}]
    text = call5.table(results, predicted, "NVIDIA H100 80GB HBM3")
    lines = text.splitlines()
    assert "run on NVIDIA H100 80GB HBM3 (check, median)" in lines[0]
    assert len([line for line in lines if line.startswith("| k |")]) == 6
    assert "| local_load_wavefronts | 100 | 105 | 1.0500 | 100 | 1 (equal) |" in text
    assert "equal: 5 of 6 measured counts (1 cases)" in text
    assert "SASS instructions: 2 of 2 equal" in text
    assert lines[-1] == "not run: absent"
