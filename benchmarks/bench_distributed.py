"""Modelling a sweep of many GEMM shapes in one process and on a local Ray cluster, side by
side in one run.

The sweep: 10 shapes (M, N, K each 64 or 128, and two of 256) x 200 candidates of the
built-in space (spread evenly over each shape's valid ones) = 2,000 candidates, modelled on
``nvidia-h200`` exactly as ``tune gemm`` models them (:func:`analysis.tune.tuner.predict_with`),
first in this process (``--jobs 1``), then as Ray tasks on a local cluster (``--cluster
local``: every CPU of this machine). Prints both times, the time to start the cluster, their
ratio, and whether the two gave the same predictions (they must: the model is
deterministic). ``docs/distributed.md`` turns the per-candidate times into the arithmetic of
8 and 64 GPUs.

    python benchmarks/bench_distributed.py [--cluster local] [--per-shape 200] [--shapes 10]

Needs Ray (``pip install -e ".[distributed]"``). ``--per-shape 5 --shapes 2`` checks the
script in a minute.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from tiletraffic.analysis.device_model import resolve_device_model
from tiletraffic.analysis.tune import tuner
from tiletraffic.analysis.tune.cluster import Cluster, parse_cluster
from tiletraffic.analysis.tune.engine import LocalEngine
from tiletraffic.analysis.tune.space import load_space

SHAPES = [(m, n, k) for m in (64, 128) for n in (64, 128) for k in (64, 128)] + \
    [(256, 64, 64), (64, 256, 64)]
"""The 10 shapes (M, N, K) of the sweep."""


class Count:
    """A progress counter in tqdm's place (no bar: the times are the output)."""

    def __init__(self):
        self.n = 0

    def update(self, step):
        self.n += step


def sweep(per_shape: int, shapes: int, model):
    """The modelling tasks: ``per_shape`` candidates spread evenly over the valid ones of
    each of the first ``shapes`` shapes."""
    space = load_space()
    limits = tuner.combined_limits(None, model)
    tasks = []
    for s, (m, n, k) in enumerate(SHAPES[:shapes]):
        valid, _ = tuner.screen(space, m, n, k, limits)
        if len(valid) < per_shape:
            sys.exit(f"M={m} N={n} K={k} has {len(valid)} valid candidates, fewer than "
                     f"--per-shape {per_shape}")
        picked = np.unique(np.linspace(0, len(valid) - 1, per_shape).round().astype(int))
        tasks += [((s, int(i)), valid[i][0].family, valid[i][0].params, (m, n, k), None)
                  for i in picked]
    return tasks


def model_all(engine, tasks, model) -> tuple[dict, float]:
    """Every task's prediction (key -> predicted time, or the model's refusal) and the
    seconds it took."""
    out: dict = {}
    start = time.perf_counter()
    engine.model(tuner.predict_with, model, tasks,
                 lambda key, result: out.__setitem__(key, result.get(
                     "predicted_time_s", result.get("error"))), Count())
    return out, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cluster", default="local",
                        help="the cluster to compare with (default: local, every CPU here)")
    parser.add_argument("--per-shape", type=int, default=200)
    parser.add_argument("--shapes", type=int, default=10, choices=range(1, 11),
                        metavar="1..10")
    args = parser.parse_args()
    model = resolve_device_model("nvidia-h200")
    tasks = sweep(args.per_shape, args.shapes, model)
    count = len(tasks)
    print(f"{count} candidates ({args.shapes} shapes x {args.per_shape}) modelled on "
          f"{model.name}; this machine has {os.cpu_count()} CPUs", flush=True)
    alone, one_s = model_all(LocalEngine(1), tasks, model)
    print(f"  {'one process':28s} {one_s:8.1f} s  ({one_s / count:.3f} s per candidate)",
          flush=True)
    start = time.perf_counter()
    with Cluster(parse_cluster(args.cluster)) as cluster:
        started_s = time.perf_counter() - start
        spread, cluster_s = model_all(cluster, tasks, model)
        cpus = cluster.cpus
    print(f"  {f'cluster {args.cluster} ({cpus} CPUs)':28s} {cluster_s:8.1f} s  "
          f"({cluster_s / count:.3f} s per candidate; {started_s:.1f} s more to start Ray)")
    print(f"  ratio, one process / cluster: {one_s / cluster_s:.2f}x modelling, "
          f"{one_s / (cluster_s + started_s):.2f}x with the start; ideal {cpus}x")
    same = alone == spread
    print(f"  the same predictions: {'yes' if same else 'NO'}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
