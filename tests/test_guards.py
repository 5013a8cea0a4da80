"""Guards a user expects before a large launch (simulator.engine.budget, the CLI's --force), an
unwritable --out noticed before the sweep, finished cases of an interrupted sweep kept, and a
simulator chosen by device number named as such."""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

import tiletraffic as tt
from tiletraffic.analysis.report import build as report
from tiletraffic.analysis.cli import main
from tiletraffic.gpu.devices.device import list_devices
from tiletraffic.simulator.engine import budget
from tiletraffic.simulator.ir import nodes as S

DEVICES = list_devices()
HAS_POCL = any(d.is_pocl for d in DEVICES)


def test_estimate_adds_up_from_the_documented_terms():
    sch = tt.build("gemm-tiled", 100, 30, 50, 16)  # 4 x 7 work-groups of 256 work-items
    est = budget.estimate_simulation(sch, compute_values=True)
    groups, items = 28, 28 * 256
    ins, outs = 100 * 30 + 30 * 50, 100 * 50
    expected = (budget.BASE_BYTES + budget.PER_WORK_GROUP_BYTES * groups
                + budget.PER_BATCH_WORK_ITEM_BYTES[True] * items
                + 4 * (ins + outs) + 8 * ins + 16 * outs
                + budget.FULL_LAUNCH_CHECK_BYTES_PER_OUTPUT_ELEM * outs)
    assert est.work_groups == groups
    assert est.memory_bytes == expected
    # the tile loop runs one iteration at a time (barriers): ceil(30 / 16) = 2 iterations of
    # its 14 statements, in the one batch of work-groups
    interpreted = budget.PER_INTERPRETED_STATEMENT_S * 2 * 14
    # the steps of its deepest loop nest, 2 tiles of 16 = 32 (the last one's guarded), > K
    assert est.time_s == pytest.approx(1e-6 * groups + 25e-9 * items * 32 + interpreted)
    counts_only = budget.estimate_simulation(sch, compute_values=False, work_group_classes=True)
    assert counts_only.memory_bytes < est.memory_bytes
    # by classes: the bookkeeping of every work-group, and the steps of one work-group per
    # class (at most 3 per dimension: 9) with the interpreted statements
    assert counts_only.time_s == pytest.approx(1e-6 * groups + 25e-9 * 9 * 256 * 32
                                               + interpreted)


def test_interpreted_statements_of_a_long_loop_of_one_small_work_group():
    """gemm-tiled, M = N = 1, K = 40000: its tile loop (a barrier in its body) runs
    ceil(40000 / 16) = 2500 iterations of 14 statements (a_col, b_row, two guarded loads of
    two assignments each into local stores, a barrier, the k loop run in blocks and its
    accumulation counted once, a barrier): 35000; the statements outside it are not."""
    sch = tt.build("gemm-tiled", m=1, k=40000, n=1)
    assert budget.interpreted_statements(sch) == 2500 * 14
    est = budget.estimate_simulation(sch, compute_values=True)
    assert est.time_s > budget.PER_INTERPRETED_STATEMENT_S * 35000
    # register-blocked: its K-step count is a variable (steps = ceil(K / BK)) the loop reads
    blocked = tt.build("gemm-register-blocked", m=16, k=2000, n=16)
    assert budget.interpreted_statements(blocked) < \
        budget.interpreted_statements(tt.build("gemm-register-blocked", m=16, k=4000, n=16))
    assert budget.interpreted_statements(tt.build("gemm-naive", 64, 64, 64, 16)) == 0


def test_the_deepest_loop_nest_counts_where_no_size_is_k():
    """A launch file's kernel with ``for a < 10000: for b < 10000: s += A[(a + b) % 64]``
    has no K: its work-items run 10⁸ steps each, which the time estimate charges."""
    sch = tt.from_opencl(
        "__kernel void k(__global const float *A, __global float *B) {\n"
        "  int i = get_global_id(0); float s = 0.0f;\n"
        "  for (int a = 0; a < 10000; a++) for (int b = 0; b < 10000; b++)\n"
        "    s += A[(a + b) % 64];\n  B[i] = s;\n}\n", "k", [64], [16],
        {"A": {"shape": [64], "access": "in"}, "B": {"shape": [64], "access": "out"}})
    assert budget.loop_nest_steps(sch) == 10**8
    est = budget.estimate_simulation(sch, compute_values=True)
    assert est.time_s >= budget.PER_WORK_ITEM_STEP_S * 64 * 10**8
    assert budget.loop_nest_steps(tt.build("gemm-naive", 64, 48, 64, 16)) == 48


