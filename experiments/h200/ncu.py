"""Nsight Compute's CSV pages, parsed: ``ncu --import REPORT --page raw --csv``.

The counters :func:`experiments.h200.hardware.compare` reads are records of this form
(the H200 study's drivers in ``experiments/h200/`` write them).
"""
from __future__ import annotations

import csv
import io
import re


def _number(text: str):
    t = text.strip()
    if re.fullmatch(r"-?[\d,]+", t):
        return int(t.replace(",", ""))
    if re.fullmatch(r"-?[\d,]*\.\d+(e[-+]?\d+)?|-?\d+(\.\d*)?e[-+]?\d+", t, re.I):
        return float(t.replace(",", ""))
    return t


def parse_ncu_raw_csv(text: str) -> list[dict]:
    """ncu ``--page raw --csv`` -> one dict per profiled kernel.

    Each dict: ``info`` (ID, kernel name, grid, block ... as ncu prints them) and
    ``metrics`` (``name -> {"value", "unit"}``, every column whose name holds ``__``).
    The second CSV row holds the units (``--print-units base``); it is recognized by its
    empty ID column.
    """
    lines = [line for line in text.splitlines() if line.startswith('"')]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    if not rows:
        return []
    header, body = rows[0], rows[1:]
    units = [""] * len(header)
    if body and not body[0][0].strip().isdigit():
        units, body = body[0], body[1:]
    records = []
    for row in body:
        info, metrics = {}, {}
        for name, unit, value in zip(header, units, row):
            if "__" in name:
                metrics[name] = {"value": _number(value), "unit": unit}
            else:
                info[name] = _number(value) if name == "ID" else value
        records.append({"info": info, "metrics": metrics})
    return records


def metric_value(record: dict | None, metric: str) -> int | float | None:
    """The numeric value of ``metric`` in a counters record (``{"metrics": {name: {"value":
    ..., "unit": ...}}}``, as the H200 scripts write them), as stored (an int for a count),
    or None where the record, the metric or a number is missing."""
    v = (record or {}).get("metrics", {}).get(metric, {}).get("value")
    return v if isinstance(v, (int, float)) else None
