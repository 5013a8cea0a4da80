"""`tiletraffic tune LAUNCH.toml --param ...`: a kernel's own macros ranked by the model, the
best measured on PoCL after every launch's check, the regret reported."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tiletraffic.analysis.cli import main
from tiletraffic.analysis.tune.launch import parse_params, tune_launch
from tiletraffic.analysis.tune.tuner import TuneError

LAUNCH = Path(__file__).resolve().parent.parent / "examples" / "opencl" / "mm_tiled.toml"


def test_model_only_ranks_and_rejects_with_reasons(tmp_path):
    doc = tune_launch(LAUNCH, {"TS": [4, 8, 16, 32], "WPT": [1, 2, 3]}, ["TS % WPT == 0"],
                      sets={"N": 48}, top=0, out=tmp_path / "t.json")
    labels = {r["label"]: r for r in doc["rejected"]}
    # WPT = 3 divides no TS; N = 48 is not a multiple of TS = 32 (global size 48 vs 32)
    assert all(labels[f"TS={ts} WPT=3"]["stage"] == "constraint" for ts in (4, 8, 16, 32))
    assert labels["TS=32 WPT=1"]["stage"] == "builder"
    assert "multiple" in labels["TS=32 WPT=1"]["reasons"][0]
    ranked = doc["predictions"]
    assert len(ranked) == 12 - len(doc["rejected"])
    times = [p["predicted_time_s"] for p in ranked]
    assert times == sorted(times) and [p["predicted_rank"] for p in ranked] == \
        list(range(1, len(ranked) + 1))
    # the flops of every candidate are the GEMM's: the macros change the schedule, not the work
    assert {p["flop"] for p in ranked} == {2 * 48 ** 3}
    saved = json.loads((tmp_path / "t.json").read_text())
    assert saved["summary"]["modelled"] == len(ranked)


def test_bad_arguments():
    with pytest.raises(TuneError, match="NAME=V1,V2"):
        parse_params(["TS"])
    with pytest.raises(TuneError, match="integers"):
        parse_params(["TS=8,x"])
    assert parse_params(["TS=8,0x10,32u", "OFF=-1"]) == {"TS": [8, 16, 32], "OFF": [-1]}
    with pytest.raises(TuneError, match=r"--param 'TS=8,010': integer literal 010 .* is 8"):
        parse_params(["TS=8,010"])
    with pytest.raises(TuneError, match="--constraint"):
        tune_launch(LAUNCH, {"TS": [8]}, ["TS %% 2"], top=0)
    with pytest.raises(TuneError, match="no valid candidate"):
        tune_launch(LAUNCH, {"TS": [8]}, ["TS > 100"], top=0)
    # a --set of a tuned macro would build every candidate at the set value, labelled wrong
    with pytest.raises(TuneError, match=r"TS given both as a tuned parameter \(--param\) and "
                                        r"as a size \(--set\)"):
        tune_launch(LAUNCH, {"TS": [8, 16]}, sets={"TS": 4}, top=0)


def test_an_earlier_results_file_is_moved_to_history_not_overwritten(tmp_path):
    out = tmp_path / "t.json"
    first = tune_launch(LAUNCH, {"TS": [4, 8]}, sets={"N": 32}, top=0, out=out)
    lines = []
    second = tune_launch(LAUNCH, {"TS": [8, 16]}, sets={"N": 32}, top=0, out=out,
                         log=lines.append)
    moved = Path(second["meta"]["previous_results_moved_to"])
    assert moved.parent == tmp_path / "history" and moved.exists()
    assert json.loads(moved.read_text())["meta"]["params"] == first["meta"]["params"]
    assert json.loads(out.read_text())["meta"]["params"] == {"TS": [8, 16]}
    assert any(str(moved) in line for line in lines)


def test_a_run_into_a_results_file_another_run_writes_waits_for_it(tmp_path):
    """Two runs into one results file: the second waits (saying so) until the first has
    released the file, then moves the first's finished results to history/."""
    import threading

    from tiletraffic.analysis.files import FolderLock
    out = tmp_path / "t.json"
    first = FolderLock.of_file(out)
    first.acquire()                   # a run under way: its file is its own
    out.write_text(json.dumps({"meta": {"created_utc": "2026-01-01T00:00:00Z"},
                               "status": "complete"}))
    lines, done = [], []
    second = threading.Thread(target=lambda: done.append(tune_launch(
        LAUNCH, {"TS": [4, 8]}, sets={"N": 32}, top=0, out=out, log=lines.append)))
    second.start()
    second.join(timeout=3)
    assert second.is_alive() and not done       # waiting, nothing written or moved
    assert any(line.startswith("waiting: process") for line in lines)
    assert json.loads(out.read_text())["status"] == "complete" and \
        not (tmp_path / "history").exists()
    first.release()
    second.join(timeout=120)
    moved = Path(done[0]["meta"]["previous_results_moved_to"])
    assert json.loads(moved.read_text())["status"] == "complete"
    assert json.loads(out.read_text())["meta"]["params"] == {"TS": [4, 8]}
    assert not (tmp_path / ".t.json.lock").exists()


