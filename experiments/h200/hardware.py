"""Prediction against measurement on real hardware: the model next to Nsight Compute.

:func:`compare` takes a run's raw data as a dict: ``counters.records`` (one per case:
``id``, ``schedule``, ``m``, ``k``, ``n``, ``tile`` and ``metrics`` as
:func:`experiments.h200.ncu.parse_ncu_raw_csv` reads them) and, optionally,
``opencl_cases`` (``id`` and ``run.median_s``, the OpenCL times). It predicts every case
with :func:`tiletraffic.simulator.model.launch.model_launch` and pairs each prediction with
its counters (:class:`CaseComparison`); :func:`speedups` and :func:`rankings` compare
predicted and measured times. Nothing here needs a GPU.

Where the counters come from a build other than the one timed (on NVIDIA, Nsight Compute
reads the CUDA build of the generated source, which runs different machine code than the
OpenCL build), the counters are compared with the device model of the counted build
(:func:`counter_model_for`, ``<model>-cuda`` where one exists) and the OpenCL times with the
model of the OpenCL build.

Metric names are Nsight Compute's (Nsight Compute Kernel Profiling Guide, "Metrics
Reference"); a request is one warp-level load instruction (l1tex__t_requests).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import lru_cache

from tiletraffic.simulator.kernels import families as schedules
from tiletraffic.simulator.model.device_model import (DEVICE_MODELS, DeviceModel,
                                                      GuessedValueWarning)
from tiletraffic.simulator.model.launch import ModelledLaunch, model_launch

EXACT = "exact"
WITHIN_25 = 0.25

COMPARED = (
    # (label, predicted key, hardware metric, target)
    ("global load instructions", "global_load_requests", "smsp__inst_executed_op_global_ld.sum",
     EXACT),
    ("global load requests", "global_load_requests",
     "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", EXACT),
    ("global load sectors", "global_load_sectors",
     "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", EXACT),
    ("global store sectors", "global_store_sectors",
     "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", EXACT),
    ("L2→L1 read sectors", "l2_read_sectors", "lts__t_sectors_srcunit_tex_op_read.sum",
     WITHIN_25),
    ("DRAM bytes read", "dram_read_bytes", "dram__bytes_read.sum", WITHIN_25),
    ("DRAM bytes read, lock-step waves", "dram_read_bytes_lockstep", "dram__bytes_read.sum",
     None),
    ("DRAM bytes written", "dram_write_bytes", "dram__bytes_write.sum", None),
    ("local load instructions", "local_load_requests", "smsp__inst_executed_op_shared_ld.sum",
     None),
    ("local load wavefronts", "local_load_wavefronts",
     "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", None),
    ("local load bank conflicts", "local_load_bank_conflicts",
     "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", None),
)


@dataclass
class CaseComparison:
    """One schedule instance: predicted values, hardware counters, times."""

    case_id: str
    family: str
    m: int
    k: int
    n: int | None
    tile: int
    launch: ModelledLaunch
    counters: dict[str, float]
    measured_time_s: float | None
    counter_time_s: float | None
    counter_launch: ModelledLaunch | None = None
    """The prediction for the build the counters were read from, if not ``launch``'s."""

    @property
    def counted(self) -> ModelledLaunch:
        """The prediction the hardware counters are compared with."""
        return self.counter_launch or self.launch

    @property
    def predicted(self) -> dict:
        return self.counted.to_dict()

    def time_pair(self, opencl: bool = True) -> tuple[float, float | None]:
        """(predicted, measured) kernel time in seconds: the OpenCL median against the
        OpenCL build's prediction, or (``opencl`` False, or no OpenCL time) Nsight's duration
        against the counted build's."""
        if opencl and self.measured_time_s:
            return self.launch.prediction.predicted_time_s, self.measured_time_s
        return self.counted.prediction.predicted_time_s, self.counter_time_s

    def rows(self) -> list[dict]:
        """Each compared quantity: predicted, measured, relative error, target met."""
        out = []
        pred = self.predicted
        for label, key, metric, target in COMPARED:
            if metric not in self.counters:
                continue
            p, h = pred[key], self.counters[metric]
            err = (p - h) / h if h else (0.0 if p == 0 else float("inf"))
            met = None if target is None else (p == h if target == EXACT else abs(err) <= target)
            out.append({"quantity": label, "predicted": p, "measured": h, "metric": metric,
                        "relative_error": err, "target": target, "met": met})
        if self.measured_time_s:
            p = self.launch.prediction.predicted_time_s
            out.append({"quantity": "kernel time (s)", "predicted": p,
                        "measured": self.measured_time_s, "metric": "OpenCL events, median",
                        "relative_error": (p - self.measured_time_s) / self.measured_time_s,
                        "target": None, "met": None})
        return out


