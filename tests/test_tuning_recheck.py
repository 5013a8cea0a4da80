"""The tuner's recheck with the compiled kernels' registers: on PoCL
(no registers reported), with the driver's reader replaced by given counts (the re-rank is
what ``model_launch`` gives with them), a failing build, a refused register count, resume,
the judge's estimate-based pick on hand-made results, and the command line."""
from __future__ import annotations

import dataclasses
import json
import warnings

import pytest
from click.testing import CliRunner

import tiletraffic as tt
from tiletraffic.analysis.tune import tuner, recheck as tuning_recheck, stats as tuning_stats
from tiletraffic.analysis.cli import main
from tiletraffic.analysis.tune.space import load_space
from tiletraffic.gpu.codegen import generate as codegen
from tiletraffic.gpu.runtime import launch as runtime
from tiletraffic.gpu.devices.kernel_resources import KernelResources
from tiletraffic.gpu.runtime.launch import list_devices
from tiletraffic.simulator.model.device_model import device_model
from tiletraffic.simulator.model.launch import model_launch

HAS_POCL = any(d.is_pocl for d in list_devices())
needs_pocl = pytest.mark.skipif(not HAS_POCL, reason="PoCL is not installed")

SPACE = """
operation = "gemm"
[[family]]
name = "gemm-tiled"
[family.parameters]
tile = [8, 16]
[[family]]
name = "gemm-vectorized"
[family.parameters]
tile = [8]
wg_rows = [8]
tm = [4]
tn = [4]
bk = [16]
"""
"""Three candidates, all valid at 512 x 512 x 64. On the nvidia-h200 model (first pass:
gemm-vectorized's registers estimated from its private floats, :func:`vec_estimate`;
gemm-tiled's not modelled) they rank vectorized 4x4 (6.0 us), tiled 16 (8.1 us), tiled 8
(10.4 us)."""
SIZES = (512, 512, 64)
VEC = "gemm-vectorized tile=8 wg_rows=8 tm=4 tn=4 bk=16"


def vec_estimate(space_file) -> int:
    """The first pass's registers of VEC: ``simulator.model.registers.estimate_registers``."""
    from tiletraffic.simulator.model.registers import estimate_registers

    cand = next(c for _, c in load_space(space_file).candidates() if c.label == VEC)
    return estimate_registers(cand.build(*SIZES)).registers_per_work_item