@pytest.mark.parametrize("inner, interpreted", [
    # run in blocks: the outer loop's 16 iterations of the inner loop and its sum, once each
    ("acc += val[j + lid];", 16 * 2),
    # barriers: one iteration at a time, the proof's 32 iterations of the nest (not 16 x 32)
    # of 4 statements, and the inner loop itself once per outer iteration
    ("t[lid] = val[j + lid]; barrier(CLK_LOCAL_MEM_FENCE); acc += t[(lid + 1) % 32];"
     " barrier(CLK_LOCAL_MEM_FENCE);", 16 + 32 * 4),
])
def test_counting_by_loaded_integers_charges_the_proved_nest_once(inner, interpreted):
    """A static loop of 16 trips around a CSR row's loop (rows of 64 in steps of 32): the
    proof's loop steps, 16 x 2 = 32, are the whole nest's; the estimate charges each
    representative's work-items those 32 steps, and the statements run one iteration at a
    time at most 32 times, not 16 x 32 again."""
    import numpy as np

    from tiletraffic.simulator.engine.accelerators.data_classes import data_classes

    sch = tt.from_opencl(
        "__kernel void k(__global const float *val, __global const int *ptr,\n"
        "                __global float *y) {\n"
        "  __local float t[32];\n"
        "  int row = get_group_id(0), lid = get_local_id(0); float acc = 0.0f;\n"
        "  int start = ptr[row], end = ptr[row + 1];\n"
        "  for (int r = 0; r < 16; r++)\n"
        f"    for (int j = start; j < end; j += 32) {{ {inner} }}\n"
        "  y[row * 32 + lid] = acc;\n}\n", "k", [32 * 8], [32],
        {"val": {"shape": [512], "access": "in"},
         "ptr": {"shape": [9], "access": "in", "data": np.arange(0, 576, 64, dtype=np.int32)},
         "y": {"shape": [256], "access": "out"}})
    found = data_classes(sch)
    assert found.loop_steps == 32
    est = budget.estimate_simulation(sch, compute_values=False, work_group_classes=True)
    steps = budget.PER_WORK_ITEM_STEP_S * len(found.representatives) * 32 * 32
    assert est.time_s == pytest.approx(budget.PER_WORK_GROUP_CLASSES_S * 8 + steps
                                       + budget.PER_INTERPRETED_STATEMENT_S * interpreted)


def test_batch_term_stops_at_the_batch_size():
    small = tt.build("gemm-naive", 4096, 8, 4096, 16)
    est = budget.estimate_simulation(small, compute_values=False, batch_work_items=1 << 12)
    # 4096 work-items per batch = 16 work-groups of 256
    assert est.memory_bytes == (budget.BASE_BYTES + budget.PER_WORK_GROUP_BYTES * 256 * 256
                                + budget.PER_BATCH_WORK_ITEM_BYTES[False] * 4096
                                + budget.FULL_LAUNCH_CHECK_BYTES_PER_OUTPUT_ELEM * 4096 * 4096)


def test_check_budget_refuses_beyond_the_headroom_and_names_both_numbers():
    est = budget.Estimate(memory_bytes=10 * 2**30, time_s=5.0, work_groups=1000)
    budget.check_budget(est, "x", available=13 * 2**30)  # 10 GiB <= 80% of 13 GiB
    with pytest.raises(budget.BudgetError) as err:
        budget.check_budget(est, "gemm-tiled", available=12 * 2**30)  # 80% is 9.6 GiB
    text = str(err.value)
    assert "10 GiB" in text and "12 GiB" in text and "--force" in text


