"""Runs of ``tiletraffic report`` on a stubbed device (fast, no OpenCL): where a run writes
by default, two runs into one folder at once, the machine's load while timing and the
verdict on the times, what report.md and the summary name, and the figures' open ranges,
legend and axes.

The stub: a two-case sweep (naive and tiled GEMM, N = 64, B = 8) counted by the simulator,
whose device runs return fixed times instead of launching (:func:`install_stubs`).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from tiletraffic.analysis.report import machine_load
from tiletraffic.analysis.report import plots

ROOT = Path(__file__).resolve().parents[1]
STUB_NAME = "Stub CPU"


def stub_target():
    from tiletraffic.gpu.devices.device import DeviceInfo, Target

    info = DeviceInfo(id="0:0", platform_index=0, device_index=0,
                      platform_name="Stub Platform", platform_vendor="Stub",
                      platform_version="OpenCL 3.0", device_name=STUB_NAME,
                      device_vendor="Stub", type="CPU", is_gpu=False, is_simulator=False,
                      is_pocl=False, max_work_group_size=4096,
                      max_work_item_sizes=(4096, 4096, 4096), local_mem_bytes=65536,
                      compute_units=2, global_mem_bytes=2**33, driver_version="1",
                      device_version="OpenCL 3.0")
    return Target(context=None, queue=None, device=None, info=info)


def install_stubs(patch, tiled_s: float = 1e-3, naive_s: float = 2e-3, spread: float = 0.0,
                  sleep_s: float = 0.0):
    """Stub the device of ``analysis.report.build`` through ``patch(obj, name, value)``:
    every run of the tiled GEMM takes ``tiled_s`` (the naive ``naive_s``), launch ``i`` of
    a round off by ``± spread`` of it, each run ``sleep_s`` long."""
    import tiletraffic.gpu.devices.device as device
    from tiletraffic.analysis.report import build

    target = stub_target()

    def measure(entry, _target, repeat, round_index, _checks):
        time.sleep(sleep_s)
        base = tiled_s if entry["family"] == "gemm-tiled" else naive_s
        times = [base * (1 + spread * (-1) ** i) for i in range(repeat)]
        entry.setdefault("device_runs", []).append(
            {"round": round_index, "seed": 0, "kernel_times_s": times, "timing": "events"})

    patch(device, "select_device", lambda spec=None: target)
    patch(build, "_measure_case", measure)
    patch(build, "default_sweep", lambda quick, list_name=None: [
        build.SweepPoint(f, 64, 64, 64, 8, "square", True)
        for f in ("gemm-naive", "gemm-tiled")])
    return target


def child_run(out: str, ready: str, me: str, other: str, tiled_s: float) -> None:
    """A second process's `tiletraffic report --out OUT` on the stub, started when the other
    process is ready too (its file in ``ready``)."""
    from tiletraffic.analysis.cli import main

    install_stubs(setattr, tiled_s=tiled_s, sleep_s=0.4)
    Path(ready, me).write_text("ready")
    deadline = time.monotonic() + 120
    while not Path(ready, other).exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    main.main(args=["report", "--out", out], prog_name="tiletraffic")


def test_two_runs_into_one_folder_at_once_keep_both_results(tmp_path):
    """Two processes write one --out at once: both finish, and both runs' complete results
    are kept (the later in results.json, the earlier in history/)."""
    out, ready = tmp_path / "out", tmp_path / "ready"
    ready.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests") + os.pathsep
           + os.environ.get("PYTHONPATH", "")}
    procs = [subprocess.Popen(
        [sys.executable, "-c", "import test_report_runs as t; "
         f"t.child_run({str(out)!r}, {str(ready)!r}, {me!r}, {other!r}, {tiled_s!r})"],
        env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for me, other, tiled_s in (("a", "b", 1e-3), ("b", "a", 0.5e-3))]
    outputs = [p.communicate(timeout=300) for p in procs]
    for p, (stdout, stderr) in zip(procs, outputs):
        assert p.returncode == 0, stdout + stderr
    folder = out / "stub-cpu"
    assert all(stdout.splitlines()[-1].startswith(f"report: {folder / 'report.md'}")
               for stdout, _ in outputs)
    kept = [folder / "results.json", *sorted((folder / "history").glob("results-*.json"))]
    complete = [json.loads(p.read_text()) for p in kept if p.exists()]
    complete = [d for d in complete if d["meta"]["complete"]]
    tiled = sorted(e["device_runs"][0]["kernel_times_s"][0] for d in complete
                   for e in d["results"] if e["family"] == "gemm-tiled")
    assert tiled == [0.5e-3, 1e-3], "both runs' measured cases are kept"
    assert sum("waiting: process " in stderr for _, stderr in outputs) == 1, \
        "one run waited for the other, and said so"
    assert not (folder / ".lock").exists(), "the lock file goes with the last run"


def test_a_second_holder_of_a_folder_lock_waits_for_the_first(tmp_path):
    from tiletraffic.analysis.files import FolderLock

    script = ("import sys, time; from tiletraffic.analysis.files import FolderLock; "
              f"lock = FolderLock({str(tmp_path)!r}); lock.acquire(); print('held', flush=True); "
              "time.sleep(1.0); lock.release()")
    holder = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    said, start = [], time.monotonic()
    with_lock = FolderLock(tmp_path)
    with_lock.acquire(waiting=said.append)
    waited = time.monotonic() - start
    assert (tmp_path / ".lock").read_text().startswith(f"process {os.getpid()} since ")
    with_lock.release()
    holder.wait(timeout=30)
    assert said and said[0].startswith(f"process {holder.pid} since "), said
    assert waited > 0.3, "it waited for the holder to release the lock"
    assert not (tmp_path / ".lock").exists()


def test_the_default_output_is_not_the_committed_reports(tmp_path, monkeypatch):
    """`tiletraffic report` as the README runs it, from a checkout: the report goes to
    tiletraffic-reports/<device>/ (git-ignored), and reports/ is not written."""
    from tiletraffic.analysis.cli import main

    install_stubs(monkeypatch.setattr)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "reports").mkdir()
    res = CliRunner().invoke(main, ["report"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "tiletraffic-reports" / "stub-cpu" / "report.md").exists()
    assert not any((tmp_path / "reports").iterdir()), "reports/ is left alone"
    ignored = subprocess.run(["git", "check-ignore", "-q",
                              "tiletraffic-reports/pocl-cpu-amd-epyc/report.md"], cwd=ROOT)
    assert ignored.returncode == 0, "a run's folder in a checkout is git-ignored"
    assert not (ROOT / "reports" / "stub-cpu").exists()


def test_the_facade_writes_where_the_command_does():
    import inspect

    import tiletraffic as tt
    from tiletraffic.analysis.cli.report import command
    from tiletraffic.analysis.report.build import make_report

    out = next(p for p in command.params if p.name == "out_dir")
    assert out.default == "tiletraffic-reports"
    assert inspect.signature(tt.report).parameters["out"].default == out.default
    assert inspect.signature(make_report).parameters["out_root"].default == out.default


def _fake_clock(busy_s: float, own_s: float, wall_s: float, cpus: int = 2):
    return machine_load.CpuClock(wall_s, busy_s, own_s, cpus)


def _report_with_load(tmp_path, monkeypatch, other_cpu_s: float, spread: float = 0.0):
    """A stub report whose load meter reads a machine where other processes used
    ``other_cpu_s`` CPU seconds over 10 s of 2 CPUs; returns (report.md, summary lines)."""
    from tiletraffic.analysis.report import build
    from tiletraffic.analysis.report.text import summary_lines

    install_stubs(monkeypatch.setattr, spread=spread)
    clocks = iter([_fake_clock(100.0, 5.0, 0.0)] +
                  [_fake_clock(100.0 + other_cpu_s + 3.0, 8.0, 10.0)] * 10)
    monkeypatch.setattr(build, "LoadMeter",
                        lambda: machine_load.LoadMeter(read=lambda: next(clocks)))
    folder = build.make_report(out_root=tmp_path, quick=True, progress=False)
    data = json.loads((folder / "results.json").read_text())
    return data, (folder / "report.md").read_text(), summary_lines(data, folder)


def test_a_busy_machine_is_flagged_in_report_md_and_the_summary(tmp_path, monkeypatch):
    data, text, summary = _report_with_load(tmp_path, monkeypatch, other_cpu_s=9.0)
    load = data["meta"]["machine_load"]
    assert load["other_cpu_s"] == 9.0 and load["other_cpu_share"] == 0.45
    assert "**These times are not to be trusted:** the machine was busy: other processes " \
           "used 45% of the CPU time of its 2 CPUs" in text
    assert any(line.startswith("timing: not to be trusted: the machine was busy")
               for line in summary), summary
    assert len(summary) == 6


def test_an_idle_machine_is_not_flagged(tmp_path, monkeypatch):
    data, text, summary = _report_with_load(tmp_path, monkeypatch, other_cpu_s=0.2)
    assert data["meta"]["machine_load"]["other_cpu_share"] == 0.01
    assert "not to be trusted" not in text
    assert "**Timing:** other processes used 1.0% of the CPU time" in text
    assert not any(line.startswith("timing:") for line in summary)
    assert len(summary) == 5


def test_wide_spreads_are_flagged_on_an_idle_machine(tmp_path, monkeypatch):
    _, text, summary = _report_with_load(tmp_path, monkeypatch, other_cpu_s=0.2, spread=0.4)
    assert "**These times are not to be trusted:** the spreads are wide" in text
    assert any(line.startswith("timing: not to be trusted: the spreads are wide")
               for line in summary)


def test_report_md_and_the_summary_name_report_html_and_the_explain_pages(tmp_path,
                                                                          monkeypatch):
    _, text, summary = _report_with_load(tmp_path, monkeypatch, other_cpu_s=0.2)
    folder = tmp_path / "stub-cpu-quick"
    assert "[report.html](report.html)" in text
    for family in ("gemm-naive", "gemm-tiled", "matvec-naive", "matvec-local"):
        assert f"(explain/{family}.html)" in text and (folder / "explain" /
                                                       f"{family}.html").exists()
    assert summary[-1].startswith(f"report: {folder / 'report.md'}")
    assert f"in a browser: {folder / 'report.html'}, with explain pages" in summary[-1]


def test_the_load_meter_counts_another_process_and_not_this_one():
    if machine_load.read_cpu_clock() is None:
        pytest.skip("no /proc/stat here")
    meter = machine_load.LoadMeter()
    # the burner is another process, not a child this one reaps (a reaped child's time is
    # this process's own, os.times' children_*): an intermediate starts it and exits
    burn = ("import time\nt = time.process_time()\n"
            "while time.process_time() - t < 1.0: pass")
    started = subprocess.run(
        [sys.executable, "-c", "import subprocess, sys\n"
         f"p = subprocess.Popen([sys.executable, '-c', {burn!r}])\nprint(p.pid)"],
        capture_output=True, text=True, check=True)
    stat = Path(f"/proc/{int(started.stdout)}/stat")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            state = stat.read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            break                              # gone
        if state in ("Z", "X"):
            break                              # finished, not yet reaped by its new parent
        time.sleep(0.05)
    load = meter.now()
    assert load["other_cpu_s"] >= 0.7, load
    assert 0 < load["other_cpu_share"] <= 1 and load["cpus"] >= 1


def test_cpu_clock_reads_proc_stat(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 10 50 1000 20 5 5 10 0 0\ncpu0 50 5 25 500 10 2 3 5 0 0\n"
                    "cpu1 50 5 25 500 10 3 2 5 0 0\nintr 1\n")
    clock = machine_load.read_cpu_clock(stat, own_s=1.5)
    hz = os.sysconf("SC_CLK_TCK")
    assert clock.cpus == 2 and clock.own_s == 1.5
    assert clock.machine_busy_s == pytest.approx((100 + 10 + 50 + 5 + 5 + 10) / hz)
    assert machine_load.read_cpu_clock(tmp_path / "missing") is None


@pytest.mark.parametrize("share, spreads, trusted", [
    (0.02, [0.01, 0.02, 0.03], True),
    (0.45, [0.01, 0.02, 0.03], False),
    (0.02, [0.2, 0.3, 0.1], False),
    (0.02, [0.01, 0.02, 0.9], False),
    (None, [0.01, 0.02], True),
])
def test_timing_verdict(share, spreads, trusted):
    load = None if share is None else {"other_cpu_share": share, "cpus": 2}
    verdict = machine_load.timing_verdict(load, spreads)
    assert verdict.trusted is trusted, verdict
    assert ("not measured" in verdict.facts) is (share is None)


def _drawn(monkeypatch):
    """Keep the figure a plot function saves: a list that gets it."""
    figures = []
    monkeypatch.setattr(plots, "_save", lambda fig, path: figures.append(fig))
    return figures


def test_an_open_range_is_an_arrow_to_the_axis_edge(monkeypatch, tmp_path):
    figures = _drawn(monkeypatch)
    inf = float("inf")
    plots.speedup_vs_n({"tiled B=8": ([64, 128, 256], [0.83, 0.8, 1.2], [0.25, 0.25, 1.1],
                                      [inf, 843.19, 1.3])}, tmp_path / "s.png", "dev")
    ax = figures[0].axes[0]
    bottom, top = ax.get_ylim()
    arrows = [t for t in ax.texts if getattr(t, "arrow_patch", None) is not None]
    assert [(a.xy[1], a.xyann[1]) for a in arrows] == [(top, 0.83)], "open upward to the edge"
    assert top >= 843.19, "a finite upper end is drawn whole"
    plots.speedup_vs_n({"tiled B=8": ([64, 128], [0.5, 2.0], [0.0, 1.5], [0.9, 2.5])},
                       tmp_path / "s.png", "dev")
    ax = figures[1].axes[0]
    arrows = [t for t in ax.texts if getattr(t, "arrow_patch", None) is not None]
    assert [(a.xy[1], a.xyann[1]) for a in arrows] == [(ax.get_ylim()[0], 0.5)], \
        "a range down to 0 is open downward"


def test_the_cut_figure_has_a_readable_legend_and_axes_from_the_data(monkeypatch, tmp_path):
    """16 square GEMMs (4 N × 4 B) and 4 other cases: a legend entry per N and per other
    case, in 8-point type, and axes that span the cuts and the speedups."""
    from tiletraffic.analysis.report.text import Speedup, cut_series

    figures = _drawn(monkeypatch)
    pairs = [Speedup(f"GEMM N={n} B={b}", "square", b, 1.1, 1.0, 1.2, b, n)
             for n in (512, 1024, 2048, 4096) for b in (4, 8, 16, 32)]
    pairs += [Speedup("GEMM non-multiple 1000×1000×1000 B=16", "non-multiple", 16, 1.0, 0.9,
                      1.1, 16, 1000),
              Speedup("matvec-local 8192×8192", "matvec", 2, 1.1, 1.05, 1.15, 256, None)]
    plots.speedup_vs_cut(cut_series(pairs), tmp_path / "c.png", "dev")
    ax = figures[0].axes[0]
    legend = ax.get_legend()
    labels = [t.get_text() for t in legend.get_texts()]
    assert len(labels) <= 8, labels
    assert {"square GEMM N=512", "square GEMM N=4096", "matvec-local 8192×8192"} <= set(labels)
    assert min(t.get_fontsize() for t in legend.get_texts()) >= 8
    left, right = ax.get_xlim()
    assert 1 <= left < 2 and 32 < right <= 64, (left, right)
    xs = sorted(x for line in ax.lines for x in line.get_xdata()
                if line.get_marker() not in (None, "None", "", "_")
                and line.get_linestyle() == "None")
    assert len(set(round(x, 6) for x in xs)) == len(xs), "no two points on one spot"
