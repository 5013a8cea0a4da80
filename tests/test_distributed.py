"""Tuning and validating on a Ray cluster (``--cluster``): the same answers as one process,
faults that lose nothing, and a refusal in one line where Ray is not installed.

The scheduling of the rounds over device workers (:mod:`analysis.tune.rounds`) is tested
with a pool of pretend workers (no Ray needed); the rest on a local Ray cluster of 2 CPUs with
two PoCL device workers of one thread each, tuning a space of five candidates at
M = N = K = 64 (it skips, in one line, where Ray is not installed)."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from tiletraffic.analysis.cli import main
from tiletraffic.analysis.tune import cluster as tune_cluster, rounds, tuner
from tiletraffic.analysis.tune.cluster import ClusterSpecError, check_cluster, parse_cluster
from tiletraffic.analysis.tune.options import TuneError, TuneOptions
from tiletraffic.analysis.tune.rounds import (LocalPool, Measuring, NoWorkersLeft, RoundPlan,
                                              WorkerLost, run_rounds)
from tiletraffic.analysis.tune.shapes import read_shapes, tune_shapes
from tiletraffic.gpu.devices.device import list_devices

from test_tuner import SMALL_SPACE, write

HAS_POCL = any(d.is_pocl for d in list_devices())
needs_pocl = pytest.mark.skipif(not HAS_POCL, reason="PoCL is not installed")


# ----------------------------------------------------------------------------- --cluster

@pytest.mark.parametrize("text, init", [
    ("local", {"address": "local"}),
    ("local:2", {"address": "local", "num_cpus": 2}),
    ("auto", {"address": "auto"}),
    ("10.0.0.7:6379", {"address": "10.0.0.7:6379"}),
    ("ray://head.example:10001", {"address": "ray://head.example:10001"}),
])
def test_cluster_forms_are_what_ray_init_reads(text, init):
    assert parse_cluster(text).init == init


@pytest.mark.parametrize("text, words", [
    ("local:0", "N in local:N is the CPUs of the local cluster, a positive integer, not '0'"),
    ("local:x", "not 'x'"),
    ("head", "give local, local:N (N CPUs), auto or a Ray address"),
    ("", "give local"),
])
def test_a_cluster_of_no_known_form_is_refused_naming_it(text, words):
    with pytest.raises(ClusterSpecError, match="--cluster") as err:
        parse_cluster(text)
    assert words in str(err.value)


def test_device_workers_need_a_cluster_and_jobs_and_a_cluster_do_not_go_together():
    with pytest.raises(ClusterSpecError, match="--device-workers needs --cluster"):
        check_cluster(None, 2)
    with pytest.raises(TuneError, match="give one of them"):
        TuneOptions(64, 64, 64, jobs=2, cluster="local")


def test_an_address_where_nothing_answers_is_refused_at_once():
    import socket

    with socket.socket() as sock:          # a port that is closed: bound, never listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        with pytest.raises(tune_cluster.ClusterError, match=f"--cluster 127.0.0.1:{port}: "
                                                            "nothing answers there"):
            tune_cluster.Cluster(parse_cluster(f"127.0.0.1:{port}")).check_reachable()


@pytest.mark.parametrize("args", [
    ["tune", "gemm", "--m", "64", "--n", "64", "--k", "64", "--top", "0"],
    ["tune", "LAUNCH", "--param", "TS=8,16", "--top", "0"],
    ["validate", "--quick"],
])
def test_without_ray_every_command_refuses_cluster_in_one_line(args, monkeypatch, tmp_path):
    from pathlib import Path

    monkeypatch.setattr(tune_cluster, "ray_installed", lambda: False)
    launch = str(Path(__file__).resolve().parents[1] / "examples/opencl/mm_tiled.toml")
    args = [launch if a == "LAUNCH" else a for a in args]
    res = CliRunner().invoke(main, [*args, "--cluster", "local:2"])
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and "--cluster needs Ray, which is not installed here" in lines[0]
    assert 'pip install -e ".[distributed]"' in lines[0]
    with pytest.raises(ClusterSpecError, match="needs Ray"):
        TuneOptions(64, 64, 64, cluster="local")


# ----------------------------------------------------------------------------- the rounds

class PretendPool:
    """Workers that answer in the order their units were submitted; ``behave(worker, key,
    round)`` says what a unit returns (a result, or WorkerLost)."""

    remote = True

    def __init__(self, workers, behave):
        self.workers, self.behave, self.units = list(workers), behave, []

    def describe(self, worker):
        return {"worker": worker, "device": f"pretend {worker}", "host": "here"}

    def submit(self, worker, fn, args):
        self.units.append((worker, *args))
        return len(self.units) - 1

    def wait(self, handles):
        handle = min(handles)
        return handle, self.behave(*self.units[handle])


def measure(keys, count, workers, behave, done=None):
    """Run the rounds; each key's rounds as a record keeps them (given back: cut to what
    is kept), the log, and the pool."""
    kept: dict = {key: [(r, None) for r in range((done or {}).get(key, 0))] for key in keys}
    log: list = []
    pool = PretendPool(workers, behave)

    def on_result(key, r, result, worker):
        assert len(kept[key]) == r, "a round comes after the one before it"
        kept[key].append((r, worker, result))

    def on_restart(key, rounds_kept, why):
        kept[key] = kept[key][:rounds_kept]

    run_rounds(RoundPlan(list(keys), count, list(workers), dict(done or {})), pool,
               Measuring(work=lambda key, r: (None, (key, r)), on_result=on_result,
                         on_restart=on_restart, stops=lambda res: "failed" in res,
                         launch_fault=lambda res: (res.get("failed") or {}).get("stage")
                         == "launch", log=log.append))
    return kept, log, pool


OK = {"ok": True}


def test_one_worker_measures_in_the_order_one_process_does():
    order = []
    pool = LocalPool(target="the device")
    run_rounds(RoundPlan(["a", "b", "c"], 3, pool.workers), pool, Measuring(
        work=lambda key, r: ((lambda target, cache, key, r: (key, r, target)), (key, r)),
        on_result=lambda key, r, result, worker: order.append(result)))
    assert order == [(k, r, "the device") for r, ks in
                     ((0, "abc"), (1, "cba"), (2, "abc")) for k in ks]


def test_two_workers_measure_every_round_once_each_item_on_one_worker():
    kept, log, pool = measure("abcde", 2, [0, 1], lambda w, key, r: OK)
    assert all([r for r, *_ in rounds_] == [0, 1] for rounds_ in kept.values())
    assert all(len({w for _, w, _ in rounds_}) == 1 for rounds_ in kept.values())
    assert {w for rounds_ in kept.values() for _, w, _ in rounds_} == {0, 1}
    assert len(pool.units) == 10 and log == []


def test_a_resumed_item_measures_only_its_missing_rounds():
    kept, _, pool = measure("ab", 3, [0, 1], lambda w, key, r: OK, done={"a": 2, "b": 3})
    assert [u[1:] for u in pool.units] == [("a", 2)]
    assert [r for r, *_ in kept["a"]] == [0, 1, 2]


def test_a_worker_that_dies_loses_nothing_finished_and_its_items_go_on_elsewhere():
    dead = set()

    def behave(worker, key, r):
        if worker == 1 and (worker in dead or (key, r) == ("b", 1)):
            dead.add(worker)            # worker 1 dies measuring b's second round
            return WorkerLost("the actor was killed")
        return OK

    kept, log, pool = measure("abcd", 2, [0, 1], behave)
    assert all([r for r, *_ in rounds_] == [0, 1] for rounds_ in kept.values())
    assert all(len({w for _, w, _ in rounds_}) == 1 for rounds_ in kept.values())
    assert [u[1:] for u in pool.units if u[0] == 1] == [("b", 0), ("d", 0), ("d", 1),
                                                          ("b", 1)]
    assert [w for _, w, _ in kept["b"]] == [0, 0], "b, unfinished on 1, went to 0"
    assert [w for _, w, _ in kept["d"]] == [1, 1], "d, finished on 1 before it died, stays"
    assert [u[1:] for u in pool.units if u[0] == 0][-2:] == [("b", 0), ("b", 1)]
    assert any("device worker 1 (pretend 1 on here) died (the actor was killed)" in line
               for line in log)
    # finished items of a dead worker stay: a worker that dies after finishing loses none
    kept, _, _ = measure("ab", 1, [0, 1], lambda w, key, r: WorkerLost("gone")
                         if w == 1 and key == "b" else OK)
    assert [w for _, w, _ in kept["a"]] == [0] and [w for _, w, _ in kept["b"]] == [0]


def test_an_item_that_takes_down_two_workers_is_failed_and_the_rest_go_on():
    kept, log, _ = measure("ab", 1, [0, 1, 2], lambda w, key, r: WorkerLost("crash")
                           if key == "a" else OK)
    (_, _, result), = kept["a"]
    assert result["failed"]["error_type"] == "WorkerDied"
    assert "the worker measuring it died 2 times" in result["failed"]["error"]
    assert [w for _, w, _ in kept["b"]] == [1]
    assert sum(" died (crash)" in line for line in log) == 2


def test_a_launch_that_fails_on_one_device_moves_its_item_and_the_device_is_named():
    failing = {"failed": {"stage": "launch", "error_type": "LaunchError", "error": "lost"}}
    kept, log, _ = measure("abcd", 2, [0, 1], lambda w, key, r: failing if w == 1 else OK)
    assert all([(r, w) for r, w, _ in rounds_] == [(0, 0), (1, 0)] for rounds_ in kept.values())
    assert any(line.startswith("a launch failed on device worker 1 (pretend 1 on here): "
                               "launch: LaunchError: lost") for line in log)
    assert any("device worker 1 (pretend 1 on here) failed 2 launches in a row: it takes no "
               "more candidates" in line for line in log)
    # a launch that fails on every device is the item's failure, as in one process
    kept, _, _ = measure("a", 2, [0, 1], lambda w, key, r: failing)
    assert [result for _, _, result in kept["a"]] == [failing]


def test_no_worker_left_stops_with_the_last_one_named():
    with pytest.raises(NoWorkersLeft, match="every device worker is gone; the last: device "
                                            "worker 0 .*: it crashed"):
        measure("abc", 1, [0], lambda w, key, r: WorkerLost("it crashed"))


def test_retired_and_dead_workers_are_left_out_of_the_plan():
    plan = RoundPlan(["a"], 1, [0, 1])
    plan.died(0, None)
    assert plan.next_for(0) is None and plan.next_for(1) == rounds.Unit("a", 0)


# ----------------------------------------------------------------------------- --shapes

@pytest.mark.parametrize("text, words", [
    ("", "no [[shape]] table"),
    ("[[shape]]\nm = 8\nn = 8\n", "shape 1: k must be a positive integer, not missing"),
    ("[[shape]]\nm = 8\nn = 8\nk = 0\n", "shape 1: k must be a positive integer, not 0"),
    ("[[shape]]\nm = 8\nn = 8\nk = 8\nbatch = 2\n", "shape 1: unknown key 'batch'"),
    ("[[shape]]\nm = 8\nn = 8\nk = 8\n[[shape]]\nm = 8\nn = 8\nk = 8\n",
     "shape 2: M=8 N=8 K=8 is given twice"),
    ("shapes = 1\n", "unknown key 'shapes'"),
    ("[[shape]\n", "not a TOML file"),
])
def test_a_bad_shapes_file_is_refused_naming_the_shape_and_value(tmp_path, text, words):
    path = write(tmp_path, text, "shapes.toml")
    with pytest.raises(TuneError, match="--shapes") as err:
        read_shapes(path)
    assert words in str(err.value)


def test_shapes_tune_each_shape_as_its_own_tuning_into_its_own_file(tmp_path):
    space = write(tmp_path, SMALL_SPACE)
    shapes = read_shapes(write(tmp_path, "[[shape]]\nm = 64\nn = 64\nk = 64\nname = 'a'\n"
                                         "[[shape]]\nm = 32\nn = 64\nk = 64\n", "s.toml"))
    results = tune_shapes(TuneOptions(1, 1, 1, space=space, top=0), shapes, tmp_path / "t")
    for shape, res in zip(shapes, results):
        alone = tuner.tune(TuneOptions(*shape.sizes, space=space, top=0))
        assert [(p["label"], p["predicted_time_s"]) for p in res.predictions] == \
            [(p["label"], p["predicted_time_s"]) for p in alone.predictions]
        saved = json.loads((tmp_path / "t" / shape.file_name).read_text())
        assert saved == res.data and (saved["meta"]["m"], saved["status"]) == (shape.m,
                                                                               "complete")


# ----------------------------------------------------------------------------- on Ray

@pytest.fixture(scope="module")
def ray_cluster():
    """A local Ray cluster of 2 CPUs for this module's tests (they pass ``local:2``; a
    process connected to Ray already uses that connection)."""
    ray = pytest.importorskip("ray", reason="Ray is not installed (the distributed extra)")
    if not HAS_POCL:
        pytest.skip("PoCL is not installed")
    import logging

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
             object_store_memory=100 * 1024 ** 2, logging_level=logging.WARNING)
    yield ray
    ray.shutdown()


def answers(doc: dict) -> dict:
    """What a tuning answers, without the times, the moment and where it ran: the
    rejections, the ranking, the measured candidates with each round's inputs and check."""
    meta = {k: v for k, v in doc["meta"].items() if k not in (
        "created_utc", "command", "cluster", "previous_results_moved_to")}
    predictions = [{k: p.get(k) for k in ("label", "family", "params", "order",
                                          "predicted_rank", "predicted_time_s", "bound",
                                          "estimate_rank", "registers_source", "recheck")}
                   for p in doc["predictions"]]
    for p in predictions:
        if p["recheck"]:
            p["recheck"] = {k: v for k, v in p["recheck"].items() if k != "build_time_s"}
    measured = [(m["label"], m["status"], m["predicted_rank"],
                 [(r["round"], r["check"], r["global_size"], r["local_size"])
                  for r in m["rounds"]]) for m in doc["measurements"]]
    summary = {k: doc["summary"][k] for k in ("candidates", "rejected", "valid", "modelled",
                                              "measured_ok", "measured_failed",
                                              "rejected_by_reason", "scope")}
    return {"meta": meta, "status": doc["status"], "rejected": doc["rejected"],
            "predictions": predictions, "measurements": measured, "summary": summary,
            "pick": (doc["summary"]["pick"] or {}).get("label")}


