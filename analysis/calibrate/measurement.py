"""One calibration benchmark's result, as ``calibrate`` tables it and writes it to a
device-model file."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Measurement:
    """One benchmark's result: ``value`` in ``unit``; ``field`` the model field it sets (None:
    none) to ``field_value``; ``what``: size and statistic, for the reference."""

    benchmark: str
    what: str
    value: float
    unit: str
    field: str | None = None
    field_value: Any = None
    why_unmapped: str = ""
    detail: str = ""
    """What else the benchmark measured (the l2_size sweep's rate at each footprint); printed
    under the table's row, not part of the model file."""
    refused: str = ""
    """Non-empty when the value was beyond what the hardware can do and so not written to
    the model (:func:`refuse_impossible`): the one-line message naming the benchmark, the
    value and the limit."""
