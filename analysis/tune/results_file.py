"""What a resumed tuning reuses of an earlier tuning's results file (:mod:`analysis.tune.tuner`),
checked before anything of it is reused: the fields it reads, present and of their JSON
types, the times positive. :func:`problem` names the first field that is not.

Checked: ``meta`` (an object; its ``seed`` a non-negative integer or null), ``predictions``
and ``measurements`` (lists of objects, either may be absent), ``recheck`` (an object or
null). A prediction: ``label``; where ``predicted_time_s`` is not null, it and its
``estimate``'s are positive numbers and its ``recheck`` (a build on the device) has a known
status, its ``resources`` and its ``prediction``. A measurement: ``label``, ``family``,
``params``, ``status`` (ok, failed or incomplete) and ``rounds``, each round's launch times
(positive numbers) and check; an ok one also its median, spread and range (positive or
non-negative numbers) and check; a failed one its stage and error.
"""
from __future__ import annotations

import math

from tiletraffic.simulator.model.file_values import shown

STATUSES = ("ok", "failed", "incomplete")
"""The statuses of a measurement."""
BUILD_STATUSES = ("compiled", "not reported")
"""The statuses of a prediction's ``recheck`` (:mod:`analysis.tune.recheck`)."""


class _Bad(ValueError):
    """The first field that is not what a resumed tuning reads (the message names it)."""


def problem(doc: dict) -> str | None:
    """Why the parsed tuning file ``doc`` (a JSON object) cannot be resumed from: the field,
    by its path (``measurements[2].median_s``), missing or what it must be instead of what it
    is; None when every field a resumed tuning reads is there and of its type."""
    try:
        _check(doc)
    except _Bad as err:
        return str(err)
    return None


def _describe(value) -> str:
    """``value`` in JSON's words (never a Python repr)."""
    return shown(value, "JSON")


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and \
        math.isfinite(value)


KINDS = {
    "object": (lambda v: isinstance(v, dict), "an object"),
    "list": (lambda v: isinstance(v, list), "a list"),
    "string": (lambda v: isinstance(v, str), "a string"),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "positive": (lambda v: _number(v) and v > 0, "a positive number"),
    "non-negative": (lambda v: _number(v) and v >= 0, "a non-negative number"),
    "count": (lambda v: _number(v) and isinstance(v, int) and v >= 0,
              "a non-negative integer"),
}
"""Each kind of field: its test and how a message names it."""


def _get(parent: dict, key: str, where: str, kind: str, *, null: bool = False,
         optional: bool = False):
    """``parent[key]`` when it is of ``kind`` (also null: ``null``; also absent:
    ``optional``, then None); else :class:`_Bad` naming ``where.key``."""
    name = f"{where}.{key}" if where else key
    if key not in parent:
        if optional:
            return None
        raise _Bad(f"field {name} is missing")
    value = parent[key]
    test, words = KINDS[kind]
    if (value is None and null) or test(value):
        return value
    raise _Bad(f"field {name} must be {words}{' or null' if null else ''}, not "
               f"{_describe(value)}")


def _items(parent: dict, key: str):
    """``(where, item)`` of the list ``parent[key]`` (absent: none), each item an object."""
    for i, item in enumerate(_get(parent, key, "", "list", optional=True) or []):
        where = f"{key}[{i}]"
        if not isinstance(item, dict):
            raise _Bad(f"field {where} must be an object, not {_describe(item)}")
        yield where, item


def _check(doc: dict) -> None:
    meta = _get(doc, "meta", "", "object")
    _get(meta, "seed", "meta", "count", null=True, optional=True)
    _get(doc, "recheck", "", "object", null=True, optional=True)
    for where, entry in _items(doc, "predictions"):
        _prediction(entry, where)
    for where, record in _items(doc, "measurements"):
        _measurement(record, where)


def _prediction(entry: dict, where: str) -> None:
    _get(entry, "label", where, "string")
    if _get(entry, "predicted_time_s", where, "positive", null=True, optional=True) is None:
        return  # not modelled: modelled again
    estimate = _get(entry, "estimate", where, "object", optional=True)
    if estimate is not None:
        _get(estimate, "predicted_time_s", f"{where}.estimate", "positive")
    check = _get(entry, "recheck", where, "object", null=True, optional=True)
    if check:
        status = _get(check, "status", f"{where}.recheck", "string")
        if status not in BUILD_STATUSES:
            raise _Bad(f"field {where}.recheck.status must be one of "
                       f"{', '.join(BUILD_STATUSES)}, not {_describe(status)}")
        resources = _get(check, "resources", f"{where}.recheck", "object")
        _get(resources, "registers_per_work_item", f"{where}.recheck.resources", "count",
             null=True)
        built = _get(check, "prediction", f"{where}.recheck", "object", null=True)
        if built is not None:
            _get(built, "predicted_time_s", f"{where}.recheck.prediction", "positive")
            _get(built, "remodelled", f"{where}.recheck.prediction", "bool")


def _measurement(record: dict, where: str) -> None:
    for key, kind in (("label", "string"), ("family", "string"), ("params", "object"),
                      ("status", "string"), ("rounds", "list")):
        _get(record, key, where, kind)
    status = record["status"]
    if status not in STATUSES:
        raise _Bad(f"field {where}.status must be one of {', '.join(STATUSES)}, not "
                   f"{_describe(status)}")
    for i, one in enumerate(record["rounds"]):
        at = f"{where}.rounds[{i}]"
        if not isinstance(one, dict):
            raise _Bad(f"field {at} must be an object, not {_describe(one)}")
        times = _get(one, "kernel_times_s", at, "list")
        if not times:
            raise _Bad(f"field {at}.kernel_times_s is empty")
        for j, t in enumerate(times):
            if not KINDS["positive"][0](t):
                raise _Bad(f"field {at}.kernel_times_s[{j}] must be a positive number, not "
                           f"{_describe(t)}")
        _round_check(_get(one, "check", at, "object"), f"{at}.check")
    if status == "ok":
        for key in ("median_s", "min_s", "max_s", "gflop_per_s"):
            _get(record, key, where, "positive")
        _get(record, "spread_s", where, "non-negative")
        _round_check(_get(record, "check", where, "object"), f"{where}.check")
    elif status == "failed":
        for key in ("stage", "error_type", "error"):
            _get(record, key, where, "string")


def _round_check(check: dict, where: str) -> None:
    _get(check, "ok", where, "bool")
    _get(check, "error_over_tolerance", where, "non-negative")