def test_a_parameter_nothing_uses_is_refused(tmp_path):
    result = CliRunner().invoke(main, ["tune", str(LAUNCH), "--param", "TSX=4,8", "--top",
                                       "0", "--out", str(tmp_path / "t.json")])
    assert result.exit_code == 2
    assert "--param TSX: neither mm_tiled.cl nor mm_tiled.toml uses TSX" in result.output
    assert "TS, WPT, RTS" in result.output            # the macros it could have meant
    assert not (tmp_path / "t.json").exists()


def test_a_parameter_the_source_defines_itself_is_refused(tmp_path):
    # the source's own #define (no #ifndef) replaces every -DTS=value: one kernel
    (tmp_path / "k.cl").write_text(
        "#define TS 16\n"
        "__kernel void scale(__global float *y) {\n"
        "    y[get_global_id(0) * TS / TS] *= 2.0f;\n}\n")
    (tmp_path / "k.toml").write_text(
        'source = "k.cl"\nkernel = "scale"\n[sizes]\nn = 256\n[launch]\n'
        'global_size = ["n"]\nlocal_size = [16]\n[args]\ny = { shape = ["n"], access = "inout" }\n')
    out = tmp_path / "t.json"
    result = CliRunner().invoke(main, ["tune", str(tmp_path / "k.toml"), "--param", "TS=8,16",
                                       "--top", "0", "--out", str(out)])
    assert result.exit_code == 2, result.output
    message = result.output.strip()
    assert "\n" not in message and "Traceback" not in message
    assert "--param TS: k.cl:1:9 #defines TS itself" in message
    assert "every value builds the same kernel" in message and "#ifndef TS" in message
    assert not out.exists()


def test_a_cuda_parameter_the_source_defines_itself_or_never_uses_is_refused(tmp_path):
    (tmp_path / "k.cu").write_text(
        "#define BLOCK 16\n"
        "__global__ void scale(float *y) {\n"
        "  y[blockIdx.x * BLOCK + threadIdx.x] *= 2.0f;\n}\n")
    (tmp_path / "k.toml").write_text(
        'source = "k.cu"\nkernel = "scale"\n[sizes]\nn = 256\n[launch]\n'
        'grid = [16]\nblock = [16]\n[args]\ny = { shape = ["n"], access = "inout" }\n')
    with pytest.raises(TuneError, match="--param BLOCK: k.cu:1:9 #defines BLOCK itself"):
        tune_launch(tmp_path / "k.toml", {"BLOCK": [8, 16, 32]}, top=0)
    with pytest.raises(TuneError, match="neither k.cu nor k.toml uses FOO"):
        tune_launch(tmp_path / "k.toml", {"FOO": [1, 2]}, top=0)


def test_a_parameter_of_the_launch_file_or_a_header_is_used(tmp_path):
    # WG only in the launch file's local size; TILE only in an included header
    (tmp_path / "tile.h").write_text("#define STEP TILE\n")
    (tmp_path / "k.cl").write_text(
        '#include "tile.h"\n'
        "__kernel void scale(__global float *y, const int n) {\n"
        "    int i = get_global_id(0) * STEP;\n"
        "    if (i < n) y[i] = 2.0f * y[i];\n}\n")
    (tmp_path / "k.toml").write_text(
        'source = "k.cl"\nkernel = "scale"\nbuild_options = "-DTILE=1"\n'
        "[sizes]\nn = 256\n[launch]\nglobal_size = [\"n\"]\nlocal_size = [\"WG\"]\n"
        '[args]\ny = { shape = ["n"], access = "inout" }\nn = "n"\n')
    doc = tune_launch(tmp_path / "k.toml", {"WG": [32, 64], "TILE": [1, 2]}, top=0)
    assert doc["summary"]["modelled"] == 4
    with pytest.raises(TuneError, match="neither k.cl nor k.toml uses STEPS"):
        tune_launch(tmp_path / "k.toml", {"STEPS": [1, 2]}, top=0)