def small(tmp_path, name, **options):
    return TuneOptions(64, 64, 64, device="pocl", space=str(write(tmp_path, SMALL_SPACE)),
                       top=3, seed=7, out=str(tmp_path / name), **options)


@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
    """``small(folder, "one.json")`` tuned in this process (no cluster), what a cluster's
    tuning must answer, tuned once for the module's tests that compare with it: (the
    tuning, the folder; its space file is the one a tuning of ``small(folder, ...)``
    names)."""
    if not HAS_POCL:
        pytest.skip("PoCL is not installed")
    folder = tmp_path_factory.mktemp("one")
    return tuner.tune(small(folder, "one.json")), folder


@pytest.mark.xdist_group("ray")
def test_a_cluster_of_two_device_workers_answers_as_one_process(ray_cluster, one_process):
    one, folder = one_process
    two = tuner.tune(small(folder, "two.json", cluster="local:2", device_workers=2))
    assert answers(two.data) == answers(one.data)
    assert json.loads((folder / "two.json").read_text()) == two.data
    workers = two.data["meta"]["cluster"]["device_workers"]
    assert [w["worker"] for w in workers] == [0, 1]
    assert {w["device"] for w in workers} == {one.data["meta"]["device"]["name"]}
    for m in two.measurements:  # every round of a candidate on the worker the record names
        assert {r["worker"] for r in m["rounds"]} == {m["worker"]["worker"]}
    assert {m["worker"]["worker"] for m in two.measurements} == {0, 1}, "both measured"