def test_simulate_refuses_a_launch_beyond_memory_with_the_estimate():
    # seen: killed by the out-of-memory killer at 23.9 GB
    res = CliRunner().invoke(main, ["simulate", "gemm-tiled", "--m", "40000", "--n", "40000",
                                    "--k", "40000", "--tile", "1"])
    assert res.exit_code == 2
    assert "1,600,000,000 work-groups" in res.output and "--force" in res.output
    assert "Traceback" not in res.output


@pytest.fixture
def tiny_machine(monkeypatch):
    """A machine with 100 MiB available: every estimate (at least 160 MiB) is too large."""
    monkeypatch.setattr(budget, "available_memory_bytes", lambda: 100 * 2**20)


def test_force_runs_what_the_budget_would_refuse(tiny_machine):
    args = ["simulate", "gemm-tiled", "--m", "20", "--n", "20", "--k", "20", "--json"]
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 2 and "--force" in refused.output
    forced = CliRunner().invoke(main, [*args, "--force"])
    assert forced.exit_code == 0, forced.output
    assert json.loads(forced.output)["global_load_elems"] == 1600


def test_check_and_run_are_guarded_too(tiny_machine):
    check = CliRunner().invoke(main, ["check", "gemm-tiled", "--m", "20", "--k", "20",
                                      "--n", "20"])
    assert check.exit_code == 2 and "memory" in check.output
    run = CliRunner().invoke(main, ["run", "gemm-tiled", "--m", "20", "--k", "20", "--n", "20"])
    assert run.exit_code == 2 and "memory" in run.output


@pytest.mark.skipif(not HAS_POCL, reason="PoCL is not installed")
def test_unwritable_out_fails_before_the_sweep(tmp_path, monkeypatch):
    in_the_way = tmp_path / "a-file"
    in_the_way.write_text("not a directory")
    swept = []
    monkeypatch.setattr(report, "_count_case", lambda *a, **k: swept.append(a))
    res = CliRunner().invoke(main, ["report", "--quick", "--device", "pocl",
                                    "--out", str(in_the_way / "sub")])
    assert res.exit_code == 2, res.output
    assert f"{in_the_way} is a file, not a folder" in res.output
    assert swept == [], "no case may run before the output directory is known to be writable"


@pytest.mark.skipif(not HAS_POCL, reason="PoCL is not installed")
def test_interrupted_sweep_keeps_the_finished_cases(tmp_path, monkeypatch):
    real = report._measure_case
    done = []

    def interrupt_third(entry, *a, **k):
        if len(done) == 2:
            raise KeyboardInterrupt
        done.append((entry["family"], entry["n"], entry["tile"]))
        return real(entry, *a, **k)

    monkeypatch.setattr(report, "_measure_case", interrupt_third)
    with pytest.raises(report.SweepInterrupted) as err:
        report.make_report(device="pocl", out_root=tmp_path, quick=True, progress=False)
    measured = sum(p.measure for p in report.default_sweep(True))
    assert (err.value.done, err.value.total) == (2, report.ROUNDS * measured)
    data = json.loads((err.value.out_dir / "results.json").read_text())
    assert data["meta"]["complete"] is False
    assert all("counts" in e for e in data["results"]), "every case was counted first"
    ran = [(e["family"], e["n"], e["tile"]) for e in data["results"] if "device_runs" in e]
    assert ran == done, "the two finished runs are saved"
    assert all(r["check"]["ok"] for e in data["results"] for r in e.get("device_runs", ()))
    assert (err.value.out_dir / "report.md").exists()


@pytest.mark.skipif(not (HAS_POCL and any(d.is_simulator for d in DEVICES)),
                    reason="needs PoCL and Oclgrind installed")
def test_a_simulator_chosen_by_number_is_named_as_one():
    sim = next(d for d in DEVICES if d.is_simulator)
    res = CliRunner().invoke(main, ["run", "gemm-tiled", "--m", "16", "--n", "16", "--k", "16",
                                    "--device", sim.id])
    assert res.exit_code == 0, res.output
    assert "a simulator" in res.output
    by_name = CliRunner().invoke(main, ["run", "gemm-tiled", "--m", "16", "--n", "16",
                                        "--k", "16", "--device", "oclgrind"])
    assert "warning" not in by_name.output


