"""The targets the model is judged by (``validate``, ``tune``, ``report``): named limits read
from a TOML file, the built-in ``targets.toml`` beside this module unless the user gives
another (``--targets FILE``, ``targets=`` in Python).

Each target is a table ``[NAME]`` with ``limit`` (a number, or an arithmetic expression
evaluated by :mod:`frontend.expressions`, never ``eval``) and a ``description``. A user's
file may give some targets only; the rest keep the built-in limits.

- ``median-abs-error``: median |time error| over the compared cases at most ``limit``;
- ``worst-abs-error``: every |time error| at most ``limit``;
- ``speedup-error``: every |predicted / measured speedup - 1| at most ``limit``;
- ``ranking``: every pair whose measured times differ by more than ``limit`` x the larger of
  their spreads ordered right;
- ``tune-regret``: the tuner's pick at most ``limit`` slower than the best measured one.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from tiletraffic.frontend.expressions import NUMBER, ExpressionError, parse

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

BUILT_IN = Path(__file__).resolve().parent / "targets.toml"

NAMES = ("median-abs-error", "worst-abs-error", "speedup-error", "ranking", "tune-regret")


class TargetsError(ValueError):
    """A targets file cannot be read, or a target in it is unknown or malformed."""


@dataclass(frozen=True)
class Targets:
    """The limits by name (:data:`NAMES`), their descriptions, and the file they came from
    (``None``: the built-in ones)."""

    limits: dict
    descriptions: dict
    source: str | None = None

    def __getitem__(self, name: str) -> float:
        return self.limits[name]

    def to_dict(self) -> dict:
        return {"source": self.source or "built-in", "limits": dict(self.limits)}

    @classmethod
    def from_dict(cls, doc: dict | None) -> "Targets":
        """The targets a results file recorded (``to_dict``); the built-in ones for a file
        without them."""
        base = built_in()
        if not doc:
            return base
        return cls({**base.limits, **doc["limits"]}, base.descriptions,
                   None if doc.get("source") == "built-in" else doc.get("source"))


def _read(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise TargetsError(f"cannot read targets file {str(path)!r}: "
                           f"{err.strerror or err}") from None
    except tomllib.TOMLDecodeError as err:
        raise TargetsError(f"targets file {path}: not valid TOML: {err}") from None


def _limit(path: Path, name: str, entry) -> tuple[float, str]:
    if not isinstance(entry, dict) or "limit" not in entry:
        raise TargetsError(f"targets file {path}: [{name}] needs a limit (a number or an "
                           "arithmetic expression)")
    unknown = sorted(set(entry) - {"limit", "description"})
    if unknown:
        raise TargetsError(f"targets file {path}: [{name}] has unknown key(s) "
                           f"{', '.join(unknown)} (limit, description)")
    value = entry["limit"]
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise TargetsError(f"targets file {path}: [{name}] limit = {value!r} is not a number")
    if isinstance(value, str):
        try:
            value = parse(value, (), NUMBER).evaluate({})
        except ExpressionError as err:
            raise TargetsError(f"targets file {path}: [{name}] limit: {err}") from None
    if not value > 0 or value != value or value == float("inf"):
        raise TargetsError(f"targets file {path}: [{name}] limit = {value!r} must be a "
                           "positive finite number")
    return float(value), str(entry.get("description", ""))


def built_in() -> Targets:
    """The built-in targets (``targets.toml`` of the package)."""
    doc = _read(BUILT_IN)
    pairs = {name: _limit(BUILT_IN, name, doc[name]) for name in NAMES}
    return Targets({n: v for n, (v, _) in pairs.items()},
                   {n: d for n, (_, d) in pairs.items()})


def load(path: str | os.PathLike | Targets | None = None) -> Targets:
    """The targets of ``path`` over the built-in ones (``None``: the built-in ones).

    Raises:
        TargetsError: the file cannot be read, is not TOML, names an unknown target, or a
            limit is not a positive finite number or expression.
    """
    if isinstance(path, Targets):
        return path
    base = built_in()
    if path is None:
        return base
    path = Path(path)
    doc = _read(path)
    unknown = sorted(set(doc) - set(NAMES))
    if unknown:
        raise TargetsError(f"targets file {path}: unknown target(s) {', '.join(unknown)}; "
                           f"the targets are {', '.join(NAMES)}")
    limits, descriptions = dict(base.limits), dict(base.descriptions)
    for name, entry in doc.items():
        limits[name], text = _limit(path, name, entry)
        descriptions[name] = text or descriptions[name]
    return Targets(limits, descriptions, str(path))