def test_candidates_the_kernels_required_work_group_size_refuses_are_rejected(tmp_path):
    (tmp_path / "k.cl").write_text(
        "__kernel __attribute__((reqd_work_group_size(32, 1, 1)))\n"
        "void scale(__global float *y, const int n) {\n"
        "    int i = get_global_id(0);\n"
        "    if (i < n) y[i] = 2.0f * y[i];\n}\n")
    (tmp_path / "k.toml").write_text(
        'source = "k.cl"\nkernel = "scale"\n'
        "[sizes]\nn = 256\n[launch]\nglobal_size = [\"n\"]\nlocal_size = [\"WG\"]\n"
        '[args]\ny = { shape = ["n"], access = "inout" }\nn = "n"\n')
    doc = tune_launch(tmp_path / "k.toml", {"WG": [16, 32, 64]}, top=0)
    assert [p["label"] for p in doc["predictions"]] == ["WG=32"]
    rejected = {r["label"]: r for r in doc["rejected"]}
    assert set(rejected) == {"WG=16", "WG=64"}
    for wg in (16, 64):
        r = rejected[f"WG={wg}"]
        assert r["stage"] == "builder"
        assert f"requires the work-group size (32, 1, 1) (reqd_work_group_size), but the " \
               f"launch's local size is ({wg}, 1, 1)" in r["reasons"][0]


def test_top_candidates_measured_on_pocl_with_regret(pocl, tmp_path):
    out = tmp_path / "tune.json"
    result = CliRunner().invoke(main, [
        "tune", str(LAUNCH), "--param", "TS=4,8,16", "--param", "WPT=1,2",
        "--constraint", "TS % WPT == 0", "--set", "N=32", "--top", "2", "--device", pocl,
        "--rounds", "1", "--out", str(out), "--seed", "3"])
    assert result.exit_code == 0, result.output
    assert "regret:" in result.output
    doc = json.loads(out.read_text())
    measured = doc["measurements"]
    assert [m["predicted_rank"] for m in measured] == [1, 2]
    for m in measured:
        assert m["status"] == "ok" and m["check"]["ok"], m
        assert len(m["rounds"][0]["check"]["checked_launches"]) >= 1
    summary = doc["summary"]
    assert summary["regret_ratio"] >= 1.0
    assert summary["pick"]["predicted_rank"] == 1
    # a CPU under a model completed from its OpenCL limits: said, in the JSON and the table
    assert doc["meta"]["model_describes_device"] is False
    assert "not a model of" in result.output and "the measured times, not the predicted" \
        in result.output


def test_every_measured_candidate_failing_is_a_fault_in_one_line(pocl, tmp_path, monkeypatch):
    from tiletraffic.gpu.runtime import checked_run as measure
    from tiletraffic.gpu.runtime.launch import KernelBuildError

    def refuse(*args, **kwargs):
        raise KernelBuildError("OpenCL build failed on the test device:\nerror: made up", "log")

    monkeypatch.setattr(measure, "run_on_device", refuse)
    result = CliRunner().invoke(main, [
        "tune", str(LAUNCH), "--param", "TS=4,8", "--set", "N=32", "--top", "2",
        "--device", pocl, "--rounds", "1", "--out", str(tmp_path / "t.json"), "--seed", "3"])
    assert result.exit_code == 1, result.output
    assert "2 measured on" in result.output and "(0 ran)" in result.output
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("error: none of the 2 measured candidates ran (") and "made up" in last


def test_each_candidate_is_checked_before_launch_once_for_all_its_rounds(
        pocl, tmp_path, checks_before_launch):
    doc = tune_launch(LAUNCH, {"TS": [4, 8]}, [], sets={"N": 32}, top=2, rounds=2,
                      device=pocl, seed=5, out=tmp_path / "t.json")
    assert [len(m["rounds"]) for m in doc["measurements"]] == [2, 2]
    assert all(m["status"] == "ok" and m["check"]["ok"] for m in doc["measurements"])
    assert len(checks_before_launch) == 2


def test_a_value_given_twice_is_tried_once_with_a_note(tmp_path):
    out = tmp_path / "t.json"
    result = CliRunner().invoke(main, ["tune", str(LAUNCH), "--param", "TS=8,16,0x8",
                                       "--set", "N=32", "--top", "0", "--out", str(out)])
    assert result.exit_code == 0, result.output
    notes = [line for line in result.stderr.splitlines() if "more than once" in line]
    assert notes == ["note: --param TS: 8 given more than once; each value is tried once"]
    doc = json.loads(out.read_text())
    assert doc["meta"]["params"] == {"TS": [8, 16]}
    assert sorted(p["label"] for p in doc["predictions"]) == ["TS=16", "TS=8"]