@pytest.mark.xdist_group("ray")
def test_a_device_worker_killed_mid_run_loses_nothing(ray_cluster, one_process, tmp_path,
                                                     monkeypatch):
    real_write, killed, lines = tuner.atomic_write_text, [], []

    def kill_after_first_round(path, text):
        real_write(path, text)
        doc = json.loads(text)
        started = [m for m in doc["measurements"] if m["rounds"]]
        if started and not killed:
            worker = started[0]["rounds"][0]["worker"]
            name = doc["meta"]["cluster"]["device_workers"][worker]["actor"]
            ray_cluster.kill(ray_cluster.get_actor(name))
            killed.append((worker, started[0]["label"]))

    monkeypatch.setattr(tuner, "atomic_write_text", kill_after_first_round)
    res = tuner.tune(small(tmp_path, "t.json", cluster="local:2", device_workers=2,
                           log=lines.append))
    (dead, label), = killed
    assert res.data["status"] == "complete"
    labels = [m["label"] for m in res.measurements]
    assert sorted(labels) == sorted(p["label"] for p in res.predictions[:3]), "each once"
    for m in res.measurements:
        assert m["status"] == "ok" and [r["round"] for r in m["rounds"]] == [0, 1]
        assert {r["worker"] for r in m["rounds"]} == {1 - dead}, "all on the worker left"
    restarted = next(m for m in res.measurements if m["label"] == label)
    assert restarted["restarts"] and f"device worker {dead}" in restarted["restarts"][0]
    assert any(f"device worker {dead} (" in line and " died (" in line for line in lines)
    assert answers(res.data)["measurements"] == answers(one_process[0].data)["measurements"]


