"""The compiled kernel's instruction counts: the instructions file, the model's issue term
from it (hand-computed), the estimator without a build, and the build path (skipped in one
line without NVIDIA's offline compilers)."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import tiletraffic as tt
from tiletraffic.analysis.cli import main
from tiletraffic.gpu.instructions import build as B
from tiletraffic.simulator.model.device_model import device_model
from tiletraffic.simulator.model.instruction_estimate import (GLOBAL_ADDRESS, KERNEL_PROLOGUE,
                                                              LOOP_OVERHEAD, UNROLL,
                                                              estimate_extra)
from tiletraffic.simulator.model.instructions import (ISSUE_METHOD, InstructionsError,
                                                      instructions_from_dict,
                                                      issued_from_build, read_instructions)

needs_tools = pytest.mark.skipif(B.tools_problem() is not None, reason=str(B.tools_problem()))

KERNEL = {"fma": 16, "local_load": 16, "barrier": 2, "integer": 10, "branch": 2}       # 46
LOOP = {"fma": 16, "local_load": 16, "barrier": 2, "integer": 4, "branch": 1}          # 39
DOCUMENT = {"format": "tiletraffic-instructions", "version": 1, "source": "by hand",
            "kernels": {"gemm_tiled": {"kernel": KERNEL, "loops": [
                {"name": "K step", "instructions_per_iteration": LOOP}]}}}


def test_the_reader_gives_per_kernel_and_per_loop_counts(tmp_path):
    path = tmp_path / "i.json"
    path.write_text(json.dumps(DOCUMENT))
    counts = read_instructions(path)
    kernel = counts.kernel("gemm_tiled")
    assert kernel.hot_loop.name == "K step" and kernel.hot_loop.total == 39
    assert counts.kernel("another name") is kernel          # a file of one kernel
    # 2 x 16 FLOP per iteration, none outside: 128 FLOP per work-item = 4 iterations
    assert kernel.per_sub_group(128) == 4 * 39 + (46 - 39)
    assert issued_from_build(kernel, 128 * 256, 256, 8) == 8 * 163
    assert instructions_from_dict(counts.to_dict()) == counts


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(format="x"), "not an instructions file"),
    (lambda d: d.update(version=9), "version 9 is not supported"),
    (lambda d: d["kernels"]["gemm_tiled"]["kernel"].update(fma=-1), "kernel.fma: must be a "
                                                                      "non-negative integer"),
    (lambda d: d["kernels"]["gemm_tiled"]["kernel"].update(flops=1), "unknown class 'flops'"),
    (lambda d: d["kernels"]["gemm_tiled"]["kernel"].update(integer=1),
     "has 39 instructions, more than the kernel's 37"),
])
def test_a_malformed_file_is_refused_in_one_line(change, message):
    document = json.loads(json.dumps(DOCUMENT))
    change(document)
    with pytest.raises(InstructionsError, match=message) as err:
        instructions_from_dict(document)
    assert "\n" not in str(err.value)


def test_a_file_that_is_not_utf8_is_refused_as_such_in_one_line(tmp_path):
    path = tmp_path / "counts.json"
    path.write_bytes(b'{"format": "\xe9t\xe9"}')
    with pytest.raises(InstructionsError) as err:
        read_instructions(path)
    assert str(err.value) == (f"{path}: not UTF-8 text (byte 0xe9 at offset 12); an "
                              "instructions file is JSON text in UTF-8")
    res = CliRunner().invoke(main, ["model", "gemm-tiled", "--instructions", str(path)])
    assert res.exit_code == 2 and "not UTF-8 text (byte 0xe9 at offset 12)" in res.stderr
    assert "Traceback" not in res.output


def test_the_issue_term_counts_the_builds_instructions():
    model = device_model("nvidia-h200")
    sch = tt.build("gemm-tiled", m=64, k=64, n=64, tile=16)
    counts = instructions_from_dict(DOCUMENT)
    launch = tt.model(sch, model, instructions=counts)
    # 16 work-groups of 256 (8 sub-groups), 128 FLOP per work-item: 4 iterations of the
    # loop (39) + 7 outside = 163 per sub-group; the busiest unit has 1 of 16 work-groups
    per_unit = 163 * 8
    rate = (model.clock_hz * model.sub_partitions_per_cu
            * model.warp_instructions_per_cycle_per_sub_partition)
    assert launch.prediction.time_terms_s["issue_s"] == pytest.approx(per_unit / rate)
    assert launch.prediction.methods["issue_s"] == ISSUE_METHOD
    plain = tt.model(sch, model).prediction
    assert "issue_s" not in plain.methods
    assert plain.time_terms_s["issue_s"] != launch.prediction.time_terms_s["issue_s"]


def test_model_takes_an_instructions_file_on_the_command_line(tmp_path):
    path = tmp_path / "i.json"
    path.write_text(json.dumps(DOCUMENT))
    args = ["model", "gemm-tiled", "--m", "64", "--k", "64", "--n", "64", "--tile", "16"]
    res = CliRunner().invoke(main, args + ["--instructions", str(path), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["methods"]["issue_s"] == ISSUE_METHOD
    path.write_text("{}")
    bad = CliRunner().invoke(main, args + ["--instructions", str(path)])
    assert bad.exit_code == 2 and "not an instructions file" in bad.output


def test_the_estimate_of_a_naive_gemm_is_the_hand_count():
    extra = estimate_extra(tt.build("gemm-naive", m=64, k=64, n=64))
    # prologue; the guard's two compares; K = 64 iterations unrolled by UNROLL: the loop's
    # add and compare and its branch; A[row][k] runs along k (one pointer per UNROLL
    # iterations), B[k][col] does not (one per access); the store of C outside the loop
    integer = (KERNEL_PROLOGUE + 2 + 64 * (LOOP_OVERHEAD - 1) / UNROLL + 64 / UNROLL + 64
               + GLOBAL_ADDRESS)
    assert extra.by_class == {"integer": integer, "move": 0.0, "branch": 64 / UNROLL}
    assert extra.notes == []


def test_the_classes_of_machine_instructions():
    assert [B.classify(op) for op in ("FFMA", "LDS.128", "STS", "LDG.E.128.CONSTANT",
                                      "STG.E", "BAR.SYNC.DEFER_BLOCKING", "IMAD.WIDE",
                                      "IMAD.MOV.U32", "HFMA2.MMA", "UIADD3", "BRA", "FADD",
                                      "F2I.TRUNC")] == [
        "fma", "local_load", "local_store", "global_load", "global_store", "barrier",
        "integer", "move", "move", "integer", "branch", "float", "other"]


def test_loops_of_a_listing_are_its_innermost_back_edges():
    ops = ["S2R", "MOV", "FFMA", "LDS", "IADD3", "ISETP.GE.AND", "BRA", "STG.E", "EXIT",
           "BRA", "NOP"]
    listing = [{"opcode": op, "operands": ""} for op in ops]
    listing[6]["operands"] = "0x20"        # back to instruction 2: the loop 2..6
    listing[9]["operands"] = "0x90"        # the padding: a branch to itself
    kernel = B.count_function({"function-name": "k", "start": 0, "length": 16 * len(ops),
                               "sass-instructions": listing})
    (loop,) = kernel.loops
    assert loop.instructions_per_iteration == {"fma": 1, "local_load": 1, "integer": 2,
                                               "branch": 1}
    assert sum(kernel.kernel.values()) == 9          # NOP and the self-branch left out


def test_without_the_tools_the_build_says_which_wheel(monkeypatch):
    monkeypatch.setattr(B, "find_nvrtc", lambda: None)
    monkeypatch.setattr(B, "find_tool", lambda name: None)
    assert "pip install nvidia-cuda-nvrtc-cu12" in B.tools_problem()
    with pytest.raises(B.InstructionToolsMissing, match="ptxas not found"):
        B.build_instructions(ptx="// nothing")
    res = CliRunner().invoke(main, ["instructions", "gemm-tiled", "--m", "64", "--k", "64",
                                    "--n", "64"])
    assert res.exit_code == 1 and res.output.strip().endswith("(or tiletraffic[cuda-tools])")


@needs_tools
def test_the_build_counts_the_tiled_gemms_k_step(tmp_path):
    sch = tt.build("gemm-tiled", m=64, k=64, n=64, tile=16)
    out = tmp_path / "tiled.json"
    counts = tt.instructions(sch, out=out)
    hot = counts.kernel("gemm_tiled").hot_loop
    assert hot.instructions_per_iteration["fma"] == 16           # one K step, unrolled
    assert hot.instructions_per_iteration["barrier"] == 2
    assert read_instructions(out) == counts
    launch = tt.model(sch, "nvidia-h200", instructions=str(out))
    assert launch.prediction.methods["issue_s"] == ISSUE_METHOD


def test_a_validation_case_takes_an_instructions_file(tmp_path):
    from tiletraffic.analysis.validation.cases import Case, CaseError
    from tiletraffic.analysis.validation.predict import predict_case

    path = tmp_path / "i.json"
    path.write_text(json.dumps(DOCUMENT))
    data = {"family": "gemm-tiled", "m": 64, "k": 64, "n": 64, "tile": 16,
            "instructions": str(path)}
    case = Case.from_dict(data)
    assert case.id.endswith(f"instructions={path}") and case.to_dict() == data
    model = device_model("nvidia-h200")
    predicted = predict_case(case, model)
    plain = predict_case(Case.from_dict({**data, "instructions": None}), model)
    assert predicted["time_terms_s"]["issue_s"] == pytest.approx(
        163 * 8 / (model.clock_hz * model.sub_partitions_per_cu
                   * model.warp_instructions_per_cycle_per_sub_partition))
    assert plain["time_terms_s"]["issue_s"] != predicted["time_terms_s"]["issue_s"]
    with pytest.raises(CaseError, match="instructions .* must be a text, got 3"):
        Case.from_dict({**data, "instructions": 3})
    path.write_text("[]")
    assert "not an instructions file" in predict_case(case, model)["error"]


@needs_tools
def test_the_command_prints_the_loops_and_writes_the_file(tmp_path):
    out = tmp_path / "naive.json"
    res = CliRunner().invoke(main, ["instructions", "gemm-naive", "--m", "64", "--k", "64",
                                    "--n", "64", "--out", str(out)])
    assert res.exit_code == 0, res.output
    counts = read_instructions(out)
    hot = counts.kernel("gemm_naive").hot_loop
    assert f"hot loop: {hot.name}" in res.output
    # the naive K loop: one FMA and a load of A and B per k, however far it is unrolled
    per = hot.instructions_per_iteration
    assert per["global_load"] == 2 * per["fma"]
    bad = CliRunner().invoke(main, ["instructions", "gemm-naive", "--arch", "90"])
    assert bad.exit_code == 2 and "'90' is not a target sm_XY" in bad.output
