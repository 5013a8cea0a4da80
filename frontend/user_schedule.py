"""Schedules and references that a user writes in a Python file.

A *schedule spec* names where a schedule comes from: a built-in name (a family such as
``gemm-tiled``, a demo or a known-faulty variant) or ``FILE.py:FUNCTION``, a function in a
Python file that builds a :class:`~tiletraffic.simulator.ir.nodes.Schedule` with the IR::

    # my_kernel.py
    from tiletraffic.simulator.ir.nodes import Schedule, GlobalArray, ...

    def make_schedule(m, k, n, tile=8):      # called with the sizes the user gave
        ...
        return Schedule(...)

    def reference(inputs):                    # optional: the expected output, numpy float64
        return inputs["A"] @ inputs["B"]

:func:`load` imports the file (with :mod:`importlib`, as module
``tiletraffic_user_<stem>_<hash of the path>``; ``sys.path`` is not changed) and calls the
function with only the sizes given, as keyword arguments (``m``, ``k``, ``n``, ``tile``).
:func:`reference_function` finds the numpy reference: an explicit ``FILE.py:FUNCTION``, else a
function named ``reference`` in the schedule's file, else ``None`` (the value check is then
skipped; built-in schedules have their own reference).

A function named ``closed_form`` defined in the schedule's file gives the schedule's closed-form
counts, as a built-in family's closed forms do: :func:`load` attaches it to the schedule it
returns, and :func:`closed_form_counts` calls it with the schedule's sizes (its parameters
by their names in lower case, ``m``, ``k``, ``n``, and ``tile``; each only where the
function takes it) and checks what it returns: a dict of some or all of the counters of
``TrafficCounts.to_dict()`` (``global_load_elems``, ..., the ``*_by_buffer`` ones as dicts
over the schedule's global arrays), integer values. ``simulate``'s closed-form column,
``closed_form_agrees`` and ``tiletraffic.closed_form`` use it.

Large launches are counted by work-group classes (``simulate`` above
``simulator.engine.budget.VALUES_WORK`` work-item loop steps, ``model`` and
``--device-model`` always) where they are proved for the schedule
(:func:`tiletraffic.simulator.engine.accelerators.class_safety.classes_problem`: guards
that differ only at the first and last work-group of an NDRange dimension, indices affine
in the work-group id); a schedule whose guards depend on the work-group id otherwise
(``group_id(0) % 2``) is executed work-group by work-group, with a note saying why.

Every problem a user can cause raises :class:`UserScheduleError` (a ``ValueError``) with one
line naming the file, the function and the value: missing file, import failure, missing
function, a parameter the function does not take (or needs and did not get), the function
raising, a return value that is not a ``Schedule`` or not a well-formed one
(:func:`tiletraffic.simulator.ir.wellformed.check_well_formed`).
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.util
import inspect
import numbers
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Callable

from tiletraffic.simulator.ir.nodes import Schedule
from tiletraffic.simulator.ir.sequence import KernelSequence
from tiletraffic.simulator.kernels.families import FAMILIES, SEQUENCE_FAMILIES
from tiletraffic.simulator.ir.wellformed import MalformedScheduleError, check_well_formed

SPEC_PATTERN = re.compile(r"^(?P<file>.+\.py):(?P<function>[A-Za-z_][A-Za-z0-9_]*)$")
"""``FILE.py:FUNCTION``: a path ending in ``.py``, a colon, a Python identifier."""

DEFAULT_REFERENCE = "reference"
"""Name of the reference function looked up in a schedule's file when none is given."""

DEFAULT_CLOSED_FORM = "closed_form"
"""Name of the closed-form function looked up in a schedule's file."""

CLOSED_FORM_KEY = "closed_form_function"
"""The key of a schedule's ``extra`` that holds its file's closed form: a pair
``(function, "FILE.py:closed_form")`` (:func:`load`)."""

SIZE_OPTIONS = ("m", "k", "n", "tile")
"""Keyword arguments a schedule function may receive (each only when the user gave it)."""


class UserScheduleError(ValueError):
    """A schedule or reference from a user's file cannot be loaded or built."""


def is_file_spec(spec: str) -> bool:
    """True when ``spec`` has the form ``FILE.py:FUNCTION`` (built-in names never do)."""
    return bool(SPEC_PATTERN.match(spec))


