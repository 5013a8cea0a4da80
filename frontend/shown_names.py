"""How a schedule translated into OpenCL C from another language names its parameters in
messages: as the user wrote them (GLSL's push-constant member ``local`` is the C argument
``local_glsl``), kept in the schedule's ``extra`` under :data:`SHOWN_NAMES`."""
from __future__ import annotations

SHOWN_NAMES = "shown_names"
"""The key of ``Schedule.extra`` holding C name -> the name as the user wrote it."""


def shown_params(schedule) -> list[tuple[str, int]]:
    """``schedule.params`` (name, value) in order, each name as the user wrote it."""
    shown = schedule.extra.get(SHOWN_NAMES, {}) if isinstance(schedule.extra, dict) else {}
    return [(shown.get(name, name), value) for name, value in schedule.params]


def params_text(schedule) -> str:
    """``M=64 K=32 local=1``: the schedule's parameters for a header line."""
    return " ".join(f"{name}={value}" for name, value in shown_params(schedule))