@pytest.mark.xdist_group("ray")
def test_ctrl_c_on_a_cluster_leaves_a_file_that_resume_completes(ray_cluster, tmp_path,
                                                                  monkeypatch):
    real_write, seen = tuner.atomic_write_text, []

    def interrupt_at_the_second_round(path, text):
        real_write(path, text)
        doc = json.loads(text)
        if sum(len(m["rounds"]) for m in doc["measurements"]) == 2 and not seen:
            seen.append(doc)
            raise KeyboardInterrupt

    monkeypatch.setattr(tuner, "atomic_write_text", interrupt_at_the_second_round)
    with pytest.raises(tuner.TuneInterrupted, match="continue with --resume"):
        tuner.tune(small(tmp_path, "t.json", cluster="local:2", device_workers=2))
    saved = json.loads((tmp_path / "t.json").read_text())
    assert saved["status"] == "interrupted"
    assert sum(len(m["rounds"]) for m in saved["measurements"]) == 2
    monkeypatch.setattr(tuner, "atomic_write_text", real_write)
    lines: list = []
    done = tuner.tune(small(tmp_path, "t.json", cluster="local:2", device_workers=2,
                            resume=True, log=lines.append))
    assert any("modelling 0 on" in line and "(3 reused)" in line for line in lines)
    assert done.data["status"] == "complete" and len(done.measurements) == 3
    before = {m["label"]: m["rounds"] for m in saved["measurements"]}
    for m in done.measurements:
        assert [r["round"] for r in m["rounds"]] == [0, 1]
        assert m["rounds"][:len(before.get(m["label"], []))] == before.get(m["label"], []), \
            "what finished before Ctrl-C is kept, not measured again"