def split_spec(spec: str) -> tuple[Path, str]:
    """``(path, function name)`` of a ``FILE.py:FUNCTION`` spec.

    Raises:
        UserScheduleError: ``spec`` does not have that form.
    """
    match = SPEC_PATTERN.match(spec)
    if not match:
        raise UserScheduleError(f"{spec!r} is not of the form FILE.py:FUNCTION")
    return Path(match["file"]), match["function"]


_modules: dict[tuple[str, int, int], ModuleType] = {}


def _module_name(path: Path) -> str:
    stem = re.sub(r"\W", "_", path.stem)
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    return f"tiletraffic_user_{stem}_{digest}"


def load_module(path: str | Path) -> ModuleType:
    """Import the Python file ``path`` (once per version of the file: a changed file is
    imported again). It is registered in ``sys.modules`` under a name derived from its
    absolute path, as dataclasses and pickling need; ``sys.path`` is left alone, so the
    file imports only installed packages (and ``tiletraffic``).

    Raises:
        UserScheduleError: no such file, or importing it raised (its message is shown) or
            called ``sys.exit`` (a SystemExit is never let through as this process's exit).
    """
    path = Path(path)
    if not path.is_file():
        raise UserScheduleError(f"file {str(path)!r} does not exist"
                                if not path.exists() else f"{str(path)!r} is not a file")
    path = path.resolve()
    stat = path.stat()
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    if key in _modules:
        return _modules[key]
    name = _module_name(path)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SystemExit as err:  # sys.exit() at import: bad input, not this process's exit
        sys.modules.pop(name, None)
        raise UserScheduleError(f"importing {path.name} failed: it {exited(err)}; a "
                                "schedule file must not exit") from None
    except Exception as err:  # noqa: BLE001 - any error of the user's code, reported in one line
        sys.modules.pop(name, None)
        where = f" (line {err.lineno})" if isinstance(err, SyntaxError) else ""
        raise UserScheduleError(f"importing {path.name} failed{where}: "
                                f"{type(err).__name__}: {err}") from err
    _modules[key] = module
    return module


def load_function(spec: str) -> Callable:
    """The function ``FUNCTION`` of ``FILE.py`` for a ``FILE.py:FUNCTION`` spec.

    Raises:
        UserScheduleError: bad spec, missing file, failed import, no such function, or the
            name is not callable.
    """
    path, name = split_spec(spec)
    module = load_module(path)
    fn = getattr(module, name, None)
    if fn is None:
        defined = sorted(n for n, v in vars(module).items()
                         if inspect.isfunction(v) and v.__module__ == module.__name__)
        raise UserScheduleError(f"{path.name} has no function {name!r} (it defines: "
                                f"{', '.join(defined) or 'no functions'})")
    if not callable(fn):
        raise UserScheduleError(f"{path.name}: {name} is of type {type(fn).__name__}, not a function")
    return fn