def test_negative_seed_is_a_usage_error_naming_the_option():
    res = CliRunner().invoke(main, ["simulate", "gemm-tiled", "--m", "20", "--n", "20",
                                    "--k", "20", "--seed", "-1"])
    assert res.exit_code == 2 and "--seed" in res.output
    assert "Traceback" not in res.output


def test_check_enforces_the_device_limits_unless_told_not_to():
    # seen: 314 s then "clean" for a launch no device takes (400000 bytes of local memory)
    res = CliRunner().invoke(main, ["check", "matvec-local-whole", "--m", "20", "--k",
                                    "100000"])
    assert res.exit_code == 2 and "400000" in res.output and "49152" in res.output
    wide = CliRunner().invoke(main, ["check", "gemm-tiled", "--m", "64", "--k", "64",
                                     "--n", "64", "--tile", "64"])
    assert wide.exit_code == 2 and "4096" in wide.output and "1024" in wide.output
    free = CliRunner().invoke(main, ["check", "gemm-tiled", "--m", "64", "--k", "64",
                                     "--n", "64", "--tile", "64", "--no-limits"])
    assert free.exit_code == 0, free.output


@pytest.mark.skipif(not HAS_POCL, reason="PoCL is not installed")
def test_run_takes_a_faulty_variant_and_names_the_wrong_launch():
    res = CliRunner().invoke(main, ["run", "gemm-naive:zeros-in-launch-5", "--m", "16",
                                    "--n", "16", "--k", "16", "--device", "pocl"])
    assert res.exit_code == 1
    assert "launch 6 of 12" in res.output  # launch index 5, 1-based in the message


@pytest.mark.parametrize("target", ["/dev/null", "", "."])
def test_an_output_that_is_not_a_regular_file_is_refused_and_left_alone(target):
    """A rename over /dev/null would replace the device with a file; a folder or an empty
    path names no file. Refused before any work, exit 2."""
    before = __import__("os").stat("/dev/null").st_mode
    res = CliRunner().invoke(main, ["explain", "gemm-tiled", "--m", "16", "--k", "16", "--n",
                                    "16", "--out", target])
    assert res.exit_code == 2, res.output
    assert any(w in res.output for w in ("regular file", "empty path", "directory")), res.output
    assert __import__("os").stat("/dev/null").st_mode == before


def test_simulate_that_reports_hazards_exits_one():
    res = CliRunner().invoke(main, ["simulate", "gemm-tiled:no-second-barrier", "--hazards",
                                    "report", "--json"])
    assert res.exit_code == 1, res.output
    assert json.loads(res.output)["hazards"]


@pytest.mark.skipif(not HAS_POCL, reason="PoCL is not installed")
def test_run_refuses_a_reference_of_the_wrong_shape_as_bad_input(tmp_path):
    ref = tmp_path / "refs.py"
    ref.write_text("import numpy as np\n\ndef wrong(inputs):\n    return np.zeros(3)\n")
    res = CliRunner().invoke(main, ["run", "examples/row_matvec.py:make_schedule", "--m",
                                    "100", "--k", "50", "--reference", f"{ref}:wrong",
                                    "--device", "pocl"])
    assert res.exit_code == 2, res.output
    assert "returned shape (3,), the output y has shape (100,)" in res.output


GRID_STRIDE_CUDA = """
__global__ void gemv(int R, int C, const float *A, const float *x, float *y) {
    for (int r = blockIdx.x * blockDim.x + threadIdx.x; r < R; r += blockDim.x * gridDim.x) {
        float s = 0;
        for (int c = 0; c < C; c++) s += A[r * C + c] * x[c];
        y[r] = s;
    }
}
"""

GRID_STRIDE_OPENCL = """
__kernel void gemv(const int n, const int C, __global const float *A,
                   __global const float *x, __global float *y) {
    for (int r = get_global_id(0); r < n; r += get_global_size(0)) {
        float s = 0;
        for (int c = 0; c < C; c++) s += A[r * C + c] * x[c];
        y[r] = s;
    }
}
"""

