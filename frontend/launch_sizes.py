"""The message of a launch file's launch dimension or buffer shape that is not positive,
named by the size that makes it so (``N = -3: sizes must be positive integers``), so that
a size set with ``--set`` (or ``set=``) is named as given, not the value derived from it."""
from __future__ import annotations

from tiletraffic.frontend import expressions


def not_positive(launch, where: str, raw, value: int) -> tuple[str, str]:
    """The place and message (for ``launch.error``) of the entry ``where`` of ``launch`` (a
    :class:`~tiletraffic.frontend.launch_file.LaunchFile`), written ``raw``, whose ``value``
    is below 1: named by the size below 1 that ``raw`` reads, itself or through the sizes it
    is an expression of (the one furthest down that chain), with the value it was given;
    where none is (a literal, an expression of positive sizes), by ``raw`` and its value."""
    chain = expressions.names_read_through(raw, launch.names, launch.data.get("sizes", {}))
    below = [n for n in chain if launch.sizes.get(n, 1) < 1]
    if not below:
        shown = f"{raw!r} = {value}" if isinstance(raw, str) else str(value)
        return where, f"{shown} is not positive"
    name = below[-1]
    use = f"{where} is {name}" if raw.strip() == name else f"{where} = {raw!r} is {value}"
    return f"{name} = {launch.sizes[name]}", f"sizes must be positive integers ({use})"