def _bind(fn: Callable, label: str, sizes: dict[str, int]) -> None:
    """Check that ``fn`` takes exactly the given keyword ``sizes`` (and needs no other)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return  # a builtin or C function: let the call itself report
    params = sig.parameters
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
    accepted = [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD,
                                                            p.KEYWORD_ONLY)]
    for key in sizes:
        if key not in params and not takes_any:
            raise UserScheduleError(
                f"{label} does not take parameter {key!r} (given as --{key} {sizes[key]}); "
                f"its parameters: {', '.join(accepted) or 'none'}")
    missing = [n for n, p in params.items()
               if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
               and n not in sizes]
    if missing:
        raise UserScheduleError(f"{label} needs parameter {missing[0]!r}; give "
                                + ", ".join(f"--{n}" for n in missing))


def load(spec: str, **sizes: int | None) -> Schedule:
    """Build the schedule of a ``FILE.py:FUNCTION`` spec: call the function with the sizes
    that are not ``None``, as keyword arguments.

    Args:
        spec: ``path/to/file.py:function``.
        sizes: ``m``, ``k``, ``n``, ``tile`` (others are passed on as well); ``None`` values
            are left out, so the function's own defaults apply.

    Returns:
        The :class:`Schedule` the function returned, with the file's ``closed_form``
        function, where it defines one, in its ``extra`` (:func:`with_closed_form`).

    Raises:
        UserScheduleError: as :func:`load_function`; a size the function does not take, or a
            parameter without default that was not given; the function raised (its
            exception type and message are shown) or called ``sys.exit``; it returned
            something other than a ``Schedule`` (the type is named), a schedule named like
            a built-in family
            (closed forms are looked up by that name), or one that is not well formed
            (``simulator.ir.wellformed``: an unbound name, a store into an input, ...).
    """
    fn = load_function(spec)
    path, name = split_spec(spec)
    given = {key: v for key, v in sizes.items() if v is not None}
    label = f"{path.name}:{name}"
    _bind(fn, label, given)
    call = f"{name}({', '.join(f'{key}={v!r}' for key, v in given.items())})"
    try:
        result = fn(**given)
    except SystemExit as err:
        raise UserScheduleError(f"{path.name}: {call} {exited(err)} instead of returning a "
                                "Schedule") from None
    except Exception as err:  # noqa: BLE001 - the user's code: one line, not a traceback
        raise UserScheduleError(f"{path.name}: {call} raised {type(err).__name__}: {err}"
                                ) from err
    if not isinstance(result, (Schedule, KernelSequence)):
        raise UserScheduleError(f"{path.name}: {call} returned an object of type {type(result).__name__}, "
                                "not a tiletraffic Schedule or KernelSequence")
    if result.family in FAMILIES + SEQUENCE_FAMILIES:
        raise UserScheduleError(
            f"{path.name}: {call} returned a schedule whose family {result.family!r} is a "
            "built-in family's name, whose closed forms would be compared with it; give it a "
            "name of its own (dataclasses.replace(schedule, family='...'))")
    try:
        check_well_formed(result)
    except MalformedScheduleError as err:
        raise UserScheduleError(f"{path.name}: {call} returned a malformed schedule: {err}"
                                ) from None
    return with_closed_form(result, path)


def with_closed_form(schedule: Schedule | KernelSequence, path: Path
                     ) -> Schedule | KernelSequence:
    """``schedule`` with the closed form of its file ``path`` (the function
    :data:`DEFAULT_CLOSED_FORM`, when the file itself defines one: a ``closed_form``
    imported into it, such as ``tiletraffic.closed_form``, is not its own) in its ``extra``
    under :data:`CLOSED_FORM_KEY`; ``schedule`` itself when the file has none."""
    module = load_module(path)
    fn = getattr(module, DEFAULT_CLOSED_FORM, None)
    if not inspect.isfunction(fn) or fn.__module__ != module.__name__:
        return schedule
    label = f"{path}:{DEFAULT_CLOSED_FORM}"
    return dataclasses.replace(schedule, extra={**schedule.extra, CLOSED_FORM_KEY: (fn, label)})


def closed_form_source(schedule) -> str | None:
    """``FILE.py:closed_form`` of the user's closed form attached to ``schedule``
    (:func:`load`), or None when it has none."""
    entry = (getattr(schedule, "extra", None) or {}).get(CLOSED_FORM_KEY)
    return None if entry is None else entry[1]


def closed_form_counts(schedule) -> dict | None:
    """The counts of the user's closed form attached to ``schedule`` (:func:`load`; the
    module docstring says how it is called and what it returns), or None when it has none.

    Raises:
        UserScheduleError: the function needs a parameter the schedule has no size for,
            raised (its exception type and message are shown) or called ``sys.exit``, or
            returned something other than a dict of the counters: a key that is no counter,
            a buffer that is not one of the schedule's global arrays, a value that is not an
            integer.
    """
    entry = (getattr(schedule, "extra", None) or {}).get(CLOSED_FORM_KEY)
    if entry is None:
        return None
    fn, label = entry
    sizes = {name.lower(): value for name, value in schedule.params}
    sizes["tile"] = schedule.tile
    given = _accepted(fn, label, sizes)
    call = f"{label}({', '.join(f'{key}={v!r}' for key, v in given.items())})"
    try:
        result = fn(**given)
    except SystemExit as err:
        raise UserScheduleError(f"{call} {exited(err)} instead of returning its counts"
                                ) from None
    except Exception as err:  # noqa: BLE001 - the user's code: one line, not a traceback
        raise UserScheduleError(f"{call} raised {type(err).__name__}: {err}") from err
    return _checked_counts(result, call, [a.name for a in schedule.arrays])


def _accepted(fn: Callable, label: str, sizes: dict[str, int]) -> dict[str, int]:
    """The ``sizes`` that ``fn`` takes (all of them when it takes ``**kwargs``).

    Raises:
        UserScheduleError: ``fn`` needs a parameter that is not among ``sizes``."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return dict(sizes)
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return dict(sizes)
    missing = [n for n, p in params.items() if p.default is p.empty and n not in sizes
               and p.kind is not p.VAR_POSITIONAL]
    if missing:
        raise UserScheduleError(f"{label} needs parameter {missing[0]!r}, which is none of the "
                                f"schedule's sizes ({', '.join(sizes)})")
    return {key: v for key, v in sizes.items() if key in params}


