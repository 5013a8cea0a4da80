"""How many launches a timed run may make: the one definition of the limits of ``repeat``
(timed launches), ``warmup`` (untimed launches before them) and ``rounds`` (times a whole
set of cases or candidates is run), which every command that takes ``--repeat``,
``--warmup`` or ``--rounds`` and every function that launches (``run_kernel``, the report,
the validation, the tuners) checks.

The lower limits keep a spread measurable (10 timed launches) and the JIT compilation out of
the times (1 warm-up launch); the upper ones keep a mistyped count (an extra digit or two)
from holding a device for hours, every launch being checked against the reference.

No import of pyopencl: the command line reads these limits to declare its options.
"""
from __future__ import annotations

MIN_REPEAT = 10
"""Fewest timed launches of one run."""

MAX_REPEAT = 10_000
"""Most timed launches of one run."""

MIN_WARMUP = 1
"""Fewest untimed launches before the timed ones (the first includes JIT compilation)."""

MAX_WARMUP = 1_000
"""Most untimed launches before the timed ones."""

MIN_ROUNDS = 1
"""Fewest runs of a whole set of cases or candidates (2 give the run-to-run spread)."""

MAX_ROUNDS = 100
"""Most runs of a whole set of cases or candidates (each runs every one of them again)."""


def repeat_problem(repeat, name: str = "repeat") -> str | None:
    """Why ``repeat`` is not a count of timed launches (None: it is one); ``name`` is how the
    message names it (``--repeat`` on the command line)."""
    return _problem(name, repeat, MIN_REPEAT, MAX_REPEAT, "timed launches")


def warmup_problem(warmup, name: str = "warmup") -> str | None:
    """Why ``warmup`` is not a count of warm-up launches (None: it is one)."""
    return _problem(name, warmup, MIN_WARMUP, MAX_WARMUP, "untimed launches")


def rounds_problem(rounds, name: str = "rounds") -> str | None:
    """Why ``rounds`` is not a count of runs of a whole set (None: it is one)."""
    return _problem(name, rounds, MIN_ROUNDS, MAX_ROUNDS, "rounds")


def check_launch_counts(repeat=None, warmup=None, rounds=None) -> None:
    """Refuse a ``repeat``, ``warmup`` or ``rounds`` (those not None) outside the limits.

    Raises:
        ValueError: naming the value and the limit it breaks.
    """
    for problem in (None if repeat is None else repeat_problem(repeat),
                    None if warmup is None else warmup_problem(warmup),
                    None if rounds is None else rounds_problem(rounds)):
        if problem is not None:
            raise ValueError(problem)


def _problem(name: str, value, least: int, most: int, what: str) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return f"{name} must be an integer ({what}), got {value!r}"
    if value < least:
        return f"{name} = {value} is below the minimum of {least} {what}"
    if value > most:
        return f"{name} = {value} is above the maximum of {most} {what}"
    return None