def test_no_valid_candidate_writes_and_moves_nothing_and_counts_the_reasons(tmp_path):
    earlier = tmp_path / "t.json"
    earlier.write_text("{}")
    for out in (earlier, tmp_path / "new" / "t.json"):
        result = CliRunner().invoke(main, [
            "tune", str(LAUNCH), "--param", "TS=8,16,32", "--param", "WPT=3,5",
            "--constraint", "TS % WPT == 0", "--set", "N=48", "--top", "0", "--out", str(out)])
        assert result.exit_code == 2, result.output
        text = " ".join(result.output.split())
        assert "no valid candidate among the 6 combinations" in text
        assert "all 6 rejected" in text and "constraint 'TS % WPT == 0' fails (6)" in text
    assert earlier.read_text() == "{}"
    assert not (tmp_path / "history").exists() and not (tmp_path / "new").exists()


def test_a_constraint_that_divides_by_zero_is_bad_input_and_moves_nothing(tmp_path):
    out = tmp_path / "tune.json"
    out.write_text("{}")
    result = CliRunner().invoke(main, ["tune", str(LAUNCH), "--param", "TS=8,16", "--set",
                                       "N=32", "--top", "0", "--constraint", "TS % 0 == 0",
                                       "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1
    assert "'TS % 0 == 0': division by zero with TS = 8" in result.output
    assert out.read_text() == "{}" and not (tmp_path / "history").exists()


def test_a_kernel_whose_classes_are_not_proved_is_noted_once_and_modelled_whole(tmp_path):
    (tmp_path / "g.cl").write_text(
        "__kernel void k(int N, __global const float* x, __global float* y) {\n"
        "  int i = get_global_id(0);\n  float acc = x[i];\n"
        "  if (get_group_id(0) % 5 == G) { for (int j = 0; j < 16; j++) acc += x[j]; }\n"
        "  y[i] = acc;\n}\n")
    (tmp_path / "g.toml").write_text(
        'source = "g.cl"\nkernel = "k"\n[sizes]\nN = 1024\n[launch]\nglobal_size = ["N"]\n'
        'local_size = ["16"]\n[args]\nN = "N"\nx = { shape = ["N"], access = "in" }\n'
        'y = { shape = ["N"], access = "out" }\n')
    said = []
    doc = tune_launch(tmp_path / "g.toml", {"G": [2, 3]}, top=0, log=said.append)
    notes = [line for line in said if "work-group classes are not proved" in line]
    assert len(notes) == 1 and "group_id(0) % 5" in notes[0], notes
    # counted whole: 16 additions by each of the 16 work-items of the 13 work-groups (of 64)
    # whose id is G modulo 5
    assert [p["flop"] for p in doc["predictions"]] == [13 * 16 * 16, 13 * 16 * 16]


def test_the_text_header_names_the_sizes_tuned(tmp_path):
    doc = tune_launch(LAUNCH, {"TS": [8, 16]}, sets={"N": 48}, top=0, out=tmp_path / "t.json")
    assert doc["meta"]["sizes"] == {"N": 48}
    from tiletraffic.analysis.tune.launch import table
    assert table(doc).splitlines()[0].startswith(f"tune {LAUNCH} (mmul_tiled) at N=48: ")
    # the launch file's own size where --set does not replace it
    result = CliRunner().invoke(main, ["tune", str(LAUNCH), "--param", "TS=8,16", "--top", "0",
                                       "--out", str(tmp_path / "u.json")])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0].startswith(f"tune {LAUNCH} (mmul_tiled) at N=256: ")
    # results written before the sizes were recorded: the sizes set, else none named
    older = {**doc, "meta": {k: v for k, v in doc["meta"].items() if k != "sizes"}}
    assert table(older).splitlines()[0].startswith(f"tune {LAUNCH} (mmul_tiled) at N=48: ")
    older["meta"]["sets"] = {}
    assert table(older).splitlines()[0].startswith(f"tune {LAUNCH} (mmul_tiled): ")


def test_a_refusal_is_grouped_by_its_first_clause_cut_at_a_word():
    from tiletraffic.analysis.tune.launch import REJECTION_KEY_CHARS, rejection_key
    assert rejection_key("k.toml: --param TS: k.comp: TS: not a specialization constant of "
                         "the shader; its specialization constants: none") == \
        "k.comp: TS: not a specialization constant of the shader"
    long = ("k.toml: --param TS: shaders/a/long/path/to/the/compute/shader.comp: TS: not a "
            "specialization constant of the shader; its specialization constants: none")
    key = rejection_key(long)
    assert len(key) <= REJECTION_KEY_CHARS and key.endswith(" …")
    assert long.split(": ", 2)[-1].startswith(key.removesuffix(" …") + " ")  # whole words