def _checked_counts(result, call: str, buffers: list[str]) -> dict:
    """``result`` of a user's closed form as counts (integers as ``int``).

    Raises:
        UserScheduleError: not a dict of the counters of ``TrafficCounts.to_dict()``."""
    from tiletraffic.simulator.observers.counters import TrafficCounts

    known = TrafficCounts().to_dict()
    if not isinstance(result, dict):
        raise UserScheduleError(f"{call} returned an object of type {type(result).__name__}, "
                                "not a dict of counts")
    out = {}
    for key, value in result.items():
        if key not in known:
            raise UserScheduleError(f"{call} returned key {key!r}, which is no counter; the "
                                    f"counters: {', '.join(known)}")
        if isinstance(known[key], dict):
            if not isinstance(value, dict):
                raise UserScheduleError(f"{call}: {key} must be a dict over the buffers "
                                        f"({', '.join(buffers)}), got {type(value).__name__}")
            unknown = [b for b in value if b not in buffers]
            if unknown:
                raise UserScheduleError(f"{call}: {key} names buffer {unknown[0]!r}, which is "
                                        f"not one of the schedule's ({', '.join(buffers)})")
            out[key] = {b: _integer(v, f"{call}: {key}[{b!r}]") for b, v in value.items()}
        else:
            out[key] = _integer(value, f"{call}: {key}")
    return out


def _integer(value, where: str) -> int:
    """``value`` as an int (an integer of any integral type, not a bool).

    Raises:
        UserScheduleError: ``value`` is not an integer; the message starts with ``where``."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    raise UserScheduleError(f"{where} must be an integer, got {type(value).__name__} {value!r}")


def reference_function(schedule_spec: str | None, reference_spec: str | None = None
                       ) -> Callable | None:
    """The user's numpy reference for a schedule: ``inputs -> output``.

    Args:
        schedule_spec: the schedule's spec (a built-in name or ``FILE.py:FUNCTION``).
        reference_spec: an explicit ``FILE.py:FUNCTION`` (``--reference``); wins when given.

    Returns:
        The explicit function; else, for a schedule from a file, the function named
        :data:`DEFAULT_REFERENCE` in that file when it defines one; else ``None`` (built-in
        schedules then use their own reference; a user's schedule is not value-checked).
        The function is wrapped so that an exception it raises (a SystemExit from
        ``sys.exit`` too) becomes a :class:`UserScheduleError` naming it
        (``functools.wraps`` keeps its name).

    Raises:
        UserScheduleError: the explicit reference cannot be loaded (as :func:`load_function`).
    """
    if reference_spec is not None:
        fn, label = load_function(reference_spec), reference_spec
    elif schedule_spec is None or not is_file_spec(schedule_spec):
        return None
    else:
        path, _ = split_spec(schedule_spec)
        fn = getattr(load_module(path), DEFAULT_REFERENCE, None)
        if not callable(fn):
            return None
        label = f"{path}:{DEFAULT_REFERENCE}"
    return reporting_reference(fn, label)


def reporting_reference(fn: Callable, label: str) -> Callable:
    """``fn`` (a user's reference function, ``inputs -> output``) whose exit or exception is
    one :class:`UserScheduleError` line naming ``label``, not a traceback."""
    @functools.wraps(fn)
    def call(inputs):
        try:
            return fn(inputs)
        except SystemExit as err:
            raise UserScheduleError(f"the reference {label} {exited(err)} instead of "
                                    "returning its output") from None
        except Exception as err:  # noqa: BLE001 - the user's code: one line, not a traceback
            raise UserScheduleError(f"the reference {label} raised {type(err).__name__}: "
                                    f"{err}") from err
    return call


def exited(err: SystemExit) -> str:
    """How a message says that the user's code called ``sys.exit`` (or raised SystemExit):
    with its code, which is not this process's exit status."""
    code = "" if err.code is None else repr(err.code)
    return f"called sys.exit({code}) (SystemExit)"