def write(tmp_path, text=SPACE, name="space.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def fake_reader(counts: dict):
    """A stand-in for ``gpu.runtime.launch.kernel_resources`` that reports ``counts`` (kernel name,
    local size) -> registers per work-item, as NVIDIA's build log would; the build itself
    is PoCL's, real."""
    import pyopencl as cl

    def reader(target, cl_kernel, name, log, how=""):
        size = tuple(int(s) for s in cl_kernel.get_work_group_info(
            cl.kernel_work_group_info.COMPILE_WORK_GROUP_SIZE, target.device))[:2]
        return KernelResources(registers_per_work_item=counts[(name, size)],
                               spill_store_bytes=0, spill_load_bytes=0, stack_frame_bytes=0,
                               local_mem_bytes=0, source="given by the test")
    return reader


def modelled(space_file, label, registers):
    """``model_launch``'s prediction of the candidate ``label`` of ``space_file`` at SIZES
    on nvidia-h200 with ``registers`` per work-item (None: the estimate)."""
    cand = next(c for _, c in load_space(space_file).candidates() if c.label == label)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model_launch(cand.build(*SIZES), device_model("nvidia-h200"),
                            registers_per_work_item=registers).prediction


# ----------------------------------------------------------------------------- on PoCL

@needs_pocl
def test_on_pocl_the_recheck_builds_and_says_once_that_no_registers_are_reported(
        tmp_path, monkeypatch):
    notes = []
    out = tmp_path / "t.json"
    res = tt.tune(64, 64, 64, device="pocl", space=write(tmp_path), top=1, out=out,
                  seed=2, log=notes.append)
    # said once: in the table's recheck line, not in the notes as well
    assert not [n for n in notes if "not reported" in n or "no registers" in n], notes
    said = [line for line in res.table().splitlines() if "no registers" in line]
    assert len(said) == 1 and "Portable Computing Language" in said[0]
    info = res.data["recheck"]
    assert (info["requested"], info["rechecked"], info["compiled"], info["not_reported"],
            info["rejected"], info["remodelled"]) == (3, 3, 0, 3, 0, 0), "default 4 x top, " \
        "at most the 3 modelled"
    for p in res.predictions:
        assert p["recheck"]["status"] == "not reported"
        assert p["recheck"]["resources"]["registers_per_work_item"] is None
        assert p["predicted_rank"] == p["estimate_rank"]
        assert p["predicted_time_s"] == p["estimate_predicted_time_s"]
        assert p["compiled_rank"] is None and p["compiled_predicted_time_s"] is None
        assert p["registers_source"] == ("estimated" if p["family"] == "gemm-vectorized"
                                         else "not modelled")
    assert res.summary["recheck"]["entered"] == [] and res.summary["estimate_pick"][
        "same_as_pick"] is True
    assert "the driver reports no registers (not reported by Portable Computing " \
           "Language" in res.table()
    assert json.loads(out.read_text()) == res.data
    # resume: the builds are reused (same device and driver), nothing is built again
    monkeypatch.setattr(tuning_recheck, "compiled_resources",
                        lambda *a: pytest.fail("built again"))
    again = tt.tune(64, 64, 64, device="pocl", space=write(tmp_path), top=1, out=out,
                    resume=True)
    assert again.data["recheck"]["reused"] == 3
    assert [p["label"] for p in again.predictions] == [p["label"] for p in res.predictions]


@needs_pocl
def test_compiled_registers_rerank_as_model_launch_gives_with_them(tmp_path, monkeypatch):
    """Given registers: vectorized 4x4 its estimate (kept, not re-modelled), tiled 16
    255, tiled 8 32. Tiled 16's 256 work-items at 255 registers: a sub-group takes
    255 x 32 = 8160, rounded to 8192 registers; 16384 / 8192 = 2 sub-groups per
    sub-partition, 8 per compute unit, its work-group has 8: 1 resident work-group instead
    of the 8 that work-items allow, so its predicted time grows (8.1 -> 25.6 us) and it
    moves from rank 2 below tiled 8 (32 registers: 32 resident, as without a limit)."""
    space = write(tmp_path)
    estimate = vec_estimate(space)
    counts = {("gemm_vectorized", (8, 8)): estimate, ("gemm_tiled", (16, 16)): 255,
              ("gemm_tiled", (8, 8)): 32}
    monkeypatch.setattr(runtime, "kernel_resources", fake_reader(counts))
    res = tt.tune(*SIZES, device="pocl", device_model="nvidia-h200", space=space, top=0,
                  recheck=3)
    assert res.measurements == []
    by = {p["label"]: p for p in res.predictions}
    vec, t16, t8 = (by[VEC],
                    by["gemm-tiled tile=16"], by["gemm-tiled tile=8"])
    assert [p["estimate_rank"] for p in (vec, t16, t8)] == [1, 2, 3]
    assert [p["label"] for p in res.predictions] == [vec["label"], t8["label"], t16["label"]]
    assert [p["predicted_rank"] for p in (vec, t8, t16)] == [1, 2, 3]
    assert [p["compiled_rank"] for p in (vec, t8, t16)] == [1, 2, 3]
    for p, registers in ((vec, estimate), (t16, 255), (t8, 32)):
        want = modelled(space, p["label"], registers)
        assert p["registers_source"] == "compiled" and p["registers_per_work_item"] == registers
        assert p["compiled_predicted_time_s"] == want.predicted_time_s == p["predicted_time_s"]
        assert p["resident_work_groups_per_cu"] == want.resident_work_groups_per_cu
        assert p["estimate_predicted_time_s"] == modelled(space, p["label"],
                                                          None).predicted_time_s
    assert t16["resident_work_groups_per_cu"] == 1 and t16["estimate"][
        "resident_work_groups_per_cu"] == 8
    assert t8["resident_work_groups_per_cu"] == 32
    assert t16["predicted_time_s"] > t8["predicted_time_s"] > t16["estimate_predicted_time_s"]
    assert vec["recheck"]["prediction"]["remodelled"] is False
    assert t16["recheck"]["prediction"]["remodelled"] is True
    info = res.data["recheck"]
    assert (info["compiled"], info["remodelled"], info["not_reported"]) == (3, 2, 0)
    text = res.table()
    assert "compiled registers for 3 (2 re-modelled, the others as estimated)" in text
    header = next(line for line in text.splitlines() if line.startswith("rank"))
    assert "255 compiled" in text and " est. " in header
    # a pool of processes re-models what one process does
    two = tt.tune(*SIZES, device="pocl", device_model="nvidia-h200", space=write(tmp_path),
                  top=0, recheck=3, jobs=2)
    assert [(p["label"], p["predicted_time_s"]) for p in two.predictions] == \
        [(p["label"], p["predicted_time_s"]) for p in res.predictions]


@needs_pocl
def test_the_measured_top_comes_from_the_reranking_and_says_what_changed(
        tmp_path, monkeypatch):
    counts = {("gemm_vectorized", (8, 8)): vec_estimate(write(tmp_path)),
              ("gemm_tiled", (16, 16)): 255, ("gemm_tiled", (8, 8)): 32}
    monkeypatch.setattr(runtime, "kernel_resources", fake_reader(counts))
    res = tt.tune(*SIZES, device="pocl", device_model="nvidia-h200", space=write(tmp_path),
                  top=2, seed=4, rounds=1)
    assert [m["label"] for m in res.measurements] == [VEC, "gemm-tiled tile=8"]
    s = res.summary
    assert s["recheck"]["entered"] == ["gemm-tiled tile=8"]
    assert s["recheck"]["left"] == ["gemm-tiled tile=16"]
    assert s["estimate_pick"]["label"] == s["pick"]["label"] and \
        s["estimate_pick"]["same_as_pick"]
    assert "top 2 after the recheck: 1 entered (gemm-tiled tile=8), 1 left (gemm-tiled " \
           "tile=16)" in res.table()


@needs_pocl
def test_a_failing_build_is_a_rejection_with_its_log_and_the_tuning_goes_on(
        tmp_path, monkeypatch):
    real = codegen.generate
    bad_line = []

    def broken(schedule):  # tiled 16 gets a source PoCL's compiler refuses
        kernel = real(schedule)
        if schedule.family == "gemm-tiled" and schedule.tile == 16:
            source = kernel.source.rstrip("\n") + "\nnot_c_at_all;\n"
            bad_line.append(source.count("\n"))
            kernel = dataclasses.replace(kernel, source=source)
        return kernel

    monkeypatch.setattr(codegen, "generate", broken)
    res = tt.tune(64, 64, 64, device="pocl", space=write(tmp_path), top=2, seed=1, rounds=1)
    rejected = [r for r in res.rejected if r["stage"] == "build"]
    assert [r["label"] for r in rejected] == ["gemm-tiled tile=16"]
    assert rejected[0]["reasons"][0].startswith("KernelBuildError: OpenCL build failed")
    log = rejected[0]["log"]  # PoCL's compiler's own words, at the line added
    assert "error:" in log and f":{bad_line[0]}:1:" in log
    assert rejected[0]["estimate_rank"] >= 1
    assert "gemm-tiled tile=16" not in [p["label"] for p in res.predictions]
    assert [m["status"] for m in res.measurements] == ["ok", "ok"]
    assert res.data["recheck"]["rejected"] == 1 and res.data["recheck"]["rechecked"] == 2
    assert "1  the OpenCL build failed" in res.table()


@needs_pocl
def test_compiled_registers_the_model_refuses_reject_the_candidate(tmp_path, monkeypatch):
    counts = {("gemm_vectorized", (8, 8)): 300, ("gemm_tiled", (16, 16)): 40,
              ("gemm_tiled", (8, 8)): 40}
    monkeypatch.setattr(runtime, "kernel_resources", fake_reader(counts))
    res = tt.tune(*SIZES, device="pocl", device_model="nvidia-h200", space=write(tmp_path),
                  top=0, recheck=1)
    assert [r["stage"] for r in res.rejected] == ["recheck"]
    assert "300 registers" in res.rejected[0]["reasons"][0]
    assert res.rejected[0]["whys"] == ["the model refused the compiled registers (ValueError)"]
    assert [p["estimate_rank"] for p in res.predictions] == [2, 3], "rank 1 left a gap"
    assert all(p.get("recheck") is None for p in res.predictions)


# ----------------------------------------------------------------------------- the judge

def _entry(label, rank, estimate_rank, median_ms=None, status="ok"):
    p = {"label": label, "family": "gemm-tiled", "params": {}, "predicted_rank": rank,
         "estimate_rank": estimate_rank, "predicted_time_s": rank * 1e-3,
         "registers_source": "compiled", "registers_per_work_item": 64}
    m = None if median_ms is None else {
        "label": label, "family": "gemm-tiled", "params": {}, "status": status,
        "predicted_rank": rank, "predicted_time_s": rank * 1e-3, "median_s": median_ms * 1e-3,
        "spread_s": 1e-6, "gflop_per_s": 1.0, "check": {"ok": True, "error_over_tolerance": 0}}
    return p, m


def test_the_estimate_pick_and_its_regret_on_hand_made_results():
    """The recheck moved b (estimate rank 1) to rank 2 and a (estimate rank 2) to rank 1.
    Measured a 1.2 ms, b 1.0 ms: the pick a has regret 1.2x; the estimate's pick b was
    measured and is the best (1.0x). When b is not measured, it is said so."""
    rows = [_entry("a", 1, 2, 1.2), _entry("b", 2, 1, 1.0), _entry("c", 3, 3)]
    info = {"requested": 3, "device": "dev", "rechecked": 3, "compiled": 3,
            "not_reported": 0, "rejected": 0, "remodelled": 2, "reused": 0,
            "not_reported_why": None, "top_before": ["b"], "top_after": ["a"]}
    doc = {"meta": {"m": 1, "n": 1, "k": 1, "space": "s", "device_model": "x",
                    "device": None}, "rejected": [], "recheck": info,
           "predictions": [p for p, _ in rows], "measurements": [m for _, m in rows if m]}
    s = tuning_stats.summarize(doc)
    assert s["pick"]["label"] == "a" and s["regret_ratio"] == pytest.approx(1.2)
    assert s["estimate_pick"] == {"label": "b", "estimate_rank": 1, "measured": True,
                                  "median_s": 1e-3, "regret_ratio": 1.0,
                                  "same_as_pick": False}
    assert s["recheck"]["entered"] == ["a"] and s["recheck"]["left"] == ["b"]
    text = tuning_stats.table(doc)
    assert "the estimate-based pick b (estimate rank 1): 1.0000 ms, regret 1.000x" in text
    doc["measurements"] = [rows[0][1]]
    s = tuning_stats.summarize(doc)
    assert s["estimate_pick"] == {"label": "b", "estimate_rank": 1, "measured": False}
    assert "the estimate-based pick b (estimate rank 1) was not measured" in \
        tuning_stats.table(doc)


# ----------------------------------------------------------------------------- command line

def test_cli_documents_recheck_and_refuses_a_negative_one(tmp_path):
    res = CliRunner().invoke(main, ["tune", "gemm", "--help"])
    assert "--recheck" in res.output and "compiled registers" in " ".join(res.output.split())
    res = CliRunner().invoke(main, ["tune", "gemm", "--m", "8", "--n", "8", "--k", "8",
                                    "--recheck", "-1", "--out", str(tmp_path / "x.json")])
    assert res.exit_code == 2 and "Invalid value for '--recheck'" in res.output
    with pytest.raises(tuner.TuneError, match="recheck must be an integer >= 0, got 'x'"):
        tt.tune(8, 8, 8, top=0, recheck="x")


@needs_pocl
def test_cli_recheck_on_pocl_writes_it_in_the_json(tmp_path):
    out = tmp_path / "r.json"
    res = CliRunner().invoke(main, ["tune", "gemm", "--m", "64", "--n", "64", "--k", "64",
                                    "--space", str(write(tmp_path)), "--top", "1",
                                    "--recheck", "2", "--device", "pocl", "--out", str(out),
                                    "--seed", "1", "--rounds", "1"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert data["recheck"]["requested"] == 2 and data["recheck"]["not_reported"] == 2
    # PoCL reports no registers: said once, in the recheck line
    said = [line for line in res.output.splitlines() if "reports no registers" in line
            or "not reported" in line]
    assert len(said) == 1 and said[0].startswith("recheck: the best 2 by the estimate were "
                                                 "built on "), said
    assert "the driver reports no registers (not reported by " in said[0]


def test_a_recheck_without_a_device_is_said_and_the_ranking_is_the_estimates(tmp_path):
    notes = []
    res = tt.tune(64, 64, 64, space=write(tmp_path), top=0, recheck=2, log=notes.append)
    assert any("--recheck 2 needs a device to build on: not rechecked" in n for n in notes)
    assert "recheck" not in res.data and res.summary["recheck"] is None
    assert [p["predicted_rank"] for p in res.predictions] == \
        [p["estimate_rank"] for p in res.predictions] == [1, 2, 3]


def test_a_rechecked_build_that_spills_ranks_after_those_that_do_not():
    """The model counts no spill traffic: a spilling build (a, predicted fastest) ranks
    after the rechecked ones that do not spill (b, c), before the ones not rechecked (d)."""
    def entry(label, order, time_s, spill=None):
        e = {"label": label, "order": order, "predicted_time_s": time_s,
             "estimate": {"predicted_time_s": time_s, "registers_per_work_item": 100}}
        if spill is not None:
            e["recheck"] = {"status": "compiled", "resources": {
                "registers_per_work_item": 128, "spill_store_bytes": spill,
                "spill_load_bytes": spill}, "prediction": None}
        return e
    doc = {"predictions": [entry("a", 0, 1.0e-3, spill=52), entry("b", 1, 1.2e-3, spill=0),
                           entry("c", 2, 1.1e-3, spill=0), entry("d", 3, 0.9e-3)]}
    ranked = tuning_recheck.rank(doc)
    assert [e["label"] for e in ranked] == ["c", "b", "a", "d"]
    assert [e["predicted_rank"] for e in ranked] == [1, 2, 3, 4]
    assert tuning_recheck.spills(ranked[2]) and not tuning_recheck.spills(ranked[0])
