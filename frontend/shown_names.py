"""How a launch's header names its sizes and parameters: as the user wrote them (GLSL's
push-constant member ``local`` is the C argument ``local_glsl``: the names kept in the
schedule's ``extra`` under :data:`SHOWN_NAMES`), with the launch file's sizes that no
parameter of the kernel is named after."""
from __future__ import annotations

SHOWN_NAMES = "shown_names"
"""The key of ``Schedule.extra`` holding C name -> the name as the user wrote it."""


def shown_params(schedule) -> list[tuple[str, int]]:
    """``schedule.params`` (name, value) in order, each name as the user wrote it, after
    the sizes of its launch file (``[sizes]``, ``extra["opencl"]["sizes"]`` or
    ``extra["cuda"]["sizes"]``, as replaced by ``--set``) that no parameter is named
    after (a size that only the launch's global size reads)."""
    extra = schedule.extra if isinstance(schedule.extra, dict) else {}
    shown = extra.get(SHOWN_NAMES, {})
    params = [(shown.get(name, name), value) for name, value in schedule.params]
    named = {name for name, _ in params} | {name for name, _ in schedule.params}
    sizes = next((extra[key].get("sizes") for key in ("opencl", "cuda")
                  if isinstance(extra.get(key), dict) and extra[key].get("sizes")), {})
    return [(name, value) for name, value in sizes.items()
            if name not in named and isinstance(value, int)] + params


def params_text(schedule) -> str:
    """``M=64 K=32 local=1``: the schedule's parameters for a header line."""
    return " ".join(f"{name}={value}" for name, value in shown_params(schedule))
