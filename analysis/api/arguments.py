"""The argument checks of the library's functions: a TypeError that names the function
(``tiletraffic.<function>``), the argument and the value, raised before any work."""
from __future__ import annotations

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
                            f"{type(value).__name__} {value!r}")


def inputs_kind_of(schedule, inputs: str | None) -> str:
    """``inputs`` where given, else the kind of inputs ``schedule``'s launch file names
    (``reference.inputs``), else ``normal``."""
    if inputs is not None:
        return inputs
    return getattr(schedule, "extra", {}).get("reference_inputs", "normal")
