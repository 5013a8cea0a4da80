"""The argument checks of the library's functions: a TypeError that names the function
(``tiletraffic.<function>``), the argument and the value, raised before any work."""
from __future__ import annotations

import re
import reprlib

from tiletraffic.simulator.engine.data_inputs import INPUT_KINDS, reference_inputs_kind

SEED = ((int, type(None)), "an integer or None")
"""The types and wording of a ``seed`` argument (for :func:`check_argument_types`)."""


def datasheet_argument(datasheet):
    """A ``Datasheet`` (or None) as it is; a path loaded
    (``simulator.model.datasheet.load_datasheet``).

    Raises:
        DeviceModelError: the file cannot be read or is not a datasheet.
    """
    from tiletraffic.simulator.model.datasheet import Datasheet, load_datasheet

    if datasheet is None or isinstance(datasheet, Datasheet):
        return datasheet
    return load_datasheet(datasheet)


def check_schedule_argument(schedule, function: str) -> None:
    """Refuse a value that is no schedule (a name, say).

    Raises:
        TypeError: ``schedule`` is not a Schedule or KernelSequence; the message names
            ``tiletraffic.<function>`` and says how to build one.
    """
    from tiletraffic.simulator.ir.sequence import require_schedule

    require_schedule(schedule, f"tiletraffic.{function}")


def check_argument_types(function: str, **values) -> None:
    """Refuse an argument of the wrong type: each keyword is ``name=(value, types, what)``
    (``what``: the types in words); ``True`` passes as an int only where ``bool`` is named.

    Raises:
        TypeError: ``tiletraffic.<function>: <name> must be <what>, got <type> <value>``.
    """
    for name, (value, types, what) in values.items():
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise TypeError(f"tiletraffic.{function}: {name} must be {what}, got "
                            f"{type(value).__name__} {shown_value(value)}")


VALUE_SHOWN_CHARS = 60
"""The most characters of a value a message shows (:func:`shown_value`)."""

_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxdict, _REPR.maxlist, _REPR.maxtuple, _REPR.maxset = 2, 4, 8, 8, 8
_REPR.maxstring = _REPR.maxlong = _REPR.maxother = 2 * VALUE_SHOWN_CHARS


def shown_value(value) -> str:
    """``repr(value)`` for a message: on one line, at most :data:`VALUE_SHOWN_CHARS`
    characters (cut with ``…``); a large container or array is never formatted whole."""
    text = re.sub(r"\s*\n\s*", " ", _REPR.repr(value))
    if len(text) <= VALUE_SHOWN_CHARS:
        return text
    return text[:VALUE_SHOWN_CHARS - 1] + "…"


INPUTS = ((str,), f"the name of a kind of inputs ({', '.join(INPUT_KINDS)})")
"""The types and wording of an ``inputs`` argument (for :func:`check_argument_types`)."""


def inputs_kind_of(schedule, inputs: str | None) -> str:
    """``inputs`` where given, else the kind of inputs ``schedule``'s launch file names
    (``reference.inputs``), else ``normal``."""
    if inputs is not None:
        return inputs
    return reference_inputs_kind(schedule)