@pytest.mark.xdist_group("ray")
def test_the_commands_take_cluster_shapes_launch_files_and_validate(ray_cluster, tmp_path):
    from pathlib import Path

    space = str(write(tmp_path, SMALL_SPACE))
    shapes = write(tmp_path, "[[shape]]\nm = 64\nn = 64\nk = 64\n[[shape]]\nm = 32\nn = 64\n"
                             "k = 64\n", "shapes.toml")
    cluster = ["--cluster", "local:2", "--device-workers", "2", "--device", "pocl"]
    res = CliRunner().invoke(main, ["tune", "gemm", "--shapes", str(shapes), "--space", space,
                                    "--top", "2", "--rounds", "1", "--out",
                                    str(tmp_path / "s"), *cluster])
    assert res.exit_code == 0, res.output
    for name in ("gemm-64x64x64.json", "gemm-32x64x64.json"):
        doc = json.loads((tmp_path / "s" / name).read_text())
        assert doc["status"] == "complete" and doc["summary"]["measured_ok"] == 2
        assert name in res.stdout
    launch = str(Path(__file__).resolve().parents[1] / "examples/opencl/mm_tiled.toml")
    one, two = tmp_path / "l1.json", tmp_path / "l2.json"
    for out, more in ((one, []), (two, cluster[:4])):
        res = CliRunner().invoke(main, ["tune", launch, "--param", "TS=4,8", "--set", "N=32",
                                        "--top", "2", "--rounds", "1", "--device", "pocl",
                                        "--seed", "3", "--out", str(out), *more])
        assert res.exit_code == 0, res.output
    a, b = (json.loads(p.read_text()) for p in (one, two))
    assert [(p["label"], p["predicted_time_s"]) for p in a["predictions"]] == \
        [(p["label"], p["predicted_time_s"]) for p in b["predictions"]]
    assert [(m["label"], m["status"], [r["check"] for r in m["rounds"]])
            for m in a["measurements"]] == [(m["label"], m["status"],
                                             [r["check"] for r in m["rounds"]])
                                            for m in b["measurements"]]
    res = CliRunner().invoke(main, ["validate", "--cases", str(write(
        tmp_path, "[[case]]\nfamily = 'gemm-tiled'\nm = 32\nk = 32\nn = 32\ntile = 8\n"
                  "[[case]]\nfamily = 'gemm-naive'\nm = 32\nk = 32\nn = 32\ntile = 8\n", "cases.toml")),
        "--rounds", "2", "--out", str(tmp_path / "v"), *cluster])
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "v" / "validation.json").read_text())
    assert data["meta"]["complete"] and data["meta"]["case_runs_done"] == 4
    for entry in data["measurements"].values():
        assert [r["round"] for r in entry["rounds"]] == [0, 1]
        assert len({r["worker"]["worker"] for r in entry["rounds"]}) == 1