@lru_cache(maxsize=128)
def modelled_launch(family: str, m: int, k: int, n: int | None, tile: int,
                    model: DeviceModel) -> ModelledLaunch:
    """:func:`simulator.model.launch.model_launch` of one schedule instance, cached, without
    the guessed-value warnings (a report lists the guessed values once, in "What the model
    guesses")."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GuessedValueWarning)
        return model_launch(schedules.build(family, m, k, n, tile), model)


def _counter_values(record: dict) -> dict[str, float]:
    return {k: v["value"] for k, v in record.get("metrics", {}).items()
            if isinstance(v.get("value"), (int, float))}


def counter_model_for(model: DeviceModel) -> DeviceModel:
    """The model of the build Nsight Compute read the counters from: ``<name>-cuda`` where
    the table has one (the H200: the CUDA build merges local loads into 128-bit loads, the
    OpenCL build does not), else ``model`` itself."""
    return DEVICE_MODELS.get(f"{model.name}-cuda", model)


def compare(raw: dict, model: DeviceModel) -> list[CaseComparison]:
    """Pair every case of ``raw`` (see the module docstring) that has counters with its
    prediction on ``model`` (the OpenCL build: times, speedups, rankings) and on
    :func:`counter_model_for` ``model`` (the counters); cases without a numeric counter are
    left out."""
    counter_model = counter_model_for(model)
    times = {c["id"]: c["run"]["median_s"] for c in raw.get("opencl_cases", [])
             if c.get("run")}
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for rec in raw.get("counters", {}).get("records", []):
            counters = _counter_values(rec)
            if not counters:
                continue
            launch = modelled_launch(rec["schedule"], rec["m"], rec["k"], rec.get("n"),
                                     rec["tile"], model)
            counted = None if counter_model is model else modelled_launch(
                rec["schedule"], rec["m"], rec["k"], rec.get("n"), rec["tile"], counter_model)
            ns = counters.get("gpu__time_duration.sum")
            out.append(CaseComparison(rec["id"], rec["schedule"], rec["m"], rec["k"],
                                      rec.get("n"), rec["tile"], launch, counters,
                                      times.get(rec["id"]), ns * 1e-9 if ns else None,
                                      counted))
    return out


def speedups(cases: list[CaseComparison]) -> list[dict]:
    """Tiled over naive (same N and B; matvec local over naive): predicted and measured."""
    by = {(c.family, c.m, c.k, c.n, c.tile): c for c in cases}
    out = []
    for c in cases:
        base = {"gemm-tiled": "gemm-naive", "matvec-local": "matvec-naive",
                "matvec-local-whole": "matvec-naive"}.get(c.family)
        ref = by.get((base, c.m, c.k, c.n, c.tile)) if base else None
        if ref is None:
            continue
        opencl = bool(ref.measured_time_s and c.measured_time_s)
        (p_ref, m_ref), (p_c, m_c) = ref.time_pair(opencl), c.time_pair(opencl)
        pred = p_ref / p_c
        meas = m_ref / m_c if (m_ref and m_c) else None
        out.append({"case": c.case_id, "versus": ref.case_id, "predicted": pred,
                    "measured": meas,
                    "relative_error": (pred - meas) / meas if meas else None,
                    "met": abs((pred - meas) / meas) <= 0.30 if meas else None})
    return out


def rankings(cases: list[CaseComparison]) -> list[dict]:
    """Per problem size, the order of schedules and tiles by predicted and measured time."""
    groups: dict[tuple, list[CaseComparison]] = {}
    for c in cases:
        kind = "gemm" if c.family.startswith("gemm") else "matvec"
        groups.setdefault((kind, c.m, c.k, c.n), []).append(c)
    out = []
    for key, members in groups.items():
        timed = [c for c in members if (c.measured_time_s or c.counter_time_s)]
        if len(timed) < 2:
            continue
        label = {c.case_id: f"{c.family} B={c.tile}" for c in timed}
        opencl = all(c.measured_time_s for c in timed)
        pred = sorted(timed, key=lambda c: c.time_pair(opencl)[0])
        meas = sorted(timed, key=lambda c: c.time_pair(opencl)[1])
        out.append({"size": key, "predicted": [label[c.case_id] for c in pred],
                    "measured": [label[c.case_id] for c in meas],
                    "match": [c.case_id for c in pred] == [c.case_id for c in meas],
                    "discordant": _discordant_pairs(pred, label, opencl)})
    return out


def _discordant_pairs(pred: list[CaseComparison], label: dict[str, str],
                      opencl: bool) -> list[dict]:
    """Pairs the prediction orders one way and the measurement the other: each with both
    times (s) predicted and measured, and Nsight's durations of the counted build (where
    there are), in the predicted order."""
    out = []
    for i, a in enumerate(pred):
        for b in pred[i + 1:]:
            (pa, ma), (pb, mb) = a.time_pair(opencl), b.time_pair(opencl)
            if ma is not None and mb is not None and ma > mb:
                out.append({"pair": [label[a.case_id], label[b.case_id]],
                            "predicted_s": [pa, pb], "measured_s": [ma, mb],
                            "counter_build_s": [a.counter_time_s, b.counter_time_s]
                            if opencl else None})
    return out