GEMV_ARGS = {"A": {"shape": ["R", "C"], "access": "in"}, "x": {"shape": ["C"], "access": "in"},
             "y": {"shape": ["R"], "access": "out"}}


def test_a_grid_stride_loop_is_charged_its_trips_not_the_rows():
    # 1024 rows over 4 x 128 work-items: 2 rows of 200 columns per work-item
    cuda = tt.from_cuda(GRID_STRIDE_CUDA, "gemv", [4], [128],
                        {"R": 1024, "C": 200, **GEMV_ARGS})
    opencl = tt.from_opencl(GRID_STRIDE_OPENCL, "gemv", [512], [128],
                            {"n": 1024, "C": 200, **GEMV_ARGS}, sizes={"R": 1024})
    for sch in (cuda, opencl):
        assert budget.loop_nest_steps(sch) == 2 * 200
        assert budget.work_item_steps(sch) == 512 * 2 * 200
        assert budget.estimate_simulation(sch, compute_values=True).time_s < 1
    # 1000 rows: work-items 0 .. 487 take 2 rows, the others 1; the most is charged
    short = tt.from_cuda(GRID_STRIDE_CUDA, "gemv", [4], [128],
                         {"R": 1000, "C": 200, **GEMV_ARGS})
    assert budget.loop_nest_steps(short) == 2 * 200


def test_a_loop_over_a_row_from_a_work_item_id_is_charged_its_length():
    # start and stop both move with the row: the trips are the difference, N
    source = """
    __kernel void rows(const int N, __global const float *A, __global float *y) {
        int row = get_global_id(0);
        float s = 0.0f;
        for (int k = row * N; k < row * N + N; k++) s += A[k];
        y[row] = s;
    }"""
    sch = tt.from_opencl(source, "rows", [256], [64],
                         {"N": 32, "A": {"shape": [256, 32], "access": "in"},
                          "y": {"shape": [256], "access": "out"}})
    assert budget.loop_nest_steps(sch) == 32
    assert budget.work_item_steps(sch) == 256 * 32


def test_simulate_values_of_a_grid_stride_loop_is_not_refused_for_its_rows(tmp_path):
    # 65536 rows of 8 over 512 work-items: 128 rows each, 2^19 work-item loop steps (the
    # rows times every work-item would be 2^28, above what --values takes)
    (tmp_path / "gemv.cu").write_text(GRID_STRIDE_CUDA)
    (tmp_path / "gemv.toml").write_text(
        'source = "gemv.cu"\nkernel = "gemv"\n[sizes]\nR = 65536\nC = 8\n'
        '[launch]\ngrid = [4]\nblock = [128]\n'
        '[args]\nR = "R"\nC = "C"\nA = { shape = ["R", "C"], access = "in" }\n'
        'x = { shape = ["C"], access = "in" }\ny = { shape = ["R"], access = "out" }\n')
    res = CliRunner().invoke(main, ["simulate", str(tmp_path / "gemv.toml"), "--values",
                                    "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["global_load_elems"] == 65536 * 8 * 2


@pytest.mark.parametrize("start, stop, step", [
    # (start, stop) as (a, b): a * global id + b; every work-item's trips at most the bound
    ((1, 0), (0, 1000), 512), ((1, 0), (0, 1000), 7), ((3, 5), (1, 700), 4),
    ((-1, 600), (2, 100), 3), ((1, 0), (1, 40), 1), ((2, 0), (1, 0), 1)])
def test_the_trips_bound_of_a_loop_moving_with_the_work_item_holds_for_each(start, stop, step):
    from tiletraffic.simulator.engine.loop_bounds import LoopBounds

    gid = S.global_id(0)
    loop = S.For("k", gid * start[0] + start[1], gid * stop[0] + stop[1], S.Const(step),
                 (S.Barrier(),))
    sch = S.Schedule("demo-trips", "demo_trips", (), (), (), (64,), (512,), (loop,), tile=64)
    g = np.arange(512)
    trips = np.maximum(0, -(-((g * stop[0] + stop[1]) - (g * start[0] + start[1])) // step))
    bound = LoopBounds(sch).most_trips(loop, {})
    assert trips.max() <= bound <= trips.max() + 1
