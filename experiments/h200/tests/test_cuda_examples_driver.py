"""experiments/h200/cuda_examples/ without a GPU: its cases name the CUDA examples at sizes their
launch files take, the templated warp-tiled SGEMM among them; Nsight Compute is called with
the counters compared and only the case's kernel; and one case goes through the whole driver
(run on PoCL, a stand-in ncu that runs the command it wraps and prints a raw page, model),
its table saying where the counts are equal and where not."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.h200.cuda_examples import driver as D
from tiletraffic.frontend.launch_file import tomllib

RUN_SH = Path(D.__file__).with_name("run.sh")


def launch(name: str) -> dict:
    return tomllib.loads(D.launch_path(name).read_text())


def test_at_least_eight_cases_the_warp_tiled_template_among_them():
    names = [name for name, _ in D.CASES]
    assert len(names) >= 8 and len(set(names)) == len(names)
    for name, sets in D.CASES:
        data = launch(name)
        assert data["source"].endswith(".cu")
        assert set(sets) <= set(data.get("sizes", {})), (name, sets)
    warp_tiled = launch(names[0])
    assert warp_tiled["kernel"] == "sgemm_warp_tiled" and "WM" in warp_tiled["template"]


def test_ncu_profiles_the_compared_counters_of_the_case_kernel_only(tmp_path):
    name, sets = D.CASES[1]
    argv = D.ncu_argv("ncu", name, sets, None, tmp_path / "p")
    assert argv[argv.index("--clock-control") + 1] == "none"
    assert argv[argv.index("--kernel-name") + 1] == f"regex:^{launch(name)['kernel']}$"
    assert argv[argv.index("--kernel-name-base") + 1] == "function"
    metrics = argv[argv.index("--metrics") + 1].split(",")
    for required in ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
                     "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
                     "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
                     "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"):
        assert required in metrics
    wrapped = argv[argv.index("--force-overwrite") + 1:]
    assert wrapped == D.run_argv(name, sets)
    assert wrapped[2:4] == ["tiletraffic", "run"] and "--json" in wrapped
    assert "--device" not in wrapped        # run compiles the CUDA source itself (NVRTC)
    assert D.model_argv(name, sets)[-3:] == ["--device-model", "nvidia-h200-cuda", "--json"]


def test_the_run_summary_reads_both_runs():
    assert D.run_summary({"checks": {"C": True}, "median_s": 2e-3}, 0) == "ok, 2.000 ms"
    assert D.run_summary({"checks": {"C": False}, "median_s": 2e-3}, 1).startswith("WRONG")
    assert D.run_summary({"check": {"ok": True}, "median_s": 1e-3}, 0) == "ok, 1.000 ms"
    assert D.run_summary(None, 2) == "failed (exit 2)"


def test_the_device_model_of_the_comparison_exists():
    import tiletraffic as tt
    assert tt.device_model(D.DEVICE_MODEL).name == D.DEVICE_MODEL


def test_run_sh_is_valid_bash():
    assert subprocess.run(["bash", "-n", str(RUN_SH)]).returncode == 0


FAKE_NCU = '''#!{python}
"""Stand-in for ncu: runs the command it profiles and leaves a report; on --import prints a
raw page of one result of kernel {kernel} with the metric values of $FAKE_NCU_VALUES."""
import json, os, pathlib, subprocess, sys
argv = sys.argv[1:]
if "--import" in argv:
    values = json.loads(os.environ["FAKE_NCU_VALUES"])
    names = sorted(values)
    print(",".join('"%s"' % c for c in ["ID", "Kernel Name", *names]))
    print(",".join('"%s"' % c for c in ["", "", *["" for _ in names]]))
    print(",".join('"%s"' % c for c in ["0", "{kernel}(float *, float *, float *, int)",
                                          *[str(values[n]) for n in names]]))
    sys.exit(0)
report = argv[argv.index("--export") + 1]
rc = subprocess.call(argv[argv.index("--force-overwrite") + 1:])
pathlib.Path(report + ".ncu-rep").write_text("stand-in report")
sys.exit(rc)
'''


def test_one_case_through_the_driver_with_a_stand_in_ncu(tmp_path, monkeypatch):
    from tiletraffic.gpu.devices.device import list_devices
    if not any("portable" in d.platform_name.lower() or "pocl" in d.platform_name.lower()
               for d in list_devices()):
        pytest.skip("no PoCL device")
    name, sets = "sgemm_tiled", {"N": 32}
    model = json.loads(subprocess.run(D.model_argv(name, sets), capture_output=True,
                                      text=True, cwd=D.REPO, check=True).stdout)
    values = {metric: model[key] for key, metric in D.COMPARED}
    values["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"] += 1     # one count off
    ncu = tmp_path / "ncu"
    ncu.write_text(FAKE_NCU.format(python=sys.executable, kernel="sgemm_tiled"))
    ncu.chmod(0o755)
    monkeypatch.setenv("FAKE_NCU_VALUES", json.dumps(values))
    case = D.run_case(name, sets, "portable", tmp_path / name, str(ncu))
    assert case["run"]["rc"] == 0 and case["run"]["result"]["check"]["ok"]
    assert "error" not in case["ncu"] or case["ncu"]["error"] is None, case["ncu"]
    equal = {r["count"]: r["equal"] for r in case["rows"]}
    assert equal.pop("global_store_sectors") is False and all(equal.values()), case["rows"]
    text = D.table([case])
    assert "equal: 5 of 6 counts in 1 cases" in text
    assert f"| {name} | N=32 | ok, " in text
    assert (tmp_path / name / "ncu-raw.csv").is_file()


def test_compare_names_the_card_the_runs_ran_on():
    from experiments.h200.cuda_examples.compare import card, table
    ran = {"case": "k", "sets": {"N": 4}, "run": {"rc": 0, "result": {
        "device": "NVIDIA H100 80GB HBM3", "checks": {"B": True}, "median_s": 1e-3}},
        "ncu": {"metrics": {}}}
    failed = {"case": "k", "sets": {}, "run": {"rc": 1, "result": None}, "ncu": {}}
    assert card([failed, ran]) == "NVIDIA H100 80GB HBM3"
    assert card([failed]) == "the GPU"
    predicted = {"k": {key: 1 for key in ("global_load_requests", "global_load_sectors",
                                          "global_store_requests", "global_store_sectors",
                                          "local_load_wavefronts", "local_store_wavefronts")}}
    assert "run on NVIDIA H100 80GB HBM3 (check, median)" in table([ran], predicted)
